// Backend interface: executes a Plan's phases for one sequence (KV cache owned by the backend).
// Kept small on purpose; everything device-specific stays behind it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>

#include "plan/plan.h"

namespace jitllm {

// A sampled pick made on the device (Backend::set_draw): top-k, then top-p, min-p and the
// temperature over the k best, as runtime/sampler.cpp does, with the uniform number
// sampler_uniform(seed, draw) (runtime/sampler.h); the counter advances one a pick.
struct DrawParams {
    float temperature = 0.0f;
    float top_p = 1.0f;
    float min_p = 0.0f;
    int32_t top_k = 0;
    uint64_t seed = 0;
    uint64_t draw = 0;  // the counter of the next draw
};

// Whether a device draw takes p: a temperature > 0 and 1 <= top_k <= max_k (the largest k the
// backend's draw holds), top_k < n_vocab.
inline bool draw_in_bounds(const DrawParams& p, int n_vocab, int max_k) {
    return p.temperature > 0.0f && p.top_k >= 1 && p.top_k <= max_k && p.top_k < n_vocab;
}

// One step of the batch phase: row i is token tokens[i] at position pos[i] of sequence seq[i]
// (< plan.n_seq). Every row's K/V is stored before any row attends, and a row attends to its
// sequence's cache up to its own position, so a prompt chunk is causal whatever the rows' order.
// With `logits`, every row gets logits and a pick (n <= plan.n_seq): the argmax, or a draw
// (`draw`); with logits_first = k, rows 0 .. k - 1 do (k <= plan.n_seq), the others do not (a
// decode step and prompt chunks in one step; where Backend::batch_logits_first()).
struct BatchStep {
    const int32_t* tokens = nullptr;
    const int32_t* pos = nullptr;
    const int32_t* seq = nullptr;
    int n = 0;
    bool logits = false;       // logits and a pick for every row (n <= n_seq)
    int logits_first = 0;      // logits and a pick for rows [0, logits_first) (without `logits`)
    bool logits_last = false;  // only for the last row, reported as row 0 (a prompt's last chunk);
                               // also what sampled_token() returns next
    // with logits (or logits_first): row i's pick drawn on the device with draw[i] (DrawParams
    // above; temperature 0: the argmax), only where Backend::batch_draw_max_k() > 0 and draw[i] is
    // within it; nullptr: every row's argmax
    const DrawParams* draw = nullptr;
};

// What a backend says about itself to the faces (run's metrics, bench's fields).
struct BackendInfo {
    std::string backends = "CPU";  // llama-bench's `backends` field: "CPU", "CUDA"
    std::string kv_type = "f32";   // the K/V cache's elements: "f32", "f16"
    // a GPU backend: its device's name, arch ("sm_90") and PCI bus id (NVML's key)
    bool gpu = false;
    std::string gpu_name, gpu_arch, pci_bus_id;
    // kernels JIT-compiled at start (jit): the wall time, variants compiled and taken from the disk cache
    bool jit = false;
    double jit_wall_ms = 0;
    int jit_compiled = 0, jit_cached = 0;
    // a CPU backend: the instruction sets of its products ("fast avx512-vnni, other types exact avx2")
    std::string cpu_products;
};

// The bytes one decode step moves at n cached positions: fixed + per_pos * n. CPU: the plan's
// Task::weight_bytes plus the float32 K and V rows read by attention; a GPU backend: its kernels'
// bytes (weights and activations) and bytes per position.
struct DecodeBytes {
    uint64_t fixed = 0;
    uint64_t per_pos = 0;
};

// A GPU backend's DecodeBytes: the sums of its decode launches' bytes and bytes_per_pos.
template <class Steps>
DecodeBytes launch_decode_bytes(const Steps& steps) {
    DecodeBytes b;
    for (const auto& k : steps) {
        b.fixed += k.bytes;
        b.per_pos += k.bytes_per_pos;
    }
    return b;
}

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    // Runs the decode phase for `token` at position `pos` (0-based, < n_ctx) and returns the
    // host logits (n_vocab floats, valid until the next call). Also runs `sample` (argmax).
    virtual const float* decode(int32_t token, int pos) = 0;
    // Runs the prefill phase (no logits) for `token` at `pos`.
    virtual void prefill(int32_t token, int pos) = 0;
    // The token chosen by the plan's `sample` task in the last decode (greedy argmax).
    virtual int32_t sampled_token() const = 0;
    // Whether decode() and batch_logits() must return logits. With greedy sampling on the device
    // (`sample` task) the caller only needs sampled_token(), and a GPU backend then skips the
    // logits copy: the pointers those calls return stay valid, their contents undefined.
    virtual void set_logits_needed(bool needed) { (void)needed; }
    // Sampled picks on the device: from now on the decode steps' `sample` task draws with `p`
    // (its counter advancing one a step) instead of taking the argmax, for sampled_token() and
    // decode_queue / decode_collect; nullptr: the argmax again. Returns false when this backend
    // cannot draw with p (nothing changes; the caller samples the logits on the host).
    // Largest top-k a device draw takes: draw_max_k() (0: none).
    virtual bool set_draw(const DrawParams* p) { return p == nullptr; }
    virtual int draw_max_k() const { return 0; }
    // Largest top-k a batch step's device draw takes (BatchStep::draw; 0: batch steps only take
    // the argmax, and ignore draw).
    virtual int batch_draw_max_k() const { return 0; }
    // Greedy decode that runs ahead: decode_queue() queues a decode step at `pos` whose input is
    // `token`, or with token < 0 the previous step's greedy pick, taken where it was made; a GPU
    // backend queues it without waiting, so the host reads one step's pick while the next step
    // runs. decode_collect() waits for the oldest queued step and returns its pick (then also
    // sampled_token()). Logits are not kept. The default runs each step at once.
    virtual void decode_queue(int32_t token, int pos) {
        decode(token >= 0 ? token : sampled_token(), pos);
        picks_.push_back(sampled_token());
    }
    virtual int32_t decode_collect() {
        const int32_t t = picks_.front();
        picks_.pop_front();
        return t;
    }
    // Whether decode_queue() returns before its step has run (while no logits are needed): then a
    // caller gains by queuing the next step before it reads a pick. False where each step runs
    // at once (queuing ahead would only delay the pick behind a step that may go unused).
    virtual bool decode_queues_ahead() const { return false; }
    // A decode step whose pick keeps to a token mask (constrained output): runs the decode phase
    // for `token` at `pos`, calls `mask` for the tokens that may be picked (bits over the
    // vocabulary, bit id % 32 of word id / 32) while the device computes the logits, and picks
    // among them (the argmax, or the draw set by set_draw) for sampled_token(); the logits
    // (decode()'s, when needed) come masked. Returns false, having run nothing, where the backend
    // does not take masks: the caller decodes and masks the host logits itself.
    virtual bool decode_masked(int32_t token, int pos, const std::function<const uint32_t*()>& mask) {
        (void)token, (void)pos, (void)mask;
        return false;
    }
    // Runs the batch phase (needs a plan with batch_rows >= step.n).
    virtual void batch(const BatchStep& step) = 0;
    // Whether batch() takes BatchStep::logits_first (else a caller splits such a step in two).
    virtual bool batch_logits_first() const { return false; }
    // After a batch step with logits: row i's logits (host, n_vocab floats) and greedy pick.
    virtual const float* batch_logits(int row) = 0;
    virtual int32_t batch_sampled(int row) const = 0;
    // The paged KV cache (Plan::kv_blocks blocks of Plan::kv_block positions): sequence seq's
    // block table from now on, blocks[b] holding its positions [b * kv_block, (b + 1) * kv_block)
    // for b < n (n <= Plan::kv_blocks_per_seq()), read and written by the batch phase. Until a
    // sequence's table is set it has blocks seq * kv_blocks_per_seq() + b. Returns false where
    // the backend keeps that fixed layout (nothing changes; no paging, no shared blocks).
    virtual bool set_kv_blocks(int seq, const int32_t* blocks, int n) { return false; }
    // Forget the KV cache (a new sequence starts at position 0). Nothing to do where every step
    // writes a position's K/V before any step reads it, as in every backend here.
    virtual void reset() {}
    // Task executions counted so far, by task name ("blk.0.attn_norm" -> 12).
    const std::map<std::string, uint64_t>& task_counts() const { return counts_; }

    // The device, cache type and start-up figures (the CPU's: "CPU", f32, no JIT).
    virtual BackendInfo info() const { return {}; }
    // Bytes of device memory our allocations hold now (weights + KV + scratch); 0 on the host.
    virtual uint64_t device_bytes() const { return 0; }
    // The kernel launches a run of shape r makes, per phase and per token (--print-plan), the
    // first warmup_tokens generated tokens apart; empty where each task is one call (the CPU:
    // the plan's task list says it all).
    virtual std::string describe_launches(const RunShape& r, int warmup_tokens) const { return {}; }
    virtual DecodeBytes decode_bytes() const = 0;
    // Copy bandwidth of the memory the weights live in, in GB/s counting read + write bytes: the
    // median of several copies of `bytes` after a warm-up (0: a default far beyond the caches).
    virtual double copy_bandwidth_gb_s(size_t bytes) = 0;

protected:
    std::deque<int32_t> picks_;  // the default decode_queue's picks, oldest first
    std::map<std::string, uint64_t> counts_;  // task_counts(), which each backend keeps
};

}  // namespace jitllm
