// gemv: y[r] = sum_k W[r,k] * x[k] for one activation vector (decode), with fusions:
//   NORM_IN  x -> x * rsqrt(mean(x^2) + eps) * nw  first (attn_norm + attn_qkv in one kernel)
//   N_MAT    up to 3 matrices of the same WTYPE and COLS in one launch (Q, K, V), row ranges
//            [0,ROWS0), [ROWS0,+ROWS1), [..,+ROWS2) with separate W, bias and y pointers
//   EPI      0: y = acc (+bias)   1: y = resid + RES_SCALE * acc (y may alias resid; N_MAT=1)
//            2: y = silu(gate.x) * (up.x), gate = W0 rows, up = W1 rows (N_MAT=2) or W0 rows
//               + UP_OFFSET_ROWS (N_MAT=1, phi3's fused ffn_up); ROWS0 = output rows
//            3: y = acc * OUT_SCALE (granite's 1/logit_scale)
//            4: q, k, v (N_MAT=3) with RoPE on q and k (adjacent pairs, rope.cu's PAIRING 0, as
//               cpu::rope) and k, v stored into the KV cache row *pos_ptr (the decode step's
//               attn_rope + attn_kv_store); defines HEAD_DIM, N_ROT, HAS_FREQ_FACTORS, KV_T,
//               ATTN_TEMP, ATTN_TEMP_FLOOR (q's temperature, common/rope_angle.cuh)
//
// params:  common/gemv_params.cuh (each define, its meaning and its default)
// launch:  grid  = ceil(OUT_ROWS / ROWS_PER_BLOCK) (fewer also correct: blocks loop; BULK: at most
//          one block per SM), grid.y =
//          rows of a batch step (row r: x + r * COLS, y_m + r * ROWS_m, resid + r * ROWS0; 1 in decode;
//          XROWS > 1: ceil(rows / XROWS), block row GEMV_BY taking rows GEMV_BY * XROWS ..);
//          ROWS_INNER = NB > 0 instead: grid.x = NB x rows, block b takes row b % rows of row group
//          b / rows (the rows of a group run side by side and share the weights through L2),
//          block = BLOCK, dynamic smem = Q4_0/Q8_0: COLS * 5 / 4, else X_SMEM ? COLS * 4 : 0 bytes (the host raises
//          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES above 48 KiB);
//          OUT_ROWS = ROWS0 (EPI=2) or ROWS0 + ROWS1 + ROWS2.
// args:    (w0, w1, w2, b0, b1, b2, y0, y1, y2, x, norm_w, resid, eps, pos_ptr, k_cache, v_cache,
//          freq_factors, freq_base); unused ones = null (the last five: EPI=4 only).
//          PRECOND: W pointers, x and norm_w 16-byte aligned; y and x do not overlap.
// bytes:   sum over matrices of ROWS_m * row_bytes(WTYPE, COLS) + COLS * 4 (x) + OUT_ROWS * 4
//          (+ COLS * 4 norm weight, + OUT_ROWS * 4 resid / bias each, + 2 cache rows EPI=4)
// reference: cpu::matvec (+ cpu::rms_norm before, cpu::swiglu / add_scaled after)
//            test: tests/gpu/kernels_vs_cpu_test.cpp, tests/gpu/kernels_gemv_rows.cpp (GemvRowsVsCpu)
//
// ALGO history: one algorithm (warp per rows, see gemv_dot.cuh); a persistent multi-stage
// kernel would be the next one.

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME gemv
#define WTYPE Q8_0
#define BLOCK 256
#define ROWS_PER_BLOCK 16
#define REDUCE 1
#define X_SMEM 1
#define NORM_IN 1
#endif

#include "common/matmul_defines.cuh"
#include "common/gemv_params.cuh"  // the defines' meaning and defaults
#include "common/async_copy.cuh"  // unconditional: the build's include expansion takes each file once
#include "common/cluster.cuh"
#include "common/xq8_group.cuh"  // XQ_OUT
#if BULK
// a warp item: BULK_CH columns of each of its GEMV_DR rows (split layout: the quants, then the
// chunk's scales; plain types: the elements)
#define BULK_NCH (COLS / BULK_CH)  // items per pass
#define BULK_QB (WTYPE == Q4_0 ? BULK_CH / 2 : WTYPE == Q8_0 ? BULK_CH : BULK_CH * QK_BYTES(WTYPE))
#define BULK_SB (GEMV_XQ8 ? BULK_CH / 16 : 0)  // f16 scales, one per 32 columns
#define BULK_RB (BULK_QB + BULK_SB)
// x in front of the rings: the int8 copy (GEMV_XQ8) or the float copy (X_SMEM), 128-byte rounded
#define BULK_XBYTES (((GEMV_XQ8 ? COLS + COLS / 32 * 8 : COLS * 4) + 127) / 128 * 128)
static_assert(BULK_CH % 256 == 0 && COLS % BULK_CH == 0 && BULK_S >= 1, "BULK: whole 256-column chunks");
#endif
#define GROUP (REDUCE ? 32 : BLOCK)
#define GEMV_XT ((COLS + 4 * BLOCK - 1) / (4 * BLOCK))  // float4 of x per thread
#define GEMV_XC (GEMV_XT < 8 ? GEMV_XT : 8)             // ... loaded per chunk
#include "common/gemv_dot.cuh"

#include "common/gemv_passes.cuh"  // pass geometry, the defines' rules, a pass's weight rows

extern "C" __global__ void GEMV_LAUNCH_BOUNDS
KERNEL_NAME(const void* w0, const void* w1, const void* w2, const float* b0, const float* b1,
            const float* b2, float* y0, float* y1, float* y2, const float* x,
            const float* norm_w, const float* resid, float eps, const int* pos_ptr, void* k_cache,
            void* v_cache, const float* freq_factors, float freq_base GEMV_XROWS_PARAM) {
#if REDUCE
    __shared__ float red[XROWS > 1 ? XROWS * 33 : 32];
#else
    __shared__ float red[GEMV_DR > 1 ? GEMV_DR * BLOCK : BLOCK];
#endif
#if GEMV_STAGED
    __shared__ __align__(16) uint8_t stage_all[GEMV_GPB * GEMV_DR * GEMV_STAGE_BYTES];
#else
    uint8_t* stage_all = nullptr;
#endif
    const int tid = threadIdx.x;
#if ROWS_INNER
    // batch rows innermost: blocks r = 0..n-1 of one row group are consecutive, so the n rows'
    // blocks read the same weights at about the same time (L2 hits after the first)
    const int n_batch = gridDim.x / ROWS_INNER;
    const int bx_ = blockIdx.x / n_batch, by_ = blockIdx.x % n_batch;
#define GEMV_BX bx_
#define GEMV_BY by_
#define GEMV_NBX ROWS_INNER
#else
#define GEMV_BX blockIdx.x
#define GEMV_BY blockIdx.y
#define GEMV_NBX gridDim.x
#endif
    // group g's first output row; WARP_MAJOR: a pass's row sets go round the blocks first (group
    // 0 of every block, then group 1, ...), so a last, partial pass spreads over every block
    // instead of filling the first ones (8B q/k/v on 132 blocks of 16 warps: 3072 row sets, the
    // second pass's 960 on 60 blocks block-major: those SMs stream 32 sets, the others 16)
#if WARP_MAJOR
#define GEMV_O_FIRST(g) (((g) * GEMV_NBX + GEMV_BX) * GEMV_OPG)
#else
#define GEMV_O_FIRST(g) ((GEMV_BX * GEMV_GPB + (g)) * GEMV_OPG)
#endif
#define GEMV_O_STRIDE (GEMV_NBX * GEMV_GPB * GEMV_OPG)  // output rows of one pass of every group
#define GEMV_ROW0(g) GEMV_O_FIRST(g)
    if (GEMV_BY) {  // batch row (the batch phase: row GEMV_BY of the step; XROWS: its first row)
        const unsigned long long r = (unsigned long long)GEMV_BY * XROWS;
        x += r * COLS;
        y0 += r * ROWS0;
        if (N_MAT > 1) y1 += r * ROWS1;
        if (N_MAT > 2) y2 += r * ROWS2;
        if (EPI == 1) resid += r * ROWS0;
    }
    const uint8_t* W0 = static_cast<const uint8_t*>(w0);
    const uint8_t* W1 = static_cast<const uint8_t*>(w1);
    const uint8_t* W2 = static_cast<const uint8_t*>(w2);
#if TRIGGER_EARLY
    pdl_launch_dependents();  // the next kernel may take whatever this one leaves of the SMs now
#endif
#if PREFETCH > 0
    {
        // weights do not depend on the previous kernel: start their first lines now
        constexpr int LINES = ((PREFETCH < GEMV_ROW_BYTES ? PREFETCH : GEMV_ROW_BYTES) + 127) / 128;
        constexpr int RM = EPI == 2 ? 2 : 1;  // weight rows per output row
        for (int idx = tid; idx < ROWS_PER_BLOCK * RM * LINES; idx += BLOCK) {
            const int line = idx % LINES, rr = idx / LINES;
            const int o = GEMV_BX * ROWS_PER_BLOCK + rr / RM;
            if (o >= GEMV_OUT_ROWS) continue;
#if EPI == 2
            const uint8_t* row = (rr % RM == 0 || N_MAT == 1)
                ? W0 + (unsigned long long)(o + (rr % RM ? UP_OFFSET_ROWS : 0)) * GEMV_ROW_BYTES
                : W1 + (unsigned long long)o * GEMV_ROW_BYTES;
#else
            const uint8_t* row = mat_row(W0, W1, W2, o);
#endif
            prefetch_l2(row + 128 * line);
        }
    }
#endif
#if GEMV_EARLY
    // weights do not depend on the previous kernel: the group's first step of its first pass
    // goes out before the PDL wait (with PDL, while the previous kernel drains) and the x prologue
    PlainSet<GEMV_DR> early;
    {
        const uint8_t* rows0[GEMV_DR];
        pass_rows(W0, W1, W2, GEMV_ROW0(tid / GROUP), rows0);
        plain_load<GEMV_DR>(early, rows0, 0, tid % GROUP);
    }
#endif
#if BULK
    // this warp's items: passes o_first + p * o_stride, BULK_NCH column chunks each, through its
    // ring of BULK_S slots; weights do not depend on the previous kernel, so the first BULK_S
    // items go out now (with PDL: while the previous kernel drains) and during the x prologue
    __shared__ __align__(8) uint64_t bulk_bar[GEMV_GPB * BULK_S];
    extern __shared__ __align__(128) uint8_t bulk_dyn[];
    const int bulk_w = tid / 32, lane = tid % 32;
    const int o_first = GEMV_O_FIRST(bulk_w), o_stride = GEMV_O_STRIDE;
    const int n_items = (o_first < GEMV_OUT_ROWS ? (GEMV_OUT_ROWS - 1 - o_first) / o_stride + 1 : 0) * BULK_NCH;
#define BULK_PASS_ROW(i) (o_first + ((i) / BULK_NCH) * o_stride)
    const uint32_t bar0 = smem_addr(bulk_bar + bulk_w * BULK_S);
    const uint32_t ring = smem_addr(bulk_dyn + BULK_XBYTES + bulk_w * BULK_S * BULK_SLOT);
#if KV_PF
    // the L2 prefetch's share: this warp's index among the grid's warps, and their count
    const unsigned long long pf_nw = (unsigned long long)GEMV_NBX * GEMV_GPB,
                             pf_w = (unsigned long long)GEMV_BX * GEMV_GPB + bulk_w;
    auto kv_prefetch = [&](int n_pos) {  // lane 0: this warp's share of K and V rows [0, n_pos)
        constexpr unsigned long long ROW_B = (unsigned long long)ROWS1 * sizeof(KV_T);
        static_assert(ROW_B % 16 == 0, "KV_PF: 16-byte multiples of cache rows");
        bulk_prefetch_l2_share(k_cache, (unsigned long long)n_pos * ROW_B, pf_w, pf_nw);
        bulk_prefetch_l2_share(v_cache, (unsigned long long)n_pos * ROW_B, pf_w, pf_nw);
    };
#endif
    auto bulk_issue = [&](int i) {  // lane 0: item i into slot i % BULK_S
        const uint8_t* rows[GEMV_DR];
        pass_rows(W0, W1, W2, BULK_PASS_ROW(i), rows);
        const int c = i % BULK_NCH;
        const uint32_t bar = bar0 + 8 * (i % BULK_S), dst = ring + (i % BULK_S) * BULK_SLOT;
        mbar_arrive_expect_tx(bar, BULK_SLOT);
#pragma unroll
        for (int r = 0; r < GEMV_DR; ++r) {
            bulk_g2s(dst + r * BULK_RB, rows[r] + c * BULK_QB, BULK_QB, bar);
#if GEMV_XQ8
            bulk_g2s(dst + r * BULK_RB + BULK_QB, rows[r] + GEMV_QBYTES + c * BULK_SB, BULK_SB, bar);
#endif
        }
    };
#if BULK_PRE_B
    const int bulk_pre = int(GEMV_BX) < BULK_PRE_B ? BULK_S : BULK_PRE;  // slots before the PDL wait
#else
    constexpr int bulk_pre = BULK_PRE;
#endif
    if (lane == 0) {
        for (int s = 0; s < BULK_S; ++s) mbar_init(bar0 + 8 * s, 1);
        mbar_init_fence();
        for (int i = 0; i < min(bulk_pre, n_items); ++i) bulk_issue(i);
#if KV_PF == 1 || KV_PF == 2
        // PRECOND: *pos_ptr and the rows before it are final before the step's first kernel
        if (KV_PF == 1 || n_items <= BULK_S) kv_prefetch(*pos_ptr);
#endif
    }
    __syncwarp();
#if BULK_PRE < BULK_S
    // lane 0: the rest of the ring's first fill. Only BULK_PRE slots a warp go out before the PDL
    // wait, so x's loads do not queue behind a whole ring of weight copies; these go out once x is
    // in, or with BULK_FILL_AT_LOADS as soon as x's loads are issued
    auto late_fill = [&] {
        if (lane == 0) {
            for (int i = bulk_pre; i < min(BULK_S, n_items); ++i) bulk_issue(i);
        }
    };
#endif
    if (n_items <= BULK_S) {
        pdl_launch_dependents();  // every load of this warp is out
    }
#endif
#if XQ_OUT
    // The consumer's groups of 32 rows: unit u of this block's passes (XQ_PP passes of a group; with
    // XQ_CL 2, a pass of a cluster of 2 blocks whose 16 + 16 rows are the group) has 32 slots and an
    // mbarrier in the cluster leader (rank 0). XQ_CL 1: the warps' stores and 32 / GEMV_OPG arrivals;
    // XQ_CL 2: asynchronous stores that complete 128 bytes of transactions (the warps never wait for
    // the other block). Initialized before the cluster barrier's arrive; every block waits on it
    // before its first store. Unit u is quantized by the leader's warp u % GEMV_GPB after its own
    // unit u + XQ_LAG (by then the others' unit u is done: no waiting in the stream) or after its last
    __shared__ float xq_val[XQ_NP * 32];
#if XQ_NORM
    __shared__ float xq_nw[XQ_NP * 32];  // (the rows' norm weights, beside their values in xq_val)
#endif
    __shared__ __align__(8) uint64_t xq_bar[XQ_NP];
    if (GEMV_O_STRIDE * XQ_NP < GEMV_OUT_ROWS) __trap();  // PRECOND: XQ_NP covers the grid's passes
    if (tid == 0) {
        for (int i = 0; i < XQ_NP; ++i) {
            mbar_init(smem_addr(xq_bar + i), XQ_CL > 1 ? 1 : 32 / GEMV_OPG);
            if (XQ_CL > 1) mbar_arrive_expect_tx(smem_addr(xq_bar + i), 32 * 4);
        }
        mbar_init_fence();
    }
#if XQ_CL > 1
    const bool xq_leader = cluster_rank() == 0;
    cluster_arrive();
#else
    constexpr bool xq_leader = true;
    __syncthreads();
#endif
    float xq_h = 0.0f;  // lane i < GEMV_OPG: the pass's output row o0 + i
    int xq_np = 0;      // passes this warp (and every warp of its cluster) has done
    // the leader's warp for unit u: its group quantized into y1 once every value is in
    auto xq_quantize = [&](int u) {
        const int lane = tid & 31;
#if XQ_CL > 1
        mbar_wait_cluster(smem_addr(xq_bar + u), 0);
        const int row0 = GEMV_O_FIRST(0) + u * GEMV_O_STRIDE;  // the group's row 0 (leader's warp 0)
#else
        mbar_wait(smem_addr(xq_bar + u), 0);
        const int row0 = GEMV_ROW0(0) + u * GEMV_O_STRIDE;
#endif
#if XQ_NORM
        xq8_group_store_norm<XQ_C, XQ_PLANES>(xq_val[u * 32 + lane], xq_nw[u * 32 + lane], row0 / 32, reinterpret_cast<uint8_t*>(y1), lane);
#else
        xq8_group_store<XQ_C, XQ_PLANES>(xq_val[u * 32 + lane], row0 / 32, reinterpret_cast<uint8_t*>(y1), lane);
#endif
    };
#endif
#if NW_EARLY && NORM_IN && GEMV_XQ8 && !XQ_IN && XROWS == 1
    // the norm weight is a weight: its loads go out now, with the early ring slots, so that only x's are
    // issued after the wait
    NwPre<COLS, BLOCK> nw_pre;
    static_assert(NwPre<COLS, BLOCK>::ok, "NW_EARLY: x in one chunk of the prologue");
    nw_pre.load(norm_w);
#define GEMV_NW_PRE , &nw_pre
#else
#define GEMV_NW_PRE
#endif
    pdl_wait();  // x, norm_w's producer, resid and y belong to earlier kernels
    XSrc xs;
    xs.nw = norm_w;
    xs.inv = 1.0f;
#if XROWS > 1
    const int nx = min(XROWS, n_rows - int(GEMV_BY) * XROWS);  // the block's activation rows
#endif
    // --- prologue: x into shared memory and/or the rms of x (every block does it: x is small)
#include "common/gemv_x_prologue.cuh"
    (void)eps;
#if BULK && BULK_PRE < BULK_S && !(BULK_FILL_AT_LOADS && GEMV_XQ8 && XROWS == 1)
    late_fill();  // now that x is in
#endif
#if BULK && XREG
    XRegs xr;
    xr.load(xs, lane);  // this lane's x units of every chunk, once for all passes
#endif
#if XQ_OUT && XQ_CL > 1
    cluster_wait();  // the leader's barriers initialized before any store to its slots
#endif

    // --- groups walk over passes of GEMV_OPG output rows
    const int g = tid / GROUP, gt = tid % GROUP;
#if EPI == 4
    const int pos = *pos_ptr;  // the decode position (an earlier kernel's write: after the PDL wait)
#endif
    uint8_t* stage = stage_all ? stage_all + g * GEMV_DR * GEMV_STAGE_BYTES : nullptr;
#if BULK
    int item = 0;  // this warp's next item (BULK_NCH per pass)
#endif
#if ARGMAX
    unsigned long long am_best = 0ull;  // the best key of the rows this thread wrote
#endif
    for (int o0 = GEMV_O_FIRST(g); o0 < GEMV_OUT_ROWS; o0 += GEMV_O_STRIDE) {
#define GEMV_FIRST_PASS (o0 == GEMV_O_FIRST(g))
#define GEMV_LAST_PASS (o0 + GEMV_O_STRIDE >= GEMV_OUT_ROWS)
        float acc[GEMV_NACC];  // XROWS: activation row j's at j * GEMV_DR
#pragma unroll
        for (int i = 0; i < GEMV_NACC; ++i) acc[i] = 0.0f;
        // the epilogue's own loads go out now, before the pass's dot products, so their latency
        // is not added at the end of the group's last pass (the kernel's tail): thread gt < OPG
        // of the group takes output row o0 + gt's residual (EPI=1) or RoPE angle (EPI=4)
#if EPI == 1
#if XQ_NORM
        // (the next gemv's norm weight of this thread's row, for the quantized copy)
        const float xq_w = gt < GEMV_OPG && o0 + gt < GEMV_OUT_ROWS ? __ldg(norm_w + o0 + gt) : 0.0f;
#endif
        // (XROWS: thread j * GEMV_OPG + i takes activation row j's)
        float res_pre = 0.0f;
#if XROWS > 1
        if (gt < GEMV_OPG * nx && o0 + gt % GEMV_OPG < GEMV_OUT_ROWS)
            res_pre = resid[(unsigned long long)(gt / GEMV_OPG) * ROWS0 + o0 + gt % GEMV_OPG];
#else
        if (gt < GEMV_OPG && o0 + gt < GEMV_OUT_ROWS) res_pre = resid[o0 + gt];
#endif
#elif EPI == 4
        float rope_c = 1.0f, rope_s = 0.0f;
        if (gt < GEMV_OPG && o0 + gt < GEMV_OUT_ROWS) {
            const int o = o0 + gt;
            const int m = o < ROWS0 ? 0 : o < ROWS0 + ROWS1 ? 1 : 2;
            const int dim = (m == 0 ? o : o - ROWS0) % HEAD_DIM;
            if (m < 2 && dim < N_ROT) rope_angle(pos, dim / 2, freq_factors, freq_base, &rope_c, &rope_s);
        }
#endif
#if BULK
#if XREG
#pragma unroll
#endif
        for (int c = 0; c < BULK_NCH; ++c, ++item) {
            const int slot = item % BULK_S;
            mbar_wait(bar0 + 8 * slot, (item / BULK_S) & 1);
#if XREG
            bulk_dot_xr<GEMV_DR>(bulk_dyn + BULK_XBYTES + (bulk_w * BULK_S + slot) * BULK_SLOT, xr, c, lane, acc);
#else
            bulk_dot<GEMV_DR>(bulk_dyn + BULK_XBYTES + (bulk_w * BULK_S + slot) * BULK_SLOT, xs, c, lane, acc);
#endif
            __syncwarp();  // every lane's reads of the slot are done before it is refilled
            const int next = item + BULK_S;
            if (next < n_items) {
                if (lane == 0) {
                    fence_proxy_async();  // the generic-proxy reads before the async-proxy writes
                    bulk_issue(next);
#if KV_PF == 2
                    if (next == n_items - 1) kv_prefetch(*pos_ptr);
#endif
                }
                if (next == n_items - 1) {
                    pdl_launch_dependents();  // this warp's last load is out
                }
            }
        }
#else
        const uint8_t* rows[GEMV_DR];
        pass_rows(W0, W1, W2, o0, rows);
#if XROWS > 1
        rows_dot_x<GEMV_DR, GEMV_XQB>(rows, xs, nx, gt, acc);
#else
#if GEMV_EARLY
        if (GEMV_FIRST_PASS)
            rows_dot_pre<GEMV_DR>(rows, xs, gt, acc, stage, early);
        else
#endif
            rows_dot<GEMV_DR>(rows, xs, gt, acc, stage);
#endif
        if (GEMV_LAST_PASS) pdl_launch_dependents();  // last pass
#endif

        // --- reduce each row's partial sums over the group
#if REDUCE
#pragma unroll
        for (int i = 0; i < GEMV_NACC; ++i) acc[i] = warp_sum(acc[i]);
#else
#pragma unroll
        for (int i = 0; i < GEMV_DR; ++i) red[i * BLOCK + gt] = acc[i];
        __syncthreads();
        for (int s = BLOCK / 2; s > 0; s >>= 1) {
            if (gt < s) {
#pragma unroll
                for (int i = 0; i < GEMV_DR; ++i) red[i * BLOCK + gt] += red[i * BLOCK + gt + s];
            }
            __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < GEMV_DR; ++i) acc[i] = red[i * BLOCK];
        __syncthreads();  // red is rewritten by the next pass
#endif

        // --- epilogue: thread i of the group writes output row o0 + i (XROWS: thread j * GEMV_OPG + i,
        // activation row j's)
#pragma unroll
        for (int j = 0; j < XROWS; ++j) {
            float* const y0j = y0 + (unsigned long long)j * ROWS0;
            float* const y1j = N_MAT > 1 ? y1 + (unsigned long long)j * ROWS1 : y1;
            float* const y2j = N_MAT > 2 ? y2 + (unsigned long long)j * ROWS2 : y2;
            const float* const residj = EPI == 1 ? resid + (unsigned long long)j * ROWS0 : resid;
            (void)y1j; (void)y2j; (void)residj;
#pragma unroll
            for (int i = 0; i < GEMV_OPG; ++i) {
                const int o = o0 + i;
#if XROWS > 1
                if (gt != j * GEMV_OPG + i || o >= GEMV_OUT_ROWS || j >= nx) continue;
#else
                if (gt != i || o >= GEMV_OUT_ROWS) continue;
#endif
#if EPI == 2
                float gate = acc[GEMV_DR * j + 2 * i], up = acc[GEMV_DR * j + 2 * i + 1];
#if HAS_BIAS
                gate += b0[o];
                up += N_MAT == 2 ? b1[o] : b0[o + UP_OFFSET_ROWS];
#endif
                const float h = gate / (1.0f + expf(-gate)) * up;  // as cpu::swiglu
                y0j[o] = h;
#if XQ_OUT
                xq_h = h;
#endif
#else
                float v = acc[GEMV_DR * j + i];
                // which matrix: o in [0,ROWS0) -> 0, then 1, then 2
                const int m = (N_MAT == 1 || o < ROWS0) ? 0 : (N_MAT == 2 || o < ROWS0 + ROWS1) ? 1 : 2;
                const int r = m == 0 ? o : m == 1 ? o - ROWS0 : o - ROWS0 - ROWS1;
#if HAS_BIAS
                v += (m == 0 ? b0 : m == 1 ? b1 : b2)[r];
#endif
                float* y = m == 0 ? y0j : m == 1 ? y1j : y2j;
#if EPI == 1
                const float yr = res_pre + (float)(RES_SCALE) * v;  // res_pre: resid[r], loaded at the pass's start
                y[r] = yr;
#if XQ_OUT
                xq_h = yr;  // (XQ_NORM: the next gemv's x before its norm)
#endif
#elif EPI == 3
                y[r] = v * (float)(OUT_SCALE);
#if ARGMAX
                {
                    const unsigned long long kk = pick_key(v * (float)(OUT_SCALE), r);
                    am_best = kk > am_best ? kk : am_best;
                }
#endif
#elif EPI == 4
                // q and k rows: RoPE with the partner row r ^ 1 (same pass; rope.cu's arithmetic);
                // k and v rows: also into the KV cache row *pos_ptr
                const int dim = r % HEAD_DIM;
                if (m < 2 && dim < N_ROT) {
                    float vp = acc[GEMV_DR * j + (i ^ 1)];
#if HAS_BIAS
                    vp += (m == 0 ? b0 : b1)[r ^ 1];
#endif
                    float c = rope_c, sn = rope_s;  // this row's angle, from the pass's start
                    const float x0 = (dim & 1) ? vp : v, x1 = (dim & 1) ? v : vp;
                    v = (dim & 1) ? __fadd_rn(__fmul_rn(x0, sn), __fmul_rn(x1, c))
                                  : __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, sn));
                }
                if (ATTN_TEMP != 0.0f && m == 0) v = __fmul_rn(v, attn_temperature(pos));  // q, after RoPE
                y[r] = v;
                if (m > 0) {
                    KV_T* cache = static_cast<KV_T*>(m == 1 ? k_cache : v_cache);
                    store_kv(cache + (unsigned long long)pos * ROWS1 + r, v);
                }
#else
                y[r] = v;
#if ARGMAX
                {
                    const unsigned long long kk = pick_key(v, r);
                    am_best = kk > am_best ? kk : am_best;
                }
#endif
#endif
#endif
            }
        }
#if XQ_OUT
        {
            // this warp's rows into its unit's slots in the cluster leader. Rows o0 .. o0 + OPG - 1
            // are in range together: ROWS0 and a unit's 32 rows are multiples of 32
            const int p = xq_np++, u = p / XQ_PP, r32 = o0 & 31;
            const uint32_t val = smem_addr(xq_val + u * 32 + r32 + gt), bar = smem_addr(xq_bar + u);
#if XQ_CL > 1
            if (gt < GEMV_OPG) st_async_cluster_f32(val, bar, 0, xq_h);
#else
            if (gt < GEMV_OPG) xq_val[u * 32 + r32 + gt] = xq_h;
#if XQ_NORM
            if (gt < GEMV_OPG) xq_nw[u * 32 + r32 + gt] = xq_w;
#endif
            __syncwarp();
            if (gt == 0) mbar_arrive(bar);
            (void)val;
#endif
            if (xq_leader && p % XQ_PP == XQ_PP - 1 && u >= XQ_LAG && (u - XQ_LAG) % GEMV_GPB == g) xq_quantize(u - XQ_LAG);
        }
#endif
    }
#if XQ_OUT
    for (int u = max(0, xq_np / XQ_PP - XQ_LAG); u < xq_np / XQ_PP; ++u)  // the last XQ_LAG units'
        if (xq_leader && u % GEMV_GPB == g) xq_quantize(u);
    // (the other blocks may leave: the leader stays until every arrival, and so every write to its
    // shared memory, is in)
#endif
#if ARGMAX
    {
        // the block's best key (warp shuffles, then warp 0's lane 0 over the warps), the grid's by
        // atomicMax; the last block to take a ticket reads (and zeroes) the winner
        __shared__ unsigned long long am_warp[BLOCK / 32];
        unsigned long long kb = am_best;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const unsigned long long ok = __shfl_xor_sync(0xffffffffu, kb, o);
            kb = ok > kb ? ok : kb;
        }
        if ((tid & 31) == 0) am_warp[tid >> 5] = kb;
        __syncthreads();
        if (tid == 0) {
            for (int w = 1; w < BLOCK / 32; ++w) kb = am_warp[w] > kb ? am_warp[w] : kb;
            unsigned long long* key = reinterpret_cast<unsigned long long*>(y1);
            unsigned* ticket = reinterpret_cast<unsigned*>(key + 1);
            if (kb) atomicMax(key, kb);
            __threadfence();  // this block's key before its ticket
            if (atomicAdd(ticket, 1u) == gridDim.x - 1) {
                __threadfence();
                const unsigned long long best = atomicExch(key, 0ull);
                const int tok = best ? pick_key_id(best) : 0;
                *reinterpret_cast<int*>(y2) = tok;
#if ARGMAX_ADVANCE
                static_cast<int*>(v_cache)[*pos_ptr & 3] = tok;  // for the host, without a copy back
                *static_cast<int*>(k_cache) = tok;                // the next step's token
                *const_cast<int*>(pos_ptr) += 1;                  // and position
#endif
                *ticket = 0u;  // ready for the next replay
            }
        }
    }
#endif
    (void)b0; (void)b1; (void)b2; (void)y1; (void)y2; (void)resid; (void)W1; (void)W2;
    (void)pos_ptr; (void)k_cache; (void)v_cache; (void)freq_factors; (void)freq_base;
}
