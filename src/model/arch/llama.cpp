// llama: Llama 2/3.x, Mistral, TinyLlama, TinyStories. RMSNorm, RoPE with adjacent pairs
// (llama.cpp's LLAMA_ROPE_TYPE_NORM for this arch), GQA, SwiGLU, tied or separate output,
// Llama-3.1 frequency factors from rope_freqs.weight when present.
#include "model/arch/arch.h"

namespace jitllm {

ModelConfig llama_parse_config(const GgufReader& g) {
    ModelConfig c = parse_common_config(g, "llama");
    c.rope_style = RopeStyle::Norm;
    return c;
}

void llama_family_bind_attention(WeightBinder& b, const ModelConfig& c, int i, LayerWeights& w) {
    const uint64_t dim = c.dim, q = c.q_dim(), kv = c.kv_dim();
    using B = WeightBinder;
    w.attn_norm = b.tensor(B::blk(i, "attn_norm"), {dim});
    if (c.fused_qkv) {
        w.attn_qkv = b.tensor(B::blk(i, "attn_qkv"), {dim, q + 2 * kv});
    } else {
        w.attn_q = b.tensor(B::blk(i, "attn_q"), {dim, q});
        w.attn_k = b.tensor(B::blk(i, "attn_k"), {dim, kv});
        w.attn_v = b.tensor(B::blk(i, "attn_v"), {dim, kv});
    }
    if (c.qkv_bias) {
        w.attn_q_bias = b.tensor(B::blk(i, "attn_q", "bias"), {q});
        w.attn_k_bias = b.tensor(B::blk(i, "attn_k", "bias"), {kv});
        w.attn_v_bias = b.tensor(B::blk(i, "attn_v", "bias"), {kv});
    }
    if (c.qk_norm) {
        w.attn_q_norm = b.tensor(B::blk(i, "attn_q_norm"), {uint64_t(c.head_dim)});
        w.attn_k_norm = b.tensor(B::blk(i, "attn_k_norm"), {uint64_t(c.head_dim)});
    }
    w.attn_output = b.tensor(B::blk(i, "attn_output"), {q, dim});
}

void llama_family_bind_layer(WeightBinder& b, const ModelConfig& c, int i, LayerWeights& w) {
    const uint64_t dim = c.dim, ff = c.hidden_dim;
    using B = WeightBinder;
    llama_family_bind_attention(b, c, i, w);
    w.ffn_norm = b.tensor(B::blk(i, "ffn_norm"), {dim});
    if (c.fused_gate_up) {
        w.ffn_up = b.tensor(B::blk(i, "ffn_up"), {dim, 2 * ff});
    } else {
        w.ffn_gate = b.tensor(B::blk(i, "ffn_gate"), {dim, ff});
        w.ffn_up = b.tensor(B::blk(i, "ffn_up"), {dim, ff});
    }
    w.ffn_down = b.tensor(B::blk(i, "ffn_down"), {ff, dim});
}

}  // namespace jitllm
