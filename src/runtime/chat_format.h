// Chat formats per model family (--instruct, -i): renders a conversation into the text the model
// was trained on (each family's published chat template, reimplemented) and names its stop tokens.
// Chosen from the vocabulary's special tokens, with the file's tokenizer.chat_template as a tie-
// breaker. Not a Jinja engine: an unknown template falls back to the closest family format.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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
};

// Picks the format from the vocabulary's special tokens (e.g. <|start_header_id|> -> Llama3),
// the architecture, and `jinja` (tokenizer.chat_template, may be empty).
ChatTemplate chat_template_detect(const Tokenizer& tok, const std::string& arch,
                                  std::string_view jinja);
// Same, reading general.architecture and tokenizer.chat_template from the file.
ChatTemplate chat_template_for(const Tokenizer& tok, const GgufReader& g);

// Renders messages and, when add_generation_prompt, the header of the assistant's turn.
// The text contains special-token spellings; tokenize it with parse_special = true, and with
// add_special = !chat_format_has_bos(format) (the vocabulary's add_bos flag then decides).
std::string chat_render(const ChatTemplate& t, const std::vector<ChatMessage>& msgs,
                        bool add_generation_prompt);

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
