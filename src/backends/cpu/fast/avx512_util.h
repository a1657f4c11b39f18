// Internal to src/backends/cpu/fast: AVX-512 helpers shared by the kernel files (x86-64 only). The
// AVX-512 functions' target holds AVX2's, so avx2_util.h's helpers inline into them too.
#pragma once

#include "backends/cpu/fast/avx2_util.h"

#if defined(__x86_64__)
#define JITLLM_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c,avx2")))

namespace jitllm::cpu::fast::detail {

// The 16 lanes summed in halves: 8 + 8, then as hsum8 (one fixed order)
JITLLM_AVX512 inline float sum16(__m512 a) {
    return hsum8(_mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1)));
}

// The four bytes at p in every 32-bit lane
JITLLM_AVX512 inline __m512i bcast4_512(const void* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

// e^x lane by lane (fast_kernels.h's steps on 16 lanes; 2^n by VSCALEFPS)
JITLLM_AVX512 inline __m512 exp16(__m512 x) {
    const __m512 lo = _mm512_set1_ps(-87.0f);
    const __mmask16 tiny = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, lo), _mm512_set1_ps(88.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 f = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
    f = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), f);
    __m512 p = _mm512_set1_ps(kExpTaylor[0]);
    for (int i = 1; i < 7; ++i) p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExpTaylor[i]));
    return _mm512_maskz_mov_ps(__mmask16(~tiny), _mm512_scalef_ps(p, n));
}

}  // namespace jitllm::cpu::fast::detail
#endif
