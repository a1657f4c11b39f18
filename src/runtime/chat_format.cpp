// Chat formats (see chat_format.h). Each renderer reimplements one family's published chat
// template (tokenizer_config.json "chat_template"); the comment above each case shows the text a
// system + user + assistant + user conversation becomes. Where a family has several published
// templates, the variant chosen is named and matches llama.cpp's built-in one (llama-chat.cpp).
#include "runtime/chat_format.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/tokenizer.h"

namespace jitllm {

namespace {

// Jinja's `trim` / Python's str.strip() on ASCII white space.
std::string trim(const std::string& s) {
    const char* ws = " \t\n\r\f\v";
    const size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// content.split('</think>')[-1], then .lstrip('\n') when lstrip_newlines (Qwen3 does, DeepSeek-R1
// does not).
std::string after_thinking(const std::string& s, bool lstrip_newlines) {
    const size_t p = s.rfind("</think>");
    if (p == std::string::npos) return s;
    std::string r = s.substr(p + 8);
    if (lstrip_newlines) r.erase(0, std::min(r.size(), r.find_first_not_of('\n')));
    return r;
}

// The default system text of a ChatML template: a string literal of the form
// '<|im_start|>system\n<text><|im_end|>' whose <text> is constant (no quotes or braces, so it is
// not an expression such as `+ messages[0]['content']`). The newline may be literal or "\n".
std::string chatml_default_system(std::string_view jinja) {
    const std::string_view head = "<|im_start|>system";
    for (size_t at = jinja.find(head); at != std::string_view::npos; at = jinja.find(head, at + 1)) {
        size_t p = at + head.size();
        if (jinja.substr(p, 1) == "\n") p += 1;
        else if (jinja.substr(p, 2) == "\\n") p += 2;
        else continue;
        const size_t end = jinja.find("<|im_end|>", p);
        if (end == std::string_view::npos) break;
        const std::string_view text = jinja.substr(p, end - p);
        if (text.empty() || text.find_first_of("'\"{}") != std::string_view::npos) continue;
        std::string out;
        for (size_t i = 0; i < text.size(); ++i) {
            if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == 'n') {
                out += '\n';
                ++i;
            } else {
                out += text[i];
            }
        }
        return out;
    }
    return "";
}

bool contains(std::string_view s, std::string_view sub) { return s.find(sub) != std::string_view::npos; }

// The first system message's content (templates that move it into a user turn).
const ChatMessage* first_system(const std::vector<ChatMessage>& msgs) {
    for (const auto& m : msgs)
        if (m.role == "system") return &m;
    return nullptr;
}

// Llama 2 chat (meta-llama/Llama-2-*-chat-hf): the system message is wrapped in <<SYS>> and put
// in front of the first turn; contents are strip()ped.
//   <s>[INST] <<SYS>>\nS\n<</SYS>>\n\nU1 [/INST] A1 </s><s>[INST] U2 [/INST]
std::string render_llama2(const std::vector<ChatMessage>& msgs) {
    const ChatMessage* sys = first_system(msgs);
    std::string s;
    bool first = true;
    for (const auto& m : msgs) {
        if (m.role == "system") continue;
        std::string c = m.content;
        if (first && sys) c = "<<SYS>>\n" + sys->content + "\n<</SYS>>\n\n" + c;
        first = false;
        if (m.role == "user") s += "<s>[INST] " + trim(c) + " [/INST]";
        else if (m.role == "assistant") s += " " + trim(c) + " </s>";
    }
    return s;
}

// Mistral, after the tokenizer version (docs.mistral.ai "Tokenization" cookbook; mistral-common):
//   V1:     <s> [INST] S\n\nU1 [/INST] A1</s> [INST] U2 [/INST]    (system in the FIRST user turn)
//   V3:     <s>[INST] U1[/INST] A1</s>[INST] S\n\nU2[/INST]         (system in the LAST user turn)
//   Tekken: <s>[INST]U1[/INST]A1</s>[INST]S\n\nU2[/INST]            (as V3, no spaces)
//   V7:     <s>[SYSTEM_PROMPT]S[/SYSTEM_PROMPT][INST]U1[/INST]A1</s>[INST]U2[/INST]
std::string render_mistral(ChatFormat f, const std::vector<ChatMessage>& msgs) {
    std::string s = "<s>";
    if (f == ChatFormat::MistralV7) {
        for (const auto& m : msgs) {
            if (m.role == "system") s += "[SYSTEM_PROMPT]" + m.content + "[/SYSTEM_PROMPT]";
            else if (m.role == "user") s += "[INST]" + m.content + "[/INST]";
            else if (m.role == "assistant") s += m.content + "</s>";
        }
        return s;
    }
    const ChatMessage* sys = first_system(msgs);
    const bool v1 = f == ChatFormat::MistralV1;
    const std::string inst = v1 ? " [INST] " : f == ChatFormat::MistralV3 ? "[INST] " : "[INST]";
    const std::string end_inst = v1 ? " [/INST]" : "[/INST]";
    const std::string answer = f == ChatFormat::MistralTekken ? "" : " ";
    bool first_user = true;
    for (size_t i = 0; i < msgs.size(); ++i) {
        const ChatMessage& m = msgs[i];
        if (m.role == "user") {
            const bool with_sys = sys && (v1 ? first_user : i + 1 == msgs.size());
            s += inst + (with_sys ? sys->content + "\n\n" : "") + m.content + end_inst;
            first_user = false;
        } else if (m.role == "assistant") {
            s += answer + m.content + "</s>";
        }
    }
    return s;
}

}  // namespace

const char* chat_format_name(ChatFormat f) {
    switch (f) {
        case ChatFormat::None: return "none";
        case ChatFormat::Llama3: return "llama3";
        case ChatFormat::Llama2: return "llama2";
        case ChatFormat::MistralV1: return "mistral-v1";
        case ChatFormat::MistralV3: return "mistral-v3";
        case ChatFormat::MistralTekken: return "mistral-v3-tekken";
        case ChatFormat::MistralV7: return "mistral-v7";
        case ChatFormat::ChatML: return "chatml";
        case ChatFormat::Phi3: return "phi3";
        case ChatFormat::Phi4: return "phi4";
        case ChatFormat::Granite: return "granite";
        case ChatFormat::DeepSeekR1: return "deepseek-r1";
    }
    return "?";
}

ChatTemplate chat_template_detect(const Tokenizer& tok, const std::string& arch,
                                  std::string_view jinja) {
    auto has = [&](std::string_view s) { return tok.find_token(s).has_value(); };
    ChatTemplate t;
    // DeepSeek-R1 distills keep their base model's specials (Llama 3's headers in the Llama
    // distills), so its own tokens are tested first.
    if (has("<\xEF\xBD\x9CUser\xEF\xBD\x9C>")) {  // <｜User｜>
        t.format = ChatFormat::DeepSeekR1;
        t.strip_thinking = true;
    } else if (has("<|start_header_id|>")) {
        t.format = ChatFormat::Llama3;
    } else if (has("<|im_start|>") && has("<|im_sep|>")) {
        t.format = ChatFormat::Phi4;
    } else if (has("<|im_start|>")) {
        t.format = ChatFormat::ChatML;
        t.default_system = chatml_default_system(jinja);
        t.strip_thinking = has("</think>");
    } else if (has("<|start_of_role|>") || arch == "granite") {
        t.format = ChatFormat::Granite;
    } else if ((has("<|user|>") && has("<|end|>")) || arch == "phi3") {
        t.format = ChatFormat::Phi3;
    } else if (has("[SYSTEM_PROMPT]") || arch == "mistral3") {
        // Mistral Small 3.x, Ministral 3, Devstral 2 (mistral3 files): the v7 template, Tekken
        // spelling (no spaces around the markers), as llama.cpp's mistral-v7-tekken
        t.format = ChatFormat::MistralV7;
    } else if (has("[INST]")) {
        t.format = tok.pre_name() == "tekken" ? ChatFormat::MistralTekken : ChatFormat::MistralV3;
    } else if (contains(jinja, "[INST]") && !contains(jinja, "<<SYS>>")) {
        t.format = ChatFormat::MistralV1;  // SentencePiece Mistral 7B v0.1/v0.2, Mixtral 8x7B
    } else {
        t.format = ChatFormat::Llama2;  // SentencePiece Llama 2 (also the fallback)
    }
    return t;
}

ChatTemplate chat_template_for(const Tokenizer& tok, const GgufReader& g) {
    const std::string source = chat_template_source(g, "");
    ChatTemplate t = chat_template_detect(tok, g.get_string_opt("general.architecture").value_or(""), source);
    t.specials = chat_special_tokens(tok, g);
    if (source.empty()) return t;
    try {
        t.jinja = std::make_shared<const tmpl::Template>(source, "tokenizer.chat_template");
    } catch (const Error& e) {
        t.jinja_error = e.what();  // the family's format renders instead
    }
    return t;
}

void chat_template_use_file(ChatTemplate& t, const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot read the chat template: {}", path, std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str().size() > (size_t(1) << 20)) fail("{}: the chat template is larger than 1 MiB", path);
    t.jinja = std::make_shared<const tmpl::Template>(text.str(), path);
    t.jinja_error.clear();
}

bool chat_format_has_bos(ChatFormat f) {
    switch (f) {
        case ChatFormat::Llama3:
        case ChatFormat::Llama2:
        case ChatFormat::MistralV1:
        case ChatFormat::MistralV3:
        case ChatFormat::MistralTekken:
        case ChatFormat::MistralV7:
        case ChatFormat::DeepSeekR1: return true;
        default: return false;
    }
}

namespace {

// The family's format (the file's template aside).
std::string render_format(const ChatTemplate& t, const std::vector<ChatMessage>& msgs, bool gen) {
    std::string s;
    switch (t.format) {
        case ChatFormat::Llama3:
            // Meta Llama 3 Instruct (contents trimmed):
            // <|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>
            // <|start_header_id|>user<|end_header_id|>\n\nU1<|eot_id|>...
            // <|start_header_id|>assistant<|end_header_id|>\n\n
            s = "<|begin_of_text|>";
            for (const auto& m : msgs)
                s += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) +
                     "<|eot_id|>";
            if (gen) s += "<|start_header_id|>assistant<|end_header_id|>\n\n";
            return s;
        case ChatFormat::Llama2:
            return render_llama2(msgs);  // no generation prompt: the text ends in [/INST]
        case ChatFormat::MistralV1:
        case ChatFormat::MistralV3:
        case ChatFormat::MistralTekken:
        case ChatFormat::MistralV7:
            return render_mistral(t.format, msgs);
        case ChatFormat::ChatML: {
            // Qwen2/2.5/3: <|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n
            // <|im_start|>assistant\nA1<|im_end|>\n ... <|im_start|>assistant\n
            // Qwen2/2.5 insert their default system message when none is given; Qwen3 drops the
            // <think> part of earlier assistant turns.
            if (!t.default_system.empty() && (msgs.empty() || msgs[0].role != "system"))
                s += "<|im_start|>system\n" + t.default_system + "<|im_end|>\n";
            for (const auto& m : msgs) {
                const bool strip = t.strip_thinking && m.role == "assistant";
                s += "<|im_start|>" + m.role + "\n" + (strip ? after_thinking(m.content, true) : m.content) +
                     "<|im_end|>\n";
            }
            if (gen) s += "<|im_start|>assistant\n";
            return s;
        }
        case ChatFormat::Phi3:
            // Phi-3/3.5 mini: <|system|>\nS<|end|>\n<|user|>\nU1<|end|>\n<|assistant|>\nA1<|end|>\n
            // ... <|assistant|>\n  (an empty system message is left out)
            for (const auto& m : msgs) {
                if (m.role == "system" && m.content.empty()) continue;
                s += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
            }
            if (gen) s += "<|assistant|>\n";
            return s;
        case ChatFormat::Phi4:
            // Phi-4: <|im_start|>system<|im_sep|>S<|im_end|><|im_start|>user<|im_sep|>U1<|im_end|>
            // ... <|im_start|>assistant<|im_sep|>
            for (const auto& m : msgs) s += "<|im_start|>" + m.role + "<|im_sep|>" + m.content + "<|im_end|>";
            if (gen) s += "<|im_start|>assistant<|im_sep|>";
            return s;
        case ChatFormat::Granite:
            // Granite 3.x: <|start_of_role|>system<|end_of_role|>S<|end_of_text|>\n
            // <|start_of_role|>user<|end_of_role|>U1<|end_of_text|>\n ...
            // <|start_of_role|>assistant<|end_of_role|>
            for (const auto& m : msgs)
                s += "<|start_of_role|>" + m.role + "<|end_of_role|>" + m.content + "<|end_of_text|>\n";
            if (gen) s += "<|start_of_role|>assistant<|end_of_role|>";
            return s;
        case ChatFormat::DeepSeekR1: {
            // DeepSeek-R1(-Distill): <｜begin▁of▁sentence｜>S<｜User｜>U1<｜Assistant｜>A1
            // <｜end▁of▁sentence｜><｜User｜>U2<｜Assistant｜><think>\n
            // The system text (the last system message) follows BOS without markup; earlier answers
            // keep only what follows their </think>; the generation prompt opens the think block.
            const std::string eos = "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
            s = "<\xEF\xBD\x9C" "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
            std::string sys;
            for (const auto& m : msgs)
                if (m.role == "system") sys = m.content;
            s += sys;
            for (const auto& m : msgs) {
                if (m.role == "user") s += "<\xEF\xBD\x9CUser\xEF\xBD\x9C>" + m.content;
                if (m.role == "assistant")
                    s += "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>" + after_thinking(m.content, false) + eos;
            }
            if (gen) s += "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C><think>\n";
            return s;
        }
        case ChatFormat::None:
            for (const auto& m : msgs) s += m.content;
            return s;
    }
    return s;
}

// The text of an OpenAI message's content: a string, null, or parts of which the text ones count.
std::string content_text(const nlohmann::ordered_json& c) {
    if (c.is_string()) return c.get<std::string>();
    std::string out;
    if (c.is_array())
        for (const auto& part : c)
            if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
                part["text"].is_string())
                out += part["text"].get<std::string>();
    return out;
}

}  // namespace

std::string chat_render(const ChatTemplate& t, const ChatVars& v) {
    if (t.jinja) return chat_render_jinja(*t.jinja, v, t.specials);
    if (!v.tools.is_null())
        fail("chat tools: the model file has no chat template (tokenizer.chat_template), and the {} format "
             "has no way to show tools", chat_format_name(t.format));
    std::vector<ChatMessage> msgs;
    for (const auto& m : v.messages) {
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
            fail("chat messages: expected objects with a string role");
        msgs.push_back({m["role"].get<std::string>(), content_text(m.value("content", nlohmann::ordered_json()))});
    }
    return render_format(t, msgs, v.add_generation_prompt);
}

std::string chat_render(const ChatTemplate& t, const std::vector<ChatMessage>& msgs, bool gen) {
    if (!t.jinja) return render_format(t, msgs, gen);
    ChatVars v;
    for (const auto& m : msgs) v.messages.push_back({{"role", m.role}, {"content", m.content}});
    v.add_generation_prompt = gen;
    return chat_render(t, v);
}

std::string chat_template_describe(const ChatTemplate& t) {
    if (t.jinja) return "the model's tokenizer.chat_template";
    std::string s = std::string("the ") + chat_format_name(t.format) + " format";
    if (!t.jinja_error.empty()) s += " (the model's template is not used: " + t.jinja_error + ")";
    return s;
}

bool chat_add_special(const ChatTemplate& t, std::string_view text) {
    if (!t.jinja) return !chat_format_has_bos(t.format);
    return !(t.specials.bos && !t.specials.bos->empty() && text.substr(0, t.specials.bos->size()) == *t.specials.bos);
}

std::vector<std::string> chat_stop_texts(ChatFormat f) {
    switch (f) {
        case ChatFormat::Llama3: return {"<|eot_id|>", "<|end_of_text|>", "<|eom_id|>"};
        case ChatFormat::Llama2:
        case ChatFormat::MistralV1:
        case ChatFormat::MistralV3:
        case ChatFormat::MistralTekken:
        case ChatFormat::MistralV7: return {"</s>"};
        case ChatFormat::ChatML: return {"<|im_end|>", "<|endoftext|>"};
        case ChatFormat::Phi3: return {"<|end|>", "<|endoftext|>"};
        case ChatFormat::Phi4: return {"<|im_end|>", "<|endoftext|>"};
        case ChatFormat::Granite: return {"<|end_of_text|>"};
        case ChatFormat::DeepSeekR1:
            return {"<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"};
        case ChatFormat::None: return {};
    }
    return {};
}

std::vector<int32_t> chat_stop_tokens(ChatFormat f, const Tokenizer& tok) {
    std::vector<int32_t> ids;
    for (const auto& t : chat_stop_texts(f))
        if (auto id = tok.find_token(t)) ids.push_back(*id);
    return ids;
}

ChatFormat chat_format_detect(const Tokenizer& tok, const std::string& arch) {
    return chat_template_detect(tok, arch, {}).format;
}

std::string chat_render(ChatFormat f, const std::vector<ChatMessage>& msgs, bool gen) {
    ChatTemplate t;
    t.format = f;
    t.strip_thinking = f == ChatFormat::DeepSeekR1;
    return render_format(t, msgs, gen);
}

}  // namespace jitllm
