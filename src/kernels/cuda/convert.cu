// convert: rows of N floats -> 16-bit copies (f16, or bf16 with BF16_OUT=1), the activation
// operand of the wgmma matrix products (gemm.cu MMA=2 X_F16=1) in the batch phase.
//
// params:  N (elements per row, multiple of 4), BLOCK, BF16_OUT (0 f16, 1 bf16)
// launch:  grid = (ceil(N / (4 * BLOCK)), rows), block = BLOCK, smem = 0
// args:    (x, y)   x: f32 [rows, N]; y: 16-bit [rows, N]. PRECOND: 16-byte aligned rows.
// bytes:   rows * N * 6
// reference: round to nearest even, as __float2half_rn / __float2bfloat16_rn (the CPU spec's
//            matvec is f32; the gemm's tolerance covers this rounding, tests/gpu/kernels_gemm_test)

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME convert
#define N 4096
#define BLOCK 256
#define BF16_OUT 0
#endif

#include "common/common.cuh"

static_assert(N % 4 == 0, "N: multiple of 4");

extern "C" __global__ void __launch_bounds__(BLOCK) KERNEL_NAME(const float* x, void* y) {
    const int i = 4 * (blockIdx.x * BLOCK + threadIdx.x);
    if (i >= N) return;
    const unsigned long long r = (unsigned long long)blockIdx.y * N;
    const float4 v = *reinterpret_cast<const float4*>(x + r + i);
    *reinterpret_cast<uint2*>(static_cast<uint16_t*>(y) + r + i) = pack_16x4<BF16_OUT>(v);
}
