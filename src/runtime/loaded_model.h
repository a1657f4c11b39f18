// LoadedModel: the one loading path of the runtime. A GGUF model (mmap + validation), its
// tokenizer checked against the weights, the plan for a context, and the backend that runs it
// (CUDA with `gpu`, OpenCL with `opencl`, else the CPU: its fast kernels, or the reference
// operations with `cpu_exact`). Engine and SequenceBatch each hold one.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/opencl/opencl_backend.h"
#include "model/model.h"
#include "plan/plan.h"
#include "tokenizer/tokenizer.h"

namespace jitllm {

// What every loaded model is asked for; EngineOptions and SequenceBatchOptions add their own.
struct LoadOptions {
    std::string model_path;
    int n_ctx = 0;       // positions (per sequence); 0: min(model context, 4096)
    int n_threads = 1;   // CPU threads; 0: all physical cores
    bool gpu = false;
    bool cpu_exact = false;  // CPU: the exact reference operations only (no fast kernels)
    CudaOptions cuda;    // with gpu: schedule, JIT cache, printing options
    bool opencl = false;  // the OpenCL backend (not with gpu)
    OpenClOptions cl;     // with opencl: device, schedule, program cache, printing options
};

class LoadedModel {
public:
    // Loads opt.model_path and its tokenizer, resolves the context (usage Error past the model's
    // context length), then `shape` completes the plan options for that context (batch rows,
    // sequences, the KV pool from the model's shape; it may throw on its own options) before the
    // plan and the backend are built.
    LoadedModel(const LoadOptions& opt, const std::function<void(PlanOptions&, const Model&)>& shape);
    ~LoadedModel();
    LoadedModel(const LoadedModel&) = delete;  // the backend holds a reference to plan
    LoadedModel& operator=(const LoadedModel&) = delete;

    Model& model() { return *model_; }
    const Model& model() const { return *model_; }
    const Tokenizer& tokenizer() const { return *tok_; }
    const Plan& plan() const { return plan_; }
    Backend& backend() { return *backend_; }
    const Backend& backend() const { return *backend_; }
    double load_ms() const { return load_ms_; }
    int n_threads() const { return n_threads_; }  // the CPU threads, the default resolved

private:
    std::unique_ptr<Model> model_;
    std::unique_ptr<Tokenizer> tok_;
    Plan plan_;
    std::unique_ptr<Backend> backend_;
    double load_ms_ = 0;
    int n_threads_ = 1;
};

}  // namespace jitllm
