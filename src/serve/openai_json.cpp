// Response objects of the completion endpoints (see openai_json.h).
#include "serve/openai_json.h"

#include <random>

#include <fmt/format.h>

#include "tokenizer/tokenizer.h"

namespace jitllm::serve {

namespace {

const char* object_name(const ResponseMeta& m, bool chunk) {
    if (m.kind == Endpoint::Completion) return "text_completion";
    return chunk ? "chat.completion.chunk" : "chat.completion";
}

ojson envelope(const ResponseMeta& m, bool chunk) {
    ojson r;
    r["id"] = m.id;
    r["object"] = object_name(m, chunk);
    r["created"] = m.created;
    r["model"] = m.model;
    r["system_fingerprint"] = "jitllm";
    return r;
}

}  // namespace

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

std::string random_id(const char* prefix) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return fmt::format("{}{:016x}{:08x}", prefix, rng(), uint32_t(rng()));
}

ojson byte_array(const std::string& s) {
    ojson a = ojson::array();
    for (unsigned char c : s) a.push_back(int(c));
    return a;
}

ojson usage_json(const JobDelta& d) {
    ojson u;
    u["prompt_tokens"] = d.n_prompt;
    u["completion_tokens"] = d.n_gen;
    u["total_tokens"] = d.n_prompt + d.n_gen;
    u["prompt_tokens_details"] = {{"cached_tokens", 0}};
    return u;
}

ojson logprobs_json(const Tokenizer& tok, const ResponseMeta& m, const std::vector<TokenLogprob>& lps) {
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
    ojson tokens = ojson::array(), token_lps = ojson::array(), tops = ojson::array(), offsets = ojson::array();
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

ojson chunk_json(const Tokenizer& tok, const ResponseMeta& m, const std::string& text,
                 const std::vector<TokenLogprob>* lps, const char* finish, bool first) {
    ojson c = envelope(m, true);
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
    ch["logprobs"] = m.logprobs && lps && !lps->empty() ? logprobs_json(tok, m, *lps) : ojson(nullptr);
    ch["finish_reason"] = finish ? ojson(finish) : ojson(nullptr);
    c["choices"] = ojson::array({std::move(ch)});
    if (m.include_usage) c["usage"] = nullptr;
    return c;
}

ojson usage_chunk_json(const ResponseMeta& m, const JobDelta& d) {
    ojson u = envelope(m, true);
    u["choices"] = ojson::array();
    u["usage"] = usage_json(d);
    return u;
}

ojson delta_chunk_json(const ResponseMeta& m, ojson delta, const char* finish) {
    ojson c = envelope(m, true);
    ojson ch;
    ch["index"] = 0;
    ch["delta"] = std::move(delta);
    ch["logprobs"] = nullptr;
    ch["finish_reason"] = finish ? ojson(finish) : ojson(nullptr);
    c["choices"] = ojson::array({std::move(ch)});
    if (m.include_usage) c["usage"] = nullptr;
    return c;
}

ojson tool_calls_json(const std::vector<ToolCall>& calls, bool streaming) {
    ojson a = ojson::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        ojson c;
        if (streaming) c["index"] = i;
        c["id"] = calls[i].id;
        c["type"] = "function";
        c["function"] = {{"name", calls[i].name}, {"arguments", calls[i].arguments}};
        a.push_back(std::move(c));
    }
    return a;
}

ojson whole_json(const Tokenizer& tok, const ResponseMeta& m, const std::string& text,
                 const std::vector<TokenLogprob>& lps, const JobDelta& d) {
    ojson r = envelope(m, false);
    ojson ch;
    const char* finish = finish_reason(d.finish);
    if (m.kind == Endpoint::Chat && m.split_reply) {
        const ParsedReply reply = parse_reply(m.reply, text);
        ojson msg = {{"role", "assistant"}};
        msg["content"] = reply.calls.empty() || !reply.content.empty() ? ojson(reply.content) : ojson(nullptr);
        if (!reply.reasoning.empty()) msg["reasoning_content"] = reply.reasoning;
        if (!reply.calls.empty()) {
            msg["tool_calls"] = tool_calls_json(reply.calls, false);
            finish = "tool_calls";
        }
        ch["index"] = 0;
        ch["message"] = std::move(msg);
    } else if (m.kind == Endpoint::Chat) {
        ch["index"] = 0;
        ch["message"] = {{"role", "assistant"}, {"content", text}};
    } else {
        ch["text"] = text;
        ch["index"] = 0;
    }
    ch["logprobs"] = m.logprobs ? logprobs_json(tok, m, lps) : ojson(nullptr);
    ch["finish_reason"] = finish;
    r["choices"] = ojson::array({std::move(ch)});
    r["usage"] = usage_json(d);
    r["timings"] = {{"prompt_n", d.n_prompt}, {"prompt_ms", d.prompt_ms}, {"predicted_n", d.n_gen},
                    {"predicted_ms", d.predicted_ms}, {"queue_ms", d.queue_ms}};
    return r;
}

}  // namespace jitllm::serve
