// Internal to src/backends/cpu/fast: AVX-512 helpers shared by the kernel files (x86-64 only).
#pragma once

#if defined(__x86_64__)
// g++ 12 reads the _mm*_undefined_* placeholders of some AVX-512 intrinsics as uninitialised
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#define JITLLM_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c,avx2")))

namespace jitllm::cpu::fast::detail {

// The 16 lanes summed in halves: 8 + 8, 4 + 4, 2 + 2, 1 + 1 (one fixed order)
JITLLM_AVX512 inline float sum16(__m512 a) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

}  // namespace jitllm::cpu::fast::detail
#endif
