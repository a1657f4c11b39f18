// attention_decode: one query position against cached positions 0..*pos_ptr (inclusive).
//   s_p = (q_h . k_p) * SCALE,  out_h = sum_p softmax(s)_p * v_p,  kv head = h / (N_HEADS/N_KV_HEADS)
// One block serves all query heads of one kv head, so K/V are read once per group (HPB < QPG:
// QPG / HPB blocks per kv head, HPB query heads each, reading the same K/V).
// Online softmax over chunks of CH = NG * TILE positions (no shared memory sized by the
// context): a thread group of HEAD_DIM/VEC threads handles TILE positions of a chunk, each
// thread VEC dims (KV_LOAD-byte K and V loads, all TILE of them issued before any is used);
// the groups' (max, sum, output) states merge at the end.
//
// ALGO (history, llm.c style):
//   1  one block per kv head over the whole context; writes out.       grid = (N_KV_HEADS, 1)
//   2  split-KV (flash-decoding): the context is cut into chunks of CH positions; block
//      (kvh, y) takes chunks c_lo + y, c_lo + y + N_SPLITS, ... (c_lo: the first chunk in range).
//      Blocks with no chunk return at once. When one block is active (n_pos <= CH, or the
//      window fits one chunk) it writes out itself: one memory round trip after the position.
//      Otherwise each active block writes its partial state to scratch and the last to finish
//      (atomic ticket) combines them. grid = (N_KV_HEADS, N_SPLITS)
//      (until 2026-12-01 the context was cut into N_SPLITS equal parts at run time, so every
//      block was active from n_pos >= N_SPLITS and every token paid the scratch + ticket +
//      combine round trips: ~5 us per layer at short context; before that the combine was a
//      second kernel, <name>_reduce)
//
// params:  common/attn_decode_params.cuh (each define, its meaning, default and preconditions)
// launch:  grid (N_KV_HEADS * QPG / HPB, ALGO == 2 ? N_SPLITS : 1), block BLOCK, smem 0 (KV_STAGES: above)
// args:    (q, k_cache, v_cache, pos_ptr, out, scratch, seq_ptr, tickets, next_w, xq)   q, out: (N_HEADS, HEAD_DIM)
//          tickets (ALGO=2): grid.x zeroed unsigned counters (left zeroed after each launch)
//          BATCH=1 (ALGO 1, N_CTX): grid.z = rows; row r attends positions 0..pos_ptr[r] of the
//          cache of sequence seq_ptr[r] (causal within a prompt chunk)
//                  floats; caches: [n_ctx][N_KV_HEADS * HEAD_DIM] KV_T (this layer's base);
//                  scratch (ALGO=2): N_HEADS * N_SPLITS * (HEAD_DIM + 4) floats (rows of + 2 without MMA); scratch and
//                  tickets unused (ALGO=1)
//          PRECOND: 16-byte aligned pointers; 0 <= *pos_ptr < n_ctx.
// bytes:   n_pos * N_KV_HEADS * HEAD_DIM * 2 * sizeof(KV_T) + 2 * N_HEADS * HEAD_DIM * 4
//          (+ 2 * N_HEADS * min(N_SPLITS, chunks) * (HEAD_DIM + 4) * 4 for ALGO=2, > 1 chunk)
// reference: cpu::attention   test: tests/gpu/kernels_vs_cpu_test.cpp (one and several active
//            blocks, windows), tests/golden/prefill_modes_test.cpp (600-position prompts)

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME attention_decode
#define N_HEADS 32
#define N_KV_HEADS 8
#define HEAD_DIM 128
#define KV_T half
#define SCALE 0.08838834764831845f
#define ALGO 2
#define N_SPLITS 16
#define BLOCK 128
#define REDUCE 1
#endif

#include "common/common.cuh"
#include "common/async_copy.cuh"  // KV_STAGES (unconditional: the include expansion takes each file once)
#include "common/attn_split.cuh"  // mma_rows8 (MMA), cluster_barrier / ld_cluster_f32 (CLUSTER)
#include "common/xq8_group.cuh"   // XQ_OUT

#include "common/attn_decode_params.cuh"  // the defines' meaning, defaults and preconditions

// K/V of one position for this thread: KV_LOAD bytes (the upper half of w is unused for 8)
__device__ __forceinline__ uint4 kv_load(const KV_T* p) {
    if (KV_LOAD == 16) return ld_stream16_act(p);  // the previous kernel stored this position
    const uint2 v = ld_stream8_act(p);
    return make_uint4(v.x, v.y, 0u, 0u);
}

__device__ __forceinline__ void kv_to_float(uint4 w, float* f) {  // VEC floats
    if (sizeof(KV_T) == 2) {
        const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int i = 0; i < VEC / 2; ++i) {
            f[2 * i] = f16_lo(u[i]);
            f[2 * i + 1] = f16_hi(u[i]);
        }
    } else {
        f[0] = __uint_as_float(w.x);
        f[1] = __uint_as_float(w.y);
        f[2] = __uint_as_float(w.z);
        f[3] = __uint_as_float(w.w);
    }
}

template <int N> struct IntTag { static constexpr int value = N; };

#if VH2 || KH2
// d = a * b + c on f16 pairs, one rounding (sm_53+; the pair conversions need sm_80)
__device__ __forceinline__ uint32_t hfma2(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
#endif  // a compile-time count for a lambda


#if MMA
__device__ __forceinline__ uint32_t u4_word(const uint4& v, int i) {  // i: a compile-time constant
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
#endif

#ifdef MAX_REGS  // --attn-overlap: a register cap so a following gemv block fits beside two of these
#define ATTN_BOUNDS __maxnreg__(MAX_REGS)
#else
#define ATTN_BOUNDS __launch_bounds__(BLOCK)
#endif
extern "C" __global__ void ATTN_BOUNDS
KERNEL_NAME(const float* q, const KV_T* k_cache, const KV_T* v_cache, const int* pos_ptr,
            float* out, float* scratch, const int* seq_ptr, unsigned* tickets, const void* next_w, uint8_t* xq) {
    constexpr int KV_DIM = N_KV_HEADS * HEAD_DIM;
    // output i = v (i: head * HEAD_DIM + dim); XQ_OUT: also into its group's Q8_0 block, by the warp
    // whose 32 lanes hold the group's 32 outputs in this call
    auto put = [&](int i, float v) { store_out_xq8<N_HEADS * HEAD_DIM, XQ_PLANES, XQ_OUT>(out, xq, i, v); };
    // one shared array: the tree reduction's partial dots inside the loop, the group states
    // of MRG_H query heads at a time in the merge after it
    __shared__ __align__(16) float sm[MRG_FLOATS > RED_FLOATS ? MRG_FLOATS : RED_FLOATS];
    __shared__ float wgt[MRG_H * NGM];  // merge weights 2^(m_g - M) per head and group
    float* red = sm;
    float* mrg = sm;
    (void)red;
    pdl_launch_dependents();  // small grid: let the next kernel get scheduled
    const int tid = threadIdx.x, gi = tid / GS, gl = tid % GS;
#if NEXT_PF
    // the next kernel's matrix into L2 (this block's share) while this one reads K/V
    if (tid == 0 && (NEXT_PF_MIN == 0 || *pos_ptr + 1 >= NEXT_PF_MIN))
        bulk_prefetch_l2_share(next_w, (unsigned long long)(NEXT_PF),
                               (unsigned long long)blockIdx.y * gridDim.x + blockIdx.x,
                               (unsigned long long)gridDim.x * gridDim.y);
#else
    (void)next_w;
#endif
    const int bx = blockIdx.x;
    const int kvh = bx / HSPLIT;
    const int hb = kvh * QPG + (bx % HSPLIT) * HPB;  // this block's first query head
    uint4 kw[TILE], vw[TILE];
#if MMA && KV_STAGES
    // MMA with KV_STAGES: each lane copies exactly the 16-byte pieces its fragments read (mma_load_k/v
    // below: K rows pw + 8 j + mg at dims 32 u + 8 mc, V rows pw + 2 mc + (r & 1) + 8 (r >> 1) at dims
    // 64 x + 8 mg) into entries ((slot * MRE + e) * BLOCK + tid) of a ring in dynamic shared memory, so
    // completion is per thread (cp.async.wait_group) and no register holds a load in flight. Chunk c
    // into slot st: rows in [lo, hi) copied, the others zero-filled; row `skip` untouched; only row
    // `only` when only >= 0.
    extern __shared__ __align__(16) uint4 kv_ring[];
#if KV_ROWS
    // KV_ROWS: the ring holds whole rows instead: slot st = CH K rows, then CH V rows, of RSB bytes
    // each (the head's row + 16 bytes of padding, so the fragments' 16-byte reads of 8 rows spread
    // over the banks), completed on the slot's mbarrier. 1: one cp.async.bulk per row by warp 0 (rows
    // outside [first, end) not copied: their scores are masked, their V pieces read as zero); 2: the
    // block's 16-byte cp.async (rows outside zero-filled), each thread arriving once its copies land.
    constexpr int RSB = HEAD_DIM * (int)sizeof(KV_T) + 16;
    constexpr int BAR_B = 16 * ((KV_STAGES * 8 + 15) / 16);
    const uint32_t ring0 = smem_addr(kv_ring);
    const char* ringp = reinterpret_cast<const char*>(kv_ring);
    auto slot_off = [&](int st) { return BAR_B + st * 2 * CH * RSB; };
    // chunk c's rows in [lo, hi) (only row `only` when only >= 0) into slot st; arrive: the slot's
    // one arrival with its bytes (false: the bytes only, the arrival comes with the current row)
#if KV_ROWS == 2
    // chunk c into slot st: rows in [lo, hi) copied, the others zero-filled, row `skip` untouched, only
    // row `only` when only >= 0; every thread takes pieces tid, tid + BLOCK, .. (16 threads a row:
    // a warp instruction covers two whole rows); arrive: this thread's arrival once its copies land
    // (false: later, after the current row's copy)
    auto bulk_fill = [&](int c, int st, int lo, int hi, int only, bool arrive, int skip = -1) {
        constexpr int PPR = HEAD_DIM * (int)sizeof(KV_T) / 16;  // 16-byte pieces a row
        constexpr int NPC = 2 * CH * PPR;                       // pieces a chunk (K and V)
        static_assert(NPC % BLOCK == 0, "KV_ROWS 2: whole pieces per thread");
        const int p0 = c * CH;
        const unsigned long long hoff = (unsigned long long)(bx / HSPLIT) * HEAD_DIM;
#pragma unroll 4
        for (int k = 0; k < NPC / BLOCK; ++k) {
            const int i = k * BLOCK + (int)threadIdx.x;
            const int kv = i / (CH * PPR), row = (i / PPR) % CH, pc = i % PPR;
            const int p = p0 + row;
            if (p == skip || (only >= 0 && p != only)) continue;
            const bool ok = p >= lo && p < hi;
            const KV_T* src = (kv ? v_cache : k_cache) + (unsigned long long)(ok ? p : 0) * KV_DIM + hoff +
                              pc * (16 / (int)sizeof(KV_T));
            cp_async16(ring0 + slot_off(st) + kv * CH * RSB + row * RSB + pc * 16, src, ok ? 16 : 0);
        }
        if (arrive) mbar_arrive_cp_async(ring0 + 8 * st);
    };
#else
    auto bulk_fill = [&](int c, int st, int lo, int hi, int only, bool arrive, int skip = -1) {
        (void)skip;  // rows past hi are never copied here
        if (threadIdx.x >= 32) return;
        const int p0 = c * CH;
        const int a = only >= 0 ? only : max(lo, p0), b = only >= 0 ? only + 1 : min(hi, p0 + CH);
        const uint32_t bar = ring0 + 8 * st;
        const uint32_t bytes = b > a ? uint32_t(b - a) * 2u * HEAD_DIM * (uint32_t)sizeof(KV_T) : 0u;
        if (threadIdx.x == 0) {
            if (arrive)
                mbar_arrive_expect_tx(bar, bytes);
            else
                mbar_expect_tx(bar, bytes);
        }
        const unsigned long long hoff = (unsigned long long)(bx / HSPLIT) * HEAD_DIM;
        for (int p = a + (int)threadIdx.x; p < b; p += 32) {
            const uint32_t dk = ring0 + slot_off(st) + (p - p0) * RSB;
            bulk_g2s(dk, k_cache + (unsigned long long)p * KV_DIM + hoff, HEAD_DIM * (uint32_t)sizeof(KV_T), bar);
            bulk_g2s(dk + CH * RSB, v_cache + (unsigned long long)p * KV_DIM + hoff, HEAD_DIM * (uint32_t)sizeof(KV_T), bar);
        }
    };
#endif
    if (threadIdx.x == 0) {
        // one arrival a phase (1: warp 0's lane 0 with the bytes), or one per thread (2)
        for (int st = 0; st < KV_STAGES; ++st) mbar_init(ring0 + 8 * st, KV_ROWS == 2 ? BLOCK : 1);
        mbar_init_fence();
    }
    __syncthreads();
#endif
    auto ring_issue_mma = [&](int c, int st, int lo, int hi, int skip, int only) {
        const int ln = threadIdx.x % 32, w = threadIdx.x / 32, g = ln / 4, cq = ln % 4;
        const int pw = c * CH + 16 * w;
        const unsigned long long hoff = (unsigned long long)(bx / HSPLIT) * HEAD_DIM;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int p = pw + 8 * j + g;
            if (p == skip || (only >= 0 && p != only)) continue;
            const bool ok = p >= lo && p < hi;
            const KV_T* kr = k_cache + (unsigned long long)(ok ? p : 0) * KV_DIM + hoff + 8 * cq;
#pragma unroll
            for (int u = 0; u < MKU; ++u)
                cp_async16(smem_addr(kv_ring + (st * MRE + j * MKU + u) * BLOCK + threadIdx.x), kr + 32 * u, ok ? 16 : 0);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int p = pw + 2 * cq + (r & 1) + 8 * (r >> 1);
            if (p == skip || (only >= 0 && p != only)) continue;
            const bool ok = p >= lo && p < hi;
            const KV_T* vr = v_cache + (unsigned long long)(ok ? p : 0) * KV_DIM + hoff + 8 * g;
#pragma unroll
            for (int x = 0; x < MVU; ++x)
                cp_async16(smem_addr(kv_ring + (st * MRE + 2 * MKU + r * MVU + x) * BLOCK + threadIdx.x), vr + 64 * x,
                           ok ? 16 : 0);
        }
    };
    // chunk c into slot st when `issue`: rows in [lo, hi) (the others zero-filled or masked), row
    // `skip` left out, only row `only` when only >= 0. The row ring (KV_ROWS): the copies arrive on
    // the slot's barrier when `arrive` (else the slot's arrival comes with a later copy). The
    // per-lane ring: then one commit group when `commit`, empty when !issue, so every thread
    // counts the same groups (else the copies join the next group).
    auto ring_fill = [&](bool issue, int c, int st, int lo, int hi, int skip, int only, bool arrive, bool commit) {
#if KV_ROWS
        (void)commit;
        if (issue) bulk_fill(c, st, lo, hi, only, arrive, skip);
#else
        (void)arrive;
        if (issue) ring_issue_mma(c, st, lo, hi, skip, only);
        if (commit) cp_async_commit();
#endif
    };
#if EARLY_KV
    // the position (PRECOND below) and the ring's first KV_STAGES - 1 chunks of this block before the
    // PDL wait, rows before the position only (the current row is the q/k/v kernel's store: copied
    // after the wait, below); one commit group per slot, empty past the block's last chunk
    {
        const int cur = *pos_ptr;
        if ((int)blockIdx.y > cur / CH) return;  // no chunk for this block (as n_active below)
#pragma unroll
        for (int i = 0; i < KV_STAGES - 1; ++i) {
            const int c = (int)blockIdx.y + i * N_SPLITS;
            ring_fill(c <= cur / CH, c, i, 0, cur, cur, -1, c != cur / CH, true);
        }
    }
#endif
#elif EARLY_KV
    {
        // the position (PRECOND above) and this block's first chunk, rows before the position
        const int cur = *pos_ptr;
        if ((int)blockIdx.y > cur / CH) return;  // no chunk for this block (as n_active below)
        const KV_T* kb0 = k_cache + kvh * HEAD_DIM + gl * VEC;
        const KV_T* vb0 = v_cache + kvh * HEAD_DIM + gl * VEC;
        if (((int)blockIdx.y + 1) * CH <= cur) {  // every row before the position: constant offsets
            const unsigned long long r = (unsigned long long)((int)blockIdx.y * CH + gi) * KV_DIM;
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                kw[t] = kv_load(kb0 + r + t * NG * KV_DIM);
                vw[t] = kv_load(vb0 + r + t * NG * KV_DIM);
            }
        } else {
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const int p = (int)blockIdx.y * CH + t * NG + gi;
                kw[t] = p < cur ? kv_load(kb0 + (unsigned long long)p * KV_DIM) : make_uint4(0, 0, 0, 0);
                vw[t] = p < cur ? kv_load(vb0 + (unsigned long long)p * KV_DIM) : make_uint4(0, 0, 0, 0);
            }
        }
#if KV_PF
        // the later chunks' rows (K for r < CH, V for the rest), whole HEAD_DIM rows, into L2
        for (int c = (int)blockIdx.y + N_SPLITS; c * CH < cur; c += N_SPLITS)
            for (int r = tid; r < 2 * CH; r += BLOCK) {
                const int p = c * CH + r % CH;
                if (p < cur)
                    bulk_prefetch_l2((r < CH ? k_cache : v_cache) + (unsigned long long)p * KV_DIM + kvh * HEAD_DIM,
                                     HEAD_DIM * (uint32_t)sizeof(KV_T));
            }
#endif
    }
#endif
    pdl_wait();
#if PRELOAD
    // block y = 0 always takes chunk 0 (no window): its K/V loads go out with the position's,
    // not one round trip after it; rows past the position are zeroed below, never used
    if (blockIdx.y == 0) {
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            const int p = t * NG + gi;
            if (p < N_CTX) {
                kw[t] = kv_load(k_cache + (unsigned long long)p * KV_DIM + kvh * HEAD_DIM + gl * VEC);
                vw[t] = kv_load(v_cache + (unsigned long long)p * KV_DIM + kvh * HEAD_DIM + gl * VEC);
            }
        }
    }
#endif
#if BATCH
    // causal: this row sees its sequence's cache up to its own position (the batch's K/V rows
    // were stored before this kernel)
    const int row = blockIdx.z;
    const int n_pos = pos_ptr[row] + 1;
    q += (unsigned long long)row * N_HEADS * HEAD_DIM;
    out += (unsigned long long)row * N_HEADS * HEAD_DIM;
    k_cache += (unsigned long long)seq_ptr[row] * N_CTX * KV_DIM;
    v_cache += (unsigned long long)seq_ptr[row] * N_CTX * KV_DIM;
#else
    const int n_pos = *pos_ptr + 1;
#endif
    const KV_T* kb = k_cache + kvh * HEAD_DIM + gl * VEC;
    const KV_T* vb = v_cache + kvh * HEAD_DIM + gl * VEC;
    // q (written by the previous kernel) goes out with the position load; scaled by SCALE * log2(e)
    // so the scores come out in base 2 (every exponential below is exp2, the maxima m in base 2)
    constexpr float QS = (float)(SCALE) * 1.4426950408889634f;
#if MMA
    // lane = 4 mg + mc of warp wp. The tiles' rows are the group's query heads (mg < QPG; the
    // rest are zero); q is rounded to f16 once, as A fragments in the permuted k order the K
    // loads below use: lane mc, k-steps 2u and 2u + 1 <-> dims 32u + 8mc + 0..3 and + 4..7.
    const int lane = tid % 32, wp = tid / 32, mg = lane / 4, mc = lane % 4;
    uint32_t qa[2 * MKU][2];
#pragma unroll
    for (int u = 0; u < MKU; ++u) {
        float4 x0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), x1 = x0;
        if (mg < QPG) {
            const float* qp = q + (hb + mg) * HEAD_DIM + 32 * u + 8 * mc;
            x0 = *reinterpret_cast<const float4*>(qp);
            x1 = *reinterpret_cast<const float4*>(qp + 4);
        }
        qa[2 * u][0] = pack_16x2<0>(x0.x, x0.y), qa[2 * u][1] = pack_16x2<0>(x0.z, x0.w);
        qa[2 * u + 1][0] = pack_16x2<0>(x1.x, x1.y), qa[2 * u + 1][1] = pack_16x2<0>(x1.z, x1.w);
    }
    // head mg's state in this lane: o[t] = output dims VD(2 mc, t) and VD(2 mc + 1, t) (below);
    // m, l over this lane's positions (l summed over the lane quad after the loop)
    float o[MNT][2], m = -JL_INF, l = 0.0f;
#pragma unroll
    for (int t = 0; t < MNT; ++t) o[t][0] = o[t][1] = 0.0f;
#else
#if KH2
    uint32_t qr[HPB][VEC / 2];  // q * QS as f16 pairs (the scale applied before rounding keeps the products small)
#else
    float qr[HPB][VEC];
#endif
    float o[HPB][VEC], m[HPB], l[HPB];
#pragma unroll
    for (int h = 0; h < HPB; ++h) {
        const float* qh = q + (hb + h) * HEAD_DIM + gl * VEC;
#pragma unroll
        for (int i = 0; i < VEC; i += 4) {
            const float4 v = *reinterpret_cast<const float4*>(qh + i);
#if KH2
            qr[h][i / 2] = pack_16x2<0>(v.x * QS, v.y * QS), qr[h][i / 2 + 1] = pack_16x2<0>(v.z * QS, v.w * QS);
#else
            qr[h][i] = v.x * QS, qr[h][i + 1] = v.y * QS, qr[h][i + 2] = v.z * QS, qr[h][i + 3] = v.w * QS;
#endif
        }
#pragma unroll
        for (int i = 0; i < VEC; ++i) o[h][i] = 0.0f;
        m[h] = -JL_INF;
        l[h] = 0.0f;
    }
#endif

    // sliding window (phi3's attention.sliding_window): only the last WINDOW positions
    const int first = WINDOW > 0 ? max(0, n_pos - WINDOW) : 0;
    const int end = n_pos;
    // chunks c_lo..c_hi hold the positions in range; this block takes c_lo + blockIdx.y, then
    // every N_SPLITS-th (ALGO 1: N_SPLITS = 1, blockIdx.y = 0: all of them)
    const int c_lo = first / CH, c_hi = (n_pos - 1) / CH;
    const int n_active = min(N_SPLITS, c_hi - c_lo + 1);  // blocks with a chunk (block-uniform)
#if CLUSTER
    // with several active blocks the cluster's inactive ones stay for the cluster barriers (no
    // chunk: their loop runs no trip, their state is empty: m = -inf, l = 0, o = 0)
    if ((int)blockIdx.y >= n_active && n_active == 1) return;
#else
    if ((int)blockIdx.y >= n_active) return;
#endif

    // chunk c's K/V rows of this thread (zero outside [first, end)); chunk 0 was loaded before
    // the position was known (PRELOAD): only its rows past the position are zeroed
    auto chunk_load = [&](int c, uint4* kt, uint4* vt) {
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            const int p = c * CH + t * NG + gi;
            if (PRELOAD && c == 0) {
                if (!(p < end)) kt[t] = vt[t] = make_uint4(0, 0, 0, 0);
            } else if (p >= first && p < end) {
                kt[t] = kv_load(kb + (unsigned long long)p * KV_DIM);
                vt[t] = kv_load(vb + (unsigned long long)p * KV_DIM);
            } else {
                kt[t] = vt[t] = make_uint4(0, 0, 0, 0);
            }
        }
    };
    // PIPE 2: one of K or V of a later chunk c (> 0: never the preloaded chunk 0) into rows xt
    // A chunk whose rows are all in range (every one but the last of a block at depth, without a
    // window) is loaded from one row pointer at constant offsets: no per-row bound checks, zero
    // fills or 64-bit address arithmetic (~190 of the loop's ~450 instructions a trip were those,
    // Nsight Compute's SASS page; 118 -> 112 registers). Measured neutral on the H200 (8B Q8_0
    // depth 4096 402.2 against 403.2, noise): the loop is not issue-bound inside the decode graph.
    auto half_load = [&](int c, const KV_T* base, uint4* xt) {
        if (c * CH >= first && c * CH + CH <= end) {  // block-uniform
            const KV_T* r = base + (unsigned long long)(c * CH + gi) * KV_DIM;
#pragma unroll
            for (int t = 0; t < TILE; ++t) xt[t] = kv_load(r + t * NG * KV_DIM);
            return;
        }
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            const int p = c * CH + t * NG + gi;
            xt[t] = p >= first && p < end ? kv_load(base + (unsigned long long)p * KV_DIM) : make_uint4(0, 0, 0, 0);
        }
    };
    (void)half_load;
    (void)chunk_load;  // (EARLY_KV: the first chunk came before the wait, later ones by half_load)
#if MMA
    // warp wp's rows of chunk c: K of positions pw + 8 j + mg (lane mc: dims 32 u + 8 mc .. + 7,
    // the B fragments of k-steps 2u, 2u + 1 as they are); V of rows pw + 2 mc, +1, +8, +9 at dims
    // 64 x + 8 mg .. + 7 (a warp's load: 128 contiguous bytes per row). Rows outside [first, end)
    // are zero (V must be: its products meet zero weights).
    uint4 kq[2][MKU], vq[4][MVU];
    auto mma_load_k = [&](int c) {
        const int pw = c * CH + 16 * wp;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int p = pw + 8 * j + mg;
            const bool ok = p >= first && p < end;
            const KV_T* kr = k_cache + (unsigned long long)(ok ? p : 0) * KV_DIM + kvh * HEAD_DIM + 8 * mc;
#pragma unroll
            for (int u = 0; u < MKU; ++u) kq[j][u] = ok ? kv_load(kr + 32 * u) : make_uint4(0, 0, 0, 0);
        }
    };
    auto mma_load_v = [&](int c) {
        const int pw = c * CH + 16 * wp;
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int p = pw + 2 * mc + (r & 1) + 8 * (r >> 1);
            const bool ok = p >= first && p < end;
            const KV_T* vr = v_cache + (unsigned long long)(ok ? p : 0) * KV_DIM + kvh * HEAD_DIM + 8 * mg;
#pragma unroll
            for (int x = 0; x < MVU; ++x) vq[r][x] = ok ? kv_load(vr + 64 * x) : make_uint4(0, 0, 0, 0);
        }
    };
#if PIPE == 2
    mma_load_k(c_lo + (int)blockIdx.y);
    mma_load_v(c_lo + (int)blockIdx.y);
#endif
#elif EARLY_KV
    // the first chunk's rows came before the PDL wait; the current position's row is the q/k/v
    // kernel's store: read now (c_lo = 0: no window)
#pragma unroll
    for (int t = 0; t < TILE; ++t) {
        const int p = (int)blockIdx.y * CH + t * NG + gi;
        if (p == end - 1) {
            kw[t] = kv_load(kb + (unsigned long long)p * KV_DIM);
            vw[t] = kv_load(vb + (unsigned long long)p * KV_DIM);
        }
    }
#elif PIPE
    chunk_load(c_lo + (int)blockIdx.y, kw, vw);
#endif
#if KV_STAGES && MMA
#if EARLY_KV
    // the current position's row, when its chunk went out before the wait (one of the block's first
    // KV_STAGES - 1): into its slot now, in the next commit group (the loop's last trip waits for all)
    {
        const int i = ((int)c_hi - (int)blockIdx.y) / N_SPLITS;
        if (((int)c_hi - (int)blockIdx.y) % N_SPLITS == 0 && i < KV_STAGES - 1)
            ring_fill(true, c_hi, i, first, end, -1, end - 1, true, false);
    }
#else
#pragma unroll
    for (int i = 0; i < KV_STAGES - 1; ++i) {
        const int c = c_lo + (int)blockIdx.y + i * N_SPLITS;
        ring_fill(c <= c_hi, c, i, first, end, -1, -1, true, true);
    }
#endif
    int it = 0;
#elif KV_STAGES
    // K/V through a ring of KV_STAGES chunks in dynamic shared memory, filled by 16-byte cp.async:
    // each thread copies exactly the rows it reads later (entry ((stage * 2 + kv) * TILE + t) *
    // BLOCK + tid), so completion is per thread (cp.async.wait_group), no block barrier; rows
    // outside [first, end) are zero-filled. KV_STAGES - 1 chunks stay in flight.
    static_assert(KV_LOAD == 16, "KV_STAGES: 16-byte K/V loads");
    extern __shared__ __align__(16) uint4 kv_ring[];
    auto ring_issue = [&](int c, int st) {
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            const int p = c * CH + t * NG + gi;
            const bool ok = p >= first && p < end;
            const unsigned long long off = ok ? (unsigned long long)p * KV_DIM : 0ull;
            cp_async16(smem_addr(kv_ring + ((st * 2 + 0) * TILE + t) * BLOCK + tid), kb + off, ok ? 16 : 0);
            cp_async16(smem_addr(kv_ring + ((st * 2 + 1) * TILE + t) * BLOCK + tid), vb + off, ok ? 16 : 0);
        }
    };
    // one commit group per ring slot, empty past the block's last chunk (uniform group counting)
#pragma unroll
    for (int i = 0; i < KV_STAGES - 1; ++i) {
        const int c = c_lo + (int)blockIdx.y + i * N_SPLITS;
        if (c <= c_hi) ring_issue(c, i);
        cp_async_commit();
    }
    int it = 0;
#endif
    // block-uniform trip count (REDUCE=0 synchronises inside)
    for (int c = c_lo + (int)blockIdx.y; c <= c_hi; c += N_SPLITS) {
        const int p0 = c * CH;
#if MMA
        // MMA: warp wp takes positions pw .. pw + 15 of the chunk (K and V rows: mma_load_k/v).
        // S = Q K^T on two n8 tiles of positions (tile j, column g <-> position pw + 8 j + g),
        // then the online softmax per head (row), then O += P V with P as the A fragment straight
        // from S's accumulators (k <-> positions pw + 0..15) and V as B, its rows paired per dim
        // (byte_perm): column g of output tile t <-> dim VD(g, t) = 64 (t / 8) + 8 g + t % 8.
        // No conversion instructions.
        const int pw = p0 + 16 * wp;
#if PIPE == 2
        // this chunk's K and V are in kq, vq (before the loop or during the last trip)
        const int c_next = c + N_SPLITS;
        const bool more = c_next <= c_hi;  // block-uniform
#elif KV_STAGES && KV_ROWS
        {
            // every warp has read slot (it - 1) % KV_STAGES into registers: the chunk KV_STAGES - 1
            // trips ahead goes into it; then this chunk's slot (its fill number it / KV_STAGES)
            if (it > 0) __syncthreads();
            const int cn = c + (KV_STAGES - 1) * N_SPLITS;
            ring_fill(cn <= c_hi, cn, (it + KV_STAGES - 1) % KV_STAGES, first, end, -1, -1, true, true);
            const int st = it % KV_STAGES;
            mbar_wait(ring0 + 8 * st, (unsigned)(it / KV_STAGES) & 1u);
            const char* ks = ringp + slot_off(st) + 16 * wp * RSB;  // this warp's 16 rows
#pragma unroll
            for (int j = 0; j < 2; ++j)
#pragma unroll
                for (int u = 0; u < MKU; ++u)
                    kq[j][u] = *reinterpret_cast<const uint4*>(ks + (8 * j + mg) * RSB + (32 * u + 8 * mc) * (int)sizeof(KV_T));
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int rr = 2 * mc + (r & 1) + 8 * (r >> 1);
                const bool ok = pw + rr >= first && pw + rr < end;  // V of a row never copied: zero
#pragma unroll
                for (int x = 0; x < MVU; ++x)
                    vq[r][x] = ok ? *reinterpret_cast<const uint4*>(ks + CH * RSB + rr * RSB + (64 * x + 8 * mg) * (int)sizeof(KV_T))
                                  : make_uint4(0, 0, 0, 0);
            }
            ++it;
        }
#elif KV_STAGES
        {
            // the chunk KV_STAGES - 1 trips ahead into the slot read one trip ago; then this chunk's
            // group (the newer ones may stay in flight; the last trip waits for all: its group may
            // hold the current row's copy, EARLY_KV)
            const int cn = c + (KV_STAGES - 1) * N_SPLITS;
            ring_fill(cn <= c_hi, cn, (it + KV_STAGES - 1) % KV_STAGES, first, end, -1, -1, true, true);
            if (c + N_SPLITS > c_hi)
                cp_async_wait<0>();
            else
                cp_async_wait<KV_STAGES - 1>();
            const int st = it % KV_STAGES;
#pragma unroll
            for (int j = 0; j < 2; ++j)
#pragma unroll
                for (int u = 0; u < MKU; ++u) kq[j][u] = kv_ring[(st * MRE + j * MKU + u) * BLOCK + tid];
#pragma unroll
            for (int r = 0; r < 4; ++r)
#pragma unroll
                for (int x = 0; x < MVU; ++x) vq[r][x] = kv_ring[(st * MRE + 2 * MKU + r * MVU + x) * BLOCK + tid];
            ++it;
        }
#else
        mma_load_k(c);
        mma_load_v(c);
#endif
        float sc[2][2];  // head mg, positions pw + 8 j + 2 mc + i
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            sc[j][0] = sc[j][1] = 0.0f;
#pragma unroll
            for (int u = 0; u < MKU; ++u) {
                mma_rows8(sc[j][0], sc[j][1], qa[2 * u][0], qa[2 * u][1], kq[j][u].x, kq[j][u].y);
                mma_rows8(sc[j][0], sc[j][1], qa[2 * u + 1][0], qa[2 * u + 1][1], kq[j][u].z, kq[j][u].w);
            }
        }
#if PIPE == 2
        if (more) mma_load_k(c_next);  // K is used: the next chunk's in flight during softmax and P V
#endif
        float mx = -JL_INF;
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                const int p = pw + 8 * j + 2 * mc + i;
                sc[j][i] = p >= first && p < end ? sc[j][i] * QS : -JL_INF;
                mx = fmaxf(mx, sc[j][i]);
            }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the quad holds one head's 16 positions
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float mn = fmaxf(m, mx);
        const float mr = mn == -JL_INF ? 0.0f : mn;  // nothing valid yet: everything stays 0
        const float corr = exp2f(m - mr);
        float pr[2][2], ps = 0.0f;
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                pr[j][i] = exp2f(sc[j][i] - mr);
                ps += pr[j][i];
            }
        l = l * corr + ps;
        m = mn;
#pragma unroll
        for (int t = 0; t < MNT; ++t) o[t][0] *= corr, o[t][1] *= corr;
        const uint32_t pa0 = pack_16x2<0>(pr[0][0], pr[0][1]), pa2 = pack_16x2<0>(pr[1][0], pr[1][1]);
#pragma unroll
        for (int t = 0; t < MNT; ++t) {
            const int x = t / 8, wi = (t % 8) / 2;
            const unsigned sel = (t & 1) ? 0x7632u : 0x5410u;  // high or low halves of the two rows
            const uint32_t b0 = __byte_perm(u4_word(vq[0][x], wi), u4_word(vq[1][x], wi), sel);
            const uint32_t b1 = __byte_perm(u4_word(vq[2][x], wi), u4_word(vq[3][x], wi), sel);
            mma_rows8(o[t][0], o[t][1], pa0, pa2, b0, b1);
        }
#if PIPE == 2
        if (more) mma_load_v(c_next);  // in flight during the next trip's S = Q K^T
#endif
#else
#if PIPE == 2
        // chunk c's K and V are in kw, vw already (loaded before the loop or during the last trip)
        const int c_next = c + N_SPLITS;
        const bool more = c_next <= c_hi;  // block-uniform
#elif PIPE
        // the block's next chunk goes out before this one is used (a second register set)
        uint4 kn[TILE], vn[TILE];
        const bool more = c + N_SPLITS <= c_hi;
        if (more) chunk_load(c + N_SPLITS, kn, vn);
#elif KV_STAGES
        {
            const int cn = c + (KV_STAGES - 1) * N_SPLITS;  // into the slot read one trip ago
            if (cn <= c_hi) ring_issue(cn, (it + KV_STAGES - 1) % KV_STAGES);
            cp_async_commit();
            cp_async_wait<KV_STAGES - 1>();  // this chunk's group (the newer ones may be in flight)
            const int st = it % KV_STAGES;
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                kw[t] = kv_ring[((st * 2 + 0) * TILE + t) * BLOCK + tid];
                vw[t] = kv_ring[((st * 2 + 1) * TILE + t) * BLOCK + tid];
            }
            ++it;
        }
#else
        chunk_load(c, kw, vw);
#endif
        float s[HPB][TILE];
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
#if KH2
            // four f16-pair FMAs (each lane of the pair sums four products), one f32 add of the pair
            const uint32_t u[4] = {kw[t].x, kw[t].y, kw[t].z, kw[t].w};
#pragma unroll
            for (int h = 0; h < HPB; ++h) {
                uint32_t a2 = hfma2(qr[h][0], u[0], 0u);
#pragma unroll
                for (int i = 1; i < VEC / 2; ++i) a2 = hfma2(qr[h][i], u[i], a2);
                s[h][t] = f16_lo(a2) + f16_hi(a2);
            }
#else
            float kf[VEC];
            kv_to_float(kw[t], kf);
#pragma unroll
            for (int h = 0; h < HPB; ++h) {
                float a = 0.0f;
#pragma unroll
                for (int i = 0; i < VEC; ++i) a += qr[h][i] * kf[i];
                s[h][t] = a;
            }
#endif
        }
#if PIPE == 2
        // K is used: the next chunk's K goes into its registers now, in flight during the
        // reduction, the softmax and the V sum (V's next rows follow the V sum)
        if (more) half_load(c_next, kb, kw);
#endif
        // sum the partial dots over the GS threads of each position group
        // XRED: transposed reduction: each halving exchange (lane distance GS/2, GS/4, ..) sends half of
        // a lane's remaining partial dots and adds the partner's other half, so after log2(TILE)
        // of them a lane holds one position (t_own = gl / XR) summed over GS / XR lanes; the
        // log2(XR) plain exchanges after that finish it. TILE - 1 + log2(XR) shuffles per head
        // instead of TILE * log2(GS); the softmax below then runs once per position, not per lane.
        float so[HPB];  // XRED: this lane's position's dot per head
#if REDUCE
        if constexpr (XRED) {
#pragma unroll
        for (int h = 0; h < HPB; ++h) {
            float a[TILE];
#pragma unroll
            for (int t = 0; t < TILE; ++t) a[t] = s[h][t];
#pragma unroll
            for (int n = TILE, off = GS / 2; n > 1; n >>= 1, off >>= 1) {
                const bool up = (gl & off) != 0;  // keeps the upper half
#pragma unroll
                for (int j = 0; j < n / 2; ++j) {
                    const float send = up ? a[j] : a[j + n / 2];
                    const float keep = up ? a[j + n / 2] : a[j];
                    a[j] = keep + __shfl_xor_sync(0xffffffffu, send, off);
                }
            }
#pragma unroll
            for (int off = XR / 2; off > 0; off >>= 1) a[0] += __shfl_xor_sync(0xffffffffu, a[0], off);
            so[h] = a[0];
        }
        } else {
#pragma unroll
        for (int h = 0; h < HPB; ++h)
#pragma unroll
            for (int t = 0; t < TILE; ++t)
#pragma unroll
                for (int off = GS / 2; off > 0; off >>= 1)
                    s[h][t] += __shfl_xor_sync(0xffffffffu, s[h][t], off);
        }
#else
#pragma unroll
        for (int h = 0; h < HPB; ++h)
#pragma unroll
            for (int t = 0; t < TILE; ++t) red[(h * TILE + t) * BLOCK + tid] = s[h][t];
        __syncthreads();
#pragma unroll
        for (int h = 0; h < HPB; ++h)
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const float* r = red + (h * TILE + t) * BLOCK + gi * GS;
                float a = 0.0f;
#pragma unroll 8
                for (int j = 0; j < GS; ++j) a += r[j];  // same order in every thread
                s[h][t] = a;
            }
        __syncthreads();
#endif
        if constexpr (XRED) {
        // online softmax update, one position per lane: the tile maximum over the group's lanes,
        // this lane's weight, the weights broadcast for the V sum. No branch on "nothing valid
        // yet" (every lane of the warp must reach the shuffles): mr = 0 then, and all stays 0.
        // l holds this lane's own positions' weights (summed over the group after the loop).
        {
            const int t_own = gl / XR;
            const int p = p0 + t_own * NG + gi;
            const bool valid = p >= first && p < end;
#pragma unroll
            for (int h = 0; h < HPB; ++h) {
                const float sv = valid ? so[h] : -JL_INF;
                float mt = sv;
#pragma unroll
                for (int off = GS / 2; off >= XR; off >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
                const float mn = fmaxf(m[h], mt);
                const float mr = mn == -JL_INF ? 0.0f : mn;
                const float corr = exp2f(m[h] - mr);  // 0 when m was -inf
                const float pw = exp2f(sv - mr);      // 0 for an invalid position
                l[h] = l[h] * corr + pw;
#pragma unroll
                for (int i = 0; i < VEC; ++i) o[h][i] *= corr;
#if VH2
                // the tile's weighted V rows summed in f16 pairs (the weights rounded to f16), then
                // added to the f32 output once per tile: no per-position f16 -> f32 conversion
                uint32_t va[VEC / 2];
#pragma unroll
                for (int i = 0; i < VEC / 2; ++i) va[i] = 0u;
                const uint32_t pw2 = pack_16x2<0>(pw, pw);  // this lane's weight as an f16 pair, once
#pragma unroll
                for (int t = 0; t < TILE; ++t) {
                    const uint32_t p2 = __shfl_sync(0xffffffffu, pw2, t * XR, GS);  // (the same bits as packing the broadcast)
                    const uint32_t u[4] = {vw[t].x, vw[t].y, vw[t].z, vw[t].w};
#pragma unroll
                    for (int i = 0; i < VEC / 2; ++i) va[i] = hfma2(p2, u[i], va[i]);
                }
#pragma unroll
                for (int i = 0; i < VEC / 2; ++i) {
                    o[h][2 * i] += f16_lo(va[i]);
                    o[h][2 * i + 1] += f16_hi(va[i]);
                }
#else
#pragma unroll
                for (int t = 0; t < TILE; ++t) {
                    const float pt = __shfl_sync(0xffffffffu, pw, t * XR, GS);
                    float vf[VEC];
                    kv_to_float(vw[t], vf);
#pragma unroll
                    for (int i = 0; i < VEC; ++i) o[h][i] += pt * vf[i];
                }
#endif
                m[h] = mn;
            }
        }
        } else {
        // online softmax update: all GS threads of a group hold identical s, m, l
#pragma unroll
        for (int h = 0; h < HPB; ++h) {
            float mt = -JL_INF;
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const int p = p0 + t * NG + gi;
                const bool valid = p >= first && p < end;
                s[h][t] = valid ? s[h][t] : -JL_INF;
                mt = fmaxf(mt, s[h][t]);
            }
            const float mn = fmaxf(m[h], mt);
            if (mn == -JL_INF) continue;  // nothing valid yet
            const float corr = exp2f(m[h] - mn);  // 0 when m was -inf
            l[h] *= corr;
#pragma unroll
            for (int i = 0; i < VEC; ++i) o[h][i] *= corr;
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const float pw = exp2f(s[h][t] - mn);  // 0 for invalid positions
                float vf[VEC];
                kv_to_float(vw[t], vf);
                l[h] += pw;
#pragma unroll
                for (int i = 0; i < VEC; ++i) o[h][i] += pw * vf[i];
            }
            m[h] = mn;
        }
        }
#if PIPE == 2
        if (more) half_load(c_next, vb, vw);  // in flight during the next trip's dot products
#elif PIPE
        if (more) {
#pragma unroll
            for (int t = 0; t < TILE; ++t) kw[t] = kn[t], vw[t] = vn[t];
        }
#endif
#endif  // MMA
    }

#if MMA
    l += __shfl_xor_sync(0xffffffffu, l, 1);  // the quad's positions
    l += __shfl_xor_sync(0xffffffffu, l, 2);
#else
    if constexpr (XRED) {
    // each lane's l holds its own positions' weights: the group's sum (lanes at distance < XR
    // hold the same positions, so only distances >= XR are added)
#pragma unroll
    for (int h = 0; h < HPB; ++h)
#pragma unroll
        for (int off = GS / 2; off >= XR; off >>= 1) l[h] += __shfl_xor_sync(0xffffffffu, l[h], off);
    }
#endif

#include "common/attn_decode_merge.cuh"  // the group and split merges: the rest of this body
}
