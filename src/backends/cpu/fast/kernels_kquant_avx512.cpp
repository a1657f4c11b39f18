// AVX-512 forms of the fast K-quant products (fast_kernels.h): Q4_K and Q6_K weights (the types of
// a Q4_K_M file) times activations quantized to 256-value blocks (XBlockK, llama.cpp's Q8_K).
// Per weight block, 64 weight bytes a register: unsigned 4- or 6-bit values times the signed
// activation bytes into 16-bit pair sums (VPMADDUBSW), those times the sub-blocks' scales into
// 32-bit sums (VPDPWSSD), one float multiply-add a block with the two scales. The weights' offsets
// (Q4_K's mins, Q6_K's 32) are products of per-group weight terms and the activations' group sums
// (XBlockK::ms), a float multiply-add a block. One weight row times up to four activation rows a
// pass; a row's result is the same sequence of operations whatever the pass shape.
#include "backends/cpu/fast/fast_kernels.h"

#if defined(__x86_64__)
#include "backends/cpu/fast/avx512_util.h"

#include <cstring>

namespace jitllm::cpu::fast::detail {
namespace {

constexpr size_t kQ4kBytes = 144, kQ6kBytes = 210;

// The 32 16-bit lanes of a pair-sum vector: lanes [0, 16) take scale a, lanes [16, 32) scale b
// (q4k_tile); lanes [8k, 8k + 8) take scale a + k for k < 4 (q6k_tile)
JITLLM_AVX512 inline __m512i lane_index(int a, int b, int run) {
    alignas(64) int16_t t[32];
    for (int i = 0; i < 32; ++i) t[i] = int16_t(run == 16 ? (i < 16 ? a : b) : a + i / run);
    return _mm512_load_si512(t);
}
JITLLM_AVX512 inline __m512i halves_index(int a, int b) { return lane_index(a, b, 16); }
JITLLM_AVX512 inline __m512i quarters_index(int a) { return lane_index(a, 0, 8); }

JITLLM_AVX512 inline __m512i load64(const void* p) { return _mm512_loadu_si512(p); }

// One Q4_K row (nb blocks at w) times C activation rows (row c's blocks at x + c * nb)
template <int C>
JITLLM_AVX512 void q4k_tile(const uint8_t* w, int64_t nb, const XBlockK* x, float* y, size_t y_stride) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i i_lo0 = halves_index(0, 2), i_hi0 = halves_index(1, 3);
    const __m512i i_lo1 = halves_index(4, 6), i_hi1 = halves_index(5, 7);
    __m512 acc[C];
    __m256 accm[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps(), accm[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = w + size_t(b) * kQ4kBytes;
        _mm_prefetch(reinterpret_cast<const char*>(blk + 4 * kQ4kBytes), _MM_HINT_T0);
        uint16_t h[2];
        uint32_t u[3];
        std::memcpy(h, blk, 4);
        std::memcpy(u, blk + 4, 12);
        // the 6-bit scales and mins of the 8 sub-blocks (BlockQ4_K's packing), one byte each
        const uint64_t sc8 = uint64_t(u[0] & 0x3f3f3f3fu) |
                             uint64_t((u[2] & 0x0f0f0f0fu) | ((u[0] >> 2) & 0x30303030u)) << 32;
        const uint64_t m8 = uint64_t(u[1] & 0x3f3f3f3fu) |
                            uint64_t(((u[2] >> 4) & 0x0f0f0f0fu) | ((u[1] >> 2) & 0x30303030u)) << 32;
        const __m512i sc16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(sc8))));
        const __m512i s_lo0 = _mm512_permutexvar_epi16(i_lo0, sc16), s_hi0 = _mm512_permutexvar_epi16(i_hi0, sc16);
        const __m512i s_lo1 = _mm512_permutexvar_epi16(i_lo1, sc16), s_hi1 = _mm512_permutexvar_epi16(i_hi1, sc16);
        const __m256 wm = _mm256_mul_ps(_mm256_set1_ps(-_cvtsh_ss(h[1])),
                                        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(m8)))));
        const __m512i v0 = load64(blk + 16), v1 = load64(blk + 80);
        const __m512i lo0 = _mm512_and_si512(v0, m4), hi0 = _mm512_and_si512(_mm512_srli_epi16(v0, 4), m4);
        const __m512i lo1 = _mm512_and_si512(v1, m4), hi1 = _mm512_and_si512(_mm512_srli_epi16(v1, 4), m4);
        const __m512 dw = _mm512_set1_ps(_cvtsh_ss(h[0]));
        for (int c = 0; c < C; ++c) {
            const XBlockK& xb = x[size_t(c) * size_t(nb) + size_t(b)];
            __m512i ia = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_maddubs_epi16(lo0, load64(xb.q)), s_lo0);
            ia = _mm512_dpwssd_epi32(ia, _mm512_maddubs_epi16(hi0, load64(xb.q + 64)), s_hi0);
            ia = _mm512_dpwssd_epi32(ia, _mm512_maddubs_epi16(lo1, load64(xb.q + 128)), s_lo1);
            ia = _mm512_dpwssd_epi32(ia, _mm512_maddubs_epi16(hi1, load64(xb.q + 192)), s_hi1);
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia), _mm512_mul_ps(dw, _mm512_set1_ps(xb.d)), acc[c]);
            accm[c] = _mm256_fmadd_ps(wm, _mm256_load_ps(xb.ms), accm[c]);
        }
    }
    for (int c = 0; c < C; ++c) y[size_t(c) * y_stride] = sum16(acc[c]) + sum8(accm[c]);
}

// One Q6_K row times C activation rows, as q4k_tile
template <int C>
JITLLM_AVX512 void q6k_tile(const uint8_t* w, int64_t nb, const XBlockK* x, float* y, size_t y_stride) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30);
    const __m512i i0 = quarters_index(0), i1 = quarters_index(4), i2 = quarters_index(8), i3 = quarters_index(12);
    __m512 acc[C], accm[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps(), accm[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = w + size_t(b) * kQ6kBytes;
        _mm_prefetch(reinterpret_cast<const char*>(blk + 3 * kQ6kBytes), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(blk + 3 * kQ6kBytes + 64), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(blk + 3 * kQ6kBytes + 128), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(blk + 3 * kQ6kBytes + 192), _MM_HINT_T0);
        uint16_t dh;
        std::memcpy(&dh, blk + 208, 2);
        const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
        const __m512i sc16 = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(sc8));
        const __m512i s0 = _mm512_permutexvar_epi16(i0, sc16), s1 = _mm512_permutexvar_epi16(i1, sc16);
        const __m512i s2 = _mm512_permutexvar_epi16(i2, sc16), s3 = _mm512_permutexvar_epi16(i3, sc16);
        const float d = _cvtsh_ss(dh);
        const __m512 wm = _mm512_mul_ps(_mm512_set1_ps(-32.0f * d), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc8)));
        // half n: the low 4 bits from ql[64n, 64n + 64), the high 2 from qh[32n, 32n + 32) (BlockQ6_K)
        __m512i wl[2], wh[2];
        for (int n = 0; n < 2; ++n) {
            const __m512i l = load64(blk + 64 * n);
            const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * n));
            const __m512i qx = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 2), 1);
            wl[n] = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_and_si512(_mm512_slli_epi16(qx, 4), m2));
            wh[n] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), _mm512_and_si512(qx, m2));
        }
        const __m512 dw = _mm512_set1_ps(d);
        for (int c = 0; c < C; ++c) {
            const XBlockK& xb = x[size_t(c) * size_t(nb) + size_t(b)];
            __m512i ia = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_maddubs_epi16(wl[0], load64(xb.q)), s0);
            ia = _mm512_dpwssd_epi32(ia, _mm512_maddubs_epi16(wh[0], load64(xb.q + 64)), s1);
            ia = _mm512_dpwssd_epi32(ia, _mm512_maddubs_epi16(wl[1], load64(xb.q + 128)), s2);
            ia = _mm512_dpwssd_epi32(ia, _mm512_maddubs_epi16(wh[1], load64(xb.q + 192)), s3);
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia), _mm512_mul_ps(dw, _mm512_set1_ps(xb.d)), acc[c]);
            accm[c] = _mm512_fmadd_ps(wm, _mm512_load_ps(xb.ms), accm[c]);
        }
    }
    for (int c = 0; c < C; ++c) y[size_t(c) * y_stride] = sum16(acc[c]) + sum16(accm[c]);
}

template <bool Q4K, int C>
JITLLM_AVX512 inline void k_tile(const uint8_t* w, int64_t nb, const XBlockK* x, float* y, size_t y_stride) {
    if constexpr (Q4K) q4k_tile<C>(w, nb, x, y, y_stride);
    else q6k_tile<C>(w, nb, x, y, y_stride);
}

template <bool Q4K>
JITLLM_AVX512 void k_rows(const uint8_t* W, size_t stride, int r0, int r1, int64_t nb, const XBlockK* x, int n_x,
                          float* Y, size_t y_stride) {
    for (int r = r0; r < r1; ++r) {
        const uint8_t* w = W + size_t(r) * stride;
        int j = 0;
        for (; j + 4 <= n_x; j += 4)
            k_tile<Q4K, 4>(w, nb, x + size_t(j) * size_t(nb), Y + size_t(j) * y_stride + r, y_stride);
        const XBlockK* xj = x + size_t(j) * size_t(nb);
        float* yj = Y + size_t(j) * y_stride + r;
        switch (n_x - j) {
            case 3: k_tile<Q4K, 3>(w, nb, xj, yj, y_stride); break;
            case 2: k_tile<Q4K, 2>(w, nb, xj, yj, y_stride); break;
            case 1: k_tile<Q4K, 1>(w, nb, xj, yj, y_stride); break;
            default: break;
        }
    }
}

}  // namespace

JITLLM_AVX512 void quantize_xk_avx512(const float* x, int64_t nb, bool q4k, XBlockK* out) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    for (int64_t i = 0; i < nb; ++i) {
        const float* xb = x + 256 * i;
        XBlockK& o = out[i];
        __m512 amax = _mm512_setzero_ps();
        for (int k = 0; k < 16; ++k) amax = _mm512_max_ps(amax, _mm512_andnot_ps(sign, _mm512_loadu_ps(xb + 16 * k)));
        const float am = _mm512_reduce_max_ps(amax);
        if (am == 0.0f) {
            std::memset(&o, 0, sizeof(o));
            continue;
        }
        // the first value of the largest magnitude, with its sign
        float mx = am;
        for (int k = 0; k < 16; ++k) {
            const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_andnot_ps(sign, _mm512_loadu_ps(xb + 16 * k)),
                                                     _mm512_set1_ps(am), _CMP_EQ_OQ);
            if (hit) {
                mx = xb[16 * k + __builtin_ctz(hit)];
                break;
            }
        }
        const float iscale = -127.0f / mx;
        o.d = 1.0f / iscale;
        int32_t s16[16];
        for (int k = 0; k < 16; ++k) {
            const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + 16 * k), _mm512_set1_ps(iscale)));
            s16[k] = _mm512_reduce_add_epi32(q);
            // Q4_K's order: of each 128 values, the 32-value runs 0, 2, 1, 3
            const int run = (k >> 1) & 3, h = k >> 3;
            const int at = q4k ? 128 * h + 32 * ((run & 1) * 2 + (run >> 1)) + 16 * (k & 1) : 16 * k;
            _mm_store_si128(reinterpret_cast<__m128i*>(o.q + at), _mm512_cvtsepi32_epi8(q));
        }
        if (q4k)
            for (int j = 0; j < 8; ++j) o.ms[j] = o.d * float(s16[2 * j] + s16[2 * j + 1]), o.ms[8 + j] = 0.0f;
        else
            for (int j = 0; j < 16; ++j) o.ms[j] = o.d * float(s16[j]);
    }
}

JITLLM_AVX512 void k_rows_avx512(bool q4k, const uint8_t* W, size_t stride, int r0, int r1, int64_t nb,
                                 const XBlockK* x, int n_x, float* Y, size_t y_stride) {
    if (q4k) k_rows<true>(W, stride, r0, r1, nb, x, n_x, Y, y_stride);
    else k_rows<false>(W, stride, r0, r1, nb, x, n_x, Y, y_stride);
}

}  // namespace jitllm::cpu::fast::detail

#else  // not x86-64: no AVX-512 forms

namespace jitllm::cpu::fast::detail {
void quantize_xk_avx512(const float*, int64_t, bool, XBlockK*) {}
void k_rows_avx512(bool, const uint8_t*, size_t, int, int, int64_t, const XBlockK*, int, float*, size_t) {}
}  // namespace jitllm::cpu::fast::detail

#endif
