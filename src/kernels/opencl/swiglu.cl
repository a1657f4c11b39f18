// swiglu: g[i] = g[i] / (1 + exp(-g[i])) * u[i] over N floats a row (ffn_act, ffn_exp_act,
// ffn_shexp_act), rows ROW_STRIDE floats apart.
// params: N, ROW_STRIDE
// launch: global (ceil(N / 256) * 256, rows), local (256, 1)
// args:   (g, u)   the result replaces g
// bytes:  12 * N a row
// reference: cpu::swiglu

#ifndef JITLLM_JIT
#define KERNEL_NAME swiglu
#define N 14336
#endif

#include "common/common.h"

#ifndef ROW_STRIDE
#define ROW_STRIDE N
#endif

kernel void KERNEL_NAME(global float* g, const global float* u) {
    const int i = (int)get_global_id(0);
    if (i >= N) return;
    const ulong k = (ulong)get_group_id(1) * ROW_STRIDE + i;
    const float a = g[k];
    g[k] = a / (1.0f + exp(-a)) * u[k];
}
