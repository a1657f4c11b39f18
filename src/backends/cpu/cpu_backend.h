// CPU backend: executes the plan task by task with the reference operations of cpu_ops.h.
// Activations and the KV cache are float32. Threads split matrix rows (--threads).
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/fast/packed.h"
#include "backends/cpu/cpu_ops.h"

namespace jitllm {

// Host copy bandwidth in GB/s (read + write bytes): the median of 5 memcpy of `bytes` (0: 256 MiB,
// far beyond any last-level cache), each split over n_threads threads, after a warm-up.
double cpu_copy_bandwidth_gb_s(int n_threads, size_t bytes);

class CpuBackend : public Backend {
public:
    // fast: the products and attention of cpu/fast (fast_ops.h) where the CPU has them; false: the
    // exact reference operations only (--cpu-exact; the kernel tests' reference)
    CpuBackend(const Plan& plan, int n_threads, bool fast = false);
    std::string name() const override { return "cpu"; }
    // cpu_products: the instruction sets the products run with, "fast avx512-vnni, other types
    // exact avx2" or "exact avx2" (bench and run print it)
    BackendInfo info() const override;
    const float* decode(int32_t token, int pos) override;
    void prefill(int32_t token, int pos) override;
    int32_t sampled_token() const override { return token_out_; }
    // Each step at once (as Backend's), the picks kept in a buffer that never shrinks: no
    // allocation in the decode loop
    void decode_queue(int32_t token, int pos) override;
    int32_t decode_collect() override;
    void batch(const BatchStep& step) override;
    bool batch_logits_first() const override { return true; }
    const float* batch_logits(int row) override;
    int32_t batch_sampled(int row) const override;
    bool set_kv_blocks(int seq, const int32_t* blocks, int n) override;
    DecodeBytes decode_bytes() const override;
    // memcpy of `bytes` (0: 256 MiB) split over the backend's threads
    double copy_bandwidth_gb_s(size_t bytes) override { return cpu_copy_bandwidth_gb_s(n_threads_, bytes); }

    // Executes one task over the current rows (the reference for the GPU kernel of the same kind).
    void run_task(const Task& t);
    // Executes tasks[i] for i in `indices` with the given token and position (kernel tests).
    void run_tasks_at(const std::vector<Task>& tasks, const std::vector<int>& indices, int32_t token, int pos);
    // The same for batch-phase tasks over the rows of `step` (kernel tests).
    void run_batch_tasks_at(const std::vector<int>& indices, const BatchStep& step);
    // Row 0 of a slot; KCache/VCache: the pool of `layer` (sequence 0's positions first until its
    // block table is set).
    float* slot(Slot s, int layer = 0);
    float* row(Slot s, int r) { return slot(s) + size_t(r) * size_t(slot_row_elems(plan_, s)); }

private:
    void run_phase(const std::vector<Task>& tasks, int32_t token, int pos);
    void set_rows(const BatchStep& step);
    void set_single_row(int32_t token, int pos);  // decode / prefill: one row, sequence 0
    // The matrix products of t (q/k/v, attn_output, gate/up, down, output) over every current row at
    // once, with their biases and scale; false for any other task kind.
    bool run_products(const Task& t);
    // The mixture-of-experts tasks (cpu_moe.cpp) over every current row; false for any other kind.
    bool run_moe(const Task& t);
    // Pool row of (sequence, position): through the sequence's block table; seq -1 (decode and
    // prefill's one row): row pos, whatever sequence 0's table says.
    size_t pool_row(int seq, int pos) const;
    float* cache_row(Slot s, int layer, int seq, int pos) {
        return slot(s, layer) + pool_row(seq, pos) * size_t(c_.kv_dim());
    }
    // The attention of row r over positions [first, pos] of its sequence (the rows gathered from
    // their blocks where they are not consecutive in the pool).
    void attention_row(const Task& t, int r, int seq, int first, int pos);
    const Plan& plan_;
    const ModelConfig& c_;
    int n_threads_;
    bool fast_;
    cpu::fast::PackedWeights packed_;  // fast_: the products' weights in the packed layout (where it has one)
    int pos_ = 0;
    int32_t token_ = 0, token_out_ = 0;
    // rows of the task being run: decode/prefill = one row (token_, pos_, pool rows by position)
    int n_rows_ = 1;
    const int32_t* row_tok_ = &token_;
    const int32_t* row_pos_ = &pos_;
    const int32_t* row_seq_ = nullptr;  // null: pool row = position
    bool row_logits_ = false;
    std::vector<std::vector<float>> slots_;     // by Slot (KCache/VCache unused here)
    std::vector<std::vector<float>> k_cache_;   // per layer (kv_blocks * kv_block, kv_dim): the pool
    std::vector<std::vector<float>> v_cache_;
    std::vector<int32_t> kv_table_;             // (n_seq, kv_blocks_per_seq): pool blocks, -1 none
    std::vector<uint64_t*> count_ptrs_decode_, count_ptrs_prefill_, count_ptrs_batch_;
    std::vector<int32_t> batch_tok_, batch_pos_, batch_seq_;
    std::vector<float> moe_y_;  // one expert's output row (run_moe)
    std::vector<int32_t> queued_picks_;  // decode_queue's picks; the oldest not collected at queued_head_
    size_t queued_head_ = 0;
};

}  // namespace jitllm
