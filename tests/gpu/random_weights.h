// Random weights for the GPU kernel tests (kernels_gemm_test, kernels_moe_group_test): rows of any
// weight type the kernels read, from a caller's generator.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "quant/quant.h"

namespace jitllm::test {

inline uint16_t f16_bits(float f) {  // round to nearest (test data only: normal range)
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint32_t sign = (u >> 16) & 0x8000u;
    int e = int((u >> 23) & 0xFF) - 127 + 15;
    uint32_t mant = u & 0x7FFFFFu;
    if (e <= 0) return uint16_t(sign);
    uint32_t h = sign | (uint32_t(e) << 10) | (mant >> 13);
    if ((mant >> 12) & 1) ++h;
    return uint16_t(h);
}

// rows x row_bytes of weights: quantized from floats uniform in [-0.5, 0.5) where quantize_row
// exists, else (K-quants) random block bytes with sane f16 scales (d, dmin in [0.002, 0.004)).
inline std::vector<uint8_t> random_weights(GgmlType t, int rows, int cols, std::mt19937& rng) {
    auto urand = [&] { return std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng); };
    const size_t rb = row_bytes(t, uint64_t(cols));
    std::vector<uint8_t> w(rb * size_t(rows));
    if (can_quantize(t)) {
        std::vector<float> v(static_cast<size_t>(cols));
        for (int r = 0; r < rows; ++r) {
            for (float& f : v) f = 0.5f * urand();
            quantize_row(t, v.data(), w.data() + size_t(r) * rb, cols);
        }
        return w;
    }
    for (auto& b : w) b = uint8_t(rng() & 0xFF);
    const int bb = int(type_traits(t).type_size);
    for (size_t off = 0; off + size_t(bb) <= w.size(); off += size_t(bb)) {
        auto put = [&](size_t at, float f) {
            const uint16_t h = f16_bits(f);
            std::memcpy(&w[off + at], &h, 2);
        };
        if (t == GgmlType::Q6_K) {
            put(208, 0.002f + 0.002f * std::fabs(urand()));
        } else {  // Q4_K, Q5_K: d, dmin
            put(0, 0.002f + 0.002f * std::fabs(urand()));
            put(2, 0.002f + 0.002f * std::fabs(urand()));
        }
    }
    return w;
}

}  // namespace jitllm::test
