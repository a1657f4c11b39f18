// HttpServer: the HTTP/1.1 transport of `jitllm serve` (epoll, no library). One reactor thread
// owns every connection while it is idle or while its request arrives, so an idle or slow client
// costs a descriptor and a buffer, never a thread; a request reaches a worker thread only once its
// head and whole body are in memory. Bounds, each applied by construction:
//  - a deadline per request (head and body within request_timeout_s, however the bytes trickle)
//    and per idle keep-alive gap (keep_alive_timeout_s); a response or stream piece the client
//    does not take within write_timeout_s drops the connection;
//  - at most max_connections open (at the bound the idle, then the slowest, connection goes);
//  - a fixed number of worker threads (requests without a body have their own two, so /health
//    answers while every other worker waits on a generation); bodies held in memory at once are
//    bounded by body_budget_bytes (503 beyond);
//  - HTTP/1.1 framing per RFC 9112 (http_parse.h): Content-Length bodies only, pipelined requests
//    answered in order, a client that half-closes after its request still gets the answer, a
//    refused request's unread body drained and never parsed as a next request;
//  - no Range, multipart or form handling: bodies reach the handlers as bytes;
//  - the listening socket has a full backlog and no SO_REUSEPORT (a second server fails to bind).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "serve/http_parse.h"

namespace jitllm::serve {

struct HttpLimits {
    size_t max_body_bytes = 8u << 20;      // larger Content-Length: 413 before reading
    size_t body_budget_bytes = 64u << 20;  // request bodies in memory at once, all connections
    int request_timeout_s = 15;            // a whole request must arrive within this
    int write_timeout_s = 30;              // a response (or each stream piece) must be taken within this
    int keep_alive_timeout_s = 5;          // idle time between requests
    int max_connections = 1024;
    int workers = 16;                      // threads for requests with a body
    int light_workers = 2;                 // threads for GET/HEAD/OPTIONS without a body
    HeadLimits head;
};

struct HttpConn;

class HttpRequest {
public:
    HttpRequest(const HttpHead& h, std::string_view body, HttpConn* c, bool has_body)
        : h_(h), body_(body), c_(c), has_body_(has_body) {}
    std::string_view method() const { return h_.method; }
    std::string_view path() const { return h_.path; }
    std::string_view body() const { return body_; }
    bool has_body() const { return has_body_; }  // false in the pre-handler (body not read yet)
    uint64_t content_length() const { return h_.content_length; }
    std::optional<std::string_view> header(std::string_view name) const { return h_.header(name); }
    // true when the client has gone. A half-close does not count: such a client still waits for
    // its answer (an HTTP/1.1 client may get a "100 Continue" while that is found out). Only
    // before the response is written.
    bool peer_closed() const;

private:
    const HttpHead& h_;
    std::string_view body_;
    HttpConn* c_;
    bool has_body_;
};

class StreamWriter;

struct HttpResponse {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::string content_type = "application/json; charset=utf-8";
    // When set, the body is streamed (chunked): the function runs on the worker thread, writes
    // through the StreamWriter and returns true when the body is complete (false drops the
    // connection). on_release runs once when the response is done, whatever happened.
    std::function<bool(StreamWriter&)> stream;
    std::function<void()> on_release;
    bool close = false;  // close the connection after this response

    void header(std::string name, std::string value) { headers.emplace_back(std::move(name), std::move(value)); }
    void set_body(std::string b, std::string ct) {
        body = std::move(b);
        content_type = std::move(ct);
    }
};

class StreamWriter {
public:
    StreamWriter(HttpConn& c, HttpResponse& r, int write_timeout_s, bool keep)
        : c_(c), r_(r), write_timeout_s_(write_timeout_s), keep_(keep) {}
    // Sends the headers first if not yet sent. false once the client is gone or stalled.
    bool write(std::string_view data);
    // Before the first write only: answer with a whole response (status, extra headers, JSON body)
    // instead of the stream. Returns false when the stream has started or the client is gone.
    bool replace(int status, const std::vector<std::pair<std::string, std::string>>& headers,
                 std::string_view body);
    bool started() const { return started_; }
    bool replaced() const { return replaced_; }
    bool chunked() const;  // HTTP/1.1: chunked; HTTP/1.0: the body ends with the connection

private:
    HttpConn& c_;
    HttpResponse& r_;
    int write_timeout_s_;
    bool keep_;
    bool started_ = false;
    bool replaced_ = false;
};

class HttpServer {
public:
    using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;
    // Runs on the reactor thread after the head, before the body is read: must not block.
    // Returns true when it answered (a pending body is then drained, never read as a request).
    using PreHandler = std::function<bool(const HttpRequest&, HttpResponse&)>;
    // The body of an error the transport answers itself (400 framing, 408, 413, 431, 503, ...).
    using ErrorBody = std::function<std::string(int status, const std::string& message)>;

    HttpServer(const HttpLimits& limits, Handler handler, PreHandler pre, ErrorBody error_body);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Creates the listening socket (port 0: any free port); returns the port. Throws Error with
    // a sentence when the address cannot be bound (in use, no permission, unknown host).
    int bind(const std::string& host, int port);
    // Serves on the calling thread until stop(); returns at once if stop() came first.
    void serve();
    // Ends serve(): from any thread, at any time (also before serve() started). Connections
    // still being answered are shut down.
    void stop();
    int max_connections() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace jitllm::serve
