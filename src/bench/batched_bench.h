// `jitllm bench -npp P -ntg T -npl B`: batched throughput with llama-batched-bench's meaning,
// columns and output formats (md table, jsonl). One SequenceBatch holds max(B) sequences; for
// each (P, T, B), B sequences each take a prompt of P synthetic tokens (T_PP: the prompts through
// the batch phase, the last token of each with logits), then T steps of one token per sequence
// (T_TG: each step's input is the sequence's pick of the step before). No HTTP, no sampling on
// the host: what `jitllm serve` can reach at best. See docs/bench.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"

namespace jitllm {

struct BatchedBenchOptions {
    std::string model;
    std::vector<int> n_pp = {128};  // prompt tokens per sequence
    std::vector<int> n_tg = {128};  // generated tokens per sequence
    std::vector<int> n_pl = {1};    // sequences decoded together
    int n_kv_max = 0;    // -c: KV cache positions of all sequences together (the pool); tests
                         // needing more are skipped, as llama-batched-bench does; 0: what the
                         // largest test needs
    int batch_rows = 0;  // -b: rows of a batch step; 0: max(largest B, 512)
    int n_threads = 1;
    bool gpu = false;
    CudaOptions cuda;
    bool warmup = true;  // per B, an untimed short run first (CUDA graphs captured, caches warm)
    uint64_t seed = 1234;
};

// What llama-batched-bench prints before its table (and repeats in every jsonl line).
struct BatchedBenchSetup {
    int n_kv_max = 0;  // the pool's positions
    int n_batch = 0;   // rows of a batch step (n_ubatch the same)
    int n_gpu_layers = 0;
    int n_threads = 1;
};

struct BatchedBenchResult {
    int pp = 0, tg = 0, pl = 0;
    int n_kv = 0;       // pl * (pp + tg)
    double t_pp = 0;    // seconds: the prompts
    double t_tg = 0;    // seconds: the tg steps
    double speed_pp() const { return t_pp > 0 ? double(pl) * pp / t_pp : 0.0; }
    double speed_tg() const { return t_tg > 0 ? double(pl) * tg / t_tg : 0.0; }
    double t() const { return t_pp + t_tg; }
    double speed() const { return t() > 0 ? double(pl) * (pp + tg) / t() : 0.0; }
};

// Checks the lists (usage Error): every value of -npp and -npl at least 1, -ntg at least 0.
void batched_bench_check(const BatchedBenchOptions& o);

// Loads the model, then runs the tests in llama-batched-bench's order (pp, then tg, then pl);
// on_setup once before the first test, on_result after each; log gets progress lines (level 0:
// the model, 1: each test, and the tests skipped for the pool).
void batched_bench_run(const BatchedBenchOptions& o, const std::function<void(const BatchedBenchSetup&)>& on_setup,
                       const std::function<void(const BatchedBenchResult&)>& on_result,
                       const std::function<void(int, const std::string&)>& log = {});

// llama-batched-bench's output: the md table's head (the setup line, the column names and the
// rule), one md row, one jsonl line (its keys and order).
std::string batched_md_head(const BatchedBenchSetup& s);
std::string batched_md_row(const BatchedBenchResult& r);
std::string batched_jsonl(const BatchedBenchSetup& s, const BatchedBenchResult& r);

}  // namespace jitllm
