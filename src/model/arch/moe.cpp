// The mixture-of-experts FFN binding shared by qwen2moe and qwen3moe: the router, the experts
// stacked along a third dimension ([cols, rows, n_expert] in ggml order), the optional shared
// expert. The experts may have any supported weight type; the router and norms are F32 (checked
// in model.cpp).
#include "model/arch/arch.h"

namespace jitllm {

void moe_bind_layer(WeightBinder& b, const ModelConfig& c, int i, LayerWeights& w) {
    const uint64_t dim = c.dim, ff = c.expert_ff, ne = c.n_expert;
    using B = WeightBinder;
    llama_family_bind_attention(b, c, i, w);
    w.ffn_norm = b.tensor(B::blk(i, "ffn_norm"), {dim});
    w.ffn_gate_inp = b.tensor(B::blk(i, "ffn_gate_inp"), {dim, ne});
    w.ffn_gate_exps = b.tensor(B::blk(i, "ffn_gate_exps"), {dim, ff, ne});
    w.ffn_up_exps = b.tensor(B::blk(i, "ffn_up_exps"), {dim, ff, ne});
    w.ffn_down_exps = b.tensor(B::blk(i, "ffn_down_exps"), {ff, dim, ne});
    if (c.shared_expert_ff > 0) {
        const uint64_t sff = c.shared_expert_ff;
        w.ffn_gate_inp_shexp = b.tensor(B::blk(i, "ffn_gate_inp_shexp"), {dim});
        w.ffn_gate_shexp = b.tensor(B::blk(i, "ffn_gate_shexp"), {dim, sff});
        w.ffn_up_shexp = b.tensor(B::blk(i, "ffn_up_shexp"), {dim, sff});
        w.ffn_down_shexp = b.tensor(B::blk(i, "ffn_down_shexp"), {sff, dim});
    }
}

}  // namespace jitllm
