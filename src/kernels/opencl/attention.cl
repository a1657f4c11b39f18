// attention: one query row against its sequence's cached positions first .. pos (causal: a batch
// step stores every row's K and V before any row attends), softmax(q . k * SCALE) . v.
// A work-group per (query head, batch row): chunks of WG positions, one position a work-item
// (its q . k), the chunk's maximum and exponential sum over the work-group, the running state
// rescaled per chunk (online softmax), each output dimension summed over the chunk's positions in
// order by the work-item that owns it.
// params: N_HEADS, N_KV_HEADS, HEAD_DIM (a multiple of 8), SCALE (float literal), KV_HALF,
//         WINDOW (0: all positions; else the last WINDOW), WG (a power of 2); REDUCE, FP16
// launch: global (N_HEADS * WG, rows), local (WG, 1)
// args:   (q, k_cache, v_cache, pos, seq, out, n_ctx)   seq null: sequence 0; n_ctx: a sequence's cache rows
//         (an argument, so that contexts of any length share the program)
// bytes:  2 * n_pos * HEAD_DIM * (2 | 4) a head (K and V rows) + 8 * HEAD_DIM
// reference: cpu::attention

#ifndef JITLLM_JIT
#define KERNEL_NAME attention
#define N_HEADS 32
#define N_KV_HEADS 8
#define HEAD_DIM 128
#define SCALE 0.088388347648f
#define WG 64
#endif

#include "common/common.h"

#ifndef KV_HALF
#define KV_HALF 1
#endif
#ifndef WINDOW
#define WINDOW 0
#endif

#define KV_DIM (N_KV_HEADS * HEAD_DIM)
#define DPT ((HEAD_DIM + WG - 1) / WG)  // output dimensions a work-item owns

inline float8 ld_kv8(const global void* c, ulong i) {
#if KV_HALF
    return ld_half8((const global uchar*)c + 2 * i);
#else
    return vload8(0, (const global float*)c + i);
#endif
}
inline float ld_kv(const global void* c, ulong i) {
#if KV_HALF
    return vload_half(i, (const global half*)c);
#else
    return ((const global float*)c)[i];
#endif
}

kernel void KERNEL_NAME(const global float* q, const global void* k_cache, const global void* v_cache,
                        const global int* pos_ptr, const global int* seq_ptr, global float* out, int n_ctx) {
    local float qs[HEAD_DIM];
    local float p[WG];
    local float red[WG];
    const int h = (int)get_group_id(0), row = (int)get_group_id(1), t = (int)get_local_id(0);
    const int pos = pos_ptr[row];
    const int seq = seq_ptr ? seq_ptr[row] : 0;
    const int first = WINDOW > 0 ? max(0, pos + 1 - WINDOW) : 0;
    const int n = pos + 1 - first;
    const int kvh = h / (N_HEADS / N_KV_HEADS);
    const ulong base = ((ulong)seq * n_ctx + first) * KV_DIM + kvh * HEAD_DIM;  // position `first`
    for (int d = t; d < HEAD_DIM; d += WG) qs[d] = q[((ulong)row * N_HEADS + h) * HEAD_DIM + d];
    barrier(CLK_LOCAL_MEM_FENCE);
    float m = -INFINITY, l = 0.0f;
    float acc[DPT];
    for (int j = 0; j < DPT; ++j) acc[j] = 0.0f;
    for (int c0 = 0; c0 < n; c0 += WG) {
        float s = -INFINITY;
        if (c0 + t < n) {
            const ulong kr = base + (ulong)(c0 + t) * KV_DIM;
            float dot = 0.0f;
            for (int d = 0; d < HEAD_DIM; d += 8) {
                const float8 kv = ld_kv8(k_cache, kr + d);
                const float8 qv = vload8(0, qs + d);
                dot += ((qv.s0 * kv.s0 + qv.s1 * kv.s1) + (qv.s2 * kv.s2 + qv.s3 * kv.s3)) +
                       ((qv.s4 * kv.s4 + qv.s5 * kv.s5) + (qv.s6 * kv.s6 + qv.s7 * kv.s7));
            }
            s = dot * SCALE;
        }
        const float mn = fmax(m, wg_max(s, red));
        const float e = c0 + t < n ? exp(s - mn) : 0.0f;
        p[t] = e;
        const float alpha = exp(m - mn);  // 0 for the first chunk (m = -inf)
        l = l * alpha + wg_sum(e, red);   // (its barriers also publish p)
        m = mn;
        const int cn = min(WG, n - c0);
        for (int j = 0; j < DPT; ++j) {
            const int d = t + j * WG;
            if (d >= HEAD_DIM) break;
            float a = acc[j] * alpha;
            for (int i = 0; i < cn; ++i) a += p[i] * ld_kv(v_cache, base + (ulong)(c0 + i) * KV_DIM + d);
            acc[j] = a;
        }
        barrier(CLK_LOCAL_MEM_FENCE);  // p is rewritten by the next chunk
    }
    for (int j = 0; j < DPT; ++j) {
        const int d = t + j * WG;
        if (d < HEAD_DIM) out[((ulong)row * N_HEADS + h) * HEAD_DIM + d] = acc[j] / l;
    }
}
