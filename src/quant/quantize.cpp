// Row quantizers that reproduce ggml's reference quantizers bit for bit (matches llama.cpp@1fd6dfe9
// ggml-quants.c quantize_row_{q8_0,q4_0,q4_1,q5_0,q5_1}_ref, which llama-quantize uses when no
// imatrix is given), so synthetic quantized models look like llama-quantize's. K-quants are not
// produced here (their reference quantizer is an iterative search; read them, do not write).
// PRECOND for all: the input is finite.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace jitllm {
namespace {

// The element of largest magnitude, sign kept; the first one wins a tie (strict compare, as
// ggml's reference does).
float signed_absmax(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

void min_max(const float* x, int n, float* mn, float* mx) {
    float lo = 3.402823466e+38f, hi = -3.402823466e+38f;
    for (int j = 0; j < n; ++j) {
        lo = std::min(lo, x[j]);
        hi = std::max(hi, x[j]);
    }
    *mn = lo;
    *mx = hi;
}

// Stores the block scale d (f16) and returns 1 / d (0 for an all-zero block).
float put_scale(float d, uint16_t* out) {
    *out = fp32_to_fp16(d);
    return d != 0.0f ? 1.0f / d : 0.0f;
}

// Q4_1 / Q5_1 (levels 15 / 31): d = (max - min) / levels; stores d and the min (also in *mn),
// returns 1 / d.
template <class Block>
float put_scale_min(const float* x, float levels, Block* y, float* mn) {
    float mx;
    min_max(x, kQK, mn, &mx);
    y->m = fp32_to_fp16(*mn);
    return put_scale((mx - *mn) / levels, &y->d);
}

void quantize_block_q8_0(const float* x, BlockQ8_0* y) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float id = put_scale(amax / 127.0f, &y->d);
    // roundf: halves away from zero, like the reference (not round-half-even)
    for (int j = 0; j < kQK; ++j) y->qs[j] = int8_t(std::round(x[j] * id));
}

void quantize_block_q4_0(const float* x, BlockQ4_0* y) {
    // the extreme value maps to -8 exactly; the other side saturates at +7
    const float id = put_scale(signed_absmax(x, kQK) / -8.0f, &y->d);
    for (int j = 0; j < kQK / 2; ++j) {
        // truncation toward zero of a value in [0.5, 16.5], then clamp to 4 bits
        const int q0 = std::min(15, int(int8_t(x[j] * id + 8.5f)));
        const int q1 = std::min(15, int(int8_t(x[j + kQK / 2] * id + 8.5f)));
        y->qs[j] = uint8_t(q0 | q1 << 4);
    }
}

void quantize_block_q4_1(const float* x, BlockQ4_1* y) {
    float mn;
    const float id = put_scale_min(x, 15.0f, y, &mn);
    for (int j = 0; j < kQK / 2; ++j) {
        const int q0 = std::min(15, int(int8_t((x[j] - mn) * id + 0.5f)));
        const int q1 = std::min(15, int(int8_t((x[j + kQK / 2] - mn) * id + 0.5f)));
        y->qs[j] = uint8_t(q0 | q1 << 4);
    }
}

// Q5_0 / Q5_1: the 5-bit values of elements j and j + 16, low 4 bits into qs[j], bit 4 into bits
// j and j + 16 of qh.
inline void put_q5_pair(int j, int q0, int q1, uint8_t* qs, uint32_t* qh) {
    qs[j] = uint8_t((q0 & 0xF) | (q1 & 0xF) << 4);
    *qh |= uint32_t(q0 >> 4) << j;
    *qh |= uint32_t(q1 >> 4) << (j + 16);
}

void quantize_block_q5_0(const float* x, BlockQ5_0* y) {
    const float id = put_scale(signed_absmax(x, kQK) / -16.0f, &y->d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
        const int q0 = std::min(31, int(int8_t(x[j] * id + 16.5f)));
        const int q1 = std::min(31, int(int8_t(x[j + kQK / 2] * id + 16.5f)));
        put_q5_pair(j, q0, q1, y->qs, &qh);
    }
    for (int i = 0; i < 4; ++i) y->qh[i] = uint8_t(qh >> (8 * i));
}

void quantize_block_q5_1(const float* x, BlockQ5_1* y) {
    float mn;
    const float id = put_scale_min(x, 31.0f, y, &mn);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
        const int q0 = std::min(31, int(uint8_t((x[j] - mn) * id + 0.5f)));
        const int q1 = std::min(31, int(uint8_t((x[j + kQK / 2] - mn) * id + 0.5f)));
        put_q5_pair(j, q0, q1, y->qs, &qh);
    }
    for (int i = 0; i < 4; ++i) y->qh[i] = uint8_t(qh >> (8 * i));
}

// Quantizes each block into a local and copies it out (dst need not be aligned).
template <class Block, void (*Quantize)(const float*, Block*)>
void quantize_blocks(const float* src, uint8_t* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b) {
        Block blk;
        Quantize(src + b * kQK, &blk);
        std::memcpy(dst + b * sizeof(Block), &blk, sizeof(Block));
    }
}

}  // namespace

bool can_quantize(GgmlType t) {
    switch (t) {
        case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q8_0:
        case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1:
            return true;
        default:
            return false;
    }
}

void quantize_row(GgmlType t, const float* src, void* dst, int64_t n) {
    const auto& tt = type_traits(t);
    JITLLM_CHECK(can_quantize(t), "no quantizer for tensor type {}", tt.name);
    JITLLM_CHECK(n >= 0 && n % tt.block_size == 0, "{} row of {} elements: not a multiple of {}",
                 tt.name, n, tt.block_size);
    auto* out = static_cast<uint8_t*>(dst);
    switch (t) {
        case GgmlType::F32:
            std::memcpy(out, src, 4 * size_t(n));
            return;
        case GgmlType::F16:
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t h = fp32_to_fp16(src[i]);
                std::memcpy(out + 2 * i, &h, 2);
            }
            return;
        case GgmlType::BF16:
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t h = fp32_to_bf16(src[i]);
                std::memcpy(out + 2 * i, &h, 2);
            }
            return;
        case GgmlType::Q8_0: quantize_blocks<BlockQ8_0, quantize_block_q8_0>(src, out, n); return;
        case GgmlType::Q4_0: quantize_blocks<BlockQ4_0, quantize_block_q4_0>(src, out, n); return;
        case GgmlType::Q4_1: quantize_blocks<BlockQ4_1, quantize_block_q4_1>(src, out, n); return;
        case GgmlType::Q5_0: quantize_blocks<BlockQ5_0, quantize_block_q5_0>(src, out, n); return;
        case GgmlType::Q5_1: quantize_blocks<BlockQ5_1, quantize_block_q5_1>(src, out, n); return;
        default: break;
    }
}

}  // namespace jitllm
