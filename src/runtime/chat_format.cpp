// Chat formats (see chat_format.h), written from each family's published template.
#include "runtime/chat_format.h"

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace jitllm {

const char* chat_format_name(ChatFormat f) {
    switch (f) {
        case ChatFormat::None: return "none";
        case ChatFormat::Llama3: return "llama3";
        case ChatFormat::Llama2: return "llama2";
        case ChatFormat::ChatML: return "chatml";
        case ChatFormat::Phi3: return "phi3";
        case ChatFormat::Granite: return "granite";
        case ChatFormat::DeepSeekR1: return "deepseek-r1";
    }
    return "?";
}

ChatFormat chat_format_detect(const Tokenizer& tok, const std::string& arch) {
    auto has = [&](const char* s) { return tok.find_token(s).has_value(); };
    if (has("<|start_header_id|>")) return ChatFormat::Llama3;
    if (has("<｜User｜>")) return ChatFormat::DeepSeekR1;
    if (has("<|im_start|>")) return ChatFormat::ChatML;
    if (arch == "phi3" || (has("<|user|>") && has("<|end|>"))) return ChatFormat::Phi3;
    if (arch == "granite" || has("<|start_of_role|>")) return ChatFormat::Granite;
    return ChatFormat::Llama2;  // SentencePiece Llama 2 / Mistral [INST]
}

bool chat_format_has_bos(ChatFormat f) {
    return f == ChatFormat::Llama3 || f == ChatFormat::Llama2 || f == ChatFormat::DeepSeekR1;
}

std::string chat_render(ChatFormat f, const std::vector<ChatMessage>& msgs, bool gen) {
    std::string s;
    switch (f) {
        case ChatFormat::Llama3:
            // <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
            s = "<|begin_of_text|>";
            for (const auto& m : msgs)
                s += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
            if (gen) s += "<|start_header_id|>assistant<|end_header_id|>\n\n";
            return s;
        case ChatFormat::Llama2: {
            // <s>[INST] <<SYS>>\nsys\n<</SYS>>\n\nuser [/INST] answer </s><s>[INST] ...
            std::string sys;
            bool open = false;
            for (const auto& m : msgs) {
                if (m.role == "system") {
                    sys = m.content;
                } else if (m.role == "user") {
                    s += "<s>[INST] ";
                    if (!sys.empty()) {
                        s += "<<SYS>>\n" + sys + "\n<</SYS>>\n\n";
                        sys.clear();
                    }
                    s += m.content + " [/INST]";
                    open = true;
                } else {
                    s += " " + m.content + " </s>";
                    open = false;
                }
            }
            (void)open;
            return s;
        }
        case ChatFormat::ChatML:
            for (const auto& m : msgs) s += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
            if (gen) s += "<|im_start|>assistant\n";
            return s;
        case ChatFormat::Phi3:
            for (const auto& m : msgs) s += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
            if (gen) s += "<|assistant|>\n";
            return s;
        case ChatFormat::Granite:
            for (const auto& m : msgs)
                s += "<|start_of_role|>" + m.role + "<|end_of_role|>" + m.content + "<|end_of_text|>\n";
            if (gen) s += "<|start_of_role|>assistant<|end_of_role|>";
            return s;
        case ChatFormat::DeepSeekR1:
            s = "<｜begin▁of▁sentence｜>";
            for (const auto& m : msgs)
                if (m.role == "system") s += m.content;
            for (const auto& m : msgs) {
                if (m.role == "user") s += "<｜User｜>" + m.content;
                if (m.role == "assistant") s += "<｜Assistant｜>" + m.content + "<｜end▁of▁sentence｜>";
            }
            if (gen) s += "<｜Assistant｜><think>\n";
            return s;
        case ChatFormat::None:
            for (const auto& m : msgs) s += m.content;
            return s;
    }
    return s;
}

}  // namespace jitllm
