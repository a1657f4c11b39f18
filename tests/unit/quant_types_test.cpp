// quant/: every supported type decoded from hand-built blocks with hand-derived expected values
// (derivations in the comments) and dot_row against those values. The quantizers:
// quant_quantize_test.cpp.
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

void put_u16(Bytes& b, uint16_t v) {
    b.push_back(uint8_t(v & 0xFF));
    b.push_back(uint8_t(v >> 8));
}
void put_bytes(Bytes& b, const uint8_t* p, size_t n) { b.insert(b.end(), p, p + n); }

std::vector<float> dequant(GgmlType t, const Bytes& bytes, int64_t n) {
    EXPECT_EQ(bytes.size(), row_bytes(t, uint64_t(n)));
    std::vector<float> y(size_t(n), -12345.0f);
    dequantize_row(t, bytes.data(), y.data(), n);
    return y;
}

// Checks dequantize_row == want exactly (every expected value here is exactly representable and
// every decode step is exact), and dot_row against a double-precision dot of want with x.
void expect_decodes_to(GgmlType t, const Bytes& bytes, const std::vector<float>& want) {
    const int64_t n = int64_t(want.size());
    const auto got = dequant(t, bytes, n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(got[i], want[i]) << type_name(t) << " element " << i;

    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = u(rng);
    double ref = 0.0, mag = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        ref += double(want[i]) * double(x[i]);
        mag += std::fabs(double(want[i]) * double(x[i]));
    }
    const float dot = dot_row(t, bytes.data(), x.data(), n);
    EXPECT_NEAR(dot, ref, 1e-6 * mag + 1e-30) << type_name(t);
}

// --- plain types ---

TEST(QuantTypes, F32) {
    const std::vector<float> v = {1.5f, -2.25f, 0.0f, 3e-5f, -7.0f};
    Bytes b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    expect_decodes_to(GgmlType::F32, b, v);
}

TEST(QuantTypes, F16) {
    // 0x3C00 = 1, 0xC000 = -2, 0x3555 = (1 + 341/1024)/4, 0x7BFF = 65504, 0x0001 = 2^-24
    Bytes b;
    for (uint16_t h : {0x3C00, 0xC000, 0x3555, 0x7BFF, 0x0001}) put_u16(b, h);
    expect_decodes_to(GgmlType::F16, b, {1.0f, -2.0f, 0.333251953125f, 65504.0f, 0x1p-24f});
}

TEST(QuantTypes, Bf16) {
    // 0x3F80 = 1, 0xC040 = -3, 0x3EAB = (1 + 43/128)/4, 0x4780 = 65536
    Bytes b;
    for (uint16_t h : {0x3F80, 0xC040, 0x3EAB, 0x4780}) put_u16(b, h);
    expect_decodes_to(GgmlType::BF16, b, {1.0f, -3.0f, 0.333984375f, 65536.0f});
}

TEST(QuantTypes, F16RowDecodeIsBitExactForEveryHalf) {
    // the row decoder is a vectorizable rewrite; it must equal core/fp16.h bit for bit,
    // subnormals, infinities and NaN payloads included
    Bytes b;
    for (uint32_t h = 0; h < 65536; ++h) put_u16(b, uint16_t(h));
    std::vector<float> y(65536);
    dequantize_row(GgmlType::F16, b.data(), y.data(), 65536);
    for (uint32_t h = 0; h < 65536; ++h)
        ASSERT_EQ(fp32_to_bits(y[h]), fp32_to_bits(fp16_to_fp32(uint16_t(h)))) << std::hex << h;
}

TEST(QuantTypes, PlainTypesLongRowWithTail) {
    // 70 = 2 chunks of 32 + a tail of 6: x[i] = i - 35 (exact in f16 and bf16)
    const int n = 70;
    std::vector<float> want(n);
    Bytes f16, bf16;
    for (int i = 0; i < n; ++i) {
        want[i] = float(i - 35);
        put_u16(f16, fp32_to_fp16(want[i]));
        put_u16(bf16, fp32_to_bf16(want[i]));
    }
    expect_decodes_to(GgmlType::F16, f16, want);
    expect_decodes_to(GgmlType::BF16, bf16, want);
}

// --- legacy 32-element blocks ---

TEST(QuantTypes, Q8_0) {
    // d = 0.5 (f16 0x3800); x[i] = 0.5 * qs[i]
    Bytes b;
    put_u16(b, 0x3800);
    int8_t qs[32] = {};
    qs[0] = 1; qs[1] = -1; qs[2] = 127; qs[3] = -128; qs[31] = 10;
    put_bytes(b, reinterpret_cast<uint8_t*>(qs), 32);
    std::vector<float> want(32, 0.0f);
    want[0] = 0.5f; want[1] = -0.5f; want[2] = 63.5f; want[3] = -64.0f; want[31] = 5.0f;
    expect_decodes_to(GgmlType::Q8_0, b, want);
}

TEST(QuantTypes, Q4_0) {
    // d = 0.5; qs[j] low nibble -> x[j], high nibble -> x[j+16]; x = 0.5 * (q - 8)
    Bytes b;
    put_u16(b, 0x3800);
    uint8_t qs[16];
    std::memset(qs, 0x88, 16);  // q = 8 -> 0
    qs[0] = 0x1F;   // x[0] = 0.5*(15-8) = 3.5,  x[16] = 0.5*(1-8) = -3.5
    qs[1] = 0x80;   // x[1] = 0.5*(0-8) = -4,    x[17] = 0.5*(8-8) = 0
    qs[15] = 0xA3;  // x[15] = 0.5*(3-8) = -2.5, x[31] = 0.5*(10-8) = 1
    put_bytes(b, qs, 16);
    std::vector<float> want(32, 0.0f);
    want[0] = 3.5f; want[16] = -3.5f; want[1] = -4.0f; want[17] = 0.0f;
    want[15] = -2.5f; want[31] = 1.0f;
    expect_decodes_to(GgmlType::Q4_0, b, want);
}

TEST(QuantTypes, Q4_1) {
    // d = 0.25 (0x3400), m = -1 (0xBC00); x = 0.25 * q - 1
    Bytes b;
    put_u16(b, 0x3400);
    put_u16(b, 0xBC00);
    uint8_t qs[16] = {};  // q = 0 -> -1
    qs[0] = 0x1F;  // x[0] = 0.25*15 - 1 = 2.75, x[16] = 0.25*1 - 1 = -0.75
    qs[2] = 0x40;  // x[2] = -1,                 x[18] = 0.25*4 - 1 = 0
    put_bytes(b, qs, 16);
    std::vector<float> want(32, -1.0f);
    want[0] = 2.75f; want[16] = -0.75f; want[2] = -1.0f; want[18] = 0.0f;
    expect_decodes_to(GgmlType::Q4_1, b, want);
}

// qh bytes 01 00 01 80 = u32 0x80010001: bits 0 (x[0]), 16 (x[16]) and 31 (x[31]) get bit 4.
const uint8_t kQh5[4] = {0x01, 0x00, 0x01, 0x80};

TEST(QuantTypes, Q5_0) {
    // d = 0.5; x = 0.5 * (q - 16), q = nibble | (qh bit << 4)
    Bytes b;
    put_u16(b, 0x3800);
    put_bytes(b, kQh5, 4);
    uint8_t qs[16] = {};  // q = 0 -> -8
    qs[0] = 0x2F;   // x[0]: q = 15|16 = 31 -> 7.5;  x[16]: q = 2|16 = 18 -> 1
    qs[15] = 0x05;  // x[15]: q = 5 -> -5.5;         x[31]: q = 0|16 = 16 -> 0
    put_bytes(b, qs, 16);
    std::vector<float> want(32, -8.0f);
    want[0] = 7.5f; want[16] = 1.0f; want[15] = -5.5f; want[31] = 0.0f;
    expect_decodes_to(GgmlType::Q5_0, b, want);
}

TEST(QuantTypes, Q5_1) {
    // d = 0.5, m = 2 (0x4000); x = 0.5 * q + 2; same bits as the Q5_0 test
    Bytes b;
    put_u16(b, 0x3800);
    put_u16(b, 0x4000);
    put_bytes(b, kQh5, 4);
    uint8_t qs[16] = {};  // q = 0 -> 2
    qs[0] = 0x2F;   // x[0] = 0.5*31 + 2 = 17.5, x[16] = 0.5*18 + 2 = 11
    qs[15] = 0x05;  // x[15] = 0.5*5 + 2 = 4.5,  x[31] = 0.5*16 + 2 = 10
    put_bytes(b, qs, 16);
    std::vector<float> want(32, 2.0f);
    want[0] = 17.5f; want[16] = 11.0f; want[15] = 4.5f; want[31] = 10.0f;
    expect_decodes_to(GgmlType::Q5_1, b, want);
}

TEST(QuantTypes, LegacyTypesSeveralBlocks) {
    // Two Q8_0 blocks with different scales: the second block's d must apply to x[32..64).
    Bytes b;
    put_u16(b, 0x3C00);  // d = 1
    for (int i = 0; i < 32; ++i) b.push_back(uint8_t(int8_t(i - 16)));
    put_u16(b, 0xC000);  // d = -2
    for (int i = 0; i < 32; ++i) b.push_back(uint8_t(int8_t(i)));
    std::vector<float> want(64);
    for (int i = 0; i < 32; ++i) {
        want[i] = float(i - 16);
        want[32 + i] = -2.0f * float(i);
    }
    expect_decodes_to(GgmlType::Q8_0, b, want);
}

// --- K-quants ---

// Scales shared by the Q4_K and Q5_K tests. Unpacked by hand:
//   sub-blocks 0-3: sc = scales[j] & 63, m = scales[j+4] & 63
//     scales[0..3] = 41 02 03 C4 -> sc0..3 = 1, 2, 3, 4  (top bits 1, 0, 0, 3)
//     scales[4..7] = 05 86 07 08 -> m0..3  = 5, 6, 7, 8  (top bits 0, 2, 0, 0)
//   sub-blocks 4-7: sc = (scales[j+4] & 15) | (top bits of scales[j-4]) << 4,
//                   m  = (scales[j+4] >> 4) | (top bits of scales[j])   << 4
//     scales[8..11] = 21 32 00 F5 -> sc4..7 = 1|16=17, 2, 0, 5|48=53
//                                     m4..7  = 2, 3|32=35, 0, 15
// With d = 1 and dmin = 0.5: x = sc * q - 0.5 * m, so q = 0 gives per sub-block
//   -2.5, -3, -3.5, -4, -1, -17.5, 0, -7.5.
const uint8_t kKScales[12] = {0x41, 0x02, 0x03, 0xC4, 0x05, 0x86,
                              0x07, 0x08, 0x21, 0x32, 0x00, 0xF5};
const float kKZero[8] = {-2.5f, -3.0f, -3.5f, -4.0f, -1.0f, -17.5f, 0.0f, -7.5f};

TEST(QuantTypes, KScaleMinUnpacking) {
    const uint8_t sc_want[8] = {1, 2, 3, 4, 17, 2, 0, 53};
    const uint8_t m_want[8] = {5, 6, 7, 8, 2, 35, 0, 15};
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        k_scale_min(j, kKScales, &sc, &m);
        EXPECT_EQ(sc, sc_want[j]) << j;
        EXPECT_EQ(m, m_want[j]) << j;
    }
}

TEST(QuantTypes, Q4_K) {
    // chunk c = 64 elements from qs[32c..32c+32): low nibbles sub-block 2c, high 2c+1
    Bytes b;
    put_u16(b, 0x3C00);  // d = 1
    put_u16(b, 0x3800);  // dmin = 0.5
    put_bytes(b, kKScales, 12);
    uint8_t qs[128] = {};
    qs[0] = 0x3A;        // x[0]   = 1*10 - 2.5 = 7.5;    x[32]  = 2*3 - 3 = 3
    qs[64 + 5] = 0xF1;   // x[133] = 17*1 - 1 = 16;       x[165] = 2*15 - 17.5 = 12.5
    qs[96 + 31] = 0x2F;  // x[223] = 0*15 - 0 = 0;        x[255] = 53*2 - 7.5 = 98.5
    put_bytes(b, qs, 128);
    std::vector<float> want(256);
    for (int i = 0; i < 256; ++i) want[i] = kKZero[i / 32];
    want[0] = 7.5f; want[32] = 3.0f; want[133] = 16.0f; want[165] = 12.5f;
    want[223] = 0.0f; want[255] = 98.5f;
    expect_decodes_to(GgmlType::Q4_K, b, want);
}

TEST(QuantTypes, Q5_K) {
    // as Q4_K, plus 16 when bit 2c (low half of chunk c) or 2c+1 (high half) of qh[l] is set
    Bytes b;
    put_u16(b, 0x3C00);
    put_u16(b, 0x3800);
    put_bytes(b, kKScales, 12);
    uint8_t qh[32] = {};
    qh[0] = 0x01;   // chunk 0 low:  x[0]
    qh[1] = 0x04;   // chunk 1 low:  x[65]
    qh[5] = 0x30;   // chunk 2 low and high: x[133], x[165]
    qh[31] = 0x80;  // chunk 3 high: x[255]
    put_bytes(b, qh, 32);
    uint8_t qs[128] = {};
    qs[0] = 0x3A;        // x[0]   = 1*(10+16) - 2.5 = 23.5; x[32] = 2*3 - 3 = 3
                         // x[65]  = 3*(0+16) - 3.5 = 44.5
    qs[64 + 5] = 0xF1;   // x[133] = 17*(1+16) - 1 = 288;    x[165] = 2*(15+16) - 17.5 = 44.5
    qs[96 + 31] = 0x2F;  // x[223] = 0;                      x[255] = 53*(2+16) - 7.5 = 946.5
    put_bytes(b, qs, 128);
    std::vector<float> want(256);
    for (int i = 0; i < 256; ++i) want[i] = kKZero[i / 32];
    want[0] = 23.5f; want[32] = 3.0f; want[65] = 44.5f; want[133] = 288.0f;
    want[165] = 44.5f; want[223] = 0.0f; want[255] = 946.5f;
    expect_decodes_to(GgmlType::Q5_K, b, want);
}

TEST(QuantTypes, Q6_K) {
    // d = 0.25; x = 0.25 * scales[e/16] * (q - 32). All-zero bits give q - 32 = -32, so
    // x = -8 * scales[e/16]: with scales 1..8, -1..-8 that is -8, -16, ..., -64, 8, ..., 64.
    Bytes b;
    uint8_t ql[128] = {}, qh[64] = {};
    // half 0, l = 0: ql[0] = 0x5F, ql[32] = 0, qh[0] = 0xE4 = bit pairs (0, 1, 2, 3) low->high
    //   x[0]  = q1 = 0xF | 0<<4 = 15 -> -17; 0.25*1*-17 = -4.25
    //   x[32] = q2 = 0x0 | 1<<4 = 16 -> -16; 0.25*3*-16 = -12
    //   x[64] = q3 = 0x5 | 2<<4 = 37 -> 5;   0.25*5*5   = 6.25
    //   x[96] = q4 = 0x0 | 3<<4 = 48 -> 16;  0.25*7*16  = 28
    ql[0] = 0x5F;
    qh[0] = 0xE4;
    // half 1, l = 17: ql[64+17+32] = 0xA7, qh[32+17] = 0x0C (pair 1 = 3)
    //   x[145] = q1 = 0 -> -32 (default 16);  x[209] = q3 = 0 -> -32 (default 32)
    //   x[177] = q2 = 7 | 3<<4 = 55 -> 23; scales[11] = -4: 0.25*-4*23 = -23
    //   x[241] = q4 = 10 | 0<<4 = 10 -> -22; scales[15] = -8: 0.25*-8*-22 = 44
    ql[64 + 17 + 32] = 0xA7;
    qh[32 + 17] = 0x0C;
    const int8_t scales[16] = {1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, -5, -6, -7, -8};
    put_bytes(b, ql, 128);
    put_bytes(b, qh, 64);
    put_bytes(b, reinterpret_cast<const uint8_t*>(scales), 16);
    put_u16(b, 0x3400);
    const float zero[16] = {-8, -16, -24, -32, -40, -48, -56, -64, 8, 16, 24, 32, 40, 48, 56, 64};
    std::vector<float> want(256);
    for (int i = 0; i < 256; ++i) want[i] = zero[i / 16];
    want[0] = -4.25f; want[32] = -12.0f; want[64] = 6.25f; want[96] = 28.0f;
    want[177] = -23.0f; want[241] = 44.0f;
    expect_decodes_to(GgmlType::Q6_K, b, want);
}

TEST(QuantTypes, UnalignedRowPointer) {
    // rows inside a mapped file may start at odd addresses: decode from offset 1
    Bytes b = {0xEE};
    put_u16(b, 0x3800);
    for (int i = 0; i < 32; ++i) b.push_back(uint8_t(int8_t(i - 16)));
    std::vector<float> y(32);
    dequantize_row(GgmlType::Q8_0, b.data() + 1, y.data(), 32);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.5f * float(i - 16));
}

TEST(QuantTypes, DotRowsMatchesDotRowPerRow) {
    // 3 rows of a Q4_0 matrix with a padded stride; row r: d = r+1, all nibbles 9 -> x = d
    const int n = 64;
    const size_t stride = row_bytes(GgmlType::Q4_0, n) + 6;
    Bytes m(stride * 3, 0);
    for (int r = 0; r < 3; ++r) {
        uint8_t* row = m.data() + size_t(r) * stride;
        for (int blk = 0; blk < 2; ++blk) {
            const uint16_t d = fp32_to_fp16(float(r + 1));
            std::memcpy(row + blk * 18, &d, 2);
            std::memset(row + blk * 18 + 2, 0x99, 16);
        }
    }
    std::vector<float> x(n, 0.25f), y(3, 0.0f);
    dot_rows(GgmlType::Q4_0, m.data(), stride, 3, x.data(), n, y.data());
    for (int r = 0; r < 3; ++r) EXPECT_EQ(y[r], 0.25f * 64 * float(r + 1));  // = 16 (r+1)
}

}  // namespace
}  // namespace jitllm
