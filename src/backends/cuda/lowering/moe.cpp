// Lowering of the mixture-of-experts FFN (moe.cu), decode / prefill and the batch phase alike:
//   ffn_norm + ffn_router + ffn_topk                        -> ffn_norm_router_topk__moe_router
//   ffn_exp_gate_up + ffn_exp_act [+ ffn_shexp_gate_up + ffn_shexp_act] -> ..__moe_gate_up_<type>
//   ffn_exp_down [+ ffn_shexp_down] [+ ffn_residual]        -> ..__moe_down_<type>
// In the batch phase each row chooses its own experts: the grids gain a dimension over the rows,
// and each row reads its experts' rows; the GEMM list groups the rows by expert instead (gate
// moe.batch=grouped, moe_batch.cpp) and keeps only the router here.
#include "backends/cuda/lowering/lowering.h"

#include "core/error.h"

namespace jitllm::lowering {

namespace {

int row_bytes_of(GgmlType t, int cols) {
    const auto& tt = type_traits(t);
    return int(int64_t(cols) / tt.block_size * int64_t(tt.type_size));
}

// a staged row of moe.cu: its head offset (< 16) and 4 bytes of slack, rounded to 16
int stage_slot(int rb) { return (rb + 35) / 16 * 16; }

// warps a block, as many as fit 96 KiB of staging (at least 1, at most 8)
int warps_for(int stage) { return std::clamp((96 << 10) / std::max(stage, 1), 1, 8); }

// moe.cu's shared memory for n values of x quantized to Q8_0 blocks (values, scales, sums), or 0
// where no weight type of the kernel multiplies quantized x (XQ_TYPE)
int xq_area(int n, bool quantized) { return quantized ? (n + n / 4 + 15) / 16 * 16 : 0; }
bool xq_type(GgmlType t) { return t == GgmlType::Q4_0 || t == GgmlType::Q8_0; }

}  // namespace

bool Lowering::moe_at(size_t i) const {
    return is_moe_task(t(i).kind) || (t(i).kind == K::FfnNorm && o_.fuse && is(i + 1, K::FfnRouter));
}

Lowering::MoeDownGroup Lowering::moe_down_group(size_t i) const {
    MoeDownGroup g{{i}};
    g.shared = is(i + 1, K::FfnShexpDown);
    if (g.shared) g.idx.push_back(i + 1);
    g.resid = o_.fuse && is(g.idx.back() + 1, K::FfnResidual);
    if (g.resid) g.idx.push_back(g.idx.back() + 1);
    return g;
}

size_t Lowering::lower_moe_at(size_t i) {
    if (moe_grouped_at(i)) return lower_moe_grouped_at(i);  // the batch phase's GEMM list (moe_batch.cpp)
    const Task& a = t(i);
    const int R = std::max(1, p_.batch_rows);
    const int K = c_.n_expert_used, FF = c_.expert_ff, SFF = c_.shared_expert_ff;
    const int NR = c_.n_expert + (SFF > 0);
    JITLLM_CHECK(K >= 1 && K <= 32, "moe.cu takes 1 to 32 experts a token, found {}", K);
    auto common = [&](Variant& v) {
        v.set("DIM", c_.dim).set("NE", c_.n_expert).set("NR", NR).set("K", K).set("FF", FF).set("SFF", SFF);
    };
    switch (a.kind) {
        case K::FfnNorm:
        case K::FfnRouter: {
            const bool norm = a.kind == K::FfnNorm;
            const Task& router = norm ? t(i + 1) : a;
            JITLLM_CHECK(is(i + (norm ? 2 : 1), K::FfnTopk), "{} must precede ffn_topk", router.name);
            const Task& topk = t(i + (norm ? 2 : 1));
            const int warps = o_.moe_router_warps;
            Variant v("cuda/moe.cu", "");
            v.set("MOE", 0).set("WARPS", warps).set("NORM", int(norm)).set("RENORM", int(topk.renorm));
            common(v);
            std::vector<size_t> idx{i, i + 1};
            if (norm) idx.push_back(i + 2);
            auto& k = add(idx, batch_ ? "moe_router_rows" : "moe_router", v);
            k.grid = Dim3(unsigned((NR + warps - 1) / warps), unsigned(batch_ ? R : 1));
            k.block = Dim3(unsigned(32 * warps));
            k.smem = unsigned(c_.dim * 4);
            if (batch_) rows_grid(k, 1);
            k.args = {slot(Slot::X), weight(norm ? a.w[0] : nullptr), slot(Slot::Xb), weight(router.w[0]),
                      weight(router.w[1]), slot(Slot::Router), slot(Slot::ExpIds), slot(Slot::ExpW),
                      scratch("moe_tickets"), f32(norm ? a.eps : 0.0f)};
            s_.scratch["moe_tickets"] = std::max(s_.scratch["moe_tickets"], size_t(R) * 4);
            k.bytes = uint64_t(NR) * c_.dim * 4 + uint64_t(k.grid.x) * c_.dim * 4 * (norm ? 2 : 1) +
                      uint64_t(NR) * 4 + uint64_t(K) * 8;
            return idx.size();
        }
        case K::FfnExpGateUp: {
            JITLLM_CHECK(is(i + 1, K::FfnExpAct), "{} must precede ffn_exp_act", a.name);
            std::vector<size_t> idx{i, i + 1};
            const bool shared = is(i + 2, K::FfnShexpGateUp) && is(i + 3, K::FfnShexpAct);
            if (shared) idx.insert(idx.end(), {i + 2, i + 3});
            const GgmlType wt = a.w[0]->type, st = shared ? t(i + 2).w[0]->type : wt;
            JITLLM_CHECK(a.w[1]->type == wt && (!shared || t(i + 2).w[1]->type == st),
                         "{}: gate and up of different types", a.name);
            const int rb = row_bytes_of(wt, c_.dim), rbs = row_bytes_of(st, c_.dim);
            const int stage = 2 * stage_slot(std::max(rb, shared ? rbs : 0));
            const int warps = warps_for(stage);
            Variant v("cuda/moe.cu", "");
            v.set("MOE", 1).set("WARPS", warps).set("WTYPE", wtype_define(wt)).set("SWTYPE", wtype_define(st))
                .set("STAGE", stage);
            common(v);
            if (!shared) v.set("SFF", 0);
            auto& k = add(idx, std::string(batch_ ? "moe_gate_up_rows_" : "moe_gate_up_") + lowercase(type_name(wt)), v);
            const int width = std::max(FF, shared ? SFF : 0);
            k.grid = Dim3(unsigned((width + warps - 1) / warps), unsigned(K + shared), unsigned(batch_ ? R : 1));
            k.block = Dim3(unsigned(32 * warps));
            k.smem = unsigned(xq_area(c_.dim, xq_type(wt) || (shared && xq_type(st))) + warps * stage);
            if (batch_) rows_grid(k, 2);
            const Task* sh = shared ? &t(i + 2) : nullptr;
            k.args = {slot(Slot::Xb), slot(Slot::ExpIds), weight(a.w[0]), weight(a.w[1]), slot(Slot::ExpHb),
                      weight(sh ? sh->w[0] : nullptr), weight(sh ? sh->w[1] : nullptr), slot(Slot::Hb)};
            k.bytes = uint64_t(K) * 2 * FF * uint64_t(rb) + (shared ? uint64_t(2) * SFF * uint64_t(rbs) : 0) +
                      uint64_t(c_.dim) * 4 + uint64_t(K) * FF * 4 + (shared ? uint64_t(SFF) * 4 : 0);
            return idx.size();
        }
        case K::FfnExpDown: {
            const auto [idx, shared, resid] = moe_down_group(i);
            const GgmlType wt = a.w[0]->type, st = shared ? t(i + 1).w[0]->type : wt;
            const int rb = row_bytes_of(wt, FF), rbs = shared ? row_bytes_of(st, SFF) : 0;
            const int stage = K * stage_slot(rb) + (shared ? stage_slot(rbs) : 0);
            const int warps = warps_for(stage);
            Variant v("cuda/moe.cu", "");
            v.set("MOE", 2).set("WARPS", warps).set("WTYPE", wtype_define(wt)).set("SWTYPE", wtype_define(st))
                .set("STAGE", stage).set("RESID", int(resid));
            common(v);
            if (!shared) v.set("SFF", 0);
            if (resid) v.set("RES_SCALE", fstr(t(idx.back()).scale));
            auto& k = add(idx, std::string(batch_ ? "moe_down_rows_" : "moe_down_") + lowercase(type_name(wt)), v);
            k.grid = Dim3(unsigned((c_.dim + warps - 1) / warps), unsigned(batch_ ? R : 1));
            k.block = Dim3(unsigned(32 * warps));
            k.smem = unsigned(xq_area(K * FF, xq_type(wt)) + xq_area(SFF, shared && xq_type(st)) + warps * stage);
            if (batch_) rows_grid(k, 1);
            const Task* sh = shared ? &t(i + 1) : nullptr;
            k.args = {slot(Slot::ExpHb), slot(Slot::ExpIds), slot(Slot::ExpW), weight(a.w[0]), slot(Slot::Hb),
                      slot(Slot::Router), weight(sh ? sh->w[0] : nullptr), slot(resid ? Slot::X : Slot::Tmp)};
            k.bytes = uint64_t(K) * c_.dim * uint64_t(rb) + (shared ? uint64_t(c_.dim) * rbs : 0) +
                      uint64_t(K) * FF * 4 + uint64_t(c_.dim) * (resid ? 8 : 4);
            return idx.size();
        }
        default:
            break;
    }
    JITLLM_CHECK(false, "task {} has no CUDA lowering on its own: moe.cu runs it with the tasks before it", a.name);
}

}  // namespace jitllm::lowering
