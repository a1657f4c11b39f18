// phi3: fused attn_qkv (rows Q, K, V) and fused ffn_up (gate rows, then up rows), NeoX pairing,
// separate output.weight. Sliding window is read (attention.sliding_window) and applied.
#include "model/arch/arch.h"

namespace jitllm {

ModelConfig phi3_parse_config(const GgufReader& g) {
    ModelConfig c = parse_common_config(g, "phi3");
    c.rope_style = RopeStyle::NeoX;
    c.fused_qkv = true;
    c.fused_gate_up = true;
    return c;
}

}  // namespace jitllm
