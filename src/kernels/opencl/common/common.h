// Shared by every OpenCL kernel: the numerics (no contraction of a * b + c into one rounding, as
// the CPU reference is compiled), the gates' switches, the work-group sums and maxima (REDUCE),
// and the 16-bit loads (F16 / BF16 weights, the half KV cache; FP16).
//
// Gate switches (the host's gates table, backends/opencl/cl_gates.cpp):
//   REDUCE 1: sub-group sums, then local memory across the sub-groups; SUBGROUP_EXT names the
//             spelling the device reports (1 cl_khr_subgroups, 2 cl_intel_subgroups, 3 the OpenCL C
//             3.0 feature __opencl_c_subgroups: the sub_group_* builtins; 4 NVIDIA's driver: warps of
//             32 consecutive work-items exchanging values through inline PTX shfl.sync, WG a
//             multiple of 32). REDUCE 0: local-memory trees only (WG a power of 2).
//   FP16 1:   half values are read through the cl_khr_fp16 types (vload8 of half, convert_float8);
//             0: through vload_half8 (core OpenCL). The same floats either way.
//   IDOT 1:   Q4_0 / Q8_0 products sum 4 int8 products an instruction (quant_blocks.h q8_isum);
//             IDOT_EXT 1 cl_khr_integer_dot_product, 2 NVIDIA's dp4a through inline PTX.
//   ALIGN16 1: the weight rows (and x's rows) a product reads start 16-byte aligned (the host checked
//             buffers, row bytes and offsets): their 16-byte pieces read as one uint4 / float4 each
//             (gate gemv.align=wide); 0: vloadn of the element type, which promises the compiler only
//             the element's alignment (a driver may split it into 2- or 4-byte loads). The same
//             values either way.
// Includes are by path from src/kernels/opencl, which the JIT's expand_source resolves.
#pragma once

#pragma OPENCL FP_CONTRACT OFF

#ifndef REDUCE
#define REDUCE 0
#endif
#ifndef SUBGROUP_EXT
#define SUBGROUP_EXT 1
#endif
#if REDUCE && SUBGROUP_EXT == 1
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#elif REDUCE && SUBGROUP_EXT == 2
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#endif
#ifndef IDOT
#define IDOT 0
#endif
#ifndef FP16
#define FP16 0
#endif
#ifndef ALIGN16
#define ALIGN16 0
#endif
#if FP16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#endif

#define JITLLM_CAT2(a, b) a##b
#define JITLLM_CAT(a, b) JITLLM_CAT2(a, b)

// --- 16-bit values ---

// 8 f16 values held in u as floats
inline float8 half8_of(uint4 u) {
#if FP16
    return convert_float8(as_half8(u));
#else
    return vload_half8(0, (const private half*)&u);
#endif
}
// 8 f16 values at p (2-byte aligned; ALIGN16: 16-byte aligned) as floats
inline float8 ld_half8(const global uchar* p) {
#if ALIGN16
    return half8_of(*(const global uint4*)p);
#elif FP16
    return convert_float8(vload8(0, (const global half*)p));
#else
    return vload_half8(0, (const global half*)p);
#endif
}
inline float ld_half(const global uchar* p) { return vload_half(0, (const global half*)p); }
// 8 16-bit values at p, raw (2-byte aligned; ALIGN16: 16-byte aligned)
inline ushort8 raw16x8(const global uchar* p) {
#if ALIGN16
    return as_ushort8(*(const global uint4*)p);
#else
    return vload8(0, (const global ushort*)p);
#endif
}
// 8 bf16 values held in u as floats (the high half of each float)
inline float8 bf16x8_of(ushort8 u) { return as_float8(convert_uint8(u) << 16); }
// 8 bf16 values at p as floats
inline float8 ld_bf16x8(const global uchar* p) { return bf16x8_of(raw16x8(p)); }
inline float ld_bf16(const global uchar* p) { return as_float((uint)(*(const global ushort*)p) << 16); }
// f rounded to f16 and back (round to nearest even), as fp32_to_fp16 then fp16_to_fp32 on the host
inline float round_f16(float f) {
    ushort h;
    vstore_half_rte(f, 0, (private half*)&h);
    return vload_half(0, (const private half*)&h);
}

// --- sub-groups (REDUCE 1): the sum and maximum over a sub-group, and where a work-item is ---
#if REDUCE && SUBGROUP_EXT == 4
#if defined(WG) && WG % 32 != 0
#error "NVIDIA's warp sums need WG a multiple of 32"
#endif
// lane v of the warp exchanged with lane (lane ^ m), every lane taking part (PTX ISA shfl.sync)
inline float warp_xor(float v, int m) {
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(m));
    return r;
}
inline float sg_sum(float v) {
    for (int m = 16; m > 0; m >>= 1) v += warp_xor(v, m);
    return v;
}
inline float sg_max(float v) {
    for (int m = 16; m > 0; m >>= 1) v = fmax(v, warp_xor(v, m));
    return v;
}
#define SG_ID() ((int)get_local_id(0) >> 5)
#define SG_LANE() ((int)get_local_id(0) & 31)
#define SG_COUNT() (WG / 32)
#define SG_SIZE() 32
#elif REDUCE
#define sg_sum(v) sub_group_reduce_add(v)
#define sg_max(v) sub_group_reduce_max(v)
#define SG_ID() ((int)get_sub_group_id())
#define SG_LANE() ((int)get_sub_group_local_id())
#define SG_COUNT() ((int)get_num_sub_groups())
#define SG_SIZE() ((int)get_sub_group_size())
#endif

// --- work-group reductions (every work-item calls them; WG work-items in dimension 0) ---
#ifdef WG

// The sums over the work-group of n values per work-item (v[0..n), private): sum i is left in
// red[i * WG] (local memory, n * WG floats) past a barrier. The caller reads them, then passes a
// barrier before red is written again.
inline void wg_sum_n(const float* v, int n, local float* red) {
    const int t = (int)get_local_id(0);
#if REDUCE
    const int sg = SG_ID();
    for (int i = 0; i < n; ++i) {
        const float s = sg_sum(v[i]);
        if (SG_LANE() == 0) red[i * WG + sg] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < n) {
        float s = 0.0f;
        for (int g = 0; g < SG_COUNT(); ++g) s += red[t * WG + g];
        red[t * WG] = s;
    }
#else
    for (int i = 0; i < n; ++i) red[i * WG + t] = v[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (t < s)
            for (int i = 0; i < n; ++i) red[i * WG + t] += red[i * WG + t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
}

inline float wg_sum(float v, local float* red) {
    wg_sum_n(&v, 1, red);
    const float s = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return s;
}

inline float wg_max(float v, local float* red) {
    const int t = (int)get_local_id(0);
#if REDUCE
    v = sg_max(v);
    if (SG_LANE() == 0) red[SG_ID()] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0)
        for (int g = 1; g < SG_COUNT(); ++g) v = fmax(v, red[g]);
    if (t == 0) red[0] = v;
#else
    red[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = fmax(red[t], red[t + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    const float m = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return m;
}
#endif  // WG
