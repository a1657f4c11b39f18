// cpu::attention against the spec's loops written plainly (tests/fixtures/cpu_attention_reference.h,
// the reference its test compares with bit for bit), on the 1B decode shape (32 heads, 8 kv heads,
// head dim 64) at 512 and 2048 cached positions. ms per call = one layer's attention of one token.
// (g++ compiles the plain loops faster than the function 97862d2 replaced.)
// Build (after building build-gpu): B=build-gpu; g++ -std=c++20 -O2 -ffp-contract=off
//   -Isrc -Itests tools/cpu_attention_bench.cpp -o /tmp/cpu_attention_bench $B/libjitllm_backend_cpu.a
//   $B/libjitllm_plan.a $B/libjitllm_quant.a $B/libjitllm_core.a -lpthread -ldl ; run: /tmp/cpu_attention_bench
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/thread_pool.h"
#include "fixtures/cpu_attention_reference.h"

using namespace jitllm;


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
        const double before = ms([&] { testref::attention_reference(q.data(), k.data(), v.data(), st, H, KV, hd, n_pos, 0.125f, o.data()); });
        const double t1 = ms([&] { cpu::attention(q.data(), k.data(), v.data(), st, H, KV, hd, n_pos, 0.125f, o.data(), 1); });
        const double t2 = ms([&] { cpu::attention(q.data(), k.data(), v.data(), st, H, KV, hd, n_pos, 0.125f, o.data(), 2); });
        std::printf("%d positions: the plain reference loops %.3f ms, cpu::attention 1 thread %.3f ms, 2 threads %.3f ms\n",
                    n_pos, before, t1, t2);
    }
}
