// Fast decode attention (fast_ops.h): per head, the positions a vector's width at a time: their
// scores as FMA dot products, a running softmax (the maximum so far, the output and the sum
// rescaled when it grows; exponentials in vector registers), the values mixed in with FMA. No
// scratch memory; heads over the team's threads. AVX-512: sixteen positions and elements a step;
// AVX2: eight; NEON: four (heads of a multiple of 4 elements). Heads over 256 elements (and CPUs
// without a fast form) take cpu::attention.
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/fast/fast_ops.h"
#include "backends/cpu/fast/team.h"

#include "backends/cpu/fast/avx512_util.h"
#include "backends/cpu/fast/neon_util.h"

namespace jitllm::cpu::fast {
namespace {

struct AttnJob {
    const float *q, *k, *v;
    size_t kv_stride;
    int group, head_dim, n_pos, per, n_heads;
    float scale;
    float* out;
};

constexpr int kMaxVecs = 16;  // head_dim up to 256

#if defined(__x86_64__)

JITLLM_AVX512 void heads_avx512(const AttnJob& j, int h0, int h1) {
    const int nv = (j.head_dim + 15) / 16;
    __mmask16 m[kMaxVecs];  // the head's elements in each 16-lane vector (the last may be partial)
    for (int i = 0; i < nv; ++i) {
        const int left = j.head_dim - 16 * i;
        m[i] = __mmask16(left >= 16 ? 0xFFFF : (1u << left) - 1);
    }
    for (int h = h0; h < h1; ++h) {
        const float* qh = j.q + size_t(h) * size_t(j.head_dim);
        const size_t koff = size_t(h / j.group) * size_t(j.head_dim);
        __m512 qv[kMaxVecs], o[kMaxVecs];
        for (int i = 0; i < nv; ++i) qv[i] = _mm512_maskz_loadu_ps(m[i], qh + 16 * i), o[i] = _mm512_setzero_ps();
        float mx = -INFINITY, sum = 0.0f;
        for (int p0 = 0; p0 < j.n_pos; p0 += 16) {
            const int np = std::min(16, j.n_pos - p0);
            alignas(64) float sc[16];
            for (int p = 0; p < np; ++p) {
                const float* kp = j.k + size_t(p0 + p) * j.kv_stride + koff;
                __m512 s = _mm512_mul_ps(qv[0], _mm512_maskz_loadu_ps(m[0], kp));
                for (int i = 1; i < nv; ++i) s = _mm512_fmadd_ps(qv[i], _mm512_maskz_loadu_ps(m[i], kp + 16 * i), s);
                sc[p] = detail::sum16(s) * j.scale;
            }
            const __mmask16 valid = __mmask16((1u << np) - 1);
            const __m512 sv = _mm512_mask_load_ps(_mm512_set1_ps(-INFINITY), valid, sc);
            const float m_new = std::max(mx, _mm512_reduce_max_ps(sv));
            const __m512 e = _mm512_maskz_mov_ps(valid, detail::exp16(_mm512_sub_ps(sv, _mm512_set1_ps(m_new))));
            const float corr = std::exp(mx - m_new);  // 0 at the first chunk
            sum = sum * corr + _mm512_reduce_add_ps(e);
            mx = m_new;
            const __m512 cv = _mm512_set1_ps(corr);
            for (int i = 0; i < nv; ++i) o[i] = _mm512_mul_ps(o[i], cv);
            _mm512_store_ps(sc, e);
            for (int p = 0; p < np; ++p) {
                const float* vp = j.v + size_t(p0 + p) * j.kv_stride + koff;
                const __m512 a = _mm512_set1_ps(sc[p]);
                for (int i = 0; i < nv; ++i) o[i] = _mm512_fmadd_ps(a, _mm512_maskz_loadu_ps(m[i], vp + 16 * i), o[i]);
            }
        }
        const __m512 inv = _mm512_set1_ps(1.0f / sum);
        float* oh = j.out + size_t(h) * size_t(j.head_dim);
        for (int i = 0; i < nv; ++i) _mm512_mask_storeu_ps(oh + 16 * i, m[i], _mm512_mul_ps(o[i], inv));
    }
}

JITLLM_AVX2 void heads_avx2(const AttnJob& j, int h0, int h1) {
    const int nv = (j.head_dim + 7) / 8;
    __m256i m[2 * kMaxVecs];  // the head's elements in each 8-lane vector (the last may be partial)
    for (int i = 0; i < nv; ++i) m[i] = detail::lanes_mask(std::min(8, j.head_dim - 8 * i));
    for (int h = h0; h < h1; ++h) {
        const float* qh = j.q + size_t(h) * size_t(j.head_dim);
        const size_t koff = size_t(h / j.group) * size_t(j.head_dim);
        __m256 qv[2 * kMaxVecs], o[2 * kMaxVecs];
        for (int i = 0; i < nv; ++i) qv[i] = _mm256_maskload_ps(qh + 8 * i, m[i]), o[i] = _mm256_setzero_ps();
        float mx = -INFINITY, sum = 0.0f;
        for (int p0 = 0; p0 < j.n_pos; p0 += 8) {
            const int np = std::min(8, j.n_pos - p0);
            alignas(32) float sc[8];
            for (int p = 0; p < 8; ++p) sc[p] = -INFINITY;
            for (int p = 0; p < np; ++p) {
                const float* kp = j.k + size_t(p0 + p) * j.kv_stride + koff;
                __m256 s = _mm256_mul_ps(qv[0], _mm256_maskload_ps(kp, m[0]));
                for (int i = 1; i < nv; ++i) s = _mm256_fmadd_ps(qv[i], _mm256_maskload_ps(kp + 8 * i, m[i]), s);
                sc[p] = detail::hsum8(s) * j.scale;
            }
            const __m256 sv = _mm256_load_ps(sc);
            const float m_new = std::max(mx, detail::hmax8(sv));
            const __m256 e = detail::exp8(_mm256_sub_ps(sv, _mm256_set1_ps(m_new)));  // 0 past np
            const float corr = std::exp(mx - m_new);  // 0 at the first chunk
            sum = sum * corr + detail::hsum8(e);
            mx = m_new;
            const __m256 cv = _mm256_set1_ps(corr);
            for (int i = 0; i < nv; ++i) o[i] = _mm256_mul_ps(o[i], cv);
            _mm256_store_ps(sc, e);
            for (int p = 0; p < np; ++p) {
                const float* vp = j.v + size_t(p0 + p) * j.kv_stride + koff;
                const __m256 a = _mm256_set1_ps(sc[p]);
                for (int i = 0; i < nv; ++i) o[i] = _mm256_fmadd_ps(a, _mm256_maskload_ps(vp + 8 * i, m[i]), o[i]);
            }
        }
        const __m256 inv = _mm256_set1_ps(1.0f / sum);
        float* oh = j.out + size_t(h) * size_t(j.head_dim);
        for (int i = 0; i < nv; ++i) _mm256_maskstore_ps(oh + 8 * i, m[i], _mm256_mul_ps(o[i], inv));
    }
}
#elif defined(__aarch64__)

void heads_neon(const AttnJob& j, int h0, int h1) {
    const int nv = j.head_dim / 4;
    for (int h = h0; h < h1; ++h) {
        const float* qh = j.q + size_t(h) * size_t(j.head_dim);
        const size_t koff = size_t(h / j.group) * size_t(j.head_dim);
        float32x4_t qv[4 * kMaxVecs], o[4 * kMaxVecs];
        for (int i = 0; i < nv; ++i) qv[i] = vld1q_f32(qh + 4 * i), o[i] = vdupq_n_f32(0.0f);
        float mx = -INFINITY, sum = 0.0f;
        for (int p0 = 0; p0 < j.n_pos; p0 += 4) {
            const int np = std::min(4, j.n_pos - p0);
            float sc[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
            for (int p = 0; p < np; ++p) {
                const float* kp = j.k + size_t(p0 + p) * j.kv_stride + koff;
                float32x4_t s = vmulq_f32(qv[0], vld1q_f32(kp));
                for (int i = 1; i < nv; ++i) s = vfmaq_f32(s, qv[i], vld1q_f32(kp + 4 * i));
                sc[p] = detail::hsum4(s) * j.scale;
            }
            const float32x4_t sv = vld1q_f32(sc);
            const float m_new = std::max(mx, vmaxvq_f32(sv));
            const float32x4_t e = detail::exp4(vsubq_f32(sv, vdupq_n_f32(m_new)));  // 0 past np
            const float corr = std::exp(mx - m_new);  // 0 at the first chunk
            sum = sum * corr + detail::hsum4(e);
            mx = m_new;
            for (int i = 0; i < nv; ++i) o[i] = vmulq_n_f32(o[i], corr);
            vst1q_f32(sc, e);
            for (int p = 0; p < np; ++p) {
                const float* vp = j.v + size_t(p0 + p) * j.kv_stride + koff;
                for (int i = 0; i < nv; ++i) o[i] = vfmaq_n_f32(o[i], vld1q_f32(vp + 4 * i), sc[p]);
            }
        }
        float* oh = j.out + size_t(h) * size_t(j.head_dim);
        for (int i = 0; i < nv; ++i) vst1q_f32(oh + 4 * i, vmulq_n_f32(o[i], 1.0f / sum));
    }
}
#endif

// Whether this CPU's form takes heads of head_dim elements
bool has_heads(int head_dim) {
    switch (fast_isa()) {
        case FastIsa::Avx512Vnni:
        case FastIsa::Avx2Fma: return head_dim <= 16 * kMaxVecs;
        case FastIsa::NeonDot: return head_dim <= 16 * kMaxVecs && head_dim % 4 == 0;
        case FastIsa::None: return false;
    }
    return false;
}

void heads(const AttnJob& j, int h0, int h1) {
#if defined(__x86_64__)
    if (fast_isa() == FastIsa::Avx512Vnni) heads_avx512(j, h0, h1);
    else heads_avx2(j, h0, h1);
#elif defined(__aarch64__)
    heads_neon(j, h0, h1);
#endif
}

}  // namespace

void attention(const float* q, const float* k_cache, const float* v_cache, size_t kv_stride, int n_heads,
               int n_kv_heads, int head_dim, int n_pos, float scale, float* out, int n_threads) {
    if (!has_heads(head_dim))
        return cpu::attention(q, k_cache, v_cache, kv_stride, n_heads, n_kv_heads, head_dim, n_pos, scale, out,
                              n_threads);
    AttnJob j{q, k_cache, v_cache, kv_stride, n_heads / n_kv_heads, head_dim, n_pos, 0, n_heads, scale, out};
    const int n = std::min(n_threads, n_heads);
    if (n <= 1 || size_t(n_pos) * size_t(head_dim) * size_t(n_heads) < (size_t(1) << 15)) {
        heads(j, 0, n_heads);
        return;
    }
    const int parts = std::min(n_heads, 4 * n);
    j.per = (n_heads + parts - 1) / parts;
    team_for(n, (n_heads + j.per - 1) / j.per, [&j](int i) {
        heads(j, i * j.per, std::min(j.n_heads, (i + 1) * j.per));
    });
}

}  // namespace jitllm::cpu::fast
