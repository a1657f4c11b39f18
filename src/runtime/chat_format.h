// Chat formats (--instruct, -i, the server's chat endpoint): renders a conversation into the text
// the model was trained on. The model's own template (tokenizer.chat_template, run by the Jinja
// interpreter, chat_format_jinja.h) renders it when the file has one; else one of the families'
// published templates, reimplemented here, chosen from the vocabulary's special tokens (with the
// file's template as a tie-breaker). The family also names the stop tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/chat_format_jinja.h"

namespace jitllm {

class GgufReader;
class Tokenizer;

enum class ChatFormat {
    None,           // contents concatenated, no markup
    Llama3,         // <|start_header_id|>role<|end_header_id|>\n\n content <|eot_id|>
    Llama2,         // <s>[INST] <<SYS>>\nsys\n<</SYS>>\n\nuser [/INST] answer </s>
    MistralV1,      // <s> [INST] user [/INST] answer</s>   (SentencePiece, no control tokens)
    MistralV3,      // <s>[INST] user[/INST] answer</s>     ([INST] is a control token)
    MistralTekken,  // <s>[INST]user[/INST]answer</s>       (Tekken BPE: Nemo, Ministral)
    MistralV7,      // <s>[SYSTEM_PROMPT]sys[/SYSTEM_PROMPT][INST]user[/INST]answer</s> (Tekken: mistral3)
    ChatML,         // <|im_start|>role\n content <|im_end|>\n  (Qwen2/2.5/3)
    Phi3,           // <|role|>\n content <|end|>\n
    Phi4,           // <|im_start|>role<|im_sep|> content <|im_end|>
    Granite,        // <|start_of_role|>role<|end_of_role|> content <|end_of_text|>\n
    DeepSeekR1,     // <｜begin▁of▁sentence｜>sys<｜User｜>u<｜Assistant｜>a<｜end▁of▁sentence｜>
};
const char* chat_format_name(ChatFormat f);

struct ChatMessage {
    std::string role;     // "system" | "user" | "assistant"
    std::string content;
};

// A format plus the details one family's template varies within it.
struct ChatTemplate {
    ChatFormat format = ChatFormat::None;
    // System text the template inserts when the conversation has none (Qwen1.5: "You are a
    // helpful assistant"; Qwen2.5: "You are Qwen, created by Alibaba Cloud. ..."); read from the file's
    // tokenizer.chat_template. Empty: no default (Qwen3, generic ChatML).
    std::string default_system;
    // Earlier assistant turns keep only the text after their last </think> (Qwen3, QwQ;
    // DeepSeek-R1 always does this).
    bool strip_thinking = false;
    // The file's own template, parsed (null: the file has none, or it does not parse, and the
    // format above renders), and the BOS / EOS texts it gets.
    std::shared_ptr<const tmpl::Template> jinja;
    ChatSpecials specials;
    std::string jinja_error;  // why the file's template is not used, when it has one
};

// Picks the format from the vocabulary's special tokens (e.g. <|start_header_id|> -> Llama3),
// the architecture, and `jinja` (tokenizer.chat_template, may be empty).
ChatTemplate chat_template_detect(const Tokenizer& tok, const std::string& arch,
                                  std::string_view jinja);
// Same, reading general.architecture and tokenizer.chat_template from the file, whose template
// (parsed) then renders.
ChatTemplate chat_template_for(const Tokenizer& tok, const GgufReader& g);

// Replaces the file's template by the Jinja template in `path` (jitllm serve --chat-template-file).
// Throws Error when it cannot be read or does not parse.
void chat_template_use_file(ChatTemplate& t, const std::string& path);

// Renders messages and, when add_generation_prompt, the header of the assistant's turn: by the
// file's template where `t` has one, else by the family's format. The text contains special-token
// spellings; tokenize it with parse_special = true and add_special = chat_add_special(t, text).
// Throws Error when the template refuses the conversation (raise_exception) or fails.
std::string chat_render(const ChatTemplate& t, const std::vector<ChatMessage>& msgs,
                        bool add_generation_prompt);
// The same with everything a template can take: OpenAI messages (tool calls, tool results,
// content parts), tools and extra variables. Without a file template, tools are refused and the
// messages' text is rendered by the family's format.
std::string chat_render(const ChatTemplate& t, const ChatVars& v);
// Whether the tokenizer should add the vocabulary's BOS: not when the rendered text starts with it.
bool chat_add_special(const ChatTemplate& t, std::string_view text);
// What renders: "the model's tokenizer.chat_template", or "the chatml format" (and why the
// file's template is not used, where it has one that does not parse).
std::string chat_template_describe(const ChatTemplate& t);

// Whether the format places BOS itself (so the tokenizer must not add another).
bool chat_format_has_bos(ChatFormat f);

// Spellings of the tokens that end an assistant turn in this format (first: the turn end the
// template writes). Generation stops on them; each is an end-of-generation token of the family's
// vocabulary (Tokenizer::is_eog), which runtime_chat_format_test checks per family.
std::vector<std::string> chat_stop_texts(ChatFormat f);
// The ids of chat_stop_texts(f) present in the vocabulary.
std::vector<int32_t> chat_stop_tokens(ChatFormat f, const Tokenizer& tok);

// Earlier API, kept for callers: detection without the file's template (no Qwen default system
// prompt), and rendering with the format's defaults.
ChatFormat chat_format_detect(const Tokenizer& tok, const std::string& arch);
std::string chat_render(ChatFormat f, const std::vector<ChatMessage>& msgs,
                        bool add_generation_prompt);

}  // namespace jitllm
