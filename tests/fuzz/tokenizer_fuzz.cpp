// libFuzzer target: arbitrary bytes as text through every tokenizer kind (fuzz_vocabs.h), and as
// token ids through detokenize. Input: byte 0 picks the vocabulary and the flags, the rest is
// the text. Checks: every encoded id is inside the vocabulary; pieces and detokenization of any
// ids either work or throw jitllm::Error (out-of-range ids), never crash.
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "fuzz_vocabs.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    (void)jitllm::fuzz::vocabs();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace jitllm;
    if (size < 1) return 0;
    const auto& all = fuzz::vocabs();
    const uint8_t sel = data[0];
    const Tokenizer& tok = *all[(sel & 0x0f) % all.size()].tok;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        const std::vector<int32_t> ids = tok.encode(text, sel & 0x10, sel & 0x20);
        for (int32_t id : ids)
            if (id < 0 || id >= tok.n_vocab()) __builtin_trap();  // encode made an invalid id
        (void)tok.detokenize(ids, sel & 0x40, sel & 0x80);
        for (int32_t id : ids) (void)tok.token_to_piece(id, sel & 0x40);
    } catch (const Error&) {
    }
    // The same bytes as little-endian token ids (most out of range): an Error or text.
    std::vector<int32_t> raw((size - 1) / 4);
    if (!raw.empty()) std::memcpy(raw.data(), data + 1, raw.size() * 4);
    try {
        (void)tok.detokenize(raw, sel & 0x40, sel & 0x80);
    } catch (const Error&) {
    }
    for (int32_t& id : raw) id = int32_t(uint32_t(id) % uint32_t(tok.n_vocab()));
    (void)tok.detokenize(raw, sel & 0x40, sel & 0x80);
    for (int32_t id : raw) {
        (void)tok.token_to_piece(id, sel & 0x80);
        (void)tok.token_text(id);
        (void)tok.token_type(id);
        (void)tok.is_eog(id);
    }
    return 0;
}
