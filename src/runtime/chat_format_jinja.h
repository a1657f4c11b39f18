// The model's own chat template: tokenizer.chat_template (and tokenizer.chat_template.<name>)
// from the GGUF file, rendered by the Jinja interpreter (template/) with the variables Hugging
// Face's apply_chat_template passes: messages, tools, documents, add_generation_prompt,
// bos_token, eos_token, and extra ones such as enable_thinking.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "template/template.h"

namespace jitllm {

class GgufReader;
class Tokenizer;

// The names of the file's templates: "" for tokenizer.chat_template, then each <name> of
// tokenizer.chat_template.<name> ("tool_use", "rag", ...).
std::vector<std::string> chat_template_names(const GgufReader& g);
// The source of the file's template `name` ("" = the default); empty when there is none.
std::string chat_template_source(const GgufReader& g, const std::string& name);

struct ChatVars {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    nlohmann::ordered_json tools;  // an array, or null (none)
    bool add_generation_prompt = true;
    // Further variables (enable_thinking, date_string, ...); they override the others.
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

// The texts of bos_token and eos_token: the vocabulary's BOS / EOS where the file names them
// (tokenizer.ggml.bos_token_id / eos_token_id); a file without one leaves the variable undefined,
// as transformers does for a tokenizer without that token (Qwen's BOS).
struct ChatSpecials {
    std::optional<std::string> bos, eos;
};
ChatSpecials chat_special_tokens(const Tokenizer& tok, const GgufReader& g);

// The variables a template gets, in transformers' order; `v.extra` overrides the others.
nlohmann::ordered_json chat_jinja_vars(const ChatVars& v, const ChatSpecials& sp);
std::string chat_render_jinja(const tmpl::Template& t, const ChatVars& v, const ChatSpecials& sp);

}  // namespace jitllm
