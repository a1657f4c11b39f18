// Weight matrices in the fast kernels' packed layout, made once when a model loads (the CPU
// backend packs its products' weights). Rows go in groups of 16, so that one vector lane holds one
// row's products whole (no sums across lanes) and a group streams from one run of memory instead
// of 16 rows. F16 / BF16 / F32: value k of the 16 rows side by side, k after k (one load: a column of
// the group). Q4_0 / Q8_0: for each block of 32 values, the group's quantized values four bytes a
// row at a time (one aligned 64-byte load holds the same four bytes of each of the 16 rows, for
// VPDPBUSD), block after block, then the blocks' scales (the 16 rows' f16 scales side by side).
// Q4_K / Q6_K: for each block of 256 values, the quantized bytes four a row at a time likewise,
// then the sub-blocks' scales (and Q4_K's mins) unpacked to a byte a row, then the rows' block
// scales (packed.cpp pack_q4k, pack_q6k). Rows past the matrix's last (its last group) are zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "backends/cpu/fast/fast_ops.h"
#include "core/dtype.h"

namespace jitllm::cpu::fast {

struct PackedMatrix {
    GgmlType t;
    int rows, cols;
    size_t group_bytes;  // one group of 16 rows, all its blocks
    std::unique_ptr<uint8_t[], void (*)(void*)> data{nullptr, nullptr};
};

class PackedWeights {
public:
    // Whether weights of type t have a packed form on this CPU
    static bool packs(GgmlType t);
    // Packs the matrix at W (rows of cols values, row_stride bytes apart) unless it is packed
    // already or has no packed form (or fewer than 16 rows); keyed by W; on n_threads threads.
    void add(GgmlType t, const void* W, size_t row_stride, int rows, int cols, int n_threads);
    // The packed form of the matrix at W, or null
    const PackedMatrix* find(const void* W) const;
    size_t bytes() const { return bytes_; }

private:
    std::unordered_map<const void*, PackedMatrix> m_;
    size_t bytes_ = 0;
};

// Rows [r0, r0 + n) of the packed matrix p times n_x activation rows, as matmul() (fast_ops.h).
// Returns false (nothing written) where r0 is not a multiple of 16.
bool matmul_packed(const PackedMatrix& p, int r0, int n, const float* X, size_t x_stride, int n_x, float* Y,
                   size_t y_stride, int n_threads);

// One of the products of a fused call: rows [r0, r0 + n) of p, activation row j's results at
// Y + j * y_stride
struct PackedProduct {
    const PackedMatrix* p;
    int r0, n;
    float* Y;
    size_t y_stride;
};
// Several products of the same activation rows (q / k / v, gate / up) as one job of the team: the
// activations prepared once, the groups of all of them split over the threads together; each
// result the bits of its own matmul_packed. Returns false (nothing written) unless every product
// has the type and the columns of the first and an r0 a multiple of 16 (at most kMaxFused).
constexpr int kMaxFused = 4;
bool matmul_packed(const PackedProduct* prods, int count, const float* X, size_t x_stride, int n_x, int n_threads);
// The same with the forms of the instruction set isa (one this CPU has) instead of fast_isa()'s:
// the forms compared with each other (every form gives the same bits); false for FastIsa::None
bool matmul_packed(FastIsa isa, const PackedProduct* prods, int count, const float* X, size_t x_stride, int n_x,
                   int n_threads);

}  // namespace jitllm::cpu::fast
