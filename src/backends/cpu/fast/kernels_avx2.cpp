// The unpacked F16 / F32 products (fast_kernels.h: matrices of fewer than 16 rows, which are not
// packed) in AVX2 + FMA, for every fast instruction set: eight columns a step with FMA, four
// weight rows times up to three activation rows a pass, each row's sum in the same order whatever
// the pass shape.
#include "backends/cpu/fast/fast_kernels.h"

#if defined(__x86_64__)
#include <cpuid.h>

#include <algorithm>

#include "backends/cpu/fast/avx2_util.h"

namespace jitllm::cpu::fast::detail {
namespace {

// Eight values at p as floats (F16 or F32)
template <bool H>
JITLLM_AVX2 inline __m256 load8(const uint8_t* p) {
    if constexpr (H) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    else return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
}

// R weight rows (row k at rp[k]) times C activation rows; row k's result for activation row c to
// y[c * y_stride + k] for k < n_valid. The last n % 8 values of each row come from zero-padded
// copies, read by the same loop body; every row is reduced before the valid ones are copied (acc
// indexed by constants only: it stays in registers).
template <bool H, int R, int C>
JITLLM_AVX2 void f_tile(const uint8_t* const* rp, int64_t n, const float* X, size_t x_stride, float* y,
                        size_t y_stride, int n_valid) {
    constexpr size_t kEs = H ? 2 : 4;
    const int64_t full = n & ~int64_t(7);
    alignas(32) uint8_t wt[R][32] = {};
    alignas(32) float xt[C][8] = {};
    for (int r = 0; r < R; ++r) std::copy_n(rp[r] + size_t(full) * kEs, size_t(n - full) * kEs, wt[r]);
    for (int c = 0; c < C; ++c) std::copy_n(X + size_t(c) * x_stride + size_t(full), size_t(n - full), xt[c]);
    __m256 acc[R][C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    for (int64_t k = 0; k < n; k += 8) {
        const bool tail = k == full;
        __m256 w[R];
        for (int r = 0; r < R; ++r) w[r] = load8<H>(tail ? wt[r] : rp[r] + size_t(k) * kEs);
        for (int c = 0; c < C; ++c) {
            const __m256 xv = _mm256_loadu_ps(tail ? xt[c] : X + size_t(c) * x_stride + size_t(k));
            for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(w[r], xv, acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        float s[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) s[r] = hsum8(acc[r][c]);
        std::copy_n(s, n_valid, y + size_t(c) * y_stride);
    }
}

template <bool H>
JITLLM_AVX2 void f_rows4(const uint8_t* const* rp, int64_t n, const float* X, size_t x_stride, int n_x, float* y,
                         size_t y_stride, int n_valid) {
    passes<3>(n_x, [&](int j, auto c) {
        f_tile<H, 4, decltype(c)::value>(rp, n, X + size_t(j) * x_stride, x_stride, y + size_t(j) * y_stride, y_stride,
                                         n_valid);
    });
}

}  // namespace

bool cpu_has_avx2_fma() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
}

JITLLM_AVX2 void f_rows_avx2(bool f16, const uint8_t* W, size_t stride, int r0, int r1, int64_t n,
                             const float* X, size_t x_stride, int n_x, float* Y, size_t y_stride) {
    row_passes<4>(W, stride, r0, r1, [&](const uint8_t* const* rp, int r, int nr) {
        if (f16) f_rows4<true>(rp, n, X, x_stride, n_x, Y + r, y_stride, nr);
        else f_rows4<false>(rp, n, X, x_stride, n_x, Y + r, y_stride, nr);
    });
}

}  // namespace jitllm::cpu::fast::detail

#else  // not x86-64: no AVX2 forms

namespace jitllm::cpu::fast::detail {
bool cpu_has_avx2_fma() { return false; }
void f_rows_avx2(bool, const uint8_t*, size_t, int, int, int64_t, const float*, size_t, int, float*, size_t) {}
}  // namespace jitllm::cpu::fast::detail

#endif
