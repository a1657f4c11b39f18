// Internal to src/quant: the instruction-set forms of quant.cpp's products (quant_x86.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace jitllm::detail {

// Whether this CPU runs dot_rows_act_q8_avx2 (AVX2 and F16C).
bool cpu_has_avx2();

// The rows of dot_rows_act_q8 (q4: Q4_0, else Q8_0; nb blocks a row) in groups of 8, for n_x
// activation rows (row j's q at q + j * nb * 32, d at d + j * nb, sx8 at sx8 + j * nb, y at
// y + j * y_stride), the same bits as the scalar form; sx8[i] = 8 * the sum of x's block i (Q4_0
// only). Returns the weight rows done (a multiple of 8): the caller does the rest. PRECOND:
// cpu_has_avx2().
int64_t dot_rows_act_q8_avx2(bool q4, const uint8_t* base, size_t stride, int64_t n_rows, const int8_t* q,
                             const float* d, const int32_t* sx8, int64_t nb, float* y, int n_x, size_t y_stride);

// dot_rows of F16 rows for n_x activation rows (row j at x + j * x_stride, its results at
// y + j * y_stride): quant.cpp dot_impl<DecF16>'s bits (its 8 lanes one vector, F16C conversions,
// each shared by up to 4 rows). PRECOND: cpu_has_avx2().
void dot_rows_f16_avx2(const uint8_t* mat, size_t stride, int64_t n_rows, const float* x, size_t x_stride, int n_x,
                       int64_t n, float* y, size_t y_stride);

}  // namespace jitllm::detail
