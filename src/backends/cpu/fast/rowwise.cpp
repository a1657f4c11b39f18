// Fast row-wise operations (fast_ops.h): RMS norm and SwiGLU a vector at a time (AVX-512: sixteen
// elements, AVX2: eight, NEON: four; the exact path's are one element at a time, the sum of
// squares one dependent chain).
#include <cmath>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/fast/fast_ops.h"

#include "backends/cpu/fast/avx512_util.h"
#include "backends/cpu/fast/neon_util.h"

namespace jitllm::cpu::fast {

#if defined(__x86_64__)
namespace {

JITLLM_AVX512 inline __mmask16 tail_mask(int n, int i) {
    return n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
}

JITLLM_AVX512 void rms_norm_avx512(const float* x, const float* w, float* y, int n, float eps) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
        s0 = _mm512_fmadd_ps(a, a, s0);
        s1 = _mm512_fmadd_ps(b, b, s1);
    }
    for (; i < n; i += 16) {
        const __m512 a = _mm512_maskz_loadu_ps(tail_mask(n, i), x + i);
        s0 = _mm512_fmadd_ps(a, a, s0);
    }
    const float scale = 1.0f / std::sqrt(detail::sum16(_mm512_add_ps(s0, s1)) / float(n) + eps);
    const __m512 sv = _mm512_set1_ps(scale);
    for (i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n, i);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), sv);
        if (w) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + i));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

JITLLM_AVX512 void swiglu_avx512(const float* gate, const float* up, float* out, int n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n, i);
        const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        const __m512 e = detail::exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
        const __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, e));
        _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
    }
}

JITLLM_AVX2 void rms_norm_avx2(const float* x, const float* w, float* y, int n, float eps) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        s0 = _mm256_fmadd_ps(a, a, s0);
        s1 = _mm256_fmadd_ps(b, b, s1);
    }
    for (; i < n; i += 8) {
        const __m256 a = _mm256_maskload_ps(x + i, detail::lanes_mask(n - i));
        s0 = _mm256_fmadd_ps(a, a, s0);
    }
    const float scale = 1.0f / std::sqrt(detail::hsum8(_mm256_add_ps(s0, s1)) / float(n) + eps);
    const __m256 sv = _mm256_set1_ps(scale);
    for (i = 0; i < n; i += 8) {
        const __m256i m = detail::lanes_mask(n - i);
        __m256 v = _mm256_mul_ps(_mm256_maskload_ps(x + i, m), sv);
        if (w) v = _mm256_mul_ps(v, _mm256_maskload_ps(w + i, m));
        _mm256_maskstore_ps(y + i, m, v);
    }
}

JITLLM_AVX2 void swiglu_avx2(const float* gate, const float* up, float* out, int n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    for (int i = 0; i < n; i += 8) {
        const __m256i m = detail::lanes_mask(n - i);
        const __m256 g = _mm256_maskload_ps(gate + i, m);
        const __m256 e = detail::exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
        const __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, e));
        _mm256_maskstore_ps(out + i, m, _mm256_mul_ps(s, _mm256_maskload_ps(up + i, m)));
    }
}

}  // namespace
#elif defined(__aarch64__)
namespace {

// (n a multiple of 4: rms_norm / swiglu take the exact loops otherwise)
void rms_norm_neon(const float* x, const float* w, float* y, int n, float eps) {
    float32x4_t s[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    for (int i = 0; i < n; i += 4) {
        const float32x4_t a = vld1q_f32(x + i);
        s[(i / 4) & 3] = vfmaq_f32(s[(i / 4) & 3], a, a);
    }
    const float sum = detail::hsum4(vaddq_f32(vaddq_f32(s[0], s[1]), vaddq_f32(s[2], s[3])));
    const float scale = 1.0f / std::sqrt(sum / float(n) + eps);
    for (int i = 0; i < n; i += 4) {
        float32x4_t v = vmulq_n_f32(vld1q_f32(x + i), scale);
        if (w) v = vmulq_f32(v, vld1q_f32(w + i));
        vst1q_f32(y + i, v);
    }
}

void swiglu_neon(const float* gate, const float* up, float* out, int n) {
    for (int i = 0; i < n; i += 4) {
        const float32x4_t g = vld1q_f32(gate + i);
        const float32x4_t s = vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), detail::exp4(vnegq_f32(g))));
        vst1q_f32(out + i, vmulq_f32(s, vld1q_f32(up + i)));
    }
}

}  // namespace
#endif

void rms_norm(const float* x, const float* w, float* y, int n, float eps) {
#if defined(__x86_64__)
    if (fast_isa() == FastIsa::Avx512Vnni) return rms_norm_avx512(x, w, y, n, eps);
    if (fast_isa() == FastIsa::Avx2Fma) return rms_norm_avx2(x, w, y, n, eps);
#elif defined(__aarch64__)
    if (fast_isa() == FastIsa::NeonDot && n % 4 == 0) return rms_norm_neon(x, w, y, n, eps);
#endif
    cpu::rms_norm(x, w, y, n, eps);
}

void swiglu(const float* gate, const float* up, float* out, int n) {
#if defined(__x86_64__)
    if (fast_isa() == FastIsa::Avx512Vnni) return swiglu_avx512(gate, up, out, n);
    if (fast_isa() == FastIsa::Avx2Fma) return swiglu_avx2(gate, up, out, n);
#elif defined(__aarch64__)
    if (fast_isa() == FastIsa::NeonDot && n % 4 == 0) return swiglu_neon(gate, up, out, n);
#endif
    cpu::swiglu(gate, up, out, n);
}

}  // namespace jitllm::cpu::fast
