// `jitllm bench` measurement: the test matrix (models x threads x depths x pp/tg/pg tests), run
// through Engine::feed with synthetic token ids, plus the bytes one decode step moves and the copy
// bandwidth measured in the same run. No output formatting here (see bench_output.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_result.h"
#include "runtime/engine.h"

namespace jitllm {

struct BenchOptions {
    std::vector<std::string> models;
    std::vector<int> n_prompt = {512};            // pp tests (0 = none)
    std::vector<int> n_gen = {128};               // tg tests (0 = none)
    std::vector<std::pair<int, int>> pg;          // pp+tg tests
    std::vector<int> n_depth = {0};               // KV positions filled (untimed) before each test
    std::vector<int> n_threads = {1};
    int repetitions = 5;
    bool warmup = true;                           // one unreported run of each test first
    int n_ctx = 0;                                // 0: exactly what the largest test needs
    bool gpu = false;
    bool with_prefill_decode = false;             // prompt tokens but the last skip the logits
    int batch_prefill_size = 0;                   // -b: prompt chunks through the batch phase
                                                  // (kAutoPromptChunks: the device's default)
    bool cpu_exact = false;                       // --cpu-exact
    CudaOptions cuda;
    bool opencl = false;                          // the OpenCL backend (--opencl)
    OpenClOptions cl;
    uint64_t seed = 1234;                         // synthetic token ids
    size_t copy_bytes = 0;                        // copy-bandwidth buffer; 0: 2 GiB GPU, 256 MiB CPU
};

// The tests of one (model, threads) instance, in run order: for each depth, the pp tests, the tg
// tests, then the pp+tg tests. Throws a usage Error when there is none.
std::vector<BenchTest> bench_tests(const BenchOptions& o);

// Runs the whole matrix; on_result gets each result as soon as its repetitions are done; log gets
// one-line progress messages, level 0 per loaded model, 1 per test (may be empty). Throws Error
// on bad options or a model that fails.
void bench_run(const BenchOptions& o, const std::function<void(const BenchResult&)>& on_result,
               const std::function<void(int, const std::string&)>& log = {});

// The bytes one decode step moves (Backend::decode_bytes), the mean over the n_gen decode steps
// of a tg test at depth n_depth (the step at position p attends p + 1 positions, so the mean is
// n_depth + (n_gen + 1) / 2).
uint64_t decode_bytes_per_token(const DecodeBytes& b, int n_depth, int n_gen);

}  // namespace jitllm
