// qwen2moe: Qwen1.5-MoE / Qwen2-MoE. The qwen2 attention (Q/K/V biases, NeoX pairing) with a
// mixture-of-experts FFN: softmax over all experts, the top expert_used_count kept without
// renormalising, plus a shared expert gated by sigmoid(ffn_gate_inp_shexp . x).
#include "model/arch/arch.h"

namespace jitllm {

ModelConfig qwen2moe_parse_config(const GgufReader& g) {
    ModelConfig c = parse_common_config(g, "qwen2moe");
    c.rope_style = RopeStyle::NeoX;
    c.qkv_bias = true;
    parse_moe_config(g, "qwen2moe", true, c);
    c.hidden_dim = c.shared_expert_ff;  // the dense FFN slots hold the shared expert
    return c;
}

}  // namespace jitllm
