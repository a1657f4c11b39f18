// GGUF weight types on the device: type ids, block geometry, one scalar dequantizer per type
// (the readable definition, used by embed.cu) and the word-level decode helpers the GEMV uses.
// Layouts as ggml's (llama.cpp@1fd6dfe9 ggml-common.h), the same as src/quant/blocks.h; the
// CPU reference is src/quant/quant.cpp. Blocks are read as raw bytes: they are only 2-aligned.
#pragma once

#include "common/common.cuh"

// WTYPE values: the ggml type ids, so `-DWTYPE=Q8_0` and `-DWTYPE=8` mean the same.
#define F32 0
#define F16 1
#define Q4_0 2
#define Q4_1 3
#define Q5_0 6
#define Q5_1 7
#define Q8_0 8
#define Q4_K 12
#define Q5_K 13
#define Q6_K 14
#define BF16 30

// QK_ELEMS(t) elements are stored in QK_BYTES(t) bytes (one block; 1 element for plain types).
#define QK_ELEMS(t) ((t) == F32 || (t) == F16 || (t) == BF16 ? 1 : ((t) >= Q4_K && (t) <= Q6_K) ? 256 : 32)
#define QK_BYTES(t)                                                                           \
    ((t) == F32 ? 4 : (t) == F16 || (t) == BF16 ? 2 : (t) == Q4_0 ? 18 : (t) == Q4_1 ? 20     \
     : (t) == Q5_0 ? 22 : (t) == Q5_1 ? 24 : (t) == Q8_0 ? 34 : (t) == Q4_K ? 144             \
     : (t) == Q5_K ? 176 : (t) == Q6_K ? 210 : -1)
#define QK_PLAIN(t) ((t) == F32 || (t) == F16 || (t) == BF16)

__device__ __forceinline__ uint32_t ld_u8(const uint8_t* p, int off) { return p[off]; }
__device__ __forceinline__ uint32_t ld_u16(const uint8_t* p, int off) {
    return uint32_t(p[off]) | uint32_t(p[off + 1]) << 8;
}
__device__ __forceinline__ uint32_t ld_u32(const uint8_t* p, int off) {
    return ld_u16(p, off) | ld_u16(p, off + 2) << 16;
}

// 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block; `s` = the 12 scale bytes.
__device__ __forceinline__ void k4_scale_min(int j, const uint8_t* s, float& sc, float& m) {
    if (j < 4) {
        sc = float(s[j] & 63);
        m = float(s[j + 4] & 63);
    } else {
        sc = float((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
        m = float((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

// Element e of a row of type T (row = first byte of the row). One element at a time: the
// readable definition of each layout, not a fast path. Float order matches quant.cpp.
template <int T>
__device__ __forceinline__ float dequant_elem(const uint8_t* row, int e) {
    if (T == F32) return __uint_as_float(ld_u32(row, 4 * e));
    if (T == F16) return f16_to_f32(uint16_t(ld_u16(row, 2 * e)));
    if (T == BF16) return bf16_to_f32(uint16_t(ld_u16(row, 2 * e)));
    if (QK_ELEMS(T) == 32) {
        const uint8_t* b = row + (e / 32) * QK_BYTES(T);
        const int j = e % 32, jj = j % 16;
        const float d = f16_to_f32(uint16_t(ld_u16(b, 0)));
        if (T == Q8_0) return d * float(int8_t(b[2 + j]));
        if (T == Q4_0 || T == Q4_1) {
            const uint32_t q = T == Q4_0 ? b[2 + jj] : b[4 + jj];
            const uint32_t n = j < 16 ? (q & 0xF) : (q >> 4);
            if (T == Q4_0) return d * float(int(n) - 8);
            return d * float(n) + f16_to_f32(uint16_t(ld_u16(b, 2)));
        }
        // Q5_0 / Q5_1: bit 4 of element j is bit j of the little-endian qh word
        const int qh_off = T == Q5_0 ? 2 : 4;
        const uint32_t qh = ld_u32(b, qh_off);
        const uint32_t q = b[qh_off + 4 + jj];
        const uint32_t n = (j < 16 ? (q & 0xF) : (q >> 4)) | (((qh >> j) & 1) << 4);
        if (T == Q5_0) return d * float(int(n) - 16);
        return d * float(n) + f16_to_f32(uint16_t(ld_u16(b, 2)));
    }
    const uint8_t* b = row + (e / 256) * QK_BYTES(T);
    const int r = e % 256;
    if (T == Q4_K || T == Q5_K) {
        // chunk c of 64: low nibbles of qs[32c + l] are sub-block 2c, high nibbles 2c+1
        const int c = r / 64, hi = (r % 64) / 32, l = r % 32;
        const float d = f16_to_f32(uint16_t(ld_u16(b, 0)));
        const float dmin = f16_to_f32(uint16_t(ld_u16(b, 2)));
        float sc, m;
        k4_scale_min(2 * c + hi, b + 4, sc, m);
        const int qs_off = T == Q4_K ? 16 : 48;
        const uint32_t q = b[qs_off + 32 * c + l];
        uint32_t n = hi ? (q >> 4) : (q & 0xF);
        if (T == Q5_K) n += ((b[16 + l] >> (2 * c + hi)) & 1) ? 16 : 0;
        return (d * sc) * float(n) - dmin * m;
    }
    // Q6_K: halves of 128; quarter q of a half: ql[l + 32 (q & 1)] nibble (q >> 1), qh[l] bits
    // 2q..2q+1, scale scales[8n + l / 16 + 2q]; ql at 0, qh at 128, scales at 192, d at 208
    const int n = r / 128, q = (r % 128) / 32, l = r % 32;
    const uint32_t lo = b[64 * n + l + 32 * (q & 1)];
    const uint32_t h = b[128 + 32 * n + l];
    const int v = int(((q >> 1) ? (lo >> 4) : (lo & 0xF)) | (((h >> (2 * q)) & 3) << 4)) - 32;
    const float d = f16_to_f32(uint16_t(ld_u16(b, 208)));
    return d * float(int8_t(b[192 + 8 * n + l / 16 + 2 * q])) * float(v);
}

// --- word-level decode helpers (GEMV inner loops) ---

// Nibble at bit s (s <= 16) of w minus `off`, exactly, as a float: ORs the nibble into the
// mantissa of 2^23 (one LOP3) and rescales with one FMA. PRECOND: s constant after unrolling.
__device__ __forceinline__ float nib_as_float(uint32_t w, int s, float off) {
    const float f = __uint_as_float((w & (0xFu << s)) | 0x4B000000u);
    return fmaf(f, __uint_as_float(uint32_t(127 - s) << 23), -(float(1 << (23 - s)) + off));
}

// Sum over the 4 low (HI=false) or high nibbles of the bytes of w, each minus `off`, times
// x.{x,y,z,w}: byte m holds element m. Bits: low nibbles at 0, 8, 16, 24; high at 4, 12, 20,
// 28; the top three are read from w >> 12 to stay within nib_as_float's range.
template <bool HI>
__device__ __forceinline__ float nib4_dot(uint32_t w, float4 x, float off) {
    const uint32_t wh = w >> 12;
    if (!HI)
        return nib_as_float(w, 0, off) * x.x + nib_as_float(w, 8, off) * x.y +
               nib_as_float(w, 16, off) * x.z + nib_as_float(wh, 12, off) * x.w;
    return nib_as_float(w, 4, off) * x.x + nib_as_float(w, 12, off) * x.y +
           nib_as_float(wh, 8, off) * x.z + nib_as_float(wh, 16, off) * x.w;
}

// Sum over the 4 bytes of w, each minus `off`, times x.{x,y,z,w}.
__device__ __forceinline__ float byte4_dot(uint32_t w, float4 x, float off) {
    return byte_as_float(w, 0, off) * x.x + byte_as_float(w, 1, off) * x.y +
           byte_as_float(w, 2, off) * x.z + byte_as_float(w, 3, off) * x.w;
}

// Packed 6-bit scales (bytes 0, 1 of sc) and mins (bytes 0, 1 of m) of sub-blocks 2c and
// 2c+1 (c = 0..3) of a Q4_K/Q5_K block; s0, s1, s2 = scale bytes 0-3, 4-7, 8-11. Same rule as
// k4_scale_min, two sub-blocks at once.
__device__ __forceinline__ void k4_scale_min_pair(int c, uint32_t s0, uint32_t s1, uint32_t s2,
                                                  uint32_t& sc, uint32_t& m) {
    const int sh = 16 * (c & 1);
    const uint32_t a = s0 >> sh, b = s1 >> sh, e = s2 >> sh;
    if (c < 2) {
        sc = a & 0x3F3Fu;
        m = b & 0x3F3Fu;
    } else {
        sc = (e & 0x0F0Fu) | ((a >> 2) & 0x3030u);
        m = ((e >> 4) & 0x0F0Fu) | ((b >> 2) & 0x3030u);
    }
}

// (v[r], v[r+1], v[r+2], v[r+3]) with indices mod 4: lanes walk their 16-byte chunk in a
// rotated order so that a quarter-warp's float4 reads of x hit distinct smem banks.
__device__ __forceinline__ uint4 rot4(uint4 v, int r) {
    if (r & 1) v = make_uint4(v.y, v.z, v.w, v.x);
    if (r & 2) v = make_uint4(v.z, v.w, v.x, v.y);
    return v;
}
__device__ __forceinline__ uint32_t word4(uint4 v, int i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
