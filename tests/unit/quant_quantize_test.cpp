// quant/: the reference quantizers on small inputs whose outputs are worked out by hand, round-trip
// error bounds, the split device layout, and x quantized to Q8_0 blocks for the Q4_0 / Q8_0 products
// (quantize_act_q8, dot_rows_act_q8). The decoders: quant_types_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace jitllm {
namespace {

using Bytes = std::vector<uint8_t>;

// --- quantizers ---

Bytes quant(GgmlType t, const std::vector<float>& x) {
    Bytes b(row_bytes(t, x.size()));
    quantize_row(t, x.data(), b.data(), int64_t(x.size()));
    return b;
}

TEST(QuantTypes, CanQuantize) {
    for (auto t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                   GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1})
        EXPECT_TRUE(can_quantize(t)) << type_name(t);
    for (auto t : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q2_K})
        EXPECT_FALSE(can_quantize(t)) << type_name(t);
}

TEST(QuantTypes, QuantizePlain) {
    const std::vector<float> x = {1.0f, -2.0f, 65520.0f, 1.0f + 0x1p-11f};
    const Bytes f16 = quant(GgmlType::F16, x);
    EXPECT_EQ(f16, (Bytes{0x00, 0x3C, 0x00, 0xC0, 0x00, 0x7C, 0x00, 0x3C}));
    const Bytes bf16 = quant(GgmlType::BF16, {1.0f, -3.0f, fp32_from_bits(0x3F818000u)});
    EXPECT_EQ(bf16, (Bytes{0x80, 0x3F, 0x40, 0xC0, 0x82, 0x3F}));
    const Bytes f32 = quant(GgmlType::F32, {1.0f});
    EXPECT_EQ(f32, (Bytes{0x00, 0x00, 0x80, 0x3F}));
}

TEST(QuantTypes, QuantizeQ8_0Exact) {
    // amax = 254 -> d = 2 (f16 0x4000), id = 0.5; q = roundf(x/2), halves away from zero:
    //   254 -> 127, -254 ... (not present), 5 -> 2.5 -> 3, -5 -> -3, 3 -> 1.5 -> 2,
    //   1.2 -> 0.6 -> 1, -0.9 -> -0.45 -> 0, 100 -> 50
    std::vector<float> x(32, 0.0f);
    x[0] = 254; x[1] = 5; x[2] = -5; x[3] = 3; x[4] = 1.2f; x[5] = -0.9f; x[31] = 100;
    const Bytes b = quant(GgmlType::Q8_0, x);
    Bytes want(34, 0);
    want[0] = 0x00; want[1] = 0x40;
    want[2 + 0] = 127; want[2 + 1] = 3; want[2 + 2] = uint8_t(-3); want[2 + 3] = 2;
    want[2 + 4] = 1; want[2 + 5] = 0; want[2 + 31] = 50;
    EXPECT_EQ(b, want);
    // an all-zero block: d = 0, all q = 0
    EXPECT_EQ(quant(GgmlType::Q8_0, std::vector<float>(32, 0.0f)), Bytes(34, 0));
}

TEST(QuantTypes, QuantizeQ4_0Exact) {
    // max |x| is x[0] = -8 -> d = -8/-8 = 1 (0x3C00), id = 1; q = min(15, trunc(x + 8.5)):
    //   -8 -> 0, 7 -> 15, 7.9 -> 16 -> 15, 0 -> 8, -0.5 -> 8, 0.4 -> 8, 0.5 -> 9, -3.2 -> 5,
    //   2.6 -> 11; x[16] = 4 -> 12, x[17] = -1 -> 7, others 0 -> 8
    std::vector<float> x(32, 0.0f);
    const float lo[9] = {-8, 7, 7.9f, 0, -0.5f, 0.4f, 0.5f, -3.2f, 2.6f};
    for (int i = 0; i < 9; ++i) x[i] = lo[i];
    x[16] = 4; x[17] = -1;
    Bytes want = {0x00, 0x3C};
    const int qlo[9] = {0, 15, 15, 8, 8, 8, 9, 5, 11};
    for (int j = 0; j < 16; ++j) {
        const int q0 = j < 9 ? qlo[j] : 8;
        const int q1 = j == 0 ? 12 : j == 1 ? 7 : 8;
        want.push_back(uint8_t(q0 | q1 << 4));
    }
    EXPECT_EQ(quant(GgmlType::Q4_0, x), want);
}

TEST(QuantTypes, QuantizeQ4_0PositiveMaxAndTies) {
    // max is +4 -> d = 4/-8 = -0.5 (0xB800), id = -2: x = 4 -> -8+8.5 -> 0,
    // x = -3.9 -> 16.3 -> 16 -> clamped 15, x = 1 -> 6.5 -> 6, 0 -> 8
    std::vector<float> x(32, 0.0f);
    x[0] = 4; x[1] = -3.9f; x[2] = 1; x[3] = -3.9f;
    Bytes want = {0x00, 0xB8};
    for (int j = 0; j < 16; ++j) {
        const int q0 = j == 0 ? 0 : (j == 1 || j == 3) ? 15 : j == 2 ? 6 : 8;
        want.push_back(uint8_t(q0 | 8 << 4));
    }
    EXPECT_EQ(quant(GgmlType::Q4_0, x), want);
    // |-4| == |4|: the first one wins -> max = -4, d = 0.5 (0x3800), id = 2
    std::vector<float> t(32, 0.0f);
    t[0] = -4; t[5] = 4;  // -4 -> 0, 4 -> 16.5 -> 15
    const Bytes b = quant(GgmlType::Q4_0, t);
    EXPECT_EQ(b[0], 0x00);
    EXPECT_EQ(b[1], 0x38);
    EXPECT_EQ(b[2 + 0], 0x80);  // q0 = 0, q16 = 8
    EXPECT_EQ(b[2 + 5], 0x8F);
}

TEST(QuantTypes, QuantizeQ4_1Q5_0Q5_1Exact) {
    // Q4_1: min -1, max 14 -> d = 1 (0x3C00), m = -1 (0xBC00); q = min(15, trunc(x+1 + 0.5))
    //   x = 14 -> 15, -1 -> 0, 2.4 -> 3.9 -> 3, 2.5 -> 4 -> 4; zeros -> 1.5 -> 1
    std::vector<float> x(32, 0.0f);
    x[0] = 14; x[1] = -1; x[2] = 2.4f; x[16] = 2.5f;
    Bytes q41 = quant(GgmlType::Q4_1, x);
    Bytes want = {0x00, 0x3C, 0x00, 0xBC};
    for (int j = 0; j < 16; ++j) {
        const int q0 = j == 0 ? 15 : j == 1 ? 0 : j == 2 ? 3 : 1;
        const int q1 = j == 0 ? 4 : 1;
        want.push_back(uint8_t(q0 | q1 << 4));
    }
    EXPECT_EQ(q41, want);

    // Q5_0: max |x| is x[0] = -16 -> d = 1, id = 1; q = min(31, trunc(x + 16.5))
    //   -16 -> 0, 15 -> 31, 15.9 -> 32 -> 31, 0 -> 16, x[17] = -3 -> 13; zeros -> 16
    std::vector<float> y(32, 0.0f);
    y[0] = -16; y[1] = 15; y[2] = 15.9f; y[17] = -3;
    // bit 4 set for q >= 16: j = 1, 2, 3..15 (16) and all of 16..31 except 17 (13)
    uint32_t qh = 0;
    Bytes w5 = {0x00, 0x3C, 0, 0, 0, 0};
    for (int j = 0; j < 16; ++j) {
        const int q0 = j == 0 ? 0 : (j == 1 || j == 2) ? 31 : 16;
        const int q1 = j == 1 ? 13 : 16;
        w5.push_back(uint8_t((q0 & 15) | (q1 & 15) << 4));
        qh |= uint32_t(q0 >> 4) << j | uint32_t(q1 >> 4) << (j + 16);
    }
    EXPECT_EQ(qh, 0xFFFDFFFEu);
    w5[2] = 0xFE; w5[3] = 0xFF; w5[4] = 0xFD; w5[5] = 0xFF;
    EXPECT_EQ(quant(GgmlType::Q5_0, y), w5);

    // Q5_1: min -2, max 29 -> d = 1, m = -2 (0xC000); q = trunc(x + 2 + 0.5)
    //   29 -> 31, -2 -> 0, 13.6 -> 16.1 -> 16, zeros -> 2
    std::vector<float> z(32, 0.0f);
    z[0] = 29; z[1] = -2; z[16] = 13.6f;
    Bytes w51 = {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00, 0x01, 0x00};  // qh bits 0 and 16
    for (int j = 0; j < 16; ++j) {
        const int q0 = j == 0 ? 31 : j == 1 ? 0 : 2;
        const int q1 = j == 0 ? 16 : 2;
        w51.push_back(uint8_t((q0 & 15) | (q1 & 15) << 4));
    }
    EXPECT_EQ(quant(GgmlType::Q5_1, z), w51);
}

// Round trip on Gaussian data: per element, the error is at most half a step (plus the f16
// rounding of the scale and min), except where the reference quantizers saturate (one step at
// most); the RMS error is about that of uniform rounding, step / sqrt(12).
TEST(QuantTypes, RoundTripErrorBounds) {
    std::mt19937 rng(42);
    std::normal_distribution<float> g(0.0f, 1.0f);
    const int n = 32 * 64;
    std::vector<float> x(n);
    for (auto& v : x) v = g(rng);
    struct Case {
        GgmlType t;
        float levels;     // step = range / levels; also the largest |q| times the scale
        bool has_min;     // range = max - min, else range = max |x|
        float max_steps;  // worst error in steps
    };
    // Q8_0: amax -> 127, half a step. Q4_0/Q5_0: the signed extreme maps to -8/-16 and the
    // other side saturates at +7/+15: at most one step. Q4_1/Q5_1: half a step of range/15, /31.
    const Case cases[] = {
        {GgmlType::Q8_0, 127, false, 0.5f},
        {GgmlType::Q4_0, 8, false, 1.0f},
        {GgmlType::Q5_0, 16, false, 1.0f},
        {GgmlType::Q4_1, 15, true, 0.5f},
        {GgmlType::Q5_1, 31, true, 0.5f},
    };
    for (const auto& c : cases) {
        const Bytes b = quant(c.t, x);
        std::vector<float> y(static_cast<size_t>(n));
        dequantize_row(c.t, b.data(), y.data(), n);
        double e2 = 0, s2 = 0;
        for (int blk = 0; blk < n / 32; ++blk) {
            float amax = 0, mn = 1e30f, mx = -1e30f;
            for (int j = 0; j < 32; ++j) {
                const float v = x[blk * 32 + j];
                amax = std::max(amax, std::fabs(v));
                mn = std::min(mn, v);
                mx = std::max(mx, v);
            }
            const float range = c.has_min ? mx - mn : amax;
            const float step = range / c.levels;
            // f16 scale off by <= 2^-11 relative, times |q| <= levels; f16 min likewise
            const float slack = range * 0x1p-11f + (c.has_min ? std::fabs(mn) * 0x1p-11f : 0) +
                                1e-6f * (amax + 1);
            for (int j = 0; j < 32; ++j) {
                const int i = blk * 32 + j;
                EXPECT_LE(std::fabs(y[i] - x[i]), c.max_steps * step + slack)
                    << type_name(c.t) << " element " << i;
                e2 += double(y[i] - x[i]) * (y[i] - x[i]);
                s2 += double(step) * step / 12;
            }
        }
        EXPECT_LT(std::sqrt(e2 / s2), 1.25) << type_name(c.t);
        EXPECT_GT(std::sqrt(e2 / s2), 0.75) << type_name(c.t);  // it did quantize
    }
}

// --- the split device layout (CUDA weights.layout=split) ---

// Element e of row r read from the split layout by its definition (quant.h), independently of
// repack_split_rows' code: quants of block b at b * 16 (Q4_0) / b * 32 (Q8_0), scales after all.
float split_elem(GgmlType t, const uint8_t* rows, int64_t cols, int64_t r, int64_t e) {
    const int64_t nb = cols / 32, qb = t == GgmlType::Q4_0 ? 16 : 32;
    const uint8_t* row = rows + size_t(r) * size_t(nb * (qb + 2));
    const int64_t b = e / 32, j = e % 32;
    uint16_t h;
    std::memcpy(&h, row + nb * qb + 2 * b, 2);
    const float d = fp16_to_fp32(h);
    if (t == GgmlType::Q8_0) return d * float(int8_t(row[b * qb + j]));
    const uint8_t q = row[b * qb + (j % 16)];
    return d * float(int((j < 16) ? (q & 0xF) : (q >> 4)) - 8);
}

TEST(QuantTypes, SplitLayoutKeepsEveryElementAndRoundTrips) {
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(-0.5f, 0.5f);
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0}) {
        ASSERT_TRUE(split_layout_type(t));
        for (int64_t cols : {32, 256, 288, 4096}) {
            const int64_t rows = 3;
            const size_t rb = row_bytes(t, uint64_t(cols)), bb = type_traits(t).type_size;
            Bytes gguf(rb * size_t(rows));
            for (auto& b : gguf) b = uint8_t(byte(rng));
            for (size_t o = 0; o < gguf.size(); o += bb) {  // finite scales
                const uint16_t h = fp32_to_fp16(scale(rng));
                std::memcpy(&gguf[o], &h, 2);
            }
            Bytes split(gguf.size(), 0xEE), back(gguf.size(), 0xEE);
            repack_split_rows(t, gguf.data(), split.data(), rows, cols);
            unpack_split_rows(t, split.data(), back.data(), rows, cols);
            EXPECT_EQ(back, gguf) << type_name(t) << " cols " << cols;
            std::vector<float> want(static_cast<size_t>(cols));
            for (int64_t r = 0; r < rows; ++r) {
                dequantize_row(t, gguf.data() + size_t(r) * rb, want.data(), cols);
                for (int64_t e = 0; e < cols; ++e)
                    ASSERT_EQ(split_elem(t, split.data(), cols, r, e), want[size_t(e)])
                        << type_name(t) << " cols " << cols << " row " << r << " element " << e;
            }
        }
    }
    EXPECT_FALSE(split_layout_type(GgmlType::Q4_1));
    EXPECT_FALSE(split_layout_type(GgmlType::F16));
}


// --- activations quantized to Q8_0 (the engine's Q4_0/Q8_0 products, llama.cpp's CPU numerics) ---

TEST(ActQ8, QuantizesLikeAQ8_0Row) {
    std::vector<float> x(96);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(0.37 * double(i))) * (i < 32 ? 0.01f : 3.0f);
    x[40] = 0.0f;
    std::vector<int8_t> q(96);
    std::vector<float> d(3);
    quantize_act_q8(x.data(), 96, q.data(), d.data());
    const Bytes ref = quant(GgmlType::Q8_0, x);
    for (int b = 0; b < 3; ++b) {
        uint16_t h;
        std::memcpy(&h, ref.data() + b * 34, 2);
        EXPECT_EQ(d[size_t(b)], fp16_to_fp32(h)) << "block " << b;
        for (int j = 0; j < 32; ++j) EXPECT_EQ(q[size_t(b * 32 + j)], int8_t(ref[size_t(b * 34 + 2 + j)])) << b << "," << j;
    }
    // an all-zero block: scale 0, values 0 (no division by zero)
    std::vector<float> z(32, 0.0f);
    quantize_act_q8(z.data(), 32, q.data(), d.data());
    EXPECT_EQ(d[0], 0.0f);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(q[size_t(j)], 0);
}

TEST(ActQ8, DotIsBlockIntegerSumsTimesBothScales) {
    // hand-built: Q4_0 row of 2 blocks, d_w = 0.5 and 2; nibbles j % 16 (low) and 15 - j % 16
    // (high); x quantized values i - 16 with d_x = 0.25 and 1
    const int n = 64;
    Bytes w(row_bytes(GgmlType::Q4_0, n));
    const float dw[2] = {0.5f, 2.0f};
    for (int b = 0; b < 2; ++b) {
        const uint16_t h = fp32_to_fp16(dw[b]);
        std::memcpy(w.data() + b * 18, &h, 2);
        for (int j = 0; j < 16; ++j) w[size_t(b * 18 + 2 + j)] = uint8_t((j % 16) | ((15 - j % 16) << 4));
    }
    std::vector<int8_t> q(n);
    for (int i = 0; i < n; ++i) q[size_t(i)] = int8_t(i % 32 - 16);
    const float dx[2] = {0.25f, 1.0f};
    float expect = 0.0f;
    for (int b = 0; b < 2; ++b) {
        int isum = 0;
        for (int j = 0; j < 16; ++j) isum += (j - 8) * (j - 16) + (15 - j - 8) * (j + 16 - 16);
        expect += (dw[b] * dx[b]) * float(isum);
    }
    float y = 0.0f;
    dot_rows_act_q8(GgmlType::Q4_0, w.data(), w.size(), 1, q.data(), dx, n, &y);
    EXPECT_EQ(y, expect);
    // Q8_0: the same x against int8 weights w_j = 3 - j % 7, d_w = 0.125
    Bytes w8(row_bytes(GgmlType::Q8_0, n));
    float expect8 = 0.0f;
    for (int b = 0; b < 2; ++b) {
        const uint16_t h = fp32_to_fp16(0.125f);
        std::memcpy(w8.data() + b * 34, &h, 2);
        int isum = 0;
        for (int j = 0; j < 32; ++j) {
            w8[size_t(b * 34 + 2 + j)] = uint8_t(int8_t(3 - j % 7));
            isum += (3 - j % 7) * (j - 16);
        }
        expect8 += (0.125f * dx[b]) * float(isum);
    }
    dot_rows_act_q8(GgmlType::Q8_0, w8.data(), w8.size(), 1, q.data(), dx, n, &y);
    EXPECT_EQ(y, expect8);
}

TEST(ActQ8, CloseToTheFloatDot) {
    // random rows: the int8-activation product is within the Q8_0 rounding of x of the float one
    const int n = 512, rows = 5;
    uint64_t st = 12345;
    auto rnd = [&]() { st = st * 6364136223846793005ull + 1442695040888963407ull; return float(double(st >> 40) / double(1ull << 24)) - 0.5f; };
    std::vector<float> x(n), wf(size_t(n) * rows);
    for (float& v : x) v = rnd();
    for (float& v : wf) v = rnd();
    std::vector<int8_t> q(n);
    std::vector<float> d(n / 32);
    quantize_act_q8(x.data(), n, q.data(), d.data());
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0}) {
        const size_t rb = row_bytes(t, n);
        Bytes w(rb * rows);
        for (int r = 0; r < rows; ++r) quantize_row(t, wf.data() + size_t(r) * n, w.data() + size_t(r) * rb, n);
        std::vector<float> yq(rows), yf(rows);
        dot_rows_act_q8(t, w.data(), rb, rows, q.data(), d.data(), n, yq.data());
        dot_rows(t, w.data(), rb, rows, x.data(), n, yf.data());
        for (int r = 0; r < rows; ++r) {
            // |x - dequant(q)| <= d/2 per element: bound by sum |w| * d / 2
            std::vector<float> deq(n);
            dequantize_row(t, w.data() + size_t(r) * rb, deq.data(), n);
            double bound = 0;
            for (int i = 0; i < n; ++i) bound += std::fabs(deq[size_t(i)]) * d[size_t(i / 32)] * 0.5;
            EXPECT_LE(std::fabs(double(yq[size_t(r)]) - yf[size_t(r)]), bound + 1e-5) << type_name(t) << " row " << r;
            EXPECT_GT(std::fabs(double(yq[size_t(r)]) - yf[size_t(r)]), 0.0) << "int8 x must differ from float x somewhere";
        }
    }
}

}  // namespace
}  // namespace jitllm
