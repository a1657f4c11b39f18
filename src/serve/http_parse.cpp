// Request head parsing (see http_parse.h). Field names and rules follow RFC 9110/9112.
#include "serve/http_parse.h"

#include <cctype>

#include <fmt/format.h>

namespace jitllm::serve {

namespace {

bool is_tchar(unsigned char c) {
    if (std::isalnum(c)) return true;
    switch (c) {
        case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-':
        case '.': case '^': case '_': case '`': case '|': case '~': return true;
        default: return false;
    }
}

bool is_token(std::string_view s) {
    if (s.empty()) return false;
    for (unsigned char c : s)
        if (!is_tchar(c)) return false;
    return true;
}

std::string printable(std::string_view s) {
    std::string out;
    for (unsigned char c : s.substr(0, 40)) out += c >= 0x20 && c < 0x7f ? char(c) : '?';
    if (s.size() > 40) out += "...";
    return out;
}

HeadResult error(int status, std::string message) {
    HeadResult r;
    r.state = HeadState::Error;
    r.status = status;
    r.message = std::move(message);
    return r;
}

// Whether a comma-separated header value (Connection) holds the token.
bool has_token(std::string_view list, std::string_view token) {
    size_t i = 0;
    while (i <= list.size()) {
        size_t j = list.find(',', i);
        if (j == std::string_view::npos) j = list.size();
        std::string_view t = list.substr(i, j - i);
        while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
        while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
        if (iequal(t, token)) return true;
        i = j + 1;
    }
    return false;
}

std::optional<HeadResult> parse_request_line(std::string_view line, HttpHead& out) {
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
        return error(400, fmt::format("request line: expected \"METHOD TARGET HTTP/1.1\", found \"{}\"",
                                      printable(line)));
    const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                           version = line.substr(sp2 + 1);
    if (!is_token(method))
        return error(400, fmt::format("request method: expected a token, found \"{}\"", printable(method)));
    if (target.empty())
        return error(400, "request target: empty: expected a path");
    for (unsigned char c : target)
        if (c <= 0x20 || c >= 0x7f)
            return error(400, "request target: expected visible ASCII characters only");
    if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !std::isdigit(uint8_t(version[5])) ||
        version[6] != '.' || !std::isdigit(uint8_t(version[7])))
        return error(400, fmt::format("request line: expected the version HTTP/1.1, found \"{}\"",
                                      printable(version)));
    if (version[5] != '1')
        return error(505, fmt::format("HTTP version {}: expected HTTP/1.0 or HTTP/1.1", printable(version)));
    out.method = std::string(method);
    out.target = std::string(target);
    out.minor = version[7] - '0';
    std::string_view path = target;
    if (path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0) {  // absolute form
        const size_t slash = path.find('/', path.find("//") + 2);
        path = slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
    }
    out.path = std::string(path.substr(0, path.find('?')));
    return std::nullopt;
}

std::optional<HeadResult> parse_header_line(std::string_view line, HttpHead& out) {
    if (line.front() == ' ' || line.front() == '\t')
        return error(400, "request headers: a line starts with whitespace (obsolete line folding is "
                          "not accepted)");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos)
        return error(400, fmt::format("request header \"{}\": expected NAME: VALUE", printable(line)));
    const std::string_view name = line.substr(0, colon);
    if (!is_token(name))
        return error(400, fmt::format("request header name \"{}\": expected a token (no whitespace "
                                      "before the colon)", printable(name)));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    for (unsigned char c : value)
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return error(400, fmt::format("request header {}: control character in the value",
                                          printable(name)));
    out.headers.emplace_back(std::string(name), std::string(value));
    return std::nullopt;
}

// Host, Content-Length, Transfer-Encoding and Connection: the framing of the request.
std::optional<HeadResult> check_framing(HttpHead& out) {
    const size_t n_host = out.header_count("Host");
    if (n_host > 1) return error(400, fmt::format("Host: given {} times: expected one", n_host));
    if (n_host == 0 && out.minor == 1) return error(400, "Host: missing: HTTP/1.1 requests must name the host");
    const size_t n_len = out.header_count("Content-Length");
    if (const auto te = out.header("Transfer-Encoding")) {
        if (n_len > 0)
            return error(400, "Transfer-Encoding and Content-Length: both given: expected Content-Length only");
        return error(411, fmt::format("Transfer-Encoding: {}: request bodies must have a Content-Length "
                                      "(chunked bodies are not accepted)", printable(*te)));
    }
    if (n_len > 1) return error(400, fmt::format("Content-Length: given {} times: expected one", n_len));
    if (n_len == 1) {
        const std::string_view cl = *out.header("Content-Length");
        bool digits = !cl.empty() && cl.size() <= 18;
        for (char c : cl) digits = digits && c >= '0' && c <= '9';
        if (!digits)
            return error(400, fmt::format("Content-Length: expected a byte count, found \"{}\"", printable(cl)));
        out.content_length = std::stoull(std::string(cl));
    }
    const auto conn = out.header("Connection");
    out.keep_alive = out.minor == 1 ? !(conn && has_token(*conn, "close")) : (conn && has_token(*conn, "keep-alive"));
    return std::nullopt;
}

}  // namespace

bool iequal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

std::string media_type(std::string_view ct) {
    ct = ct.substr(0, ct.find(';'));
    while (!ct.empty() && (ct.back() == ' ' || ct.back() == '\t')) ct.remove_suffix(1);
    while (!ct.empty() && (ct.front() == ' ' || ct.front() == '\t')) ct.remove_prefix(1);
    std::string out(ct);
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::optional<std::string_view> HttpHead::header(std::string_view name) const {
    for (const auto& [k, v] : headers)
        if (iequal(k, name)) return std::string_view(v);
    return std::nullopt;
}

size_t HttpHead::header_count(std::string_view name) const {
    size_t n = 0;
    for (const auto& kv : headers) n += iequal(kv.first, name) ? 1 : 0;
    return n;
}

HeadResult parse_head(std::string_view buf, const HeadLimits& lim, HttpHead& out) {
    out = HttpHead{};
    size_t pos = 0;
    // RFC 9112 2.2: empty lines before the request line are ignored
    while (pos < buf.size() && (buf[pos] == '\r' || buf[pos] == '\n') && pos < 64) ++pos;
    const size_t start = pos;
    bool first = true;
    for (;;) {
        const size_t nl = buf.find('\n', pos);
        if (nl == std::string_view::npos) {
            if (first && buf.size() - start > lim.max_line_bytes)
                return error(414, fmt::format("request line: too long: expected at most {} bytes",
                                              lim.max_line_bytes));
            if (buf.size() - start > lim.max_head_bytes)
                return error(431, fmt::format("request headers: too large: expected at most {} bytes",
                                              lim.max_head_bytes));
            return {};
        }
        if (nl + 1 - start > lim.max_head_bytes)
            return error(431, fmt::format("request headers: too large: expected at most {} bytes",
                                          lim.max_head_bytes));
        std::string_view line = buf.substr(pos, nl - pos);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.find('\r') != std::string_view::npos)
            return error(400, "request head: a bare carriage return inside a line");
        pos = nl + 1;
        if (first) {
            if (line.size() > lim.max_line_bytes)
                return error(414, fmt::format("request line: too long: expected at most {} bytes",
                                              lim.max_line_bytes));
            if (auto e = parse_request_line(line, out)) return *e;
            first = false;
            continue;
        }
        if (line.empty()) break;
        if (out.headers.size() >= lim.max_headers)
            return error(431, fmt::format("request headers: too many: expected at most {}", lim.max_headers));
        if (auto e = parse_header_line(line, out)) return *e;
    }
    if (auto e = check_framing(out)) return *e;
    HeadResult r;
    r.state = HeadState::Complete;
    r.consumed = pos;
    return r;
}

}  // namespace jitllm::serve
