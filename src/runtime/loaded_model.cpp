// LoadedModel (see loaded_model.h).
#include "runtime/loaded_model.h"

#include <algorithm>
#include <chrono>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/fast/fast_ops.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/gguf_reader.h"
#include "profile/nvtx.h"

namespace jitllm {

LoadedModel::LoadedModel(const LoadOptions& opt, const std::function<void(PlanOptions&, const Model&)>& shape) {
    const auto t0 = std::chrono::steady_clock::now();
    NvtxRange load_range("load", NvtxColor::Load);
    model_ = load_model(opt.model_path);
    tok_ = Tokenizer::from_gguf(*model_->gguf);
    if (tok_->n_vocab() != model_->config.n_vocab)
        fail("{}: tokenizer has {} tokens but token_embd.weight has {} rows", opt.model_path,
             tok_->n_vocab(), model_->config.n_vocab);
    const int model_ctx = model_->config.n_ctx_train;
    const int n_ctx = opt.n_ctx > 0 ? opt.n_ctx : std::min(model_ctx, 4096);
    if (n_ctx > model_ctx)
        fail_usage("--ctx-size {} exceeds the model's context length {} ({}.context_length); "
                   "hint: lower --ctx-size", n_ctx, model_ctx, model_->config.arch);
    PlanOptions po;
    po.n_ctx = n_ctx;
    if (shape) shape(po, *model_);
    plan_ = plan_build(*model_, po);
    if (opt.gpu && opt.opencl) fail_usage("--gpu and --opencl: expected one device backend, found both");
    if (opt.opencl) {
        backend_ = std::make_unique<OpenClBackend>(plan_, opt.cl);
    } else if (opt.gpu) {
        backend_ = std::make_unique<CudaBackend>(plan_, opt.cuda);
    } else {
        n_threads_ = opt.n_threads > 0 ? opt.n_threads : cpu::fast::physical_cores();
        ThreadPool::set_global_threads(n_threads_);
        backend_ = std::make_unique<CpuBackend>(plan_, n_threads_, !opt.cpu_exact);
    }
    load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

LoadedModel::~LoadedModel() = default;

}  // namespace jitllm
