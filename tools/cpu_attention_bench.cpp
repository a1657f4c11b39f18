// cpu::attention against the loops it replaced in session 33 (the spec's order written plainly: one
// position's score at a time, the output accumulated in memory), on the 1B decode shape (32 heads,
// 8 kv heads, head dim 64) at 512 and 2048 cached positions; both give the same bits
// (tests/unit/backend_cpu_attention_test.cpp). ms per call = one layer's attention of one token.
// Build (after building build-gpu): B=build-gpu; g++ -std=c++20 -O2 -ffp-contract=off -DFMT_HEADER_ONLY=1
//   -Isrc tools/cpu_attention_bench.cpp -o /tmp/cpu_attention_bench $B/libjitllm_backend_cpu.a
//   $B/libjitllm_plan.a $B/libjitllm_quant.a $B/libjitllm_core.a -lpthread -ldl ; run: /tmp/cpu_attention_bench
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/thread_pool.h"

using namespace jitllm;

namespace {
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
}  // namespace

int main() {
    ThreadPool::set_global_threads(2);
    const int H = 32, KV = 8, hd = 64;
    for (int n_pos : {512, 2048}) {
        const size_t st = size_t(KV) * hd;
        std::vector<float> q(size_t(H) * hd), k(st * n_pos), v(st * n_pos), o(size_t(H) * hd);
        std::mt19937 rng(1);
        std::normal_distribution<float> nd;
        for (auto* a : {&q, &k, &v})
            for (auto& x : *a) x = nd(rng);
        auto ms = [&](auto f) {
            f();
            const auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < 20; ++i) f();
            return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 20;
        };
        const double before = ms([&] { reference(q.data(), k.data(), v.data(), st, H, KV, hd, n_pos, 0.125f, o.data()); });
        const double t1 = ms([&] { cpu::attention(q.data(), k.data(), v.data(), st, H, KV, hd, n_pos, 0.125f, o.data(), 1); });
        const double t2 = ms([&] { cpu::attention(q.data(), k.data(), v.data(), st, H, KV, hd, n_pos, 0.125f, o.data(), 2); });
        std::printf("%d positions: the replaced loops %.3f ms, cpu::attention 1 thread %.3f ms, 2 threads %.3f ms\n",
                    n_pos, before, t1, t2);
    }
}
