// convert: rows of N floats -> 16-bit copies (f16, or bf16 with BF16_OUT=1), the activation
// operand of the wgmma matrix products (gemm.cu MMA=2 X_F16=1) in the batch phase; or with
// Q8_OUT=1 -> Q8_0 rows in the split layout (N int8, then N / 32 f16 scales), the activation
// operand of the integer tensor-core products (gemm.cu MMA=3).
//
// params:  N (elements per row, multiple of 4; Q8_OUT: of 32), BLOCK (Q8_OUT: a multiple of 8),
//          BF16_OUT (0 f16, 1 bf16), Q8_OUT (0 / 1)
// launch:  grid = (ceil(N / (4 * BLOCK)), rows), block = BLOCK, smem = 0
// args:    (x, y)   x: f32 [rows, N]; y: 16-bit [rows, N], or Q8_OUT rows of N * 17 / 16 bytes.
//          PRECOND: 16-byte aligned rows.
// bytes:   rows * N * 6 (Q8_OUT: rows * N * (4 + 17 / 16))
// reference: round to nearest even, as __float2half_rn / __float2bfloat16_rn (the CPU spec's
//            matvec is f32; the gemm's tolerance covers this rounding, tests/gpu/kernels_gemm_test);
//            Q8_OUT: quantize_row(Q8_0) of each row, the CPU spec's activation blocks (d = amax /
//            127, q = roundf(x / d) with 1 / d, d kept as f16)

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME convert
#define N 4096
#define BLOCK 256
#define BF16_OUT 0
#endif

#ifndef Q8_OUT
#define Q8_OUT 0
#endif

#include "common/common.cuh"

static_assert(N % 4 == 0, "N: multiple of 4");
static_assert(!Q8_OUT || (N % 32 == 0 && BLOCK % 8 == 0), "Q8_OUT: N a multiple of 32, BLOCK of 8");

extern "C" __global__ void __launch_bounds__(BLOCK) KERNEL_NAME(const float* x, void* y) {
    const int i = 4 * (blockIdx.x * BLOCK + threadIdx.x);
#if Q8_OUT
    // the 8 lanes of a 32-element block share its max |x| (lanes past N: zeros, nothing stored)
    const float4 v = i < N ? *reinterpret_cast<const float4*>(x + (unsigned long long)blockIdx.y * N + i)
                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 4));
    if (i >= N) return;
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint32_t word = (uint32_t(int(roundf(v.x * id))) & 0xFFu) | ((uint32_t(int(roundf(v.y * id))) & 0xFFu) << 8) |
                          ((uint32_t(int(roundf(v.z * id))) & 0xFFu) << 16) | (uint32_t(int(roundf(v.w * id))) << 24);
    uint8_t* row = static_cast<uint8_t*>(y) + (unsigned long long)blockIdx.y * (N + N / 16);
    *reinterpret_cast<uint32_t*>(row + i) = word;
    if ((i & 31) == 0) *reinterpret_cast<uint16_t*>(row + N + i / 16) = f32_to_f16(d);
#else
    if (i >= N) return;
    const unsigned long long r = (unsigned long long)blockIdx.y * N;
    const float4 v = *reinterpret_cast<const float4*>(x + r + i);
    *reinterpret_cast<uint2*>(static_cast<uint16_t*>(y) + r + i) = pack_16x4<BF16_OUT>(v);
#endif
}
