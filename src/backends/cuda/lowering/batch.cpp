// Lowering of the batch phase: row-wise kernels, GEMM tiles, the small-step gemv lists.
#include "backends/cuda/lowering/lowering.h"

#include <algorithm>
#include <cmath>

#include "backends/cuda/gemm_variant.h"
#include "core/error.h"
#include "quant/quant.h"

namespace jitllm::lowering {

void Lowering::lower_batch(const std::vector<Task>& tasks, size_t body, std::vector<KernelStep>& out, size_t& out_body,
                           bool small, int xrows) {
    small_ = small;
    xrows_ = small ? xrows : 0;
    x16_next_ = x16_now_ = false;
    out_ = &out;
    tasks_ = &tasks;
    batch_ = true;
    xq_prev_.reset();
    norm_prev_.reset();
    out_body = 0;
    for (size_t i = 0; i < tasks.size();) {
        if (i == body) out_body = out.size();
        i += lower_batch_at(i);
    }
    if (body >= tasks.size()) out_body = out.size();
    JITLLM_CHECK(norm_i_ == SIZE_MAX, "a norm was not fused into a product");
    batch_ = false;
    small_ = false;
    xrows_ = 0;
}

void Lowering::gemm(std::vector<size_t> idx, Gemm g) {
    GemmSpec& s = g.spec;
    // gemm.cu's K step is 32: the row-batched gemv takes the rest, and every product of the
    // small-step list (gate batch.small)
    if (s.cols % 32 != 0 || small_) {
        Gemv v;
        for (int m = 0; m < s.n_mat; ++m) {
            v.w.push_back(g.w[size_t(m)].w);
            v.w_off.push_back(g.w[size_t(m)].offset);
            v.rows.push_back(s.rows[m]);
            v.bias.push_back(s.has_bias ? g.bias[size_t(m)].w : nullptr);
        }
        for (const KArg& y : g.y) v.y.push_back(y.slot);
        v.x = g.x;
        if (small_ && norm_i_ != SIZE_MAX) {  // the norm before, fused in (NORM_IN), as in decode
            JITLLM_CHECK(g.x == Slot::Xb, "a fused norm feeds Xb");
            idx.insert(idx.begin(), norm_i_);
            v.norm_w = t(norm_i_).w[0];
            v.eps = t(norm_i_).eps;
            v.x = Slot::X;
            norm_i_ = SIZE_MAX;
        }
        v.epi = s.epi;
        v.scale = s.epi == 1 ? s.res_scale : s.out_scale;
        v.up_offset_rows = s.up_offset_rows;
        v.xrows = xrows_;  // (0 outside the small-step lists)
        gemv(idx, v);
        KernelStep& k = out_->back();
        const bool xr = k.variant.has("XROWS");
        k.symbol += xr ? "_xrows" : "_rows";
        k.variant.symbol = k.symbol;
        if (xr) {
            // --batch-xrows: grid.y = the step's rows in groups of XROWS, each block reading
            // its weight rows once for the group (n_rows: the Rows argument)
            k.grid.y = 1;
            rows_grid(k, 1, 1, define_int(k, "XROWS", 1));
        } else if (small_) {
            // the step's rows innermost in grid.x (gemv.cu ROWS_INNER): a row group's blocks
            // for every row run side by side and share its weights through L2
            const unsigned nb = k.grid.x;
            k.variant.set("ROWS_INNER", int(nb));
            k.grid.y = 1;
            rows_grid(k, 0, int(nb), 1);
        } else {
            k.grid.y = unsigned(std::max(1, p_.batch_rows));
            rows_grid(k, 1);
        }
        k.bytes_fixed = k.bytes;  // weights re-read per row mostly hit L2: count them once
        k.bytes = uint64_t(s.cols) * 4 + uint64_t(gemm_out_rows(s)) * 4;
        return;
    }
    const bool f32w = s.wtype == GgmlType::F32;
    const int cc = d_.cc();
    s.wsplit = split(g.w);
    s.mma = g_.gemm_mma && !f32w && gemm_mma_supported(s.wtype, cc) ? 1 : 0;
    KArg x = slot(g.x);
    const bool quant_w = s.wtype != GgmlType::F16 && s.wtype != GgmlType::BF16;
    const bool wg_ok = gemm_mma_level(s.wtype, cc) >= 2 && (!quant_w || s.cols % 64 == 0);  // raw ring: 4-aligned rows
    if (s.mma && g_.gemm_wgmma && wg_ok && x16_now_ && g.x == Slot::Xb) {
        // the norm before wrote the 16-bit activations already (rms_norm OUT16)
        s.mma = 2;
        s.x_f16 = true;
        s.bm = 128;
        const int out_w = s.epi == 2 ? 2 * s.rows[0] : gemm_out_rows(s);
        s.bn = out_w >= 16384 && !quant_w ? 256 : 128;
        x = scratch("x16");
    } else if (s.mma && g_.gemm_wgmma && wg_ok) {
        // wgmma reads 16-bit activations: a row-wise conversion first (6 bytes per element,
        // small beside the product), then 128 x BN tiles (256 for wide outputs; quantized
        // weights 128: the producer's raw weight registers beside 128 accumulators spill)
        s.mma = 2;
        s.x_f16 = true;
        s.bm = 128;
        const int out_w = s.epi == 2 ? 2 * s.rows[0] : gemm_out_rows(s);
        s.bn = out_w >= 16384 && !quant_w ? 256 : 128;
        const int R = std::max(1, p_.batch_rows);
        Variant cv("cuda/convert.cu", "");
        cv.set("N", s.cols).set("BLOCK", 256).set("BF16_OUT", int(s.wtype == GgmlType::BF16));
        auto& c = add({idx[0]}, s.wtype == GgmlType::BF16 ? "to_bf16_rows" : "to_f16_rows", cv);
        c.grid = Dim3(unsigned((s.cols / 4 + 255) / 256), unsigned(R));
        c.block = Dim3(256);
        rows_grid(c, 1);
        c.args = {slot(g.x), scratch("x16")};
        c.bytes = uint64_t(s.cols) * 6;
        c.flops = 0;
        s_.scratch["x16"] = std::max(s_.scratch["x16"], size_t(R) * size_t(s.cols) * 2);
        x = scratch("x16");
    }
    // 64-row tiles when 128-row tiles would leave the SMs with fewer than two blocks each
    if (s.mma == 1) {
        const int R = std::max(1, p_.batch_rows);
        const int out_w = s.epi == 2 ? 2 * s.rows[0] : gemm_out_rows(s);
        const int tiles128 = ((R + 127) / 128) * ((out_w + 127) / 128);
        s.bm = o_.gemm_bm > 0 ? o_.gemm_bm : (tiles128 < 2 * d_.sm_count ? 64 : 128);
    }
    const std::string algo = std::string("gemm_") + (s.mma == 2 ? "wgmma_" : s.mma ? "mma_" : "simt_") +
                             lowercase(type_name(s.wtype)) + (s.wsplit ? "_split" : "");
    auto& k = add(idx, algo, gemm_variant(s, ""));
    k.variant.symbol = k.symbol;
    const GemmLaunch l = gemm_launch(s, 1 << 20);
    const int bm = int((1u << 20) / l.grid.x);
    JITLLM_CHECK(gemm_launch(s, bm).grid.x == 1, "gemm tile rows {}", bm);
    k.block = l.block;
    k.smem = l.smem;
    k.grid = l.grid;
    rows_grid(k, 0, 1, bm);
    for (int m = 0; m < 3; ++m) k.args.push_back(m < int(g.w.size()) ? g.w[size_t(m)] : null());
    for (int m = 0; m < 3; ++m) k.args.push_back(m < int(g.bias.size()) ? g.bias[size_t(m)] : null());
    for (int m = 0; m < 3; ++m) k.args.push_back(m < int(g.y.size()) ? g.y[size_t(m)] : null());
    k.args.push_back(x);
    k.args.push_back(g.resid);
    k.args.push_back(rows_arg());
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
    if (small_) return false;  // gemv products read float activations
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

void Lowering::rms_norm_rows(size_t i, Slot in, Slot outs, int per_row, int D, const WeightTensor* w, float eps) {
    GgmlType wt = GgmlType::F16;
    const bool out16 = in == Slot::X && outs == Slot::Xb && wgmma_all(i + 1, &wt);
    rms_norm(i, in, outs, std::max(1, p_.batch_rows) * per_row, D, w, eps, 0);
    KernelStep& k = out_->back();
    if (out16) {  // the next products read 16-bit activations: write them here, not Xb
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
    k.bytes_fixed = w ? uint64_t(D) * 4 : 0;
}

size_t Lowering::lower_batch_at(size_t i) {
    const Task& a = t(i);
    x16_now_ = x16_next_;  // set by the norm just before this task
    x16_next_ = false;
    if (moe_at(i)) return lower_moe_at(i);
    const bool fuse = o_.fuse;
    const int R = std::max(1, p_.batch_rows);
    switch (a.kind) {
        case K::TokenEmbd: {
            const WeightTensor* e = a.w[0];
            Variant v("cuda/embed.cu", "");
            v.set("WTYPE", wtype_define(e->type)).set("D", c_.dim).set("N_VOCAB", c_.n_vocab)
                .set("EMB_SCALE", fstr(a.scale)).set("BLOCK", 256);
            auto& k = add({i}, "embed_rows_" + lowercase(type_name(e->type)), v);
            k.grid = Dim3(unsigned((c_.dim + 255) / 256), unsigned(R)); k.block = Dim3(256);
            rows_grid(k, 1);
            k.args = {weight(e), slot(Slot::Tokens), slot(Slot::X), null(), null()};  // nw, xq: decode only
            k.bytes = e->row_bytes + uint64_t(c_.dim) * 4;
            return 1;
        }
        case K::AttnNorm:
        case K::FfnNorm:
        case K::OutputNorm: {
            // small-step list: into the next product when that is one gemv reading Xb
            const K next = a.kind == K::AttnNorm ? K::AttnQkv : a.kind == K::FfnNorm ? K::FfnGateUp : K::Output;
            if (small_ && fuse && is(i + 1, next) && one_type(i + 1)) {
                norm_i_ = i;
                return 1;
            }
            rms_norm_rows(i, Slot::X, Slot::Xb, 1, c_.dim, a.w[0], a.eps);
            return 1;
        }
        case K::AttnQkv: {
            Gemv q;
            fill_qkv(a, q);
            gemm_each(i, q);
            return 1;
        }
        case K::AttnQkNorm:
            rms_norm_rows(i, Slot::Q, Slot::Q, c_.n_heads, c_.head_dim, a.w[0], a.eps);
            rms_norm_rows(i, Slot::K, Slot::K, c_.n_kv_heads, c_.head_dim, a.w[1], a.eps);
            return 1;
        case K::AttnRope: {
            JITLLM_CHECK(is(i + 1, K::AttnKvStore), "attn_rope must precede attn_kv_store");
            Variant v("cuda/rope.cu", "");
            v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", c_.head_dim)
                .set("N_ROT", c_.n_rot).set("PAIRING", int(c_.rope_style == RopeStyle::NeoX))
                .set("HAS_FREQ_FACTORS", int(a.w[0] != nullptr)).set("KV_T", s_.kv_type)
                .set("BATCH", 1).set("N_CTX", p_.n_ctx);
            const KArg angles = rope_angles(v, a.w[0]);
            auto& k = add({i, i + 1}, c_.rope_style == RopeStyle::NeoX ? "rope_neox_rows" : "rope_norm_rows", v);
            k.grid = Dim3(unsigned(c_.n_heads + c_.n_kv_heads), unsigned(R)); k.block = Dim3(unsigned(c_.head_dim / 2));
            rows_grid(k, 1);
            k.args = {slot(Slot::Q), slot(Slot::K), slot(Slot::V), kcache(a.layer), vcache(a.layer),
                      slot(Slot::Positions), angles, f32(c_.rope_base), slot(Slot::Seqs)};
            const uint64_t kvsz = o_.kv_f32 ? 4 : 2;
            k.bytes = uint64_t(c_.n_heads + 2 * c_.n_kv_heads) * c_.head_dim * 8 + 2 * uint64_t(c_.kv_dim()) * kvsz;
            return 2;
        }
        case K::Attn: {
            const int hd = c_.head_dim;
            const int group = c_.n_heads / c_.n_kv_heads;
            const uint64_t kvsz = o_.kv_f32 ? 4 : 2;
            if (g_.attn_prefill_mma) {
                // a block per (kv head, tile of br rows): K/V tiles shared by the tile's rows of
                // one sequence; with several sequences (server), their distinct sequences spread
                // over seq_split blocks (grid.z) so one row per sequence keeps one block each
                const int warps = 4, bc = 64;
                const int br = 16 * warps / group;
                const int seq_split = p_.n_seq > 1 ? std::min(br, p_.n_seq) : 1;
                Variant v("cuda/attention_prefill.cu", "");
                v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", hd)
                    .set("KV_T", s_.kv_type).set("SCALE", fstr(a.scale)).set("N_CTX", p_.n_ctx)
                    .set("WARPS", warps).set("BC", bc).set("SEQ_SPLIT", seq_split);
                if (windowed()) v.set("WINDOW", c_.sliding_window);
                auto& k = add({i}, "flash_mma_f16", v);
                k.grid = Dim3(unsigned(c_.n_kv_heads), unsigned((R + br - 1) / br), unsigned(seq_split));
                k.block = Dim3(unsigned(32 * warps));
                k.smem = unsigned(4 * bc * (2 * hd + 16));
                rows_grid(k, 1, 1, br);
                k.args = {slot(Slot::Q), kcache(a.layer), vcache(a.layer), slot(Slot::Positions), slot(Slot::Att),
                          slot(Slot::Seqs), rows_arg()};
                // q in, out: per row; K/V from L2 once per block of br rows and cached position
                // (DRAM: once per kv head and sequence); flops: QK^T and PV per attended position
                k.bytes = 2 * uint64_t(c_.n_heads) * hd * 4 + 8;
                k.bytes_per_pos = uint64_t(c_.n_kv_heads) * hd * 2 * kvsz / uint64_t(br);
                k.flops_per_pos = 4 * uint64_t(c_.n_heads) * hd;
                return 1;
            }
            Variant v("cuda/attention_decode.cu", "");
            v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", hd)
                .set("KV_T", s_.kv_type).set("SCALE", fstr(a.scale)).set("ALGO", 1).set("N_SPLITS", 1)
                .set("BLOCK", 128).set("REDUCE", int(g_.norm_warp)).set("TILE", group > 2 ? 2 : 4)
                .set("BATCH", 1).set("N_CTX", p_.n_ctx);
            if (windowed()) v.set("WINDOW", c_.sliding_window);
            const std::string kvt = o_.kv_f32 ? "f32" : "f16";
            auto& k = add({i}, "causal_rows_" + kvt, v);
            k.grid = Dim3(unsigned(c_.n_kv_heads), 1, unsigned(R));
            k.block = Dim3(128);
            rows_grid(k, 2);
            k.args = {slot(Slot::Q), kcache(a.layer), vcache(a.layer), slot(Slot::Positions), slot(Slot::Att),
                      null(), slot(Slot::Seqs), null(), null(), null()};
            k.bytes = 2 * uint64_t(c_.n_heads) * hd * 4;
            k.bytes_per_pos = uint64_t(c_.n_kv_heads) * hd * 2 * kvsz;
            k.flops_per_pos = 4 * uint64_t(c_.n_heads) * hd;
            return 1;
        }
        case K::AttnOutput:
        case K::FfnDown: {
            const K res = a.kind == K::AttnOutput ? K::AttnResidual : K::FfnResidual;
            Gemm g;
            g.spec.wtype = a.w[0]->type;
            g.spec.cols = int(a.w[0]->cols);
            g.spec.rows[0] = int(a.w[0]->rows);
            g.w = {weight(a.w[0])};
            g.x = a.kind == K::AttnOutput ? Slot::Att : Slot::Hb;
            if (fuse && is(i + 1, res)) {
                g.spec.epi = 1;
                g.spec.res_scale = t(i + 1).scale;
                g.y = {slot(Slot::X)};
                g.resid = slot(Slot::X);
                gemm({i, i + 1}, g);
                return 2;
            }
            g.y = {slot(Slot::Tmp)};
            gemm({i}, g);
            return 1;
        }
        case K::AttnResidual:
        case K::FfnResidual:
        case K::FfnAct:
            pointwise(i);
            return 1;
        case K::FfnGateUp: {
            Gemv gu;
            fill_gate_up(a, gu);
            const bool same = gu.w[0]->type == gu.w[1]->type;
            if (fuse && same && is(i + 1, K::FfnAct)) {
                Gemm g;
                g.spec.wtype = gu.w[0]->type;
                g.spec.cols = int(gu.w[0]->cols);
                g.spec.epi = 2;
                g.spec.rows[0] = c_.hidden_dim;
                if (gu.w[0] == gu.w[1]) {  // one matrix: up rows follow the gate rows
                    g.spec.n_mat = 1;
                    g.spec.up_offset_rows = c_.hidden_dim;
                    g.w = {weight(gu.w[0])};
                } else {
                    g.spec.n_mat = 2;
                    g.spec.rows[1] = c_.hidden_dim;
                    g.w = {weight(gu.w[0]), weight(gu.w[1])};
                }
                g.y = {slot(Slot::Hb)};
                gemm({i, i + 1}, g);
                return 2;
            }
            gu.y = {Slot::Hb, Slot::Hb2};
            gemm_each(i, gu);
            return 1;
        }
        case K::Output: {
            Gemm g;
            g.spec.wtype = a.w[0]->type;
            g.spec.cols = int(a.w[0]->cols);
            g.spec.rows[0] = int(a.w[0]->rows);
            g.spec.epi = a.scale != 1.0f ? 3 : 0;
            g.spec.out_scale = a.scale;
            g.w = {weight(a.w[0])};
            g.y = {slot(Slot::Logits)};
            gemm({i}, g);
            return 1;
        }
        case K::Sample: {
            // sample.draw=device: each logits row's pick drawn with its own parameters (the
            // host's per-row DrawParams; temperature 0: the argmax), decode's block count a row
            const int parts = g_.sample_draw ? sample_parts(d_) : 8;
            Variant v("cuda/argmax.cu", "");
            v.set("N", c_.n_vocab).set("BLOCK", 256).set("REDUCE", int(g_.sample_warp))
                .set("N_PARTS", parts).set("FUSE_ADVANCE", 0);
            if (g_.sample_draw) v.set("DRAW", 1).set("KMAX", g_.draw_kmax);
            auto& k = add({i}, g_.sample_draw ? "draw_rows" : "argmax_rows", v);
            k.grid = Dim3(unsigned(parts), unsigned(R)); k.block = Dim3(256);
            rows_grid(k, 1);
            k.args = {slot(Slot::Logits), scratch("argmax_rows_val"), scratch("argmax_rows_idx"),
                      scratch("argmax_rows_counter"), slot(Slot::Tokens), slot(Slot::Positions), null(), null(),
                      g_.sample_draw ? scratch("draw_rows_params") : null(),
                      g_.sample_draw ? scratch("draw_rows_keys") : null()};
            if (g_.sample_draw) {  // logits rows: at most n_seq (CudaBackend::batch checks)
                const size_t rows = size_t(std::max(1, p_.n_seq));
                s_.scratch["draw_rows_params"] = rows * 32;  // DrawParams
                s_.scratch["draw_rows_keys"] = rows * size_t(parts) * size_t(g_.draw_kmax) * 8;
                k.smem = unsigned(8 * std::max<int64_t>(pow2_at_least(sample_chunk(c_, parts)),
                                                        int64_t(parts) * g_.draw_kmax));
            }
            s_.scratch["argmax_rows_val"] = size_t(R) * parts * 4;
            s_.scratch["argmax_rows_idx"] = size_t(R) * parts * 4;
            s_.scratch["argmax_rows_counter"] = size_t(R) * 4;
            k.bytes = uint64_t(c_.n_vocab) * 4 + 8 * uint64_t(parts);
            return 1;
        }
        case K::AttnKvStore:
        case K::FfnRouter: case K::FfnTopk: case K::FfnExpGateUp: case K::FfnExpAct: case K::FfnExpDown:
        case K::FfnShexpGateUp: case K::FfnShexpAct: case K::FfnShexpDown:  // lower_moe_at
        case K::Count:
            break;
    }
    JITLLM_CHECK(false, "task {} has no CUDA batch lowering", a.name);
}

void Lowering::gemm_each(size_t i, const Gemv& p) {
    bool same = true;
    for (const WeightTensor* w : p.w) same = same && w->type == p.w[0]->type;
    const size_t n = same ? p.w.size() : 1;
    for (size_t m0 = 0; m0 < p.w.size(); m0 += n) {
        Gemm g;
        g.spec.wtype = p.w[m0]->type;
        g.spec.cols = int(p.w[0]->cols);
        g.spec.n_mat = int(n);
        for (size_t j = 0; j < n; ++j) {
            g.spec.rows[j] = p.rows[m0 + j];
            g.w.push_back(wrange(p.w[m0 + j], p.w_off[m0 + j]));
            g.y.push_back(slot(p.y[m0 + j]));
            if (!p.bias.empty()) g.bias.push_back(weight(p.bias[m0 + j]));
        }
        g.spec.has_bias = !p.bias.empty();
        gemm({i}, g);
    }
}

}  // namespace jitllm::lowering
