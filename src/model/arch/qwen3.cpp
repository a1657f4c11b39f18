// qwen3: Llama block + per-head RMSNorm on Q and K (attn_q_norm, attn_k_norm, applied before
// RoPE), NeoX pairing, head_dim from attention.key_length (n_head * head_dim may differ from dim).
#include "model/arch/arch.h"

namespace jitllm {

ModelConfig qwen3_parse_config(const GgufReader& g) {
    ModelConfig c = parse_common_config(g, "qwen3");
    c.rope_style = RopeStyle::NeoX;
    c.qk_norm = true;
    return c;
}

}  // namespace jitllm
