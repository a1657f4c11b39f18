// Server (see server.h). Response shapes follow OpenAI's chat.completion(.chunk) and
// text_completion objects; error bodies and type strings follow llama-server (code = HTTP status).
#include "serve/server.h"

#include <chrono>
#include <ctime>
#include <random>

#define FMT_HEADER_ONLY 1
#include <fmt/format.h>

#include "core/error.h"
#include "runtime/chat_format.h"
#include "serve/api.h"
#include "serve/guard.h"
#include "tokenizer/tokenizer.h"

namespace jitllm::serve {

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kPollInterval = std::chrono::milliseconds(200);
constexpr auto kPingInterval = std::chrono::seconds(2);

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

const char* type_for_status(int status) {
    switch (status) {
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 501: return "not_supported_error";
        case 503: return "unavailable_error";
        default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

ApiError unavailable(const std::string& message) { return ApiError(503, "unavailable_error", message); }

std::string random_id(const char* prefix) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return fmt::format("{}{:016x}{:08x}", prefix, rng(), uint32_t(rng()));
}

ojson byte_array(const std::string& s) {
    ojson a = ojson::array();
    for (unsigned char c : s) a.push_back(int(c));
    return a;
}

std::string file_stem(const std::string& path) {
    std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
    if (base.size() > 5 && base.compare(base.size() - 5, 5, ".gguf") == 0) base.resize(base.size() - 5);
    return base;
}

struct ResponseMeta {
    Endpoint kind = Endpoint::Chat;
    std::string id;
    int64_t created = 0;
    std::string model;
    bool include_usage = false;
    bool logprobs = false;
};

}  // namespace

struct Server::Ctx {
    ServerOptions opt;
    std::string alias;
    Metrics metrics;
    std::unique_ptr<HttpServer> http;
    std::unique_ptr<SequenceBatch> batch;
    std::unique_ptr<Scheduler> sched;
    ChatFormat chat_format = ChatFormat::None;
    std::atomic<bool> ready{false};
    std::atomic<bool> closing{false};
    std::atomic<int> open_responses{0};
    std::atomic<uint64_t> completion_body_max{0};  // set by load(): the largest body a context can use
    size_t max_token_bytes = 1;                    // longest text one token stands for
    GuardOptions guard;
    std::thread listener;
    std::mutex shutdown_mu;
    bool shut = false;
    int64_t created = int64_t(std::time(nullptr));

    // --- framing -------------------------------------------------------------------------
    void send_json(HttpResponse& res, int status, const std::string& body) {
        res.status = status;
        res.set_body(body, "application/json; charset=utf-8");
    }

    void send_error(HttpResponse& res, const ApiError& e) {
        if (e.status == 503) res.header("Retry-After", "1");
        else if (e.status >= 500) res.header("x-should-retry", "false");
        send_json(res, e.status, error_body(e));
    }

    ojson usage_json(const JobDelta& d) const {
        ojson u;
        u["prompt_tokens"] = d.n_prompt;
        u["completion_tokens"] = d.n_gen;
        u["total_tokens"] = d.n_prompt + d.n_gen;
        u["prompt_tokens_details"] = {{"cached_tokens", 0}};
        return u;
    }

    ojson logprobs_json(const ResponseMeta& m, const std::vector<TokenLogprob>& lps) const {
        const Tokenizer& tok = batch->tokenizer();
        if (m.kind == Endpoint::Chat) {
            ojson content = ojson::array();
            for (const auto& t : lps) {
                const std::string piece = tok.token_to_piece(t.id, false);
                ojson e;
                e["token"] = piece;
                e["logprob"] = t.logprob;
                e["bytes"] = byte_array(piece);
                ojson top = ojson::array();
                for (const auto& [id, lp] : t.top) {
                    const std::string p = tok.token_to_piece(id, false);
                    top.push_back({{"token", p}, {"logprob", lp}, {"bytes", byte_array(p)}});
                }
                e["top_logprobs"] = std::move(top);
                content.push_back(std::move(e));
            }
            return {{"content", std::move(content)}};
        }
        ojson tokens = ojson::array(), token_lps = ojson::array(), tops = ojson::array(),
              offsets = ojson::array();
        for (const auto& t : lps) {
            tokens.push_back(tok.token_to_piece(t.id, false));
            token_lps.push_back(t.logprob);
            ojson top = ojson::object();
            for (const auto& [id, lp] : t.top) top[tok.token_to_piece(id, false)] = lp;
            tops.push_back(std::move(top));
            offsets.push_back(t.text_offset);
        }
        return {{"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
    }

    // One choice of a chunk or of a whole response.
    ojson chunk(const ResponseMeta& m, const std::string& text, const std::vector<TokenLogprob>* lps,
                const char* finish, bool first) const {
        ojson c;
        c["id"] = m.id;
        c["object"] = m.kind == Endpoint::Chat ? "chat.completion.chunk" : "text_completion";
        c["created"] = m.created;
        c["model"] = m.model;
        c["system_fingerprint"] = "jitllm";
        ojson ch;
        if (m.kind == Endpoint::Chat) {
            ch["index"] = 0;
            ojson delta = ojson::object();
            if (first) delta["role"] = "assistant";
            if (first || !text.empty()) delta["content"] = text;
            ch["delta"] = std::move(delta);
        } else {
            ch["text"] = text;
            ch["index"] = 0;
        }
        ch["logprobs"] = m.logprobs && lps && !lps->empty() ? logprobs_json(m, *lps) : ojson(nullptr);
        ch["finish_reason"] = finish ? ojson(finish) : ojson(nullptr);
        c["choices"] = ojson::array({std::move(ch)});
        if (m.include_usage) c["usage"] = nullptr;
        return c;
    }

    // --- routing ------------------------------------------------------------------------
    static bool is_completion_path(std::string_view p) {
        return p == "/v1/chat/completions" || p == "/chat/completions" || p == "/v1/completions" ||
               p == "/completions";
    }

    // Runs on the transport's reactor after the head, before the body: cheap checks only. A
    // refusal of a request with a body makes the transport drain and close the connection.
    bool pre(const HttpRequest& req, HttpResponse& res) {
        auto refuse = [&](const ApiError& e) {
            add_cors_headers(req, guard, res);
            send_error(res, e);
            return true;
        };
        if (answer_preflight(req, guard, res)) return true;
        if (auto e = check_access(req, guard)) {
            if (e->status == 401) {
                metrics.rejected_auth++;
                res.header("WWW-Authenticate", "Bearer");
            } else {
                metrics.rejected_invalid++;
            }
            return refuse(*e);
        }
        if (const auto ce = req.header("Content-Encoding"); ce && !iequal(*ce, "identity"))
            return refuse(ApiError(415, "invalid_request_error",
                                   fmt::format("Content-Encoding: {}: compressed request bodies are not "
                                               "accepted: expected identity", *ce)));
        const std::string_view m = req.method();
        if (!req.header("Content-Length") && (m == "POST" || m == "PUT" || m == "PATCH"))
            return refuse(ApiError(411, "invalid_request_error",
                                   "Content-Length: missing: expected the size of the request body"));
        const uint64_t n = req.content_length();
        if (n == 0) return false;
        // bodies are JSON; anything a web form can send without a preflight is refused
        if (const auto ct = req.header("Content-Type")) {
            const std::string mt = media_type(*ct);
            if (mt != "application/json" && !(mt.size() > 5 && mt.compare(mt.size() - 5, 5, "+json") == 0))
                return refuse(ApiError(415, "invalid_request_error",
                                       fmt::format("Content-Type: {}: expected application/json",
                                                   std::string(ct->substr(0, 64)))));
        }
        // a completion body larger than any prompt the context can hold is refused unread
        const uint64_t limit = is_completion_path(req.path()) && completion_body_max.load()
                                   ? std::min<uint64_t>(completion_body_max.load(), opt.max_body_bytes)
                                   : opt.max_body_bytes;
        if (n > limit)
            return refuse(ApiError(413, "invalid_request_error",
                                   fmt::format("request body: too large: expected at most {} bytes{}, found {}", limit,
                                               limit < opt.max_body_bytes ? " (what a context of " +
                                                   std::to_string(batch->n_ctx()) + " tokens can use)" : "",
                                               n)));
        return false;
    }

    std::string library_error(int status, const std::string& message) const {
        return error_body(ApiError(status, type_for_status(status), message));
    }

    void need_method(const HttpRequest& req, HttpResponse& res, const char* method) {
        if (req.method() == method) return;
        res.header("Allow", method);
        throw ApiError(405, "invalid_request_error",
                       fmt::format("{} {}: method not allowed: expected {}", req.method(), req.path(), method));
    }

    void handle(const HttpRequest& req, HttpResponse& res) {
        const std::string path(req.path());
        add_cors_headers(req, guard, res);
        try {
            if (path == "/health" || path == "/v1/health") {
                need_method(req, res, "GET");
                return health(res);
            }
            if (path == "/v1/models" || path == "/models") {
                need_method(req, res, "GET");
                return send_json(res, 200, dump(ojson{{"object", "list"}, {"data", ojson::array({model_json()})}}));
            }
            if (path.rfind("/v1/models/", 0) == 0) {
                need_method(req, res, "GET");
                const std::string id = path.substr(11);
                if (id != alias)
                    throw ApiError(404, "not_found_error", fmt::format("model \"{}\": not found: expected \"{}\"", id, alias),
                                   std::string("model"));
                return send_json(res, 200, dump(model_json()));
            }
            if (path == "/metrics") {
                need_method(req, res, "GET");
                return res.set_body(metrics.render(gauges()), "text/plain; version=0.0.4; charset=utf-8");
            }
            if (path == "/v1/chat/completions" || path == "/chat/completions") {
                need_method(req, res, "POST");
                return completion(req, res, Endpoint::Chat);
            }
            if (path == "/v1/completions" || path == "/completions") {
                need_method(req, res, "POST");
                return completion(req, res, Endpoint::Completion);
            }
            if (path == "/tokenize" || path == "/detokenize") {
                need_method(req, res, "POST");
                return path == "/tokenize" ? tokenize(req, res) : detokenize(req, res);
            }
            throw ApiError(404, "not_found_error", fmt::format("{} {}: no such endpoint", req.method(), path));
        } catch (const ApiError& e) {
            if (e.status >= 400 && e.status < 500 && e.status != 401) metrics.rejected_invalid++;
            send_error(res, e);
        } catch (const Error& e) {
            // input errors raised below us (e.g. the tokenizer) are the client's; device ones ours
            if (e.kind() == Error::Kind::Device) {
                send_error(res, ApiError(500, "server_error", e.what()));
            } else {
                metrics.rejected_invalid++;
                send_error(res, ApiError(400, "invalid_request_error", e.what()));
            }
        } catch (const std::bad_alloc&) {
            send_error(res, ApiError(500, "server_error", "out of host memory"));
        } catch (const std::exception& e) {
            send_error(res, ApiError(500, "server_error", e.what()));
        }
    }

    Gauges gauges() const {
        Gauges g;
        if (!ready.load()) return g;  // batch and sched are set before ready, never read before it
        g.ready = !closing.load();
        g.requests_processing = sched->active();
        g.requests_deferred = sched->queued();
        g.slots_total = sched->slots();
        g.n_ctx = batch->n_ctx();
        return g;
    }

    void health(HttpResponse& res) {
        if (closing.load()) throw unavailable("server is shutting down");
        if (!ready.load()) throw unavailable("Loading model");
        const int active = sched->active();
        send_json(res, 200, dump(ojson{{"status", "ok"},
                                       {"slots_idle", sched->slots() - active},
                                       {"slots_processing", active},
                                       {"requests_deferred", sched->queued()}}));
    }

    ojson model_json() const {
        ojson m;
        m["id"] = alias;
        m["object"] = "model";
        m["created"] = created;
        m["owned_by"] = "jitllm";
        if (ready.load()) {
            const Model& md = batch->model();
            uint64_t n_params = 0;
            for (const auto& t : md.tensors) n_params += t.rows * t.cols;
            m["meta"] = {{"arch", md.config.arch}, {"n_ctx_train", md.config.n_ctx_train},
                         {"n_ctx", batch->n_ctx()}, {"n_vocab", batch->n_vocab()},
                         {"n_params", n_params}, {"size", md.weight_bytes()},
                         {"slots", batch->n_seq()}, {"backend", batch->backend_name()},
                         {"chat_format", chat_format_name(chat_format)}};
        }
        return m;
    }

    void check_ready() {
        if (closing.load() || !ready.load()) {
            metrics.rejected_unavailable++;
            throw unavailable(closing.load() ? "server is shutting down" : "Loading model");
        }
    }

    void check_model(const std::string& m) const {
        if (m.empty() || m == alias || m == opt.model.model_path || m == file_stem(opt.model.model_path) ||
            m == file_stem(opt.model.model_path) + ".gguf")
            return;
        invalid("model", fmt::format("model: unknown model \"{}\": expected \"{}\"", m, alias));
    }

    // --- endpoints ----------------------------------------------------------------------
    void tokenize(const HttpRequest& req, HttpResponse& res) {
        check_ready();
        const TokenizeParams p = parse_tokenize(parse_body(req.body()));
        const Tokenizer& tok = batch->tokenizer();
        const std::vector<int32_t> ids = tok.encode(p.content, p.add_special, p.parse_special);
        ojson tokens = ojson::array();
        for (int32_t id : ids) {
            if (!p.with_pieces) {
                tokens.push_back(id);
                continue;
            }
            const std::string piece = tok.token_to_piece(id, true);
            tokens.push_back({{"id", id}, {"piece", valid_utf8(piece) ? ojson(piece) : byte_array(piece)}});
        }
        send_json(res, 200, dump(ojson{{"tokens", std::move(tokens)}}));
    }

    void detokenize(const HttpRequest& req, HttpResponse& res) {
        check_ready();
        const std::vector<int32_t> ids = parse_detokenize(parse_body(req.body()), batch->n_vocab());
        send_json(res, 200, dump(ojson{{"content", batch->tokenizer().detokenize(ids, false, true)}}));
    }

    // Before rendering or tokenizing: more messages than context positions cannot fit, nor a text
    // longer than n_ctx tokens of the vocabulary's longest piece. The text check waits until 4
    // times that, so a prompt slightly too long is still counted exactly (n_prompt_tokens, which
    // clients use to truncate) while the tokenizer never sees more than 4 contexts' worth.
    void check_prompt_size(const CompletionParams& p, int n_ctx, const char* prompt_param) const {
        if (p.messages.size() > size_t(n_ctx))
            invalid("messages", fmt::format("messages: too many: expected at most {} (the context holds {} tokens), "
                                            "found {}", n_ctx, n_ctx, p.messages.size()));
        size_t bytes = p.prompt_text.size();
        for (const auto& m : p.messages) bytes += m.content.size();
        if (bytes <= 4 * size_t(n_ctx) * max_token_bytes) return;
        ApiError e(400, "exceed_context_size_error",
                   fmt::format("request ({} bytes of text, at least {} tokens) exceeds the available context size "
                               "({} tokens), try increasing it", bytes, bytes / max_token_bytes, n_ctx),
                   std::string(prompt_param));
        e.extra["n_ctx"] = n_ctx;
        throw e;
    }

    void completion(const HttpRequest& req, HttpResponse& res, Endpoint kind) {
        check_ready();
        const int n_ctx = batch->n_ctx();
        // a body with more JSON values than a context can use is refused while it is parsed
        const CompletionParams p =
            parse_completion(parse_body(req.body(), 4 * size_t(n_ctx) + 4096), kind, batch->n_vocab());
        check_model(p.model);
        const Tokenizer& tok = batch->tokenizer();
        const char* prompt_param = kind == Endpoint::Chat ? "messages" : "prompt";
        check_prompt_size(p, n_ctx, prompt_param);
        std::vector<int32_t> ids;
        if (kind == Endpoint::Chat) {
            const std::string text = chat_render(chat_format, p.messages, true);
            ids = tok.encode(text, !chat_format_has_bos(chat_format), true);
        } else if (p.prompt_is_ids) {
            ids = p.prompt_ids;
        } else {
            ids = tok.encode(p.prompt_text, true, true);
        }
        if (ids.empty()) invalid(prompt_param, fmt::format("{}: no tokens after tokenization", prompt_param));
        if (int64_t(ids.size()) >= n_ctx) {
            // llama-server's type and wording: clients match on both
            ApiError e(400, "exceed_context_size_error",
                       fmt::format("request ({} tokens) exceeds the available context size ({} tokens), try "
                                   "increasing it", ids.size(), n_ctx),
                       std::string(prompt_param));
            e.extra["n_prompt_tokens"] = ids.size();
            e.extra["n_ctx"] = n_ctx;
            throw e;
        }
        const int64_t budget = n_ctx - int64_t(ids.size());
        JobParams jp;
        jp.prompt = std::move(ids);
        jp.sp = p.sp;
        if (!p.has_seed) jp.sp.seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
        jp.max_tokens = int(std::min<int64_t>(p.max_tokens.value_or(budget), budget));
        jp.stop = p.stop;
        jp.ignore_eos = p.ignore_eos;
        jp.logprobs = p.logprobs;
        jp.top_logprobs = p.top_logprobs;
        jp.logit_bias = p.logit_bias;

        Scheduler::Admit why = Scheduler::Admit::Ok;
        std::shared_ptr<Job> job = sched->submit(std::move(jp), why);
        if (!job) {
            if (why == Scheduler::Admit::Closed) {
                metrics.rejected_unavailable++;
                throw unavailable("server is shutting down");
            }
            metrics.rejected_queue_full++;
            throw ApiError(503, "unavailable_error",
                           fmt::format("server busy: all {} slots and the queue of {} requests are taken; "
                                       "retry later", sched->slots(), opt.queue_size));
        }
        metrics.requests_total++;
        ResponseMeta meta;
        meta.kind = kind;
        meta.id = random_id(kind == Endpoint::Chat ? "chatcmpl-" : "cmpl-");
        meta.created = int64_t(std::time(nullptr));
        meta.model = alias;
        meta.include_usage = p.stream && p.include_usage;
        meta.logprobs = p.logprobs;
        if (p.stream)
            stream_response(res, job, meta);
        else
            whole_response(req, res, *job, meta);
    }

    void whole_response(const HttpRequest& req, HttpResponse& res, Job& job, const ResponseMeta& m) {
        open_responses++;
        struct Guard {
            std::atomic<int>& n;
            ~Guard() { n--; }
        } guard{open_responses};
        JobDelta d;
        std::string text;
        std::vector<TokenLogprob> lps;
        auto next_check = Clock::now() + kPollInterval;
        for (;;) {
            job.take(d, kPollInterval);
            text += d.text;
            for (auto& t : d.logprobs) lps.push_back(std::move(t));
            if (d.done) break;
            if (Clock::now() < next_check) continue;
            next_check = Clock::now() + kPollInterval;
            if (req.peer_closed()) {
                job.cancel();  // nobody is waiting for the answer: free the slot
                return send_error(res, ApiError(400, "invalid_request_error", "client closed the connection"));
            }
        }
        if (d.finish == Finish::Error)
            throw ApiError(500, "server_error", fmt::format("generation failed: {}", d.error));
        if (d.finish == Finish::Shutdown && !d.started) throw unavailable("server is shutting down");
        ojson r;
        r["id"] = m.id;
        r["object"] = m.kind == Endpoint::Chat ? "chat.completion" : "text_completion";
        r["created"] = m.created;
        r["model"] = m.model;
        r["system_fingerprint"] = "jitllm";
        ojson ch;
        if (m.kind == Endpoint::Chat) {
            ch["index"] = 0;
            ch["message"] = {{"role", "assistant"}, {"content", text}};
        } else {
            ch["text"] = text;
            ch["index"] = 0;
        }
        ch["logprobs"] = m.logprobs ? logprobs_json(m, lps) : ojson(nullptr);
        ch["finish_reason"] = finish_reason(d.finish);
        r["choices"] = ojson::array({std::move(ch)});
        r["usage"] = usage_json(d);
        r["timings"] = {{"prompt_n", d.n_prompt}, {"prompt_ms", d.prompt_ms},
                        {"predicted_n", d.n_gen}, {"predicted_ms", d.predicted_ms},
                        {"queue_ms", d.queue_ms}};
        send_json(res, 200, dump(r));
    }

    void stream_response(HttpResponse& res, std::shared_ptr<Job> job, const ResponseMeta& m) {
        open_responses++;
        res.status = 200;
        res.content_type = "text/event-stream";
        res.header("Cache-Control", "no-cache");
        res.header("X-Accel-Buffering", "no");  // nginx: do not buffer the event stream
        res.stream = [this, job, m](StreamWriter& w) { return write_stream(w, *job, m); };
        res.on_release = [this, job] {
            job->cancel();  // no-op when it finished; frees the slot when the client left early
            open_responses--;
        };
    }

    bool write_stream(StreamWriter& w, Job& job, const ResponseMeta& m) {
        auto send = [&](const ojson& j) { return w.write("data: " + dump(j) + "\n\n"); };
        auto gone = [&] {
            job.cancel();
            return false;
        };
        // The headers wait for the first event (text, end or ping), so that a request still queued
        // when the server shuts down gets a 503 rather than an empty 200 stream.
        bool first = m.kind == Endpoint::Chat;
        auto last_write = Clock::now();
        JobDelta d;
        for (;;) {
            const bool got = job.take(d, kPollInterval);
            if (d.done && d.finish == Finish::Shutdown && !d.started && !w.started()) {
                const ApiError e = unavailable("server is shutting down");
                return w.replace(503, {{"Retry-After", "1"}}, error_body(e));
            }
            if (first && (got || Clock::now() - last_write >= kPingInterval)) {
                if (!send(chunk(m, "", nullptr, nullptr, true))) return gone();
                first = false;
                last_write = Clock::now();
            }
            if (!d.text.empty() || !d.logprobs.empty()) {
                if (!send(chunk(m, d.text, &d.logprobs, nullptr, false))) return gone();
                last_write = Clock::now();
            }
            if (d.done) break;
            // SSE comments keep proxies from timing out while queued, and reveal a closed client
            if (!got && Clock::now() - last_write >= kPingInterval) {
                if (!w.write(": ping\n\n")) return gone();
                last_write = Clock::now();
            }
        }
        if (d.finish == Finish::Error) {
            // the official client raises APIError for a data event with an `error` key
            ApiError e(500, "server_error", fmt::format("generation failed: {}", d.error));
            return w.write("data: " + error_body(e) + "\n\n") && w.write("data: [DONE]\n\n");
        }
        if (!send(chunk(m, "", nullptr, finish_reason(d.finish), false))) return gone();
        if (m.include_usage) {
            ojson u;
            u["id"] = m.id;
            u["object"] = m.kind == Endpoint::Chat ? "chat.completion.chunk" : "text_completion";
            u["created"] = m.created;
            u["model"] = m.model;
            u["system_fingerprint"] = "jitllm";
            u["choices"] = ojson::array();
            u["usage"] = usage_json(d);
            if (!send(u)) return false;
        }
        return w.write("data: [DONE]\n\n");
    }
};

Server::Server(ServerOptions opt) : opt_(std::move(opt)), ctx_(std::make_unique<Ctx>()) {
    alias_ = opt_.alias.empty() ? file_stem(opt_.model.model_path) : opt_.alias;
    ctx_->opt = opt_;
    ctx_->alias = alias_;
}

Server::~Server() { shutdown(); }

int Server::bind() {
    HttpLimits lim;
    lim.max_body_bytes = opt_.max_body_bytes;
    lim.body_budget_bytes = std::max<size_t>(64u << 20, 4 * opt_.max_body_bytes);
    lim.request_timeout_s = opt_.request_timeout_s;
    lim.write_timeout_s = opt_.write_timeout_s;
    lim.keep_alive_timeout_s = opt_.keep_alive_timeout_s;
    lim.max_connections = opt_.max_connections;
    // a streaming or waiting completion holds a worker; idle and arriving requests never do,
    // and requests without a body have two workers of their own
    lim.workers = opt_.http_threads > 0 ? opt_.http_threads : default_http_threads(opt_.model.n_seq, opt_.queue_size);
    Ctx* c = ctx_.get();
    c->guard.api_key = opt_.api_key;
    c->guard.cors_origins = opt_.cors_origins;
    c->http = std::make_unique<HttpServer>(
        lim, [c](const HttpRequest& q, HttpResponse& r) { c->handle(q, r); },
        [c](const HttpRequest& q, HttpResponse& r) { return c->pre(q, r); },
        [c](int status, const std::string& message) { return c->library_error(status, message); });
    return c->http->bind(opt_.host, opt_.port);
}

int Server::default_http_threads(int slots, int queue_size) { return slots + std::min(queue_size, 64) + 8; }

void Server::start() {
    Ctx* c = ctx_.get();
    JITLLM_CHECK(c->http, "start() before bind()");
    c->listener = std::thread([c] { c->http->serve(); });
}

void Server::load() {
    Ctx* c = ctx_.get();
    c->batch = std::make_unique<SequenceBatch>(opt_.model);
    c->chat_format = chat_format_detect(c->batch->tokenizer(), c->batch->model().config.arch);
    const Tokenizer& tok = c->batch->tokenizer();
    size_t longest = 4;  // an unknown character (up to 4 bytes) becomes one token
    for (int32_t id = 0; id < tok.n_vocab(); ++id)
        longest = std::max({longest, tok.token_text(id).size(), tok.token_to_piece(id, true).size()});
    c->max_token_bytes = longest;
    // JSON escapes at most 6 bytes per byte of text (\u00XX), plus the request's other fields
    c->completion_body_max.store(uint64_t(c->batch->n_ctx()) * longest * 6 + (64u << 10));
    SchedulerOptions so;
    so.queue_size = opt_.queue_size;
    so.prefill_chunk = opt_.prefill_chunk;
    so.step_delay_ms = opt_.step_delay_ms;
    c->sched = std::make_unique<Scheduler>(*c->batch, c->metrics, so);
    c->ready.store(true);
}

void Server::shutdown() {
    Ctx* c = ctx_.get();
    std::lock_guard<std::mutex> lk(c->shutdown_mu);
    if (c->shut) return;
    c->shut = true;
    c->closing.store(true);
    if (c->sched) c->sched->shutdown();  // every job ends: streams write their final chunks
    const auto deadline = Clock::now() + std::chrono::seconds(opt_.shutdown_grace_s);
    while (c->open_responses.load() > 0 && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (c->http) c->http->stop();
    if (c->listener.joinable()) c->listener.join();
}

}  // namespace jitllm::serve
