// SequenceBatch (see slots.h): load once, one backend per sequence, a step is a loop.
#include "runtime/slots.h"

#include <algorithm>
#include <chrono>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/gguf_reader.h"

namespace jitllm {

SequenceBatch::SequenceBatch(const SequenceBatchOptions& opt) {
    const auto t0 = std::chrono::steady_clock::now();
    if (opt.n_seq < 1) fail_usage("--parallel: expected at least 1 sequence, found {}", opt.n_seq);
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
    plan_ = plan_build(*model_, n_ctx);
    if (!opt.gpu) ThreadPool::set_global_threads(opt.n_threads);
    for (int i = 0; i < opt.n_seq; ++i) {
        if (opt.gpu)
            backends_.push_back(std::make_unique<CudaBackend>(plan_, opt.cuda));
        else
            backends_.push_back(std::make_unique<CpuBackend>(plan_, opt.n_threads));
    }
    load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

SequenceBatch::~SequenceBatch() = default;

std::string SequenceBatch::backend_name() const { return backends_.front()->name(); }

void SequenceBatch::run(std::vector<SeqStep>& steps) {
    const bool has_prefill = !plan_.prefill.empty();
    for (auto& s : steps) {
        JITLLM_CHECK(s.seq >= 0 && s.seq < n_seq(), "sequence {} outside [0, {})", s.seq, n_seq());
        JITLLM_CHECK(!s.tokens.empty(), "sequence {}: empty step", s.seq);
        JITLLM_CHECK(s.pos >= 0 && s.pos + int64_t(s.tokens.size()) <= n_ctx(),
                     "sequence {}: positions [{}, {}) outside the context {}", s.seq, s.pos,
                     s.pos + s.tokens.size(), n_ctx());
        Backend& b = *backends_[size_t(s.seq)];
        s.logits = nullptr;
        s.argmax = -1;
        for (size_t i = 0; i < s.tokens.size(); ++i) {
            const bool last = i + 1 == s.tokens.size();
            const int pos = s.pos + int(i);
            if (last && s.want_logits) {
                s.logits = b.decode(s.tokens[i], pos);
                s.argmax = b.sampled_token();
            } else if (has_prefill) {
                b.prefill(s.tokens[i], pos);
            } else {
                b.decode(s.tokens[i], pos);
            }
        }
    }
}

void SequenceBatch::reset(int seq) {
    JITLLM_CHECK(seq >= 0 && seq < n_seq(), "sequence {} outside [0, {})", seq, n_seq());
    backends_[size_t(seq)]->reset();
}

}  // namespace jitllm
