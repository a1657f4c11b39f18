// Chat formats per model family (--instruct, -i): renders a conversation into the text the
// model was trained on, and names the stop tokens. Chosen from the vocabulary's special tokens.
#pragma once

#include <string>
#include <vector>

namespace jitllm {

class Tokenizer;

enum class ChatFormat { None, Llama3, Llama2, ChatML, Phi3, Granite, DeepSeekR1 };
const char* chat_format_name(ChatFormat f);

struct ChatMessage {
    std::string role;     // "system" | "user" | "assistant"
    std::string content;
};

// Picks the format from the tokenizer's special tokens (e.g. <|start_header_id|> -> Llama3),
// with the architecture as a tie-breaker.
ChatFormat chat_format_detect(const Tokenizer& tok, const std::string& arch);

// Renders messages and, when add_generation_prompt, the header of the assistant's turn.
// The text contains special-token spellings; tokenize it with parse_special = true.
std::string chat_render(ChatFormat f, const std::vector<ChatMessage>& msgs, bool add_generation_prompt);

// Whether the format places BOS itself (so the tokenizer must not add another).
bool chat_format_has_bos(ChatFormat f);

}  // namespace jitllm
