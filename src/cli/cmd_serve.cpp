// `jitllm serve`: the OpenAI-compatible HTTP server (src/serve/, docs/server.md). Flags, signal
// handling and the process lifetime live here: SIGINT/SIGTERM start a graceful shutdown (running
// streams get their final chunk), a second signal, or one while the model loads, ends the process
// at once. Logs go to stderr.
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/cli_util.h"
#include "cli/gpu_flags.h"
#include "core/error.h"
#include "profile/profiler.h"
#include "serve/server.h"

namespace jitllm::cli {

namespace {

bool is_loopback(const std::string& host) {
    return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : "SIGTERM"; }

// Ends the process by `sig` itself (default action), so the parent sees what stopped it.
[[noreturn]] void die_by(int sig) {
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    raise(sig);
    _exit(128 + sig);
}

// Takes SIGINT/SIGTERM on a thread of its own (they are blocked everywhere else). While the model
// loads nothing has been served, so a signal ends the process at once instead of waiting for the
// load: the load only reads (the model file; kernel cache entries are written aside and renamed
// into place), so no file is left half-written. Once the server is open the first signal is
// handed to wait() for a graceful shutdown, and a second one ends the process at once.
class SignalWatch {
public:
    explicit SignalWatch(const sigset_t& set) : st_(std::make_shared<State>()) {
        st_->set = set;
        // the thread outlives this object (a second signal may come while the process exits)
        std::thread([st = st_] { run(*st); }).detach();
    }
    // The model is loaded: a signal from now on shuts down gracefully. Blocks for good when a
    // signal came first (the watch thread holds the lock while it ends the process).
    void loaded() { set_phase(Phase::Serving); }
    // The load failed and the process is about to exit with the error.
    void failed() { set_phase(Phase::Failed); }
    // The first signal after loaded().
    int wait() {
        std::unique_lock<std::mutex> lk(st_->mu);
        st_->cv.wait(lk, [this] { return st_->first != 0; });
        return st_->first;
    }

private:
    enum class Phase { Loading, Serving, Failed };
    struct State {
        sigset_t set;
        std::mutex mu;
        std::condition_variable cv;
        Phase phase = Phase::Loading;
        int first = 0;
    };
    void set_phase(Phase p) {
        std::lock_guard<std::mutex> lk(st_->mu);
        st_->phase = p;
    }
    static void run(State& st) {
        int sig = 0;
        sigwait(&st.set, &sig);
        {
            std::lock_guard<std::mutex> lk(st.mu);  // held while dying: the load cannot open meanwhile
            if (st.phase == Phase::Loading) {
                std::fprintf(stderr, "[jitllm] serve: %s while loading the model: exiting, nothing was served\n",
                             signal_name(sig));
                die_by(sig);
            }
            st.first = sig;
        }
        st.cv.notify_all();
        int again = 0;
        sigwait(&st.set, &again);
        die_by(again);
    }

    std::shared_ptr<State> st_;
};

}  // namespace

int cmd_serve(const Args& args) {
    CLI::App app{"jitllm serve: OpenAI-compatible HTTP server (/v1/chat/completions, /v1/completions, "
                 "/v1/models, /health, /metrics, /tokenize, /detokenize)", "jitllm serve"};
    serve::ServerOptions o;
    o.model.model_path = default_model_path();
    GpuFlags g;
    app.add_option("-m,--model", o.model.model_path, "GGUF model file (default: bundled stories260K)");
    app.add_option("-a,--alias", o.alias, "model id in /v1/models (default: the file name without .gguf)");
    app.add_option("--host", o.host, "address to bind (default 127.0.0.1; anything wider needs a proxy, "
                                     "see docs/server.md)");
    app.add_option("--port", o.port, "port (default 8080; 0 = any free port)")->check(CLI::Range(0, 65535));
    app.add_option("--parallel", o.model.n_seq, "slots: requests generated at the same time, each with its "
                                                "own KV cache (default 1)")->check(CLI::Range(1, 256));
    app.add_option("-c,--ctx-size", o.model.n_ctx, "context length of each slot (default: min(model, 4096))")
        ->check(CLI::Range(0, 1 << 24));
    app.add_option("--kv-pool-tokens", o.model.kv_pool_tokens, "KV cache positions of all slots together, in blocks of "
                   "16 (default: parallel x ctx-size, on the GPU at most what --kv-pool-fraction holds); a request "
                   "waits until the pool can hold its prompt + max_tokens")
        ->check(CLI::Range(int64_t(0), int64_t(1) << 30));
    app.add_option("--kv-pool-fraction", o.model.kv_pool_fraction,
                   fmt::format("GPU without --kv-pool-tokens: the share of the memory free beside the weights that "
                               "the KV pool may take (default {})", kDefaultKvPoolFraction))
        ->check(CLI::Range(0.0, 1.0));
    bool no_prefix_reuse = false;
    app.add_flag("--no-prefix-reuse", no_prefix_reuse, "compute every prompt whole (default: the KV blocks of a "
                 "prompt prefix an earlier request computed are reused)");
    o.model.n_threads = 0;  // all physical cores
    app.add_option("-t,--threads", o.model.n_threads, "CPU threads (default: all physical cores)")
        ->check(CLI::Range(1, 1024));
    app.add_option("--api-key", o.api_key, "require \"Authorization: Bearer KEY\" (except /health and "
                                           "/v1/models); also $JITLLM_API_KEY")->envname("JITLLM_API_KEY");
    app.add_option("--queue-size", o.queue_size, "requests that may wait for a slot before 503 (default 64)")
        ->check(CLI::Range(0, 100000));
    app.add_option("--threads-http", o.http_threads, "worker threads for requests with a body (default: parallel + "
                                                      "min(queue, 64) + 8; idle and arriving connections hold none)")
        ->check(CLI::Range(0, 4096));
    app.add_option("--max-connections", o.max_connections, "open connections at most; at the bound the idle, then "
                                                            "the slowest one is closed (default 1024)")
        ->check(CLI::Range(16, 1 << 20));
    app.add_option("--max-body", o.max_body_bytes, "largest request body in bytes (default 8 MiB; completions are "
                                                   "also bounded by what the context can hold)")
        ->check(CLI::Range(size_t(1024), size_t(1) << 30));
    app.add_option("--timeout", o.request_timeout_s, "seconds a client has to send a whole request, head and body "
                                                     "(default 15; 408 after)")
        ->check(CLI::Range(1, 3600));
    app.add_option("--keep-alive", o.keep_alive_timeout_s, "seconds an idle connection stays open between requests "
                                                            "(default 5)")->check(CLI::Range(1, 3600));
    app.add_option("--cors-origin", o.cors_origins, "origin (e.g. https://app.example) whose web pages may call the "
                                                    "API, or * (repeatable; default: none, and without --api-key "
                                                    "requests with another Origin get 403)");
    app.add_option("--prefill-chunk", o.prefill_chunk, "prompt tokens a slot consumes per scheduler step "
                                                       "(default 16)")->check(CLI::Range(1, 1 << 16));
    app.add_option("--chat-template-file", o.chat_template_file, "render chats with this Jinja chat template "
                                                                 "instead of the model's (docs/chat.md)");
    add_gpu_flags(app, o.model.gpu, "run on the GPU (the slots decode together: one batched step)");
    add_cpu_exact_flag(app, o.model.cpu_exact);
    // test aid, not listed in --help: makes busy, queued and shutdown states observable
    app.add_option("--debug-step-delay-ms", o.step_delay_ms)->group("")->check(CLI::Range(0, 10000));
    // every option above also from $JITLLM_ARG_<NAME> (--ctx-size: JITLLM_ARG_CTX_SIZE), as llama-server's
    // LLAMA_ARG_*; --api-key keeps $JITLLM_API_KEY
    add_env_twins(app, "JITLLM_ARG_");
    g.add(app);
    if (!parse_args(app, args)) return 0;
    o.model.prefix_reuse = !no_prefix_reuse;
    Profiler profiler;  // --profiler: per-kernel table of the whole serving run, printed at shutdown
    g.apply(o.model, o.model.gpu, false, &profiler);
    if (!is_loopback(o.host))
        std::fprintf(stderr, "[jitllm] serve: warning: binding %s, not loopback; the server has no TLS and only "
                             "basic limits, put a reverse proxy in front (docs/server.md)\n", o.host.c_str());

    // Signals are taken by sigwait below: block them before any thread exists so every thread
    // inherits the mask. A client that vanishes mid-write must not kill the process (SIGPIPE).
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal(SIGPIPE, SIG_IGN);

    serve::Server server(o);
    const int port = server.bind();
    server.start();
    std::fprintf(stderr, "[jitllm] serve: listening on http://%s:%d (loading %s)\n", o.host.c_str(), port,
                 o.model.model_path.c_str());
    SignalWatch signals(set);
    const double t0 = now_ms();
    try {
        server.load();
    } catch (...) {
        signals.failed();
        server.shutdown();
        throw;
    }
    signals.loaded();
    server.open();
    std::fprintf(stderr, "[jitllm] serve: ready: model \"%s\", %d slot(s), queue %d, load %.0f ms; "
                         "http://%s:%d/v1\n", server.model_id().c_str(), o.model.n_seq, o.queue_size,
                 now_ms() - t0, o.host.c_str(), port);
    const int sig = signals.wait();
    std::fprintf(stderr, "[jitllm] serve: %s: shutting down (running requests get their final chunk; "
                         "a second signal exits now)\n", signal_name(sig));
    server.shutdown();
    std::fprintf(stderr, "[jitllm] serve: stopped\n");
    if (!profiler.records().empty()) {
        std::fprintf(stderr, "%s", profiler.table().c_str());
        if (!g.profiler_dump_dir.empty()) profiler.dump(g.profiler_dump_dir);
    }
    return 0;
}

}  // namespace jitllm::cli
