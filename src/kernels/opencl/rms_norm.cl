// rms_norm: y = x * (1 / sqrt(mean(x^2) + eps)) * w over D elements, for HEADS vectors of each
// batch row (attn_norm, ffn_norm, output_norm: one; attn_qk_norm: the q or the k heads). y == x allowed.
// params: D, WG (a power of 2), HAS_WEIGHT, HEADS, ROW_STRIDE (floats between batch rows); REDUCE
// launch: global (HEADS * WG, rows), local (WG, 1)
// args:   (x, w, y, eps)
// bytes:  8 * D a vector + 4 * D weight
// reference: cpu::rms_norm

#ifndef JITLLM_JIT
#define KERNEL_NAME rms_norm
#define D 4096
#define WG 128
#endif

#include "common/common.h"

#ifndef HAS_WEIGHT
#define HAS_WEIGHT 1
#endif
#ifndef HEADS
#define HEADS 1
#endif
#ifndef ROW_STRIDE
#define ROW_STRIDE (HEADS * D)
#endif

kernel void KERNEL_NAME(const global float* x, const global float* w, global float* y, float eps) {
    local float red[WG];
    const int t = (int)get_local_id(0);
    const ulong base = (ulong)get_group_id(1) * ROW_STRIDE + (ulong)get_group_id(0) * D;
    x += base;
    y += base;
    float ss = 0.0f;
    for (int k = t; k < D; k += WG) ss += x[k] * x[k];
    ss = wg_sum(ss, red);
    const float inv = 1.0f / sqrt(ss / (float)D + eps);
    for (int k = t; k < D; k += WG) {
#if HAS_WEIGHT
        y[k] = (x[k] * inv) * w[k];
#else
        y[k] = x[k] * inv;
#endif
    }
    (void)w;
}
