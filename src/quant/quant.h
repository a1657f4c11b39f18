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

// sum_i dequant(row)[i] * x[i], accumulated in float: 8 lanes (element i in lane i % 8) summed
// pairwise at the end (a plain-type row's last n % 32 products added after), so it equals an
// exact dot of dequantize_row's output up to float rounding, not bit for bit. PRECOND as above.
float dot_row(GgmlType t, const void* row, const float* x, int64_t n);

// y[r] = dot_row(row r, x, n) for r in [0, n_rows); row r starts at mat + r*row_stride_bytes.
// The CPU matrix-vector product W (n_rows, n) @ x (n,) -> y (n_rows,). Single-threaded: the
// caller splits rows across threads. PRECOND as dot_row.
void dot_rows(GgmlType t, const void* mat, size_t row_stride_bytes, int64_t n_rows,
              const float* x, int64_t n, float* y);

// Activations of Q4_0 / Q8_0 products (llama.cpp's CPU numerics, which its golden logits come
// from): x is quantized to Q8_0 blocks, 32 int8 values q = roundf(x / d) with d = max|x| / 127
// (quantize_row(Q8_0)'s rule; the scale kept is d rounded to f16, as a Q8_0 block stores it),
// and each weight block contributes (weight scale * activation scale) * (integer sum of the
// block's quant products), summed over the blocks in order in float. The CUDA gemv computes
// the same sums (dp4a); they agree up to the float summation order.
bool act_q8_type(GgmlType t);  // Q4_0, Q8_0
// q[0..n) and d[0..n/32) from x[0..n). PRECOND: n % 32 == 0.
void quantize_act_q8(const float* x, int64_t n, int8_t* q, float* d);
// y[r] = the product above for rows r in [0, n_rows) (layout as dot_rows).
// PRECOND: act_q8_type(t), n % 32 == 0; q, d from quantize_act_q8.
void dot_rows_act_q8(GgmlType t, const void* mat, size_t row_stride_bytes, int64_t n_rows,
                     const int8_t* q, const float* d, int64_t n, float* y);

// The instruction set dot_rows and dot_rows_act_q8 run with: Avx2 (dot_rows: its loops compiled
// for AVX2; dot_rows_act_q8: 8 rows a pass, quant_x86.cpp) where the CPU has AVX2 and F16C, Scalar otherwise or with the environment's JITLLM_CPU_ISA=scalar. Every form
// gives the scalar form's bits (tests/unit/quant_isa_test.cpp).
enum class CpuIsa { Scalar, Avx2 };
CpuIsa cpu_isa();
const char* cpu_isa_name(CpuIsa isa);
bool cpu_has_isa(CpuIsa isa);  // whether this CPU runs the form
// dot_rows for n_x activation rows (row j at x + j * x_stride floats, its results at y + j * y_stride):
// each row the bits dot_rows gives it alone (the Avx2 form converts each F16 weight once for up to 4)
void dot_rows_batch(GgmlType t, const void* mat, size_t row_stride_bytes, int64_t n_rows, const float* x,
                    size_t x_stride, int n_x, int64_t n, float* y, size_t y_stride);
// dot_rows_batch in a given form (Avx2: the same loops compiled for AVX2, every type)
void dot_rows_isa(CpuIsa isa, GgmlType t, const void* mat, size_t row_stride_bytes, int64_t n_rows,
                  const float* x, size_t x_stride, int n_x, int64_t n, float* y, size_t y_stride);
// dot_rows_act_q8 for n_x activation rows (row j's q at q + j * n, its d at d + j * n / 32, its
// y at y + j * y_stride): each row the bits dot_rows_act_q8 gives it alone; the Avx2 form unpacks
// each weight block once for up to 4 rows (the CPU's batch steps: cpu::matmul).
void dot_rows_act_q8_batch(GgmlType t, const void* mat, size_t row_stride_bytes, int64_t n_rows, const int8_t* q,
                           const float* d, int n_x, int64_t n, float* y, size_t y_stride, const int32_t* sx8 = nullptr);
// dot_rows_act_q8_batch in a given form (tests, comparisons). PRECOND: isa is Scalar or the CPU has it.
// sx8: null, or act_q8_block_sums8 of the n_x rows (Q4_0's AVX2 form uses them; computed here if null)
void dot_rows_act_q8_isa(CpuIsa isa, GgmlType t, const void* mat, size_t row_stride_bytes, int64_t n_rows,
                         const int8_t* q, const float* d, int n_x, int64_t n, float* y, size_t y_stride,
                         const int32_t* sx8 = nullptr);
// 8 * the sum of each 32-value block of n_x activation rows of n int8 values (row j at q + j * n; its
// n / 32 sums at sx8 + j * n / 32): what Q4_0's AVX2 products subtract for the nibbles' offset of 8.
// cpu::matmul computes them once for all its tiles
void act_q8_block_sums8(const int8_t* q, int n_x, int64_t n, int32_t* sx8);

// Quantize n floats into dst (row_bytes(t, n) bytes) exactly as ggml's reference quantizers
// (quantize_row_*_ref, what llama-quantize uses without an imatrix) do. Supported: F32, F16,
// BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (see can_quantize). PRECOND: n % block_size(t) == 0.
void quantize_row(GgmlType t, const float* src, void* dst, int64_t n);
bool can_quantize(GgmlType t);

// The split device layout of Q4_0 / Q8_0 rows (CUDA gate weights.layout=split): a row is its
// blocks' quant bytes (16 per Q4_0 block, 32 per Q8_0 block, each block's bytes in GGUF order)
// followed by the blocks' f16 scales, in block order. Same bytes per row as the GGUF layout;
// with cols % 256 == 0 and a 16-byte aligned base both runs of every row are 16-byte aligned.
bool split_layout_type(GgmlType t);
// dst[rows x row_bytes] = src rows in the split layout (no element changes value).
// PRECOND: split_layout_type(t), cols % 32 == 0, src and dst do not overlap.
void repack_split_rows(GgmlType t, const void* src, void* dst, int64_t rows, int64_t cols);
// The inverse (tests; the GPU never converts back).
void unpack_split_rows(GgmlType t, const void* src, void* dst, int64_t rows, int64_t cols);

}  // namespace jitllm
