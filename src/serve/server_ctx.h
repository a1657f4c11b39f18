// Inside Server (server.h): its state and handlers. server.cpp holds the lifecycle, the checks
// before a body is read, routing and the small endpoints; completion.cpp the completion
// endpoints (size checks before any work, admission, whole and streamed responses). Not for use
// outside src/serve/server.cpp and completion.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/chat_format.h"
#include "serve/api.h"
#include "serve/guard.h"
#include "serve/http_server.h"
#include "serve/metrics.h"
#include "serve/openai_json.h"
#include "serve/scheduler.h"
#include "serve/server.h"

namespace jitllm::serve {

inline ApiError unavailable(const std::string& message) { return ApiError(503, "unavailable_error", message); }

struct Server::Ctx {
    ServerOptions opt;
    std::string alias;
    Metrics metrics;
    std::unique_ptr<HttpServer> http;
    std::unique_ptr<SequenceBatch> batch;
    std::unique_ptr<Scheduler> sched;
    ChatTemplate chat_template;  // the model's (tokenizer.chat_template), else its family's format
    std::atomic<bool> ready{false};    // set by open(): batch and sched are set before, never read before
    std::atomic<bool> closing{false};
    std::atomic<int> open_responses{0};
    std::atomic<uint64_t> completion_body_max{0};  // set by load(): the largest body a context can use
    size_t max_token_bytes = 1;                    // longest text one token stands for
    GuardOptions guard;
    std::thread listener;
    std::mutex shutdown_mu;
    bool shut = false;
    int64_t created = int64_t(std::time(nullptr));

    static void send_json(HttpResponse& res, int status, const std::string& body) {
        res.status = status;
        res.set_body(body, "application/json; charset=utf-8");
    }
    static void send_error(HttpResponse& res, const ApiError& e) {
        if (e.status == 503) res.header("Retry-After", "1");
        else if (e.status >= 500) res.header("x-should-retry", "false");
        send_json(res, e.status, error_body(e));
    }

    // --- server.cpp ------------------------------------------------------------------------
    // On the transport's reactor after the head, before the body: cheap checks only. true when
    // it answered (a request with a body is then drained and the connection closed).
    bool pre(const HttpRequest& req, HttpResponse& res);
    // On a worker with the whole request: routes and turns exceptions into error responses.
    void handle(const HttpRequest& req, HttpResponse& res);
    std::string library_error(int status, const std::string& message) const;
    void need_method(const HttpRequest& req, HttpResponse& res, const char* method);
    Gauges gauges() const;
    void health(HttpResponse& res);
    ojson model_json() const;
    void check_ready();
    void check_model(const std::string& m) const;
    void tokenize(const HttpRequest& req, HttpResponse& res);
    void detokenize(const HttpRequest& req, HttpResponse& res);

    // --- completion.cpp --------------------------------------------------------------------
    void completion(const HttpRequest& req, HttpResponse& res, Endpoint kind);
    void check_prompt_size(const CompletionParams& p, int n_ctx, const char* prompt_param) const;
    // `rendered` (chat): the prompt text, ending with `reply_start` (a forced call's opening)
    std::vector<int32_t> prompt_tokens(const CompletionParams& p, Endpoint kind, int n_ctx,
                                       std::string* rendered = nullptr, const std::string& reply_start = {}) const;
    // chat with tool_choice "required" or a named function, where the template's call syntax is
    // known: the forced call (ForcedCall) and its compiled schema; false otherwise
    bool forced_tool_call(const CompletionParams& p, ForcedCall& f, std::shared_ptr<const JsonSchema>& schema) const;
    // chat: the prompt text (the model's template, else its family's format)
    std::string chat_prompt(const CompletionParams& p) const;
    // chat: how the reply is split (reasoning, tool calls) given the request and its prompt
    ReplyOptions reply_options(const CompletionParams& p, const std::string& prompt) const;
    void whole_response(const HttpRequest& req, HttpResponse& res, Job& job, const ResponseMeta& m);
    void stream_response(HttpResponse& res, std::shared_ptr<Job> job, const ResponseMeta& m);
    bool write_stream(StreamWriter& w, Job& job, const ResponseMeta& m);
};

}  // namespace jitllm::serve
