// One `jitllm bench` result: llama-bench's fields (same names and units) plus ours (bytes per
// token, achieved and copy bandwidth, JIT figures), and the statistics derived from the raw
// per-repetition durations. Data and arithmetic only: formatting is in bench_output.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jitllm {

// One test of the matrix: pp<n_prompt>, tg<n_gen> or pp<n_prompt>+tg<n_gen>, at KV depth n_depth.
struct BenchTest {
    int n_prompt = 0;
    int n_gen = 0;
    int n_depth = 0;
    // "pp512", "tg128", "pp512+tg128", with " @ d4096" when n_depth > 0 (llama-bench's names).
    std::string name() const;
    int n_positions() const { return n_depth + n_prompt + n_gen; }
};

struct BenchResult {
    // --- llama-bench core fields, in its order ---
    std::string build_commit = "unknown";
    int build_number = 0;
    std::string cpu_info;
    std::string gpu_info;
    std::string backends;       // "CPU" | "CUDA"
    std::string model_filename;
    std::string model_type;     // "<arch> <size label> <ftype>", e.g. "llama 8B Q4_0"
    uint64_t model_size = 0;    // bytes of all tensors
    uint64_t model_n_params = 0;
    int n_batch = 1;            // tokens per prefill chunk (-b; 1 = token at a time)
    int n_ubatch = 1;
    int n_threads = 1;
    std::string cpu_mask = "0x0";
    bool cpu_strict = false;
    int poll = 50;
    std::string type_k = "f32", type_v = "f32";
    int n_gpu_layers = 0;       // 99 (all) with --gpu, else 0
    std::string split_mode = "none";
    int main_gpu = 0;
    bool no_kv_offload = false;
    bool flash_attn = false;
    std::string tensor_split = "0.00";
    bool use_mmap = true;
    bool embeddings = false;
    int n_prompt = 0;
    int n_gen = 0;
    int n_depth = 0;
    std::string test_time;              // ISO-8601 UTC, e.g. "2026-12-01T10:00:00Z"
    std::vector<uint64_t> samples_ns;   // one duration per repetition (avg_ns etc. derive)

    // --- ours (appended after the core fields) ---
    uint64_t bytes_per_token = 0;  // decode step bytes at this depth; 0 = not applicable (pp, pg)
    double copy_bw_gb_s = 0;       // copy bandwidth measured in the same run (read + write)
    double jit_compile_ms = 0;     // CUDA: wall time of the JIT at load; 0 on the CPU
    std::string kernel_cache;      // CUDA: "hit" | "partial" | "miss"; "" on the CPU
    std::string gpu_arch;          // CUDA: "sm_90"; "" on the CPU
    // CUDA with NVML (libnvidia-ml.so.1): the board's energy over the repetitions' timed parts
    // and its time at the power limit; power_source "" (and zeros) when not measured
    std::string power_source;      // "nvml" | ""
    double power_w = 0;            // mean board power over the repetitions
    double energy_j_per_token = 0; // energy / (repetitions x (n_prompt + n_gen))
    double power_capped_pct = 0;   // time held below the application clocks by the power limit

    BenchTest test() const { return {n_prompt, n_gen, n_depth}; }
    // Per repetition: 1e9 * (n_prompt + n_gen) / ns (depth tokens are not counted).
    std::vector<double> samples_ts() const;
    uint64_t avg_ns() const;      // mean of samples_ns, rounded
    uint64_t stddev_ns() const;   // sample standard deviation (n - 1) of samples_ns, rounded
    double avg_ts() const;        // mean of the per-repetition rates (not tokens / avg_ns)
    double stddev_ts() const;     // sample standard deviation (n - 1) of those rates
    double bw_gb_s() const;       // bytes_per_token * avg_ts / 1e9; 0 when not applicable
    double pct_copy_bw() const;   // 100 * bw_gb_s / copy_bw_gb_s; 0 when not applicable
};

double mean_of(const std::vector<double>& v);
double sample_stddev_of(const std::vector<double>& v);  // n - 1; 0 for fewer than 2 values

// llama.cpp's file-type names (general.file_type): 2 -> "Q4_0", 15 -> "Q4_K - Medium".
// Unknown values give "ftype <n>".
std::string ftype_name(int64_t file_type);
// The size part of model_type from a parameter count when the file has no general.size_label:
// rounded in the largest unit that keeps it >= 1 ("8B", "1B", "135M", "260K").
std::string params_size_label(uint64_t n_params);
// ISO-8601 UTC of a Unix time in seconds: "2026-12-01T10:00:00Z".
std::string iso8601_utc(int64_t unix_seconds);

}  // namespace jitllm
