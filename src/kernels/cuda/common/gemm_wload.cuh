// Weight loads for the matrix-matrix kernel (gemm.cu): 8 consecutive elements of one GGUF row,
// fetched into registers (WRaw, gemm_wload) and decoded to floats (gemm_wdequant). The split
// lets the kernel issue the loads of the next K step before the tensor-core work of the current
// one and decode after it. Every type, including F16/BF16 (used by the SIMT sibling).
// PRECOND: k % 8 == 0; the row is 16-byte aligned for F32/F16/BF16/Q4_K/Q5_K (row bytes are
// multiples of 16 when COLS % 32 == 0 / COLS % 256 == 0 and W is 16-byte aligned); other quant
// rows only 2-aligned (read with 16-bit loads through L1: the 4 threads of a block share lines).
#pragma once

#include "common/quant_blocks.cuh"

#ifndef JITLLM_EMU
__device__ __forceinline__ uint32_t ldg_u16(const uint8_t* p) {
    unsigned short v;
    asm("ld.global.nc.u16 %0, [%1];" : "=h"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ uint2 ldg_u64(const uint8_t* p) {  // PRECOND: 8-byte aligned
    uint2 v;
    asm("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}
__device__ __forceinline__ uint4 ldg_u128(const uint8_t* p) {  // PRECOND: 16-byte aligned
    uint4 v;
    asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
#endif
// 4 bytes at a 2-aligned address, little endian.
__device__ __forceinline__ uint32_t ldg_u32_2a(const uint8_t* p) { return ldg_u16(p) | (ldg_u16(p + 2) << 16); }

// Raw bits of 8 elements plus what decoding needs (a few registers per unit).
struct WRaw {
    uint4 a;        // payload (plain: the 16 bytes; F32: the first 16 bytes; quants: words)
    uint4 b;        // F32: second 16 bytes; K-quants: block header (d, dmin, scales)
    uint32_t d;     // scale(s) as raw f16 bits (low: d, high: m / dmin) or Q6_K d | scale << 16
    uint32_t q2;    // Q5_x: qh bits (>> element), Q5_K/Q6_K: second payload words in a.zw
};

#define GEMM_ROW_BYTES ((unsigned long long)(COLS / QK_ELEMS(WTYPE)) * QK_BYTES(WTYPE))

__device__ __forceinline__ WRaw gemm_wload(const uint8_t* row, int k) {
    WRaw r;
    r.a = make_uint4(0, 0, 0, 0);
    r.b = make_uint4(0, 0, 0, 0);
    r.d = 0;
    r.q2 = 0;
#if WTYPE == F32
    r.a = ldg_u128(row + 4 * k);
    r.b = ldg_u128(row + 4 * k + 16);
#elif WTYPE == F16 || WTYPE == BF16
    r.a = ldg_u128(row + 2 * k);
#elif WSPLIT && (WTYPE == Q8_0 || WTYPE == Q4_0)
    // split layout: quants of block b at b * QB (8-byte aligned for k % 8 == 0), scales after
    static_assert(COLS % 256 == 0, "WSPLIT: COLS % 256 == 0");
    constexpr int QB = WTYPE == Q4_0 ? 16 : 32;
    const int j = k & 31;
    r.d = ldg_u16(row + (COLS / 32) * QB + 2 * (k >> 5));
    const uint2 q = ldg_u64(row + (k >> 5) * QB + (WTYPE == Q4_0 ? (j & 15) : j));
    r.a.x = q.x;
    r.a.y = q.y;
#elif WTYPE == Q8_0
    const uint8_t* blk = row + (k >> 5) * 34;
    const int j = k & 31;
    r.d = ldg_u16(blk);
    r.a.x = ldg_u32_2a(blk + 2 + j);
    r.a.y = ldg_u32_2a(blk + 6 + j);
#elif WTYPE == Q4_0 || WTYPE == Q4_1
    constexpr int BB = WTYPE == Q4_0 ? 18 : 20, QS = WTYPE == Q4_0 ? 2 : 4;
    const uint8_t* blk = row + (k >> 5) * BB;
    const int j = k & 31;
    r.d = WTYPE == Q4_0 ? ldg_u16(blk) : ldg_u32_2a(blk);
    r.a.x = ldg_u32_2a(blk + QS + (j & 15));
    r.a.y = ldg_u32_2a(blk + QS + (j & 15) + 4);
#elif WTYPE == Q5_0 || WTYPE == Q5_1
    constexpr int BB = WTYPE == Q5_0 ? 22 : 24, QH = WTYPE == Q5_0 ? 2 : 4;
    const uint8_t* blk = row + (k >> 5) * BB;
    const int j = k & 31;
    r.d = WTYPE == Q5_0 ? ldg_u16(blk) : ldg_u32_2a(blk);
    r.q2 = ldg_u32_2a(blk + QH);
    r.a.x = ldg_u32_2a(blk + QH + 4 + (j & 15));
    r.a.y = ldg_u32_2a(blk + QH + 8 + (j & 15));
#elif WTYPE == Q4_K || WTYPE == Q5_K
    constexpr int BB = WTYPE == Q4_K ? 144 : 176, QS = WTYPE == Q4_K ? 16 : 48;
    const uint8_t* blk = row + (k >> 8) * BB;
    const int e = k & 255, c = e >> 6, l0 = e & 31;
    r.b = ldg_u128(blk);
    const uint2 q = ldg_u64(blk + QS + 32 * c + l0);
    r.a.x = q.x;
    r.a.y = q.y;
#if WTYPE == Q5_K
    const uint2 h = ldg_u64(blk + 16 + l0);
    r.a.z = h.x;
    r.a.w = h.y;
#endif
#elif WTYPE == Q6_K
    const uint8_t* blk = row + (k >> 8) * 210;
    const int e = k & 255, n = e >> 7, q = (e >> 5) & 3, l0 = e & 31;
    r.a.x = ldg_u32_2a(blk + 64 * n + l0 + 32 * (q & 1));
    r.a.y = ldg_u32_2a(blk + 64 * n + l0 + 32 * (q & 1) + 4);
    r.a.z = ldg_u32_2a(blk + 128 + 32 * n + l0);
    r.a.w = ldg_u32_2a(blk + 128 + 32 * n + l0 + 4);
    const uint32_t sc = ldg_u16(blk + ((192 + 8 * n + (l0 >> 4) + 2 * q) & ~1));
    r.d = ldg_u16(blk + 208) | (((sc >> (8 * ((l0 >> 4) & 1))) & 0xFFu) << 16);
#else
#error "gemm: unsupported WTYPE"
#endif
    return r;
}

// The 8 elements k..k+7 as floats (k must be the value given to gemm_wload).
__device__ __forceinline__ void gemm_wdequant(const WRaw& r, int k, float* v) {
#if WTYPE == F32
    v[0] = __uint_as_float(r.a.x); v[1] = __uint_as_float(r.a.y);
    v[2] = __uint_as_float(r.a.z); v[3] = __uint_as_float(r.a.w);
    v[4] = __uint_as_float(r.b.x); v[5] = __uint_as_float(r.b.y);
    v[6] = __uint_as_float(r.b.z); v[7] = __uint_as_float(r.b.w);
    (void)k;
#elif WTYPE == F16
    v[0] = f16_lo(r.a.x); v[1] = f16_hi(r.a.x); v[2] = f16_lo(r.a.y); v[3] = f16_hi(r.a.y);
    v[4] = f16_lo(r.a.z); v[5] = f16_hi(r.a.z); v[6] = f16_lo(r.a.w); v[7] = f16_hi(r.a.w);
    (void)k;
#elif WTYPE == BF16
    v[0] = bf16_lo(r.a.x); v[1] = bf16_hi(r.a.x); v[2] = bf16_lo(r.a.y); v[3] = bf16_hi(r.a.y);
    v[4] = bf16_lo(r.a.z); v[5] = bf16_hi(r.a.z); v[6] = bf16_lo(r.a.w); v[7] = bf16_hi(r.a.w);
    (void)k;
#elif WTYPE == Q8_0
    const float d = f16_to_f32(uint16_t(r.d));
    const uint32_t w0 = r.a.x ^ 0x80808080u, w1 = r.a.y ^ 0x80808080u;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        v[i] = d * byte_as_float(w0, i, 128.0f);
        v[4 + i] = d * byte_as_float(w1, i, 128.0f);
    }
    (void)k;
#elif WTYPE == Q4_0 || WTYPE == Q4_1 || WTYPE == Q5_0 || WTYPE == Q5_1
    const int j = k & 31, sh = (j >> 4) * 4;  // elements 16..31 are the high nibbles
    uint32_t w0 = (r.a.x >> sh) & 0x0F0F0F0Fu, w1 = (r.a.y >> sh) & 0x0F0F0F0Fu;
#if WTYPE == Q5_0 || WTYPE == Q5_1
    // bit 4 of element j + i is bit j + i of qh: spread 4 bits to bit 4 of 4 bytes
    const uint32_t hb = r.q2 >> j;
    w0 |= (((hb & 0xFu) * 0x00204081u) & 0x01010101u) << 4;
    w1 |= ((((hb >> 4) & 0xFu) * 0x00204081u) & 0x01010101u) << 4;
#endif
    const float d = f16_to_f32(uint16_t(r.d & 0xFFFFu));
#if WTYPE == Q4_0 || WTYPE == Q5_0
    constexpr float OFF = WTYPE == Q4_0 ? 8.0f : 16.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        v[i] = d * byte_as_float(w0, i, OFF);
        v[4 + i] = d * byte_as_float(w1, i, OFF);
    }
#else
    const float m = f16_to_f32(uint16_t(r.d >> 16));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        v[i] = fmaf(d, byte_as_float(w0, i, 0.0f), m);
        v[4 + i] = fmaf(d, byte_as_float(w1, i, 0.0f), m);
    }
#endif
#elif WTYPE == Q4_K || WTYPE == Q5_K
    const int e = k & 255, c = e >> 6, hi = (e >> 5) & 1;
    const float d = f16_lo(r.b.x), dmin = f16_hi(r.b.x);
    uint32_t sc, mn;
    k4_scale_min_pair(c, r.b.y, r.b.z, r.b.w, sc, mn);
    const float ds = d * byte_as_float(sc, hi, 0.0f), dm = dmin * byte_as_float(mn, hi, 0.0f);
    uint32_t w0 = (r.a.x >> (4 * hi)) & 0x0F0F0F0Fu, w1 = (r.a.y >> (4 * hi)) & 0x0F0F0F0Fu;
#if WTYPE == Q5_K
    const int s5 = 2 * c + hi;  // qh bit of this sub-block
    w0 |= ((r.a.z >> s5) & 0x01010101u) << 4;
    w1 |= ((r.a.w >> s5) & 0x01010101u) << 4;
#endif
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        v[i] = ds * byte_as_float(w0, i, 0.0f) - dm;
        v[4 + i] = ds * byte_as_float(w1, i, 0.0f) - dm;
    }
#elif WTYPE == Q6_K
    const int e = k & 255, q = (e >> 5) & 3;
    const int shl = 4 * (q >> 1), shh = 2 * q;
    const uint32_t w0 = ((r.a.x >> shl) & 0x0F0F0F0Fu) | (((r.a.z >> shh) & 0x03030303u) << 4);
    const uint32_t w1 = ((r.a.y >> shl) & 0x0F0F0F0Fu) | (((r.a.w >> shh) & 0x03030303u) << 4);
    const float ds = f16_to_f32(uint16_t(r.d & 0xFFFFu)) * float(int8_t(uint8_t(r.d >> 16)));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        v[i] = ds * byte_as_float(w0, i, 32.0f);
        v[4 + i] = ds * byte_as_float(w1, i, 32.0f);
    }
#endif
}
