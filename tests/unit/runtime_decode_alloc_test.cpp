// The CPU decode loop allocates nothing once warm: greedy decode steps as generate() and bench run
// them (Engine::queue_decode / collect_decode) on the fast path with two threads, after a chunked
// prompt, on a file of each type the fast kernels take, and several hundred steps of the bundled
// model. Counted by this binary's global operator new.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "fixtures/engine_factory.h"
#include "fixtures/test_data.h"
#include "fixtures/test_support.h"

// (the replacement operators below pair new with malloc and delete with free, which g++ cannot see)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocs{0};
}  // namespace

void* operator new(std::size_t n) {
    if (g_counting.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
    if (g_counting.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
    const std::size_t al = std::size_t(a);
    if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

// Allocations made by `steps` decode steps after `warm` uncounted ones
long decode_allocations(const std::string& file, int warm, int steps) {
    auto e = jitllm::test::make_engine(file, 1024, [](jitllm::EngineOptions& o) {
        o.n_threads = 2;
        o.batch_prefill_size = 16;
    });
    std::vector<int32_t> prompt{1};  // 18 tokens: a chunk of 16 and a partial one
    for (int i = 1; i < 18; ++i) prompt.push_back(40 + 10 * i);
    e->feed(prompt);
    int32_t tok = 5;
    for (int i = 0; i < warm; ++i) {
        e->queue_decode(tok);
        tok = e->collect_decode();
    }
    g_allocs = 0;
    g_counting = true;
    for (int i = 0; i < steps; ++i) {
        e->queue_decode(-1);
        tok = e->collect_decode();
    }
    g_counting = false;
    return g_allocs.load();
}

TEST(DecodeAllocations, NoneOnceWarmOnEveryFastType) {
    if (jitllm::test::backend_is_gpu()) GTEST_SKIP() << "the CPU decode loop";
    for (const char* type : {"f32", "f16", "q8_0", "q4_0", "q4_k_m", "q6_k"}) {
        const std::string file = jitllm::test::data_path(std::string("golden/synthetic/llama-") + type + ".gguf");
        if (!jitllm::test::file_exists(file)) continue;
        EXPECT_EQ(decode_allocations(file, 3, 20), 0) << file;
    }
    // past the first few hundred positions (a queue of picks that grows and shrinks a step at a time)
    EXPECT_EQ(decode_allocations(jitllm::test::source_dir() + "/models/stories260K.gguf", 3, 300), 0);
}

}  // namespace
