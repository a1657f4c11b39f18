// The fast CPU path (src/backends/cpu/fast) against the exact specification: each product type's
// results within the error its activation rounding allows of the float dot product of the
// dequantized weights (quant.h dot_row; int8 activations lose at most half a step of each block's
// scale), every activation row the bits of the same row alone at any thread count, and attention
// within float rounding of the spec's loops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/fast/fast_ops.h"
#include "backends/cpu/fast/packed.h"
#include "core/fp16.h"
#include "fixtures/cpu_attention_reference.h"
#include "quant/quant.h"

namespace jitllm {
namespace {

std::vector<float> normal_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& f : v) f = nd(rng);
    return v;
}

// `rows` rows of `cols` weights of type t: the legacy and plain types quantized from normal values,
// the K-quants random bytes (every bit pattern is a valid block) with moderate block scales
std::vector<uint8_t> random_weights(GgmlType t, int rows, int cols, uint32_t seed) {
    const size_t rb = row_bytes(t, uint64_t(cols));
    std::vector<uint8_t> w(rb * size_t(rows));
    if (can_quantize(t)) {
        const auto f = normal_floats(size_t(rows) * size_t(cols), seed);
        for (int r = 0; r < rows; ++r)
            quantize_row(t, f.data() + size_t(r) * size_t(cols), w.data() + size_t(r) * rb, cols);
        return w;
    }
    std::mt19937 rng(seed);
    for (auto& b : w) b = uint8_t(rng());
    const size_t bb = type_traits(t).type_size;
    for (size_t off = 0; off < w.size(); off += bb) {
        const uint16_t d = fp32_to_fp16(0.01f + 0.01f * float(rng() % 100) / 100.0f);
        const uint16_t dmin = fp32_to_fp16(0.005f);
        if (t == GgmlType::Q4_K) {
            std::memcpy(&w[off], &d, 2);
            std::memcpy(&w[off + 2], &dmin, 2);
        } else {  // Q6_K: d last, int8 scales before it
            std::memcpy(&w[off + bb - 2], &d, 2);
            for (int j = 0; j < 16; ++j) w[off + bb - 18 + size_t(j)] = uint8_t(int8_t(int(rng() % 128) - 64));
        }
    }
    return w;
}

// The bound on |fast - float dot| for one row: half an activation step (the block's max|x| / 127
// over 2) times the |weights| of the block, plus float rounding
double error_bound(GgmlType t, const float* w, const float* x, int cols) {
    const int xb = t == GgmlType::Q4_0 || t == GgmlType::Q8_0   ? 32
                   : t == GgmlType::Q4_K || t == GgmlType::Q6_K ? 256
                                                                : 0;
    double bound = 0, mag = 0;
    for (int b0 = 0; b0 < cols; b0 += xb ? xb : cols) {
        const int n = xb ? xb : cols;
        double amax = 0, wsum = 0;
        for (int i = b0; i < b0 + n; ++i) {
            amax = std::max(amax, double(std::fabs(x[i])));
            wsum += std::fabs(w[i]);
            mag += std::fabs(double(w[i]) * x[i]);
        }
        // Q4_0 / Q8_0 keep the activation scale in f16 as well (relative 2^-11)
        if (xb) bound += wsum * amax * (0.5 / 127.0 + 1.0 / 2048.0);
    }
    return bound + 1e-5 * mag + 1e-6;
}

const GgmlType kFastTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                               GgmlType::Q4_0,  GgmlType::Q4_K, GgmlType::Q6_K};

TEST(FastMatmul, WithinTheActivationRoundingOfTheFloatProduct) {
    const int cols = 512, rows = 37;
    for (GgmlType t : kFastTypes) {
        SCOPED_TRACE(type_name(t));
        if (!cpu::fast::has_matmul(t)) continue;  // (the packed form only: FastPacked)
        const size_t rb = row_bytes(t, cols);
        const auto w = random_weights(t, rows, cols, 5);
        const auto x = normal_floats(size_t(cols) * 3, 9);
        std::vector<float> y(size_t(rows) * 3), wf(cols);
        ASSERT_TRUE(cpu::fast::matmul(t, w.data(), rb, rows, cols, x.data(), cols, 3, y.data(), rows, 2));
        for (int j = 0; j < 3; ++j)
            for (int r = 0; r < rows; ++r) {
                const uint8_t* row = w.data() + size_t(r) * rb;
                const float* xj = x.data() + size_t(j) * cols;
                dequantize_row(t, row, wf.data(), cols);
                const double want = dot_row(t, row, xj, cols);
                EXPECT_NEAR(y[size_t(j) * rows + size_t(r)], want, error_bound(t, wf.data(), xj, cols))
                    << "activation row " << j << ", output " << r;
            }
    }
}

// 1 to 9 activation rows (the passes of 4 and 6 and their tails), weight rows not a multiple of 8
// over one and two threads, strided rows in and out: each row the bits of its own one-row product
TEST(FastMatmul, EachRowHasTheBitsOfItsOwnProduct) {
    const int cols = 768, rows = 203;
    for (GgmlType t : kFastTypes) {
        SCOPED_TRACE(type_name(t));
        if (!cpu::fast::has_matmul(t)) continue;
        const size_t rb = row_bytes(t, cols);
        const auto w = random_weights(t, rows, cols, 21);
        for (int n_x : {1, 2, 4, 5, 7, 9})
            for (int threads : {1, 2}) {
                const size_t xs = cols + 5, ys = rows + 3;
                const auto x = normal_floats(xs * size_t(n_x), uint32_t(40 + n_x));
                std::vector<float> y(ys * size_t(n_x), -1.0f), one(rows);
                ASSERT_TRUE(cpu::fast::matmul(t, w.data(), rb, rows, cols, x.data(), xs, n_x, y.data(), ys, threads));
                for (int j = 0; j < n_x; ++j) {
                    cpu::fast::matmul(t, w.data(), rb, rows, cols, x.data() + size_t(j) * xs, xs, 1, one.data(),
                                      rows, 1);
                    for (int r = 0; r < rows; ++r)
                        ASSERT_EQ(y[size_t(j) * ys + size_t(r)], one[size_t(r)])
                            << n_x << " rows, " << threads << " threads: row " << j << ", output " << r;
                }
            }
    }
}

// The packed products (packed.h): within the activation rounding of the float product, each
// (row, activation row) the bits of its own one-row product whatever the rows around it, the
// activation rows, the threads or the first row of a sub-range (a fused matrix's parts)
TEST(FastPacked, WithinTheRoundingAndEachRowItsOwnBits) {
    const int cols = 512, rows = 83;  // not a multiple of 16: a last group in part
    int checked = 0;
    for (GgmlType t : kFastTypes) {
        SCOPED_TRACE(type_name(t));
        if (!cpu::fast::PackedWeights::packs(t)) continue;
        const size_t rb = row_bytes(t, cols);
        const auto w = random_weights(t, rows, cols, 31);
        cpu::fast::PackedWeights pw;
        pw.add(t, w.data(), rb, rows, cols, 2);
        const cpu::fast::PackedMatrix* p = pw.find(w.data());
        ASSERT_NE(p, nullptr);
        std::vector<float> wf(cols);
        for (int n_x : {1, 3, 8, 11})
            for (int threads : {1, 2}) {
                const size_t xs = cols + 5, ys = rows + 3;
                const auto x = normal_floats(xs * size_t(n_x), uint32_t(60 + n_x));
                std::vector<float> y(ys * size_t(n_x), -1.0f), one(rows), part(rows, -1.0f);
                ASSERT_TRUE(cpu::fast::matmul_packed(*p, 0, rows, x.data(), xs, n_x, y.data(), ys, threads));
                for (int j = 0; j < n_x; ++j) {
                    const float* xj = x.data() + size_t(j) * xs;
                    cpu::fast::matmul_packed(*p, 0, rows, xj, xs, 1, one.data(), rows, 1);
                    cpu::fast::matmul_packed(*p, 16, 37, xj, xs, 1, part.data(), rows, 1);
                    for (int r = 0; r < rows; ++r) {
                        ASSERT_EQ(y[size_t(j) * ys + size_t(r)], one[size_t(r)])
                            << n_x << " rows, " << threads << " threads: row " << j << ", output " << r;
                        if (r >= 16 && r < 16 + 37) {
                            ASSERT_EQ(part[size_t(r - 16)], one[size_t(r)]) << "output " << r;
                        }
                        const uint8_t* row = w.data() + size_t(r) * rb;
                        dequantize_row(t, row, wf.data(), cols);
                        EXPECT_NEAR(one[size_t(r)], dot_row(t, row, xj, cols), error_bound(t, wf.data(), xj, cols))
                            << "output " << r;
                        ++checked;
                    }
                }
            }
        EXPECT_FALSE(cpu::fast::matmul_packed(*p, 8, 16, nullptr, 0, 1, nullptr, 0, 1)) << "a sub-range off a group";
    }
    std::printf("[packed] %d outputs checked\n", checked);
}

// Products fused into one job (q / k / v, gate / up): each product's results the bits of its own
// call, for two matrices and a sub-range of one; refused for mixed types or a sub-range off a group
TEST(FastPacked, FusedProductsGiveEachItsOwnBits) {
    const int cols = 512, rows = 83, n_x = 5;
    for (GgmlType t : kFastTypes) {
        SCOPED_TRACE(type_name(t));
        if (!cpu::fast::PackedWeights::packs(t)) continue;
        const size_t rb = row_bytes(t, cols);
        const auto w0 = random_weights(t, rows, cols, 41), w1 = random_weights(t, 48, cols, 42);
        cpu::fast::PackedWeights pw;
        pw.add(t, w0.data(), rb, rows, cols, 2);
        pw.add(t, w1.data(), rb, 48, cols, 2);
        const cpu::fast::PackedMatrix *p0 = pw.find(w0.data()), *p1 = pw.find(w1.data());
        const auto x = normal_floats(size_t(cols) * n_x, 77);
        for (int threads : {1, 2}) {
            std::vector<float> a(size_t(rows) * n_x), b(size_t(48) * n_x), c(size_t(37) * n_x);
            const cpu::fast::PackedProduct prods[3] = {
                {p0, 0, rows, a.data(), size_t(rows)}, {p1, 0, 48, b.data(), 48}, {p0, 32, 37, c.data(), 37}};
            ASSERT_TRUE(cpu::fast::matmul_packed(prods, 3, x.data(), cols, n_x, threads));
            for (const auto& pr : prods) {
                std::vector<float> own(size_t(pr.n) * n_x);
                cpu::fast::matmul_packed(*pr.p, pr.r0, pr.n, x.data(), cols, n_x, own.data(), size_t(pr.n), 1);
                for (size_t i = 0; i < own.size(); ++i) ASSERT_EQ(pr.Y[i], own[i]) << threads << " threads, " << i;
            }
        }
        const cpu::fast::PackedProduct off[2] = {{p0, 0, 16, nullptr, 16}, {p0, 8, 16, nullptr, 16}};
        EXPECT_FALSE(cpu::fast::matmul_packed(off, 2, nullptr, 0, 1, 1)) << "a sub-range off a group";
    }
    const auto wq = random_weights(GgmlType::Q4_0, 16, 256, 1), wk = random_weights(GgmlType::Q8_0, 16, 256, 2);
    cpu::fast::PackedWeights pw;
    pw.add(GgmlType::Q4_0, wq.data(), row_bytes(GgmlType::Q4_0, 256), 16, 256, 1);
    pw.add(GgmlType::Q8_0, wk.data(), row_bytes(GgmlType::Q8_0, 256), 16, 256, 1);
    if (!pw.find(wq.data())) return;  // (no packed forms on this CPU)
    const cpu::fast::PackedProduct mixed[2] = {{pw.find(wq.data()), 0, 16, nullptr, 16},
                                               {pw.find(wk.data()), 0, 16, nullptr, 16}};
    EXPECT_FALSE(cpu::fast::matmul_packed(mixed, 2, nullptr, 0, 1, 1)) << "two types";
}

// The AVX2 forms of the packed products against the AVX-512 forms on a CPU that has both: the same
// integer sums and float steps, so the same bits for every type, activation row and thread count
// (the AVX2 forms alone, against the spec: the same tests under JITLLM_CPU_FAST=avx2-fma)
TEST(FastPacked, Avx2FormsGiveTheBitsOfTheAvx512Forms) {
    using cpu::fast::FastIsa;
    if (!cpu::fast::cpu_has_fast_isa(FastIsa::Avx512Vnni) || !cpu::fast::cpu_has_fast_isa(FastIsa::Avx2Fma))
        GTEST_SKIP() << "this CPU has not both AVX-512 VNNI and AVX2";
    const int cols = 768, rows = 77;
    int checked = 0;
    for (GgmlType t : kFastTypes) {
        SCOPED_TRACE(type_name(t));
        if (!cpu::fast::PackedWeights::packs(t)) continue;
        const size_t rb = row_bytes(t, cols);
        const auto w = random_weights(t, rows, cols, 51);
        cpu::fast::PackedWeights pw;
        pw.add(t, w.data(), rb, rows, cols, 2);
        for (int n_x : {1, 2, 5, 9, 16})
            for (int threads : {1, 2}) {
                auto x = normal_floats(size_t(cols) * size_t(n_x), uint32_t(80 + n_x));
                for (size_t i = 0; i < x.size(); i += 97) x[i] = 0.0f;  // ties and zeros among the q
                std::vector<float> a(size_t(rows) * size_t(n_x), -1.0f), b(a.size(), -2.0f);
                const cpu::fast::PackedProduct pa{pw.find(w.data()), 0, rows, a.data(), size_t(rows)};
                const cpu::fast::PackedProduct pb{pw.find(w.data()), 0, rows, b.data(), size_t(rows)};
                ASSERT_TRUE(cpu::fast::matmul_packed(FastIsa::Avx512Vnni, &pa, 1, x.data(), cols, n_x, threads));
                ASSERT_TRUE(cpu::fast::matmul_packed(FastIsa::Avx2Fma, &pb, 1, x.data(), cols, n_x, threads));
                for (size_t i = 0; i < a.size(); ++i)
                    ASSERT_EQ(a[i], b[i]) << n_x << " rows, " << threads << " threads: output " << i;
                checked += int(a.size());
            }
    }
    std::printf("[avx2 = avx512] %d outputs checked\n", checked);
}

TEST(FastAttention, WithinFloatRoundingOfTheSpec) {
    std::mt19937 rng(4);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int hd : {8, 64, 72, 128})
        for (int n_pos : {1, 17, 300})
            for (int threads : {1, 2}) {
                const int n_heads = 8, n_kv = 2;
                const size_t kv_stride = size_t(n_kv) * size_t(hd) + 16;
                std::vector<float> q(size_t(n_heads) * size_t(hd)), k(kv_stride * size_t(n_pos)), v(k.size());
                for (auto* a : {&q, &k, &v})
                    for (auto& x : *a) x = nd(rng);
                std::vector<float> got(q.size(), -1.0f), want(q.size(), -2.0f);
                const float scale = 1.0f / std::sqrt(float(hd));
                cpu::fast::attention(q.data(), k.data(), v.data(), kv_stride, n_heads, n_kv, hd, n_pos, scale,
                                     got.data(), threads);
                testref::attention_reference(q.data(), k.data(), v.data(), kv_stride, n_heads, n_kv, hd, n_pos, scale,
                                             want.data());
                for (size_t i = 0; i < q.size(); ++i)
                    ASSERT_NEAR(got[i], want[i], 1e-5 * (1.0 + std::fabs(want[i])))
                        << "head_dim " << hd << ", " << n_pos << " positions, " << threads << " threads, element " << i;
            }
}

// RMS norm and SwiGLU in vector registers within float rounding of the spec's loops, at sizes
// around the 16- and 32-element steps, gates far into either tail of the sigmoid
TEST(FastRowwise, NormAndSwigluWithinFloatRoundingOfTheSpec) {
    for (int n : {1, 15, 16, 33, 64, 2051}) {
        auto x = normal_floats(size_t(n), uint32_t(n)), w = normal_floats(size_t(n), uint32_t(n + 1));
        auto u = normal_floats(size_t(n), uint32_t(n + 2));
        for (int i = 0; i < n; i += 7) x[size_t(i)] *= 40.0f;  // silu near 0 and near the identity
        std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
        for (const float* wp : {static_cast<const float*>(nullptr), static_cast<const float*>(w.data())}) {
            cpu::fast::rms_norm(x.data(), wp, got.data(), n, 1e-5f);
            cpu::rms_norm(x.data(), wp, want.data(), n, 1e-5f);
            for (size_t i = 0; i < got.size(); ++i)
                ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << n << " " << i;
        }
        cpu::fast::swiglu(x.data(), u.data(), got.data(), n);
        cpu::swiglu(x.data(), u.data(), want.data(), n);
        for (size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << n << " " << i;
    }
}

}  // namespace
}  // namespace jitllm
