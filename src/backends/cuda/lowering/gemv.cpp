// Lowering of matrix-vector products (gemv.cu): geometry, bulk rings, defines, launch, arguments.
#include "backends/cuda/lowering/lowering.h"

#include <algorithm>
#include <cmath>

#include "backends/cuda/gemm_variant.h"
#include "core/error.h"
#include "quant/quant.h"

namespace jitllm::lowering {

Lowering::Bulk Lowering::bulk_shape(GgmlType t, int cols, int dr, int warps, int64_t x_bytes, int kb) const {
    const int64_t room = int64_t(d_.max_shared_block()) -
                         (x_bytes + 127) / 128 * 128 - 2048;
    if (kb <= 0) kb = o_.gemv_bulk_kb > 0 ? o_.gemv_bulk_kb : 200;
    const int min_slots = o_.gemv_bulk_min_slots > 0 ? o_.gemv_bulk_min_slots : 4;  // gemv.bulk_min_slots
    const int budget = int(std::min<int64_t>(room, int64_t(kb) * 1024));
    auto item = [&](int c) { return dr * chunk_bytes(t, c); };
    Bulk b;
    for (int c = 256; c <= std::min(cols, 2048); c += 256)
        if (cols % c == 0 && (b.chunk == 0 || budget / (warps * item(c)) >= min_slots)) b.chunk = c;
    if (b.chunk == 0) return b;  // columns not a multiple of 256
    b.slots = std::clamp(budget / (warps * item(b.chunk)), 2, 16);
    b.ring_bytes = warps * b.slots * item(b.chunk);
    b.fits = int64_t(b.ring_bytes) <= room;
    return b;
}

KArg Lowering::rope_angles(Variant& v, const WeightTensor* freq) {
    auto hex = [](float x) { return fmt::format("{:a}f", x); };  // exact float literals
    if (c_.attn_temp_scale != 0.0f)  // q's temperature (rope_angle.cuh), in either variant
        v.set("ATTN_TEMP", hex(c_.attn_temp_scale)).set("ATTN_TEMP_FLOOR", c_.n_ctx_orig);
    if (!g_.rope_table) {
        const RopeYarn& y = c_.rope_yarn;
        if (y.active())
            v.set("YARN", 1).set("YARN_FREQ_SCALE", hex(y.freq_scale)).set("YARN_LOW", hex(y.low))
                .set("YARN_HIGH", hex(y.high));
        return weight(freq);
    }
    auto& rt = s_.rope_table;
    JITLLM_CHECK(rt.n_pos == 0 || rt.freq_factors == freq, "one rope table per model");
    rt.n_pos = p_.n_ctx;
    rt.n_rot = c_.n_rot;
    rt.base = c_.rope_base;
    rt.yarn = c_.rope_yarn;
    rt.freq_factors = freq;
    s_.scratch["rope_table"] = rope_table_bytes(p_, c_);
    v.set("ROPE_TABLE", 1);
    return scratch("rope_table");
}

Lowering::GemvShape Lowering::gemv_shape(const std::vector<size_t>& idx, const Gemv& g) const {
    GemvShape s;
    const WeightTensor* w0 = g.w[0];
    s.type = w0->type;
    s.cols = int(w0->cols);
    s.n_mat = int(g.w.size());
    s.warp = g_.gemv_warp;
    s.wsplit = split(g.w);
    s.plain_type = is_plain(w0->type);
    s.bias = !g.bias.empty() && g.bias[0];
    s.out_rows = g.out_rows();
    s.kind = task_kind_name(t(idx[0]).kind);
    const int cols = s.cols;
    // x in shared memory when it fits beside the kernel's up-to-40 KiB weight staging
    s.x_smem = int64_t(cols) * 4 + 40 * 1024 <= int64_t(d_.max_shared_block());
    // gemv.load=bulk: decode's gemvs (a warp per row set) stream their rows into per-warp
    // shared-memory rings, one block per SM; by default the split-layout gemvs of >= 4096
    // columns and rows and every plain-type one with x in shared memory and whole 256-column
    // chunks; forced: every split-layout gemv too; where x and the smallest rings fit
    // (batch.bulk: the small-step list too, each row of a step its own blocks; not the x-rows list,
    // whose blocks read each weight row once for several rows)
    s.bulk_x = act_q8_type(s.type) ? int64_t(cols) + cols / 32 * 8 : int64_t(cols) * 4;
    const bool bulk_able = s.warp && (!batch_ || (small_ && g.xrows <= 1 && o_.batch_bulk)) &&
                           (s.wsplit || (s.plain_type && s.x_smem && cols % 256 == 0)) &&
                           bulk_shape(s.type, cols, 2, 16, s.bulk_x).fits;
    s.bulk = g_.gemv_bulk && bulk_able &&
             (g_.gemv_bulk_all || s.plain_type || (s.wsplit && cols >= kCapCols && s.out_rows >= kCapCols));
    // batch.xrows: a block reads each weight row once for up to xrows activation rows, their int8
    // copies side by side in shared memory (as many rows as fit beside 2 KiB of static: halved until
    // they do; none below 2: each row reads the weights then)
    int xrows = g.xrows > 1 && batch_ && s.wsplit && act_q8_type(s.type) && s.warp && !s.bulk ? g.xrows : 0;
    while (xrows > 1 && xrows * s.bulk_x + 2048 > int64_t(d_.max_shared_block())) xrows /= 2;
    s.xrows = xrows > 1 ? xrows : 0;
    // gemv.block: threads per block for the plain-type and split loops (the staged quantized loops
    // size their staging by it: they keep 256); bulk and xrows: 16 warps
    s.block = o_.gemv_block > 0 && s.plain() ? o_.gemv_block : !s.bulk && !s.xrows ? 256 : 512;
    // rows per block pass: each warp takes R rows (REDUCE=1) or the block takes R (REDUCE=0);
    // bulk: 2 weight rows per warp item (gate/up: one output row); gemv.rows.KIND: this kernel's own
    // count (e.g. ffn_down=4: x's shared-memory reads a row halved). RoPE in the epilogue: an even
    // count, the rotation pairs (2i, 2i + 1) within a pass (1 and 3 become 2 and 4 there)
    s.rows = o_.gemv_rows > 0 ? o_.gemv_rows : s.bulk && g.epi == 2 ? 1 : 2;
    if (const auto rf = o_.gemv_rows_for.find(s.kind); rf != o_.gemv_rows_for.end()) s.rows = rf->second;
    if (g.rope && s.rows % 2 != 0) ++s.rows;
    s.rpb = s.warp ? (s.block / 32) * s.rows : s.rows;
    if (s.bulk) {
        s.ring = bulk_shape(s.type, cols, g.epi == 2 ? 2 * s.rows : s.rows, s.block / 32, s.bulk_x);
        if (!s.ring.fits)
            fail_usage("gemv.load=bulk with {} threads and {} rows per warp: {} bytes of rings beside x do not fit "
                       "the {} bytes of shared memory per block (lower tune gemv.block or gemv.rows)",
                       s.block, s.rows, s.ring.ring_bytes, d_.max_shared_block());
    }
    return s;
}

Variant Lowering::gemv_variant(const Gemv& g, const GemvShape& s, KArg& rope_arg) {
    Variant v("cuda/gemv.cu", "");
    v.set("WTYPE", wtype_define(s.type)).set("COLS", s.cols).set("N_MAT", s.n_mat);
    if (s.wsplit) v.set("WSPLIT", 1);
    v.set("ROWS0", g.rows[0]);
    if (s.n_mat > 1) v.set("ROWS1", g.rows[1]);
    if (s.n_mat > 2) v.set("ROWS2", g.rows[2]);
    v.set("BLOCK", s.block).set("ROWS_PER_BLOCK", s.rpb).set("REDUCE", int(s.warp));
    v.set("X_SMEM", int(s.x_smem && !act_q8_type(s.type)));  // Q4_0/Q8_0: int8 x in smem
    v.set("NORM_IN", int(g.norm_w != nullptr)).set("HAS_BIAS", int(s.bias)).set("EPI", g.epi);
    if (g.rope) {
        JITLLM_CHECK(s.n_mat == 3 && g.epi == 0, "rope fusion needs the three q/k/v matrices");
        v.set("EPI", 4).set("HEAD_DIM", c_.head_dim).set("N_ROT", c_.n_rot)
            .set("HAS_FREQ_FACTORS", int(g.rope_freqs != nullptr)).set("KV_T", s_.kv_type);
    }
    rope_arg = g.rope ? rope_angles(v, g.rope_freqs) : null();
    if (g.epi == 1) v.set("RES_SCALE", fstr(g.scale));
    if (g.epi == 3) v.set("OUT_SCALE", fstr(g.scale));
    if (g.up_offset_rows) v.set("UP_OFFSET_ROWS", g.up_offset_rows);
    if (s.xrows) v.set("XROWS", s.xrows);
    if (g.argmax) {
        JITLLM_CHECK(s.n_mat == 1 && (g.epi == 0 || g.epi == 3) && s.warp && !batch_,
                     "the fused pick needs the decode output gemv");
        v.set("ARGMAX", 1);
        if (g_.step_advance) v.set("ARGMAX_ADVANCE", 1);
        s_.scratch["argmax_key"] = 16;
        s_.scratch["token_out"] = 16;
    }
    gemv_load_defines(v, g, s);
    return v;
}

void Lowering::gemv_load_defines(Variant& v, const Gemv& g, const GemvShape& s) const {
    const bool q8x = act_q8_type(s.type);  // x quantized to Q8_0 blocks (gemv.cu GEMV_XQ8)
    // Register cap: 2 resident blocks per SM doubles the bytes in flight of the plain-type loops;
    // the staged quantized loops lose a little with it, so they keep the compiler's choice
    // (512 resident threads per SM: 2 blocks of 256, 1 of 512, 4 of 128)
    const int min_blocks = o_.gemv_min_blocks > 0 ? o_.gemv_min_blocks : (s.plain() ? std::max(1, 512 / s.block) : 0);
    if (min_blocks > 0) v.set("MIN_BLOCKS", min_blocks);
    if (o_.gemv_prefetch > 0) v.set("PREFETCH", o_.gemv_prefetch);
    if (s.bulk) {
        v.set("BULK", 1).set("BULK_CH", s.ring.chunk).set("BULK_S", s.ring.slots);
        // slots a warp fills before its PDL wait (gemv.early_slots, gemv.early_slots.KIND; the rest
        // after the x prologue, issued as soon as its loads are out with gemv.fill_at_loads)
        const bool early_default = !batch_ && o_.gemv_fill_at_loads;
        const auto for_kind = o_.gemv_early_slots_for.find(s.kind);
        const int pre = for_kind != o_.gemv_early_slots_for.end()   ? for_kind->second
                        : o_.gemv_early_slots > 0                     ? o_.gemv_early_slots
                        : early_default && s.type == GgmlType::Q4_0 ? 2
                        : early_default && s.type == GgmlType::Q8_0 ? 3
                                                                    : 0;
        if (pre > 0 && pre < s.ring.slots) {
            v.set("BULK_PRE", pre);
            if (o_.gemv_fill_at_loads) v.set("BULK_FILL_AT_LOADS", 1);
        }
        // each lane's x units of every chunk in registers (gemv.cu XREG; gemv.x_regs=off: not) where
        // they take at most ~40 registers: 4 units of Q4_0 (two int8 planes and (d, 8 * sum)), 8 of
        // Q8_0. The same bits
        if (o_.gemv_x_regs && s.wsplit && !batch_ && !s.xrows && q8x) {
            const bool q4 = s.type == GgmlType::Q4_0;
            const int units = (q4 ? s.ring.chunk / 2 : s.ring.chunk) / 16;  // 16-byte units of a row chunk
            const int nx = static_cast<int>(s.cols / s.ring.chunk) * ((units + 31) / 32);
            if (nx <= (q4 ? 4 : 8)) v.set("XREG", 1);
        }
    } else if (!s.xrows && (g_.gemv_early_all || (g_.gemv_early && s.wsplit))) {
        v.set("EARLY_LOAD", 1);
    }
    // The norm weight of a normed Q4_0 / Q8_0 gemv's x prologue loaded before the PDL wait (gemv.cu
    // NW_EARLY): by default with gemv.early=load for the gemvs that keep the lanes loop; the bulk
    // gemvs only with gemv.norm_early=on
    if (g.norm_w && q8x && !s.xrows && !batch_ &&
        (o_.gemv_norm_early > 0 || (o_.gemv_norm_early < 0 && g_.gemv_early && !s.bulk)))
        v.set("NW_EARLY", 1);
    if (s.wsplit && o_.gemv_split_pipe >= 0) v.set("GEMV_SPLIT_PIPE", o_.gemv_split_pipe);
    // row sets round the blocks first for plain-type bulk gemvs (for the split types it measured
    // slower) and the xrows gemvs (their blocks are one an SM)
    if ((s.bulk && s.plain_type) || s.xrows) v.set("WARP_MAJOR", 1);
    if (o_.gemv_q4_shift && s.wsplit && s.type == GgmlType::Q4_0) v.set("GEMV_Q4_SHIFT", 1);
    if (g_.gemv_trigger && (g_.gemv_trigger_all || (s.bulk && s.wsplit))) v.set("TRIGGER_EARLY", 1);
    // kv.l2_prefetch: the q/k/v gemv (RoPE + KV store) prefetches the earlier K/V rows into L2 for
    // the attention after it (gemv.cu KV_PF; decode, whole-cache attention only)
    if (o_.kv_l2_prefetch > 0 && g.rope && s.bulk && !batch_ && !windowed()) v.set("KV_PF", o_.kv_l2_prefetch);
    if (s.wsplit && o_.gemv_split_units > 0) v.set("GEMV_SPLIT_U", o_.gemv_split_units);
}

void Lowering::gemv_launch(KernelStep& k, const Gemv& g, const GemvShape& s, bool after_attn) const {
    k.grid = Dim3(unsigned((s.out_rows + s.rpb - 1) / s.rpb));
    // bulk: one block per SM
    if (s.bulk) k.grid.x = std::min(k.grid.x, unsigned(d_.sm_count));
    // gemv.grid=capped: at most 2 blocks per SM, each looping over its passes (one x prologue per
    // block instead of one per ROWS_PER_BLOCK rows)
    if (g_.gemv_cap_all || (g_.gemv_cap && s.wsplit && s.cols >= kCapCols))
        k.grid.x = std::min(k.grid.x, unsigned(2 * d_.sm_count));
    // gemv.grid.KIND=N: this kernel on at most N blocks (e.g. attn_output on half the SMs, the next
    // kernel's blocks landing on the other half while it runs). Default: a Q4_0 bulk gemv right
    // after decode attention (attn_output: one partial pass, its rows prefetched beside attention)
    // on 76 of every 132 SMs, so gate/up's blocks land on the others at attention's end and
    // (early_blocks) fill their whole rings there
    if (const auto gf = o_.gemv_grid_for.find(s.kind); gf != o_.gemv_grid_for.end())
        k.grid.x = std::min(k.grid.x, unsigned(gf->second));
    else if (s.bulk && after_attn && s.type == GgmlType::Q4_0)
        k.grid.x = std::min(k.grid.x, unsigned(std::max(1, d_.sm_count * 76 / 132)));
    // gemv.cluster.KIND=N: clusters of N blocks the kernel does not use, so its blocks hold whole
    // TPCs and leave whole ones to the next kernel's clusters (gemv.xq's pairs)
    if (const auto cf = o_.gemv_cluster_for.find(s.kind); cf != o_.gemv_cluster_for.end() && cf->second > 1) {
        k.grid.x = std::max(1u, k.grid.x / unsigned(cf->second)) * unsigned(cf->second);
        k.cluster = Dim3(unsigned(cf->second), 1, 1);
    }
    // sample.fuse=gemv: one atomicMax and one ticket a block, so at most 2 blocks an SM (looping)
    if (g.argmax) k.grid.x = std::min(k.grid.x, unsigned(2 * d_.sm_count));
    // batch.xrows: one block an SM (x of every row in shared memory, the accumulators of every row
    // in registers), each looping over its passes
    if (s.xrows) k.grid.x = std::min(k.grid.x, unsigned(d_.sm_count));
    k.block = Dim3(unsigned(s.block));
    // Q4_0 / Q8_0: x quantized to Q8_0 blocks in shared memory (gemv.cu GEMV_XQ8; XROWS: a copy a row)
    k.smem = act_q8_type(s.type) ? unsigned(s.cols) + unsigned(s.cols / 32) * 8 : s.x_smem ? unsigned(s.cols) * 4 : 0;
    if (s.xrows) k.smem *= unsigned(s.xrows);
    if (s.bulk) k.smem = unsigned((k.smem + 127) / 128 * 128) + unsigned(s.ring.ring_bytes);  // gemv.cu BULK_XBYTES + rings
}

void Lowering::gemv_args(KernelStep& k, const Gemv& g, const GemvShape& s, const KArg& rope_arg) {
    k.args.clear();
    for (int m = 0; m < 3; ++m) k.args.push_back(m < s.n_mat ? weight(g.w[size_t(m)], g.w_off[size_t(m)]) : null());
    for (int m = 0; m < 3; ++m) k.args.push_back(m < s.n_mat && s.bias ? weight(g.bias[size_t(m)]) : null());
    for (int m = 0; m < 3; ++m) k.args.push_back(m < int(g.y.size()) ? slot(g.y[size_t(m)]) : null());
    k.args.push_back(slot(g.x));
    k.args.push_back(weight(g.norm_w));
    k.args.push_back(g.epi == 1 ? slot(g.y[0]) : null());
    k.args.push_back(f32(g.eps));
    k.args.push_back(g.rope ? slot(Slot::Pos) : null());
    k.args.push_back(g.rope ? kcache(g.rope_layer) : null());
    k.args.push_back(g.rope ? vcache(g.rope_layer) : null());
    k.args.push_back(rope_arg);
    k.args.push_back(f32(g.rope ? c_.rope_base : 0.0f));
    if (s.xrows) k.args.push_back(rows_arg());  // n_rows: the step's
    if (g.argmax) {  // y1: the pick's key and ticket, y2: the token (gemv.cu ARGMAX)
        k.args[7] = scratch("argmax_key");
        k.args[8] = scratch("token_out");
        if (g_.step_advance) {  // ARGMAX_ADVANCE: pos_ptr the position slot, k_cache the token slot,
            k.args[13] = slot(Slot::Pos);  // v_cache the host's pinned ring of picks
            k.args[14] = slot(Slot::Token);
            k.args[15] = host_ring();
        }
    }
}

uint64_t Lowering::gemv_bytes(const Gemv& g, const GemvShape& s) const {
    uint64_t b = uint64_t(s.cols) * 4 + uint64_t(s.out_rows) * 4;
    b += uint64_t(g.weight_rows()) * g.w[0]->row_bytes;
    if (g.norm_w) b += uint64_t(s.cols) * 4;
    if (g.epi == 1 || s.bias) b += uint64_t(s.out_rows) * 4;
    if (g.rope) b += 2 * uint64_t(c_.kv_dim()) * (o_.kv_f32 ? 4 : 2);  // the cache rows
    return b;
}

void Lowering::gemv(std::vector<size_t> idx, const Gemv& g) {
    const GemvShape s = gemv_shape(idx, g);
    const bool after_attn = !batch_ && !out_->empty() && !out_->back().tasks.empty() &&
                            t(size_t(out_->back().tasks.back())).kind == K::Attn;
    KArg rope_arg;
    Variant v = gemv_variant(g, s, rope_arg);
    const std::string algo = std::string("gemv_") + (s.warp ? "warp_" : "tree_") + lowercase(type_name(s.type)) +
                             (s.wsplit ? "_split" : "") + (s.bulk ? "_bulk" : "");
    auto& k = add(idx, algo, v);
    gemv_launch(k, g, s, after_attn);
    gemv_args(k, g, s, rope_arg);
    k.bytes = gemv_bytes(g, s);
    gemv_xq_links(k, g, s);
}

}  // namespace jitllm::lowering
