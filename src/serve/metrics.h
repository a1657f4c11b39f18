// Server metrics in Prometheus text format (exposition 0.0.4), names prefixed `jitllm:` after
// llama-server's `llamacpp:` set: request and token counters, queue and slot gauges, a windowed
// decode rate, and TTFT / inter-token / end-to-end histograms. Updating and rendering are cheap
// and never wait on the engine.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace jitllm::serve {

class Histogram {
public:
    explicit Histogram(std::vector<double> bounds);
    void observe(double v);
    // Appends the _bucket/_sum/_count lines of `name`.
    void render(std::string& out, const std::string& name, const std::string& help) const;

private:
    std::vector<double> bounds_;
    mutable std::mutex mu_;
    std::vector<uint64_t> counts_;  // per bucket (non-cumulative), plus +Inf
    double sum_ = 0;
    uint64_t n_ = 0;
};

struct Gauges {
    int requests_processing = 0;
    int requests_deferred = 0;
    int slots_total = 0;
    int n_ctx = 0;
    bool ready = false;
    // the KV cache's pool (SequenceBatch): blocks in all, positions a block, held by requests,
    // held by none but keeping a prompt prefix for reuse
    int kv_blocks = 0, kv_block_tokens = 0, kv_blocks_used = 0, kv_blocks_cached = 0;
};

class Metrics {
public:
    Metrics();
    std::atomic<uint64_t> requests_total{0};      // completion requests admitted
    std::atomic<uint64_t> requests_finished{0};
    std::atomic<uint64_t> requests_cancelled{0};  // client went away
    std::atomic<uint64_t> rejected_queue_full{0};
    std::atomic<uint64_t> rejected_invalid{0};
    std::atomic<uint64_t> rejected_auth{0};
    std::atomic<uint64_t> rejected_unavailable{0};  // loading or shutting down
    std::atomic<uint64_t> prompt_tokens_total{0};
    std::atomic<uint64_t> prompt_tokens_reused_total{0};  // attached from the KV pool, not computed
    std::atomic<uint64_t> tokens_predicted_total{0};
    std::atomic<uint64_t> n_decode_total{0};        // scheduler steps
    std::atomic<uint64_t> busy_slots_total{0};      // sum over steps of the sequences in the step
    std::atomic<uint64_t> prompt_us_total{0};
    std::atomic<uint64_t> predicted_us_total{0};
    Histogram ttft, itl, e2e;

    // Records generated tokens for the windowed rate (called by the scheduler after a step).
    void add_decoded(uint64_t n);
    double decode_tokens_per_second() const;  // over the last kWindow seconds
    std::string render(const Gauges& g) const;

private:
    static constexpr int kWindow = 10;
    mutable std::mutex rate_mu_;
    std::array<uint64_t, kWindow + 2> bucket_{};
    std::array<int64_t, kWindow + 2> bucket_sec_{};
    std::chrono::steady_clock::time_point t0_;
};

}  // namespace jitllm::serve
