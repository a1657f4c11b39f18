// The completion endpoints of Server (server_ctx.h): /v1/chat/completions and /v1/completions.
// Sizes are checked against the context before any rendering or tokenizing; the request is then
// admitted to the scheduler (503 when slots and queue are taken) and answered whole or as an SSE
// stream. A client that goes away cancels its request.
#include <chrono>
#include <ctime>
#include <random>

#include <fmt/format.h>

#include "serve/server_ctx.h"
#include "tokenizer/tokenizer.h"

namespace jitllm::serve {

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kPollInterval = std::chrono::milliseconds(200);
constexpr auto kPingInterval = std::chrono::seconds(2);

}  // namespace

// Before rendering or tokenizing: more messages than context positions cannot fit, nor a text
// longer than n_ctx tokens of the vocabulary's longest piece. The text check waits until 4
// times that, so a prompt slightly too long is still counted exactly (n_prompt_tokens, which
// clients use to truncate) while the tokenizer never sees more than 4 contexts' worth.
void Server::Ctx::check_prompt_size(const CompletionParams& p, int n_ctx, const char* prompt_param) const {
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

// The prompt as token ids (chat: rendered with the model's chat format), refused when it does
// not leave room for one generated token.
std::vector<int32_t> Server::Ctx::prompt_tokens(const CompletionParams& p, Endpoint kind, int n_ctx,
                                                std::string* rendered, const std::string& reply_start) const {
    const Tokenizer& tok = batch->tokenizer();
    const char* prompt_param = kind == Endpoint::Chat ? "messages" : "prompt";
    check_prompt_size(p, n_ctx, prompt_param);
    std::vector<int32_t> ids;
    if (kind == Endpoint::Chat) {
        const std::string text = chat_prompt(p) + reply_start;
        ids = tok.encode(text, chat_add_special(chat_template, text), true);
        if (rendered) *rendered = text;
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
    return ids;
}

std::string Server::Ctx::chat_prompt(const CompletionParams& p) const {
    const bool tools = !p.tools.is_null();
    if (tools && !chat_template.jinja)
        invalid("tools", fmt::format("tools: the model has no chat template (tokenizer.chat_template{}) to show "
                                     "tools with", chat_template.jinja_error.empty() ? "" : " that parses"));
    try {
        if (!chat_template.jinja) return chat_render(chat_template, p.messages, true);
        ChatVars v;
        v.messages = p.chat_messages;
        v.tools = p.tools;
        v.extra = p.template_kwargs;
        return chat_render(chat_template, v);
    } catch (const jitllm::Error& e) {  // the template refuses the conversation (raise_exception)
        invalid("messages", e.what());
    }
}

bool Server::Ctx::forced_tool_call(const CompletionParams& p, ForcedCall& f,
                                   std::shared_ptr<const JsonSchema>& schema) const {
    if (p.tool_choice != ToolChoice::Required && p.tool_choice != ToolChoice::Function) return false;
    const ToolSyntax syntax = chat_template.jinja ? tool_syntax_of(chat_template.jinja->source()) : ToolSyntax::None;
    if (syntax == ToolSyntax::None || !p.tools.is_array()) return false;
    std::vector<std::pair<std::string, nlohmann::json>> tools;
    for (const ojson& t : p.tools) {
        const ojson& fn = t.at("function");
        const std::string name = fn.at("name").get<std::string>();
        nlohmann::json params = fn.contains("parameters") ? nlohmann::json::parse(fn["parameters"].dump()) : nlohmann::json();
        const std::string where = fmt::format("tools: function \"{}\": parameters", name);
        try {  // each schema on its own first, for errors named by the function
            if (params.is_object()) compile_json_schema(params, where);
        } catch (const jitllm::Error& e) {
            invalid("tools", e.what());
        }
        tools.emplace_back(name, std::move(params));
    }
    f = forced_call(syntax, tools);
    try {
        schema = compile_json_schema(f.schema, "tool_choice");
    } catch (const jitllm::Error& e) {
        invalid("tool_choice", e.what());
    }
    return true;
}

ReplyOptions Server::Ctx::reply_options(const CompletionParams& p, const std::string& prompt) const {
    ReplyOptions o;
    const std::string& src = chat_template.jinja ? chat_template.jinja->source() : std::string();
    if (!p.tools.is_null()) o.syntax = tool_syntax_of(src);
    o.tool_names = p.tool_names;
    o.parallel_tool_calls = p.parallel_tool_calls;
    o.split_thinking = src.find("</think>") != std::string::npos || chat_template.strip_thinking;
    // the generation prompt opened the block (DeepSeek-R1): the reply starts as reasoning
    const size_t end = prompt.find_last_not_of('\n');
    o.starts_thinking = o.split_thinking && end != std::string::npos && end + 1 >= 7 &&
                        prompt.compare(end + 1 - 7, 7, "<think>") == 0;
    return o;
}

void Server::Ctx::completion(const HttpRequest& req, HttpResponse& res, Endpoint kind) {
    check_ready();
    const int n_ctx = batch->n_ctx();
    // a body with more JSON values than a context can use is refused while it is parsed
    CompletionParams p = parse_completion(parse_body(req.body(), 4 * size_t(n_ctx) + 4096), kind, batch->n_vocab());
    check_model(p.model);
    if (kind == Endpoint::Chat) attach_chat_json(ojson::parse(req.body()), p);  // validated: keys in order
    // tool_choice required or a named function: the reply is a call, its JSON constrained
    ForcedCall forced;
    std::shared_ptr<const JsonSchema> schema = p.schema;
    const bool force = kind == Endpoint::Chat && forced_tool_call(p, forced, schema);
    std::string prompt;
    std::vector<int32_t> ids = prompt_tokens(p, kind, n_ctx, &prompt, forced.prefix);
    ResponseMeta meta;
    if (kind == Endpoint::Chat) {
        meta.reply = reply_options(p, prompt);
        meta.split_reply = meta.reply.syntax != ToolSyntax::None || meta.reply.split_thinking;
        if (force) {
            meta.reply.reply_prefix = forced.prefix;
            meta.reply.reply_suffix = forced.suffix;
            meta.reply.parallel_tool_calls = false;
        }
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
    jp.special_text = meta.split_reply;  // the markers are control tokens in some vocabularies
    jp.schema = schema;
    if (schema && schema->nodes[size_t(schema->root)].min_len > jp.max_tokens) {
        const char* what = p.max_tokens ? "max_tokens" : force ? "tool_choice" : "response_format";
        invalid(what, fmt::format("{}: {} tokens cannot hold the shortest JSON of the {} ({} characters)", what,
                                  jp.max_tokens, force ? "tool call" : "schema", schema->nodes[size_t(schema->root)].min_len));
    }

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

void Server::Ctx::whole_response(const HttpRequest& req, HttpResponse& res, Job& job, const ResponseMeta& m) {
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
    if (d.finish == Finish::Error) throw ApiError(500, "server_error", fmt::format("generation failed: {}", d.error));
    if (d.finish == Finish::Shutdown && !d.started) throw unavailable("server is shutting down");
    send_json(res, 200, dump(whole_json(batch->tokenizer(), m, text, lps, d)));
}

void Server::Ctx::stream_response(HttpResponse& res, std::shared_ptr<Job> job, const ResponseMeta& m) {
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

bool Server::Ctx::write_stream(StreamWriter& w, Job& job, const ResponseMeta& m) {
    const Tokenizer& tok = batch->tokenizer();
    auto send = [&](const ojson& j) { return w.write("data: " + dump(j) + "\n\n"); };
    // a split chat reply: reasoning_content and content deltas as the parser releases them
    std::unique_ptr<ReplyParser> parser = m.split_reply ? std::make_unique<ReplyParser>(m.reply) : nullptr;
    auto send_text = [&](const std::string& text, const std::vector<TokenLogprob>* lps) {
        if (!parser) return send(chunk_json(tok, m, text, lps, nullptr, false));
        const ReplyParser::Delta x = parser->push(text);
        if (!x.reasoning.empty() && !send(delta_chunk_json(m, {{"reasoning_content", x.reasoning}}, nullptr)))
            return false;
        if (x.content.empty() && (!lps || lps->empty())) return true;
        return send(chunk_json(tok, m, x.content, lps, nullptr, false));
    };
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
            if (!send(chunk_json(tok, m, "", nullptr, nullptr, true))) return gone();
            first = false;
            last_write = Clock::now();
        }
        if (!d.text.empty() || !d.logprobs.empty()) {
            if (!send_text(d.text, &d.logprobs)) return gone();
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
    const char* finish = finish_reason(d.finish);
    if (parser) {  // what the parser held back, then the calls
        std::vector<ToolCall> calls;
        const ReplyParser::Delta rest = parser->finish(calls);
        if (!rest.reasoning.empty() && !send(delta_chunk_json(m, {{"reasoning_content", rest.reasoning}}, nullptr)))
            return gone();
        if (!rest.content.empty() && !send(chunk_json(tok, m, rest.content, nullptr, nullptr, false))) return gone();
        if (!calls.empty()) {
            if (!send(delta_chunk_json(m, {{"tool_calls", tool_calls_json(calls, true)}}, nullptr))) return gone();
            finish = "tool_calls";
        }
    }
    if (!send(chunk_json(tok, m, "", nullptr, finish, false))) return gone();
    if (m.include_usage && !send(usage_chunk_json(m, d))) return false;
    return w.write("data: [DONE]\n\n");
}

}  // namespace jitllm::serve
