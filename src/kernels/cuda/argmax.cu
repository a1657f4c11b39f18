// argmax (sample, greedy): *token_out = argmax(logits[0..N)), the lowest index on ties (as
// cpu::argmax; NaN logits are never chosen). Two stages in one launch: each of N_PARTS blocks
// reduces a chunk to (value, index) in part_val/part_idx; the last block to finish (atomic
// ticket on *counter) reduces the parts, writes the token and resets *counter to 0, so the
// launch can be replayed in a CUDA graph. With FUSE_ADVANCE it also does what <name>_advance
// does, and writes the token into token_ring[*pos_ptr % 4] (when not null: the host's pinned ring,
// read after the step without a copy back). <name>_advance: (*pos_ptr)++ and *token_in =
// *token_out, so a captured step loops.
//
// params:  N (vocab), BLOCK (power of two if REDUCE=0), REDUCE, N_PARTS (1..1024, e.g. the SM
//          count), FUSE_ADVANCE (0 | 1)
// launch:  main:    grid = N_PARTS, block = BLOCK, smem = 0
//          advance: grid = 1, block = 1
// args:    main:    (logits, part_val, part_idx, counter, token_out, pos_ptr, token_in, token_ring)
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
#endif

#include "common/common.cuh"

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

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(const float* logits, float* part_val, int* part_idx, unsigned* counter,
            int* token_out, int* pos_ptr, int* token_in, int* token_ring) {
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
    }
    // chunk: a multiple of 4 so every block's float4 reads stay aligned
    constexpr int CHUNK = ((N + N_PARTS - 1) / N_PARTS + 3) / 4 * 4;
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
        const int tok = bi < N ? bi : 0;  // all NaN: token 0, as cpu::argmax
        *token_out = tok;
#if FUSE_ADVANCE
        if (token_ring) token_ring[*pos_ptr & 3] = tok;
        *token_in = tok;
        *pos_ptr += 1;
#endif
        *counter = 0;  // ready for the next replay
    }
    (void)pos_ptr;
    (void)token_in;
    (void)token_ring;
}

extern "C" __global__ void JITLLM_CAT(KERNEL_NAME, _advance)(int* pos_ptr, const int* token_out,
                                                              int* token_in) {
    pdl_launch_dependents();
    pdl_wait();
    *token_in = *token_out;
    *pos_ptr += 1;
}
