// Engine (see engine.h).
#include "runtime/engine.h"

#include <algorithm>
#include <chrono>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/gguf_reader.h"
#include "profile/nvtx.h"

namespace jitllm {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Engine::Engine(EngineOptions opt) : opt_(std::move(opt)) {
    const auto t0 = std::chrono::steady_clock::now();
    NvtxRange load_range("load", NvtxColor::Load);
    model_ = load_model(opt_.model_path);
    tok_ = Tokenizer::from_gguf(*model_->gguf);
    if (tok_->n_vocab() != model_->config.n_vocab)
        fail("{}: tokenizer has {} tokens but token_embd.weight has {} rows", opt_.model_path,
             tok_->n_vocab(), model_->config.n_vocab);
    const int model_ctx = model_->config.n_ctx_train;
    int n_ctx = opt_.n_ctx > 0 ? opt_.n_ctx : std::min(model_ctx, 4096);
    if (n_ctx > model_ctx)
        fail_usage("--ctx-size {} exceeds the model's context length {} ({}.context_length); "
                   "hint: lower --ctx-size", n_ctx, model_ctx, model_->config.arch);
    if (opt_.batch_prefill_size < 0)
        fail_usage("--batch-prefill-size: expected 0 (off) or a positive chunk size, found {}",
                   opt_.batch_prefill_size);
    PlanOptions po;
    po.n_ctx = n_ctx;
    po.batch_rows = std::min(opt_.batch_prefill_size, n_ctx);
    plan_ = plan_build(*model_, po);
    if (opt_.gpu) {
        backend_ = std::make_unique<CudaBackend>(plan_, opt_.cuda);
    } else {
        ThreadPool::set_global_threads(opt_.n_threads);
        backend_ = std::make_unique<CpuBackend>(plan_, opt_.n_threads);
    }
    times_.load_ms = ms_since(t0);
}

Engine::~Engine() = default;

const float* Engine::feed(const std::vector<int32_t>& ids) {
    JITLLM_CHECK(queued_ == 0, "feed with {} queued decode steps not collected", queued_);
    if (ids.empty()) return nullptr;
    if (pos_ + int64_t(ids.size()) > n_ctx())
        fail("context overflow: {} tokens at position {} need {} positions, the context holds {}; "
             "hint: raise --ctx-size or shorten the prompt", ids.size(), pos_, pos_ + ids.size(), n_ctx());
    for (int32_t id : ids)
        if (id < 0 || id >= model_->config.n_vocab)
            fail("token id {} is outside the vocabulary [0, {})", id, model_->config.n_vocab);
    const float* logits = nullptr;
    if (plan_.batch_rows > 0 && ids.size() > 1) {
        // prompt chunks through the batch phase; the last chunk computes the last row's logits
        const int n = int(ids.size()), chunk = plan_.batch_rows;
        std::vector<int32_t> pos(static_cast<size_t>(chunk)), seq(static_cast<size_t>(chunk), 0);
        for (int c0 = 0; c0 < n; c0 += chunk) {
            const int m = std::min(chunk, n - c0);
            for (int i = 0; i < m; ++i) pos[size_t(i)] = pos_ + i;
            BatchStep st;
            st.tokens = ids.data() + c0;
            st.pos = pos.data();
            st.seq = seq.data();
            st.n = m;
            st.logits_last = c0 + m == n;
            backend_->batch(st);
            pos_ += m;
        }
        return backend_->batch_logits(0);
    }
    for (size_t i = 0; i < ids.size(); ++i) {
        const bool last = i + 1 == ids.size();
        if (!last && opt_.with_prefill_decode)
            backend_->prefill(ids[i], pos_);
        else
            logits = backend_->decode(ids[i], pos_);
        ++pos_;
    }
    return logits;
}

void Engine::queue_decode(int32_t token) {
    if (pos_ >= n_ctx())
        fail("context overflow: a token at position {} needs {} positions, the context holds {}; "
             "hint: raise --ctx-size or shorten the prompt", pos_, pos_ + 1, n_ctx());
    if (token >= model_->config.n_vocab)
        fail("token id {} is outside the vocabulary [0, {})", token, model_->config.n_vocab);
    backend_->decode_queue(token, pos_);
    ++pos_;
    ++queued_;
}

int32_t Engine::collect_decode() {
    JITLLM_CHECK(queued_ > 0, "collect_decode with no queued decode step");
    --queued_;
    return backend_->decode_collect();
}

void Engine::drop_position() {
    JITLLM_CHECK(pos_ > 0, "drop_position at position 0");
    --pos_;
}

void Engine::reset() {
    while (queued_ > 0) collect_decode();
    pos_ = 0;
    backend_->reset();
}

}  // namespace jitllm
