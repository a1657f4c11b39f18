// IEEE half and bfloat16 <-> float conversions (exact, round-to-nearest-even), host side.
#pragma once

#include <cstdint>
#include <cstring>

namespace jitllm {

inline float fp32_from_bits(uint32_t w) { float f; std::memcpy(&f, &w, 4); return f; }
inline uint32_t fp32_to_bits(float f) { uint32_t w; std::memcpy(&w, &f, 4); return w; }

// half -> float, exact for every input including subnormals, inf and NaN.
inline float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0) {
        if (mant == 0) return fp32_from_bits(sign);
        // subnormal: normalise
        int e = -1;
        do { mant <<= 1; ++e; } while ((mant & 0x400) == 0);
        mant &= 0x3ff;
        return fp32_from_bits(sign | uint32_t(127 - 15 - e) << 23 | mant << 13);
    }
    if (exp == 31) return fp32_from_bits(sign | 0x7f800000u | mant << 13);
    return fp32_from_bits(sign | (exp + 127 - 15) << 23 | mant << 13);
}

// float -> half, round to nearest even; overflow -> inf, NaN stays NaN.
inline uint16_t fp32_to_fp16(float f) {
    const uint32_t x = fp32_to_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000;
    const uint32_t ax = x & 0x7fffffff;
    if (ax >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
    if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to >= 65520 -> inf
    if (ax < 0x38800000u) {                                // subnormal half or zero
        if (ax < 0x33000000u) return uint16_t(sign);       // < 2^-25 rounds to 0
        const uint32_t e = ax >> 23;
        const uint32_t m = (ax & 0x7fffff) | 0x800000;
        const uint32_t shift = 126 - e;  // 14 + (112 - e) ... shift into 10-bit subnormal
        uint32_t h = m >> (shift);
        const uint32_t rem = m & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) ++h;
        return uint16_t(sign | h);
    }
    uint32_t h = ((ax >> 13) - (112u << 10));
    const uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
    return uint16_t(sign | h);
}

inline float bf16_to_fp32(uint16_t b) { return fp32_from_bits(uint32_t(b) << 16); }

inline uint16_t fp32_to_bf16(float f) {
    uint32_t x = fp32_to_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000u) return uint16_t((x >> 16) | 64);  // quiet NaN
    return uint16_t((x + (0x7fff + ((x >> 16) & 1))) >> 16);
}

}  // namespace jitllm
