// libFuzzer target: arbitrary bytes through GgufReader::from_bytes; when they parse, through
// gguf_describe (jitllm inspect), the tokenizer loader with a short encode/decode, and the model
// loader. A jitllm::Error is the expected outcome for bad input; a crash, a sanitizer report, any
// other exception or an allocation over -malloc_limit_mb is a finding.
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace jitllm;
    std::unique_ptr<GgufReader> g;
    try {
        g = GgufReader::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz.gguf");
    } catch (const Error&) {
        return 0;
    }
    (void)gguf_describe(*g, 4);
    try {
        auto tok = Tokenizer::from_gguf(*g);
        const auto ids =
            tok->encode("Hello world, <s> \xC3\xBCnicode 123 \xE2\x96\x81x", true, true);
        for (int32_t id : ids)
            if (id < 0 || id >= tok->n_vocab()) __builtin_trap();  // encode made an invalid id
        (void)tok->detokenize(ids, true, true);
        for (int32_t id : ids) (void)tok->token_to_piece(id, false);
    } catch (const Error&) {
    }
    try {
        (void)load_model(std::move(g));
    } catch (const Error&) {
    }
    return 0;
}
