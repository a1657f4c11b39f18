// gemv.xq=producer: the links between a gemv and the kernel before it that quantizes its x (a SwiGLU
// gemv, decode attention, and with gemv.xq_norm the embedding or a residual gemv).
#include "backends/cuda/lowering/lowering.h"

#include <algorithm>

#include "quant/quant.h"

namespace jitllm::lowering {

void Lowering::gemv_xq_links(KernelStep& k, const Gemv& g, const GemvShape& s) {
    const bool q8x = act_q8_type(s.type);
    const bool ctype_ok = s.type == GgmlType::Q4_0 || g_.gemv_xq_all;
    const bool block_major = !k.variant.has("WARP_MAJOR");
    const size_t at = out_->size() - 1;
    // this gemv's x quantized by the SwiGLU gemv just before it, or by decode attention
    const bool xq_consumer = g_.gemv_xq && ctype_ok && !batch_ && s.bulk && s.wsplit && q8x && !s.xrows &&
                             !g.norm_w && !k.variant.has("XQ_IN");
    if (xq_consumer && xq_prev_ && xq_prev_->at + 1 == at && xq_prev_->y == g.x && xq_prev_->rows == s.cols)
        xq_link((*out_)[at - 1], k, *xq_prev_, s.type);
    else if (xq_consumer && at > 0 && g.x == Slot::Att && o_.attn_xq && s.cols == c_.n_heads * c_.head_dim)
        attn_xq_link((*out_)[at - 1], k, s.cols, s.type);
    xq_prev_.reset();
    if (s.bulk && s.warp && !batch_ && !s.xrows && g.epi == 2 && block_major && !g.argmax && g.y.size() == 1)
        xq_prev_ = XqProducer{at, g.y[0], g.rows[0], s.rpb};
    // gemv.xq_norm: a normed gemv (q/k/v, gate/up, the output head) whose x, the residual stream,
    // the kernel just before it wrote (the embedding, or a residual gemv whose block pass is one
    // group of 32 rows: 8B attn_output and ffn_down) takes x quantized from there
    const bool norm_consumer = g_.gemv_xq && o_.gemv_xq_norm && ctype_ok && !batch_ && s.bulk && s.wsplit && q8x &&
                               !s.xrows && g.norm_w && !k.variant.has("XQ_IN");
    if (norm_consumer && norm_prev_ && norm_prev_->at + 1 == at && norm_prev_->y == g.x && norm_prev_->rows == s.cols)
        xq_norm_link((*out_)[at - 1], k, *norm_prev_, s.type, g.norm_w);
    norm_prev_.reset();
    if (s.bulk && s.warp && !batch_ && !s.xrows && g.epi == 1 && s.n_mat == 1 && block_major && !g.argmax &&
        s.rpb == 32 && s.out_rows % 32 == 0 && !k.variant.has("XQ_OUT"))
        norm_prev_ = NormProducer{at, g.y[0], s.out_rows, false};
}

void Lowering::xq_norm_link(KernelStep& p, KernelStep& c, const NormProducer& x, GgmlType ctype, const WeightTensor* nw) {
    const int planes = int(ctype == GgmlType::Q4_0);
    if (x.embed) {
        if (p.grid.y != 1) return;
        p.variant.set("XQ_OUT", 1).set("XQ_PLANES", planes);
        p.args[3] = weight(nw);
        p.args[4] = xq_consume(c, "norm_xq", x.rows, ctype, 0, true);
        return;
    }
    const int np = (x.rows + int(p.grid.x) * 32 - 1) / (int(p.grid.x) * 32);
    if (np > 4) return;
    p.variant.set("XQ_OUT", 1).set("XQ_NORM", 1).set("XQ_CL", 1).set("XQ_NP", np).set("XQ_C", x.rows)
        .set("XQ_PLANES", planes);
    p.args[10] = weight(nw);                                            // norm_w: the consumer's
    p.args[7] = xq_consume(c, "norm_xq", x.rows, ctype, 0, true);  // y1
}

void Lowering::xq_link(KernelStep& p, KernelStep& c, const XqProducer& x, GgmlType ctype) {
    if (x.rpb <= 0 || 32 % x.rpb != 0 || x.rows % 32 != 0) return;
    // a block's pass of 32 rows: a group a pass; 16 (gate/up): a cluster of 2 blocks a group of
    // each pass (16 + 16 rows, the other block's by asynchronous stores into the leader's shared
    // memory)
    const int cl = 32 / x.rpb;
    if (cl > 2 || int(p.grid.x) % cl != 0) return;
    const int per_pass = int(p.grid.x) * x.rpb;
    const int np = (x.rows + per_pass - 1) / per_pass;
    if (np > 8) return;
    if (cl > 1 && d_.clusters_1pm[size_t(cl)] > 0 && d_.clusters_1pm[size_t(cl)] * cl < int(p.grid.x)) return;
    p.variant.set("XQ_OUT", 1).set("XQ_CL", cl).set("XQ_NP", np).set("XQ_C", x.rows)
        .set("XQ_PLANES", int(ctype == GgmlType::Q4_0));
    if (cl > 1) {
        p.cluster = Dim3(unsigned(cl), 1, 1);
        // the kernel before it (8B Q4_0: attn_output on 76 of 132 SMs) in clusters of 2 as well,
        // which it does not use: its blocks then hold whole TPCs and the pairs land on the free
        // ones; not where gemv.cluster.KIND names that kernel's kind
        if (x.at > 0) {
            KernelStep& before = (*out_)[x.at - 1];
            const auto kind = task_kind_name(t(size_t(before.tasks[0])).kind);
            if (before.variant.source == "cuda/gemv.cu" && before.cluster.x * before.cluster.y * before.cluster.z == 1 &&
                before.grid.x % 2 == 0 && int(before.grid.x) < d_.sm_count && before.layer == p.layer &&
                !o_.gemv_cluster_for.count(std::string(kind)))
                before.cluster = Dim3(2, 1, 1);
        }
    }
    if (o_.gemv_xq_lag != 1) p.variant.set("XQ_LAG", o_.gemv_xq_lag);  // gemv.xq_lag
    p.args[7] = xq_consume(c, "gemv_xq", x.rows, ctype, 4);  // y1
}

KArg Lowering::xq_consume(KernelStep& c, const char* buf, int cols, GgmlType ctype, int pre, bool norm) {
    const uint64_t bytes = (uint64_t(cols) + uint64_t(cols / 32) * (norm ? 12 : 8) + 15) / 16 * 16;
    auto& sz = s_.scratch[buf];
    sz = std::max<uint64_t>(sz, bytes);
    c.variant.set("XQ_IN", 1);
    c.args[9] = scratch(buf);  // x
    xq_consumer_slots(c, ctype, pre);
    return scratch(buf);
}

void Lowering::attn_xq_link(KernelStep& a, KernelStep& c, int cols, GgmlType ctype) {
    if (a.tasks.empty() || t(size_t(a.tasks.back())).kind != K::Attn) return;
    if (t(size_t(a.tasks[0])).kind != K::Attn) return;
    const bool regs = a.variant.source == "cuda/attention_decode.cu" && g_.attn_split && !a.variant.has("BATCH");
    const bool tma = a.variant.source == "cuda/attention_decode_tma.cu";
    if (!regs && !tma) return;
    a.variant.set("XQ_OUT", 1).set("XQ_PLANES", int(ctype == GgmlType::Q4_0));
    a.args.back() = xq_consume(c, "attn_xq", cols, ctype, 3);  // xq (the kernels' last parameter)
}

void Lowering::xq_consumer_slots(KernelStep& c, GgmlType ctype, int pre) {
    const std::string kind(task_kind_name(t(size_t(c.tasks[0])).kind));
    if (pre <= 0 || ctype != GgmlType::Q4_0 || o_.gemv_early_slots > 0 || o_.gemv_early_slots_for.count(kind) ||
        !c.variant.has("BULK_PRE") || pre >= define_int(c, "BULK_S", 0))
        return;
    c.variant.set("BULK_PRE", pre);
}

}  // namespace jitllm::lowering
