// Byte layouts of ggml's quantized blocks (little-endian, packed, f16 scales as raw bits).
// Layouts match ggml-common.h (llama.cpp@1fd6dfe9); the decoding rules are written out in
// quant.cpp, which is the reference the CUDA kernels are tested against. No code here.
#pragma once

#include <cstdint>

namespace jitllm {

constexpr int kQK = 32;    // elements per block of the legacy types (Q4_0 ... Q8_0)
constexpr int kQK_K = 256; // elements per super-block of the K-quants

// x[i] = d * qs[i]
struct BlockQ8_0 {
    uint16_t d;           // f16 scale
    int8_t qs[kQK];
};

// j < 16: x[j] = d * ((qs[j] & 0xF) - 8), x[j + 16] = d * ((qs[j] >> 4) - 8)
struct BlockQ4_0 {
    uint16_t d;
    uint8_t qs[kQK / 2];
};

// as Q4_0 but unsigned with a min: x = d * q + m
struct BlockQ4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[kQK / 2];
};

// 5-bit: low 4 bits as Q4_0, bit 4 of element j in bit j of qh (read as little-endian u32);
// x = d * (q - 16)
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};

// as Q5_0 with a min: x = d * q + m
struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};

// 8 sub-blocks of 32 with a 6-bit scale and a 6-bit min each, packed into scales[12]
// (see k_scale_min); chunk c of 64 elements: low nibbles of qs[32c..32c+32) are sub-block 2c,
// high nibbles sub-block 2c+1. x = d * sc * q - dmin * m.
struct BlockQ4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[kQK_K / 2];
};

// Q4_K plus a fifth bit: bit (2c) of qh[l] for element 64c + l, bit (2c+1) for 64c + 32 + l.
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};

// 6-bit signed (q - 32), one int8 scale per 16 elements (scale index = element / 16).
// Low 4 bits in ql, high 2 bits in qh; see decode_q6_k in quant.cpp for the interleave.
struct BlockQ6_K {
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    uint16_t d;
};

static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

// 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block. Sub-blocks 0-3 keep theirs
// in the low 6 bits of scales[j] / scales[j+4]; sub-blocks 4-7 keep the low 4 bits in the
// nibbles of scales[j+4] and the high 2 bits in the top bits of scales[j-4] / scales[j].
inline void k_scale_min(int j, const uint8_t* scales, uint8_t* sc, uint8_t* m) {
    if (j < 4) {
        *sc = scales[j] & 63;
        *m = scales[j + 4] & 63;
    } else {
        *sc = uint8_t((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
        *m = uint8_t((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
    }
}

}  // namespace jitllm
