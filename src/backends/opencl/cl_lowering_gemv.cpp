// The OpenCL lowering's products (cl_lowering.h): gemv.cl with its fusions (the norm before, the
// residual add, SwiGLU, the logit scale) and the mixture-of-experts tasks.
#include <algorithm>

#include "backends/opencl/cl_lowering.h"
#include "core/error.h"

namespace jitllm::cl_lowering {

namespace {

bool one_type(const std::vector<const WeightTensor*>& w) {
    return std::all_of(w.begin(), w.end(), [&](const WeightTensor* x) { return x->type == w[0]->type; });
}

int pow2_at_least(int n) {
    int p = 1;
    while (p < n) p *= 2;
    return p;
}

}  // namespace

Lowering::Gemv Lowering::Gemv::matrix(size_t m) const {
    Gemv g = *this;
    g.w = {w[m]};
    g.w_off = {w_off[m]};
    g.rows = {rows[m]};
    g.y = {y[m]};
    g.y_off = {y_off[m]};
    g.bias = bias.empty() ? std::vector<const WeightTensor*>{} : std::vector<const WeightTensor*>{bias[m]};
    return g;
}

Lowering::Gemv Lowering::product_of(size_t i) const {
    const Task& a = t(i);
    Gemv g;
    g.cols = int(a.w[0] ? a.w[0]->cols : a.w[1]->cols);
    switch (a.kind) {
        case K::AttnQkv:
            if (a.w[1] == nullptr) {  // fused attn_qkv: rows Q, then K, then V
                const uint64_t rb = a.w[0]->row_bytes;
                g.w = {a.w[0], a.w[0], a.w[0]};
                g.w_off = {0, uint64_t(c_.q_dim()) * rb, uint64_t(c_.q_dim() + c_.kv_dim()) * rb};
                g.rows = {c_.q_dim(), c_.kv_dim(), c_.kv_dim()};
            } else {
                g.w = {a.w[0], a.w[1], a.w[2]};
                g.w_off = {0, 0, 0};
                g.rows = {int(a.w[0]->rows), int(a.w[1]->rows), int(a.w[2]->rows)};
            }
            if (a.w.size() > 3) g.bias = {a.w[3], a.w[4], a.w[5]};
            g.y = {Slot::Q, Slot::K, Slot::V};
            break;
        case K::FfnGateUp:
            if (a.w[0] == nullptr) {  // fused ffn_up: gate rows [0, ff), up rows [ff, 2ff)
                g.w = {a.w[1], a.w[1]};
                g.w_off = {0, uint64_t(c_.hidden_dim) * a.w[1]->row_bytes};
            } else {
                g.w = {a.w[0], a.w[1]};
                g.w_off = {0, 0};
            }
            g.rows = {c_.hidden_dim, c_.hidden_dim};
            g.y = {Slot::Hb, Slot::Hb2};
            break;
        case K::AttnOutput:
        case K::FfnDown:
        case K::Output:
            g.w = {a.w[0]};
            g.w_off = {0};
            g.rows = {int(a.w[0]->rows)};
            g.y = {a.kind == K::Output ? Slot::Logits : Slot::Tmp};
            g.x = a.kind == K::AttnOutput ? Slot::Att : a.kind == K::FfnDown ? Slot::Hb : Slot::Xb;
            if (a.kind == K::Output && a.scale != 1.0f) {
                g.epi = 3;
                g.scale = a.scale;
            }
            break;
        default:
            JITLLM_CHECK(false, "task {} is not a product", a.name);
    }
    g.y_off.assign(g.w.size(), 0);
    return g;
}

size_t Lowering::product(size_t norm_i, size_t i) {
    if (norm_i != SIZE_MAX && batch_ && g_.gemm) {  // the tiled products read x normalised: the norm apart
        norm(norm_i, Slot::X, Slot::Xb, 1, c_.dim, t(norm_i).w[0], t(norm_i).eps);
        return 1 + product(SIZE_MAX, i);
    }
    Gemv g = product_of(i);
    std::vector<size_t> idx;
    if (norm_i != SIZE_MAX) idx.push_back(norm_i);
    idx.push_back(i);
    size_t used = idx.size();
    const K k = t(i).kind;
    const bool same = one_type(g.w);
    if (fuse_ && ((k == K::AttnOutput && has(i + 1, K::AttnResidual)) || (k == K::FfnDown && has(i + 1, K::FfnResidual)))) {
        g.epi = 1;
        g.scale = t(i + 1).scale;
        g.y = {Slot::X};
        g.aux = Slot::X;
        idx.push_back(i + 1);
        ++used;
    } else if (fuse_ && same && k == K::FfnGateUp && has(i + 1, K::FfnAct)) {
        g.epi = 2;
        idx.push_back(i + 1);
        ++used;
    }
    if (same) {
        if (norm_i != SIZE_MAX) {
            g.norm_w = t(norm_i).w[0];
            g.eps = t(norm_i).eps;
            g.x = Slot::X;
        }
        gemv(idx, g);
        return used;
    }
    // matrices of different types (a Q4_K_M file's v beside q and k): the norm, then one gemv each
    if (norm_i != SIZE_MAX) norm(norm_i, Slot::X, Slot::Xb, 1, c_.dim, t(norm_i).w[0], t(norm_i).eps);
    for (size_t m = 0; m < g.w.size(); ++m) gemv({i}, g.matrix(m));
    return used;
}

void Lowering::gemv(const std::vector<size_t>& idx, const Gemv& g, const std::string& algo) {
    const GgmlType T = g.w[0]->type;
    const int cols = g.cols, nu = cols / 32, n_mat = int(g.w.size());
    const bool xq = T == GgmlType::Q4_0 || T == GgmlType::Q8_0;
    // work-items: one per 32-element unit of a row (plain types with gemv.vec: per 8-element chunk), 32 to 256
    const bool plain = T == GgmlType::F32 || T == GgmlType::F16 || T == GgmlType::BF16;
    const int items = plain && g_.vec ? 4 * nu : nu;
    const int wg_cap = s_.tune.gemv_wg ? s_.tune.gemv_wg : 256;
    const int wg = int(std::min<uint64_t>(d_.max_work_group, uint64_t(std::min(wg_cap, std::max(32, pow2_at_least(items))))));
    const int nw = g.epi == 2 ? 2 : 1;
    const int out_rows = g.out_rows();
    // batch.xrows=shared: the batch phase's gemvs (not the experts') take kClXrows activation rows
    const int xr = batch_ && g_.xrows && g.experts == 0 ? kClXrows : 1;
    const int xtile = x_tile(idx, cols, xr, wg, xq);  // 0: x staged whole
    const int staged = xtile ? xtile : nu;
    // gate gemv.sum=subgroup: each sub-group (of 32, NVIDIA's; a guess for the grid elsewhere) sums
    // RPB rows of its own; the blocks spread over every sub-group the capped grid holds
    const bool sgsum = g_.sgsum && g.epi != 5 && xtile == 0;
    const int sgs = std::max(1, wg / 32);
    const int per_unit = s_.tune.gemv_groups ? s_.tune.gemv_groups : sgsum ? kClGemvGroupsSg : kClGemvGroups;
    const int cap = g_.gemv_cap && g.epi != 5 ? per_unit * int(std::max(1u, d_.compute_units)) : 0;
    int rpb = std::min(std::max(1, (s_.tune.gemv_rows ? s_.tune.gemv_rows : 16) / (nw * xr)), out_rows);
    if (sgsum && cap && !s_.tune.gemv_rows) rpb = std::clamp(out_rows / (cap * sgs), 1, rpb);
    // local memory: the block's sums (SGSUM: the norm's only), x quantized
    auto local_bytes = [&](int r) { return cl_gemv_local_bytes(sgsum ? 1 : r * nw * xr, xr, wg, xq, staged); };
    while (rpb > 1 && local_bytes(rpb) > d_.local_mem) --rpb;
    if (local_bytes(rpb) > d_.local_mem)
        fail_device("{}: a product of {} columns needs {} bytes of local memory, the device {} has {}", t(idx[0]).name,
                    cols, local_bytes(rpb), d_.name, d_.local_mem);
    Variant v("opencl/gemv.cl", "");
    v.set("WTYPE", wtype_define(T)).set("COLS", cols).set("N_MAT", n_mat);
    for (int m = 0; m < n_mat; ++m) {
        v.set("ROWS" + std::to_string(m), g.rows[size_t(m)]);
        if (g.w_off[size_t(m)]) v.set("W_OFF" + std::to_string(m), g.w_off[size_t(m)]);
    }
    v.set("WG", wg).set("RPB", rpb);
    if (sgsum) v.set("SGSUM", 1);
    if (xtile) v.set("XTILE", xtile);
    if (xr > 1) v.set("XROWS", xr);
    if (g.norm_w) v.set("NORM_IN", 1);
    const bool bias = !g.bias.empty() && g.bias[0];
    if (bias) v.set("HAS_BIAS", 1);
    if (g.epi) v.set("EPI", g.epi);
    if (g.epi == 1) v.set("RES_SCALE", fstr(g.scale));
    if (g.epi == 3) v.set("OUT_SCALE", fstr(g.scale));
    const bool slots = g.experts > 0 && g.epi != 5;  // dimension 1: row * K + j
    if (g.experts) {
        v.set("EXPERTS", g.experts).set("EXPERT_BYTES", g.w[0]->n_bytes / g.w[0]->stack);
    }
    v.set("X_STRIDE", rows_of(g.x));
    for (int m = 0; m < (g.epi == 2 || g.epi >= 5 ? 1 : n_mat); ++m) {
        v.set("Y_STRIDE" + std::to_string(m), rows_of(g.y[size_t(m)]) / (slots ? g.experts : 1));
        if (g.y_off[size_t(m)]) v.set("Y_OFF" + std::to_string(m), g.y_off[size_t(m)]);
    }
    if (g.epi == 1 || g.epi == 6) v.set("AUX_STRIDE", rows_of(g.aux));
    if (g.aux_off) v.set("AUX_OFF", g.aux_off);
    if (!g_.vec) v.set("VEC", 0);
    if (s_.tune.gemv_ahead && g_.vec && (T == GgmlType::F16 || T == GgmlType::BF16)) v.set("AHEAD", s_.tune.gemv_ahead);
    if (xq && g_.idot) v.set("IDOT", 1).set("IDOT_EXT", g_.idot_ext);
    if (s_.split_weights.count(g.w[0])) {
        for (const WeightTensor* w : g.w) JITLLM_CHECK(s_.split_weights.count(w), "{}: split and block layouts in one gemv", w->name);
        v.set("WSPLIT", 1);
    }
    if (g_.wide && aligned16(g)) v.set("ALIGN16", 1);
    ClStep& k = add(idx, algo + "_" + type_suffix(T), v);
    const int blocks = (out_rows + rpb - 1) / rpb;
    int groups = sgsum ? (blocks + sgs - 1) / sgs : blocks;
    if (cap) groups = std::min(groups, cap);
    k.global[0] = size_t(groups) * size_t(wg);
    k.local[0] = size_t(wg);
    if (slots) {
        k.global[1] = size_t(g.experts);
        if (batch_) k.rows_mul = g.experts;
    }
    k.rows_div = xr;
    auto w = [&](int m) { return m < n_mat ? weight(g.w[size_t(m)]) : null(); };
    auto b = [&](int m) { return bias && m < n_mat ? weight(g.bias[size_t(m)]) : null(); };
    auto y = [&](int m) { return m < int(g.y.size()) ? slot(g.y[size_t(m)]) : null(); };
    k.args = {w(0), w(1), w(2), b(0), b(1), b(2), y(0), y(1), y(2), slot(g.x), weight(g.norm_w),
              g.epi == 1 || g.epi == 6 ? slot(g.aux) : null(), g.experts ? slot(Slot::ExpIds) : null(),
              g.epi == 5 ? slot(Slot::ExpW) : null(), f32(g.eps), rows()};
    uint64_t wb = 0;
    for (int m = 0; m < n_mat; ++m) wb += uint64_t(g.rows[size_t(m)]) * g.w[size_t(m)]->row_bytes;
    if (g.experts) wb *= uint64_t(g.experts);
    k.bytes_fixed = batch_ ? wb : 0;
    k.bytes = (batch_ ? 0 : wb) + 4ull * uint64_t(cols) * (g.norm_w ? 2 : 1) + 4ull * uint64_t(out_rows);
    if (batch_ && g_.gemm && g.experts == 0 && g.epi <= 3 && !g.norm_w) tiled(k, T, nw, out_rows);
}

// gate gemv.align=wide: whether every row the product reads starts 16-byte aligned (each weight and
// slot is a buffer of its own, aligned to the device's base address alignment, at least 128 bytes)
bool Lowering::aligned16(const Gemv& g) const {
    if (g.cols % 4 != 0 || rows_of(g.x) % 4 != 0) return false;
    for (size_t m = 0; m < g.w.size(); ++m) {
        const WeightTensor* w = g.w[m];
        if (w->row_bytes % 16 != 0 || g.w_off[m] % 16 != 0) return false;
        if (g.experts && (w->n_bytes / w->stack) % 16 != 0) return false;
    }
    return true;
}

// gate gemv.x: the units of a Q4_0 / Q8_0 product's x staged at a time, 0 for all of them (where x
// fits local memory with one weight row a block, or gemv.x is forced). Tiles: the largest
// multiple of wg units that fits (every work-item then takes the same units in the same order as
// with x whole: the same sums), else the largest count that does
int Lowering::x_tile(const std::vector<size_t>& idx, int cols, int xr, int wg, bool xq) const {
    const int nu = cols / 32;
    const auto fits = [&](int units) { return cl_gemv_local_bytes(xr, xr, wg, xq, units) <= d_.local_mem; };
    if (!xq || nu < 2 || (g_.x_forced ? g_.x_whole : fits(nu))) return 0;
    int tile = (nu - 1) / wg * wg;
    while (tile > 0 && !fits(tile)) tile -= wg;
    if (tile == 0) tile = std::min(nu - 1, wg - 1);
    while (tile > 1 && !fits(tile)) --tile;
    if (!fits(tile))
        fail_device("{}: a product of {} columns needs {} bytes of local memory with x in tiles of 32 columns, the device {} "
                    "has {}",
                    t(idx[0]).name, cols, cl_gemv_local_bytes(xr, xr, wg, xq, 1), d_.name, d_.local_mem);
    return tile;
}

// gate batch.gemm=tiled: gemm.cl beside the step's gemv, with its defines but the gemv's own
void Lowering::tiled(ClStep& k, GgmlType T, int nw, int out_rows) {
    const bool xq = T == GgmlType::Q4_0 || T == GgmlType::Q8_0;
    const uint64_t local = xq ? 2 * 64 * (32 + 4) + 256 * 4 : 2 * 32 * 64 * 4 + (nw == 2 ? 64 * 64 * 4 : 0);
    if (d_.max_work_group < 256 || local > d_.local_mem) return;  // the gemvs alone
    Variant v("opencl/gemm.cl", k.group + "__gemm_" + type_suffix(T));
    for (const auto& [name, value] : k.variant.defines)
        if (name != "WG" && name != "RPB" && name != "XROWS" && name != "VEC" && name != "AHEAD" && name != "SGSUM" &&
            name != "REDUCE" && name != "SUBGROUP_EXT")
            v.set(name, value);
    k.tiled.variant = std::move(v);
    k.tiled.global0 = size_t((out_rows + 64 / nw - 1) / (64 / nw)) * 256;
    k.tiled.min_rows = kClGemmRows;
}

size_t Lowering::moe(size_t i) {
    const Task& a = t(i);
    const int kx = c_.n_expert_used;
    Gemv g;
    g.cols = c_.dim;
    switch (a.kind) {
        case K::FfnRouter:
            g.w = {a.w[0]};
            g.rows = {c_.n_expert};
            g.y = {Slot::Router};
            g.y_off = {0};
            if (a.w[1]) {  // the shared expert's gate logit after the experts'
                g.w.push_back(a.w[1]);
                g.rows.push_back(1);
                g.y.push_back(Slot::Router);
                g.y_off.push_back(c_.n_expert);
            }
            g.w_off.assign(g.w.size(), 0);
            if (one_type(g.w)) {
                gemv({i}, g);
            } else {
                for (size_t m = 0; m < g.w.size(); ++m) gemv({i}, g.matrix(m));
            }
            return 1;
        case K::FfnTopk:
            topk(i);
            return 1;
        case K::FfnExpGateUp:
        case K::FfnShexpGateUp: {
            const bool ex = a.kind == K::FfnExpGateUp;
            const int ff = ex ? c_.expert_ff : c_.shared_expert_ff;
            g.w = {a.w[0], a.w[1]};
            g.w_off = {0, 0};
            g.rows = {ff, ff};
            g.y = {ex ? Slot::ExpHb : Slot::Hb, ex ? Slot::ExpHb2 : Slot::Hb2};
            g.y_off = {0, 0};
            g.experts = ex ? kx : 0;
            const K act = ex ? K::FfnExpAct : K::FfnShexpAct;
            if (fuse_ && one_type(g.w) && has(i + 1, act)) {
                g.epi = 2;
                gemv({i, i + 1}, g, ex ? "gemv_experts" : "gemv");
                return 2;
            }
            for (size_t m = 0; m < 2; ++m)  // one launch each: gate, then up (their types may differ)
                gemv({i}, g.matrix(m), ex ? "gemv_experts" : "gemv");
            return 1;
        }
        case K::FfnExpAct:
            swiglu(i, Slot::ExpHb, Slot::ExpHb2, kx * c_.expert_ff);
            return 1;
        case K::FfnShexpAct:
            swiglu(i, Slot::Hb, Slot::Hb2, c_.shared_expert_ff);
            return 1;
        case K::FfnExpDown:
        case K::FfnShexpDown: {
            const bool ex = a.kind == K::FfnExpDown;
            g.w = {a.w[0]};
            g.w_off = {0};
            g.rows = {c_.dim};
            g.y = {Slot::Tmp};
            g.y_off = {0};
            g.cols = ex ? c_.expert_ff : c_.shared_expert_ff;
            g.x = ex ? Slot::ExpHb : Slot::Hb;
            g.epi = ex ? 5 : 6;
            g.experts = ex ? kx : 0;
            g.aux = Slot::Router;
            g.aux_off = ex ? 0 : c_.n_expert;
            gemv({i}, g, ex ? "gemv_experts" : "gemv");
            return 1;
        }
        default:
            JITLLM_CHECK(false, "task {} is not a mixture-of-experts task", a.name);
    }
    return 1;
}

}  // namespace jitllm::cl_lowering
