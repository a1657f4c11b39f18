// Inside the HTTP transport (http_server.h): one client connection's state, and the pieces the
// reactor (http_server.cpp), the response writers (http_write.cpp) and the listening socket
// (http_listen.cpp) share. Not for use outside src/serve/http_*.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "serve/http_parse.h"
#include "serve/http_server.h"

namespace jitllm::serve {

using HttpClock = std::chrono::steady_clock;

// Idle: between requests; Head, Body: a request arriving; Busy: with a worker; Drain: answered
// and half-closed, what the client still sends is read and dropped.
enum class ConnState { Idle, Head, Body, Busy, Drain };

struct HttpConn {
    int fd = -1;
    std::string buf;            // received, not yet consumed
    ConnState st = ConnState::Idle;
    HttpClock::time_point deadline;
    HttpHead head;
    uint64_t reserved = 0;      // body bytes taken from the budget
    bool eof = false;           // the client sent FIN
    bool eof_at_dispatch = false;  // a FIN with the request: a half-close, the client still waits
    bool probed = false;           // a FIN after dispatch was answered with a 100 (HttpRequest::peer_closed)
    size_t drained = 0, drain_limit = 0;
    bool keep = false;          // the worker's verdict: serve the next request
};

// --- responses (http_write.cpp) ----------------------------------------------------------------

// Status line and headers up to the blank line. framing: "Content-Length: N",
// "Transfer-Encoding: chunked" or "" (an HTTP/1.0 stream: the body ends with the connection).
std::string response_head(int status, const HttpResponse& r, int minor, const std::string& framing, bool keep);

// A whole response with a Content-Length (no body for HEAD).
std::string whole_response(const HttpResponse& r, const HttpHead& request, bool keep);

// Blocking send on a non-blocking socket, bounded by a deadline; false when the client is gone
// or did not take the bytes in time.
bool send_all(int fd, std::string_view data, HttpClock::time_point deadline);

// Writes a handler's response on a worker thread: the whole body, or the stream through a
// StreamWriter. Returns true when the connection may serve another request.
bool write_response(HttpConn& c, HttpResponse& r, int write_timeout_s, bool keep);

// --- the listening socket (http_listen.cpp) ----------------------------------------------------

// A non-blocking listening socket on host:port (port 0: any free port) with the system's full
// backlog and SO_REUSEADDR only; *bound_port gets the port. Throws Error with a sentence.
int listen_socket(const std::string& host, int port, int* bound_port);

// Raises the soft descriptor limit to the hard one and returns `wanted` capped so that every
// connection, the listener, the event loop and the model's files fit under it.
int connection_limit(int wanted);

}  // namespace jitllm::serve
