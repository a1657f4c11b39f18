// cpu::attention (heads over threads, eight positions' scores side by side, the AVX2 form where the
// CPU has it) against the spec's loops written out here: the same bits for every head, at position
// counts around the 8-position groups and the threading threshold, with grouped kv heads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/thread_pool.h"

namespace jitllm {
namespace {

// The spec: per head, each score sums d in order, softmax over positions in order, each output element
// adds positions in order
void reference(const float* q, const float* k, const float* v, size_t kv_stride, int n_heads, int n_kv_heads,
               int head_dim, int n_pos, float scale, float* out) {
    const int group = n_heads / n_kv_heads;
    std::vector<float> att(static_cast<size_t>(n_pos));
    for (int h = 0; h < n_heads; ++h) {
        const float* qh = q + size_t(h) * head_dim;
        const size_t off = size_t(h / group) * head_dim;
        float mx = -INFINITY;
        for (int p = 0; p < n_pos; ++p) {
            float s = 0.0f;
            for (int d = 0; d < head_dim; ++d) s += qh[d] * k[size_t(p) * kv_stride + off + d];
            att[p] = s * scale;
            mx = std::max(mx, att[p]);
        }
        float sum = 0.0f;
        for (int p = 0; p < n_pos; ++p) {
            att[p] = std::exp(att[p] - mx);
            sum += att[p];
        }
        float* oh = out + size_t(h) * head_dim;
        for (int d = 0; d < head_dim; ++d) oh[d] = 0.0f;
        for (int p = 0; p < n_pos; ++p)
            for (int d = 0; d < head_dim; ++d) oh[d] += att[p] / sum * v[size_t(p) * kv_stride + off + d];
    }
}

TEST(CpuAttention, TheSpecsBitsOnEveryPathway) {
    ThreadPool::set_global_threads(2);
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    int checked = 0;
    for (int n_pos : {1, 7, 8, 9, 100, 1030})
        for (int threads : {1, 2}) {
            const int n_heads = 8, n_kv = 2, hd = 64;
            const size_t kv_stride = size_t(n_kv) * hd + 16;  // rows wider than the kv heads (as a cache's)
            std::vector<float> q(size_t(n_heads) * hd), k(kv_stride * n_pos), v(kv_stride * n_pos);
            for (auto* a : {&q, &k, &v})
                for (auto& x : *a) x = nd(rng);
            std::vector<float> got(q.size(), -1.0f), want(q.size(), -2.0f);
            cpu::attention(q.data(), k.data(), v.data(), kv_stride, n_heads, n_kv, hd, n_pos, 0.125f, got.data(),
                           threads);
            reference(q.data(), k.data(), v.data(), kv_stride, n_heads, n_kv, hd, n_pos, 0.125f, want.data());
            for (size_t i = 0; i < q.size(); ++i) {
                uint32_t a, b;
                std::memcpy(&a, &got[i], 4);
                std::memcpy(&b, &want[i], 4);
                ASSERT_EQ(a, b) << n_pos << " positions, " << threads << " threads, element " << i << ": " << got[i]
                                << " vs " << want[i];
                ++checked;
            }
        }
    EXPECT_EQ(checked, 6 * 2 * 8 * 64);
}

}  // namespace
}  // namespace jitllm
