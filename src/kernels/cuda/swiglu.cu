// swiglu: out[i] = silu(g[i]) * u[i] = g / (1 + exp(-g)) * u (the unfused ffn_act; gemv EPI=2
// fuses it). For phi3's fused ffn_up output, g = buf and u = buf + n_ff.
//
// params:  N (elements), BLOCK
// PDL:     PDL=1 enables griddepcontrol (common.cuh); default 0
// launch:  grid = ceil(N / BLOCK), block = BLOCK, smem = 0
// args:    (g, u, out); out may alias g or u (element-wise)
// bytes:   N * 12
// reference: cpu::swiglu   test: tests/kernels/swiglu_test.cpp

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME swiglu
#define N 14336
#define BLOCK 256
#endif

#include "common/common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(const float* g, const float* u, float* out) {
    pdl_launch_dependents();  // small grid: let the next kernel get scheduled
    pdl_wait();
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i >= N) return;
    const unsigned long long r = (unsigned long long)blockIdx.y * N;  // batch row (decode: 0)
    g += r, u += r, out += r;
    const float gv = g[i];
    out[i] = gv / (1.0f + expf(-gv)) * u[i];  // same operation order as cpu::swiglu
}
