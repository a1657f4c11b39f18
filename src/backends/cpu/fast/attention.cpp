// Fast decode attention (fast_ops.h): per head, the scores as FMA dot products sixteen elements a
// step, the softmax in float, the output mixed sixteen elements a step with FMA; heads over the
// threads. Head sizes that are not a multiple of 16 (and CPUs without AVX-512) take cpu::attention.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/fast/fast_ops.h"
#include "core/thread_pool.h"

#include "backends/cpu/fast/avx512_util.h"

namespace jitllm::cpu::fast {
namespace {

struct AttnJob {
    const float *q, *k, *v;
    size_t kv_stride;
    int group, head_dim, n_pos, per, n_heads;
    float scale;
    float* out;
};

#if defined(__x86_64__)
constexpr int kMaxVecs = 16;  // head_dim up to 256

JITLLM_AVX512 void heads_avx512(const AttnJob& j, int h0, int h1, float* att) {
    const int nv = j.head_dim / 16;
    for (int h = h0; h < h1; ++h) {
        const float* qh = j.q + size_t(h) * size_t(j.head_dim);
        const size_t koff = size_t(h / j.group) * size_t(j.head_dim);
        __m512 qv[kMaxVecs];
        for (int i = 0; i < nv; ++i) qv[i] = _mm512_loadu_ps(qh + 16 * i);
        float mx = -INFINITY;
        for (int p = 0; p < j.n_pos; ++p) {
            const float* kp = j.k + size_t(p) * j.kv_stride + koff;
            __m512 s = _mm512_mul_ps(qv[0], _mm512_loadu_ps(kp));
            for (int i = 1; i < nv; ++i) s = _mm512_fmadd_ps(qv[i], _mm512_loadu_ps(kp + 16 * i), s);
            att[p] = detail::sum16(s) * j.scale;
            mx = std::max(mx, att[p]);
        }
        float sum = 0.0f;
        for (int p = 0; p < j.n_pos; ++p) {
            att[p] = std::exp(att[p] - mx);
            sum += att[p];
        }
        const __m512 inv = _mm512_set1_ps(1.0f / sum);
        __m512 o[kMaxVecs];
        for (int i = 0; i < nv; ++i) o[i] = _mm512_setzero_ps();
        for (int p = 0; p < j.n_pos; ++p) {
            const float* vp = j.v + size_t(p) * j.kv_stride + koff;
            const __m512 a = _mm512_set1_ps(att[p]);
            for (int i = 0; i < nv; ++i) o[i] = _mm512_fmadd_ps(a, _mm512_loadu_ps(vp + 16 * i), o[i]);
        }
        float* oh = j.out + size_t(h) * size_t(j.head_dim);
        for (int i = 0; i < nv; ++i) _mm512_storeu_ps(oh + 16 * i, _mm512_mul_ps(o[i], inv));
    }
}
#endif

void heads(const AttnJob& j, int h0, int h1) {
    thread_local std::vector<float> att;  // grows to the longest context once
    if (att.size() < size_t(j.n_pos)) att.resize(size_t(j.n_pos));
#if defined(__x86_64__)
    heads_avx512(j, h0, h1, att.data());
#endif
}

}  // namespace

void attention(const float* q, const float* k_cache, const float* v_cache, size_t kv_stride, int n_heads,
               int n_kv_heads, int head_dim, int n_pos, float scale, float* out, int n_threads) {
    if (fast_isa() != FastIsa::Avx512Vnni || head_dim % 16 != 0 || head_dim > 256)
        return cpu::attention(q, k_cache, v_cache, kv_stride, n_heads, n_kv_heads, head_dim, n_pos, scale, out,
                              n_threads);
    AttnJob j{q, k_cache, v_cache, kv_stride, n_heads / n_kv_heads, head_dim, n_pos, 0, n_heads, scale, out};
    ThreadPool& pool = ThreadPool::global();
    const int n = std::min({n_threads, pool.size(), n_heads});
    if (n <= 1 || size_t(n_pos) * size_t(head_dim) * size_t(n_heads) < (size_t(1) << 15)) {
        heads(j, 0, n_heads);
        return;
    }
    j.per = (n_heads + n - 1) / n;
    const AttnJob* jp = &j;
    pool.parallel_for(n, [jp](int i) {
        const int h0 = std::min(jp->n_heads, i * jp->per), h1 = std::min(jp->n_heads, (i + 1) * jp->per);
        if (h1 > h0) heads(*jp, h0, h1);
    });
}

}  // namespace jitllm::cpu::fast
