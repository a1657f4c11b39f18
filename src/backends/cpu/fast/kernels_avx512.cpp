// AVX-512 forms of the fast products (fast_kernels.h): each function carries its target, so the
// file builds with the project's flags and its code runs only where cpu_has_avx512_vnni() says so.
//  - Q4_0 / Q8_0: four weight rows' blocks side by side in one register (a 128-bit lane a row),
//    the activation block's halves broadcast to every lane, integer dot products on 8-bit values
//    (VPDPBUSD; the weights unsigned, their offset folded in by XBlock::cc), one float multiply-add
//    a block with the two scales. Eight weight rows times up to four activation rows a pass.
//  - F16 / F32: sixteen columns a step with FMA, four weight rows times up to six activation rows.
// Every row's result is the same sequence of operations whatever the pass shape, so a row's bits
// do not depend on how many activation rows or threads share the product.
#include "backends/cpu/fast/fast_kernels.h"

#if defined(__x86_64__)
#include "backends/cpu/fast/avx512_util.h"

#include <algorithm>

#include "core/fp16.h"


namespace jitllm::cpu::fast::detail {
namespace {

// Bytes ahead of each weight row's current block fetched into the cache: eight rows are eight
// streams, more than the hardware prefetcher follows alone
constexpr size_t kPrefetchBytes = 512;

JITLLM_AVX512 inline __m512i load4x16(const uint8_t* const* rp, size_t off) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rp[0] + off)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rp[1] + off)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rp[2] + off)), 2);
    return _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rp[3] + off)), 3);
}

// Lanes 4q .. 4q + 3 of a summed as ((l0 + l1) + (l2 + l3)) into lane q of the result
JITLLM_AVX512 inline __m128 sum_quads(__m512 a) {
    __m512 t = _mm512_add_ps(a, _mm512_permute_ps(a, 0xB1));
    t = _mm512_add_ps(t, _mm512_permute_ps(t, 0x4E));
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), t));
}

// G groups of 4 weight rows (row k at rp[k]) times C activation rows (row c's blocks at x + c * nb);
// the first n_valid rows' results go to y[c * y_stride + k]
template <bool Q4, int G, int C>
JITLLM_AVX512 void q_tile(const uint8_t* const* rp, int64_t nb, const XBlock* x, float* y, size_t y_stride,
                          int n_valid) {
    constexpr size_t bb = Q4 ? 18 : 34;
    const __m512i m4 = _mm512_set1_epi8(0x0F), flip = _mm512_set1_epi8(char(0x80));
    const __m512i e0 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    const __m512i e1 = _mm512_set_epi32(7, 7, 7, 7, 6, 6, 6, 6, 5, 5, 5, 5, 4, 4, 4, 4);
    alignas(32) int32_t idx[8];
    for (int k = 0; k < 8; ++k) idx[k] = int32_t(rp[k < 4 * G ? k : 0] - rp[0]);
    const __m256i vindex = _mm256_load_si256(reinterpret_cast<const __m256i*>(idx));
    __m512 acc[C][G];
    for (int c = 0; c < C; ++c)
        for (int g = 0; g < G; ++g) acc[c][g] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const size_t off = size_t(b) * bb;
        __m512i lo[G], hi[G];
        for (int g = 0; g < G; ++g) {
            if constexpr (Q4) {
                const __m512i v = load4x16(rp + 4 * g, off + 2);
                lo[g] = _mm512_and_si512(v, m4);
                hi[g] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            } else {
                lo[g] = _mm512_xor_si512(load4x16(rp + 4 * g, off + 2), flip);
                hi[g] = _mm512_xor_si512(load4x16(rp + 4 * g, off + 18), flip);
            }
        }
        if ((b & 1) == 0)
            for (int k = 0; k < 4 * G; ++k) _mm_prefetch(reinterpret_cast<const char*>(rp[k] + off + kPrefetchBytes), _MM_HINT_T0);
        // the 4G rows' f16 scales (the low half of the 32 bits at each block's start)
        const __m256i dd = _mm256_i32gather_epi32(reinterpret_cast<const int*>(rp[0] + off), vindex, 1);
        const __m512 s8 = _mm512_castps256_ps512(_mm256_cvtph_ps(_mm256_cvtepi32_epi16(dd)));
        __m512 s[G];
        s[0] = _mm512_permutexvar_ps(e0, s8);
        if constexpr (G == 2) s[1] = _mm512_permutexvar_ps(e1, s8);
        for (int c = 0; c < C; ++c) {
            const XBlock* xb = x + size_t(c) * size_t(nb) + size_t(b);
            const __m512i xl = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(xb->q)));
            const __m512i xh = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(xb->q + 16)));
            const __m512i cc = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(xb->cc)));
            const __m512 dx = _mm512_set1_ps(xb->d);
            for (int g = 0; g < G; ++g) {
                const __m512i i = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(cc, lo[g], xl), hi[g], xh);
                acc[c][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), _mm512_mul_ps(s[g], dx), acc[c][g]);
            }
        }
    }
    for (int c = 0; c < C; ++c) {
        alignas(16) float r[8];
        for (int g = 0; g < G; ++g) _mm_store_ps(r + 4 * g, sum_quads(acc[c][g]));
        std::copy_n(r, n_valid, y + size_t(c) * y_stride);
    }
}

template <bool Q4, int G>
JITLLM_AVX512 void q_rows_g(const uint8_t* const* rp, int64_t nb, const XBlock* x, int n_x, float* y,
                            size_t y_stride, int n_valid) {
    int j = 0;
    for (; j + 4 <= n_x; j += 4)
        q_tile<Q4, G, 4>(rp, nb, x + size_t(j) * size_t(nb), y + size_t(j) * y_stride, y_stride, n_valid);
    x += size_t(j) * size_t(nb), y += size_t(j) * y_stride;
    switch (n_x - j) {
        case 3: return q_tile<Q4, G, 3>(rp, nb, x, y, y_stride, n_valid);
        case 2: return q_tile<Q4, G, 2>(rp, nb, x, y, y_stride, n_valid);
        case 1: return q_tile<Q4, G, 1>(rp, nb, x, y, y_stride, n_valid);
        default: return;
    }
}

// R weight rows (row k at rp[k], n elements, F16 or F32) times C activation rows; row k's result
// for activation row c to y[c * y_stride + k] for k < n_valid. (One loop with the last step's mask
// computed in it, and every row reduced before the valid ones are copied: acc is indexed by
// constants only and stays in registers.)
template <bool H, int R, int C>
JITLLM_AVX512 void f_tile(const uint8_t* const* rp, int64_t n, const float* X, size_t x_stride, float* y,
                          size_t y_stride, int n_valid) {
    __m512 acc[R][C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
    for (int64_t k = 0; k < n; k += 16) {
        const __mmask16 m = n - k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - k)) - 1);
        __m512 w[R];
        for (int r = 0; r < R; ++r) {
            if constexpr (H)
                w[r] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, rp[r] + 2 * size_t(k)));
            else
                w[r] = _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(rp[r]) + k);
        }
        for (int c = 0; c < C; ++c) {
            const __m512 xv = _mm512_maskz_loadu_ps(m, X + size_t(c) * x_stride + size_t(k));
            for (int r = 0; r < R; ++r) acc[r][c] = _mm512_fmadd_ps(w[r], xv, acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        float s[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) s[r] = sum16(acc[r][c]);
        std::copy_n(s, n_valid, y + size_t(c) * y_stride);
    }
}

template <bool H>
JITLLM_AVX512 void f_rows4(const uint8_t* const* rp, int64_t n, const float* X, size_t x_stride, int n_x, float* y,
                           size_t y_stride, int n_valid) {
    int j = 0;
    for (; j + 6 <= n_x; j += 6)
        f_tile<H, 4, 6>(rp, n, X + size_t(j) * x_stride, x_stride, y + size_t(j) * y_stride, y_stride, n_valid);
    X += size_t(j) * x_stride, y += size_t(j) * y_stride;
    switch (n_x - j) {
        case 5: return f_tile<H, 4, 5>(rp, n, X, x_stride, y, y_stride, n_valid);
        case 4: return f_tile<H, 4, 4>(rp, n, X, x_stride, y, y_stride, n_valid);
        case 3: return f_tile<H, 4, 3>(rp, n, X, x_stride, y, y_stride, n_valid);
        case 2: return f_tile<H, 4, 2>(rp, n, X, x_stride, y, y_stride, n_valid);
        case 1: return f_tile<H, 4, 1>(rp, n, X, x_stride, y, y_stride, n_valid);
        default: return;
    }
}

}  // namespace

bool cpu_has_avx512_vnni() {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("fma") && cpu_has_avx2_fma();
}

JITLLM_AVX512 void quantize_x_avx512(const float* x, int64_t nb, int off, XBlock* out) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    for (int64_t i = 0; i < nb; ++i) {
        const __m512 v0 = _mm512_loadu_ps(x + 32 * i), v1 = _mm512_loadu_ps(x + 32 * i + 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        // rounded to the nearest, ties to even (the default rounding mode)
        const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, _mm512_set1_ps(id)));
        const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, _mm512_set1_ps(id)));
        XBlock& o = out[i];
        _mm_store_si128(reinterpret_cast<__m128i*>(o.q), _mm512_cvtepi32_epi8(q0));
        _mm_store_si128(reinterpret_cast<__m128i*>(o.q + 16), _mm512_cvtepi32_epi8(q1));
        alignas(64) int32_t t[16];
        _mm512_store_si512(t, _mm512_add_epi32(q0, q1));
        for (int l = 0; l < 4; ++l) o.cc[l] = -off * ((t[4 * l] + t[4 * l + 1]) + (t[4 * l + 2] + t[4 * l + 3]));
        o.cc_all = (o.cc[0] + o.cc[1]) + (o.cc[2] + o.cc[3]);
        o.d = fp16_to_fp32(fp32_to_fp16(amax / 127.0f));
    }
}

JITLLM_AVX512 void q_rows_avx512(bool q4, const uint8_t* W, size_t stride, int r0, int r1, int64_t nb,
                                 const XBlock* x, int n_x, float* Y, size_t y_stride) {
    row_passes<8>(W, stride, r0, r1, [&](const uint8_t* const* rp, int r, int nr) {
        float* y = Y + r;
        if (nr > 4) {
            if (q4) q_rows_g<true, 2>(rp, nb, x, n_x, y, y_stride, nr);
            else q_rows_g<false, 2>(rp, nb, x, n_x, y, y_stride, nr);
        } else {
            if (q4) q_rows_g<true, 1>(rp, nb, x, n_x, y, y_stride, nr);
            else q_rows_g<false, 1>(rp, nb, x, n_x, y, y_stride, nr);
        }
    });
}

JITLLM_AVX512 void f_rows_avx512(bool f16, const uint8_t* W, size_t stride, int r0, int r1, int64_t n,
                                 const float* X, size_t x_stride, int n_x, float* Y, size_t y_stride) {
    row_passes<4>(W, stride, r0, r1, [&](const uint8_t* const* rp, int r, int nr) {
        if (f16) f_rows4<true>(rp, n, X, x_stride, n_x, Y + r, y_stride, nr);
        else f_rows4<false>(rp, n, X, x_stride, n_x, Y + r, y_stride, nr);
    });
}

}  // namespace jitllm::cpu::fast::detail

#else  // not x86-64: no AVX-512 forms

namespace jitllm::cpu::fast::detail {
bool cpu_has_avx512_vnni() { return false; }
void quantize_x_avx512(const float*, int64_t, int, XBlock*) {}
void q_rows_avx512(bool, const uint8_t*, size_t, int, int, int64_t, const XBlock*, int, float*, size_t) {}
void f_rows_avx512(bool, const uint8_t*, size_t, int, int, int64_t, const float*, size_t, int, float*, size_t) {}
}  // namespace jitllm::cpu::fast::detail

#endif
