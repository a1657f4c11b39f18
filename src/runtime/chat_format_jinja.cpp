// The model's own chat template (see chat_format_jinja.h).
#include "runtime/chat_format_jinja.h"

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/tokenizer.h"

namespace jitllm {

namespace {
constexpr std::string_view kTemplateKey = "tokenizer.chat_template";
}

std::vector<std::string> chat_template_names(const GgufReader& g) {
    std::vector<std::string> names;
    if (g.find_kv(kTemplateKey)) names.emplace_back();
    for (const auto& kv : g.kvs()) {
        const std::string_view k = kv.key;
        if (k.size() > kTemplateKey.size() + 1 && k.substr(0, kTemplateKey.size()) == kTemplateKey &&
            k[kTemplateKey.size()] == '.')
            names.emplace_back(k.substr(kTemplateKey.size() + 1));
    }
    return names;
}

std::string chat_template_source(const GgufReader& g, const std::string& name) {
    const std::string key = name.empty() ? std::string(kTemplateKey) : std::string(kTemplateKey) + "." + name;
    return g.get_string_opt(key).value_or("");
}

ChatSpecials chat_special_tokens(const Tokenizer& tok, const GgufReader& g) {
    ChatSpecials sp;
    if (g.find_kv("tokenizer.ggml.bos_token_id") && tok.bos() >= 0) sp.bos = tok.token_text(tok.bos());
    if (g.find_kv("tokenizer.ggml.eos_token_id") && tok.eos() >= 0) sp.eos = tok.token_text(tok.eos());
    return sp;
}

nlohmann::ordered_json chat_jinja_vars(const ChatVars& v, const ChatSpecials& sp) {
    if (!v.messages.is_array()) fail("chat messages: expected a JSON array, found {}", v.messages.type_name());
    if (!v.tools.is_null() && !v.tools.is_array())
        fail("chat tools: expected a JSON array, found {}", v.tools.type_name());
    if (!v.extra.is_object()) fail("chat template variables: expected a JSON object, found {}", v.extra.type_name());
    nlohmann::ordered_json vars = nlohmann::ordered_json::object();
    vars["messages"] = v.messages;
    vars["tools"] = v.tools;
    vars["documents"] = nullptr;
    vars["add_generation_prompt"] = v.add_generation_prompt;
    if (sp.bos) vars["bos_token"] = *sp.bos;
    if (sp.eos) vars["eos_token"] = *sp.eos;
    for (const auto& [k, x] : v.extra.items()) vars[k] = x;
    return vars;
}

std::string chat_render_jinja(const tmpl::Template& t, const ChatVars& v, const ChatSpecials& sp) {
    return t.render(chat_jinja_vars(v, sp));
}

}  // namespace jitllm
