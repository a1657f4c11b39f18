// attention_decode: one query position against cached positions 0..*pos_ptr (inclusive).
//   s_p = (q_h . k_p) * SCALE,  out_h = sum_p softmax(s)_p * v_p,  kv head = h / (N_HEADS/N_KV_HEADS)
// One block serves all query heads of one kv head, so K/V are read once per group.
// Online softmax over tiles of positions (no shared memory sized by the context): a thread
// group of HEAD_DIM/VEC threads handles one position at a time, each thread VEC dims (one
// KV_LOAD-byte K load, one V load); the groups' (max, sum, output) states merge at the end.
//
// ALGO (history, llm.c style):
//   1  one block per kv head over the whole context; writes out.       grid = (N_KV_HEADS, 1)
//   2  split-KV (flash-decoding): block (kvh, s) covers split s of the context, cut at run time
//      into N_SPLITS near-equal chunks of n_pos = *pos_ptr + 1 (empty splits write m = -inf,
//      l = 0); writes scratch; the last block of each kv head to finish (atomic ticket) combines
//      its splits and writes out (was a second kernel, <name>_reduce, until 2026-12-01).
//      grid = (N_KV_HEADS, N_SPLITS)
//
// params:
//   WINDOW (optional) attend to the last WINDOW cached positions only (sliding window; 0 = all)
//   N_HEADS, N_KV_HEADS, HEAD_DIM (64 | 128; any multiple of VEC with HEAD_DIM/VEC a power of two
//   <= 32), KV_T (half | float), SCALE (float, e.g. 0.08838835f), ALGO, N_SPLITS (ALGO=2),
//   KV_LOAD (bytes per thread and position: 16, or 8 = default for half with > 4 heads/group),
//   BLOCK (multiple of HEAD_DIM/VEC and of 32; power of two if REDUCE=0), REDUCE, TILE
//   (positions per group per step, default 4, or 2 when N_HEADS/N_KV_HEADS > 2), PDL (default 0)
// launch:  grid (N_KV_HEADS, ALGO == 2 ? N_SPLITS : 1), block BLOCK, smem 0
// args:    (q, k_cache, v_cache, pos_ptr, out, scratch, seq_ptr, tickets)   q, out: (N_HEADS, HEAD_DIM)
//          tickets (ALGO=2): N_KV_HEADS zeroed unsigned counters (left zeroed after each launch)
//          BATCH=1 (ALGO 1, N_CTX): grid.z = rows; row r attends positions 0..pos_ptr[r] of the
//          cache of sequence seq_ptr[r] (causal within a prompt chunk)
//                  floats; caches: [n_ctx][N_KV_HEADS * HEAD_DIM] KV_T (this layer's base);
//                  scratch (ALGO=2): N_HEADS * N_SPLITS * (HEAD_DIM + 2) floats; scratch and
//                  tickets unused (ALGO=1)
//          PRECOND: 16-byte aligned pointers; 0 <= *pos_ptr < n_ctx.
// bytes:   n_pos * N_KV_HEADS * HEAD_DIM * 2 * sizeof(KV_T) + 2 * N_HEADS * HEAD_DIM * 4
//          (+ 2 * N_HEADS * N_SPLITS * (HEAD_DIM + 2) * 4 for ALGO=2)
// reference: cpu::attention   test: tests/kernels/attention_decode_test.cpp

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

#define QPG (N_HEADS / N_KV_HEADS)             // query heads per kv head
#ifndef KV_LOAD  // bytes of K (and of V) per thread and position: 8 halves registers for big groups
#define KV_LOAD (QPG > 4 && sizeof(KV_T) == 2 ? 8 : 16)
#endif
#define VEC (KV_LOAD / (int)sizeof(KV_T))       // dims per thread
#define GS (HEAD_DIM / VEC)                     // threads per position
#define NG (BLOCK / GS)                         // position groups per block
#ifndef WINDOW  // sliding window in positions; 0 = attend to the whole cache
#define WINDOW 0
#endif
#ifndef TILE
#define TILE (QPG > 2 ? 2 : 4)
#endif
#if ALGO != 2
#undef N_SPLITS
#define N_SPLITS 1
#endif
#ifndef BATCH  // 1: query row blockIdx.z of a batch step, at pos_ptr[row] in sequence seq_ptr[row]
#define BATCH 0
#endif
#if BATCH && (ALGO != 1 || !defined(N_CTX))
#error "BATCH needs ALGO 1 (one pass) and N_CTX (positions per sequence in the cache)"
#endif

static_assert(N_HEADS % N_KV_HEADS == 0, "GQA: whole groups");
static_assert(HEAD_DIM % VEC == 0 && GS <= 32 && (GS & (GS - 1)) == 0, "HEAD_DIM / VEC: power of two <= 32");
static_assert((KV_LOAD == 16 || KV_LOAD == 8) && VEC % 4 == 0, "KV_LOAD: 16 or 8 bytes, >= 4 dims");
static_assert(BLOCK % GS == 0 && BLOCK % 32 == 0, "BLOCK: whole position groups and warps");

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

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(const float* q, const KV_T* k_cache, const KV_T* v_cache, const int* pos_ptr,
            float* out, float* scratch, const int* seq_ptr, unsigned* tickets) {
    constexpr int KV_DIM = N_KV_HEADS * HEAD_DIM;
#if !REDUCE
    __shared__ float red[QPG * TILE * BLOCK];
#endif
    __shared__ float mrg[NG * (HEAD_DIM + 2)];
    pdl_launch_dependents();  // small grid: let the next kernel get scheduled
    pdl_wait();
    const int tid = threadIdx.x, gi = tid / GS, gl = tid % GS;
    const int kvh = blockIdx.x;
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
    // sliding window (phi3's attention.sliding_window): only the last WINDOW positions
    const int first = WINDOW > 0 ? max(0, n_pos - WINDOW) : 0;
    int begin = first, end = n_pos;
#if ALGO == 2
    const int chunk = (n_pos - first + N_SPLITS - 1) / N_SPLITS;
    begin = min(n_pos, first + (int)blockIdx.y * chunk);
    end = min(n_pos, begin + chunk);
#endif

    float qr[QPG][VEC], o[QPG][VEC], m[QPG], l[QPG];
#pragma unroll
    for (int h = 0; h < QPG; ++h) {
        const float* qh = q + (kvh * QPG + h) * HEAD_DIM + gl * VEC;
#pragma unroll
        for (int i = 0; i < VEC; i += 4) {
            const float4 v = *reinterpret_cast<const float4*>(qh + i);
            qr[h][i] = v.x, qr[h][i + 1] = v.y, qr[h][i + 2] = v.z, qr[h][i + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < VEC; ++i) o[h][i] = 0.0f;
        m[h] = -JL_INF;
        l[h] = 0.0f;
    }
    const KV_T* kb = k_cache + kvh * HEAD_DIM + gl * VEC;
    const KV_T* vb = v_cache + kvh * HEAD_DIM + gl * VEC;

    // block-uniform trip count (REDUCE=0 synchronises inside)
    for (int p0 = begin; p0 < end; p0 += NG * TILE) {
        uint4 kw[TILE], vw[TILE];
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            const int p = p0 + t * NG + gi;
            if (p < end) {
                kw[t] = kv_load(kb + (unsigned long long)p * KV_DIM);
                vw[t] = kv_load(vb + (unsigned long long)p * KV_DIM);
            } else {
                kw[t] = vw[t] = make_uint4(0, 0, 0, 0);
            }
        }
        float s[QPG][TILE];
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            float kf[VEC];
            kv_to_float(kw[t], kf);
#pragma unroll
            for (int h = 0; h < QPG; ++h) {
                float a = 0.0f;
#pragma unroll
                for (int i = 0; i < VEC; ++i) a += qr[h][i] * kf[i];
                s[h][t] = a;
            }
        }
        // sum the partial dots over the GS threads of each position group
#if REDUCE
#pragma unroll
        for (int h = 0; h < QPG; ++h)
#pragma unroll
            for (int t = 0; t < TILE; ++t)
#pragma unroll
                for (int off = GS / 2; off > 0; off >>= 1)
                    s[h][t] += __shfl_xor_sync(0xffffffffu, s[h][t], off);
#else
#pragma unroll
        for (int h = 0; h < QPG; ++h)
#pragma unroll
            for (int t = 0; t < TILE; ++t) red[(h * TILE + t) * BLOCK + tid] = s[h][t];
        __syncthreads();
#pragma unroll
        for (int h = 0; h < QPG; ++h)
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
        // online softmax update: all GS threads of a group hold identical s, m, l
#pragma unroll
        for (int h = 0; h < QPG; ++h) {
            float mt = -JL_INF;
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const bool valid = p0 + t * NG + gi < end;
                s[h][t] = valid ? s[h][t] * (float)(SCALE) : -JL_INF;
                mt = fmaxf(mt, s[h][t]);
            }
            const float mn = fmaxf(m[h], mt);
            if (mn == -JL_INF) continue;  // nothing valid yet
            const float corr = expf(m[h] - mn);  // 0 when m was -inf
            l[h] *= corr;
#pragma unroll
            for (int i = 0; i < VEC; ++i) o[h][i] *= corr;
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const float pw = expf(s[h][t] - mn);  // 0 for invalid positions
                float vf[VEC];
                kv_to_float(vw[t], vf);
                l[h] += pw;
#pragma unroll
                for (int i = 0; i < VEC; ++i) o[h][i] += pw * vf[i];
            }
            m[h] = mn;
        }
    }

    // merge the NG group states, one query head at a time
#pragma unroll
    for (int h = 0; h < QPG; ++h) {
#pragma unroll
        for (int i = 0; i < VEC; ++i) mrg[gi * (HEAD_DIM + 2) + gl * VEC + i] = o[h][i];
        if (gl == 0) {
            mrg[gi * (HEAD_DIM + 2) + HEAD_DIM] = m[h];
            mrg[gi * (HEAD_DIM + 2) + HEAD_DIM + 1] = l[h];
        }
        __syncthreads();
        for (int d = tid; d < HEAD_DIM; d += BLOCK) {
            float M = -JL_INF;
            for (int g = 0; g < NG; ++g) M = fmaxf(M, mrg[g * (HEAD_DIM + 2) + HEAD_DIM]);
            float L = 0.0f, O = 0.0f;
            if (M != -JL_INF) {
                for (int g = 0; g < NG; ++g) {
                    const float* st = mrg + g * (HEAD_DIM + 2);
                    const float wgt = expf(st[HEAD_DIM] - M);  // 0 for empty groups
                    L += st[HEAD_DIM + 1] * wgt;
                    O += st[d] * wgt;
                }
            }
            const int hq = kvh * QPG + h;
#if ALGO == 2
            float* sc = scratch + ((unsigned long long)hq * N_SPLITS + blockIdx.y) * (HEAD_DIM + 2);
            sc[d] = O;
            if (d == 0) {
                sc[HEAD_DIM] = M;
                sc[HEAD_DIM + 1] = L;
            }
#else
            out[hq * HEAD_DIM + d] = O / L;  // L > 0: position 0 is always in range
#endif
        }
        __syncthreads();
    }
#if ALGO == 2
    // The last block of this kv head to finish (a ticket from an atomic counter) combines the
    // N_SPLITS partial states of its QPG query heads: out = sum_s w_s o_s / sum_s w_s l_s,
    // w_s = exp(m_s - max m); it then resets the counter for the next launch.
    __shared__ bool last;
    __threadfence();  // every thread's scratch writes are visible before the block's ticket
    __syncthreads();
    if (tid == 0) last = atomicAdd(tickets + kvh, 1u) == N_SPLITS - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    // split weights w_s = exp(m_s - M) and L per query head in shared memory (one thread per
    // head, splits in order: the sums of the former _reduce kernel, bit for bit), then every
    // output dim sums its splits with independent loads
    __shared__ float wsm[QPG * N_SPLITS], lsm[QPG];
    for (int idx = tid; idx < QPG * N_SPLITS; idx += BLOCK) {
        const float* st = scratch + ((unsigned long long)(kvh * QPG + idx / N_SPLITS) * N_SPLITS + idx % N_SPLITS) * (HEAD_DIM + 2);
        wsm[idx] = __ldcg(st + HEAD_DIM);  // m_s for now
        if (__ldcg(st + HEAD_DIM + 1) == 0.0f) wsm[idx] = -JL_INF;  // empty split
    }
    __syncthreads();
    if (tid < QPG) {
        float* w = wsm + tid * N_SPLITS;
        const float* sc = scratch + (unsigned long long)(kvh * QPG + tid) * N_SPLITS * (HEAD_DIM + 2);
        float M = -JL_INF;
        for (int s = 0; s < N_SPLITS; ++s) M = fmaxf(M, w[s]);
        float L = 0.0f;
        for (int s = 0; s < N_SPLITS; ++s) {
            const float ls = __ldcg(sc + s * (HEAD_DIM + 2) + HEAD_DIM + 1);
            const float wgt = ls == 0.0f ? 0.0f : expf(w[s] - M);
            L += ls * wgt;
            w[s] = wgt;
        }
        lsm[tid] = L;
    }
    __syncthreads();
    for (int idx = tid; idx < QPG * HEAD_DIM; idx += BLOCK) {
        const int h = idx / HEAD_DIM, d = idx % HEAD_DIM;
        const float* sc = scratch + (unsigned long long)(kvh * QPG + h) * N_SPLITS * (HEAD_DIM + 2) + d;
        float O = 0.0f;
#pragma unroll 8
        for (int s = 0; s < N_SPLITS; ++s) O += __ldcg(sc + s * (HEAD_DIM + 2)) * wsm[h * N_SPLITS + s];
        out[(kvh * QPG + h) * HEAD_DIM + d] = O / lsm[h];
    }
    if (tid == 0) tickets[kvh] = 0u;
#endif
    (void)out;
    (void)scratch;
    (void)seq_ptr;
    (void)tickets;
}
