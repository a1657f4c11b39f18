// HttpServer (see http_server.h): the reactor (accept, read, parse, deadlines, eviction) and the
// worker threads (handler, response writing). A connection belongs to the reactor except while
// its request is with a worker (state Busy); only the reactor closes descriptors, so a number is
// never reused under a worker. Writing responses: http_write.cpp; the listening socket:
// http_listen.cpp.
#include "serve/http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.h"
#include "serve/http_conn.h"

namespace jitllm::serve {

using Clock = HttpClock;

namespace {

constexpr size_t kReadChunk = 16384;
// A refused body is drained up to its declared size (at least 1 MiB, at most 16 MiB): a client
// still sending when the socket closes gets a reset, which can destroy the answer unread.
constexpr size_t kDrainMin = 1u << 20, kDrainMax = 16u << 20;
constexpr size_t kReadPerEvent = 256u << 10;  // one connection cannot hold the reactor longer
constexpr auto kDrainTime = std::chrono::seconds(1);
constexpr int kTickMs = 100;

bool light_method(std::string_view m) { return m == "GET" || m == "HEAD" || m == "OPTIONS"; }

}  // namespace

// A FIN after the request means either a client that half-closed and waits for the answer or
// one that is gone; TCP tells them apart only when data reaches them (a closed socket answers
// with a reset). HTTP/1.1 clients must accept 1xx interim responses, so the probe is a
// "100 Continue": the reset, if any, is seen by the next call. HTTP/1.0 clients cannot take one:
// for them a FIN after the request counts as gone.
bool HttpRequest::peer_closed() const {
    if (!c_) return false;
    pollfd p{c_->fd, short(POLLIN | POLLRDHUP), 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return true;
    if (!(p.revents & POLLRDHUP) || c_->eof_at_dispatch) return false;
    if (c_->head.minor == 0) return true;
    if (c_->probed) return false;
    c_->probed = true;
    constexpr std::string_view probe = "HTTP/1.1 100 Continue\r\n\r\n";
    return ::send(c_->fd, probe.data(), probe.size(), MSG_NOSIGNAL | MSG_DONTWAIT) != ssize_t(probe.size());
}

struct HttpServer::Impl {
    HttpLimits lim;
    Handler handler;
    PreHandler pre;
    ErrorBody error_body;
    int lfd = -1, ep = -1, wake = -1;
    std::atomic<bool> stopping{false};
    std::unordered_map<int, std::unique_ptr<HttpConn>> conns;
    uint64_t budget_used = 0;  // reactor thread only

    std::mutex mu;
    std::condition_variable cv;
    std::deque<HttpConn*> heavy, light;
    std::vector<HttpConn*> returned;
    bool workers_exit = false;
    std::vector<std::thread> threads;

    // --- reactor ---------------------------------------------------------------------------
    void close_conn(HttpConn* c) {
        budget_used -= c->reserved;
        ::close(c->fd);  // also leaves the epoll set
        conns.erase(c->fd);
    }

    // Writes a small response without blocking (what does not fit at once closes the connection).
    bool send_now(HttpConn* c, const HttpResponse& r, bool keep) {
        const std::string msg = whole_response(r, c->head, keep);
        const ssize_t w = ::send(c->fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        return w == ssize_t(msg.size());
    }

    // Answers an error, then half-closes and drops what the client still sends for a moment: a
    // plain close with unread bytes would send a reset that can destroy the answer.
    void answer_and_drain(HttpConn* c, int status, const std::string& message) {
        HttpResponse r;
        r.status = status;
        if (status == 503) r.header("Retry-After", "1");
        r.body = error_body(status, message);
        finish_refused(c, r);
    }

    void finish_refused(HttpConn* c, const HttpResponse& r) {
        if (!send_now(c, r, false)) return close_conn(c);
        ::shutdown(c->fd, SHUT_WR);
        c->drain_limit = std::clamp<size_t>(c->head.content_length + kReadChunk, kDrainMin, kDrainMax);
        c->st = ConnState::Drain;
        c->buf.clear();
        c->deadline = Clock::now() + kDrainTime;
        if (c->eof) close_conn(c);
    }

    void dispatch(HttpConn* c) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, nullptr);
        c->st = ConnState::Busy;
        c->eof_at_dispatch = c->eof;
        c->probed = false;
        {
            std::lock_guard<std::mutex> lk(mu);
            (c->head.content_length == 0 && light_method(c->head.method) ? light : heavy).push_back(c);
        }
        cv.notify_all();
    }

    // Moves a connection on with what its buffer holds: parse, pre-handler, dispatch, close.
    void advance(HttpConn* c) {
        for (;;) {
            if (c->st == ConnState::Idle || c->st == ConnState::Head) {
                if (c->buf.empty()) {
                    if (c->eof) close_conn(c);
                    return;
                }
                if (c->st == ConnState::Idle) {
                    c->st = ConnState::Head;
                    c->deadline = Clock::now() + std::chrono::seconds(lim.request_timeout_s);
                }
                const HeadResult r = parse_head(c->buf, lim.head, c->head);
                if (r.state == HeadState::Incomplete) {
                    if (c->eof) close_conn(c);
                    return;
                }
                if (r.state == HeadState::Error) return answer_and_drain(c, r.status, r.message);
                c->buf.erase(0, r.consumed);
                if (!accept_head(c)) return;
                if (c->st != ConnState::Body) continue;  // answered by the pre-handler, kept alive
            }
            if (c->st == ConnState::Body) {
                if (c->buf.size() < c->head.content_length) {
                    if (c->eof) close_conn(c);
                    return;
                }
                return dispatch(c);
            }
            return;
        }
    }

    // After a complete head: size limits, the pre-handler, the body budget. Returns false when
    // the connection was answered and closed or is draining.
    bool accept_head(HttpConn* c) {
        const uint64_t n = c->head.content_length;
        if (n > lim.max_body_bytes) {
            answer_and_drain(c, 413, fmt::format("request body: too large: expected at most {} bytes, found {}",
                                                 lim.max_body_bytes, n));
            return false;
        }
        HttpResponse res;
        bool answered = false;
        try {
            answered = pre && pre(HttpRequest(c->head, {}, c, false), res);
        } catch (...) {
            res = HttpResponse{};
            res.status = 500;
            res.body = error_body(500, "internal error while checking the request");
            answered = true;
        }
        if (answered) {
            if (n > 0 || !c->head.keep_alive || res.close) {
                finish_refused(c, res);
                return false;
            }
            if (!send_now(c, res, true)) {
                close_conn(c);
                return false;
            }
            c->st = ConnState::Idle;
            c->deadline = Clock::now() + std::chrono::seconds(lim.keep_alive_timeout_s);
            return true;
        }
        if (n > 0 && budget_used + n > lim.body_budget_bytes) {
            answer_and_drain(c, 503, fmt::format("server busy: {} bytes of request bodies are being received; "
                                                 "retry later", budget_used));
            return false;
        }
        budget_used += n;
        c->reserved = n;
        c->st = ConnState::Body;
        return true;
    }

    void on_readable(HttpConn* c) {
        char tmp[kReadChunk];
        for (size_t got = 0; got < kReadPerEvent;) {
            const ssize_t r = ::recv(c->fd, tmp, sizeof tmp, 0);
            if (r > 0) {
                got += size_t(r);
                if (c->st == ConnState::Drain) {
                    c->drained += size_t(r);
                    if (c->drained > c->drain_limit) return close_conn(c);
                    continue;
                }
                c->buf.append(tmp, size_t(r));
                const size_t cap = c->st == ConnState::Body ? c->head.content_length : lim.head.max_head_bytes + 64;
                if (c->buf.size() > cap) break;  // enough to decide: parse before reading more
                continue;
            }
            if (r == 0) {
                c->eof = true;
                break;
            }
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            return close_conn(c);  // reset
        }
        if (c->st == ConnState::Drain) {
            if (c->eof) close_conn(c);
            return;
        }
        advance(c);
    }

    // At max_connections: a draining connection first, then the idle one waiting longest, then
    // the request that has been arriving longest (the slowest client).
    bool evict_one() {
        HttpConn* best = nullptr;
        auto rank = [](const HttpConn* c) { return c->st == ConnState::Drain ? 0 : c->st == ConnState::Idle ? 1 : 2; };
        for (auto& [fd, c] : conns) {
            if (c->st == ConnState::Busy) continue;
            if (!best || rank(c.get()) < rank(best) || (rank(c.get()) == rank(best) && c->deadline < best->deadline))
                best = c.get();
        }
        if (!best) return false;
        close_conn(best);
        return true;
    }

    void on_accept() {
        for (;;) {
            const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                if ((errno == EMFILE || errno == ENFILE) && evict_one()) continue;
                return;
            }
            if (int(conns.size()) >= lim.max_connections && !evict_one()) {
                ::close(fd);  // every connection is being answered: refuse this one
                continue;
            }
            const int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // SSE pieces are small
            auto c = std::make_unique<HttpConn>();
            c->fd = fd;
            c->deadline = Clock::now() + std::chrono::seconds(lim.keep_alive_timeout_s);
            epoll_event ev{};
            ev.events = EPOLLIN | EPOLLRDHUP;
            ev.data.fd = fd;
            epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
            conns[fd] = std::move(c);
        }
    }

    void on_returned() {
        uint64_t v;
        while (::read(wake, &v, sizeof v) > 0) {
        }
        std::vector<HttpConn*> back;
        {
            std::lock_guard<std::mutex> lk(mu);
            back.swap(returned);
        }
        for (HttpConn* c : back) {
            budget_used -= c->reserved;
            c->reserved = 0;
            if (!c->keep || stopping.load()) {
                close_conn(c);
                continue;
            }
            c->st = ConnState::Idle;
            c->deadline = Clock::now() + std::chrono::seconds(lim.keep_alive_timeout_s);
            if (!c->eof) {  // at EOF the socket stays readable: only the buffer is left to serve
                epoll_event ev{};
                ev.events = EPOLLIN | EPOLLRDHUP;
                ev.data.fd = c->fd;
                epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
            }
            advance(c);  // a pipelined request may already be in the buffer
        }
    }

    void sweep() {
        const auto now = Clock::now();
        std::vector<HttpConn*> late;
        for (auto& [fd, c] : conns)
            if (c->st != ConnState::Busy && now >= c->deadline) late.push_back(c.get());
        for (HttpConn* c : late) {
            if (c->st == ConnState::Head || c->st == ConnState::Body) {
                HttpResponse r;
                r.status = 408;
                r.body = error_body(408, fmt::format("request: not received within {} s", lim.request_timeout_s));
                send_now(c, r, false);
            }
            close_conn(c);
        }
    }

    void reactor() {
        epoll_event evs[256];
        auto next_sweep = Clock::now();
        while (!stopping.load()) {
            const int n = epoll_wait(ep, evs, 256, kTickMs);
            for (int i = 0; i < n; ++i) {
                const int fd = evs[i].data.fd;
                if (fd == lfd) {
                    on_accept();
                } else if (fd == wake) {
                    on_returned();
                } else if (auto it = conns.find(fd); it != conns.end() && it->second->st != ConnState::Busy) {
                    on_readable(it->second.get());
                }
            }
            if (Clock::now() >= next_sweep) {
                sweep();
                next_sweep = Clock::now() + std::chrono::milliseconds(kTickMs);
            }
        }
    }

    // --- workers ---------------------------------------------------------------------------
    void worker(bool light_only) {
        for (;;) {
            HttpConn* c = nullptr;
            {
                std::unique_lock<std::mutex> lk(mu);
                cv.wait(lk, [&] { return workers_exit || !light.empty() || (!light_only && !heavy.empty()); });
                if (workers_exit) return;
                auto& q = !light.empty() ? light : heavy;
                c = q.front();
                q.pop_front();
            }
            serve_one(*c);
            {
                std::lock_guard<std::mutex> lk(mu);
                returned.push_back(c);
            }
            const uint64_t one = 1;
            [[maybe_unused]] const ssize_t w = ::write(wake, &one, sizeof one);
        }
    }

    void serve_one(HttpConn& c);
};

void HttpServer::Impl::serve_one(HttpConn& c) {
    HttpResponse res;
    try {
        handler(HttpRequest(c.head, std::string_view(c.buf).substr(0, c.head.content_length), &c, true), res);
    } catch (...) {
        res = HttpResponse{};
        res.status = 500;
        res.body = error_body(500, "internal server error");
    }
    const bool keep = c.head.keep_alive && !res.close && !stopping.load() && !(res.stream && c.head.minor == 0);
    bool ok = false;
    try {
        ok = write_response(c, res, lim.write_timeout_s, keep);
    } catch (...) {
        ok = false;
    }
    if (res.on_release) {
        try {
            res.on_release();
        } catch (...) {
        }
    }
    c.buf.erase(0, c.head.content_length);
    c.keep = ok && keep;
}

HttpServer::HttpServer(const HttpLimits& limits, Handler handler, PreHandler pre, ErrorBody error_body)
    : impl_(std::make_unique<Impl>()) {
    impl_->lim = limits;
    impl_->handler = std::move(handler);
    impl_->pre = std::move(pre);
    impl_->error_body = std::move(error_body);
    impl_->lim.max_connections = connection_limit(limits.max_connections);
    impl_->ep = epoll_create1(EPOLL_CLOEXEC);
    impl_->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (impl_->ep < 0 || impl_->wake < 0) fail("serve: cannot create the event loop: {}", std::strerror(errno));
}

HttpServer::~HttpServer() {
    stop();
    if (impl_->lfd >= 0) ::close(impl_->lfd);
    for (auto& [fd, c] : impl_->conns) ::close(fd);
    ::close(impl_->ep);
    ::close(impl_->wake);
}

int HttpServer::max_connections() const { return impl_->lim.max_connections; }

int HttpServer::bind(const std::string& host, int port) {
    int got = 0;
    const int fd = listen_socket(host, port, &got);
    impl_->lfd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(impl_->ep, EPOLL_CTL_ADD, fd, &ev);
    epoll_event wv{};
    wv.events = EPOLLIN;
    wv.data.fd = impl_->wake;
    epoll_ctl(impl_->ep, EPOLL_CTL_ADD, impl_->wake, &wv);
    return got;
}

void HttpServer::serve() {
    Impl& s = *impl_;
    if (s.stopping.load() || s.lfd < 0) return;
    for (int i = 0; i < s.lim.light_workers; ++i) s.threads.emplace_back([&s] { s.worker(true); });
    for (int i = 0; i < std::max(1, s.lim.workers); ++i) s.threads.emplace_back([&s] { s.worker(false); });
    s.reactor();
    // stop: no new connections; requests still with a worker lose their socket (their writes
    // fail at once), everything else is closed
    ::close(s.lfd);
    s.lfd = -1;
    for (auto& [fd, c] : s.conns)
        if (c->st == ConnState::Busy) ::shutdown(fd, SHUT_RDWR);
    {
        std::lock_guard<std::mutex> lk(s.mu);
        s.workers_exit = true;
    }
    s.cv.notify_all();
    for (auto& t : s.threads) t.join();
    s.threads.clear();
    for (auto& [fd, c] : s.conns) ::close(fd);
    s.conns.clear();
    s.heavy.clear();
    s.light.clear();
    s.returned.clear();
}

void HttpServer::stop() {
    impl_->stopping.store(true);
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t w = ::write(impl_->wake, &one, sizeof one);
}

}  // namespace jitllm::serve
