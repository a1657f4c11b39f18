// core/fp16.h: half and bfloat16 conversions against hand-written bit patterns and against an
// independent ldexp-based definition, exhaustively over all 65536 halves.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/fp16.h"

namespace jitllm {
namespace {

// Value of a half from its IEEE 754 binary16 definition, in double.
double half_value(uint16_t h) {
    const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
    double v;
    if (exp == 0) v = std::ldexp(double(mant), -24);
    else if (exp == 31) v = mant ? std::numeric_limits<double>::quiet_NaN()
                                 : std::numeric_limits<double>::infinity();
    else v = std::ldexp(double(1024 + mant), exp - 25);
    return sign ? -v : v;
}

TEST(Fp16, ToFloatHandPicked) {
    EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
    EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
    EXPECT_EQ(fp16_to_fp32(0x3800), 0.5f);
    EXPECT_EQ(fp16_to_fp32(0x3555), 0.333251953125f);  // (1 + 341/1024) / 4
    EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);          // largest finite
    EXPECT_EQ(fp16_to_fp32(0x0400), 6.103515625e-05f);  // smallest normal 2^-14
    EXPECT_EQ(fp16_to_fp32(0x0001), 5.9604644775390625e-08f);  // smallest subnormal 2^-24
    EXPECT_EQ(fp16_to_fp32(0x03FF), 1023.0f * 5.9604644775390625e-08f);
    EXPECT_EQ(fp16_to_fp32(0x8001), -5.9604644775390625e-08f);
    EXPECT_EQ(fp16_to_fp32(0x7C00), std::numeric_limits<float>::infinity());
    EXPECT_EQ(fp16_to_fp32(0xFC00), -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
    EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7C01)));  // signalling pattern is still NaN
    EXPECT_EQ(fp16_to_fp32(0x8000), 0.0f);
    EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
}

TEST(Fp16, ToFloatExhaustiveMatchesDefinition) {
    for (uint32_t h = 0; h < 65536; ++h) {
        const double want = half_value(uint16_t(h));
        const float got = fp16_to_fp32(uint16_t(h));
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << std::hex << h;
        } else {
            EXPECT_EQ(double(got), want) << std::hex << h;
            EXPECT_EQ(std::signbit(got), bool(h & 0x8000)) << std::hex << h;
        }
    }
}

TEST(Fp16, FromFloatHandPicked) {
    EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
    EXPECT_EQ(fp32_to_fp16(-2.0f), 0xC000);
    EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
    EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
    EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);
    // ties to even: 1 + 2^-11 is halfway between 0x3C00 (even) and 0x3C01
    EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f), 0x3C00);
    // 1 + 3*2^-11 is halfway between 0x3C01 (odd) and 0x3C02 (even)
    EXPECT_EQ(fp32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3C02);
    EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);  // just above the tie
    // overflow: 65520 is halfway between 65504 (odd mantissa) and 65536 -> rounds to inf
    EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7BFF);
    EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);
    EXPECT_EQ(fp32_to_fp16(1e10f), 0x7C00);
    EXPECT_EQ(fp32_to_fp16(-1e10f), 0xFC00);
    EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::infinity()), 0x7C00);
    EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::infinity()), 0xFC00);
    // subnormals (unit 2^-24): 2^-25 is a tie between 0 and 1 -> 0; a bit more -> 1
    EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);
    EXPECT_EQ(fp32_to_fp16(0x1.000002p-25f), 0x0001);
    EXPECT_EQ(fp32_to_fp16(-0x1p-24f), 0x8001);
    EXPECT_EQ(fp32_to_fp16(3 * 0x1p-25f), 0x0002);   // 1.5 units -> 2 (even)
    EXPECT_EQ(fp32_to_fp16(5 * 0x1p-25f), 0x0002);   // 2.5 units -> 2 (even)
    EXPECT_EQ(fp32_to_fp16(7 * 0x1p-25f), 0x0004);   // 3.5 units -> 4 (even)
    EXPECT_EQ(fp32_to_fp16(0x1p-14f - 0x1p-25f), 0x0400);  // 1023.5 units -> smallest normal
    EXPECT_EQ(fp32_to_fp16(0x1p-14f - 0x1p-24f), 0x03FF);
    EXPECT_EQ(fp32_to_fp16(1e-30f), 0x0000);
    const uint16_t nan = fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(nan & 0x7C00, 0x7C00);
    EXPECT_NE(nan & 0x03FF, 0);
    // a NaN whose payload sits only in the low 13 bits must not become inf
    const uint16_t nan2 = fp32_to_fp16(fp32_from_bits(0x7F800001u));
    EXPECT_NE(nan2 & 0x03FF, 0);
}

// For every pair of adjacent finite halves a < b (positive and negative), the float midpoint
// rounds to the even one, and the floats just beside it round to the nearer one.
TEST(Fp16, FromFloatExhaustiveRoundsToNearestEven) {
    for (uint32_t sign : {0u, 0x8000u}) {
        for (uint32_t h = 0; h < 0x7BFF; ++h) {
            const uint16_t a = uint16_t(sign | h), b = uint16_t(sign | (h + 1));
            EXPECT_EQ(fp32_to_fp16(fp16_to_fp32(a)), a);
            const float va = fp16_to_fp32(a), vb = fp16_to_fp32(b);
            const float mid = float((double(va) + double(vb)) / 2);  // exact: 12 bits
            ASSERT_EQ(double(mid), (double(va) + double(vb)) / 2);
            EXPECT_EQ(fp32_to_fp16(mid), (h & 1) ? b : a) << std::hex << h;
            EXPECT_EQ(fp32_to_fp16(std::nextafter(mid, va)), a) << std::hex << h;
            EXPECT_EQ(fp32_to_fp16(std::nextafter(mid, vb)), b) << std::hex << h;
        }
    }
}

TEST(Bf16, Conversions) {
    EXPECT_EQ(bf16_to_fp32(0x3F80), 1.0f);
    EXPECT_EQ(bf16_to_fp32(0xC040), -3.0f);
    EXPECT_EQ(bf16_to_fp32(0x3EAB), 0.333984375f);  // (1 + 43/128) / 4
    EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(fp32_to_bf16(-3.0f), 0xC040);
    // ties to even on the 16 dropped bits
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3F808000u)), 0x3F80);
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3F818000u)), 0x3F82);
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3F808001u)), 0x3F81);
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3F807FFFu)), 0x3F80);
    EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x7F7FFFFFu)), 0x7F80);  // largest float rounds up
    // NaN stays NaN (quiet), even when its payload is only in the dropped bits
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x7F800001u)), 0x7FC0);
    EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x00000001u)), 0x0000);  // tiny subnormal -> +0
    EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x00018000u)), 0x0002);  // subnormal tie -> even
}

}  // namespace
}  // namespace jitllm
