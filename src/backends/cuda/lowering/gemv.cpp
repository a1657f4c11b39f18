// Lowering of matrix-vector products (gemv.cu): geometry, bulk rings, the x-quantizing producer links.
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
    const int min_slots = o_.gemv_bulk_min_slots > 0 ? o_.gemv_bulk_min_slots : 4;  // --gemv-bulk-min-slots
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

void Lowering::gemv(std::vector<size_t> idx, const Gemv& g) {
    const WeightTensor* w0 = g.w[0];
    const int cols = int(w0->cols);
    const int n_mat = int(g.w.size());
    const bool warp = g_.gemv_warp;
    const bool wsplit = split(g.w);
    const bool plain = is_plain(w0->type) || wsplit;
    const int out_rows = g.epi == 2 ? g.rows[0] : g.rows[0] + (n_mat > 1 ? g.rows[1] : 0) + (n_mat > 2 ? g.rows[2] : 0);
    // x in shared memory when it fits beside the kernel's up-to-40 KiB weight staging
    const bool x_smem = int64_t(cols) * 4 + 40 * 1024 <=
                        int64_t(d_.max_shared_block());
    // gemv.load=bulk: decode's gemvs (a warp per row set) stream their rows into per-warp
    // shared-memory rings, one block per SM; by default the split-layout gemvs of >= 4096
    // columns and rows and every plain-type one with x in shared memory and whole 256-column
    // chunks; forced: every split-layout gemv too; where x and the smallest rings fit
    const bool plain_type = is_plain(w0->type);
    const int64_t bulk_x = act_q8_type(w0->type) ? int64_t(cols) + cols / 32 * 8 : int64_t(cols) * 4;
    // (--batch-bulk: the batch phase's gemv list too; each row of a step its own blocks)
    const bool bulk_able = warp && (!batch_ || (small_ && o_.batch_bulk)) &&
                           (wsplit || (plain_type && x_smem && cols % 256 == 0)) &&
                           bulk_shape(w0->type, cols, 2, 16, bulk_x).fits;
    // --gemv-lanes-for KIND: this kernel keeps the lanes loop (by its first task's kind)
    const std::string first_kind(task_kind_name(t(idx[0]).kind));
    const bool bulk = g_.gemv_bulk && bulk_able &&
                      (g_.gemv_bulk_all || plain_type || (wsplit && cols >= kCapCols && out_rows >= kCapCols));
    // --batch-xrows: a block reads each weight row once for up to xrows activation rows, their
    // int8 copies side by side in shared memory
    // (as many rows as fit shared memory beside 2 KiB of static: halved from --batch-xrows until
    // they do; none below 2: each row reads the weights then)
    // (bulk_x: one row's int8 copy, gemv.cu GEMV_XQB)
    int xrows = g.xrows > 1 && batch_ && wsplit && act_q8_type(w0->type) && warp && !bulk ? g.xrows : 0;
    while (xrows > 1 && xrows * bulk_x + 2048 > int64_t(d_.max_shared_block())) xrows /= 2;
    const bool xr = xrows > 1;
    // --gemv-block: threads per block for the plain-type and split loops (the staged
    // quantized loops size their staging by it: they keep 256); bulk: 16 warps (H200: 8B
    // Q4_0 618 tok/s with 512 threads, 509 with 256, 569 with 1024)
    const bool after_attn = !batch_ && !out_->empty() && !out_->back().tasks.empty() &&
                            t(size_t(out_->back().tasks.back())).kind == K::Attn;
    const int block = o_.gemv_block > 0 && plain ? o_.gemv_block : !bulk && !xr ? 256 : 512;
    // rows per block pass: each warp takes R rows (REDUCE=1) or the block takes R (REDUCE=0);
    // bulk: 2 weight rows per warp item (gate/up: one output row)
    // (RoPE in the epilogue: an even count, the rotation pairs (2i, 2i + 1) within a pass;
    // --gemv-rows 1 and 3 become 2 and 4 there)
    int r = o_.gemv_rows > 0 ? o_.gemv_rows : bulk && g.epi == 2 ? 1 : 2;
    // --gemv-rows-for KIND=N: this kernel's own count (e.g. ffn_down=4: x's shared-memory reads a row halved)
    if (const auto rf = o_.gemv_rows_for.find(first_kind); rf != o_.gemv_rows_for.end()) r = rf->second;
    if (g.rope && r % 2 != 0) ++r;
    const int rpb = warp ? (block / 32) * r : r;
    const bool bias = !g.bias.empty() && g.bias[0];
    Variant v("cuda/gemv.cu", "");
    v.set("WTYPE", wtype_define(w0->type)).set("COLS", cols).set("N_MAT", n_mat);
    if (wsplit) v.set("WSPLIT", 1);
    v.set("ROWS0", g.rows[0]);
    if (n_mat > 1) v.set("ROWS1", g.rows[1]);
    if (n_mat > 2) v.set("ROWS2", g.rows[2]);
    v.set("BLOCK", block).set("ROWS_PER_BLOCK", rpb).set("REDUCE", int(warp));
    v.set("X_SMEM", int(x_smem && !act_q8_type(w0->type)));  // Q4_0/Q8_0: int8 x in smem
    v.set("NORM_IN", int(g.norm_w != nullptr)).set("HAS_BIAS", int(bias)).set("EPI", g.epi);
    if (g.rope) {
        JITLLM_CHECK(n_mat == 3 && g.epi == 0, "rope fusion needs the three q/k/v matrices");
        v.set("EPI", 4).set("HEAD_DIM", c_.head_dim).set("N_ROT", c_.n_rot)
            .set("HAS_FREQ_FACTORS", int(g.rope_freqs != nullptr)).set("KV_T", s_.kv_type);
    }
    const KArg rope_arg = g.rope ? rope_angles(v, g.rope_freqs) : null();
    if (g.epi == 1) v.set("RES_SCALE", fstr(g.scale));
    if (g.epi == 3) v.set("OUT_SCALE", fstr(g.scale));
    if (g.up_offset_rows) v.set("UP_OFFSET_ROWS", g.up_offset_rows);
    if (xr) v.set("XROWS", xrows);
    // Register cap: 2 resident blocks per SM doubles the bytes in flight of the plain-type
    // loops (measured on the H200: 1B F16 723 -> 1085 tok/s, 8B F16 179 -> 235 tok/s); the
    // staged quantized loops lose a little with it, so they keep the compiler's choice.
    // (512 resident threads per SM: 2 blocks of 256, 1 of 512, 4 of 128)
    const int min_blocks = o_.gemv_min_blocks > 0 ? o_.gemv_min_blocks : (plain ? std::max(1, 512 / block) : 0);
    if (min_blocks > 0) v.set("MIN_BLOCKS", min_blocks);
    if (o_.gemv_prefetch > 0) v.set("PREFETCH", o_.gemv_prefetch);
    int bulk_ring = 0;
    if (bulk) {
        const Bulk b = bulk_shape(w0->type, cols, g.epi == 2 ? 2 * r : r, block / 32, bulk_x);
        if (!b.fits)
            fail_usage("gemv.load=bulk with {} threads and {} rows per warp: {} bytes of rings beside x do not fit "
                       "the {} bytes of shared memory per block (lower --gemv-block or --gemv-rows)",
                       block, r, b.ring_bytes, d_.max_shared_block());
        v.set("BULK", 1).set("BULK_CH", b.chunk).set("BULK_S", b.slots);
        // slots a warp fills before its PDL wait (--gemv-early-slots; the rest after the x
        // prologue). The block trace showed the prologue's x loads queued 2-3 µs
        // behind the ring's first fill. H200, 8B Q4_0 tg128, two rounds: 4 of 5 slots first
        // 727.1 / 726.9 tok/s, 3: 725.0 / 725.0, all 5: 711.5 / 711.4 (2: 714.6, 1: 699.9);
        // 8B Q8_0 with 3: 455.7 against 456.6 with all (2: 446.0, 1: 433.8).
        // With the late slots issued as soon as the x prologue's loads are out
        // (BULK_FILL_AT_LOADS, --gemv-fill-at-loads, two rounds): Q4_0 2 slots
        // 742.1 / 741.7 against 723.7 / 724.0 with 4 and no hook (3: 721.4, 4: 706.7); Q8_0 3
        // slots 475.1 / 474.9 against 458.3 / 457.6 with all (2: 468.9, 4: 463.0)
        // (--gemv-early-slots-for KIND=N: this kernel's own count, by its first task's kind)
        const bool early_default = !batch_ && o_.gemv_fill_at_loads;
        const auto for_kind = o_.gemv_early_slots_for.find(first_kind);
        const int pre = for_kind != o_.gemv_early_slots_for.end()           ? for_kind->second
                        : o_.gemv_early_slots > 0                             ? o_.gemv_early_slots
                        : early_default && w0->type == GgmlType::Q4_0 ? 2
                        : early_default && w0->type == GgmlType::Q8_0 ? 3
                                                                      : 0;
        if (pre > 0 && pre < b.slots) {
            v.set("BULK_PRE", pre);
            if (o_.gemv_fill_at_loads) v.set("BULK_FILL_AT_LOADS", 1);
        }
        // each lane's x units of every chunk in registers (gemv.cu XREG; --no-gemv-x-regs: off) where
        // they take at most ~40 registers: 4 units of Q4_0 (two int8 planes and (d, 8 * sum)), 8 of
        // Q8_0. The same bits. H100, tg128: 8B Q4_0 627.80 / 627.76 against 622.18 /
        // 622.28 tok/s (+0.9 %), 8B Q8_0 358.94 against 358.10
        if (o_.gemv_x_regs && wsplit && !batch_ && !xr && act_q8_type(w0->type)) {
            const bool q4 = w0->type == GgmlType::Q4_0;
            const int units = (q4 ? b.chunk / 2 : b.chunk) / 16;  // 16-byte units of a row chunk
            const int nx = static_cast<int>(cols / b.chunk) * ((units + 31) / 32);
            if (nx <= (q4 ? 4 : 8)) v.set("XREG", 1);
        }
        bulk_ring = b.ring_bytes;
    } else if (!xr && (g_.gemv_early_all || (g_.gemv_early && wsplit))) {
        v.set("EARLY_LOAD", 1);
    }
    // The norm weight of a normed Q4_0 / Q8_0 gemv's x prologue loaded before the PDL wait (gemv.cu NW_EARLY):
    // by default with gemv.early=load for the gemvs that keep the lanes loop (H200, tg128, one
    // machine: 1B Q4_0 2400.44 against 2276.76 tok/s); the bulk gemvs only with --gemv-norm-early (8B Q4_0
    // 779.21 / 779.24 against 788.14 / 788.35, Q8_0 480.56 against 480.51)
    if (g.norm_w && act_q8_type(w0->type) && !xr && !batch_ &&
        (o_.gemv_norm_early > 0 || (o_.gemv_norm_early < 0 && g_.gemv_early && !bulk)))
        v.set("NW_EARLY", 1);
    if (wsplit && o_.gemv_split_pipe >= 0 && !xr) v.set("GEMV_SPLIT_PIPE", o_.gemv_split_pipe);
    // row sets round the blocks first: --gemv-warp-major, and by default for plain-type bulk
    // gemvs (8B F16 on two machines: 247.60 -> 248.07 and 251.23 -> 252.76 tok/s;
    // for the split types it measured +0.4 % on Q8_0 and -3.0 % on Q4_0)
    // (--batch-xrows: too; its blocks are one an SM)
    if ((bulk && plain_type) || xr) v.set("WARP_MAJOR", 1);
    if (o_.gemv_q4_shift && wsplit && w0->type == GgmlType::Q4_0) v.set("GEMV_Q4_SHIFT", 1);
    if (g.argmax) {
        JITLLM_CHECK(n_mat == 1 && (g.epi == 0 || g.epi == 3) && warp && !batch_, "the fused pick needs the decode output gemv");
        v.set("ARGMAX", 1);
        if (g_.step_advance) v.set("ARGMAX_ADVANCE", 1);
        s_.scratch["argmax_key"] = 16;
        s_.scratch["token_out"] = 16;
    }
    if (g_.gemv_trigger && (g_.gemv_trigger_all || (bulk && wsplit))) v.set("TRIGGER_EARLY", 1);
    // --kv-l2-prefetch: the q/k/v gemv (RoPE + KV store) prefetches the earlier K/V rows into
    // L2 for the attention after it (gemv.cu KV_PF; decode, whole-cache attention only). H200,
    // 8B Q8_0 at depth 4096: 396.70 -> 396.91 (last) / 392.74 (start): off
    if (o_.kv_l2_prefetch > 0 && g.rope && bulk && !batch_ && !windowed())
        v.set("KV_PF", o_.kv_l2_prefetch);
    if (wsplit && o_.gemv_split_units > 0) v.set("GEMV_SPLIT_U", o_.gemv_split_units);
    const std::string algo = std::string("gemv_") + (warp ? "warp_" : "tree_") + lowercase(type_name(w0->type)) +
                             (wsplit ? "_split" : "") + (bulk ? "_bulk" : "");
    auto& k = add(idx, algo, v);
    k.grid = Dim3(unsigned((out_rows + rpb - 1) / rpb));
    // bulk: one block per SM
    if (bulk) k.grid.x = std::min(k.grid.x, unsigned(d_.sm_count));
    // gemv.grid=capped: at most 2 blocks per SM, each looping over its passes (one x prologue per
    // block instead of one per ROWS_PER_BLOCK rows)
    if (g_.gemv_cap_all || (g_.gemv_cap && wsplit && cols >= kCapCols))
        k.grid.x = std::min(k.grid.x, unsigned(2 * d_.sm_count));
    // --gemv-grid-for KIND=N: this kernel on at most N blocks (e.g. attn_output on half the SMs,
    // the next kernel's blocks landing on the other half while it runs). Default: a Q4_0 bulk
    // gemv right after decode attention (attn_output: one partial pass, its rows prefetched
    // beside attention) on 76 of every 132 SMs, so gate/up's blocks land on the others at
    // attention's end and (early_blocks) fill their whole rings there. H200, 8B Q4_0 tg128, one
    // machine (before early_blocks): 100 SMs 752.2 against 745.2 / 745.3 on all 132
    // (92: 747.3, 96: 748.3, 104: 751.1, 108: 746.0, 116: 744.5, 124: 743.5, 66: 732.8); 8B Q8_0
    // 478.9 against 479.6 / 480.2: not applied. H100, with early_blocks, one machine,
    // two rounds: 76 SMs 648.97 / 649.07 against 635.69 / 635.28 on 100 (84: 644.9 / 644.8, 92:
    // 639.4 / 639.4, 66: 646.3 / 646.0); H200, one machine: 820.4 against 809.3 on 100
    if (const auto gf = o_.gemv_grid_for.find(first_kind); gf != o_.gemv_grid_for.end())
        k.grid.x = std::min(k.grid.x, unsigned(gf->second));
    else if (bulk && after_attn && w0->type == GgmlType::Q4_0)
        k.grid.x = std::min(k.grid.x, unsigned(std::max(1, d_.sm_count * 76 / 132)));
    // --gemv-cluster-for KIND=N: clusters of N blocks the kernel does not use, so its blocks hold
    // whole TPCs and leave whole ones to the next kernel's clusters (gemv.xq's pairs)
    if (const auto cf = o_.gemv_cluster_for.find(first_kind); cf != o_.gemv_cluster_for.end() && cf->second > 1) {
        k.grid.x = std::max(1u, k.grid.x / unsigned(cf->second)) * unsigned(cf->second);
        k.cluster = Dim3(unsigned(cf->second), 1, 1);
    }
    // sample.fuse=gemv: one atomicMax and one ticket a block, so at most 2 blocks an SM (looping)
    if (g.argmax) k.grid.x = std::min(k.grid.x, unsigned(2 * d_.sm_count));
    // --batch-xrows: one block an SM (x of every row in shared memory, the accumulators of
    // every row in registers), each looping over its passes
    if (xr) k.grid.x = std::min(k.grid.x, unsigned(d_.sm_count));
    k.block = Dim3(unsigned(block));
    // Q4_0 / Q8_0: x quantized to Q8_0 blocks in shared memory (gemv.cu GEMV_XQ8; XROWS: a copy a row)
    k.smem = act_q8_type(w0->type) ? unsigned(cols) + unsigned(cols / 32) * 8 : x_smem ? unsigned(cols) * 4 : 0;
    if (xr) k.smem *= unsigned(xrows);
    if (bulk) k.smem = unsigned((k.smem + 127) / 128 * 128) + unsigned(bulk_ring);  // gemv.cu BULK_XBYTES + rings
    k.args.clear();
    for (int m = 0; m < 3; ++m)
        k.args.push_back(m < n_mat ? weight(g.w[size_t(m)], g.w_off[size_t(m)]) : null());
    for (int m = 0; m < 3; ++m) k.args.push_back(m < n_mat && bias ? weight(g.bias[size_t(m)]) : null());
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
    if (xr) k.args.push_back(rows_arg());  // n_rows: the step's
    if (g.argmax) {  // y1: the pick's key and ticket, y2: the token (gemv.cu ARGMAX)
        k.args[7] = scratch("argmax_key");
        k.args[8] = scratch("token_out");
        if (g_.step_advance) {  // ARGMAX_ADVANCE: pos_ptr the position slot, k_cache the token slot,
            k.args[13] = slot(Slot::Pos);  // v_cache the host's pinned ring of picks
            k.args[14] = slot(Slot::Token);
            k.args[15] = host_ring();
        }
    }
    uint64_t b = uint64_t(cols) * 4 + uint64_t(out_rows) * 4;
    const int w_rows = g.epi == 2 && n_mat == 1 ? 2 * g.rows[0] : g.rows[0] + (n_mat > 1 ? g.rows[1] : 0) + (n_mat > 2 ? g.rows[2] : 0);
    b += uint64_t(w_rows) * w0->row_bytes;
    if (g.norm_w) b += uint64_t(cols) * 4;
    if (g.epi == 1 || bias) b += uint64_t(out_rows) * 4;
    if (g.rope) b += 2 * uint64_t(c_.kv_dim()) * (o_.kv_f32 ? 4 : 2);  // the cache rows
    k.bytes = b;
    // gate gemv.xq=producer: this gemv's x quantized by the SwiGLU gemv just before it
    const bool block_major = !k.variant.has("WARP_MAJOR") && !k.variant.has("LAST_SPREAD");
    const size_t at = out_->size() - 1;
    const bool xq_consumer = g_.gemv_xq && (w0->type == GgmlType::Q4_0 || g_.gemv_xq_all) && !batch_ && bulk &&
                             wsplit && act_q8_type(w0->type) && !xr && !g.norm_w && !k.variant.has("XQ_IN");
    if (xq_consumer && xq_prev_ && xq_prev_->at + 1 == at && xq_prev_->y == g.x && xq_prev_->rows == cols)
        xq_link((*out_)[at - 1], k, *xq_prev_, w0->type);
    else if (xq_consumer && at > 0 && g.x == Slot::Att && !o_.no_attn_xq && cols == c_.n_heads * c_.head_dim)
        attn_xq_link((*out_)[at - 1], k, cols, w0->type);
    xq_prev_.reset();
    if (bulk && warp && !batch_ && !xr && g.epi == 2 && block_major && !g.argmax && g.y.size() == 1)
        xq_prev_ = XqProducer{at, g.y[0], g.rows[0], rpb};
    // --gemv-xq-norm: a normed gemv (q/k/v, gate/up, the output head) whose x, the residual stream,
    // the kernel just before it wrote (the embedding, or a residual gemv whose block pass is one
    // group of 32 rows: 8B attn_output and ffn_down) takes x quantized from there
    const bool norm_consumer = g_.gemv_xq && o_.gemv_xq_norm && (w0->type == GgmlType::Q4_0 || g_.gemv_xq_all) &&
                               !batch_ && bulk && wsplit && act_q8_type(w0->type) && !xr && g.norm_w &&
                               !k.variant.has("XQ_IN");
    if (norm_consumer && norm_prev_ && norm_prev_->at + 1 == at && norm_prev_->y == g.x && norm_prev_->rows == cols)
        xq_norm_link((*out_)[at - 1], k, *norm_prev_, w0->type, g.norm_w);
    norm_prev_.reset();
    if (bulk && warp && !batch_ && !xr && g.epi == 1 && n_mat == 1 && block_major && !g.argmax && rpb == 32 &&
        out_rows % 32 == 0 && !k.variant.has("XQ_OUT"))
        norm_prev_ = NormProducer{at, g.y[0], out_rows, false};
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
        // ones (H200 8B Q4_0 tg128: 770.1 / 770.3 against 758.7 / 758.6); not where
        // --gemv-cluster-for names that kernel's kind
        if (x.at > 0) {
            KernelStep& before = (*out_)[x.at - 1];
            const auto kind = task_kind_name(t(size_t(before.tasks[0])).kind);
            if (before.variant.source == "cuda/gemv.cu" && before.cluster.x * before.cluster.y * before.cluster.z == 1 &&
                before.grid.x % 2 == 0 && int(before.grid.x) < d_.sm_count && before.layer == p.layer &&
                !o_.gemv_cluster_for.count(std::string(kind)))
                before.cluster = Dim3(2, 1, 1);
        }
    }
    if (o_.gemv_xq_lag != 1) p.variant.set("XQ_LAG", o_.gemv_xq_lag);  // --gemv-xq-lag
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

}  // namespace jitllm::lowering
