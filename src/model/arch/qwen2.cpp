// qwen2: Qwen2/2.5 and DeepSeek-R1-Distill-Qwen. Llama block + Q/K/V biases, NeoX RoPE pairing
// (llama.cpp LLAMA_ROPE_TYPE_NEOX for this arch); rope base read from the file.
#include "model/arch/arch.h"

namespace jitllm {

ModelConfig qwen2_parse_config(const GgufReader& g) {
    ModelConfig c = parse_common_config(g, "qwen2");
    c.rope_style = RopeStyle::NeoX;
    c.qkv_bias = true;
    return c;
}

}  // namespace jitllm
