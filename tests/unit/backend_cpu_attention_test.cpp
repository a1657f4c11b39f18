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
#include "fixtures/cpu_attention_reference.h"

namespace jitllm {
namespace {

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
            testref::attention_reference(q.data(), k.data(), v.data(), kv_stride, n_heads, n_kv, hd, n_pos, 0.125f, want.data());
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
