// A decode step with a token mask (Backend::decode_masked, constrained output): the decode list's
// kernels but its pick (a graph of their own) are queued first, so the host builds the mask while
// the device runs them; then the mask is copied over, logit_mask.cu sets the logits of the tokens
// it leaves out to -inf, and the list's own pick kernel (the argmax, or the draw) picks. The pick
// stays on the device: only the mask (n_vocab / 8 bytes) goes over, nothing comes back but the token.
#include <cstring>

#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace jitllm {

void CudaBackend::load_mask_kernel() {
    Variant v("cuda/logit_mask.cu", "logit_mask");
    v.set("N", int(n_vocab_)).set("BLOCK", 256);
    JitOptions jo;
    jo.cache = opt_.cache;
    JitCompiler jit(ctx_->device().arch, jo);
    const CompiledKernel k = jit.compile(v);
    (k.from_cache ? init_.jit_cached : init_.jit_compiled)++;
    const size_t bytes = (n_vocab_ + 31) / 32 * 4;
    mask_dev_ = ctx_->alloc((bytes + 255) / 256 * 256, MemCategory::Scratch, "logit_mask");
    JITLLM_CUDA_TRY(ctx_->driver(), cuMemAllocHost(reinterpret_cast<void**>(&host_mask_), bytes));
    mask_fn_ = ctx_->function(ctx_->load_module(k.cubin, v.display_name()), v.symbol);
}

bool CudaBackend::decode_masked(int32_t token, int pos, const std::function<const uint32_t*()>& mask) {
    JITLLM_CHECK(pos >= 0 && pos < plan_.n_ctx, "pos {} outside [0, {})", pos, plan_.n_ctx);
    JITLLM_CHECK(queue_.empty(), "decode_masked with {} decode steps queued", queue_.size());
    if (opt_.profiler) return false;  // (the profiler times whole lists)
    // the lists whose last kernel is the pick alone (not fused into the output gemv)
    const int li = pos < sched_.decode_short_below ? 1 : 0;
    const std::vector<Launch>& launches = decode_lists_[li];
    if (launches.empty()) return false;
    const KernelStep& pick = *launches.back().step;
    if (pick.tasks.size() != 1 || plan_.phase(Phase::Decode)[size_t(pick.tasks[0])].kind != TaskKind::Sample)
        return false;
    if (!mask_fn_) load_mask_kernel();
    const CudaDriver& d = ctx_->driver();
    const CUstream st = ctx_->stream();
    auto launch = [&](const Launch& l) {
        ctx_->launch(l.fn, l.step->grid, l.step->block, l.step->smem, const_cast<void**>(l.ptrs.data()), l.step->pdl,
                     l.step->cluster);
    };
    host_io_[0] = token;
    host_io_[1] = pos;
    dev_pos_ = -1;
    JITLLM_CUDA_TRY(d, cuMemcpyHtoDAsync(slots_[size_t(Slot::Token)], host_io_, 8, st));
    const size_t n_body = launches.size() - 1;
    CUgraphExec& g = masked_graph_[li];
    if (!opt_.graphs || opt_.nvtx_tasks) {
        for (size_t i = 0; i < n_body; ++i) launch(launches[i]);
    } else {
        if (!g) {
            CUgraph graph = nullptr;
            JITLLM_CUDA_TRY(d, cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_RELAXED));
            for (size_t i = 0; i < n_body; ++i) launch(launches[i]);
            JITLLM_CUDA_TRY(d, cuStreamEndCapture(st, &graph));
            JITLLM_CUDA_TRY(d, cuGraphInstantiateWithFlags(&g, graph, 0));
            d.cuGraphDestroy(graph);
        }
        JITLLM_CUDA_TRY(d, cuGraphLaunch(g, st));
    }
    const uint32_t* bits = nullptr;
    try {
        bits = mask();  // the host's work while the device runs the step
    } catch (...) {
        ctx_->synchronize();  // (the step's kernels still read host_io_)
        throw;
    }
    const size_t bytes = (n_vocab_ + 31) / 32 * 4;
    std::memcpy(host_mask_, bits, bytes);
    JITLLM_CUDA_TRY(d, cuMemcpyHtoDAsync(mask_dev_, host_mask_, bytes, st));
    CUdeviceptr logits = slots_[size_t(Slot::Logits)];
    void* args[] = {&logits, &mask_dev_};
    ctx_->launch(mask_fn_, Dim3(unsigned((n_vocab_ + 255) / 256)), Dim3(256), 0, args);
    launch(launches.back());
    if (logits_needed_) JITLLM_CUDA_TRY(d, cuMemcpyDtoHAsync(logits_, logits, n_vocab_ * 4, st));
    JITLLM_CUDA_TRY(d, cuMemcpyDtoHAsync(host_io_ + 2, scratch_.at("token_out"), 4, st));
    ctx_->synchronize();
    token_out_ = host_io_[2];
    dev_pos_ = advanced_pos(pos);
    for (auto* c : count_ptrs_[int(Phase::Decode)]) ++*c;
    steps_[int(Phase::Decode)]++;
    return true;
}

}  // namespace jitllm
