// Server (see server.h): the lifecycle (bind, serve, load, open, shutdown), the checks made on a
// request's head before its body is read, routing, and the endpoints other than completions
// (completion.cpp). Error bodies and type strings follow llama-server (code = HTTP status).
#include "serve/server.h"

#include <chrono>

#include <fmt/format.h>

#include "core/error.h"
#include "serve/server_ctx.h"
#include "tokenizer/tokenizer.h"

namespace jitllm::serve {

namespace {

using Clock = std::chrono::steady_clock;

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

std::string file_stem(const std::string& path) {
    std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
    if (base.size() > 5 && base.compare(base.size() - 5, 5, ".gguf") == 0) base.resize(base.size() - 5);
    return base;
}

bool is_completion_path(std::string_view p) {
    return p == "/v1/chat/completions" || p == "/chat/completions" || p == "/v1/completions" || p == "/completions";
}

}  // namespace

bool Server::Ctx::pre(const HttpRequest& req, HttpResponse& res) {
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

std::string Server::Ctx::library_error(int status, const std::string& message) const {
    return error_body(ApiError(status, type_for_status(status), message));
}

void Server::Ctx::need_method(const HttpRequest& req, HttpResponse& res, const char* method) {
    if (req.method() == method) return;
    res.header("Allow", method);
    throw ApiError(405, "invalid_request_error",
                   fmt::format("{} {}: method not allowed: expected {}", req.method(), req.path(), method));
}

void Server::Ctx::handle(const HttpRequest& req, HttpResponse& res) {
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

Gauges Server::Ctx::gauges() const {
    Gauges g;
    if (!ready.load()) return g;  // batch and sched are set before ready, never read before it
    g.ready = !closing.load();
    g.requests_processing = sched->active();
    g.requests_deferred = sched->queued();
    g.slots_total = sched->slots();
    g.n_ctx = batch->n_ctx();
    const KvPoolStats kv = sched->kv_stats();
    g.kv_blocks = kv.blocks, g.kv_block_tokens = kv.block_tokens;
    g.kv_blocks_used = kv.used, g.kv_blocks_cached = kv.cached;
    return g;
}

void Server::Ctx::health(HttpResponse& res) {
    if (closing.load()) throw unavailable("server is shutting down");
    if (!ready.load()) throw unavailable("Loading model");
    const int active = sched->active();
    send_json(res, 200, dump(ojson{{"status", "ok"},
                                   {"slots_idle", sched->slots() - active},
                                   {"slots_processing", active},
                                   {"requests_deferred", sched->queued()}}));
}

ojson Server::Ctx::model_json() const {
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
                     {"chat_format", chat_format_name(chat_template.format)},
                     {"chat_template", chat_template_describe(chat_template)}};
    }
    return m;
}

void Server::Ctx::check_ready() {
    if (closing.load() || !ready.load()) {
        metrics.rejected_unavailable++;
        throw unavailable(closing.load() ? "server is shutting down" : "Loading model");
    }
}

void Server::Ctx::check_model(const std::string& m) const {
    if (m.empty() || m == alias || m == opt.model.model_path || m == file_stem(opt.model.model_path) ||
        m == file_stem(opt.model.model_path) + ".gguf")
        return;
    invalid("model", fmt::format("model: unknown model \"{}\": expected \"{}\"", m, alias));
}

void Server::Ctx::tokenize(const HttpRequest& req, HttpResponse& res) {
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

void Server::Ctx::detokenize(const HttpRequest& req, HttpResponse& res) {
    check_ready();
    const std::vector<int32_t> ids = parse_detokenize(parse_body(req.body()), batch->n_vocab());
    send_json(res, 200, dump(ojson{{"content", batch->tokenizer().detokenize(ids, false, true)}}));
}

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
    c->chat_template = chat_template_for(c->batch->tokenizer(), *c->batch->model().gguf);
    if (!opt_.chat_template_file.empty()) chat_template_use_file(c->chat_template, opt_.chat_template_file);
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
}

void Server::open() {
    Ctx* c = ctx_.get();
    JITLLM_CHECK(c->sched, "open() before load()");
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
