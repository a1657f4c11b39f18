// argmax (sample, greedy): *token_out = argmax(logits[0..N)), the lowest index on ties (as
// cpu::argmax; NaN logits are never chosen). Two stages in one launch: each of N_PARTS blocks
// reduces a chunk to (value, index) in part_val/part_idx; the last block to finish (atomic
// ticket on *counter) reduces the parts, writes the token and resets *counter to 0, so the
// launch can be replayed in a CUDA graph. With FUSE_ADVANCE it also does what <name>_advance
// does, and writes the token into token_ring[*pos_ptr % 4] (when not null: the host's pinned ring,
// read after the step without a copy back). <name>_advance: (*pos_ptr)++ and *token_in =
// *token_out, so a captured step loops.
//
// DRAW=1 (gate sample.draw=device; the kernel is then `sample__draw`): when the parameters in
// *draw (backends/backend.h DrawParams, written by the host) have a temperature > 0, the pick is a
// draw instead: each block sorts its chunk as 64-bit keys (value bits made orderable, then the
// inverted id: larger value first, the lower id on ties, NaN last, -0 as +0; runtime/sampler.cpp's
// order) in shared memory by a bitonic sort and leaves its best top_k (<= KMAX) in part_keys; the
// last block copies the N_PARTS lists into shared memory and one warp merges their heads top_k
// times (warp-shuffle maximum of 64-bit keys); then the warp takes the softmax terms in double
// and one thread applies top-p, min-p and the temperature and draws with
// u = sampler_uniform(seed, draw) in the operations and order of Sampler::sample, and advances
// draw. Temperature 0: the argmax as with DRAW=0 (the same code), the counter unchanged.
//
// params:  N (vocab), BLOCK (power of two if REDUCE=0), REDUCE, N_PARTS (1..1024, e.g. the SM
//          count), FUSE_ADVANCE (0 | 1), DRAW (0 | 1), KMAX (DRAW: the largest top_k, 1..64;
//          dynamic smem 8 * max(P, N_PARTS * KMAX) bytes, P the chunk rounded up to a power of two)
// launch:  main:    grid = N_PARTS, block = BLOCK, smem = 0
//          advance: grid = 1, block = 1
// args:    main:    (logits, part_val, part_idx, counter, token_out, pos_ptr, token_in, token_ring,
//                    draw, part_keys)   draw / part_keys (N_PARTS * KMAX keys): DRAW only, else null
//          grid.y = rows: row r reads logits row r, uses parts r * N_PARTS.., counter[r], token_out[r]
//                   part_val/part_idx: N_PARTS floats/ints of scratch; counter: one unsigned,
//                   zeroed once by the host when allocated; pos_ptr/token_in only used with
//                   FUSE_ADVANCE. PRECOND: logits 16-byte aligned.
//          advance: (pos_ptr, token_out, token_in)
// bytes:   N * 4 + 8 * N_PARTS
// reference: cpu::argmax   test: tests/kernels/argmax_test.cpp

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME argmax
#define N 128256
#define BLOCK 256
#define REDUCE 1
#define N_PARTS 132
#define FUSE_ADVANCE 0
#define DRAW 1
#define KMAX 64
#endif
#ifndef DRAW
#define DRAW 0
#endif

#include "common/common.cuh"
#include "common/pick_key.cuh"

// (v, i) beats (bv, bi): larger value, or equal value and lower index
__device__ __forceinline__ bool better(float v, int i, float bv, int bi) {
    return v > bv || (v == bv && i < bi);
}

// Block-wide arg-max of (v, i); the result lands in every thread.
__device__ __forceinline__ void block_argmax(float& v, int& i, float* sv, int* si) {
    const int t = threadIdx.x;
#if REDUCE
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, v, o);
        const int oi = __shfl_xor_sync(0xffffffffu, i, o);
        if (better(ov, oi, v, i)) v = ov, i = oi;
    }
    if ((t & 31) == 0) sv[t >> 5] = v, si[t >> 5] = i;
    __syncthreads();
    v = sv[0], i = si[0];
    for (int w = 1; w < BLOCK / 32; ++w)
        if (better(sv[w], si[w], v, i)) v = sv[w], i = si[w];
    __syncthreads();
#else
    sv[t] = v, si[t] = i;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s && better(sv[t + s], si[t + s], sv[t], si[t])) sv[t] = sv[t + s], si[t] = si[t + s];
        __syncthreads();
    }
    v = sv[0], i = si[0];
    __syncthreads();
#endif
}

// chunk: a multiple of 4 so every block's float4 reads stay aligned
constexpr int CHUNK = ((N + N_PARTS - 1) / N_PARTS + 3) / 4 * 4;

// the pick: into the token slot and (FUSE_ADVANCE) the host's ring, the token input, the position
__device__ __forceinline__ void publish(int tok, int* token_out, int* pos_ptr, int* token_in, int* token_ring) {
    *token_out = tok;
#if FUSE_ADVANCE
    if (token_ring) token_ring[*pos_ptr & 3] = tok;
    *token_in = tok;
    *pos_ptr += 1;
#endif
    (void)pos_ptr;
    (void)token_in;
    (void)token_ring;
}

#if DRAW
// backends/backend.h DrawParams (the same layout: 3 floats, an int, 2 x 64 bits)
struct DrawParams {
    float temperature, top_p, min_p;
    int top_k;
    unsigned long long seed, draw;
};

// runtime/sampler.cpp sampler_uniform: splitmix64(seed + splitmix64(draw)), top 53 bits
__device__ __forceinline__ unsigned long long splitmix64(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// A bitonic stage's new key at index i from its own x and its partner's y (index i ^ stride): the
// larger where i is the pair's lower index in a descending run ((i & size) == 0), else the smaller
__device__ __forceinline__ unsigned long long bitonic_keep(int i, int size, int stride, unsigned long long x,
                                                           unsigned long long y) {
    const bool larger = ((i & stride) == 0) == ((i & size) == 0);
    return larger ? (y > x ? y : x) : (y < x ? y : x);
}

constexpr int pow2_at_least(int n) { return n <= 1 ? 1 : 2 * pow2_at_least((n + 1) / 2); }
constexpr int DRAW_P = pow2_at_least(CHUNK);  // the block's sort size

// The warp's largest key in every lane: on sm_80+ the high words' maximum, then the low words'
// among the lanes that hold it (two redux.sync); below, five 64-bit shuffles
__device__ __forceinline__ unsigned long long warp_max_key(unsigned long long b) {
#if __CUDA_ARCH__ >= 800
    const unsigned hi = __reduce_max_sync(0xffffffffu, unsigned(b >> 32));
    const unsigned lo = __reduce_max_sync(0xffffffffu, unsigned(b >> 32) == hi ? unsigned(b) : 0u);
    return ((unsigned long long)hi << 32) | lo;
#else
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long ow = __shfl_xor_sync(0xffffffffu, b, o);
        b = ow > b ? ow : b;
    }
    return b;
#endif
}

// The block's DRAW_P keys (zeros past its chunk [lo, hi)) sorted descending into v: thread t holds keys
// i = t * DRAW_E + e. A bitonic network held in registers: a stage pairs key i with i ^ stride (the
// lower index keeps the larger key where (i & size) == 0): strides below DRAW_E inside the thread,
// below 32 DRAW_E through warp shuffles, larger ones through shared memory `keys` (only those wait
// for the block).
// (enumerators, not constexpr variables: those would be emitted as device globals)
enum : int {
    DRAW_E = DRAW_P >= BLOCK ? DRAW_P / BLOCK : 1,
    DRAW_NT = DRAW_P / DRAW_E,  // threads holding keys
};
__device__ __forceinline__ void draw_block_sort(unsigned long long (&v)[DRAW_E], const float* logits, int lo, int hi,
                                                unsigned long long* keys) {
    const int t = threadIdx.x;
#pragma unroll
    for (int e = 0; e < DRAW_E; ++e) {
        const int i = t * DRAW_E + e;
        v[e] = t < DRAW_NT && lo + i < hi ? pick_key(logits[lo + i], lo + i) : 0ull;
    }
#pragma unroll
    for (int size = 2; size <= DRAW_P; size <<= 1) {
#pragma unroll
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            if (stride < DRAW_E) {
#pragma unroll
                for (int e = 0; e < DRAW_E; ++e) {
                    const int f = e ^ stride;
                    if (e < f) {
                        const unsigned long long x = v[e], y = v[f];
                        if ((x < y) == (((t * DRAW_E + e) & size) == 0)) v[e] = y, v[f] = x;
                    }
                }
            } else if (stride < 32 * DRAW_E) {
#pragma unroll
                for (int e = 0; e < DRAW_E; ++e) {
                    const unsigned long long y = __shfl_xor_sync(0xffffffffu, v[e], stride / DRAW_E);
                    v[e] = bitonic_keep(t * DRAW_E + e, size, stride, v[e], y);
                }
            } else {
                if (t < DRAW_NT)
#pragma unroll
                    for (int e = 0; e < DRAW_E; ++e) keys[t * DRAW_E + e] = v[e];
                __syncthreads();
                if (t < DRAW_NT)
#pragma unroll
                    for (int e = 0; e < DRAW_E; ++e) {
                        const int i = t * DRAW_E + e;
                        v[e] = bitonic_keep(i, size, stride, v[e], keys[i ^ stride]);
                    }
                __syncthreads();
            }
        }
    }
}

// The last block: one warp merges the N_PARTS lists (list p at keys[p * k ..)) by their heads, k
// times, the winners into top[0 .. k)
__device__ __forceinline__ void draw_merge_lists(const unsigned long long* keys, int k, unsigned long long* top) {
    const int t = threadIdx.x;
    if (t < 32) {  // one warp merges the lists' heads k times
        constexpr int LPL = (N_PARTS + 31) / 32;  // lists a lane merges: t, t + 32, ...
        int head[LPL];
        unsigned long long hk[LPL];
#pragma unroll
        for (int m = 0; m < LPL; ++m) {
            head[m] = 0;
            hk[m] = t + 32 * m < N_PARTS ? keys[(t + 32 * m) * k] : 0ull;
        }
        for (int r = 0; r < k; ++r) {
            unsigned long long b = hk[0];
            int bm = 0;
#pragma unroll
            for (int m = 1; m < LPL; ++m)
                if (hk[m] > b) b = hk[m], bm = m;
            const unsigned long long w = warp_max_key(b);
            if (w != 0ull && b == w) {  // keys are unique but 0: this lane's list bm holds the winner
#pragma unroll
                for (int m = 0; m < LPL; ++m)
                    if (m == bm) {
                        ++head[m];
                        hk[m] = head[m] < k ? keys[(t + 32 * m) * k + head[m]] : 0ull;
                    }
            }
            if (t == 0) top[r] = w;
        }
    }
}

// Warp 0: Sampler::sample over the merged top k with the draw's parameters (softmax terms, top_p
// and min_p cuts, the weighted draw); lane 0 returns the pick's index into top (other lanes: -1).
// prob, wt, share: shared scratch of KMAX each.
__device__ __forceinline__ int draw_sample_top(const unsigned long long* top, int k, const DrawParams& p, double* prob,
                                               double* wt, double* share) {
    const int t = threadIdx.x;
    // softmax terms (Sampler::sample: prob at temperature 1 for the p filters, weights at T)
    const double mx = pick_key_value(top[0]);
    for (int i = t; i < k; i += 32) {
        const double v = pick_key_value(top[i]);
        prob[i] = exp(v - mx);
        wt[i] = exp((v - mx) / double(p.temperature));
    }
    __syncwarp();
    // Lane 0 then runs Sampler::sample's sequential sums and cuts in its order. The loops run to
    // KMAX with the bounds as predicates (no early exit), so they unroll and their shared-memory
    // loads go ahead of the dependent additions.
    const bool p_filters = p.top_p < 1.0f || p.min_p > 0.0f;
    double sum = 0;  // in order (the host's sum), by lane 0
    if (p_filters && t == 0)
#pragma unroll 16
        for (int i = 0; i < KMAX; ++i)
            if (i < k) sum += prob[i];
    if (p.top_p < 1.0f) {  // each share prob / sum by its lane (the same quotients), summed in order below
        sum = __shfl_sync(0xffffffffu, sum, 0);
        for (int i = t; i < k; i += 32) share[i] = prob[i] / sum;
        __syncwarp();
    }
    if (t != 0) return -1;
    int n = k;
    if (p.top_p < 1.0f) {  // the first prefix whose shares reach top_p
        double acc = 0;
        bool cut = false;
#pragma unroll 16
        for (int i = 0; i < KMAX; ++i)
            if (i < k && !cut) {
                acc += share[i];
                if (acc >= double(p.top_p)) n = i + 1, cut = true;
            }
    }
    if (p.min_p > 0.0f) {  // the prefix at or above min_p x the first (probabilities descend)
        const double thresh = prob[0] * double(p.min_p);
        int keep = 1;
        bool cut = false;
#pragma unroll 16
        for (int i = 1; i < KMAX; ++i)
            if (i < n && !cut) {
                if (prob[i] >= thresh) keep = i + 1;
                else cut = true;
            }
        n = keep;
    }
    double tot = 0;
#pragma unroll 16
    for (int i = 0; i < KMAX; ++i)
        if (i < n) tot += wt[i];
    const double u = double(splitmix64(p.seed + splitmix64(p.draw)) >> 11) * 0x1.0p-53;
    double r = __dmul_rn(u, tot);  // not contracted into the first subtraction (the host rounds it)
    int pick = n - 1;
    bool drawn = false;
#pragma unroll 16
    for (int i = 0; i < KMAX; ++i)
        if (i < n && !drawn) {
            r = __dsub_rn(r, wt[i]);
            if (r <= 0) pick = i, drawn = true;
        }
    return pick;
}

// The draw (temperature > 0, 1 <= k <= KMAX): see the header. keys: dynamic shared memory.
__device__ void draw_pick(const float* logits, DrawParams* dp, int k, unsigned long long* part_keys,
                          unsigned* counter, unsigned long long* keys, int* token_out, int* pos_ptr, int* token_in,
                          int* token_ring) {
    __shared__ unsigned long long top[KMAX];
    __shared__ double prob[KMAX], wt[KMAX], share[KMAX];
    __shared__ bool last;
    const int t = threadIdx.x;
    const int lo = blockIdx.x * CHUNK, hi = min(N, lo + CHUNK);
    unsigned long long v[DRAW_E];
    draw_block_sort(v, logits, lo, hi, keys);
    // the block's first k (zeros past its DRAW_P keys), fenced by each writer before the ticket
    bool wrote = false;
#pragma unroll
    for (int e = 0; e < DRAW_E; ++e)
        if (t < DRAW_NT && t * DRAW_E + e < k) {
            part_keys[blockIdx.x * KMAX + t * DRAW_E + e] = v[e];
            wrote = true;
        }
    for (int i = DRAW_P + t; i < k; i += BLOCK) {
        part_keys[blockIdx.x * KMAX + i] = 0ull;
        wrote = true;
    }
    if (wrote) __threadfence();  // the list visible before the ticket
    __syncthreads();
    if (t == 0) last = atomicAdd(counter, 1u) == N_PARTS - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    // the lists, list p at keys[p * k ..): L2 loads (ld.global.cg, not volatile: they pipeline)
#pragma unroll 4
    for (int j = t; j < N_PARTS * k; j += BLOCK) {
        const int q = j / k;
        keys[j] = __ldcg(part_keys + q * KMAX + (j - q * k));
    }
    __syncthreads();
    draw_merge_lists(keys, k, top);
    if (t >= 32) return;
    __syncwarp();
    const DrawParams p = *dp;
    const int pick = draw_sample_top(top, k, p, prob, wt, share);
    if (t != 0) return;
    const unsigned long long key = top[pick];
    publish(key != 0ull ? pick_key_id(key) : 0, token_out, pos_ptr, token_in, token_ring);
    dp->draw = p.draw + 1;
    *counter = 0;  // ready for the next replay
}
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(const float* logits, float* part_val, int* part_idx, unsigned* counter,
            int* token_out, int* pos_ptr, int* token_in, int* token_ring, void* draw,
            unsigned long long* part_keys) {
    __shared__ float sv[REDUCE ? 32 : BLOCK];
    __shared__ int si[REDUCE ? 32 : BLOCK];
    __shared__ bool last;
    pdl_launch_dependents();
    pdl_wait();
    const int t = threadIdx.x;
    {  // batch row (decode: 0): its logits, partial results, ticket and output
        const int r = blockIdx.y;
        logits += (unsigned long long)r * N;
        part_val += r * N_PARTS, part_idx += r * N_PARTS;
        counter += r, token_out += r;
#if DRAW
        // batch rows (draw_rows): each row its own parameters and lists
        draw = static_cast<DrawParams*>(draw) + r;
        part_keys += (unsigned long long)r * N_PARTS * KMAX;
#endif
    }
#if DRAW
    {
        DrawParams* dp = static_cast<DrawParams*>(draw);
        if (dp->temperature > 0.0f) {
            JITLLM_DYN_SMEM(unsigned long long, keys);
            draw_pick(logits, dp, min(max(dp->top_k, 1), KMAX), part_keys, counter, keys, token_out, pos_ptr,
                      token_in, token_ring);
            return;
        }
    }
#endif
    (void)draw;
    (void)part_keys;
    const int lo = blockIdx.x * CHUNK, hi = min(N, lo + CHUNK);
    float bv = -JL_INF;
    int bi = 0x7fffffff;
    int k = lo + 4 * t;
    for (; k + 3 < hi; k += 4 * BLOCK) {  // ascending per thread: strict > keeps the lowest index
        const float4 v = ld_act4(logits + k);
        if (better(v.x, k, bv, bi)) bv = v.x, bi = k;
        if (better(v.y, k + 1, bv, bi)) bv = v.y, bi = k + 1;
        if (better(v.z, k + 2, bv, bi)) bv = v.z, bi = k + 2;
        if (better(v.w, k + 3, bv, bi)) bv = v.w, bi = k + 3;
    }
    for (; k < hi; ++k)  // the tail (< 4 elements, one thread)
        if (better(logits[k], k, bv, bi)) bv = logits[k], bi = k;
    block_argmax(bv, bi, sv, si);
    if (t == 0) {
        part_val[blockIdx.x] = bv;
        part_idx[blockIdx.x] = bi;
        __threadfence();  // parts visible before the ticket
        last = atomicAdd(counter, 1u) == N_PARTS - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    bv = -JL_INF, bi = 0x7fffffff;
    for (int p = t; p < N_PARTS; p += BLOCK) {
        const float v = reinterpret_cast<volatile float*>(part_val)[p];
        const int i = reinterpret_cast<volatile int*>(part_idx)[p];
        if (better(v, i, bv, bi)) bv = v, bi = i;
    }
    block_argmax(bv, bi, sv, si);
    if (t == 0) {
        publish(bi < N ? bi : 0, token_out, pos_ptr, token_in, token_ring);  // all NaN: token 0, as cpu::argmax
        *counter = 0;  // ready for the next replay
    }
}

extern "C" __global__ void JITLLM_CAT(KERNEL_NAME, _advance)(int* pos_ptr, const int* token_out,
                                                              int* token_in) {
    pdl_launch_dependents();
    pdl_wait();
    *token_in = *token_out;
    *pos_ptr += 1;
}
