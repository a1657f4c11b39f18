// The instruction-set forms of the CPU's products (quant.h CpuIsa) against the scalar spec, bit for
// bit. Q4_0 / Q8_0 with quantized x: random and extreme blocks (every nibble, Q8_0's -128, x at
// +-127, subnormal, negative and large f16 scales), row counts around the 8-row groups, 1 to 7
// activation rows at once, unaligned row strides. Float x: every type's products.
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

Case make_case(GgmlType t, int rows, int nb, int n_x, uint32_t seed, bool extreme) {
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
    c.q.resize(size_t(n_x) * size_t(nb) * kQK);  // n_x activation rows
    for (auto& v : c.q) v = int8_t(extreme ? (rng() % 2 ? 127 : -127) : int(rng() % 255) - 127);
    c.d.resize(size_t(n_x) * size_t(nb));
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
    if (!cpu_has_isa(CpuIsa::Avx2)) GTEST_SKIP() << "no AVX2 + F16C here";
    int checked = 0;
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0})
        for (bool extreme : {false, true})
            for (int rows : {1, 7, 8, 9, 16, 19, 64})
                for (int nb : {1, 3, 64})
                    for (int n_x : {1, 2, 7}) {  // the 4-row pass, its 3-, 2- and 1-row tails
                        const Case c = make_case(t, rows, nb, n_x, uint32_t(rows * 131 + nb * 7 + n_x * 3 + extreme),
                                                 extreme);
                        const size_t ys_stride = size_t(rows) + 5;
                        std::vector<float> ys(size_t(rows) * size_t(n_x), -1.0f), yv(ys_stride * size_t(n_x), -2.0f);
                        const void* m = c.mat.data() + 1;
                        const int64_t n = int64_t(nb) * kQK;
                        // the spec: each activation row alone, scalar
                        for (int j = 0; j < n_x; ++j)
                            dot_rows_act_q8_isa(CpuIsa::Scalar, t, m, c.stride, rows, c.q.data() + size_t(j) * size_t(n),
                                                c.d.data() + size_t(j) * size_t(nb), 1, n, ys.data() + size_t(j) * size_t(rows), 0);
                        dot_rows_act_q8_isa(CpuIsa::Avx2, t, m, c.stride, rows, c.q.data(), c.d.data(), n_x, n, yv.data(),
                                            ys_stride);
                        for (int j = 0; j < n_x; ++j)
                            for (int r = 0; r < rows; ++r) {
                                const float a = ys[size_t(j) * size_t(rows) + size_t(r)], b = yv[size_t(j) * ys_stride + size_t(r)];
                                uint32_t ab, bb;
                                std::memcpy(&ab, &a, 4);
                                std::memcpy(&bb, &b, 4);
                                ASSERT_EQ(ab, bb) << type_name(t) << (extreme ? " extreme" : " random") << " rows " << rows
                                                  << " blocks " << nb << " x rows " << n_x << " row " << j << "," << r
                                                  << ": " << a << " vs " << b;
                                ++checked;
                            }
                    }
    EXPECT_EQ(checked, 2 * 2 * (1 + 7 + 8 + 9 + 16 + 19 + 64) * 3 * (1 + 2 + 7));
#endif
}

// dot_rows (float x) of every type the CPU decodes: rows of random bytes (f16 / bf16 fields kept
// finite), n over whole blocks and, for the plain types, tails of n % 32 elements; 1 and 6 activation
// rows at once
TEST(CpuIsa, Avx2FloatProductsAreTheScalarSpecsBits) {
#if !defined(__x86_64__)
    GTEST_SKIP() << "x86-64 only";
#else
    if (!cpu_has_isa(CpuIsa::Avx2)) GTEST_SKIP() << "no AVX2 + F16C here";
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
            for (int n_x : {1, 6}) {  // (F16: a pass of 4 activation rows and its 1-row tails)
                const size_t xs = size_t(n) + 1;
                std::vector<float> x(xs * size_t(n_x));
                for (auto& v : x) v = float(int(rng() % 2001) - 1000) / 997.0f;
                std::vector<float> ys(size_t(rows) * size_t(n_x), -1.0f), yv(size_t(rows + 2) * size_t(n_x), -2.0f);
                for (int j = 0; j < n_x; ++j)  // the spec: each activation row alone, scalar
                    dot_rows_isa(CpuIsa::Scalar, t, mat.data(), row, rows, x.data() + size_t(j) * xs, 0, 1, n,
                                 ys.data() + size_t(j) * size_t(rows), 0);
                dot_rows_isa(CpuIsa::Avx2, t, mat.data(), row, rows, x.data(), xs, n_x, n, yv.data(), size_t(rows + 2));
                for (int j = 0; j < n_x; ++j)
                    for (int r = 0; r < rows; ++r) {
                        const float fa = ys[size_t(j) * size_t(rows) + size_t(r)], fb = yv[size_t(j) * size_t(rows + 2) + size_t(r)];
                        uint32_t a, b;
                        std::memcpy(&a, &fa, 4);
                        std::memcpy(&b, &fb, 4);
                        ASSERT_EQ(a, b) << type_name(t) << " n " << n << " x rows " << n_x << " row " << j << "," << r
                                        << ": " << fa << " vs " << fb;
                        ++checked;
                    }
            }
        }
    }
    EXPECT_GE(checked, 11 * 3 * 5 * 7);
#endif
}

}  // namespace
}  // namespace jitllm
