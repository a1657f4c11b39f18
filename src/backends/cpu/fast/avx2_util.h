// Internal to src/backends/cpu/fast: AVX2 + FMA helpers shared by the AVX2 kernel files (x86-64
// only). A function calling them carries JITLLM_AVX2 (the same target, so that they inline).
#pragma once

#if defined(__x86_64__)
// g++ 12 reads the _mm*_undefined_* placeholders of some AVX-512 intrinsics as uninitialised (the
// header is one for every set)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstdint>
#include <cstring>

#include "backends/cpu/fast/fast_kernels.h"

#define JITLLM_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace jitllm::cpu::fast::detail {

// The 8 lanes summed in halves: 4 + 4, 2 + 2, 1 + 1 (one fixed order)
JITLLM_AVX2 inline float hsum8(__m256 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

JITLLM_AVX2 inline float hmax8(__m256 a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

JITLLM_AVX2 inline int32_t hsum8_epi32(__m256i a) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1)));
}

// The four bytes at p in every 32-bit lane
JITLLM_AVX2 inline __m256i bcast4_256(const void* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// Lanes [0, n) of a store (n in 0 .. 8)
JITLLM_AVX2 inline __m256i lanes_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The sum of the four unsigned-by-signed byte products of each 32-bit lane added to acc (VPDPBUSD's
// result where no 16-bit pair saturates: |u0 s0 + u1 s1| < 2^15)
JITLLM_AVX2 inline __m256i dpbusd8(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

// Lines [0, bytes) of the run `ahead` bytes past p fetched into the first-level cache
inline void prefetch_lines(const uint8_t* p, size_t ahead, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(p + ahead + o), _MM_HINT_T0);
}

// e^x lane by lane (fast_kernels.h's steps on 8 lanes)
JITLLM_AVX2 inline __m256 exp8(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.0f);
    const __m256 tiny = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, lo), _mm256_set1_ps(88.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 f = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
    f = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), f);
    __m256 p = _mm256_set1_ps(kExpTaylor[0]);
    for (int i = 1; i < 7; ++i) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExpTaylor[i]));
    // 2^n built in the exponent field (n in [-126, 127] after the clamp above)
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(tiny, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

}  // namespace jitllm::cpu::fast::detail
#endif
