// Shared device helpers for every CUDA kernel: fixed-width types, raw fp16/bf16 conversions,
// 16-byte streaming loads, warp and block reductions (gated by REDUCE), name pasting.
// Device code only; embedded into the binary and served to NVRTC by name. It includes no
// header at all: NVRTC has no libc, and <cuda_fp16.h> costs ~15 ms per compile
// (perf-anchors.md section 7), so halves are handled as raw 16-bit storage here.
#pragma once

#if defined(__CUDACC_RTC__)
typedef unsigned char uint8_t;
typedef signed char int8_t;
typedef unsigned short uint16_t;
typedef short int16_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long uint64_t;  // LP64, as glibc's
typedef long int64_t;
#else
#include <stdint.h>  // nvcc (standalone checks) and host emulation
#endif

// `half` is storage only (2 bytes): read it as uint16_t and convert with f16_to_f32. When
// <cuda_fp16.h> was included by someone else, its `half` is used the same way.
#if !defined(__CUDA_FP16_H__) && !defined(__CUDA_FP16_HPP__)
struct __align__(2) half {
    uint16_t bits_;
};
#endif

// +infinity without <math.h> (NVRTC has no INFINITY)
#define JL_INF __int_as_float(0x7f800000)

// Entry points of a file with several: JITLLM_CAT(KERNEL_NAME, _reduce).
#define JITLLM_CAT_(a, b) a##b
#define JITLLM_CAT(a, b) JITLLM_CAT_(a, b)

// Dynamic shared memory of the launch, typed (the size is the host's `smem` argument).
#ifndef JITLLM_EMU
#define JITLLM_DYN_SMEM(T, name) extern __shared__ __align__(16) T name[]
#endif

// Programmatic dependent launch (sm_90+, PDL=1): when the host launches a kernel with the
// programmatic-stream-serialization attribute it may start before its predecessor finishes;
// pdl_wait() then blocks until the predecessor's writes are visible (call it before reading
// anything a previous kernel wrote and before any global write), and
// pdl_launch_dependents() lets the successor start early. Without the attribute, or with
// PDL=0, or below sm_90, both do nothing.
#ifndef PDL
#define PDL 0
#endif
__device__ __forceinline__ void pdl_wait() {
#if PDL && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if PDL && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// A release / acquire fence at GPU scope (cumulative: writes this thread observed, e.g. its
// block's before a __syncthreads, are ordered with it): the one fence of a ticket pattern.
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// --- conversions (exact; round-to-nearest-even where rounding happens) ---
#ifndef JITLLM_EMU
__device__ __forceinline__ float f16_to_f32(uint16_t h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ uint16_t f32_to_f16(float f) {
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
// Two floats -> a packed 16-bit pair, lo in the low half, each rounded to nearest even
// (cvt.rn.*x2 takes the high one first). BF16 = 1: bfloat16, else half.
template <int BF16_PAIR>
__device__ __forceinline__ uint32_t pack_16x2(float lo, float hi) {
    uint32_t r;
    if (BF16_PAIR)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
// A float4 -> four packed 16-bit values (x, y in .x; z, w in .y), as pack_16x2.
template <int BF16_PAIR>
__device__ __forceinline__ uint2 pack_16x4(float4 v) {
    return make_uint2(pack_16x2<BF16_PAIR>(v.x, v.y), pack_16x2<BF16_PAIR>(v.z, v.w));
}
// A 16-byte read-only weight load that does not allocate in L1 (weights are read once per
// token; L1 stays for activations). PRECOND: p is 16-byte aligned.
__device__ __forceinline__ uint4 ldg_stream16(const void* p) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}
__device__ __forceinline__ uint2 ldg_stream8(const void* p) {  // PRECOND: 8-byte aligned
    uint2 v;
    asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}
__device__ __forceinline__ uint32_t ldg_stream_u16(const void* p) {  // PRECOND: 2-byte aligned
    unsigned short v;
    asm("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(v) : "l"(p));
    return v;
}
// Activations a previous kernel wrote: coherent loads, kept after pdl_wait(). __ldg (ld.global.nc)
// is an invariant load the compiler may hoist above griddepcontrol.wait when the loop around it is
// unrolled (seen on the H200: F32 golden logits off by 1.0 with launch.pdl=pdl).
__device__ __forceinline__ float4 ld_act4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float ld_act(const float* p) { return *p; }
// ldg_stream16 for data a previous kernel wrote (the KV cache): volatile, so never above pdl_wait()
__device__ __forceinline__ uint4 ld_stream16_act(const void* p) {
    uint4 v;
    asm volatile("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint2 ld_stream8_act(const void* p) {
    uint2 v;
    asm volatile("ld.global.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p) : "memory");
    return v;
}
// Asks L2 to fetch the line holding p (no register, no wait): weights a kernel will read soon.
__device__ __forceinline__ void prefetch_l2(const void* p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}
#endif

__device__ __forceinline__ float bf16_to_f32(uint16_t b) { return __uint_as_float(uint32_t(b) << 16); }

// Two halves packed in a word (element 0 in the low 16 bits).
__device__ __forceinline__ float f16_lo(uint32_t w) { return f16_to_f32(uint16_t(w & 0xFFFFu)); }
__device__ __forceinline__ float f16_hi(uint32_t w) { return f16_to_f32(uint16_t(w >> 16)); }
__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xFFFF0000u); }

// Byte i (0..3) of w as an exact float, offset: float(byte) - off. Builds 2^23 + byte as float
// bits (one PRMT) and subtracts, avoiding the slow int->float conversion unit.
// PRECOND: i is a compile-time constant after unrolling.
__device__ __forceinline__ float byte_as_float(uint32_t w, int i, float off) {
    return __uint_as_float(__byte_perm(w, 0x4Bu, 0x4550u | uint32_t(i))) - (8388608.0f + off);
}

// The 4 bytes of an unaligned (2-aligned) little-endian word in shared memory at byte offset
// `off` of a 4-aligned buffer: two aligned reads and a funnel shift. Reads 4 bytes past the
// word when off % 4 != 0, so buffers carry slack.
__device__ __forceinline__ uint32_t smem_u32(const uint8_t* base, int off) {
    const uint32_t* w = reinterpret_cast<const uint32_t*>(base + (off & ~3));
    return __funnelshift_r(w[0], w[1], (off & 3) * 8);
}
__device__ __forceinline__ uint16_t smem_u16(const uint8_t* base, int off) {
    return *reinterpret_cast<const uint16_t*>(base + off);
}

// --- reductions ---

#ifndef JITLLM_EMU
// Sum over the 32 lanes of a warp with shuffles (the gated "warp" reduction, REDUCE=1).
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
#endif

// Sum (or max) of v over all NT threads of the block; every thread gets the same value.
// scratch: shared memory of 32 floats (REDUCE=1) or NT floats (REDUCE=0). Contains
// __syncthreads: call from every thread. REDUCE=0 uses a shared-memory tree only (no shuffles;
// PRECOND NT is a power of two); REDUCE=1 uses warp shuffles (PRECOND NT % 32 == 0).
template <int NT, bool IS_MAX>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
    const int t = threadIdx.x;
#if REDUCE
    static_assert(NT % 32 == 0 && NT <= 1024, "REDUCE=1 needs whole warps");
    v = IS_MAX ? warp_max(v) : warp_sum(v);
    if ((t & 31) == 0) scratch[t >> 5] = v;
    __syncthreads();
    float r = scratch[0];
#pragma unroll
    for (int i = 1; i < NT / 32; ++i) r = IS_MAX ? fmaxf(r, scratch[i]) : r + scratch[i];
    __syncthreads();  // scratch may be reused right after
    return r;
#else
    static_assert((NT & (NT - 1)) == 0, "REDUCE=0 tree needs a power-of-two block");
    scratch[t] = v;
    __syncthreads();
#pragma unroll
    for (int s = NT / 2; s > 0; s >>= 1) {
        if (t < s) scratch[t] = IS_MAX ? fmaxf(scratch[t], scratch[t + s]) : scratch[t] + scratch[t + s];
        __syncthreads();
    }
    const float r = scratch[0];
    __syncthreads();
    return r;
#endif
}
template <int NT>
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    return block_reduce<NT, false>(v, scratch);
}
template <int NT>
__device__ __forceinline__ float block_max(float v, float* scratch) {
    return block_reduce<NT, true>(v, scratch);
}

__device__ __forceinline__ float dot4(float4 a, float4 b) {
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}
