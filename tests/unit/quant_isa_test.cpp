// The instruction-set forms of the CPU's products (quant.h CpuIsa) against the scalar spec, bit for
// bit. Q4_0 / Q8_0 with quantized x: random and extreme blocks (every nibble, Q8_0's -128, x at +-127, subnormal,
// negative and large f16 scales), row counts around the 8-row groups, unaligned row strides; the
// float-x products of every type.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace jitllm {
namespace {

struct Case {
    std::vector<uint8_t> mat;  // rows at stride bytes, each at a byte offset of 1 (not aligned)
    size_t stride = 0;
    std::vector<int8_t> q;
    std::vector<float> d;
};

Case make_case(GgmlType t, int rows, int nb, uint32_t seed, bool extreme) {
    std::mt19937 rng(seed);
    const size_t bb = t == GgmlType::Q4_0 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
    Case c;
    c.stride = bb * size_t(nb) + 3;  // rows not a whole number of blocks apart
    c.mat.assign(1 + c.stride * size_t(rows), 0);
    const uint16_t scales[] = {0x3C00, 0xBC00, 0x0001, 0x83FF, 0x7BFF, 0x2E66, 0x1400, 0x0000};
    for (int r = 0; r < rows; ++r)
        for (int i = 0; i < nb; ++i) {
            uint8_t* b = c.mat.data() + 1 + size_t(r) * c.stride + size_t(i) * bb;
            const uint16_t h = extreme ? scales[rng() % 8] : fp32_to_fp16(float(rng() % 2000) / 1e5f - 0.01f);
            std::memcpy(b, &h, 2);
            for (size_t j = 2; j < bb; ++j)
                b[j] = extreme ? uint8_t((rng() % 3 == 0) ? (rng() % 2 ? 0x80 : 0x7F) : (rng() % 2 ? 0xFF : 0x00))
                               : uint8_t(rng());
        }
    c.q.resize(size_t(nb) * kQK);
    for (auto& v : c.q) v = int8_t(extreme ? (rng() % 2 ? 127 : -127) : int(rng() % 255) - 127);
    c.d.resize(size_t(nb));
    for (auto& v : c.d) v = fp16_to_fp32(fp32_to_fp16(float(rng() % 1000 + 1) * (extreme ? 1e-2f : 1e-5f)));
    return c;
}

TEST(CpuIsa, TheChosenFormIsNamed) {
    const CpuIsa isa = cpu_isa();
    EXPECT_TRUE(isa == CpuIsa::Scalar || isa == CpuIsa::Avx2);
    EXPECT_STREQ(cpu_isa_name(CpuIsa::Scalar), "scalar");
    EXPECT_STREQ(cpu_isa_name(CpuIsa::Avx2), "avx2");
}

TEST(CpuIsa, Avx2ProductsAreTheScalarSpecsBits) {
#if !defined(__x86_64__)
    GTEST_SKIP() << "x86-64 only";
#else
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no AVX2 + F16C here";
    int checked = 0;
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0})
        for (bool extreme : {false, true})
            for (int rows : {1, 7, 8, 9, 16, 19, 64})
                for (int nb : {1, 3, 64}) {
                    const Case c = make_case(t, rows, nb, uint32_t(rows * 131 + nb * 7 + extreme), extreme);
                    std::vector<float> ys(size_t(rows), -1.0f), yv(size_t(rows), -2.0f);
                    const void* m = c.mat.data() + 1;
                    dot_rows_act_q8_isa(CpuIsa::Scalar, t, m, c.stride, rows, c.q.data(), c.d.data(), nb * kQK,
                                        ys.data());
                    dot_rows_act_q8_isa(CpuIsa::Avx2, t, m, c.stride, rows, c.q.data(), c.d.data(), nb * kQK,
                                        yv.data());
                    for (int r = 0; r < rows; ++r) {
                        uint32_t a, b;
                        std::memcpy(&a, &ys[size_t(r)], 4);
                        std::memcpy(&b, &yv[size_t(r)], 4);
                        ASSERT_EQ(a, b) << type_name(t) << (extreme ? " extreme" : " random") << " rows " << rows
                                        << " blocks " << nb << " row " << r << ": " << ys[size_t(r)] << " vs "
                                        << yv[size_t(r)];
                        ++checked;
                    }
                }
    EXPECT_EQ(checked, 2 * 2 * (1 + 7 + 8 + 9 + 16 + 19 + 64) * 3);
#endif
}

// dot_rows (float x) of every type the CPU decodes: rows of random bytes (f16 / bf16 fields kept
// finite), n over whole blocks and, for the plain types, tails of n % 32 elements
TEST(CpuIsa, Avx2FloatProductsAreTheScalarSpecsBits) {
#if !defined(__x86_64__)
    GTEST_SKIP() << "x86-64 only";
#else
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no AVX2 + F16C here";
    std::mt19937 rng(7);
    int checked = 0;
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1,
                       GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
        const auto& tt = type_traits(t);
        const bool plain = tt.block_size == 1;
        for (int64_t n : {int64_t(256), int64_t(512), int64_t(2048), plain ? int64_t(37) : int64_t(768),
                          plain ? int64_t(300) : int64_t(1280)}) {
            if (n % tt.block_size) continue;
            const size_t row = size_t(n / tt.block_size) * tt.type_size;
            const int rows = 5;
            std::vector<uint8_t> mat(row * rows);
            for (auto& b : mat) b = uint8_t(rng());
            // every 2-byte field a finite value of either 16-bit float kind (f16 scales, f16 and bf16
            // elements): its exponent bits cleared of the all-ones pattern
            if (t == GgmlType::F16 || t == GgmlType::BF16 || !plain)
                for (size_t i = 1; i < mat.size(); i += 2) mat[i] &= 0x3F;
            if (t == GgmlType::F32)
                for (size_t i = 3; i < mat.size(); i += 4) mat[i] &= 0x3F;
            std::vector<float> x(static_cast<size_t>(n));
            for (auto& v : x) v = float(int(rng() % 2001) - 1000) / 997.0f;
            std::vector<float> ys(rows, -1.0f), yv(rows, -2.0f);
            dot_rows_isa(CpuIsa::Scalar, t, mat.data(), row, rows, x.data(), n, ys.data());
            dot_rows_isa(CpuIsa::Avx2, t, mat.data(), row, rows, x.data(), n, yv.data());
            for (int r = 0; r < rows; ++r) {
                uint32_t a, b;
                std::memcpy(&a, &ys[size_t(r)], 4);
                std::memcpy(&b, &yv[size_t(r)], 4);
                ASSERT_EQ(a, b) << type_name(t) << " n " << n << " row " << r << ": " << ys[size_t(r)] << " vs "
                                << yv[size_t(r)];
                ++checked;
            }
        }
    }
    EXPECT_GE(checked, 11 * 3 * 5);
#endif
}

}  // namespace
}  // namespace jitllm
