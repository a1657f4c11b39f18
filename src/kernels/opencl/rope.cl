// rope: RoPE on q and k at each row's position and/or their store into the KV cache:
// attn_rope + attn_kv_store fused (ROPE 1, STORE 1), or either alone (--no-fuse).
//   theta_i = pos * base^(-2i/N_ROT) / freq_factor[i] (+ YaRN's ramp), i < N_ROT/2
//   PAIRING 0 (norm): (x[2i], x[2i+1]); 1 (neox): (x[i], x[i + N_ROT/2]); dims >= N_ROT pass through
//   (a, b) -> (a cos - b sin, a sin + b cos); then q times the attention temperature (ATTN_TEMP)
// params: N_HEADS, N_KV_HEADS, HEAD_DIM, N_ROT, PAIRING, ROPE, STORE, KV_HALF, ANGLES (0: (cos, sin) from the host's table [n_ctx][N_ROT/2], core/rope_theta.h's
//         angle; 1: computed here with pow / sincos in double, gate rope.angles, cl_khr_fp64),
//         HAS_FREQ_FACTORS, YARN + YARN_FREQ_SCALE / YARN_LOW / YARN_HIGH (ANGLES 1), ATTN_TEMP (q
//         times temp[pos], the host's table of core/rope_theta.h attn_temperature)
// launch: global ((N_HEADS + N_KV_HEADS) * HEAD_DIM / 2, rows), local (HEAD_DIM / 2, 1); work-group
//         h < N_HEADS rotates q head h, the others k head h - N_HEADS and store its k and v rows
// args:   (q, k, v, k_cache, v_cache, pos, seq, table, freq_factors, temp, freq_base, n_ctx)
//         pos / seq: one int a row (seq null: sequence 0); caches: this layer's, row seq * n_ctx + pos
// bytes:  4 * HEAD_DIM * (2 * N_HEADS + 3 * N_KV_HEADS) + 2 * N_KV_HEADS * HEAD_DIM * (2 | 4) a row
// reference: cpu::rope on q and k, the temperature, then the cache copy (CpuBackend::run_task)

#ifndef JITLLM_JIT
#define KERNEL_NAME rope
#define N_HEADS 32
#define N_KV_HEADS 8
#define HEAD_DIM 128
#define N_ROT 128
#endif

#include "common/common.h"

#ifndef PAIRING
#define PAIRING 0
#endif
#ifndef ROPE
#define ROPE 1
#endif
#ifndef STORE
#define STORE 1
#endif
#ifndef KV_HALF
#define KV_HALF 1
#endif
#ifndef ANGLES
#define ANGLES 0
#endif
#ifndef HAS_FREQ_FACTORS
#define HAS_FREQ_FACTORS 0
#endif
#ifndef YARN
#define YARN 0
#endif
#ifndef ATTN_TEMP
#define ATTN_TEMP 0
#endif
#if ANGLES
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define KV_DIM (N_KV_HEADS * HEAD_DIM)

inline void store_kv(global void* cache, ulong i, float v) {
#if KV_HALF
    vstore_half_rte(v, i, (global half*)cache);
#else
    ((global float*)cache)[i] = v;
#endif
}

// (cos, sin) of pair i at pos, as cpu::rope computes them
inline float2 angle(int pos, int i, const global float* table, const global float* ff, float base) {
#if ANGLES == 0
    return vload2((ulong)pos * (N_ROT / 2) + i, table);
#else
    float theta = (float)pos * (float)pow((double)base, (double)(-2.0f * (float)i / (float)N_ROT));
#if HAS_FREQ_FACTORS
    theta = theta / ff[i];
#endif
#if YARN
    const float interp = YARN_FREQ_SCALE * theta;
    const float tt = ((float)i - YARN_LOW) / fmax(0.001f, YARN_HIGH - YARN_LOW);
    const float r = 1.0f - fmin(1.0f, fmax(0.0f, tt));
    theta = interp * (1.0f - r) + theta * r;
#endif
    double c;
    const double s = sincos((double)theta, &c);
    return (float2)((float)c, (float)s);
#endif
}

kernel void KERNEL_NAME(global float* q, global float* k, const global float* v, global void* k_cache,
                        global void* v_cache, const global int* pos_ptr, const global int* seq_ptr,
                        const global float* table, const global float* ff, const global float* temp,
                        float freq_base, int n_ctx) {
    const int row = (int)get_group_id(1), h = (int)get_group_id(0), t = (int)get_local_id(0);
    const int pos = pos_ptr[row];
    const bool is_q = h < N_HEADS;
    if (is_q && !ROPE) return;
    global float* hv = is_q ? q + ((ulong)row * N_HEADS + h) * HEAD_DIM : k + ((ulong)row * KV_DIM + (h - N_HEADS) * HEAD_DIM);
#if ROPE
    if (t < N_ROT / 2) {
        const float2 cs = angle(pos, t, table, ff, freq_base);
        const int a = PAIRING == 0 ? 2 * t : t;
        const int b = PAIRING == 0 ? 2 * t + 1 : t + N_ROT / 2;
        const float x0 = hv[a], x1 = hv[b];
        hv[a] = x0 * cs.x - x1 * cs.y;
        hv[b] = x0 * cs.y + x1 * cs.x;
    }
#if ATTN_TEMP
    if (is_q) {  // mistral3's temperature: q alone, after RoPE, every dimension
        barrier(CLK_GLOBAL_MEM_FENCE);
        const float tq = temp[pos];
        for (int d = t; d < HEAD_DIM; d += HEAD_DIM / 2) hv[d] = hv[d] * tq;
    }
#endif
#endif
#if STORE
    if (is_q) return;
    barrier(CLK_GLOBAL_MEM_FENCE);  // the work-group's rotated k values
    const int kvh = h - N_HEADS;
    const int seq = seq_ptr ? seq_ptr[row] : 0;
    const ulong c = ((ulong)seq * n_ctx + pos) * KV_DIM + kvh * HEAD_DIM;
    const global float* vh = v + (ulong)row * KV_DIM + kvh * HEAD_DIM;
    for (int d = t; d < HEAD_DIM; d += HEAD_DIM / 2) {
        store_kv(k_cache, c + d, hv[d]);
        store_kv(v_cache, c + d, vh[d]);
    }
#endif
    (void)table; (void)ff; (void)temp; (void)freq_base; (void)n_ctx; (void)v; (void)k_cache; (void)v_cache; (void)seq_ptr;
}
