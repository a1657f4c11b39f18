// Reply splitting: reasoning, content and tool calls (see tool_calls.h).
#include "serve/tool_calls.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <random>

namespace jitllm::serve {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";

std::vector<std::string_view> markers(ToolSyntax s) {
    switch (s) {
        case ToolSyntax::Hermes: return {"<tool_call>"};
        case ToolSyntax::Llama3: return {"<|python_tag|>"};
        case ToolSyntax::Mistral: return {"[TOOL_CALLS]"};
        case ToolSyntax::None: break;
    }
    return {};
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t skip_space(std::string_view s, size_t at) {
    while (at < s.size() && is_space(s[at])) ++at;
    return at;
}

// The length of the longest end of `s` that is the start of one of `words` (and not all of it):
// text that must wait for the next piece before it can be shown.
size_t held_suffix(std::string_view s, const std::vector<std::string_view>& words) {
    size_t best = 0;
    for (auto w : words)
        for (size_t n = std::min(s.size(), w.size() - 1); n > best; --n)
            if (s.substr(s.size() - n) == w.substr(0, n)) {
                best = n;
                break;
            }
    return best;
}

// The end of the JSON object or array starting at s[at] (one past its closing bracket), or npos
// when it does not close within s.
size_t json_value_end(std::string_view s, size_t at) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = at; i < s.size(); ++i) {
        const char c = s[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) return i + 1;
        }
    }
    return std::string_view::npos;
}

// The JSON object or array at s[at] (skipping space); discarded when there is none. `at` moves
// past it.
ojson json_at(std::string_view s, size_t& at) {
    at = skip_space(s, at);
    if (at >= s.size() || (s[at] != '{' && s[at] != '[')) return ojson(ojson::value_t::discarded);
    const size_t end = json_value_end(s, at);
    if (end == std::string_view::npos) return ojson(ojson::value_t::discarded);
    ojson j = ojson::parse(s.substr(at, end - at), nullptr, false);
    at = end;
    return j;
}

std::string random_call_id(bool mistral) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string id = mistral ? "" : "call_";
    for (int i = 0; i < (mistral ? 9 : 24); ++i) id += alnum[rng() % 62];
    return id;
}

// {"name": ..., "arguments" | "parameters": {...} or "..."}; false when it is not a call.
bool call_from_json(const ojson& j, ToolCall& call) {
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
    call.name = j["name"].get<std::string>();
    const char* key = j.contains("arguments") ? "arguments" : j.contains("parameters") ? "parameters" : nullptr;
    if (!key) {
        call.arguments = "{}";
    } else if (j[key].is_string()) {
        call.arguments = j[key].get<std::string>();
    } else if (j[key].is_object()) {
        call.arguments = j[key].dump();
    } else {
        return false;
    }
    return !call.name.empty();
}

// A Python literal of a built-in tool call's argument: "text", 'text', a number, True, False, None.
bool python_literal(std::string_view s, size_t& at, ojson& out) {
    at = skip_space(s, at);
    if (at >= s.size()) return false;
    const char q = s[at];
    if (q == '"' || q == '\'') {
        std::string v;
        for (size_t i = at + 1; i < s.size(); ++i) {
            if (s[i] == '\\' && i + 1 < s.size()) {
                v += s[++i];
            } else if (s[i] == q) {
                out = v;
                at = i + 1;
                return true;
            } else {
                v += s[i];
            }
        }
        return false;
    }
    size_t end = at;
    while (end < s.size() && s[end] != ',' && s[end] != ')') ++end;
    std::string word(s.substr(at, end - at));
    while (!word.empty() && is_space(word.back())) word.pop_back();
    at = end;
    if (word == "True" || word == "False" || word == "None") {
        out = word == "None" ? ojson() : ojson(word == "True");
        return true;
    }
    out = ojson::parse(word, nullptr, false);
    return !out.is_discarded() && out.is_number();
}

// name.call(key=value, ...) or name(key=value, ...)
bool python_call(std::string_view s, ToolCall& call) {
    size_t at = skip_space(s, 0), end = at;
    while (end < s.size() && (std::isalnum(uint8_t(s[end])) || s[end] == '_')) ++end;
    if (end == at) return false;
    call.name = std::string(s.substr(at, end - at));
    if (s.substr(end, 5) == ".call") end += 5;
    if (end >= s.size() || s[end] != '(') return false;
    ojson args = ojson::object();
    at = end + 1;
    while (true) {
        at = skip_space(s, at);
        if (at < s.size() && s[at] == ')') break;
        size_t k = at;
        while (k < s.size() && (std::isalnum(uint8_t(s[k])) || s[k] == '_')) ++k;
        if (k == at || k >= s.size() || s[k] != '=') return false;
        const std::string key(s.substr(at, k - at));
        at = k + 1;
        ojson v;
        if (!python_literal(s, at, v)) return false;
        args[key] = v;
        at = skip_space(s, at);
        if (at < s.size() && s[at] == ',') ++at;
        else if (at >= s.size() || s[at] != ')') return false;
    }
    call.arguments = args.dump();
    return skip_space(s, at + 1) == s.size();
}

bool parse_hermes(std::string_view t, std::vector<ToolCall>& calls) {
    size_t at = 0;
    while ((at = t.find("<tool_call>", at)) != std::string_view::npos) {
        at += 11;
        ToolCall c;
        if (!call_from_json(json_at(t, at), c)) return false;
        calls.push_back(std::move(c));
        at = skip_space(t, at);
        if (t.substr(at, 12) == "</tool_call>") at += 12;
    }
    return !calls.empty();
}

bool parse_mistral(std::string_view t, std::vector<ToolCall>& calls) {
    for (size_t at = t.find("[TOOL_CALLS]"); at != std::string_view::npos; at = t.find("[TOOL_CALLS]", at)) {
        at = skip_space(t, at + 12);
        if (at < t.size() && (t[at] == '[' || t[at] == '{')) {
            const ojson j = json_at(t, at);
            for (const auto& e : j.is_array() ? j : ojson::array({j})) {
                ToolCall c;
                if (!call_from_json(e, c)) return false;
                calls.push_back(std::move(c));
            }
            continue;
        }
        const size_t args = t.find("[ARGS]", at);  // name[ARGS]{...}
        if (args == std::string_view::npos) return false;
        ToolCall c;
        c.name = std::string(t.substr(at, args - at));
        at = args + 6;
        const ojson j = json_at(t, at);
        if (!j.is_object() || c.name.empty()) return false;
        c.arguments = j.dump();
        calls.push_back(std::move(c));
    }
    return !calls.empty();
}

bool parse_llama3(std::string_view t, const std::vector<std::string>& names, std::vector<ToolCall>& calls) {
    size_t at = skip_space(t, 0);
    const bool tagged = t.substr(at, 14) == "<|python_tag|>";
    if (tagged) at += 14;
    at = skip_space(t, at);
    if (tagged && at < t.size() && t[at] != '{') {
        ToolCall c;
        if (!python_call(t.substr(at), c)) return false;
        calls.push_back(std::move(c));
        return true;
    }
    while (at < t.size()) {
        ToolCall c;
        if (!call_from_json(json_at(t, at), c)) return false;
        if (!tagged && std::find(names.begin(), names.end(), c.name) == names.end()) return false;
        calls.push_back(std::move(c));
        at = skip_space(t, at);
        if (at < t.size() && t[at] == ';') at = skip_space(t, at + 1);
    }
    return !calls.empty();
}

}  // namespace

ToolSyntax tool_syntax_of(std::string_view src) {
    if (src.find("<tool_call>") != std::string_view::npos) return ToolSyntax::Hermes;
    if (src.find("[TOOL_CALLS]") != std::string_view::npos) return ToolSyntax::Mistral;
    if (src.find("<|python_tag|>") != std::string_view::npos ||
        (src.find("<|start_header_id|>") != std::string_view::npos && src.find("tools") != std::string_view::npos))
        return ToolSyntax::Llama3;
    return ToolSyntax::None;
}

const char* tool_syntax_name(ToolSyntax s) {
    switch (s) {
        case ToolSyntax::Hermes: return "hermes";
        case ToolSyntax::Llama3: return "llama3";
        case ToolSyntax::Mistral: return "mistral";
        case ToolSyntax::None: break;
    }
    return "none";
}

ForcedCall forced_call(ToolSyntax s, const std::vector<std::pair<std::string, nlohmann::json>>& tools) {
    using json = nlohmann::json;
    ForcedCall f;
    json names = json::array();
    for (const auto& t : tools) names.push_back(t.first);
    const json& params = tools.size() == 1 ? tools[0].second : json();
    const char* args = s == ToolSyntax::Llama3 ? "parameters" : "arguments";
    json call = {{"type", "object"},
                 {"properties", {{"name", tools.size() == 1 ? json{{"const", names[0]}} : json{{"enum", names}}},
                                 {args, params.is_object() ? params : json{{"type", "object"}}}}},
                 {"required", {"name", args}},
                 {"additionalProperties", false}};
    if (s == ToolSyntax::Hermes) {
        f.prefix = "<tool_call>\n";
        f.suffix = "\n</tool_call>";
    } else if (s == ToolSyntax::Mistral) {
        f.prefix = "[TOOL_CALLS]";
        call = {{"type", "array"}, {"items", call}, {"minItems", 1}, {"maxItems", 1}};
    }
    f.schema = std::move(call);
    return f;
}

ReplyParser::ReplyParser(ReplyOptions o) : opt_(std::move(o)) {
    state_ = opt_.starts_thinking ? State::Thinking : opt_.split_thinking ? State::Start : State::Content;
    strip_newlines_ = opt_.starts_thinking;
    if (!opt_.reply_prefix.empty()) {  // a forced call's opening: the reply starts inside it
        push(opt_.reply_prefix);
    }
}

ReplyParser::Delta ReplyParser::push(std::string_view text) {
    buf_ += text;
    Delta out;
    step(out);
    return out;
}

void ReplyParser::step(Delta& out) {
    for (;;) {
        if (state_ == State::Start) {  // a leading <think> opens the reasoning
            const size_t at = skip_space(buf_, 0);
            const std::string_view rest = std::string_view(buf_).substr(at);
            if (rest.substr(0, kThinkOpen.size()) == kThinkOpen) {
                buf_.erase(0, at + kThinkOpen.size());
                state_ = State::Thinking;
                strip_newlines_ = true;
            } else if (rest.size() < kThinkOpen.size() && kThinkOpen.substr(0, rest.size()) == rest) {
                return;  // wait for more
            } else {
                state_ = State::Content;
            }
        } else if (state_ == State::Thinking) {
            // the newlines just inside <think> and </think> frame the reasoning; they are not part of it
            if (strip_newlines_) {
                buf_.erase(0, std::min(buf_.size(), buf_.find_first_not_of('\n')));
                if (buf_.empty()) return;
                strip_newlines_ = false;
            }
            const size_t end = buf_.find(kThinkClose);
            if (end == std::string::npos) {
                size_t keep = held_suffix(buf_, {kThinkClose});
                while (keep < buf_.size() && buf_[buf_.size() - keep - 1] == '\n') ++keep;
                out.reasoning += buf_.substr(0, buf_.size() - keep);
                buf_.erase(0, buf_.size() - keep);
                return;
            }
            size_t text_end = end;
            while (text_end > 0 && buf_[text_end - 1] == '\n') --text_end;
            out.reasoning += buf_.substr(0, text_end);
            buf_.erase(0, end + kThinkClose.size());
            state_ = State::Content;
            strip_newlines_ = true;
        } else if (state_ == State::Content) {
            if (strip_newlines_) {
                buf_.erase(0, std::min(buf_.size(), buf_.find_first_not_of('\n')));
                if (buf_.empty()) return;
                strip_newlines_ = false;
            }
            if (opt_.syntax == ToolSyntax::Llama3 && !content_seen_) {  // a bare JSON call?
                const size_t at = skip_space(buf_, 0);
                if (at == buf_.size()) return;
                if (buf_[at] == '{') {
                    tool_text_ = std::move(buf_);
                    buf_.clear();
                    state_ = State::ToolText;
                    continue;
                }
            }
            const auto ms = markers(opt_.syntax);
            size_t first = std::string::npos;
            for (auto m : ms) first = std::min(first, buf_.find(m));
            const size_t emit = first != std::string::npos ? first : buf_.size() - held_suffix(buf_, ms);
            const std::string shown = buf_.substr(0, emit);
            out.content += shown;
            content_seen_ = content_seen_ || skip_space(shown, 0) < shown.size();
            buf_.erase(0, emit);
            if (first == std::string::npos) return;
            tool_text_ = std::move(buf_);
            buf_.clear();
            state_ = State::ToolText;
        } else {
            tool_text_ += buf_;
            buf_.clear();
            return;
        }
    }
}

bool ReplyParser::parse_calls(std::vector<ToolCall>& calls) const {
    switch (opt_.syntax) {
        case ToolSyntax::Hermes: return parse_hermes(tool_text_, calls);
        case ToolSyntax::Mistral: return parse_mistral(tool_text_, calls);
        case ToolSyntax::Llama3: return parse_llama3(tool_text_, opt_.tool_names, calls);
        case ToolSyntax::None: break;
    }
    return false;
}

ReplyParser::Delta ReplyParser::finish(std::vector<ToolCall>& calls) {
    Delta out;
    if (state_ == State::Start) state_ = State::Content;
    if (state_ == State::Thinking) out.reasoning += buf_.substr(0, buf_.find_last_not_of('\n') + 1);
    else if (state_ == State::Content) out.content += buf_;
    buf_.clear();
    if (state_ == State::ToolText) {
        tool_text_ += opt_.reply_suffix;
        std::vector<ToolCall> found;
        if (parse_calls(found)) {
            if (!opt_.parallel_tool_calls) found.resize(1);
            for (auto& c : found) c.id = random_call_id(opt_.syntax == ToolSyntax::Mistral);
            calls = std::move(found);
        } else {
            out.content += tool_text_;  // not a call after all
        }
    }
    return out;
}

ParsedReply parse_reply(const ReplyOptions& o, std::string_view text) {
    ReplyParser p(o);
    ParsedReply r;
    ReplyParser::Delta a = p.push(text), b = p.finish(r.calls);
    r.content = a.content + b.content;
    r.reasoning = a.reasoning + b.reasoning;
    return r;
}

}  // namespace jitllm::serve
