// Profiler: per-kernel launch records (one per launch, timed on the device with events) rolled up
// per phase and kernel: launches, total / mean / p50 us, bytes moved, GB/s, % of the copy
// bandwidth measured at start-up, GFLOP/s. Writes a table, a JSON file and a Chrome trace
// (chrome://tracing, Perfetto). Host data only: backends fill it, nothing here touches a device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jitllm {

struct LaunchRecord {
    std::string kernel;   // kernel symbol (the name ncu / nsys show)
    std::string tasks;    // covered task names, e.g. "blk.3.attn_norm+blk.3.attn_qkv"
    std::string phase;    // "decode" | "prefill"
    int token = 0;        // index of the step (token or chunk) within the run
    int layer = -1;
    double start_us = 0;  // from the first record of the run
    double dur_us = 0;
    uint64_t bytes = 0;
    uint64_t flops = 0;
};

struct ProfileRow {
    std::string phase, kernel, task_group;
    uint64_t launches = 0;
    double total_us = 0, mean_us = 0, p50_us = 0;
    uint64_t bytes = 0, flops = 0;
    double gb_s = 0, pct_copy_bw = 0, gflop_s = 0;
};

class Profiler {
public:
    void set_copy_bandwidth(double gb_s, const std::string& device) { copy_bw_gb_s_ = gb_s; device_ = device; }
    double copy_bandwidth() const { return copy_bw_gb_s_; }
    void add(LaunchRecord r) { records_.push_back(std::move(r)); }
    const std::vector<LaunchRecord>& records() const { return records_; }
    std::vector<ProfileRow> rows() const;
    std::string table() const;
    std::string json() const;          // schema: docs/profiling.md
    std::string chrome_trace() const;  // trace-event format
    // Writes profile.json and trace.json into dir (created if missing); throws Error on failure.
    void dump(const std::string& dir) const;

private:
    std::vector<LaunchRecord> records_;
    double copy_bw_gb_s_ = 0;
    std::string device_;
};

}  // namespace jitllm
