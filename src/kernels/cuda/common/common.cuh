// Shared device helpers for every CUDA kernel: fixed-width types, fp16/bf16 loads, warp and
// block reductions. Device code only; embedded into the binary and served to NVRTC by name.
#pragma once

typedef unsigned char uint8_t;
typedef signed char int8_t;
typedef unsigned short uint16_t;
typedef short int16_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;

#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Sum over the 32 lanes of a warp with shuffles (the gated "warp" reduction).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
