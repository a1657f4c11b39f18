// libFuzzer target: arbitrary conversations through the chat-format renderer. Input: byte 0 picks
// the vocabulary (which decides the format) and the flags, byte 1 the architecture, byte 2 a
// format for the fixed-format API; the rest, split at NUL bytes, is a chat template text (as
// tokenizer.chat_template would hold) and then role, content, role, content, ... The rendering is
// tokenized with special-token parsing, as `jitllm run --instruct` does. Any jitllm::Error is
// accepted; a crash, sanitizer report, other exception or out-of-vocab id is a finding.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_vocabs.h"
#include "runtime/chat_format.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    (void)jitllm::fuzz::vocabs();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace jitllm;
    if (size < 3) return 0;
    const auto& all = fuzz::vocabs();
    const auto& v = all[(data[0] & 0x0f) % all.size()];
    const bool gen = data[0] & 0x10;
    static const char* const kArchs[] = {"llama", "qwen2", "qwen3", "phi3", "granite", "", "x"};
    const std::string arch = (data[1] & 0x80) ? v.arch : kArchs[data[1] % 7];
    const auto fixed = ChatFormat(data[2] % (int(ChatFormat::DeepSeekR1) + 1));

    std::vector<std::string> parts(1);
    for (size_t i = 3; i < size; ++i) {
        if (data[i] == 0) parts.emplace_back();
        else parts.back() += char(data[i]);
    }
    const std::string jinja = parts[0];
    std::vector<ChatMessage> msgs;
    for (size_t i = 1; i + 1 < parts.size(); i += 2) msgs.push_back({parts[i], parts[i + 1]});
    if (parts.size() % 2 == 0) msgs.push_back({"user", parts.back()});

    auto check_ids = [&](const std::vector<int32_t>& ids) {
        for (int32_t id : ids)
            if (id < 0 || id >= v.tok->n_vocab()) __builtin_trap();
    };
    try {
        const ChatTemplate t = chat_template_detect(*v.tok, arch, jinja);
        const std::string text = chat_render(t, msgs, gen);
        check_ids(v.tok->encode(text, !chat_format_has_bos(t.format), true));
        check_ids(chat_stop_tokens(t.format, *v.tok));
        (void)chat_format_name(t.format);
    } catch (const Error&) {
    }
    try {
        (void)chat_render(fixed, msgs, gen);  // rendering only: one encode per input is enough
        (void)chat_stop_texts(fixed);
        (void)chat_format_detect(*v.tok, arch);
    } catch (const Error&) {
    }
    return 0;
}
