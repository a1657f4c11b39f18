// The Qwen family. Every one is a Llama block with NeoX RoPE pairing (llama.cpp
// LLAMA_ROPE_TYPE_NEOX for these archs) and the rope base read from the file; the two
// generations differ in their attention:
// - qwen2: Qwen2/2.5 and DeepSeek-R1-Distill-Qwen. Q/K/V biases.
// - qwen3: per-head RMSNorm on Q and K (attn_q_norm, attn_k_norm, applied before RoPE),
//   head_dim from attention.key_length (n_head * head_dim may differ from dim).
// Their mixture-of-experts FFN variants keep that attention:
// - qwen2moe: Qwen1.5-MoE / Qwen2-MoE. Softmax over all experts, the top expert_used_count
//   kept without renormalising, plus a shared expert gated by sigmoid(ffn_gate_inp_shexp . x).
// - qwen3moe: Qwen3-30B-A3B, Qwen3-Coder-30B-A3B, Qwen3-235B-A22B. Softmax over all experts,
//   the top expert_used_count renormalised to sum 1; no shared expert.
#include "model/arch/arch.h"

namespace jitllm {
namespace {

// The common keys under `arch` plus the attention of Qwen2 (qwen3 false) or Qwen3 (qwen3 true).
ModelConfig qwen_attention_config(const GgufReader& g, const char* arch, bool qwen3) {
    ModelConfig c = parse_common_config(g, arch);
    c.rope_style = RopeStyle::NeoX;
    c.qkv_bias = !qwen3;
    c.qk_norm = qwen3;
    return c;
}

}  // namespace

ModelConfig qwen2_parse_config(const GgufReader& g) { return qwen_attention_config(g, "qwen2", false); }

ModelConfig qwen3_parse_config(const GgufReader& g) { return qwen_attention_config(g, "qwen3", true); }

ModelConfig qwen2moe_parse_config(const GgufReader& g) {
    ModelConfig c = qwen_attention_config(g, "qwen2moe", false);
    parse_moe_config(g, "qwen2moe", true, c);
    c.hidden_dim = c.shared_expert_ff;  // the dense FFN slots hold the shared expert
    return c;
}

ModelConfig qwen3moe_parse_config(const GgufReader& g) {
    ModelConfig c = qwen_attention_config(g, "qwen3moe", true);
    parse_moe_config(g, "qwen3moe", false, c);
    c.expert_weights_norm = true;
    return c;
}

}  // namespace jitllm
