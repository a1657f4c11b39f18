// add: y[i] += scale * x[i] (the unfused attn_residual / ffn_residual; gemv EPI=1 fuses it).
//
// params:  N (elements), BLOCK
// PDL:     PDL=1 enables griddepcontrol (common.cuh); default 0
// launch:  grid = ceil(N / (4 * BLOCK)), block = BLOCK, smem = 0
// args:    (y, x, scale). PRECOND: y, x 16-byte aligned; they do not overlap.
// bytes:   N * 12
// reference: cpu::add_scaled (bit-exact: no FMA contraction)   test: tests/kernels/add_test.cpp

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME add
#define N 4096
#define BLOCK 256
#endif

#include "common/common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(float* __restrict__ y, const float* __restrict__ x, float scale) {
    pdl_launch_dependents();  // small grid: let the next kernel get scheduled
    pdl_wait();
    const int i = 4 * (blockIdx.x * BLOCK + threadIdx.x);
    y += (unsigned long long)blockIdx.y * N;  // batch row (decode: 0)
    x += (unsigned long long)blockIdx.y * N;
    if (N % 4 == 0 && i + 3 < N) {
        float4 a = *reinterpret_cast<float4*>(y + i);
        const float4 b = *reinterpret_cast<const float4*>(x + i);
        a.x = __fadd_rn(a.x, __fmul_rn(scale, b.x));
        a.y = __fadd_rn(a.y, __fmul_rn(scale, b.y));
        a.z = __fadd_rn(a.z, __fmul_rn(scale, b.z));
        a.w = __fadd_rn(a.w, __fmul_rn(scale, b.w));
        *reinterpret_cast<float4*>(y + i) = a;
    } else {
        for (int j = i; j < min(i + 4, N); ++j) y[j] = __fadd_rn(y[j], __fmul_rn(scale, x[j]));
    }
}
