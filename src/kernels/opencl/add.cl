// add: y[i] = y[i] + SCALE * x[i] over N floats a row (attn_residual, ffn_residual), bit-exact
// with cpu::add_scaled.
// params: N, SCALE (float literal)
// launch: global (ceil(N / 256) * 256, rows), local (256, 1)
// args:   (y, x)   rows N floats apart
// bytes:  12 * N a row
// reference: cpu::add_scaled

#ifndef JITLLM_JIT
#define KERNEL_NAME add
#define N 4096
#define SCALE 1.0f
#endif

#include "common/common.h"

kernel void KERNEL_NAME(global float* y, const global float* x) {
    const int i = (int)get_global_id(0);
    if (i >= N) return;
    const ulong k = (ulong)get_group_id(1) * N + i;
    y[k] = y[k] + SCALE * x[k];
}
