// jitllm-httplib.so: the HTTP transport of `jitllm serve`, a thin C-interface wrapper over
// cpp-httplib 0.11.4 (http_plugin_abi.h). It applies the limits it is given and forwards every
// request to jitllm's handlers; it knows nothing about the API. Built as a dlopen'ed module so
// that the jitllm binary itself does not depend on the shared cpp-httplib and its libraries.
#include <httplib.h>

#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "serve/http_plugin_abi.h"

namespace {

struct Conn {
    std::string remote_addr;
    int remote_port = -1;
    int local_port = -1;
    int fd = -2;  // -2: not searched yet, -1: not found
};

struct Server {
    httplib::Server svr;
    jh_handler_fn handler = nullptr;
    jh_pre_fn pre = nullptr;
    jh_error_fn error = nullptr;
    void* user = nullptr;
};

void copy_err(char* err, size_t n, const std::string& s) {
    if (!err || n == 0) return;
    std::snprintf(err, n, "%s", s.c_str());
}

std::string addr_string(const sockaddr_storage& ss, int* port) {
    char buf[INET6_ADDRSTRLEN] = {0};
    if (ss.ss_family == AF_INET) {
        const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
        inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
        *port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
        inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
        *port = ntohs(a->sin6_port);
    } else {
        *port = -1;
    }
    return buf;
}

// cpp-httplib 0.11.4 does not hand the connection's socket to handlers, so find it among the
// process's descriptors by its address pair (unique while the handler holds the connection).
int find_conn_fd(const Conn& c) {
    DIR* d = opendir("/proc/self/fd");
    if (!d) return -1;
    int found = -1;
    while (dirent* e = readdir(d)) {
        char* end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || fd < 0) continue;
        sockaddr_storage peer{}, local{};
        socklen_t pl = sizeof peer, ll = sizeof local;
        if (getpeername(int(fd), reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
        if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
        int pport = -1, lport = -1;
        const std::string paddr = addr_string(peer, &pport);
        addr_string(local, &lport);
        if (pport == c.remote_port && lport == c.local_port && paddr == c.remote_addr) {
            found = int(fd);
            break;
        }
    }
    closedir(d);
    return found;
}

void api_set_status(void* res, int status) { static_cast<httplib::Response*>(res)->status = status; }

void api_set_header(void* res, const char* name, const char* value) {
    static_cast<httplib::Response*>(res)->set_header(name, value);
}

void api_set_body(void* res, const char* data, size_t len, const char* content_type) {
    static_cast<httplib::Response*>(res)->set_content(data, len, content_type);
}

int sink_write(void* sink, const char* data, size_t len) {
    try {
        return static_cast<httplib::DataSink*>(sink)->write(data, len) ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

const jh_sink_api kSinkApi = {sink_write};

void api_set_stream(void* res, const char* content_type, jh_stream_fn fn, jh_release_fn release,
                    void* ctx) {
    static_cast<httplib::Response*>(res)->set_chunked_content_provider(
        content_type,
        [fn, ctx](size_t, httplib::DataSink& sink) -> bool {
            int ok = 0;
            try {
                ok = fn(ctx, &kSinkApi, &sink);
                if (ok) sink.done();
            } catch (...) {
                ok = 0;
            }
            return ok != 0;
        },
        [release, ctx](bool) { release(ctx); });
}

int api_peer_closed(void* conn) {
    auto* c = static_cast<Conn*>(conn);
    if (!c) return -1;
    if (c->fd == -2) c->fd = find_conn_fd(*c);
    if (c->fd < 0) return -1;
    pollfd p{c->fd, short(POLLIN | POLLRDHUP), 0};
    if (poll(&p, 1, 0) < 0) return -1;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) ? 1 : 0;
}

const char* reason_phrase(int status) {
    switch (status) {
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 411: return "Length Required";
        case 413: return "Payload Too Large";
        case 415: return "Unsupported Media Type";
        case 431: return "Request Header Fields Too Large";
        default: return status < 500 ? "Client Error" : "Server Error";
    }
}

bool send_all(int fd, const char* p, size_t n) {
    while (n > 0) {
        const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= size_t(w);
    }
    return true;
}

int api_reject(void* conn, int status, const char* const* headers, size_t n_headers, const char* body,
               size_t body_len) {
    auto* c = static_cast<Conn*>(conn);
    if (!c) return 0;
    if (c->fd == -2) c->fd = find_conn_fd(*c);
    if (c->fd < 0) return 0;
    std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                       "\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: " +
                       std::to_string(body_len) + "\r\nConnection: close\r\n";
    for (size_t i = 0; i + 1 < 2 * n_headers; i += 2) head += std::string(headers[i]) + ": " + headers[i + 1] + "\r\n";
    head += "\r\n";
    if (!send_all(c->fd, head.data(), head.size()) || !send_all(c->fd, body, body_len)) return 0;
    shutdown(c->fd, SHUT_WR);
    // lingering close: read and drop the unread body for up to 1 s / 1 MiB, until the client closes
    char buf[16384];
    size_t dropped = 0;
    const auto t_end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (dropped < (1u << 20)) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t_end - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{c->fd, POLLIN, 0};
        if (poll(&p, 1, int(left.count())) <= 0) break;
        const ssize_t r = recv(c->fd, buf, sizeof buf, 0);
        if (r <= 0) break;
        dropped += size_t(r);
    }
    shutdown(c->fd, SHUT_RD);  // the library's own reply and any further read now fail at once
    return 1;
}

const jh_response_api kResponseApi = {api_set_status, api_set_header, api_set_body, api_set_stream,
                                      api_peer_closed, api_reject};

// Builds the C view of a request; the vectors keep the pointers alive for the call.
struct RequestView {
    std::vector<jh_header> headers;
    Conn conn;
    jh_request r{};
    RequestView(const httplib::Request& req, bool with_body) {
        headers.reserve(req.headers.size());
        for (const auto& [k, v] : req.headers) headers.push_back({k.c_str(), v.c_str()});
        conn.remote_addr = req.remote_addr;
        conn.remote_port = req.remote_port;
        conn.local_port = req.local_port;
        r.method = req.method.c_str();
        r.path = req.path.c_str();
        r.target = req.target.c_str();
        r.version = req.version.c_str();
        r.body = with_body ? req.body.data() : nullptr;
        r.body_len = with_body ? req.body.size() : 0;
        r.headers = headers.data();
        r.n_headers = headers.size();
        r.remote_addr = req.remote_addr.c_str();
        r.remote_port = req.remote_port;
        r.conn = &conn;
    }
};

void internal_error(httplib::Response& res) {
    static const char kBody[] =
        "{\"error\":{\"message\":\"internal error in the HTTP transport\",\"type\":\"server_error\","
        "\"param\":null,\"code\":500}}";
    res.status = 500;
    res.set_header("x-should-retry", "false");
    res.set_content(kBody, sizeof kBody - 1, "application/json");
}

void* srv_create(const jh_limits* lim, char* err, size_t err_len) {
    try {
        auto s = std::make_unique<Server>();
        const size_t threads = size_t(lim->threads > 0 ? lim->threads : 8);
        s->svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
        s->svr.set_payload_max_length(lim->payload_max_bytes);
        s->svr.set_read_timeout(lim->read_timeout_s, 0);
        s->svr.set_write_timeout(lim->write_timeout_s, 0);
        s->svr.set_keep_alive_timeout(lim->keep_alive_timeout_s);
        s->svr.set_keep_alive_max_count(size_t(lim->keep_alive_max_count));
        s->svr.set_tcp_nodelay(true);  // SSE chunks are small and latency matters
        return s.release();
    } catch (const std::exception& e) {
        copy_err(err, err_len, e.what());
        return nullptr;
    }
}

void srv_set_handlers(void* p, jh_handler_fn handler, jh_pre_fn pre, jh_error_fn error, void* user) {
    auto* s = static_cast<Server*>(p);
    s->handler = handler;
    s->pre = pre;
    s->error = error;
    s->user = user;
    auto h = [s](const httplib::Request& req, httplib::Response& res) {
        try {
            RequestView v(req, true);
            s->handler(s->user, &v.r, &kResponseApi, &res);
        } catch (...) {
            internal_error(res);
        }
    };
    // one catch-all route per method: routing lives on the jitllm side
    s->svr.Get(".*", h);
    s->svr.Post(".*", h);
    s->svr.Put(".*", h);
    s->svr.Patch(".*", h);
    s->svr.Delete(".*", h);
    s->svr.Options(".*", h);
    s->svr.set_pre_routing_handler([s](const httplib::Request& req, httplib::Response& res) {
        try {
            RequestView v(req, false);
            if (s->pre(s->user, &v.r, &kResponseApi, &res))
                return httplib::Server::HandlerResponse::Handled;
        } catch (...) {
            internal_error(res);
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    // called for every status >= 400; only fill the bodies the library left empty
    s->svr.set_error_handler(httplib::Server::HandlerWithResponse(
        [s](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
        try {
            s->error(s->user, res.status, &kResponseApi, &res);
        } catch (...) {
        }
        return httplib::Server::HandlerResponse::Handled;
    }));
    s->svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        internal_error(res);
    });
}

int srv_bind(void* p, const char* host, int port, char* err, size_t err_len) {
    auto* s = static_cast<Server*>(p);
    try {
        if (port == 0) {
            const int got = s->svr.bind_to_any_port(host);
            if (got <= 0) {
                copy_err(err, err_len, std::string("cannot bind ") + host + " on any port: " + std::strerror(errno));
                return -1;
            }
            return got;
        }
        if (!s->svr.bind_to_port(host, port)) {
            copy_err(err, err_len, std::string("cannot bind ") + host + ":" + std::to_string(port) + ": " +
                                       std::strerror(errno));
            return -1;
        }
        return port;
    } catch (const std::exception& e) {
        copy_err(err, err_len, e.what());
        return -1;
    }
}

int srv_listen(void* p) {
    try {
        return static_cast<Server*>(p)->svr.listen_after_bind() ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

void srv_stop(void* p) {
    try {
        static_cast<Server*>(p)->svr.stop();
    } catch (...) {
    }
}

void srv_destroy(void* p) { delete static_cast<Server*>(p); }

const jh_server_api kApi = {JITLLM_HTTP_ABI_VERSION, CPPHTTPLIB_VERSION, srv_create, srv_set_handlers,
                            srv_bind, srv_listen, srv_stop, srv_destroy};

}  // namespace

extern "C" __attribute__((visibility("default"))) const jh_server_api* jitllm_http_plugin(void) {
    return &kApi;
}
