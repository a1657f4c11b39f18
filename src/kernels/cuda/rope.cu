// rope: rotates q (N_HEADS heads) and k (N_KV_HEADS heads) at position *pos_ptr, writes q back
// and k, v into the KV cache row *pos_ptr (fused attn_rope + attn_kv_store). Rotated k is also
// written back to its float buffer.
//   theta_i = pos * base^(-2i/N_ROT) / freq_factor[i],  i < N_ROT/2
//   PAIRING 0 (norm): (x[2i], x[2i+1]);  1 (neox): (x[i], x[i + N_ROT/2])
//   (a, b) -> (a cos - b sin, a sin + b cos); dims >= N_ROT pass through
//   YaRN (YARN=1, or in the host's table): the angle ramp of common/rope_angle.cuh
//   ATTN_TEMP != 0: every q element then times attn_temperature(pos) (rope_angle.cuh)
//   QK_NORM=1: each head is first RMS-normalised over its HEAD_DIM values and scaled by its norm
//     weight (q_norm_w for q heads, k_norm_w for k heads; qwen3's attn_qk_norm) in place, so
//     attn_qk_norm + attn_rope + attn_kv_store are one launch
// The angle is computed as the CPU does (float exponent, float pos * base^e, float division by
// the factor) but with pow/sin/cos in double then rounded, i.e. correctly rounded, which is
// what glibc's powf/sinf/cosf return in all but rare cases; no fast-math intrinsics.
//
// params:
//   N_HEADS, N_KV_HEADS, HEAD_DIM, N_ROT (even, <= HEAD_DIM), PAIRING, HAS_FREQ_FACTORS
//   YARN, YARN_FREQ_SCALE, YARN_LOW, YARN_HIGH, ATTN_TEMP, ATTN_TEMP_FLOOR (rope_angle.cuh)
//   KV_T        cache element type: half | float
// PDL:     PDL=1 enables griddepcontrol (common.cuh); default 0
// launch:  grid = N_HEADS + N_KV_HEADS (block h < N_HEADS: q head h; else kv head h - N_HEADS),
//          block = ROPE_BLOCK (HEAD_DIM / 2 rounded up to whole warps), smem = 0
// args:    (q, k, v, k_cache, v_cache, pos_ptr, freq_factors, freq_base, seq_ptr, q_norm_w,
//          k_norm_w, qk_eps, kv_table); q_norm_w, k_norm_w and qk_eps are read only with QK_NORM=1
//          (else null, 0)
//          BATCH=1 (with KV_BLOCK, KV_BPS: the paged pool): grid.y = rows; row r rotates q/k row r
//          at p = pos_ptr[r] and stores into pool row kv_table[s * KV_BPS + p / KV_BLOCK] *
//          KV_BLOCK + p % KV_BLOCK, s = seq_ptr[r] (kv_table: i32 [n_seq][KV_BPS], a block per
//          entry); BATCH=0: pos = *pos_ptr, cache row pos, seq_ptr and kv_table unused
//          q: (N_HEADS, HEAD_DIM) in/out; k: (N_KV_HEADS, HEAD_DIM) in/out; v: same, in;
//          caches: [n_ctx][N_KV_HEADS * HEAD_DIM] of KV_T (this layer's base); freq_factors:
//          N_ROT/2 floats or null. PRECOND: 0 <= *pos_ptr < n_ctx (not checked here).
// bytes:   4 * HEAD_DIM * (2 * N_HEADS + 3 * N_KV_HEADS)   (q, k read and written; v read)
//          + 2 * N_KV_HEADS * HEAD_DIM * sizeof(KV_T)       (k, v cache rows written)
//          + QK_NORM: 8 * HEAD_DIM (the two norm weights)
// reference: cpu::rope (q and k) + the cache copy (QK_NORM: cpu::rms_norm of each head first)
//            test: tests/gpu/kernels_vs_cpu_test.cpp (whole plans, qwen3 and qwen3moe ones too)

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME rope
#define N_HEADS 32
#define N_KV_HEADS 8
#define HEAD_DIM 128
#define N_ROT 128
#define PAIRING 0
#define HAS_FREQ_FACTORS 1
#define KV_T half
#endif

#include "common/common.cuh"

#ifndef BATCH  // 1: row blockIdx.y of a batch step: its position pos_ptr[row], sequence seq_ptr[row]
#define BATCH 0
#endif
#if BATCH && (!defined(KV_BLOCK) || !defined(KV_BPS))
#error "BATCH needs KV_BLOCK and KV_BPS (the paged pool's block size and block-table length)"
#endif

static_assert(N_ROT % 2 == 0 && N_ROT <= HEAD_DIM && HEAD_DIM % 2 == 0, "rope dims");

#include "common/rope_angle.cuh"

#ifndef QK_NORM
#define QK_NORM 0
#endif
#define ROPE_BLOCK ((HEAD_DIM / 2 + 31) / 32 * 32)

// QK_NORM: hv[0 .. HEAD_DIM) = hv * (1 / sqrt(mean(hv^2) + eps)) * w, as cpu::rms_norm (the sum's
// order differs: per thread, per warp, then the warps in order). Every thread of the block calls it.
__device__ __forceinline__ void head_rms_norm(float* hv, const float* w, float eps) {
    __shared__ float part[ROPE_BLOCK / 32];
    const int t = threadIdx.x;
    constexpr int H = HEAD_DIM / 2;
    float x0 = 0.0f, x1 = 0.0f;
    if (t < H) {
        x0 = hv[t];
        x1 = hv[t + H];
    }
    float ss = warp_sum(x0 * x0 + x1 * x1);
    if ((t & 31) == 0) part[t >> 5] = ss;
    __syncthreads();
    ss = part[0];
#pragma unroll
    for (int i = 1; i < ROPE_BLOCK / 32; ++i) ss += part[i];
    const float scale = 1.0f / sqrtf(ss / float(HEAD_DIM) + eps);
    if (t < H) {
        hv[t] = x0 * scale * __ldg(w + t);
        hv[t + H] = x1 * scale * __ldg(w + t + H);
    }
    __syncthreads();  // the rotation below reads other threads' values
}

extern "C" __global__ void __launch_bounds__(ROPE_BLOCK)
KERNEL_NAME(float* q, float* k, const float* v, KV_T* k_cache, KV_T* v_cache,
            const int* pos_ptr, const float* freq_factors, float freq_base, const int* seq_ptr,
            const float* q_norm_w, const float* k_norm_w, float qk_eps, const int* kv_table) {
    constexpr int KV_DIM = N_KV_HEADS * HEAD_DIM;
    pdl_launch_dependents();
    pdl_wait();
#if BATCH
    const int row = blockIdx.y;
    const int pos = pos_ptr[row];
    q += (unsigned long long)row * N_HEADS * HEAD_DIM;
    k += (unsigned long long)row * KV_DIM;
    v += (unsigned long long)row * KV_DIM;
    const int block = kv_table[seq_ptr[row] * KV_BPS + pos / KV_BLOCK];
    const unsigned long long cache_row = (unsigned long long)block * KV_BLOCK + pos % KV_BLOCK;
#else
    const int pos = *pos_ptr;
    const unsigned long long cache_row = pos;
    (void)kv_table;
#endif
    const int t = threadIdx.x;
    const bool is_q = blockIdx.x < N_HEADS;
    const int head = is_q ? blockIdx.x : blockIdx.x - N_HEADS;
    float* hv = (is_q ? q : k) + head * HEAD_DIM;
    KV_T* kc = k_cache + cache_row * KV_DIM + head * HEAD_DIM;
#if QK_NORM
    head_rms_norm(hv, is_q ? q_norm_w : k_norm_w, qk_eps);
#else
    (void)q_norm_w, (void)k_norm_w, (void)qk_eps;
#endif
    if (t >= HEAD_DIM / 2) return;  // the padding of a block to whole warps
    if (t < N_ROT / 2) {
        const int i = t;
        float c, s;
        rope_angle(pos, i, freq_factors, freq_base, &c, &s);  // exactly the CPU's float steps
        const int a = PAIRING == 0 ? 2 * i : i;
        const int b = PAIRING == 0 ? 2 * i + 1 : i + N_ROT / 2;
        const float x0 = hv[a], x1 = hv[b];
        // no FMA contraction: the same two roundings as the CPU's x0 * c - x1 * s
        float r0 = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
        float r1 = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
        if (ATTN_TEMP != 0.0f && is_q) {  // mistral3's temperature: q alone, after RoPE
            const float tq = attn_temperature(pos);
            r0 = __fmul_rn(r0, tq);
            r1 = __fmul_rn(r1, tq);
        }
        hv[a] = r0;
        hv[b] = r1;
        if (!is_q) {
            store_kv(kc + a, r0);
            store_kv(kc + b, r1);
        }
    }
    if (is_q) {
        if (ATTN_TEMP != 0.0f)  // q's dims past N_ROT take the temperature too
            for (int d = N_ROT + t; d < HEAD_DIM; d += HEAD_DIM / 2) hv[d] = __fmul_rn(hv[d], attn_temperature(pos));
        return;
    }
    for (int d = N_ROT + t; d < HEAD_DIM; d += HEAD_DIM / 2) store_kv(kc + d, hv[d]);
    const float* vh = v + head * HEAD_DIM;
    KV_T* vc = v_cache + cache_row * KV_DIM + head * HEAD_DIM;
    store_kv(vc + t, vh[t]);
    store_kv(vc + t + HEAD_DIM / 2, vh[t + HEAD_DIM / 2]);
    (void)seq_ptr;
}
