// CPU reference for every supported tensor type: dequantize, dot with a float vector,
// quantize. This is the numerical specification of each block layout (matches ggml's
// ggml-common.h / ggml-quants.c layouts); GPU kernels are tested against it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace jitllm {

// dst[0..n) = dequantized src row. PRECOND: n % block_size(t) == 0, t supported.
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);

// sum_i dequant(row)[i] * x[i], accumulated in float (double for nothing: same order as a
// blocked loop). PRECOND as above.
float dot_row(GgmlType t, const void* row, const float* x, int64_t n);

// Quantize n floats into dst (row_bytes(t, n) bytes). Supported: F32, F16, BF16, Q8_0, Q4_0
// (and more where implemented; see can_quantize). PRECOND: n % block_size(t) == 0.
void quantize_row(GgmlType t, const float* src, void* dst, int64_t n);
bool can_quantize(GgmlType t);

}  // namespace jitllm
