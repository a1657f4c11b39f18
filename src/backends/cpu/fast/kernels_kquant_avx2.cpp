// AVX2 + FMA forms of the packed K-quant products (packed.h, fast_kernels.h), for x86-64 CPUs
// without AVX-512 VNNI: kernels_kquant_avx512.cpp's steps on half a group (8 rows, the first or
// second 32 bytes of each 64-byte run; a lane one row). The weights' unsigned values (Q4_K's
// nibbles, Q6_K's six bits: at most 63) times the activation's bytes go through VPMADDUBSW and
// VPMADDWD (no 16-bit pair can saturate), the sub-block sums times the rows' scales (VPMULLD), Q4_K's
// mins times the activation's sub-block sums through VPMADDWD (VPDPWSSD's sum): the same integer
// sums and float steps, so each result is the bits of the AVX-512 form's.
#include "backends/cpu/fast/fast_kernels.h"

#if defined(__x86_64__)
#include "backends/cpu/fast/avx2_util.h"

namespace jitllm::cpu::fast::detail {
namespace {

constexpr size_t kPrefetchAhead = 2048;

JITLLM_AVX2 inline __m256i load32(const uint8_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
// 8 bytes (one a row) widened to 32-bit lanes, unsigned / signed
JITLLM_AVX2 inline __m256i bytes_u32(const uint8_t* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
JITLLM_AVX2 inline __m256i bytes_i32(const uint8_t* p) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
JITLLM_AVX2 inline __m256 halves(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Block b of a packed group of kBlock-byte blocks; the first half's pass fetches ahead
template <size_t kBlock>
inline const uint8_t* group_block(const uint8_t* g, int64_t b, int hf) {
    const uint8_t* p = g + size_t(b) * kBlock;
    if (hf == 0) prefetch_lines(p, kPrefetchAhead, kBlock);
    return p;
}

// A block's integer sums into the C rows' results: acc[c] += isum[c] * (dw * activation row c's d)
template <int C>
JITLLM_AVX2 inline void add_block_sums(__m256* acc, const __m256i* isum, __m256 dw, const XBlockK* const* xb) {
    for (int c = 0; c < C; ++c)
        acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(dw, _mm256_set1_ps(xb[c]->d)), acc[c]);
}

// The tile's C rows of results, the first n_valid lanes of each
template <int C>
JITLLM_AVX2 inline void store_rows(const __m256* acc, float* y, size_t y_stride, int n_valid) {
    for (int c = 0; c < C; ++c) _mm256_maskstore_ps(y + size_t(c) * y_stride, lanes_mask(n_valid), acc[c]);
}

// Half hf of a packed Q4_K group times C activation rows
template <int C>
JITLLM_AVX2 void q4k_tile(const uint8_t* g, int hf, int64_t nb, const XBlockK* x, float* y, size_t y_stride,
                          int n_valid) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const size_t h8 = 8 * size_t(hf), h32 = 32 * size_t(hf);
    __m256 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p = group_block<kQ4kGroupBlock>(g, b, hf);
        const __m256 dw = halves(p + 2304 + 2 * h8), dmin = halves(p + 2336 + 2 * h8);
        const XBlockK* xb[C];
        __m256i isum[C];
        for (int c = 0; c < C; ++c) {
            xb[c] = x + size_t(c) * size_t(nb) + size_t(b);
            // the mins (pairs of 16-bit values a row) times the activation's sub-block sums
            __m256i im = _mm256_setzero_si256();
            for (int i = 0; i < 4; ++i) {
                const auto* mins = reinterpret_cast<const __m128i*>(p + 2176 + 32 * i + 2 * h8);
                const __m256i mp = _mm256_cvtepu8_epi16(_mm_load_si128(mins));
                im = _mm256_add_epi32(im, _mm256_madd_epi16(mp, _mm256_set1_epi32(xb[c]->off[i])));
            }
            acc[c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(im), _mm256_mul_ps(dmin, _mm256_set1_ps(xb[c]->d)), acc[c]);
            isum[c] = _mm256_setzero_si256();
        }
        for (int h = 0; h < 4; ++h) {
            const __m256i sa = bytes_u32(p + 2048 + 16 * (2 * h) + h8);
            const __m256i sb = bytes_u32(p + 2048 + 16 * (2 * h + 1) + h8);
            for (int c = 0; c < C; ++c) {
                const int8_t* q = xb[c]->q + 64 * h;
                // the sub-blocks' pair sums in 16 bits (eight of at most 2 * 15 * 127 fit), then in 32
                __m256i ia = _mm256_setzero_si256(), ib = ia;
                for (int j = 0; j < 8; ++j) {
                    const __m256i v = load32(p + 64 * (8 * h + j) + h32);
                    const __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                    ia = _mm256_add_epi16(ia, _mm256_maddubs_epi16(lo, bcast4_256(q + 4 * j)));
                    ib = _mm256_add_epi16(ib, _mm256_maddubs_epi16(hi, bcast4_256(q + 32 + 4 * j)));
                }
                ia = _mm256_madd_epi16(ia, _mm256_set1_epi16(1));
                ib = _mm256_madd_epi16(ib, _mm256_set1_epi16(1));
                const __m256i scaled = _mm256_add_epi32(_mm256_mullo_epi32(ia, sa), _mm256_mullo_epi32(ib, sb));
                isum[c] = _mm256_add_epi32(isum[c], scaled);
            }
        }
        add_block_sums<C>(acc, isum, dw, xb);
    }
    store_rows<C>(acc, y, y_stride, n_valid);
}

// Half hf of a packed Q6_K group times C activation rows
template <int C>
JITLLM_AVX2 void q6k_tile(const uint8_t* g, int hf, int64_t nb, const XBlockK* x, float* y, size_t y_stride,
                          int n_valid) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
    const size_t h8 = 8 * size_t(hf), h32 = 32 * size_t(hf);
    __m256 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p = group_block<kQ6kGroupBlock>(g, b, hf);
        const XBlockK* xb[C];
        __m256i isum[C];
        for (int c = 0; c < C; ++c) xb[c] = x + size_t(c) * size_t(nb) + size_t(b), isum[c] = _mm256_setzero_si256();
        // as the AVX-512 form: half n, j = 4 jj + t; e[part][t] the values 128n + 32 part + 4j ..
        for (int n = 0; n < 2; ++n)
            for (int jj = 0; jj < 2; ++jj) {
                __m256i e[4][4];
                for (int t = 0; t < 4; ++t) {
                    const int j = 4 * jj + t;
                    const __m256i la = load32(p + 64 * (16 * n + j) + h32);
                    const __m256i lb = load32(p + 64 * (16 * n + 8 + j) + h32);
                    const __m256i qh = load32(p + 2048 + 64 * (8 * n + j) + h32);
                    e[0][t] = _mm256_or_si256(_mm256_and_si256(la, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m2));
                    e[1][t] = _mm256_or_si256(_mm256_and_si256(lb, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m2));
                    e[2][t] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4), _mm256_and_si256(qh, m2));
                    e[3][t] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
                                              _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2));
                }
                for (int part = 0; part < 4; ++part) {
                    const int s = 8 * n + 2 * part + jj;
                    const __m256i sv = bytes_i32(p + 3072 + 16 * s + h8);
                    for (int c = 0; c < C; ++c) {
                        const int8_t* q = xb[c]->q + 128 * n + 32 * part + 16 * jj;
                        __m256i is = _mm256_set1_epi32(xb[c]->off[s]);
                        for (int t = 0; t < 4; ++t) is = dpbusd8(is, e[part][t], bcast4_256(q + 4 * t));
                        isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(is, sv));
                    }
                }
            }
        const __m256 dw = halves(p + 3328 + 2 * h8);
        add_block_sums<C>(acc, isum, dw, xb);
    }
    store_rows<C>(acc, y, y_stride, n_valid);
}

}  // namespace

namespace {

JITLLM_AVX2 float amax256(const float* xb) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 32; ++k) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(xb + 8 * k)));
    return hmax8(amax);
}

// (q saturated to int8 as the AVX-512 form's narrowing; the sum of the values before it)
JITLLM_AVX2 int32_t q16(const float* x, float iscale, int8_t* q) {
    const __m256 s = _mm256_set1_ps(iscale);
    const __m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), s));
    const __m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), s));
    const __m128i w = _mm_packs_epi16(_mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1)),
                                      _mm_packs_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), w);
    return hsum8_epi32(_mm256_add_epi32(a, b));
}

}  // namespace

JITLLM_AVX2 void quantize_xk_avx2(const float* x, int64_t nb, bool q4k, XBlockK* out) {
    quantize_xk_with(x, nb, q4k, out, amax256, q16);
}

JITLLM_AVX2 void kp_groups_avx2(bool q4k, const uint8_t* P, size_t group_bytes, int n_groups, int64_t nb,
                                const XBlockK* x, int n_x, float* Y, size_t y_stride, int n_rows) {
    tile_passes<8, 4>(P, group_bytes, n_groups, n_rows, x, nb, n_x, Y, y_stride,
                      [&](const uint8_t* g, int hf, const XBlockK* xj, float* yj, int left, auto c) {
                          if (q4k) q4k_tile<decltype(c)::value>(g, hf, nb, xj, yj, y_stride, left);
                          else q6k_tile<decltype(c)::value>(g, hf, nb, xj, yj, y_stride, left);
                      });
}

}  // namespace jitllm::cpu::fast::detail

#else  // not x86-64: no AVX2 forms

namespace jitllm::cpu::fast::detail {
void quantize_xk_avx2(const float*, int64_t, bool, XBlockK*) {}
void kp_groups_avx2(bool, const uint8_t*, size_t, int, int64_t, const XBlockK*, int, float*, size_t, int) {}
}  // namespace jitllm::cpu::fast::detail

#endif
