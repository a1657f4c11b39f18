// AVX-512 forms of the packed K-quant products (packed.h, fast_kernels.h): Q4_K and Q6_K weights
// (the types of a Q4_K_M file) times activations quantized to 256-value blocks (XBlockK,
// llama.cpp's Q8_K). A group of 16 weight rows times up to 4 activation rows a pass; a vector lane
// is one row. Per 256-value block, the weights' unsigned values (Q4_K's nibbles, Q6_K's 4 + 2
// bits) meet the activation's bytes four at a time (VPDPBUSD) into one 32-bit sum a sub-block,
// which is multiplied by the row's sub-block scale (VPMULLD) and added up: the block's integer sum,
// exact. Q6_K's offset of 32 starts each sub-block's sum (XBlockK::off); Q4_K's mins are a second
// integer sum, the mins times the activation's sub-block sums (VPDPWSSD). Then one FMA a block
// with the scales (Q4_K: and one with the min scales). Each (row, activation row) result is one
// lane's own sequence, whatever the pass shape or the thread split.
#include "backends/cpu/fast/fast_kernels.h"

#if defined(__x86_64__)
#include "backends/cpu/fast/avx512_util.h"


namespace jitllm::cpu::fast::detail {
namespace {

constexpr size_t kPrefetchAhead = 2048;

JITLLM_AVX512 inline __m512i load64(const uint8_t* p) { return _mm512_load_si512(p); }
// 16 bytes (one a row) widened to 32-bit lanes, unsigned / signed
JITLLM_AVX512 inline __m512i bytes_u32(const uint8_t* p) {
    return _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(p)));
}
JITLLM_AVX512 inline __m512i bytes_i32(const uint8_t* p) {
    return _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(p)));
}
JITLLM_AVX512 inline __m512 halves(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
}

// One packed Q4_K group (kQ4kGroupBlock bytes a block, packed.h) times C activation rows
template <int C>
JITLLM_AVX512 void q4k_tile(const uint8_t* g, int64_t nb, const XBlockK* x, float* y, size_t y_stride,
                            __mmask16 valid) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p = g + size_t(b) * kQ4kGroupBlock;
        prefetch_lines(p, kPrefetchAhead, kQ4kGroupBlock);
        const __m512 dw = halves(p + 2304), dmin = halves(p + 2336);
        // the mins times the activation's sub-block sums, taken off first
        __m512i mp[4];
        for (int i = 0; i < 4; ++i)
            mp[i] = _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(p + 2176 + 32 * i)));
        __m512i isum[C];
        for (int c = 0; c < C; ++c) {
            const XBlockK& xb = x[size_t(c) * size_t(nb) + size_t(b)];
            __m512i im = _mm512_setzero_si512();
            for (int i = 0; i < 4; ++i) im = _mm512_dpwssd_epi32(im, mp[i], _mm512_set1_epi32(xb.off[i]));
            acc[c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(im), _mm512_mul_ps(dmin, _mm512_set1_ps(xb.d)), acc[c]);
            isum[c] = _mm512_setzero_si512();
        }
        // chunk h of 64 values: run 8h + j holds bytes 4j .. 4j + 3 of the chunk's 32, low nibbles
        // values 64h + 4j .., high nibbles 64h + 32 + 4j .. (sub-blocks 2h and 2h + 1)
        for (int h = 0; h < 4; ++h) {
            __m512i lo[8], hi[8];
            for (int j = 0; j < 8; ++j) {
                const __m512i v = load64(p + 64 * (8 * h + j));
                lo[j] = _mm512_and_si512(v, m4);
                hi[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            }
            const __m512i sa = bytes_u32(p + 2048 + 16 * (2 * h)), sb = bytes_u32(p + 2048 + 16 * (2 * h + 1));
            for (int c = 0; c < C; ++c) {
                const int8_t* q = x[size_t(c) * size_t(nb) + size_t(b)].q + 64 * h;
                // two chains each (integer sums: the same bits in any order)
                __m512i ia[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()}, ib[2] = {ia[0], ia[0]};
                for (int j = 0; j < 8; ++j) {
                    ia[j & 1] = _mm512_dpbusd_epi32(ia[j & 1], lo[j], bcast4_512(q + 4 * j));
                    ib[j & 1] = _mm512_dpbusd_epi32(ib[j & 1], hi[j], bcast4_512(q + 32 + 4 * j));
                }
                const __m512i scaled = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_add_epi32(ia[0], ia[1]), sa),
                                                        _mm512_mullo_epi32(_mm512_add_epi32(ib[0], ib[1]), sb));
                isum[c] = _mm512_add_epi32(isum[c], scaled);
            }
        }
        for (int c = 0; c < C; ++c) {
            const float dx = x[size_t(c) * size_t(nb) + size_t(b)].d;
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]), _mm512_mul_ps(dw, _mm512_set1_ps(dx)), acc[c]);
        }
    }
    for (int c = 0; c < C; ++c) _mm512_mask_storeu_ps(y + size_t(c) * y_stride, valid, acc[c]);
}

// One packed Q6_K group (kQ6kGroupBlock bytes a block, packed.h) times C activation rows
template <int C>
JITLLM_AVX512 void q6k_tile(const uint8_t* g, int64_t nb, const XBlockK* x, float* y, size_t y_stride,
                            __mmask16 valid) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30);
    __m512 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p = g + size_t(b) * kQ6kGroupBlock;
        prefetch_lines(p, kPrefetchAhead, kQ6kGroupBlock);
        __m512i isum[C];
        for (int c = 0; c < C; ++c) isum[c] = _mm512_setzero_si512();
        // half n, j = 4 jj + t: ql runs 16n + j and 16n + 8 + j, qh run 8n + j give values
        // 128n + 4j .. (e[0]), + 32 (e[1]), + 64 (e[2]), + 96 (e[3]), four of each row
        for (int n = 0; n < 2; ++n)
            for (int jj = 0; jj < 2; ++jj) {
                __m512i e[4][4];
                for (int t = 0; t < 4; ++t) {
                    const int j = 4 * jj + t;
                    const __m512i la = load64(p + 64 * (16 * n + j)), lb = load64(p + 64 * (16 * n + 8 + j));
                    const __m512i qh = load64(p + 2048 + 64 * (8 * n + j));
                    e[0][t] = _mm512_or_si512(_mm512_and_si512(la, m4), _mm512_and_si512(_mm512_slli_epi16(qh, 4), m2));
                    e[1][t] = _mm512_or_si512(_mm512_and_si512(lb, m4), _mm512_and_si512(_mm512_slli_epi16(qh, 2), m2));
                    e[2][t] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(la, 4), m4), _mm512_and_si512(qh, m2));
                    e[3][t] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lb, 4), m4),
                                              _mm512_and_si512(_mm512_srli_epi16(qh, 2), m2));
                }
                for (int part = 0; part < 4; ++part) {
                    const int s = 8 * n + 2 * part + jj;  // the 16-value sub-block
                    const __m512i sv = bytes_i32(p + 3072 + 16 * s);
                    for (int c = 0; c < C; ++c) {
                        const XBlockK& xb = x[size_t(c) * size_t(nb) + size_t(b)];
                        const int8_t* q = xb.q + 128 * n + 32 * part + 16 * jj;
                        __m512i is = _mm512_set1_epi32(xb.off[s]);
                        for (int t = 0; t < 4; ++t) is = _mm512_dpbusd_epi32(is, e[part][t], bcast4_512(q + 4 * t));
                        isum[c] = _mm512_add_epi32(isum[c], _mm512_mullo_epi32(is, sv));
                    }
                }
            }
        const __m512 dw = halves(p + 3328);
        for (int c = 0; c < C; ++c) {
            const float dx = x[size_t(c) * size_t(nb) + size_t(b)].d;
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]), _mm512_mul_ps(dw, _mm512_set1_ps(dx)), acc[c]);
        }
    }
    for (int c = 0; c < C; ++c) _mm512_mask_storeu_ps(y + size_t(c) * y_stride, valid, acc[c]);
}

template <bool Q4K, int C>
JITLLM_AVX512 inline void k_tile(const uint8_t* g, int64_t nb, const XBlockK* x, float* y, size_t y_stride,
                                 __mmask16 valid) {
    if constexpr (Q4K) q4k_tile<C>(g, nb, x, y, y_stride, valid);
    else q6k_tile<C>(g, nb, x, y, y_stride, valid);
}

template <bool Q4K>
JITLLM_AVX512 void k_group(const uint8_t* g, int64_t nb, const XBlockK* x, int n_x, float* y, size_t y_stride,
                           __mmask16 valid) {
    passes<4>(n_x, [&](int j, auto c) {
        k_tile<Q4K, decltype(c)::value>(g, nb, x + size_t(j) * size_t(nb), y + size_t(j) * y_stride, y_stride, valid);
    });
}

}  // namespace

namespace {

JITLLM_AVX512 float amax256(const float* xb) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    __m512 amax = _mm512_setzero_ps();
    for (int k = 0; k < 16; ++k) amax = _mm512_max_ps(amax, _mm512_andnot_ps(sign, _mm512_loadu_ps(xb + 16 * k)));
    return _mm512_reduce_max_ps(amax);
}

JITLLM_AVX512 int32_t q16(const float* x, float iscale, int8_t* q) {
    const __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x), _mm512_set1_ps(iscale)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtsepi32_epi8(v));
    return _mm512_reduce_add_epi32(v);
}

}  // namespace

JITLLM_AVX512 void quantize_xk_avx512(const float* x, int64_t nb, bool q4k, XBlockK* out) {
    quantize_xk_with(x, nb, q4k, out, amax256, q16);
}

JITLLM_AVX512 void kp_groups_avx512(bool q4k, const uint8_t* P, size_t group_bytes, int n_groups, int64_t nb,
                                    const XBlockK* x, int n_x, float* Y, size_t y_stride, int n_rows) {
    for (int i = 0; i < n_groups; ++i) {
        const int left = n_rows - 16 * i;
        const __mmask16 valid = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
        if (q4k) k_group<true>(P + size_t(i) * group_bytes, nb, x, n_x, Y + 16 * i, y_stride, valid);
        else k_group<false>(P + size_t(i) * group_bytes, nb, x, n_x, Y + 16 * i, y_stride, valid);
    }
}

}  // namespace jitllm::cpu::fast::detail

#else  // not x86-64: no AVX-512 forms

namespace jitllm::cpu::fast::detail {
void quantize_xk_avx512(const float*, int64_t, bool, XBlockK*) {}
void kp_groups_avx512(bool, const uint8_t*, size_t, int, int64_t, const XBlockK*, int, float*, size_t, int) {}
}  // namespace jitllm::cpu::fast::detail

#endif
