// Lowering of the mixture-of-experts FFN in the batch phase's GEMM list (gate moe.batch=grouped):
// a step's rows sorted by expert, each expert's rows multiplied with its matrices as tensor-core
// GEMM tiles (gemm.cu GROUPED), instead of each row reading its experts' rows (moe.cu's rows
// kernels: the small-step lists, and layers whose expert matrices gemm.cu cannot take):
//   ffn_norm + ffn_router + ffn_topk            -> ..__moe_router_rows (moe.cpp)
//   ffn_exp_gate_up                             -> ffn_exp_gate_up__moe_group (moe_group.cu MG=0)
//   ffn_exp_gate_up + ffn_exp_act               -> ..__gemm_mma_grouped_<type> (EPI=2, exp_hb in group order)
//   ffn_shexp_gate_up + ffn_shexp_act           -> the plain GEMM (hb)
//   ffn_exp_down                                -> ..__gemm_mma_grouped_<type> (scratch moe_y, group order)
//   ffn_shexp_down                              -> the plain GEMM (tmp)
//   ffn_exp_down [+ ffn_shexp_down] [+ ffn_residual] -> ..__moe_combine (moe_group.cu MG=1)
// Scratch: moe_group (the tile count, the tile list, the entries in group order, each entry's
// position; sized for the plan's rows), moe_y (the experts' down products, rows x K rows of DIM).
// Bytes: which experts a step uses is known only on the device, so each grouped GEMM counts every
// expert's matrices once (bytes_fixed); where a step leaves experts without a row, the profiler's
// bytes are too high by their share.
#include "backends/cuda/lowering/lowering.h"

#include "core/error.h"

namespace jitllm::lowering {

namespace {

// Byte offsets in the moe_group scratch for `tiles` tiles and `entries` entries: the tile count
// (16 bytes with its padding), the tiles (16 bytes each), the entries in group order, their positions.
struct GroupLayout {
    uint64_t ent = 0, pos = 0, bytes = 0;
};
GroupLayout group_layout(int tiles, int entries) {
    GroupLayout g;
    g.ent = 16 + 16 * uint64_t(tiles);
    g.pos = g.ent + 4 * uint64_t(entries);
    g.bytes = g.pos + 4 * uint64_t(entries);
    return g;
}

KArg group_at(uint64_t off) {
    KArg a;
    a.kind = KArg::Kind::Scratch;
    a.scratch = "moe_group";
    a.offset = off;
    return a;
}

}  // namespace

GemmSpec Lowering::moe_gemm_spec(size_t i, bool down) const {
    const Task* gu = nullptr;
    const Task* dn = nullptr;
    for (const Task& x : *tasks_) {
        if (x.layer != t(i).layer) continue;
        if (x.kind == K::FfnExpGateUp) gu = &x;
        if (x.kind == K::FfnExpDown) dn = &x;
    }
    JITLLM_CHECK(gu && dn, "{}: a mixture-of-experts layer without gate/up or down experts", t(i).name);
    const GgmlType gt = gu->w[0]->type, dt = dn->w[0]->type;
    const int cc = d_.cc();
    const bool mma = g_.gemm_mma && gt != GgmlType::F32 && dt != GgmlType::F32 && gemm_mma_supported(gt, cc) &&
                     gemm_mma_supported(dt, cc);
    GemmSpec s;
    s.wtype = down ? dt : gt;
    s.cols = down ? c_.expert_ff : c_.dim;
    s.rows[0] = down ? c_.dim : c_.expert_ff;
    s.rows[1] = down ? 0 : c_.expert_ff;
    s.n_mat = down ? 1 : 2;
    s.epi = down ? 0 : 2;
    s.mma = mma ? 1 : 0;
    s.bm = mma && o_.moe_bm > 0 ? o_.moe_bm : 64;  // (SIMT: 64 only)
    s.grouped = down ? 2 : 1;
    s.group_k = c_.n_expert_used;
    s.groups = c_.n_expert;
    return s;
}

bool Lowering::moe_grouped_at(size_t i) const {
    if (!batch_ || small_ || !g_.moe_group) return false;
    const K k = t(i).kind;
    if (k == K::FfnNorm || k == K::FfnRouter || k == K::FfnTopk) return false;
    // the layer's expert matrices: one type for gate and up, rows of whole blocks, 32-column K steps
    for (const Task& x : *tasks_) {
        if (x.layer != t(i).layer || (x.kind != K::FfnExpGateUp && x.kind != K::FfnExpDown)) continue;
        const GgmlType wt = x.w[0]->type;
        const int cols = int(x.w[0]->cols), blk = int(type_traits(wt).block_size);
        if (!gemm_type_supported(wt) || cols % 32 != 0 || cols % blk != 0) return false;
        if (x.kind == K::FfnExpGateUp && x.w[1]->type != wt) return false;
    }
    return true;
}

size_t Lowering::lower_moe_grouped_at(size_t i) {
    const Task& a = t(i);
    const int R = std::max(1, p_.batch_rows);
    switch (a.kind) {
        case K::FfnExpGateUp: {
            JITLLM_CHECK(is(i + 1, K::FfnExpAct), "{} must precede ffn_exp_act", a.name);
            const GemmSpec s = moe_gemm_spec(i, false);
            moe_group_list(i, s);
            moe_gemm({i, i + 1}, s, weight(a.w[0]), weight(a.w[1]), slot(Slot::Xb), slot(Slot::ExpHb));
            return 2;
        }
        case K::FfnShexpGateUp: {  // a plain matrix pair: the batch phase's GEMM, SwiGLU into hb
            JITLLM_CHECK(is(i + 1, K::FfnShexpAct), "{} must precede ffn_shexp_act", a.name);
            JITLLM_CHECK(a.w[0]->type == a.w[1]->type, "{}: gate and up of different types", a.name);
            Gemv g;
            g.w = {a.w[0], a.w[1]};
            g.w_off = {0, 0};
            g.rows = {c_.shared_expert_ff, c_.shared_expert_ff};
            swiglu_out(g);
            product({i, i + 1}, g);
            return 2;
        }
        case K::FfnExpDown: {
            const auto [idx, shared, resid] = moe_down_group(i);
            const GemmSpec s = moe_gemm_spec(i, true);
            const size_t y_bytes = size_t(R) * size_t(c_.n_expert_used) * size_t(c_.dim) * 4;
            s_.scratch["moe_y"] = std::max(s_.scratch["moe_y"], y_bytes);
            moe_gemm({i}, s, weight(a.w[0]), null(), slot(Slot::ExpHb), scratch("moe_y"));
            if (shared) {  // the shared expert's down product into tmp, which the combine reads
                Gemv g;
                g.w = {t(i + 1).w[0]};
                g.w_off = {0};
                g.rows = {c_.dim};
                g.x = Slot::Hb;
                g.y = {Slot::Tmp};
                product({i + 1}, g);
            }
            moe_combine(idx, s, shared, resid);
            return idx.size();
        }
        default:
            break;
    }
    JITLLM_CHECK(false, "task {} has no grouped lowering on its own: it runs with the tasks before it", a.name);
}

void Lowering::moe_group_list(size_t i, const GemmSpec& s) {
    const int R = std::max(1, p_.batch_rows), NE = c_.n_expert, K = c_.n_expert_used;
    const GroupLayout gl = group_layout(gemm_group_tiles(s, R), R * K);
    s_.scratch["moe_group"] = std::max(s_.scratch["moe_group"], size_t(gl.bytes));
    // as many warps as keep the per-warp histograms within 48 KiB (32 at most)
    const int warps = std::clamp(((48 << 10) / 4 - 65) / NE - 3, 1, 32);
    Variant v("cuda/moe_group.cu", "");
    v.set("MG", 0).set("NE", NE).set("K", K).set("BM", s.bm).set("WARPS", warps);
    auto& k = add({i}, "moe_group", v);
    k.grid = Dim3(1);
    k.block = Dim3(unsigned(32 * warps));
    k.smem = unsigned(4 * ((warps + 3) * NE + 65));
    k.args = {slot(Slot::ExpIds), group_at(0), group_at(gl.ent), group_at(gl.pos), rows_arg()};
    k.flops = 0;
    k.bytes = uint64_t(K) * 12 + uint64_t(K) * 16 / uint64_t(s.bm);  // ids, entries, positions; tiles
    k.bytes_fixed = uint64_t(NE) * 16;                                // an expert's partial tile
}

void Lowering::moe_gemm(std::vector<size_t> idx, const GemmSpec& s, KArg w0, KArg w1, KArg x, KArg y) {
    const int R = std::max(1, p_.batch_rows);
    const std::string algo =
        std::string("gemm_") + (s.mma ? "mma_" : "simt_") + "grouped_" + lowercase(type_name(s.wtype));
    auto& k = add(std::move(idx), algo, gemm_variant(s, ""));
    const GemmLaunch l = gemm_launch(s, R);
    k.block = l.block;
    k.smem = l.smem;
    k.grid = l.grid;
    k.rows_add = s.groups;  // grid.x: the group list's bound for the step's rows (gemm_group_tiles)
    rows_grid(k, 0, s.group_k, s.bm);
    JITLLM_CHECK(k.grid.x == l.grid.x && k.grid_for_rows(1).x == gemm_launch(s, 1).grid.x,
                 "{}: grid {} against the group list's {} tiles", k.symbol, k.grid.x, l.grid.x);
    const GroupLayout gl = group_layout(gemm_group_tiles(s, R), R * s.group_k);
    k.args = {w0, w1, null(), null(), null(), null(), y, null(), null(), x, null(), rows_arg(),
              group_at(0), s.grouped == 1 ? group_at(gl.ent) : null()};
    k.bytes_fixed = gemm_bytes(s, 0);  // every expert's matrices (see the header)
    k.bytes = gemm_bytes(s, 1) - k.bytes_fixed;
    k.flops = gemm_flops(s, 1);
}

void Lowering::moe_combine(const std::vector<size_t>& idx, const GemmSpec& s, bool shared, bool resid) {
    const int R = std::max(1, p_.batch_rows), K = c_.n_expert_used, D = c_.dim;
    const GroupLayout gl = group_layout(gemm_group_tiles(s, R), R * K);
    Variant v("cuda/moe_group.cu", "");
    v.set("MG", 1).set("NE", c_.n_expert).set("K", K).set("DIM", D).set("NR", c_.n_expert + (c_.shared_expert_ff > 0));
    v.set("SHARED", int(shared)).set("RESID", int(resid));
    if (resid) v.set("RES_SCALE", fstr(t(idx.back()).scale));
    auto& k = add(idx, "moe_combine", v);
    k.grid = Dim3(unsigned((D + 1023) / 1024), unsigned(R));
    k.block = Dim3(256);
    rows_grid(k, 1);
    k.args = {scratch("moe_y"), group_at(gl.pos), slot(Slot::ExpW), slot(Slot::Router),
              shared ? slot(Slot::Tmp) : null(), slot(resid ? Slot::X : Slot::Tmp)};
    k.flops = 2 * uint64_t(D) * uint64_t(K + int(shared) + int(resid));
    k.bytes = 4 * uint64_t(D) * uint64_t(K + int(shared) + 1 + int(resid)) + 8 * uint64_t(K);
}

}  // namespace jitllm::lowering
