// Metrics (see metrics.h).
#include "serve/metrics.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace jitllm::serve {

namespace {

void line(std::string& out, const char* type, const std::string& name, const std::string& help,
          double value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
}

uint64_t resident_bytes() {
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long size = 0, rss = 0;
    const int n = std::fscanf(f, "%lu %lu", &size, &rss);
    std::fclose(f);
    return n == 2 ? uint64_t(rss) * uint64_t(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
    size_t i = 0;
    while (i < bounds_.size() && v > bounds_[i]) ++i;
    std::lock_guard<std::mutex> lk(mu_);
    ++counts_[i];
    sum_ += v;
    ++n_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
    std::lock_guard<std::mutex> lk(mu_);
    out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    uint64_t acc = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
        acc += counts_[i];
        out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], acc);
    }
    acc += counts_.back();
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, acc, name, sum_, name, n_);
}

Metrics::Metrics()
    : ttft({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      itl({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      e2e({0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}),
      t0_(std::chrono::steady_clock::now()) {
    bucket_sec_.fill(-1);
}

void Metrics::add_decoded(uint64_t n) {
    const int64_t sec =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0_).count();
    const size_t i = size_t(sec % int64_t(bucket_.size()));
    std::lock_guard<std::mutex> lk(rate_mu_);
    if (bucket_sec_[i] != sec) {
        bucket_sec_[i] = sec;
        bucket_[i] = 0;
    }
    bucket_[i] += n;
}

double Metrics::decode_tokens_per_second() const {
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0_).count();
    std::lock_guard<std::mutex> lk(rate_mu_);
    uint64_t n = 0;
    // the last kWindow complete seconds (the current one is still filling)
    for (size_t i = 0; i < bucket_.size(); ++i)
        if (bucket_sec_[i] >= now - kWindow && bucket_sec_[i] < now) n += bucket_[i];
    return double(n) / kWindow;
}

std::string Metrics::render(const Gauges& g) const {
    std::string o;
    o.reserve(4096);
    auto counter = [&](const char* name, const char* help, double v) {
        line(o, "counter", std::string("jitllm:") + name, help, v);
    };
    auto gauge = [&](const char* name, const char* help, double v) {
        line(o, "gauge", std::string("jitllm:") + name, help, v);
    };
    counter("requests_total", "Completion requests admitted.", double(requests_total.load()));
    counter("requests_finished_total", "Completion requests that finished generating.", double(requests_finished.load()));
    counter("requests_cancelled_total", "Completion requests cancelled because the client went away.",
            double(requests_cancelled.load()));
    o += "# HELP jitllm:requests_rejected_total Requests refused, by reason.\n"
         "# TYPE jitllm:requests_rejected_total counter\n";
    o += fmt::format("jitllm:requests_rejected_total{{reason=\"queue_full\"}} {}\n", rejected_queue_full.load());
    o += fmt::format("jitllm:requests_rejected_total{{reason=\"invalid\"}} {}\n", rejected_invalid.load());
    o += fmt::format("jitllm:requests_rejected_total{{reason=\"auth\"}} {}\n", rejected_auth.load());
    o += fmt::format("jitllm:requests_rejected_total{{reason=\"unavailable\"}} {}\n", rejected_unavailable.load());
    counter("prompt_tokens_total", "Prompt tokens processed.", double(prompt_tokens_total.load()));
    counter("prompt_seconds_total", "Time spent on prompt tokens.", double(prompt_us_total.load()) * 1e-6);
    counter("prompt_tokens_reused_total", "Prompt tokens whose KV cache an earlier request computed (prefix reuse).",
            double(prompt_tokens_reused_total.load()));
    counter("tokens_predicted_total", "Tokens generated.", double(tokens_predicted_total.load()));
    counter("tokens_predicted_seconds_total", "Time spent generating tokens.", double(predicted_us_total.load()) * 1e-6);
    counter("n_decode_total", "Scheduler steps (each runs every active sequence once).", double(n_decode_total.load()));
    const uint64_t steps = n_decode_total.load();
    gauge("n_busy_slots_per_decode", "Average sequences per step.",
          steps ? double(busy_slots_total.load()) / double(steps) : 0.0);
    gauge("predicted_tokens_seconds", "Generated tokens per second over the last 10 s.", decode_tokens_per_second());
    gauge("requests_processing", "Requests holding a slot.", g.requests_processing);
    gauge("requests_deferred", "Requests waiting for a slot (queue depth).", g.requests_deferred);
    gauge("slots_total", "Sequence slots (--parallel).", g.slots_total);
    gauge("n_ctx", "Context length of each slot.", g.n_ctx);
    gauge("kv_cache_blocks_total", "KV cache pool blocks (--kv-pool-tokens in blocks).", g.kv_blocks);
    gauge("kv_cache_block_tokens", "Positions a KV cache block holds.", g.kv_block_tokens);
    gauge("kv_cache_blocks_used", "KV cache blocks held by requests.", g.kv_blocks_used);
    gauge("kv_cache_blocks_cached", "KV cache blocks held by no request, keeping a prompt prefix for reuse.",
          g.kv_blocks_cached);
    gauge("kv_cache_usage_ratio", "KV cache blocks held by requests over the pool's.",
          g.kv_blocks ? double(g.kv_blocks_used) / double(g.kv_blocks) : 0.0);
    gauge("ready", "1 once the model is loaded and the server is not shutting down.", g.ready ? 1 : 0);
    gauge("process_resident_memory_bytes", "Resident set size of the server process.", double(resident_bytes()));
    ttft.render(o, "jitllm:time_to_first_token_seconds", "Time from admission to the first generated token.");
    itl.render(o, "jitllm:inter_token_latency_seconds", "Time between consecutive generated tokens of a request.");
    e2e.render(o, "jitllm:e2e_request_latency_seconds", "Time from admission to the last token.");
    return o;
}

}  // namespace jitllm::serve
