// Response writing of the HTTP transport (http_conn.h): status lines and headers, whole
// responses, chunked streams (StreamWriter), each send bounded by the write deadline.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "serve/http_conn.h"

namespace jitllm::serve {

namespace {

const char* reason(int s) {
    switch (s) {
        case 200: return "OK";
        case 204: return "No Content";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 411: return "Length Required";
        case 413: return "Content Too Large";
        case 414: return "URI Too Long";
        case 415: return "Unsupported Media Type";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default: return s < 500 ? "Client Error" : "Server Error";
    }
}

HttpClock::time_point deadline_in(int seconds) { return HttpClock::now() + std::chrono::seconds(seconds); }

}  // namespace

std::string response_head(int status, const HttpResponse& r, int minor, const std::string& framing, bool keep) {
    std::string h = fmt::format("HTTP/1.{} {} {}\r\nContent-Type: {}\r\n", minor, status, reason(status),
                                r.content_type);
    if (!framing.empty() && status != 204) h += framing + "\r\n";  // 204 has no body framing
    if (!keep) h += "Connection: close\r\n";
    else if (minor == 0) h += "Connection: keep-alive\r\n";
    for (const auto& [k, v] : r.headers) h += k + ": " + v + "\r\n";
    return h + "\r\n";
}

std::string whole_response(const HttpResponse& r, const HttpHead& request, bool keep) {
    std::string out = response_head(r.status, r, request.minor, fmt::format("Content-Length: {}", r.body.size()), keep);
    if (request.method != "HEAD") out += r.body;
    return out;
}

bool send_all(int fd, std::string_view data, HttpClock::time_point deadline) {
    while (!data.empty()) {
        const ssize_t w = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (w > 0) {
            data.remove_prefix(size_t(w));
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - HttpClock::now()).count();
            if (left <= 0) return false;
            pollfd p{fd, POLLOUT, 0};
            if (::poll(&p, 1, int(std::min<long long>(left, 1000))) < 0 && errno != EINTR) return false;
            continue;
        }
        return false;
    }
    return true;
}

bool write_response(HttpConn& c, HttpResponse& r, int write_timeout_s, bool keep) {
    if (!r.stream) return send_all(c.fd, whole_response(r, c.head, keep), deadline_in(write_timeout_s));
    StreamWriter w(c, r, write_timeout_s, keep);
    bool done = false;
    try {
        done = r.stream(w);
    } catch (...) {
        done = false;
    }
    if (w.replaced()) return done;
    if (!done) return false;
    if (!w.started() && !w.write({})) return false;
    return !w.chunked() || send_all(c.fd, "0\r\n\r\n", deadline_in(write_timeout_s));
}

bool StreamWriter::chunked() const { return c_.head.minor >= 1; }

bool StreamWriter::write(std::string_view data) {
    if (replaced_) return false;
    const auto deadline = deadline_in(write_timeout_s_);
    std::string out;
    if (!started_) {
        started_ = true;
        out = response_head(r_.status, r_, c_.head.minor, chunked() ? "Transfer-Encoding: chunked" : "", keep_);
        if (c_.head.method == "HEAD") return send_all(c_.fd, out, deadline);
    } else if (c_.head.method == "HEAD") {
        return true;
    }
    if (!data.empty()) {
        if (chunked()) out += fmt::format("{:x}\r\n", data.size());
        out += data;
        if (chunked()) out += "\r\n";
    }
    return send_all(c_.fd, out, deadline);
}

bool StreamWriter::replace(int status, const std::vector<std::pair<std::string, std::string>>& headers,
                           std::string_view body) {
    if (started_ || replaced_) return false;
    replaced_ = true;
    HttpResponse r;
    r.status = status;
    r.headers = headers;
    r.body = std::string(body);
    return send_all(c_.fd, whole_response(r, c_.head, keep_), deadline_in(write_timeout_s_));
}

}  // namespace jitllm::serve
