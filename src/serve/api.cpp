// Request validation (see api.h). Every numeric field: type check, then range check on int64 /
// double, then the cast; a negative or huge number never wraps (the bug class behind llama-server's
// CVE-2026-21869). Field ranges follow OpenAI's API reference; extensions follow llama-server.
#include "serve/api.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

#include <fmt/format.h>

namespace jitllm::serve {

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr size_t kMaxStops = 4;
constexpr size_t kMaxStopBytes = 1024;
constexpr size_t kMaxLogitBias = 1024;

struct DepthExceeded {};
struct TooManyValues {};

std::string found(const json& v) {
    if (v.is_string()) {
        std::string s = v.get<std::string>();
        if (s.size() > 40) s = s.substr(0, 40) + "...";
        return fmt::format("the string \"{}\"", s);
    }
    if (v.is_number()) return v.dump();
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    return fmt::format("a{} {}", v.is_array() || v.is_object() ? "n" : "", v.type_name());
}

// The field's value, or nullptr when absent or null (OpenAI treats null as "not given").
const json* field(const json& b, const char* name) {
    const auto it = b.find(name);
    if (it == b.end() || it->is_null()) return nullptr;
    return &*it;
}

int64_t as_int(const json& v, const std::string& param, int64_t lo, int64_t hi) {
    if (!v.is_number_integer())
        invalid(param, fmt::format("{}: expected an integer in [{}, {}], found {}", param, lo, hi, found(v)));
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        invalid(param, fmt::format("{}: out of range: expected an integer in [{}, {}], found {}", param,
                                   lo, hi, v.dump()));
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
        invalid(param, fmt::format("{}: out of range: expected an integer in [{}, {}], found {}", param,
                                   lo, hi, x));
    return x;
}

// lo_open: the lower bound itself is excluded.
double as_number(const json& v, const std::string& param, double lo, double hi, bool lo_open = false) {
    const std::string range = fmt::format("{}{}, {}]", lo_open ? "(" : "[", lo, hi);
    if (!v.is_number())
        invalid(param, fmt::format("{}: expected a number in {}, found {}", param, range, found(v)));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo))
        invalid(param, fmt::format("{}: out of range: expected a number in {}, found {}", param, range,
                                   v.dump()));
    return x;
}

bool as_bool(const json& v, const std::string& param) {
    if (!v.is_boolean()) invalid(param, fmt::format("{}: expected true or false, found {}", param, found(v)));
    return v.get<bool>();
}

const std::string& as_string(const json& v, const std::string& param) {
    if (!v.is_string()) invalid(param, fmt::format("{}: expected a string, found {}", param, found(v)));
    return v.get_ref<const std::string&>();
}

int32_t as_token(const json& v, const std::string& param, int n_vocab) {
    return int32_t(as_int(v, param, 0, int64_t(n_vocab) - 1));
}

[[noreturn]] void unsupported(const std::string& param, const std::string& what) {
    invalid(param, fmt::format("{}: {} is not supported by this server", param, what));
}

std::string message_content(const json& m, const std::string& p, const std::string& role) {
    const json* c = field(m, "content");
    if (!c || c->is_null()) {
        if (role == "assistant") return {};
        invalid(p + ".content", fmt::format("{}.content: expected a string or an array of text parts, "
                                            "found nothing", p));
    }
    if (c->is_string()) return c->get<std::string>();
    if (!c->is_array())
        invalid(p + ".content", fmt::format("{}.content: expected a string or an array of text parts, "
                                            "found {}", p, found(*c)));
    std::string text;
    for (size_t j = 0; j < c->size(); ++j) {
        const json& part = (*c)[j];
        const std::string pp = fmt::format("{}.content[{}]", p, j);
        if (!part.is_object()) invalid(pp, fmt::format("{}: expected an object, found {}", pp, found(part)));
        const json* type = field(part, "type");
        if (!type) invalid(pp + ".type", fmt::format("{}.type: missing: expected \"text\"", pp));
        const std::string& t = as_string(*type, pp + ".type");
        if (t != "text") unsupported(pp + ".type", fmt::format("content part type \"{}\"", t));
        const json* tx = field(part, "text");
        if (!tx) invalid(pp + ".text", fmt::format("{}.text: missing: expected a string", pp));
        text += as_string(*tx, pp + ".text");
    }
    return text;
}

// An assistant message's tool_calls: [{id, type: "function", function: {name, arguments}}].
void check_tool_calls(const json& tc, const std::string& p, const std::string& role) {
    if (!tc.is_array()) invalid(p, fmt::format("{}: expected an array of tool calls, found {}", p, found(tc)));
    if (!tc.empty() && role != "assistant")
        invalid(p, fmt::format("{}: only assistant messages have tool calls, found a {} message", p, role));
    for (size_t i = 0; i < tc.size(); ++i) {
        const std::string pc = fmt::format("{}[{}]", p, i);
        if (!tc[i].is_object()) invalid(pc, fmt::format("{}: expected an object, found {}", pc, found(tc[i])));
        if (const json* id = field(tc[i], "id")) as_string(*id, pc + ".id");
        const json* f = field(tc[i], "function");
        if (!f || !f->is_object()) invalid(pc + ".function", fmt::format("{}.function: expected an object", pc));
        const json* name = field(*f, "name");
        if (!name) invalid(pc + ".function.name", fmt::format("{}.function.name: missing: expected a string", pc));
        as_string(*name, pc + ".function.name");
        if (const json* a = field(*f, "arguments"); a && !a->is_string() && !a->is_object())
            invalid(pc + ".function.arguments",
                    fmt::format("{}.function.arguments: expected a JSON string, found {}", pc, found(*a)));
    }
}

// tools: [{type: "function", function: {name, description?, parameters?}}], tool_choice: "none",
// "auto", "required" or {type: "function", function: {name}} (one of the tools), and
// parallel_tool_calls.
void parse_tools(const json& b, CompletionParams& p) {
    std::vector<std::string> names;
    if (const json* t = field(b, "tools"); t && !t->is_null()) {
        if (!t->is_array()) invalid("tools", fmt::format("tools: expected an array, found {}", found(*t)));
        for (size_t i = 0; i < t->size(); ++i) {
            const std::string pt = fmt::format("tools[{}]", i);
            const json& tool = (*t)[i];
            if (!tool.is_object()) invalid(pt, fmt::format("{}: expected an object, found {}", pt, found(tool)));
            const json* type = field(tool, "type");
            if (type && as_string(*type, pt + ".type") != "function")
                unsupported(pt + ".type", fmt::format("tool type \"{}\"", type->get<std::string>()));
            const json* f = field(tool, "function");
            if (!f || !f->is_object()) invalid(pt + ".function", fmt::format("{}.function: expected an object", pt));
            const json* name = field(*f, "name");
            if (!name) invalid(pt + ".function.name", fmt::format("{}.function.name: missing: expected a string", pt));
            names.push_back(as_string(*name, pt + ".function.name"));
            if (const json* ps = field(*f, "parameters"); ps && !ps->is_object())
                invalid(pt + ".function.parameters",
                        fmt::format("{}.function.parameters: expected a JSON schema object, found {}", pt, found(*ps)));
        }
        p.has_tools = !t->empty();
    }
    p.tool_names = names;
    if (const json* c = field(b, "tool_choice"); c && !c->is_null()) {
        if (c->is_string()) {
            const std::string& v = c->get_ref<const std::string&>();
            if (v == "none") p.tool_choice = ToolChoice::None;
            else if (v == "auto") p.tool_choice = ToolChoice::Auto;
            else if (v == "required") p.tool_choice = ToolChoice::Required;
            else invalid("tool_choice", fmt::format("tool_choice: expected none, auto, required or a function, "
                                                    "found \"{}\"", v));
        } else {
            const json* f = c->is_object() ? field(*c, "function") : nullptr;
            const json* name = f && f->is_object() ? field(*f, "name") : nullptr;
            if (!name) invalid("tool_choice", "tool_choice: expected none, auto, required or "
                                              "{\"type\": \"function\", \"function\": {\"name\": ...}}");
            p.tool_choice = ToolChoice::Function;
            p.tool_choice_name = as_string(*name, "tool_choice.function.name");
            if (std::find(names.begin(), names.end(), p.tool_choice_name) == names.end())
                invalid("tool_choice", fmt::format("tool_choice: the function \"{}\" is not one of the tools",
                                                   p.tool_choice_name));
        }
        if (p.tool_choice != ToolChoice::None && p.tool_choice != ToolChoice::Auto && !p.has_tools)
            invalid("tool_choice", "tool_choice: a tool is required but the request has no tools");
    }
    if (const json* v = field(b, "parallel_tool_calls")) p.parallel_tool_calls = as_bool(*v, "parallel_tool_calls");
    if (const json* v = field(b, "chat_template_kwargs"); v && !v->is_object())
        invalid("chat_template_kwargs", fmt::format("chat_template_kwargs: expected an object, found {}", found(*v)));
}

// response_format: {type: text}, {type: json_object}, {type: json_schema, json_schema: {name,
// schema, strict}}; the schema compiled for constrained output.
void parse_response_format(const json& v, CompletionParams& p) {
    if (!v.is_object())
        invalid("response_format", fmt::format("response_format: expected an object, found {}", found(v)));
    const json* t = field(v, "type");
    const std::string type = t ? as_string(*t, "response_format.type") : "";
    if (type == "text") return;
    if (type == "json_object") {
        p.schema = json_object_schema();
        return;
    }
    if (type != "json_schema")
        invalid("response_format.type",
                fmt::format("response_format.type: expected text, json_object or json_schema, found \"{}\"", type));
    const json* js = field(v, "json_schema");
    const json* schema = js && js->is_object() ? field(*js, "schema") : nullptr;
    if (!schema) invalid("response_format.json_schema", "response_format.json_schema: expected {\"name\": ..., "
                                                        "\"schema\": {...}}");
    try {
        p.schema = compile_json_schema(*schema, "response_format.json_schema.schema");
    } catch (const jitllm::Error& e) {
        invalid("response_format.json_schema.schema", e.what());
    }
}

void parse_messages(const json& b, CompletionParams& p) {
    const json* ms = field(b, "messages");
    if (!ms) invalid("messages", "messages: missing: expected a non-empty array of messages");
    if (!ms->is_array()) invalid("messages", fmt::format("messages: expected an array, found {}", found(*ms)));
    if (ms->empty()) invalid("messages", "messages: empty: expected at least one message");
    for (size_t i = 0; i < ms->size(); ++i) {
        const json& m = (*ms)[i];
        const std::string pm = fmt::format("messages[{}]", i);
        if (!m.is_object()) invalid(pm, fmt::format("{}: expected an object, found {}", pm, found(m)));
        const json* r = field(m, "role");
        if (!r) invalid(pm + ".role", fmt::format("{}.role: missing: expected system, developer, user or "
                                                  "assistant", pm));
        std::string role = as_string(*r, pm + ".role");
        if (role == "function") unsupported(pm + ".role", "role \"function\" (the old function calling; use tools)");
        if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool")
            invalid(pm + ".role", fmt::format("{}.role: unknown role: expected system, developer, user, "
                                              "assistant or tool, found \"{}\"", pm, role));
        if (role == "developer") role = "system";  // OpenAI's newer name for the system role
        if (const json* tc = field(m, "tool_calls")) check_tool_calls(*tc, pm + ".tool_calls", role);
        if (const json* id = field(m, "tool_call_id")) as_string(*id, pm + ".tool_call_id");
        p.messages.push_back({role, message_content(m, pm, role)});
    }
}

void parse_prompt(const json& b, CompletionParams& p, int n_vocab) {
    const json* pr = field(b, "prompt");
    if (!pr) invalid("prompt", "prompt: missing: expected a string or an array of token ids");
    auto token_array = [&](const json& a, const std::string& param) {
        if (a.empty()) invalid(param, fmt::format("{}: empty: expected at least one token id", param));
        p.prompt_is_ids = true;
        for (size_t i = 0; i < a.size(); ++i)
            p.prompt_ids.push_back(as_token(a[i], fmt::format("{}[{}]", param, i), n_vocab));
    };
    if (pr->is_string()) {
        p.prompt_text = pr->get<std::string>();
    } else if (pr->is_array()) {
        if (pr->empty()) invalid("prompt", "prompt: empty: expected a string or at least one token id");
        const json& first = (*pr)[0];
        if (first.is_number()) {
            token_array(*pr, "prompt");
        } else {
            if (pr->size() > 1)
                invalid("prompt", fmt::format("prompt: {} prompts: expected one (this server answers "
                                              "n = 1)", pr->size()));
            if (first.is_string())
                p.prompt_text = first.get<std::string>();
            else if (first.is_array())
                token_array(first, "prompt[0]");
            else
                invalid("prompt[0]", fmt::format("prompt[0]: expected a string or an array of token ids, "
                                                 "found {}", found(first)));
        }
    } else {
        invalid("prompt", fmt::format("prompt: expected a string or an array of token ids, found {}",
                                      found(*pr)));
    }
    if (!p.prompt_is_ids && p.prompt_text.empty())
        invalid("prompt", "prompt: empty: expected at least one character");
}

void parse_stop(const json& b, CompletionParams& p) {
    const json* s = field(b, "stop");
    if (!s) return;
    auto one = [&](const json& v, const std::string& param) {
        const std::string& t = as_string(v, param);
        if (t.empty()) invalid(param, fmt::format("{}: empty: expected a non-empty string", param));
        if (t.size() > kMaxStopBytes)
            invalid(param, fmt::format("{}: too long: expected at most {} bytes, found {}", param,
                                       kMaxStopBytes, t.size()));
        p.stop.push_back(t);
    };
    if (s->is_string()) {
        one(*s, "stop");
    } else if (s->is_array()) {
        if (s->size() > kMaxStops)
            invalid("stop", fmt::format("stop: too many: expected at most {} strings, found {}", kMaxStops,
                                        s->size()));
        for (size_t i = 0; i < s->size(); ++i) one((*s)[i], fmt::format("stop[{}]", i));
    } else {
        invalid("stop", fmt::format("stop: expected a string or an array of strings, found {}", found(*s)));
    }
}

void parse_logit_bias(const json& b, CompletionParams& p, int n_vocab) {
    const json* lb = field(b, "logit_bias");
    if (!lb) return;
    if (!lb->is_object())
        invalid("logit_bias", fmt::format("logit_bias: expected an object of token id -> bias, found {}",
                                          found(*lb)));
    if (lb->size() > kMaxLogitBias)
        invalid("logit_bias", fmt::format("logit_bias: too many entries: expected at most {}, found {}",
                                          kMaxLogitBias, lb->size()));
    for (const auto& [k, v] : lb->items()) {
        const std::string param = "logit_bias." + k;
        int64_t id = -1;
        bool ok = !k.empty() && k.size() <= 10;
        for (char c : k) ok = ok && c >= '0' && c <= '9';
        if (ok) id = std::stoll(k);
        if (!ok || id >= n_vocab)
            invalid(param, fmt::format("logit_bias: key \"{}\": expected a token id in [0, {}]", k, n_vocab - 1));
        p.logit_bias.push_back({int32_t(id), float(as_number(v, param, -100, 100))});
    }
}

}  // namespace

void invalid(const std::string& param, const std::string& message) {
    throw ApiError(400, "invalid_request_error", message, param);
}

std::string error_body(const ApiError& e) {
    ojson err;
    err["message"] = e.message;
    err["type"] = e.type;
    err["param"] = e.param ? ojson(*e.param) : ojson(nullptr);
    err["code"] = e.status;
    for (const auto& [k, v] : e.extra.items()) err[k] = v;
    ojson body;
    body["error"] = std::move(err);
    return body.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

json parse_body(std::string_view body, size_t max_values) {
    if (body.empty()) invalid("body", "request body: empty: expected a JSON object");
    // the JSON lexer takes a NUL byte for the end of the input and would ignore what follows
    if (const size_t nul = body.find('\0'); nul != std::string_view::npos)
        invalid("body", fmt::format("request body: a NUL byte at offset {}: expected JSON text", nul));
    json j;
    size_t values = 0;
    try {
        j = json::parse(body.begin(), body.end(), [&](int depth, json::parse_event_t ev, json&) {
            if (depth > kMaxJsonDepth) throw DepthExceeded{};
            if ((ev == json::parse_event_t::value || ev == json::parse_event_t::object_start ||
                 ev == json::parse_event_t::array_start) && ++values > max_values)
                throw TooManyValues{};
            return true;
        });
    } catch (const DepthExceeded&) {
        invalid("body", fmt::format("request body: nested too deeply: expected at most {} levels",
                                    kMaxJsonDepth));
    } catch (const TooManyValues&) {
        invalid("body", fmt::format("request body: too many JSON values: expected at most {} (what the context "
                                    "can use)", max_values));
    } catch (const json::exception& e) {
        // nlohmann's message names the byte offset and the problem (syntax, invalid UTF-8, 1e400)
        invalid("body", fmt::format("request body: not valid JSON: {}", e.what()));
    }
    if (!j.is_object())
        invalid("body", fmt::format("request body: expected a JSON object, found {}", found(j)));
    return j;
}

SamplerParams default_sampler_params() {
    SamplerParams sp;
    sp.temperature = 0.8f;
    sp.top_k = 40;
    sp.top_p = 0.95f;
    sp.min_p = 0.05f;
    sp.repeat_penalty = 1.0f;
    sp.repeat_last_n = 64;
    return sp;
}

CompletionParams parse_completion(const json& b, Endpoint kind, int n_vocab) {
    CompletionParams p;
    p.kind = kind;
    p.sp = default_sampler_params();
    if (const json* v = field(b, "model")) p.model = as_string(*v, "model");
    if (kind == Endpoint::Chat)
        parse_messages(b, p);
    else
        parse_prompt(b, p, n_vocab);

    if (const json* v = field(b, "max_tokens")) p.max_tokens = as_int(*v, "max_tokens", 1, kInt32Max);
    if (const json* v = field(b, "max_completion_tokens"))
        p.max_tokens = as_int(*v, "max_completion_tokens", 1, kInt32Max);
    if (const json* v = field(b, "n")) {
        const int64_t n = as_int(*v, "n", 1, 128);
        if (n != 1) invalid("n", fmt::format("n: expected 1 (one choice per request), found {}", n));
    }
    if (const json* v = field(b, "temperature")) p.sp.temperature = float(as_number(*v, "temperature", 0, 2));
    if (const json* v = field(b, "top_p")) {
        const double tp = as_number(*v, "top_p", 0, 1);
        p.sp.top_p = tp == 0 ? 1e-9f : float(tp);  // 0: keep the most likely token only
    }
    if (const json* v = field(b, "top_k")) {
        const int64_t k = as_int(*v, "top_k", -1, kInt32Max);
        p.sp.top_k = k < 0 ? 0 : int(k);  // llama-server: <= 0 means off
    }
    if (const json* v = field(b, "min_p")) p.sp.min_p = float(as_number(*v, "min_p", 0, 1));
    if (const json* v = field(b, "presence_penalty"))
        p.sp.presence_penalty = float(as_number(*v, "presence_penalty", -2, 2));
    if (const json* v = field(b, "frequency_penalty"))
        p.sp.frequency_penalty = float(as_number(*v, "frequency_penalty", -2, 2));
    if (const json* v = field(b, "repeat_penalty"))
        p.sp.repeat_penalty = float(as_number(*v, "repeat_penalty", 0, 10, true));
    if (const json* v = field(b, "repeat_last_n"))
        p.sp.repeat_last_n = int(as_int(*v, "repeat_last_n", 0, 1 << 20));
    if (const json* v = field(b, "seed")) {
        if (!v->is_number_integer())
            invalid("seed", fmt::format("seed: expected an integer, found {}", found(*v)));
        p.sp.seed = v->is_number_unsigned() ? v->get<uint64_t>() : uint64_t(v->get<int64_t>());
        p.has_seed = v->is_number_unsigned() || v->get<int64_t>() != -1;  // -1: random (llama-server)

    }
    parse_stop(b, p);
    if (const json* v = field(b, "stream")) p.stream = as_bool(*v, "stream");
    if (const json* v = field(b, "stream_options")) {
        if (!v->is_object())
            invalid("stream_options", fmt::format("stream_options: expected an object, found {}", found(*v)));
        if (const json* u = field(*v, "include_usage")) p.include_usage = as_bool(*u, "stream_options.include_usage");
    }
    if (kind == Endpoint::Chat) {
        if (const json* v = field(b, "logprobs")) p.logprobs = as_bool(*v, "logprobs");
        if (const json* v = field(b, "top_logprobs")) {
            p.top_logprobs = int(as_int(*v, "top_logprobs", 0, 20));
            if (!p.logprobs)
                invalid("top_logprobs", "top_logprobs: needs logprobs: expected \"logprobs\": true");
        }
    } else {
        if (const json* v = field(b, "logprobs")) {
            p.logprobs = true;
            p.top_logprobs = int(as_int(*v, "logprobs", 0, 5));
        }
        if (const json* v = field(b, "echo"); v && as_bool(*v, "echo")) unsupported("echo", "echo = true");
        if (const json* v = field(b, "best_of"); v && as_int(*v, "best_of", 1, 128) != 1)
            unsupported("best_of", "best_of other than 1");
        if (const json* v = field(b, "suffix"); v && !as_string(*v, "suffix").empty())
            unsupported("suffix", "suffix (insertion)");
    }
    if (const json* v = field(b, "ignore_eos")) p.ignore_eos = as_bool(*v, "ignore_eos");
    parse_logit_bias(b, p, n_vocab);

    if (kind == Endpoint::Chat) parse_tools(b, p);
    if (const json* v = field(b, "functions"); v && !(v->is_array() && v->empty()))
        unsupported("functions", "the old function calling (use tools)");
    if (field(b, "function_call")) unsupported("function_call", "the old function calling (use tool_choice)");
    if (const json* v = field(b, "response_format")) parse_response_format(*v, p);
    return p;
}

TokenizeParams parse_tokenize(const json& b) {
    TokenizeParams p;
    const json* c = field(b, "content");
    if (!c) invalid("content", "content: missing: expected a string");
    p.content = as_string(*c, "content");
    if (const json* v = field(b, "add_special")) p.add_special = as_bool(*v, "add_special");
    if (const json* v = field(b, "parse_special")) p.parse_special = as_bool(*v, "parse_special");
    if (const json* v = field(b, "with_pieces")) p.with_pieces = as_bool(*v, "with_pieces");
    return p;
}

std::vector<int32_t> parse_detokenize(const json& b, int n_vocab) {
    const json* t = field(b, "tokens");
    if (!t) invalid("tokens", "tokens: missing: expected an array of token ids");
    if (!t->is_array()) invalid("tokens", fmt::format("tokens: expected an array of token ids, found {}", found(*t)));
    std::vector<int32_t> ids;
    ids.reserve(t->size());
    for (size_t i = 0; i < t->size(); ++i) ids.push_back(as_token((*t)[i], fmt::format("tokens[{}]", i), n_vocab));
    return ids;
}

void attach_chat_json(const ojson& body, CompletionParams& p) {
    p.chat_messages = ojson::array();
    for (const ojson& m : body.at("messages")) {
        ojson out = m;
        if (out["role"] == "developer") out["role"] = "system";
        if (out.contains("content") && out["content"].is_array()) {  // text parts: one text, as templates take it
            std::string text;
            for (const auto& part : out["content"]) text += part.value("text", "");
            out["content"] = text;
        }
        // templates format arguments with tojson: they expect the object OpenAI sends as JSON text
        if (out.contains("tool_calls") && out["tool_calls"].is_array())
            for (auto& c : out["tool_calls"]) {
                ojson& a = c["function"]["arguments"];
                if (!a.is_string()) continue;
                ojson parsed = ojson::parse(a.get<std::string>(), nullptr, false);
                if (parsed.is_object()) a = std::move(parsed);
            }
        p.chat_messages.push_back(std::move(out));
    }
    p.tools = p.has_tools && body.contains("tools") ? body["tools"] : ojson();
    if (p.tool_choice == ToolChoice::Function) {  // the named function is the only one the model sees
        ojson only = ojson::array();
        for (const auto& t : p.tools)
            if (t["function"]["name"] == p.tool_choice_name) only.push_back(t);
        p.tools = only;
    }
    if (p.tool_choice == ToolChoice::None) p.tools = ojson();
    p.template_kwargs = body.value("chat_template_kwargs", ojson::object());
}

bool valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (n == 0 || (n == 2 && c < 0xC2) || i + size_t(n) > s.size()) return false;
        for (int k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + size_t(k)]) & 0xC0) != 0x80) return false;
        i += size_t(n);
    }
    return true;
}

}  // namespace jitllm::serve
