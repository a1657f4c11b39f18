// Dequantize and dot product for every supported tensor type: one block decoder per type, used
// by both, so dot_row is exactly "decode a block, multiply with x". Block layouts as ggml's
// (llama.cpp@1fd6dfe9 ggml-common.h; see blocks.h). Quantizers are in quantize.cpp.
#include "quant/quant.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant_isa.h"

namespace jitllm {
namespace {

// Blocks are read by memcpy into a local: rows may start at any byte offset of a mapped file,
// so a block pointer need not be aligned for its uint16_t fields.
template <class Block>
inline Block load_block(const uint8_t* p) {
    Block b;
    std::memcpy(&b, p, sizeof b);
    return b;
}

// acc[k] += a[i]*b[i] for every i = k (mod 8), len a multiple of 8. Eight independent float lanes
// kept across a whole row, so g++ -O2 vectorizes it without -ffast-math (nothing reassociated).
inline void lanes_accumulate(float* acc, const float* a, const float* b, int len) {
    for (int i = 0; i < len; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
}

inline float lanes_sum(const float* acc) {
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// Bulk half -> float, exact and equal to fp16_to_fp32 for every input (tested exhaustively) but
// branch-free so it vectorizes: the half's exponent and mantissa moved into float position
// give 2^-112 times the value for normals and subnormals alike (a float subnormal then); one
// multiply by 2^112 rescales exactly (in the default FP mode; DAZ would zero subnormal halves).
// Inf/NaN (exponent 31) are rebuilt by a select.
inline void halves_to_floats(const uint8_t* p, float* y, int n) {
    for (int i = 0; i < n; ++i) {
        const uint32_t h = uint32_t(p[2 * i]) | uint32_t(p[2 * i + 1]) << 8;
        const uint32_t sign = (h & 0x8000u) << 16;
        const uint32_t em = (h & 0x7FFFu) << 13;
        const uint32_t finite = fp32_to_bits(fp32_from_bits(em) * 0x1p112f);
        const uint32_t special = 0u - uint32_t((h & 0x7C00u) == 0x7C00u);  // all ones or zero
        y[i] = fp32_from_bits(sign | (special & (em | 0x7F800000u)) | (~special & finite));
    }
}

// --- decoders: kN elements from kBytes bytes per step. Plain types decode chunks of 32 and
// also decode a shorter tail (kPlain), since their rows need not be a multiple of 32. ---

// A plain type of ElemBytes bytes an element, n of them decoded by DecodeN.
template <size_t ElemBytes, void (*DecodeN)(const uint8_t*, float*, int)>
struct DecPlain {
    static constexpr int kN = 32;
    static constexpr size_t kBytes = ElemBytes * kN;
    static constexpr bool kPlain = true;
    static void decode_n(const uint8_t* p, float* y, int n) { DecodeN(p, y, n); }
    static void decode(const uint8_t* p, float* y) { DecodeN(p, y, kN); }
};

// A block type of N elements, one block decoded by Decode.
template <class Block, int N, void (*Decode)(const Block&, float*)>
struct DecBlock {
    static constexpr int kN = N;
    static constexpr size_t kBytes = sizeof(Block);
    static constexpr bool kPlain = false;
    static void decode(const uint8_t* p, float* y) { Decode(load_block<Block>(p), y); }
};

inline void floats_to_floats(const uint8_t* p, float* y, int n) { std::memcpy(y, p, 4 * size_t(n)); }

inline void bf16s_to_floats(const uint8_t* p, float* y, int n) {
    for (int i = 0; i < n; ++i) y[i] = bf16_to_fp32(uint16_t(p[2 * i] | p[2 * i + 1] << 8));
}

void decode_q8_0(const BlockQ8_0& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kQK; ++j) y[j] = d * float(b.qs[j]);
}

inline uint32_t load_u32_le(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// Bit 4 of the 32 elements of a Q5_0/Q5_1 block, as 0 or 16: element i's is bit i of qh.
inline void q5_high_bits(const uint8_t* qh_bytes, uint8_t* hi) {
    const uint32_t qh = load_u32_le(qh_bytes);
    for (int i = 0; i < kQK; ++i) hi[i] = uint8_t(((qh >> i) & 1) << 4);
}

// Q4_0, Q4_1, Q5_0 and Q5_1: element j in the low nibble of qs[j], element j + 16 in its high
// nibble, bit 4 from qh in the Q5 types; x = d * (q - 8 or 16), or d * q + m in the types with m.
template <class Block>
void decode_legacy(const Block& b, float* y) {
    constexpr bool kFive = requires { b.qh; };
    constexpr bool kMin = requires { b.m; };
    uint8_t hi[kQK];
    if constexpr (kFive) q5_high_bits(b.qh, hi);
    auto high = [&](int i) -> int {
        if constexpr (kFive) return hi[i];
        return 0;
    };
    const float d = fp16_to_fp32(b.d);
    [[maybe_unused]] const float m = [&] {
        if constexpr (kMin) return fp16_to_fp32(b.m);
        return 0.0f;
    }();
    for (int j = 0; j < kQK / 2; ++j) {
        const int q0 = (b.qs[j] & 0xF) | high(j), q1 = (b.qs[j] >> 4) | high(j + kQK / 2);
        if constexpr (kMin) {
            y[j] = d * float(q0) + m;
            y[j + kQK / 2] = d * float(q1) + m;
        } else {
            constexpr int kOffset = kFive ? 16 : 8;
            y[j] = d * float(q0 - kOffset);
            y[j + kQK / 2] = d * float(q1 - kOffset);
        }
    }
}

// Q4_K and Q5_K: chunk c of 64 elements is sub-blocks 2c (low nibbles of qs[32c..32c+32)) and
// 2c+1 (high nibbles); Q5_K adds bit 4 from bits 2c and 2c+1 of qh[l]. x = d * sc * q - dmin * m.
template <class Block>
void decode_k45(const Block& b, float* y) {
    constexpr bool kFive = requires { b.qh; };
    auto high = [&](int l, int bit) -> int {
        if constexpr (kFive) return (b.qh[l] >> bit) & 1 ? 16 : 0;
        return 0;
    };
    const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
    for (int c = 0; c < 4; ++c) {
        const uint8_t* q = b.qs + 32 * c;
        uint8_t sc1, m1, sc2, m2;
        k_scale_min(2 * c, b.scales, &sc1, &m1);
        k_scale_min(2 * c + 1, b.scales, &sc2, &m2);
        const float d1 = d * float(sc1), min1 = dmin * float(m1);
        const float d2 = d * float(sc2), min2 = dmin * float(m2);
        float* yc = y + 64 * c;
        for (int l = 0; l < 32; ++l) yc[l] = d1 * float((q[l] & 0xF) + high(l, 2 * c)) - min1;
        for (int l = 0; l < 32; ++l) yc[32 + l] = d2 * float((q[l] >> 4) + high(l, 2 * c + 1)) - min2;
    }
}

void decode_q6_k(const BlockQ6_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    // Two halves of 128. In half n (ql += 64n, qh += 32n), for l < 32:
    //   element l      : low nibble of ql[l]      | bits 0-1 of qh[l] << 4
    //   element l + 32 : low nibble of ql[l + 32] | bits 2-3 of qh[l] << 4
    //   element l + 64 : high nibble of ql[l]     | bits 4-5 of qh[l] << 4
    //   element l + 96 : high nibble of ql[l + 32]| bits 6-7 of qh[l] << 4
    // minus 32. Element e's scale is scales[e / 16] (ggml: sc = scales + 8n, sc[l/16 + 2k]).
    int8_t q[kQK_K];
    for (int n = 0; n < 2; ++n) {
        const uint8_t* ql = b.ql + 64 * n;
        const uint8_t* qh = b.qh + 32 * n;
        int8_t* qn = q + 128 * n;
        for (int l = 0; l < 32; ++l)
            qn[l] = int8_t(((ql[l] & 0xF) | (qh[l] & 3) << 4) - 32);
        for (int l = 0; l < 32; ++l)
            qn[l + 32] = int8_t(((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32);
        for (int l = 0; l < 32; ++l)
            qn[l + 64] = int8_t(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
        for (int l = 0; l < 32; ++l)
            qn[l + 96] = int8_t(((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
        const float s = d * float(b.scales[g]);
        for (int k = 0; k < 16; ++k) y[16 * g + k] = s * float(q[16 * g + k]);
    }
}

using DecF32 = DecPlain<4, floats_to_floats>;
using DecF16 = DecPlain<2, halves_to_floats>;
using DecBF16 = DecPlain<2, bf16s_to_floats>;
using DecQ8_0 = DecBlock<BlockQ8_0, kQK, decode_q8_0>;
using DecQ4_0 = DecBlock<BlockQ4_0, kQK, decode_legacy<BlockQ4_0>>;
using DecQ4_1 = DecBlock<BlockQ4_1, kQK, decode_legacy<BlockQ4_1>>;
using DecQ5_0 = DecBlock<BlockQ5_0, kQK, decode_legacy<BlockQ5_0>>;
using DecQ5_1 = DecBlock<BlockQ5_1, kQK, decode_legacy<BlockQ5_1>>;
using DecQ4_K = DecBlock<BlockQ4_K, kQK_K, decode_k45<BlockQ4_K>>;
using DecQ5_K = DecBlock<BlockQ5_K, kQK_K, decode_k45<BlockQ5_K>>;
using DecQ6_K = DecBlock<BlockQ6_K, kQK_K, decode_q6_k>;

// --- row loops over a decoder ---

template <class D>
void dequantize_impl(const uint8_t* src, float* dst, int64_t n) {
    const int64_t nb = n / D::kN;
    for (int64_t b = 0; b < nb; ++b) D::decode(src + b * D::kBytes, dst + b * D::kN);
    if constexpr (D::kPlain) {
        const int rest = int(n - nb * D::kN);
        if (rest) D::decode_n(src + nb * D::kBytes, dst + nb * D::kN, rest);
    }
}

// Decodes up to 256 elements at a time (several legacy blocks) into a buffer and accumulates
// the products lane-wise; one horizontal sum per row.
template <class D>
float dot_impl(const uint8_t* row, const float* x, int64_t n) {
    constexpr int kPer = D::kN >= 256 ? 1 : 256 / D::kN;  // blocks per buffer
    constexpr int kChunk = kPer * D::kN;
    float buf[kChunk];
    float acc[8] = {};
    const int64_t nb = n / D::kN;
    int64_t b = 0;
    for (; b + kPer <= nb; b += kPer) {
        for (int k = 0; k < kPer; ++k) D::decode(row + (b + k) * D::kBytes, buf + k * D::kN);
        lanes_accumulate(acc, buf, x + b * D::kN, kChunk);
    }
    const int rest_blocks = int(nb - b);
    if (rest_blocks > 0) {
        for (int k = 0; k < rest_blocks; ++k)
            D::decode(row + (b + k) * D::kBytes, buf + k * D::kN);
        lanes_accumulate(acc, buf, x + b * D::kN, rest_blocks * D::kN);
    }
    float sum = lanes_sum(acc);
    if constexpr (D::kPlain) {
        const int rest = int(n - nb * D::kN);
        if (rest) {
            D::decode_n(row + nb * D::kBytes, buf, rest);
            for (int i = 0; i < rest; ++i) sum += buf[i] * x[nb * D::kN + i];
        }
    }
    return sum;
}

template <class D>
void dot_rows_impl(const uint8_t* mat, size_t stride, int64_t n_rows, const float* x, int64_t n,
                   float* y) {
    for (int64_t r = 0; r < n_rows; ++r) y[r] = dot_impl<D>(mat + size_t(r) * stride, x, n);
}

#if defined(__x86_64__)
// dot_rows_impl compiled for AVX2 + F16C: flatten inlines every decoder and lanes_accumulate into it,
// so the same loops vectorize 8 lanes wide (one ymm for lanes_accumulate's 8 float lanes). The same
// operations in the same order, and no FMA (the target leaves it out): the scalar form's bits.
template <class D>
__attribute__((target("avx2,f16c"), flatten)) void dot_rows_impl_avx2(const uint8_t* mat, size_t stride,
                                                                       int64_t n_rows, const float* x, int64_t n,
                                                                       float* y) {
    dot_rows_impl<D>(mat, stride, n_rows, x, n, y);
}
#endif

void check_row(GgmlType t, int64_t n) {
    const auto& tt = type_traits(t);
    JITLLM_CHECK(n >= 0 && n % tt.block_size == 0, "{} row of {} elements: not a multiple of {}",
                 tt.name, n, tt.block_size);
}

// Calls f(Decoder{}) for the type's decoder.
template <class F>
decltype(auto) with_decoder(GgmlType t, F&& f) {
    switch (t) {
        case GgmlType::F32: return f(DecF32{});
        case GgmlType::F16: return f(DecF16{});
        case GgmlType::BF16: return f(DecBF16{});
        case GgmlType::Q8_0: return f(DecQ8_0{});
        case GgmlType::Q4_0: return f(DecQ4_0{});
        case GgmlType::Q4_1: return f(DecQ4_1{});
        case GgmlType::Q5_0: return f(DecQ5_0{});
        case GgmlType::Q5_1: return f(DecQ5_1{});
        case GgmlType::Q4_K: return f(DecQ4_K{});
        case GgmlType::Q5_K: return f(DecQ5_K{});
        case GgmlType::Q6_K: return f(DecQ6_K{});
        default: break;
    }
    // unsupported types are refused when a model is loaded; reaching here is our bug
    JITLLM_CHECK(false, "no CPU decoder for tensor type {}", type_name(t));
    __builtin_unreachable();
}

}  // namespace

void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n) {
    check_row(t, n);
    const auto* p = static_cast<const uint8_t*>(src);
    with_decoder(t, [&](auto dec) { dequantize_impl<decltype(dec)>(p, dst, n); });
}

float dot_row(GgmlType t, const void* row, const float* x, int64_t n) {
    check_row(t, n);
    const auto* p = static_cast<const uint8_t*>(row);
    return with_decoder(t, [&](auto dec) { return dot_impl<decltype(dec)>(p, x, n); });
}

void dot_rows_isa(CpuIsa isa, GgmlType t, const void* mat, size_t row_stride_bytes, int64_t n_rows,
                  const float* x, size_t x_stride, int n_x, int64_t n, float* y, size_t y_stride) {
    check_row(t, n);
    JITLLM_CHECK(cpu_has_isa(isa), "CPU form {} on a CPU without it", cpu_isa_name(isa));
    const auto* p = static_cast<const uint8_t*>(mat);
#if defined(__x86_64__)
    if (isa == CpuIsa::Avx2 && t == GgmlType::F16)
        return detail::dot_rows_f16_avx2(p, row_stride_bytes, n_rows, x, x_stride, n_x, n, y, y_stride);
#endif
    with_decoder(t, [&](auto dec) {
        for (int j = 0; j < n_x; ++j) {
            const float* xj = x + size_t(j) * x_stride;
            float* yj = y + size_t(j) * y_stride;
#if defined(__x86_64__)
            if (isa == CpuIsa::Avx2) {
                dot_rows_impl_avx2<decltype(dec)>(p, row_stride_bytes, n_rows, xj, n, yj);
                continue;
            }
#endif
            dot_rows_impl<decltype(dec)>(p, row_stride_bytes, n_rows, xj, n, yj);
        }
    });
}

void dot_rows(GgmlType t, const void* mat, size_t row_stride_bytes, int64_t n_rows,
              const float* x, int64_t n, float* y) {
    dot_rows_isa(cpu_isa(), t, mat, row_stride_bytes, n_rows, x, 0, 1, n, y, 0);
}

void dot_rows_batch(GgmlType t, const void* mat, size_t row_stride_bytes, int64_t n_rows, const float* x,
                    size_t x_stride, int n_x, int64_t n, float* y, size_t y_stride) {
    dot_rows_isa(cpu_isa(), t, mat, row_stride_bytes, n_rows, x, x_stride, n_x, n, y, y_stride);
}

bool act_q8_type(GgmlType t) { return t == GgmlType::Q4_0 || t == GgmlType::Q8_0; }

void quantize_act_q8(const float* x, int64_t n, int8_t* q, float* d) {
    JITLLM_CHECK(n % kQK == 0, "activation quantization of {} elements: not a multiple of {}", n, kQK);
    BlockQ8_0 b;
    for (int64_t i = 0; i < n / kQK; ++i) {
        quantize_row(GgmlType::Q8_0, x + i * kQK, &b, kQK);
        std::memcpy(q + i * kQK, b.qs, kQK);
        d[i] = fp16_to_fp32(b.d);
    }
}

namespace {
// One weight block's term: (weight scale * activation scale) * the integer sum of its 32
// products with x's values xq (Q4: nibbles minus 8; else int8). blk: the block's GGUF bytes.
template <bool Q4>
inline float block_term(const uint8_t* blk, const int8_t* xq, float dx) {
    const uint8_t* qs = blk + 2;
    int32_t isum = 0;
    if constexpr (Q4) {
        for (int j = 0; j < kQK / 2; ++j)
            isum += (int32_t(qs[j] & 0xF) - 8) * xq[j] + (int32_t(qs[j] >> 4) - 8) * xq[j + kQK / 2];
    } else {
        for (int j = 0; j < kQK; ++j) isum += int32_t(int8_t(qs[j])) * xq[j];
    }
    return (fp16_to_fp32(uint16_t(blk[0] | blk[1] << 8)) * dx) * float(isum);
}

// Two rows at a time (x's block read once for both), each summed in block order.
template <bool Q4>
void dot_rows_act_q8_impl(const uint8_t* base, size_t stride, int64_t n_rows, const int8_t* q,
                          const float* d, int64_t nb, float* y) {
    constexpr size_t bb = Q4 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
    int64_t r = 0;
    for (; r + 2 <= n_rows; r += 2) {
        const uint8_t* r0 = base + size_t(r) * stride;
        const uint8_t* r1 = r0 + stride;
        float a0 = 0.0f, a1 = 0.0f;
        for (int64_t i = 0; i < nb; ++i) {
            a0 += block_term<Q4>(r0 + size_t(i) * bb, q + i * kQK, d[i]);
            a1 += block_term<Q4>(r1 + size_t(i) * bb, q + i * kQK, d[i]);
        }
        y[r] = a0;
        y[r + 1] = a1;
    }
    for (; r < n_rows; ++r) {
        const uint8_t* r0 = base + size_t(r) * stride;
        float a0 = 0.0f;
        for (int64_t i = 0; i < nb; ++i) a0 += block_term<Q4>(r0 + size_t(i) * bb, q + i * kQK, d[i]);
        y[r] = a0;
    }
}
}  // namespace

CpuIsa cpu_isa() {
    static const CpuIsa isa = [] {
        const char* e = std::getenv("JITLLM_CPU_ISA");
        const std::string want = e ? e : "";
        if (want.empty() || want == "auto") return detail::cpu_has_avx2() ? CpuIsa::Avx2 : CpuIsa::Scalar;
        if (want == "scalar") return CpuIsa::Scalar;
        if (want == "avx2" && detail::cpu_has_avx2()) return CpuIsa::Avx2;
        fail_usage("JITLLM_CPU_ISA: expected auto, scalar or avx2 (one this CPU has), found '{}'", want);
    }();
    return isa;
}

bool cpu_has_isa(CpuIsa isa) { return isa == CpuIsa::Scalar || detail::cpu_has_avx2(); }

const char* cpu_isa_name(CpuIsa isa) { return isa == CpuIsa::Avx2 ? "avx2" : "scalar"; }

void act_q8_block_sums8(const int8_t* q, int n_x, int64_t n, int32_t* sx8) {
    for (int64_t i = 0; i < n / kQK * n_x; ++i) {
        int32_t s = 0;
        for (int j = 0; j < kQK; ++j) s += q[i * kQK + j];
        sx8[i] = 8 * s;
    }
}

void dot_rows_act_q8_isa(CpuIsa isa, GgmlType t, const void* mat, size_t row_stride_bytes, int64_t n_rows,
                         const int8_t* q, const float* d, int n_x, int64_t n, float* y, size_t y_stride,
                         const int32_t* sx8_given) {
    JITLLM_CHECK(act_q8_type(t) && n % kQK == 0, "{} product with quantized activations over {} elements",
                 type_name(t), n);
    JITLLM_CHECK(cpu_has_isa(isa), "CPU form {} on a CPU without it", cpu_isa_name(isa));
    const auto* base = static_cast<const uint8_t*>(mat);
    const bool q4 = t == GgmlType::Q4_0;
    const int64_t nb = n / kQK;
    int64_t done = 0;
    if (isa == CpuIsa::Avx2 && n_rows >= 8) {
        thread_local std::vector<int32_t> sx8;
        const int32_t* sums = sx8_given;
        if (q4 && !sums) {
            sx8.resize(size_t(nb) * size_t(n_x));
            act_q8_block_sums8(q, n_x, n, sx8.data());
            sums = sx8.data();
        }
        done = detail::dot_rows_act_q8_avx2(q4, base, row_stride_bytes, n_rows, q, d, sums, nb, y, n_x, y_stride);
    }
    base += size_t(done) * row_stride_bytes;
    for (int j = 0; j < n_x; ++j) {
        const int8_t* qj = q + size_t(j) * size_t(n);
        const float* dj = d + size_t(j) * size_t(nb);
        float* yj = y + size_t(j) * y_stride + size_t(done);
        if (q4)
            dot_rows_act_q8_impl<true>(base, row_stride_bytes, n_rows - done, qj, dj, nb, yj);
        else
            dot_rows_act_q8_impl<false>(base, row_stride_bytes, n_rows - done, qj, dj, nb, yj);
    }
}

void dot_rows_act_q8(GgmlType t, const void* mat, size_t row_stride_bytes, int64_t n_rows,
                     const int8_t* q, const float* d, int64_t n, float* y) {
    dot_rows_act_q8_isa(cpu_isa(), t, mat, row_stride_bytes, n_rows, q, d, 1, n, y, 0);
}

void dot_rows_act_q8_batch(GgmlType t, const void* mat, size_t row_stride_bytes, int64_t n_rows, const int8_t* q,
                           const float* d, int n_x, int64_t n, float* y, size_t y_stride, const int32_t* sx8) {
    dot_rows_act_q8_isa(cpu_isa(), t, mat, row_stride_bytes, n_rows, q, d, n_x, n, y, y_stride, sx8);
}

bool split_layout_type(GgmlType t) { return t == GgmlType::Q4_0 || t == GgmlType::Q8_0; }

namespace {
// f(block bytes in GGUF, quant bytes in split, scale bytes in split) for every block of every row
template <typename F>
void for_split_blocks(GgmlType t, int64_t rows, int64_t cols, F&& f) {
    JITLLM_CHECK(split_layout_type(t) && cols > 0 && cols % 32 == 0, "split layout of {} with {} columns",
                 type_name(t), cols);
    const size_t bb = type_traits(t).type_size, qb = bb - 2, nb = size_t(cols / 32), rb = nb * bb;
    for (int64_t r = 0; r < rows; ++r) {
        const size_t row = size_t(r) * rb;
        for (size_t b = 0; b < nb; ++b) f(row + b * bb, row + b * qb, row + nb * qb + 2 * b, qb);
    }
}
}  // namespace

void repack_split_rows(GgmlType t, const void* src, void* dst, int64_t rows, int64_t cols) {
    const auto* s = static_cast<const uint8_t*>(src);
    auto* d = static_cast<uint8_t*>(dst);
    for_split_blocks(t, rows, cols, [&](size_t blk, size_t q, size_t sc, size_t qb) {
        std::memcpy(d + sc, s + blk, 2);       // the f16 scale leads both block layouts
        std::memcpy(d + q, s + blk + 2, qb);
    });
}

void unpack_split_rows(GgmlType t, const void* src, void* dst, int64_t rows, int64_t cols) {
    const auto* s = static_cast<const uint8_t*>(src);
    auto* d = static_cast<uint8_t*>(dst);
    for_split_blocks(t, rows, cols, [&](size_t blk, size_t q, size_t sc, size_t qb) {
        std::memcpy(d + blk, s + sc, 2);
        std::memcpy(d + blk + 2, s + q, qb);
    });
}

}  // namespace jitllm
