// HttpServer (see http_transport.h): dlopen of the transport module and the C callbacks that
// forward to the std::function handlers. No exception crosses into the module.
#include "serve/http_transport.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <climits>
#include <memory>

#include "core/error.h"

namespace jitllm::serve {

namespace {

bool iequal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

void internal_error(HttpResponse& res) {
    static const char kBody[] =
        "{\"error\":{\"message\":\"internal server error\",\"type\":\"server_error\",\"param\":null,"
        "\"code\":500}}";
    res.status(500);
    res.header("x-should-retry", "false");
    res.body(std::string_view(kBody, sizeof kBody - 1), "application/json");
}

struct StreamCtx {
    std::function<bool(StreamWriter&)> fn;
    std::function<void()> on_release;
};

int stream_trampoline(void* ctx, const jh_sink_api* api, void* sink) {
    try {
        StreamWriter w(api, sink);
        return static_cast<StreamCtx*>(ctx)->fn(w) ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

void release_trampoline(void* ctx) {
    std::unique_ptr<StreamCtx> c(static_cast<StreamCtx*>(ctx));
    try {
        if (c->on_release) c->on_release();
    } catch (...) {
    }
}

}  // namespace

size_t HttpRequest::header_bytes() const {
    size_t n = 0;
    for (size_t i = 0; i < r_->n_headers; ++i)
        n += std::string_view(r_->headers[i].name).size() + std::string_view(r_->headers[i].value).size();
    return n;
}

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
    for (size_t i = 0; i < r_->n_headers; ++i)
        if (iequal(r_->headers[i].name, name)) return std::string_view(r_->headers[i].value);
    return std::nullopt;
}

void HttpResponse::stream(const char* content_type, std::function<bool(StreamWriter&)> fn,
                          std::function<void()> on_release) {
    auto* ctx = new StreamCtx{std::move(fn), std::move(on_release)};
    api_->set_stream(res_, content_type, stream_trampoline, release_trampoline, ctx);
}

bool HttpResponse::reject(int status, const std::vector<std::pair<std::string, std::string>>& headers,
                          std::string_view body) const {
    if (!conn_) return false;
    std::vector<const char*> h;
    for (const auto& [k, v] : headers) {
        h.push_back(k.c_str());
        h.push_back(v.c_str());
    }
    return api_->reject(conn_, status, h.data(), headers.size(), body.data(), body.size()) != 0;
}

std::string HttpServer::plugin_path() {
    if (const char* p = std::getenv("JITLLM_HTTP_PLUGIN"); p && *p) return p;
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    std::string dir = ".";
    if (n > 0) {
        std::string exe(buf, size_t(n));
        const auto slash = exe.rfind('/');
        if (slash != std::string::npos) dir = exe.substr(0, slash);
    }
    return dir + "/jitllm-httplib.so";
}

HttpServer::HttpServer(const HttpLimits& limits) {
    const std::string path = plugin_path();
    dl_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!dl_)
        fail("serve: cannot load the HTTP transport module {}: {}; hint: build the jitllm_httplib "
             "target (needs libcpp-httplib-dev) or set JITLLM_HTTP_PLUGIN", path, dlerror());
    auto entry = reinterpret_cast<jitllm_http_plugin_fn>(dlsym(dl_, "jitllm_http_plugin"));
    if (!entry) fail("serve: {}: no symbol jitllm_http_plugin: expected a jitllm HTTP module", path);
    api_ = entry();
    if (!api_ || api_->abi_version != JITLLM_HTTP_ABI_VERSION)
        fail("serve: {}: interface version {}: expected {}; hint: rebuild jitllm_httplib", path,
             api_ ? api_->abi_version : -1, JITLLM_HTTP_ABI_VERSION);
    jh_limits l{limits.payload_max_bytes, limits.read_timeout_s, limits.write_timeout_s,
                limits.keep_alive_timeout_s, limits.keep_alive_max_count, limits.threads};
    char err[512] = {0};
    srv_ = api_->create(&l, err, sizeof err);
    if (!srv_) fail("serve: cannot create the HTTP server: {}", err);
}

HttpServer::~HttpServer() {
    if (srv_) api_->destroy(srv_);
    // the module stays loaded: its worker threads may still be unwinding their last frames
}

void HttpServer::set_handlers(Handler h, PreHandler pre, ErrorHandler err) {
    handler_ = std::move(h);
    pre_ = std::move(pre);
    error_ = std::move(err);
    api_->set_handlers(srv_, on_request, on_pre, on_error, this);
}

int HttpServer::bind(const std::string& host, int port) {
    char err[512] = {0};
    const int got = api_->bind(srv_, host.c_str(), port, err, sizeof err);
    if (got < 0) fail("serve: {}", err);
    return got;
}

bool HttpServer::listen() { return api_->listen(srv_) != 0; }

void HttpServer::stop() { api_->stop(srv_); }

void HttpServer::on_request(void* user, const jh_request* req, const jh_response_api* api, void* res) {
    HttpResponse r(api, res, req->conn);
    try {
        auto* self = static_cast<HttpServer*>(user);
        HttpRequest q(req);
        self->handler_(q, r);
    } catch (...) {
        internal_error(r);
    }
}

int HttpServer::on_pre(void* user, const jh_request* req, const jh_response_api* api, void* res) {
    HttpResponse r(api, res, req->conn);
    try {
        auto* self = static_cast<HttpServer*>(user);
        HttpRequest q(req);
        return self->pre_ && self->pre_(q, r) ? 1 : 0;
    } catch (...) {
        internal_error(r);
        return 1;
    }
}

void HttpServer::on_error(void* user, int status, const jh_response_api* api, void* res) {
    HttpResponse r(api, res, nullptr);
    try {
        auto* self = static_cast<HttpServer*>(user);
        if (self->error_) self->error_(status, r);
    } catch (...) {
    }
}

}  // namespace jitllm::serve
