// CPU backend: executes the plan task by task with the reference operations of cpu_ops.h.
// Activations and the KV cache are float32. Threads split matrix rows (--threads).
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_ops.h"

namespace jitllm {

class CpuBackend : public Backend {
public:
    CpuBackend(const Plan& plan, int n_threads);
    std::string name() const override { return "cpu"; }
    const float* decode(int32_t token, int pos) override;
    void prefill(int32_t token, int pos) override;
    int32_t sampled_token() const override { return token_out_; }
    void reset() override {}
    const std::map<std::string, uint64_t>& task_counts() const override { return counts_; }

    // Executes one task (the reference for the GPU kernel of the same kind).
    void run_task(const Task& t);
    // Executes tasks[i] for i in `indices` with the given token and position (kernel tests).
    void run_tasks_at(const std::vector<Task>& tasks, const std::vector<int>& indices, int32_t token, int pos);
    float* slot(Slot s, int layer = 0);

private:
    void run_phase(const std::vector<Task>& tasks, int32_t token, int pos);
    const Plan& plan_;
    const ModelConfig& c_;
    int n_threads_;
    int pos_ = 0;
    int32_t token_ = 0, token_out_ = 0;
    std::vector<std::vector<float>> slots_;     // by Slot (KCache/VCache unused here)
    std::vector<std::vector<float>> k_cache_;   // per layer (n_ctx, kv_dim)
    std::vector<std::vector<float>> v_cache_;
    std::map<std::string, uint64_t> counts_;
    std::vector<uint64_t*> count_ptrs_decode_, count_ptrs_prefill_;
};

}  // namespace jitllm
