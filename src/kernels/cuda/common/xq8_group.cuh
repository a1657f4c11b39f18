// A group of 32 activations quantized to one Q8_0 block in the layout a split-layout Q4_0 / Q8_0
// bulk gemv's x prologue builds (gemv_dot.cuh xq8_store: the same bits), so that the kernel which
// writes the activations can hand the next gemv its x quantized (gate gemv.xq=producer: gemv.cu
// XQ_OUT, the decode attention kernels' XQ_OUT; the consumer is gemv.cu XQ_IN).
#pragma once

#include "common/common.cuh"

// The producing kernel's switches (gemv.cu documents its own XQ_OUT): 1 where the schedule links it to
// a consumer, which also names the consumer's layout (XQ_PLANES 1: Q4_0's two planes; no default then)
#ifndef XQ_OUT
#define XQ_OUT 0
#endif
#if !XQ_OUT && !defined(XQ_PLANES)
#define XQ_PLANES 0
#endif

// Every lane of the warp calls it; lane i holds element 32 G + i of the C-element vector. d = max
// |v| / 127 (kept rounded to f16; ROUND_D false: unrounded, xq8_group_store_norm), q = roundf(v / d)
// with 1 / d, as quantize_row(Q8_0). xq: C int8 values (PLANES, Q4_0's layout: elements 0..15 of
// block b at 16 b, 16..31 at C / 2 + 16 b; else in order), then (d, 8 * sum q) per block as a float2
// at xq + C. (NaN activations: undefined values, as in the consumer's own quantization.)
template <int C, bool PLANES, bool ROUND_D = true>
__device__ __forceinline__ void xq8_group_store(float v, int G, uint8_t* xq, int lane) {
    static_assert(C % 32 == 0, "whole groups of 32");
#if __CUDA_ARCH__ >= 800
    // one warp reduction instruction each (redux.sync): the max of |v| as the max of its bits (the
    // order of non-negative floats), the sum of the integers
    const float amax = __uint_as_float(__reduce_max_sync(0xffffffffu, __float_as_uint(fabsf(v))));
#else
    float amax = fabsf(v);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
#endif
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const int q = int(roundf(v * id));
#if __CUDA_ARCH__ >= 800
    const int sum = __reduce_add_sync(0xffffffffu, q);
#else
    int sum = q;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
#endif
    const uint32_t b = uint32_t(q) & 0xFFu;  // lane 4j + k: byte k of word j
    const uint32_t word = b | (__shfl_down_sync(0xffffffffu, b, 1) << 8) | (__shfl_down_sync(0xffffffffu, b, 2) << 16) |
                          (__shfl_down_sync(0xffffffffu, b, 3) << 24);
    if ((lane & 3) == 0) {
        const int off = PLANES ? (lane < 16 ? 16 * G + lane : C / 2 + 16 * G + (lane - 16)) : 32 * G + lane;
        *reinterpret_cast<uint32_t*>(xq + off) = word;
    }
    if (lane == 0) reinterpret_cast<float2*>(xq + C)[G] = make_float2(ROUND_D ? f16_to_f32(f32_to_f16(d)) : d, 8.0f * float(sum));
}

// The form for a consumer that RMS-normalises its x first (gate gemv.xq=producer with gemv.xq_norm:
// gemv.cu XQ_NORM, embed.cu XQ_OUT; the consumer is gemv.cu XQ_IN with NORM_IN). Lane i holds h,
// element 32 G + i of the residual stream, and w, its norm weight. The group of y = h * w is stored
// as above with d unrounded, and the group's sum of h^2 (warp_sum's xor butterfly) as a float at xq + C +
// C / 4 + 4 G. The rms needs every group, which no producer's block has: the consumer sums the groups'
// sums (xq8_norm_inv) and multiplies each d by 1 / rms before rounding it to f16. Since y / rms scaled
// back by rms is y, that is the consumer's own quantization of y / rms up to the last bits of the
// products (the CPU's rms_norm then quantize_act_q8 differ from either by the same few ulps).
// __fmul_rn: no product contracted into an add (a host can then reproduce the bytes exactly).
template <int C, bool PLANES>
__device__ __forceinline__ void xq8_group_store_norm(float h, float w, int G, uint8_t* xq, int lane) {
    xq8_group_store<C, PLANES, false>(__fmul_rn(h, w), G, xq, lane);
    const float ss = warp_sum(__fmul_rn(h, h));
    if (lane == 0) reinterpret_cast<float*>(xq + C + C / 4)[G] = ss;
}

// The consumer's side of xq8_group_store_norm: 1 / sqrt(sum h^2 / C + eps) from the groups' sums
// at xq + C + C / 4 (global memory, an earlier kernel's: read through L2), the same bits in every lane
// and warp (each lane sums groups lane, lane + 32, ... in order, then warp_sum's xor butterfly, whose
// two operands of every add are the same pair in both lanes). Two steps, so that the loads go out
// before other memory traffic of the kernel (gemv.cu: ahead of the ring's late slots, behind which
// an L2 read waits for microseconds): xq8_norm_load, then xq8_norm_inv. Every lane of the warp calls both.
template <int C>
struct Xq8NormSums {
    float v[(C / 32 + 31) / 32];  // this lane's groups' sums (0 past the last group)
};
template <int C>
__device__ __forceinline__ Xq8NormSums<C> xq8_norm_load(const uint8_t* xq) {
    const float* gs = reinterpret_cast<const float*>(xq + C + C / 4);
    const int lane = threadIdx.x & 31;
    Xq8NormSums<C> r;
#pragma unroll
    for (int i = 0; i < (C / 32 + 31) / 32; ++i) r.v[i] = lane + 32 * i < C / 32 ? __ldcg(gs + lane + 32 * i) : 0.0f;
    return r;
}
template <int C>
__device__ __forceinline__ float xq8_norm_inv(const Xq8NormSums<C>& r, float eps) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < (C / 32 + 31) / 32; ++i) s += r.v[i];  // (+ 0 past the last group: s >= 0, unchanged)
    return 1.0f / sqrtf(warp_sum(s) / float(C) + eps);
}

// The consumer's d of group b: the producer's unrounded d times 1 / rms, rounded to f16 as every
// other x quantization rounds it
__device__ __forceinline__ float xq8_norm_d(float d, float inv) { return f16_to_f32(f32_to_f16(__fmul_rn(d, inv))); }

// out[i] = v and, with XQ, v into its group's block as above: every lane of the warp calls it with
// 32 consecutive i from a multiple of 32 (the decode attention kernels' output writes, XQ_OUT)
template <int C, bool PLANES, bool XQ>
__device__ __forceinline__ void store_out_xq8(float* out, uint8_t* xq, int i, float v) {
    out[i] = v;
    if constexpr (XQ) xq8_group_store<C, PLANES>(v, i / 32, xq, threadIdx.x & 31);
}
