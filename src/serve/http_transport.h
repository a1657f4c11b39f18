// HttpServer: the C++ face of the HTTP transport module (jitllm-httplib.so, loaded with dlopen when
// `serve` starts). Requests arrive as HttpRequest views; handlers answer through HttpResponse,
// either a whole body or a stream written on the worker thread. No routing or API logic here.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "serve/http_plugin_abi.h"

namespace jitllm::serve {

struct HttpLimits {
    size_t payload_max_bytes = 8u << 20;
    int read_timeout_s = 15;
    int write_timeout_s = 30;
    int keep_alive_timeout_s = 5;
    int keep_alive_max_count = 1000;
    int threads = 16;
};

class HttpRequest {
public:
    explicit HttpRequest(const jh_request* r) : r_(r) {}
    std::string_view method() const { return r_->method; }
    std::string_view path() const { return r_->path; }
    std::string_view body() const { return {r_->body ? r_->body : "", r_->body_len}; }
    bool has_body() const { return r_->body != nullptr; }
    size_t header_count() const { return r_->n_headers; }
    size_t header_bytes() const;  // sum of name and value lengths
    // First value of a header (names compare case-insensitively).
    std::optional<std::string_view> header(std::string_view name) const;
    std::string_view remote_addr() const { return r_->remote_addr; }
    void* conn() const { return r_->conn; }

private:
    const jh_request* r_;
};

// Writes pieces of a streamed body; false once the client is gone.
class StreamWriter {
public:
    StreamWriter(const jh_sink_api* api, void* sink) : api_(api), sink_(sink) {}
    bool write(std::string_view s) { return api_->write(sink_, s.data(), s.size()) != 0; }

private:
    const jh_sink_api* api_;
    void* sink_;
};

class HttpResponse {
public:
    HttpResponse(const jh_response_api* api, void* res, void* conn) : api_(api), res_(res), conn_(conn) {}
    void status(int s) { api_->set_status(res_, s); }
    void header(const std::string& name, const std::string& value) {
        api_->set_header(res_, name.c_str(), value.c_str());
    }
    void body(std::string_view data, const char* content_type) {
        api_->set_body(res_, data.data(), data.size(), content_type);
    }
    // The stream function runs on the worker thread after the headers are sent; it returns true
    // when the body is complete. on_release runs once when the response is gone (always).
    void stream(const char* content_type, std::function<bool(StreamWriter&)> fn,
                std::function<void()> on_release);
    // true when the client has closed the connection (false when open or unknown).
    bool peer_closed() const { return conn_ && api_->peer_closed(conn_) == 1; }
    // Answers on the socket and closes it without reading the body (http_plugin_abi.h, reject).
    // Returns false when not possible; the caller then answers through status()/body().
    bool reject(int status, const std::vector<std::pair<std::string, std::string>>& headers,
                std::string_view body) const;

private:
    const jh_response_api* api_;
    void* res_;
    void* conn_;
};

class HttpServer {
public:
    using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;
    using PreHandler = std::function<bool(const HttpRequest&, HttpResponse&)>;  // true: answered
    using ErrorHandler = std::function<void(int status, HttpResponse&)>;

    // Loads the module (see plugin_path()) and creates the server. Throws Error when it cannot.
    explicit HttpServer(const HttpLimits& limits);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    void set_handlers(Handler h, PreHandler pre, ErrorHandler err);
    int bind(const std::string& host, int port);  // returns the bound port; throws Error
    bool listen();                                 // blocks until stop()
    void stop();
    std::string library_version() const { return api_->library_version; }

    // $JITLLM_HTTP_PLUGIN, else jitllm-httplib.so beside the running binary.
    static std::string plugin_path();

private:
    static void on_request(void* user, const jh_request* req, const jh_response_api* api, void* res);
    static int on_pre(void* user, const jh_request* req, const jh_response_api* api, void* res);
    static void on_error(void* user, int status, const jh_response_api* api, void* res);

    void* dl_ = nullptr;
    const jh_server_api* api_ = nullptr;
    void* srv_ = nullptr;
    Handler handler_;
    PreHandler pre_;
    ErrorHandler error_;
};

}  // namespace jitllm::serve
