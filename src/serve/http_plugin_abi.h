// The C interface between `jitllm serve` and its HTTP transport module (jitllm-httplib.so, a thin
// wrapper over Debian's shared cpp-httplib). Only C types cross it: the jitllm binary links
// libstdc++ statically and the module uses the shared one, so no C++ object or exception may pass.
// Routing, validation and JSON stay on the jitllm side; the module only moves bytes.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define JITLLM_HTTP_ABI_VERSION 1

struct jh_limits {
    size_t payload_max_bytes;   // larger Content-Length bodies are refused (413) before reading
    int read_timeout_s;         // per read while receiving a request
    int write_timeout_s;        // per write while sending (a stalled reader is dropped)
    int keep_alive_timeout_s;   // idle time a kept-alive connection may hold a worker
    int keep_alive_max_count;   // requests per connection
    int threads;                // worker threads (each open connection holds one)
};

struct jh_header {
    const char* name;
    const char* value;
};

struct jh_request {
    const char* method;
    const char* path;        // without the query string
    const char* target;      // as sent, with the query string
    const char* version;     // "HTTP/1.1"
    const char* body;        // NULL in the pre-routing hook (the body is not read yet)
    size_t body_len;
    const struct jh_header* headers;
    size_t n_headers;
    const char* remote_addr;
    int remote_port;
    void* conn;              // module-private; pass to jh_response_api.peer_closed
};

struct jh_sink_api {
    // Writes one piece of a streamed body; returns 0 once the client is gone.
    int (*write)(void* sink, const char* data, size_t len);
};

// Streams a body: called once on the worker thread after the headers are sent; writes through
// sink_api and returns 1 when the body is complete, 0 to abort the connection.
typedef int (*jh_stream_fn)(void* ctx, const struct jh_sink_api* sink_api, void* sink);
// Called exactly once when the response is destroyed (streamed or not, success or not).
typedef void (*jh_release_fn)(void* ctx);

struct jh_response_api {
    void (*set_status)(void* res, int status);
    void (*set_header)(void* res, const char* name, const char* value);
    void (*set_body)(void* res, const char* data, size_t len, const char* content_type);
    void (*set_stream)(void* res, const char* content_type, jh_stream_fn fn, jh_release_fn release,
                       void* ctx);
    // 1 when the client has closed its end of the connection, 0 when open, -1 when unknown.
    int (*peer_closed)(void* conn);
    // Answers a request whose body must never be read (too large, chunked, compressed,
    // unauthenticated) straight on the socket, then closes it gracefully: half-close, discard
    // what the client still sends for a moment, close. A plain close with unread bytes would send
    // a TCP reset that can destroy the answer before the client reads it. `headers` holds
    // name/value pairs; the module adds Content-Type, Content-Length and Connection: close.
    // Returns 0 when not possible (the caller then answers normally).
    int (*reject)(void* conn, int status, const char* const* headers, size_t n_headers,
                  const char* body, size_t body_len);
};

// Every request after its body is read. Fills the response through api.
typedef void (*jh_handler_fn)(void* user, const struct jh_request* req,
                              const struct jh_response_api* api, void* res);
// Every request after its headers, before its body is read: returns 1 when it answered
// (the body is then never read), 0 to continue.
typedef int (*jh_pre_fn)(void* user, const struct jh_request* req,
                         const struct jh_response_api* api, void* res);
// Errors the library produces itself (400 bad request line, 413, 414, ...): fills a body.
typedef void (*jh_error_fn)(void* user, int status, const struct jh_response_api* api, void* res);

struct jh_server_api {
    int abi_version;
    const char* library_version;  // cpp-httplib's version string
    // Returns NULL and a message in err on failure.
    void* (*create)(const struct jh_limits* limits, char* err, size_t err_len);
    void (*set_handlers)(void* srv, jh_handler_fn handler, jh_pre_fn pre, jh_error_fn error,
                         void* user);
    // Binds host:port (port 0: any free port); returns the bound port, or -1 with err set.
    int (*bind)(void* srv, const char* host, int port, char* err, size_t err_len);
    // Serves until stop(); returns 1 on a clean stop.
    int (*listen)(void* srv);
    void (*stop)(void* srv);
    void (*destroy)(void* srv);
};

// The module's one exported symbol.
const struct jh_server_api* jitllm_http_plugin(void);
typedef const struct jh_server_api* (*jitllm_http_plugin_fn)(void);

#ifdef __cplusplus
}
#endif
