// The OpenAI-compatible server behind `jitllm serve`: routes, the pre-routing guard (transport
// limits, API key), request handlers, response and SSE framing, and graceful shutdown. The model
// is loaded after the port is bound, so /health answers 503 "Loading model" meanwhile, as
// llama-server does; completions are admitted once open() is called. Binds 127.0.0.1 unless told
// otherwise.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/slots.h"

namespace jitllm::serve {

struct ServerOptions {
    SequenceBatchOptions model;   // model path, slots (n_seq), per-slot context, threads, gpu
    std::string alias;            // model id in /v1/models (default: file name without .gguf)
    std::string host = "127.0.0.1";
    int port = 8080;              // 0: any free port
    std::string api_key;          // empty: no authentication (Host and Origin are checked instead)
    std::vector<std::string> cors_origins;  // --cors-origin: origins (or "*") web pages may call from
    int queue_size = 64;          // requests waiting for a slot before 503
    int http_threads = 0;         // workers for requests with a body; 0: default_http_threads()
    int max_connections = 1024;   // open connections (idle and arriving ones cost no thread)
    size_t max_body_bytes = 8u << 20;
    int request_timeout_s = 15;   // a whole request (head and body) must arrive within this
    int write_timeout_s = 30;
    int keep_alive_timeout_s = 5;
    int prefill_chunk = 16;
    int step_delay_ms = 0;        // test aid (hidden flag)
    int shutdown_grace_s = 10;    // how long shutdown waits for responses to finish writing
    std::string chat_template_file;  // a Jinja chat template that replaces the model's
};

class Server {
public:
    explicit Server(ServerOptions opt);
    ~Server();

    // Creates the HTTP server and binds; returns the port. Throws Error.
    int bind();
    // Serves on a background thread (503 for completions until open()).
    void start();
    // Loads the model and starts the scheduler; requests are not admitted yet. Throws Error (the
    // caller then calls shutdown()).
    void load();
    // Admits requests (after load()): /health answers ok from now on.
    void open();
    // Refuses new requests, ends running ones (streams get their final chunk and [DONE]), waits
    // for responses to be written (at most shutdown_grace_s), stops the HTTP server. Idempotent.
    void shutdown();
    const std::string& model_id() const { return alias_; }
    // slots + min(queue, 64) + 8: a worker per slot's request and per waiting request up to 64;
    // beyond that, complete requests wait in the transport without a thread
    static int default_http_threads(int slots, int queue_size);

private:
    struct Ctx;
    ServerOptions opt_;
    std::string alias_;
    std::unique_ptr<Ctx> ctx_;
};

}  // namespace jitllm::serve
