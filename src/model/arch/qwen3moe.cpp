// qwen3moe: Qwen3-30B-A3B, Qwen3-Coder-30B-A3B, Qwen3-235B-A22B. The qwen3 attention (per-head
// q/k RMS norm, NeoX pairing, head_dim from attention.key_length) with a mixture-of-experts FFN:
// softmax over all experts, the top expert_used_count renormalised to sum 1; no shared expert.
#include "model/arch/arch.h"

namespace jitllm {

ModelConfig qwen3moe_parse_config(const GgufReader& g) {
    ModelConfig c = parse_common_config(g, "qwen3moe");
    c.rope_style = RopeStyle::NeoX;
    c.qk_norm = true;
    parse_moe_config(g, "qwen3moe", false, c);
    c.expert_weights_norm = true;
    return c;
}

}  // namespace jitllm
