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
// args:    (q, k_cache, v_cache, pos_ptr, out, scratch, seq_ptr, tickets, kv_table, xq)   q, out: (N_HEADS, HEAD_DIM)
//          tickets (ALGO=2): grid.x zeroed unsigned counters (left zeroed after each launch)
//          BATCH=1 (ALGO 1, N_CTX, KV_BLOCK, KV_BPS): grid.z = rows; row r attends positions
//          0..pos_ptr[r] of sequence s = seq_ptr[r] (causal within a prompt chunk), position p in
//          pool row kv_table[s * KV_BPS + p / KV_BLOCK] * KV_BLOCK + p % KV_BLOCK (kv_table: i32
//          [n_seq][KV_BPS]); BATCH=0: position p in cache row p, kv_table unused
//                  floats; caches: [n_ctx][N_KV_HEADS * HEAD_DIM] KV_T (this layer's base);
//                  scratch (ALGO=2): N_HEADS * N_SPLITS * (HEAD_DIM + 4) floats (rows of HEAD_DIM + 2); scratch and
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
#include "common/attn_split.cuh"  // merge_dv (the ticket merge)
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

#if VH2
// d = a * b + c on f16 pairs, one rounding (sm_53+; the pair conversions need sm_80)
__device__ __forceinline__ uint32_t hfma2(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(const float* q, const KV_T* k_cache, const KV_T* v_cache, const int* pos_ptr,
            float* out, float* scratch, const int* seq_ptr, unsigned* tickets, const int* kv_table, uint8_t* xq) {
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
    const int bx = blockIdx.x;
    const int kvh = bx / HSPLIT;
    const int hb = kvh * QPG + (bx % HSPLIT) * HPB;  // this block's first query head
    uint4 kw[TILE], vw[TILE];
#if EARLY_KV
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
    const int* tab = kv_table + seq_ptr[row] * KV_BPS;  // this sequence's blocks
    // position p's row in the pool
    auto kv_row = [&](int p) { return (unsigned long long)tab[p / KV_BLOCK] * KV_BLOCK + p % KV_BLOCK; };
#else
    const int n_pos = *pos_ptr + 1;
    auto kv_row = [](int p) { return (unsigned long long)p; };
    (void)kv_table;
#endif
    const KV_T* kb = k_cache + kvh * HEAD_DIM + gl * VEC;
    const KV_T* vb = v_cache + kvh * HEAD_DIM + gl * VEC;
    // q (written by the previous kernel) goes out with the position load; scaled by SCALE * log2(e)
    // so the scores come out in base 2 (every exponential below is exp2, the maxima m in base 2)
    constexpr float QS = (float)(SCALE) * 1.4426950408889634f;
    float qr[HPB][VEC];
    float o[HPB][VEC], m[HPB], l[HPB];
#pragma unroll
    for (int h = 0; h < HPB; ++h) {
        const float* qh = q + (hb + h) * HEAD_DIM + gl * VEC;
#pragma unroll
        for (int i = 0; i < VEC; i += 4) {
            const float4 v = *reinterpret_cast<const float4*>(qh + i);
            qr[h][i] = v.x * QS, qr[h][i + 1] = v.y * QS, qr[h][i + 2] = v.z * QS, qr[h][i + 3] = v.w * QS;
        }
#pragma unroll
        for (int i = 0; i < VEC; ++i) o[h][i] = 0.0f;
        m[h] = -JL_INF;
        l[h] = 0.0f;
    }

    // sliding window (phi3's attention.sliding_window): only the last WINDOW positions
    const int first = WINDOW > 0 ? max(0, n_pos - WINDOW) : 0;
    const int end = n_pos;
    // chunks c_lo..c_hi hold the positions in range; this block takes c_lo + blockIdx.y, then
    // every N_SPLITS-th (ALGO 1: N_SPLITS = 1, blockIdx.y = 0: all of them)
    const int c_lo = first / CH, c_hi = (n_pos - 1) / CH;
    const int n_active = min(N_SPLITS, c_hi - c_lo + 1);  // blocks with a chunk (block-uniform)
    if ((int)blockIdx.y >= n_active) return;

    // chunk c's K/V rows of this thread (zero outside [first, end)); chunk 0 was loaded before
    // the position was known (PRELOAD): only its rows past the position are zeroed
    auto chunk_load = [&](int c, uint4* kt, uint4* vt) {
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            const int p = c * CH + t * NG + gi;
            if (PRELOAD && c == 0) {
                if (!(p < end)) kt[t] = vt[t] = make_uint4(0, 0, 0, 0);
            } else if (p >= first && p < end) {
                kt[t] = kv_load(kb + kv_row(p) * KV_DIM);
                vt[t] = kv_load(vb + kv_row(p) * KV_DIM);
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
#if EARLY_KV
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
#if KV_STAGES
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
            float kf[VEC];
            kv_to_float(kw[t], kf);
#pragma unroll
            for (int h = 0; h < HPB; ++h) {
                float a = 0.0f;
#pragma unroll
                for (int i = 0; i < VEC; ++i) a += qr[h][i] * kf[i];
                s[h][t] = a;
            }
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
    }

    if constexpr (XRED) {
    // each lane's l holds its own positions' weights: the group's sum (lanes at distance < XR
    // hold the same positions, so only distances >= XR are added)
#pragma unroll
    for (int h = 0; h < HPB; ++h)
#pragma unroll
        for (int off = GS / 2; off >= XR; off >>= 1) l[h] += __shfl_xor_sync(0xffffffffu, l[h], off);
    }

#include "common/attn_decode_merge.cuh"  // the group and split merges: the rest of this body
}
