// Lowering of the batch phase: row-wise kernels, GEMM tiles, the small-step gemv lists.
#include "backends/cuda/lowering/lowering.h"

#include <algorithm>
#include <cmath>

#include "backends/cuda/gemm_variant.h"
#include "core/error.h"
#include "quant/quant.h"

namespace jitllm::lowering {

void Lowering::lower_batch(const std::vector<Task>& tasks, size_t body, std::vector<KernelStep>& out, size_t& out_body,
                           bool small, int xrows, bool imma) {
    small_ = small;
    xrows_ = small ? xrows : 0;
    imma_ = imma && !small;
    x16_next_ = x16_now_ = false;
    out_ = &out;
    tasks_ = &tasks;
    batch_ = true;
    xq_prev_.reset();
    norm_prev_.reset();
    out_body = 0;
    for (size_t i = 0; i < tasks.size();) {
        if (i == body) out_body = out.size();
        i += lower_at(i);
    }
    if (body >= tasks.size()) out_body = out.size();
    batch_ = false;
    small_ = false;
    xrows_ = 0;
    imma_ = false;
}

KArg Lowering::kv_table() {
    s_.scratch["kv_table"] = size_t(std::max(1, p_.n_seq)) * size_t(p_.kv_blocks_per_seq()) * 4;
    return scratch("kv_table");
}

void Lowering::kv_paged(Variant& v) const { v.set("KV_BLOCK", p_.kv_block).set("KV_BPS", p_.kv_blocks_per_seq()); }

void Lowering::gemv_rows(std::vector<size_t> idx, Gemv v) {
    v.xrows = xrows_;  // (0 outside the small-step lists)
    gemv(std::move(idx), v);
    KernelStep& k = out_->back();
    const bool xr = k.variant.has("XROWS");
    k.symbol += xr ? "_xrows" : "_rows";
    k.variant.symbol = k.symbol;
    if (xr) {
        // batch.xrows: grid.y = the step's rows in groups of XROWS, each block reading its weight
        // rows once for the group (n_rows: the Rows argument)
        k.grid.y = 1;
        rows_grid(k, 1, 1, define_int(k, "XROWS", 1));
    } else if (small_) {
        // the step's rows innermost in grid.x (gemv.cu ROWS_INNER): a row group's blocks for every
        // row run side by side and share its weights through L2
        const unsigned nb = k.grid.x;
        k.variant.set("ROWS_INNER", int(nb));
        k.grid.y = 1;
        rows_grid(k, 0, int(nb), 1);
    } else {
        k.grid.y = unsigned(std::max(1, p_.batch_rows));
        rows_grid(k, 1);
    }
    k.bytes_fixed = k.bytes;  // weights re-read per row mostly hit L2: count them once
    k.bytes = uint64_t(v.w[0]->cols) * 4 + uint64_t(v.out_rows()) * 4;
}

Lowering::Gemm Lowering::gemm_of(const Gemv& p) {
    Gemm g;
    GemmSpec& s = g.spec;
    s.wtype = p.w[0]->type;
    s.cols = int(p.w[0]->cols);
    s.n_mat = int(p.w.size());
    for (size_t m = 0; m < p.w.size(); ++m) {
        s.rows[m] = p.rows[m];
        g.w.push_back(weight(p.w[m], p.w_off[m]));
        if (!p.bias.empty()) g.bias.push_back(weight(p.bias[m]));
    }
    for (Slot y : p.y) g.y.push_back(slot(y));
    s.has_bias = !p.bias.empty();
    s.epi = p.epi;
    s.up_offset_rows = p.up_offset_rows;
    if (p.epi == 1) {
        s.res_scale = p.scale;
        g.resid = slot(p.y[0]);
    }
    if (p.epi == 3) s.out_scale = p.scale;
    g.x = p.x;
    return g;
}

KArg Lowering::gemm_x16(size_t i, GemmSpec& s, Slot x) {
    const bool quant_w = s.wtype != GgmlType::F16 && s.wtype != GgmlType::BF16;
    const bool wg_ok = gemm_mma_level(s.wtype, d_.cc()) >= 2 && (!quant_w || s.cols % 64 == 0);  // raw ring: 4-aligned rows
    if (!s.mma || !g_.gemm_wgmma || !wg_ok) return slot(x);
    // wgmma reads 16-bit activations: written by the norm before (rms_norm OUT16), else a row-wise
    // conversion first (6 bytes per element, small beside the product); then 128 x BN tiles (256
    // for wide outputs; quantized weights 128: the producer's raw weight registers beside 128
    // accumulators spill)
    s.mma = 2;
    s.x_f16 = true;
    s.bm = 128;
    const int out_w = gemm_weight_rows(s);
    s.bn = out_w >= 16384 && !quant_w ? 256 : 128;
    if (x16_now_ && x == Slot::Xb) return scratch("x16");
    const bool bf16 = s.wtype == GgmlType::BF16;
    return convert_rows(i, bf16 ? "to_bf16_rows" : "to_f16_rows", {"BF16_OUT", int(bf16)}, s.cols,
                        std::max(1, p_.batch_rows), x, "x16", uint64_t(s.cols) * 2);
}

KArg Lowering::convert_rows(size_t i, const std::string& algo, std::pair<const char*, int> def, int cols, int rows,
                            Slot x, const std::string& out, uint64_t out_row) {
    Variant cv("cuda/convert.cu", "");
    cv.set("N", cols).set("BLOCK", 256).set(def.first, def.second);
    auto& c = add({i}, algo, cv);
    c.grid = Dim3(unsigned((cols / 4 + 255) / 256), unsigned(rows));
    c.block = Dim3(256);
    rows_grid(c, 1);
    c.args = {slot(x), scratch(out)};
    c.bytes = uint64_t(cols) * 4 + out_row;
    c.flops = 0;
    s_.scratch[out] = std::max(s_.scratch[out], size_t(rows) * size_t(out_row));
    return scratch(out);
}

bool Lowering::gemm_imma(const std::vector<size_t>& idx, Gemm& g) {
    GemmSpec& s = g.spec;
    if (!imma_ || !s.wsplit || s.cols % 256 != 0 || !gemm_mma_supported(s.wtype, d_.cc(), nullptr, 3)) return false;
    s.mma = 3;
    // tiles of the list's rows up to 32 (a 64-row step as two tiles, each reading the weights: on the
    // H100 faster than one 64-row tile, whose stages leave room for fewer blocks an SM); weight-row
    // tiles of 64 (4 warps side by side, 2 sharing each stage's columns), halved while they number
    // fewer than the SMs (the warps sharing the columns doubled: 8 a block)
    const int R = std::max(1, std::min(p_.batch_rows, o_.batch_imma_rows));
    s.bm = o_.imma_bm > 0 ? o_.imma_bm : std::min(32, (R + 7) / 8 * 8);
    const int wr = gemm_weight_rows(s);
    s.bn = o_.imma_bn > 0 ? o_.imma_bn : 64;
    while (o_.imma_bn <= 0 && s.bn > 16 && (wr + s.bn - 1) / s.bn < d_.sm_count) s.bn /= 2;
    s.warps_k = o_.imma_warps_k > 0 ? o_.imma_warps_k : std::max(1, 8 / (s.bn / 16));
    s.stages = o_.imma_stages;
    // x as Q8_0 rows (cols int8, then cols / 32 f16 scales), the CPU spec's activation blocks
    const KArg xq = convert_rows(idx[0], "to_q8_rows", {"Q8_OUT", 1}, s.cols, R, g.x, "xq8", gemm_xq8_row_bytes(s.cols));
    const GemmLaunch l = gemm_launch(s, s.bm);
    auto& k = add(idx, "gemm_imma_" + lowercase(type_name(s.wtype)) + "_split", gemm_variant(s, ""));
    k.variant.symbol = k.symbol;
    k.block = l.block;
    k.smem = l.smem;
    k.grid = l.grid;
    rows_grid(k, 0, 1, s.bm);
    for (int r = 8; r <= s.bm; r += 8) k.smem_n8.push_back(gemm_i8_smem_rows(s, r));
    gemm_args(k, g, xq);
    k.bytes_fixed = gemm_bytes(s, 0);
    k.bytes = gemm_bytes(s, 1) - k.bytes_fixed;
    k.flops = gemm_flops(s, 1);
    return true;
}

void Lowering::gemm_args(KernelStep& k, const Gemm& g, KArg x) {
    for (int m = 0; m < 3; ++m) k.args.push_back(m < int(g.w.size()) ? g.w[size_t(m)] : null());
    for (int m = 0; m < 3; ++m) k.args.push_back(m < int(g.bias.size()) ? g.bias[size_t(m)] : null());
    for (int m = 0; m < 3; ++m) k.args.push_back(m < int(g.y.size()) ? g.y[size_t(m)] : null());
    k.args.push_back(x);
    k.args.push_back(g.resid);
    k.args.push_back(rows_arg());
}

void Lowering::gemm(std::vector<size_t> idx, Gemm g) {
    GemmSpec& s = g.spec;
    s.wsplit = split(g.w);
    if (gemm_imma(idx, g)) return;
    s.mma = g_.gemm_mma && s.wtype != GgmlType::F32 && gemm_mma_supported(s.wtype, d_.cc()) ? 1 : 0;
    const KArg x = gemm_x16(idx[0], s, g.x);
    // 64-row tiles when 128-row tiles would leave the SMs with fewer than two blocks each
    if (s.mma == 1) {
        const int R = std::max(1, p_.batch_rows);
        const int out_w = gemm_weight_rows(s);
        const int tiles128 = ((R + 127) / 128) * ((out_w + 127) / 128);
        s.bm = o_.gemm_bm > 0 ? o_.gemm_bm : (tiles128 < 2 * d_.sm_count ? 64 : 128);
    }
    // the launch geometry (split-K's or not) and the rows of a tile
    const GemmLaunch l = gemm_launch(s, 1 << 20);
    const int bm = int((1u << 20) / l.grid.x);
    JITLLM_CHECK(gemm_launch(s, bm).grid.x == 1, "gemm tile rows {}", bm);
    // gate gemm.split_k: grid.z by the step's tile rows, SPLIT_K only where some step splits
    s.split_k = s.mma == 2 && g_.gemm_split_k;
    std::vector<int> splits;
    for (int m = bm; s.split_k && m < std::max(1, p_.batch_rows) + bm; m += bm)
        splits.push_back(gemm_k_splits(s, m, d_.sm_count, o_.gemm_splits));
    s.split_k = std::any_of(splits.begin(), splits.end(), [](int z) { return z > 1; });
    const std::string algo = std::string("gemm_") + (s.mma == 2 ? "wgmma_" : s.mma ? "mma_" : "simt_") +
                             lowercase(type_name(s.wtype)) + (s.wsplit ? "_split" : "");
    auto& k = add(idx, algo, gemm_variant(s, ""));
    k.variant.symbol = k.symbol;
    k.block = l.block;
    k.smem = l.smem;
    k.grid = l.grid;
    rows_grid(k, 0, 1, bm);
    gemm_args(k, g, x);
    if (s.split_k) {  // gate gemm.split_k: grid.z by tile rows, one workspace for the largest split step
        k.ksplit = splits;
        k.ksplit_bm = bm;
        k.args.push_back(scratch("gemm_split_ws"));
        k.args.push_back(scratch("gemm_split_ctr"));
        size_t& ws = s_.scratch["gemm_split_ws"];
        size_t& ctr = s_.scratch["gemm_split_ctr"];
        for (size_t t = 0; t < splits.size(); ++t) {
            if (splits[t] < 2) continue;
            const int m = int(t + 1) * bm;
            ws = std::max(ws, size_t(gemm_split_ws_floats(s, m, splits[t])) * 4);
            ctr = std::max(ctr, size_t(gemm_split_counters(s, m)) * 4);
        }
    }
    k.bytes_fixed = gemm_bytes(s, 0);
    k.bytes = gemm_bytes(s, 1) - k.bytes_fixed;
    k.flops = gemm_flops(s, 1);
}

bool Lowering::one_type(size_t i) const {
    const WeightTensor* first = nullptr;
    for (const WeightTensor* w : t(i).w) {
        if (!w || w->rows <= 1) continue;  // biases are not matrices
        if (first && w->type != first->type) return false;
        if (!first) first = w;
    }
    return first != nullptr;
}

bool Lowering::wgmma_all(size_t i, GgmlType* type) const {
    if (small_ || imma_) return false;  // gemv products read float activations, integer GEMMs Q8_0 rows
    if (!is(i, K::AttnQkv) && !is(i, K::FfnGateUp) && !is(i, K::Output)) return false;
    if (!g_.gemm_mma || !g_.gemm_wgmma) return false;
    const int cc = d_.cc();
    const WeightTensor* first = nullptr;
    for (size_t j = 0; j < 3 && j < t(i).w.size(); ++j) {
        const WeightTensor* w = t(i).w[j];
        if (!w) continue;
        if (first && w->type != first->type) return false;
        first = w;
    }
    if (!first || first->cols % 32 != 0 || gemm_mma_level(first->type, cc) < 2) return false;
    const bool quant = first->type != GgmlType::F16 && first->type != GgmlType::BF16;
    if (quant && first->cols % 64 != 0) return false;  // as gemm(): the raw weight ring
    *type = first->type;
    return true;
}

void Lowering::rms_norm_rows(KernelStep& k, size_t i, Slot in, Slot outs, int per_row, int D, bool weighted) {
    GgmlType wt = GgmlType::F16;
    const bool out16 = in == Slot::X && outs == Slot::Xb && wgmma_all(i + 1, &wt);
    if (out16) {
        // the next products read 16-bit activations: write them here, not Xb
        k.variant.set("OUT16", wt == GgmlType::BF16 ? 2 : 1);
        k.symbol += wt == GgmlType::BF16 ? "_to_bf16" : "_to_f16";
        k.args[2] = scratch("x16");
        s_.scratch["x16"] = std::max(s_.scratch["x16"], size_t(std::max(1, p_.batch_rows)) * size_t(D) * 2);
        x16_next_ = true;
    }
    k.symbol += "_rows";
    k.variant.symbol = k.symbol;
    rows_grid(k, 0, per_row, 1);
    k.bytes = uint64_t(per_row) * D * (out16 ? 6 : 8);
    k.bytes_fixed = weighted ? uint64_t(D) * 4 : 0;
}

}  // namespace jitllm::lowering
