// HTTP/1.1 request heads (RFC 9112): the request line and header section parsed from a byte
// buffer, with the framing decided here and nowhere else. Strict where laxness lets two parsers
// disagree about where a request ends: obsolete line folding, whitespace before a colon, a
// duplicate or malformed Content-Length, Transfer-Encoding (request bodies must have a
// Content-Length), a missing or repeated Host on HTTP/1.1 are refused with a status and a
// sentence. Pure functions: no sockets, unit-tested in tests/server/http_parse_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitllm::serve {

struct HeadLimits {
    size_t max_line_bytes = 8u << 10;     // request line (414 beyond)
    size_t max_head_bytes = 32u << 10;    // request line + headers (431 beyond)
    size_t max_headers = 100;             // header fields (431 beyond)
};

struct HttpHead {
    std::string method;
    std::string target;   // as sent
    std::string path;     // target without the query string
    int minor = 1;        // HTTP/1.<minor>
    std::vector<std::pair<std::string, std::string>> headers;  // names as sent, values trimmed
    uint64_t content_length = 0;  // 0 when absent
    bool keep_alive = true;       // after this request (version and Connection header)
    // First value of a header (names compare case-insensitively).
    std::optional<std::string_view> header(std::string_view name) const;
    size_t header_count(std::string_view name) const;
};

enum class HeadState { Incomplete, Complete, Error };

struct HeadResult {
    HeadState state = HeadState::Incomplete;
    size_t consumed = 0;   // bytes of the head (Complete), including skipped empty lines
    int status = 0;        // Error: the HTTP status to answer with
    std::string message;   // Error: one sentence naming the field
};

// Parses the head at the start of buf. Incomplete while the blank line that ends the head has
// not arrived and the limits still hold.
HeadResult parse_head(std::string_view buf, const HeadLimits& lim, HttpHead& out);

bool iequal(std::string_view a, std::string_view b);

// The media type of a Content-Type value, lower-cased, without parameters ("application/json").
std::string media_type(std::string_view content_type);

}  // namespace jitllm::serve
