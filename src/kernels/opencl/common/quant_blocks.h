// GGUF weight types on an OpenCL device: type ids, block geometry, one scalar dequantizer per type
// (the readable definition, embed.cl) and the 32-element unit dots of the products (gemv.cl).
// Layouts as ggml's, the same as src/quant/blocks.h; the CPU reference is src/quant/quant.cpp.
// Blocks are read as bytes from `const global uchar*` rows: they are only 2-byte aligned.
#pragma once

#include "common/common.h"

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
#define QK_PLAIN(t) ((t) == F32 || (t) == F16 || (t) == BF16)
#define QK_ELEMS(t) (QK_PLAIN(t) ? 1 : ((t) >= Q4_K && (t) <= Q6_K) ? 256 : 32)
#define QK_BYTES(t)                                                                           \
    ((t) == F32 ? 4 : (t) == F16 || (t) == BF16 ? 2 : (t) == Q4_0 ? 18 : (t) == Q4_1 ? 20     \
     : (t) == Q5_0 ? 22 : (t) == Q5_1 ? 24 : (t) == Q8_0 ? 34 : (t) == Q4_K ? 144             \
     : (t) == Q5_K ? 176 : (t) == Q6_K ? 210 : -1)
// bytes of a row of n elements
#define ROW_BYTES(t, n) ((n) / QK_ELEMS(t) * QK_BYTES(t))
// the types whose products take x quantized to Q8_0 blocks (quant.h act_q8_type)
#define XQ8_TYPE(t) ((t) == Q4_0 || (t) == Q8_0)

inline uint ld_u16(const global uchar* p) { return (uint)p[0] | (uint)p[1] << 8; }
inline uint ld_u32(const global uchar* p) { return ld_u16(p) | ld_u16(p + 2) << 16; }

// 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block; s = its 12 scale bytes
inline void k4_scale_min(int j, const global uchar* s, float* sc, float* m) {
    if (j < 4) {
        *sc = (float)(s[j] & 63);
        *m = (float)(s[j + 4] & 63);
    } else {
        *sc = (float)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
        *m = (float)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

// Element e of a row of type T: one element at a time, the float steps of quant.cpp.
inline float dequant_elem(const int T, const global uchar* row, int e) {
    if (T == F32) return as_float(ld_u32(row + 4 * e));
    if (T == F16) return ld_half(row + 2 * e);
    if (T == BF16) return ld_bf16(row + 2 * e);
    if (QK_ELEMS(T) == 32) {
        const global uchar* b = row + (e / 32) * QK_BYTES(T);
        const int j = e % 32, jj = j % 16;
        const float d = ld_half(b);
        if (T == Q8_0) return d * (float)((const global char*)b)[2 + j];
        if (T == Q4_0 || T == Q4_1) {
            const uint q = T == Q4_0 ? b[2 + jj] : b[4 + jj];
            const uint n = j < 16 ? (q & 0xF) : (q >> 4);
            if (T == Q4_0) return d * (float)((int)n - 8);
            return d * (float)n + ld_half(b + 2);
        }
        // Q5_0 / Q5_1: bit 4 of element j is bit j of the little-endian qh word
        const int qh_off = T == Q5_0 ? 2 : 4;
        const uint qh = ld_u32(b + qh_off);
        const uint q = b[qh_off + 4 + jj];
        const uint n = (j < 16 ? (q & 0xF) : (q >> 4)) | (((qh >> j) & 1) << 4);
        if (T == Q5_0) return d * (float)((int)n - 16);
        return d * (float)n + ld_half(b + 2);
    }
    const global uchar* b = row + (e / 256) * QK_BYTES(T);
    const int r = e % 256;
    if (T == Q4_K || T == Q5_K) {
        // chunk c of 64: low nibbles of qs[32c + l] are sub-block 2c, high nibbles 2c+1
        const int c = r / 64, hi = (r % 64) / 32, l = r % 32;
        float sc, m;
        k4_scale_min(2 * c + hi, b + 4, &sc, &m);
        const uint q = b[(T == Q4_K ? 16 : 48) + 32 * c + l];
        uint n = hi ? (q >> 4) : (q & 0xF);
        if (T == Q5_K) n += ((b[16 + l] >> (2 * c + hi)) & 1) ? 16 : 0;
        return (ld_half(b) * sc) * (float)n - ld_half(b + 2) * m;
    }
    // Q6_K: halves of 128; quarter q of a half: ql[l + 32 (q & 1)] nibble (q >> 1), qh[l] bits
    // 2q..2q+1, scale scales[8n + l / 16 + 2q]; ql at 0, qh at 128, scales at 192, d at 208
    const int n = r / 128, q = (r % 128) / 32, l = r % 32;
    const uint lo = b[64 * n + l + 32 * (q & 1)];
    const uint h = b[128 + 32 * n + l];
    const int v = (int)(((q >> 1) ? (lo >> 4) : (lo & 0xF)) | (((h >> (2 * q)) & 3) << 4)) - 32;
    return (ld_half(b + 208) * (float)((const global char*)b)[192 + 8 * n + l / 16 + 2 * q]) * (float)v;
}

// --- 32-element units of a row (gemv.cl): unit u holds elements 32u .. 32u + 31 ---

inline float dot8(float8 a, float8 b) {
    return ((a.s0 * b.s0 + a.s1 * b.s1) + (a.s2 * b.s2 + a.s3 * b.s3)) +
           ((a.s4 * b.s4 + a.s5 * b.s5) + (a.s6 * b.s6 + a.s7 * b.s7));
}
inline float sum8(float8 a) { return ((a.s0 + a.s1) + (a.s2 + a.s3)) + ((a.s4 + a.s5) + (a.s6 + a.s7)); }

// 8 of unit u's elements from element 8 i on (i < 4) of a float-x type, as floats
inline float8 unit8(const int T, const global uchar* row, int u, int i) {
#if ALIGN16
    if (T == F32) {
        const global float4* f = (const global float4*)(row + 128 * u + 32 * i);
        return (float8)(f[0], f[1]);
    }
#else
    if (T == F32) return vload8(0, (const global float*)(row + 128 * u + 32 * i));
#endif
    if (T == F16) return ld_half8(row + 64 * u + 16 * i);
    if (T == BF16) return ld_bf16x8(row + 64 * u + 16 * i);
    if (T == Q4_1 || T == Q5_0 || T == Q5_1) {
        const global uchar* b = row + u * QK_BYTES(T);
        const int qs = T == Q4_1 ? 4 : T == Q5_0 ? 6 : 8;
        // elements 8i .. 8i+7: bytes (8i) % 16 .., low nibbles for i < 2, high for i >= 2
        const uchar8 q8 = vload8(0, b + qs + 8 * (i & 1));
        uint8 n = i < 2 ? convert_uint8(q8 & (uchar8)0xF) : convert_uint8(q8 >> (uchar8)4);
        if (T != Q4_1) {
            const uint qh = ld_u32(b + (T == Q5_0 ? 2 : 4)) >> (8 * i);
            n |= (((uint8)(qh) >> (uint8)(0, 1, 2, 3, 4, 5, 6, 7)) & (uint8)1) << (uint8)4;
        }
        const float d = ld_half(b);
        if (T == Q5_0) return d * convert_float8(convert_int8(n) - (int8)16);
        return d * convert_float8(n) + (float8)ld_half(b + 2);
    }
    // K-quants: sub-block j of super-block u / 8
    const global uchar* b = row + (u / 8) * QK_BYTES(T);
    const int j = u % 8, l0 = 8 * i;
    if (T == Q4_K || T == Q5_K) {
        const int c = j / 2, hi = j & 1;
        float sc, m;
        k4_scale_min(j, b + 4, &sc, &m);
        const uchar8 q8 = vload8(0, b + (T == Q4_K ? 16 : 48) + 32 * c + l0);
        uint8 n = hi ? convert_uint8(q8 >> (uchar8)4) : convert_uint8(q8 & (uchar8)0xF);
        if (T == Q5_K) n += ((convert_uint8(vload8(0, b + 16 + l0)) >> (uint8)(2 * c + hi)) & (uint8)1) << (uint8)4;
        return (float8)(ld_half(b) * sc) * convert_float8(n) - (float8)(ld_half(b + 2) * m);
    }
    // Q6_K
    const int n = j / 4, q = j % 4;
    const uchar8 lo = vload8(0, b + 64 * n + l0 + 32 * (q & 1));
    const uchar8 h = vload8(0, b + 128 + 32 * n + l0);
    const uint8 lq = (q >> 1) ? convert_uint8(lo >> (uchar8)4) : convert_uint8(lo & (uchar8)0xF);
    const int8 v = convert_int8(lq | (((convert_uint8(h) >> (uint8)(2 * q)) & (uint8)3) << (uint8)4)) - (int8)32;
    const float s = ld_half(b + 208) * (float)((const global char*)b)[192 + 8 * n + l0 / 16 + 2 * q];
    return (float8)s * convert_float8(v);
}

#if IDOT
// a + the sum of the 4 products of the signed bytes of w and x
inline int dot4(uint w, uint x, int a) {
#if IDOT_EXT == 2
    int r;
    asm volatile("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(w), "r"(x), "r"(a));
    return r;
#else
    return a + dot_4x8packed_ss_int(w, x);
#endif
}
// four bytes of 4-bit values n (0..15) as the signed bytes n - 8: n ^ 8 is n - 8 in 4-bit two's
// complement, bit 3 its sign, spread over the byte's high nibble (0x08 * 0x1E = 0xF0: no carry)
inline uint4 q4_s8(uint4 n) {
    const uint4 v = n ^ (uint4)0x08080808u;
    return v | ((v & (uint4)0x08080808u) * (uint4)0x1Eu);
}
#endif

// The integer sum of a Q4_0 / Q8_0 block's 32 quants (q0, q1: its 16 / 32 quant bytes, GGUF
// order) times x's 32 int8 values (x quantized to Q8_0, quant.h quantize_act_q8; 4-byte aligned),
// the (weight scale * x's scale) * sum of quant.cpp's block_term in the caller. IDOT: 4 products
// an instruction; else each int8 widened to int. The same integer either way.
inline int q8_isum(const int T, uchar16 q0, uchar16 q1, const local char* xq) {
#if IDOT
    const uint4 x0 = vload4(0, (const local uint*)xq), x1 = vload4(1, (const local uint*)xq);
    uint4 a = as_uint4(q0), b = as_uint4(q1);
    if (T != Q8_0) {  // element j in the low nibble of byte j, element j + 16 in its high nibble
        b = q4_s8((a >> 4) & (uint4)0x0F0F0F0Fu);
        a = q4_s8(a & (uint4)0x0F0F0F0Fu);
    }
    int s = dot4(a.x, x0.x, 0);
    s = dot4(a.y, x0.y, s);
    s = dot4(a.z, x0.z, s);
    s = dot4(a.w, x0.w, s);
    s = dot4(b.x, x1.x, s);
    s = dot4(b.y, x1.y, s);
    s = dot4(b.z, x1.z, s);
    return dot4(b.w, x1.w, s);
#else
    const int16 x0 = convert_int16(vload16(0, xq)), x1 = convert_int16(vload16(1, xq));
    int16 p;
    if (T == Q8_0) {
        p = convert_int16(as_char16(q0)) * x0 + convert_int16(as_char16(q1)) * x1;
    } else {  // element j in the low nibble of byte j, element j + 16 in its high nibble
        p = (convert_int16(q0 & (uchar16)0xF) - (int16)8) * x0 + (convert_int16(q0 >> (uchar16)4) - (int16)8) * x1;
    }
    const int8 p8 = p.lo + p.hi;
    const int4 p4 = p8.lo + p8.hi;
    return (p4.x + p4.y) + (p4.z + p4.w);
#endif
}

// Q4_0 / Q8_0 block u of a row of nb blocks: where its quants start and its scale. split: the
// split layout (quant.h repack_split_rows, gate weights.layout), a row's quants (16 / 32 bytes a
// block) then its f16 scales, 4-byte aligned; else GGUF's 18 / 34-byte blocks (2-byte aligned)
inline const global uchar* q8_quants(const int T, const global uchar* row, int nb, int u, const int split) {
    return split ? row + u * (T == Q8_0 ? 32 : 16) : row + u * QK_BYTES(T) + 2;
}
inline float q8_dw(const int T, const global uchar* row, int nb, int u, const int split) {
    return ld_half(split ? row + nb * (T == Q8_0 ? 32 : 16) + 2 * u : row + u * QK_BYTES(T));
}

// Block u's quant bytes (q1 = q0 for Q4_0's 16) and, returned, its scale; the split layout's
// quants read with 4-byte loads (ALIGN16: 16-byte loads)
inline float q8_block(const int T, const global uchar* row, int nb, int u, const int split, uchar16* q0, uchar16* q1) {
    const global uchar* q = q8_quants(T, row, nb, u, split);
    if (split) {
#if ALIGN16
        const global uint4* q4 = (const global uint4*)q;
        *q0 = as_uchar16(q4[0]);
        *q1 = T == Q8_0 ? as_uchar16(q4[1]) : *q0;
#else
        *q0 = as_uchar16(vload4(0, (const global uint*)q));
        *q1 = T == Q8_0 ? as_uchar16(vload4(1, (const global uint*)q)) : *q0;
#endif
    } else {
        *q0 = vload16(0, q);
        *q1 = T == Q8_0 ? vload16(1, q) : *q0;
    }
    return q8_dw(T, row, nb, u, split);
}

// Elements 8p .. 8p + 7 (p < 4) of block u as signed int8 (Q4_0: the nibble - 8), in element order
inline char8 q8_part(const int T, const global uchar* row, int nb, int u, int p, const int split) {
    const global uchar* q = q8_quants(T, row, nb, u, split);
    if (T == Q8_0) return as_char8(vload8(p, q));
    const uchar8 b = vload8(p & 1, q);  // element j: byte j's low nibble, element j + 16 its high one
    return as_char8(p < 2 ? b & (uchar8)0xF : b >> (uchar8)4) - (char8)8;
}
