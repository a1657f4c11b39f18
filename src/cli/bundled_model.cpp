// The bundled model, models/stories260K.gguf, linked into the binary as data, so that `jitllm`
// with no model runs wherever the binary is (the build tree, an install prefix, a copy).
#include <cstdint>

#include "cli/commands.h"
#include "gguf/gguf_reader.h"

// JITLLM_BUNDLED_MODEL is the file's absolute path (CMakeLists.txt, which also rebuilds this
// object when the file changes).
asm(".section .rodata.jitllm_bundled_model,\"a\",%progbits\n"
    ".balign 64\n"
    ".globl jitllm_bundled_model_begin\n"
    "jitllm_bundled_model_begin:\n"
    ".incbin \"" JITLLM_BUNDLED_MODEL "\"\n"
    ".globl jitllm_bundled_model_end\n"
    "jitllm_bundled_model_end:\n"
    ".previous\n");
extern "C" const uint8_t jitllm_bundled_model_begin[], jitllm_bundled_model_end[];

namespace jitllm::cli {

const std::string& bundled_model_name() {
    static const std::string name = [] {
        std::string n = "<bundled>/stories260K.gguf";
        register_embedded_gguf(n, jitllm_bundled_model_begin,
                               size_t(jitllm_bundled_model_end - jitllm_bundled_model_begin));
        return n;
    }();
    return name;
}

namespace {
// registered at start-up, so that the name works wherever a model file is taken (`inspect`, -m)
[[maybe_unused]] const std::string& registered_at_start = bundled_model_name();
}  // namespace

}  // namespace jitllm::cli
