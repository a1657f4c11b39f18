// Engine (see engine.h).
#include "runtime/engine.h"

#include <algorithm>

#include "core/error.h"

namespace jitllm {

namespace {
EngineOptions with_prompt_chunks(EngineOptions opt) {
    opt.batch_prefill_size = prompt_chunk_rows(opt.batch_prefill_size, opt.gpu, opt.with_prefill_decode);
    return opt;
}
}  // namespace

// The batch phase's rows: the prompt chunk size, at most the context.
Engine::Engine(EngineOptions opt)
    : opt_(with_prompt_chunks(std::move(opt))), lm_(opt_, [this](PlanOptions& po, const Model&) {
          if (opt_.batch_prefill_size < 0)
              fail_usage("--batch-prefill-size: expected 0 (off) or a positive chunk size, found {}",
                         opt_.batch_prefill_size);
          po.batch_rows = std::min(opt_.batch_prefill_size, po.n_ctx);
      }) {
    times_.load_ms = lm_.load_ms();
}

Engine::~Engine() = default;

const float* Engine::feed(const std::vector<int32_t>& ids) {
    JITLLM_CHECK(queued_ == 0, "feed with {} queued decode steps not collected", queued_);
    if (ids.empty()) return nullptr;
    if (pos_ + int64_t(ids.size()) > n_ctx())
        fail("context overflow: {} tokens at position {} need {} positions, the context holds {}; "
             "hint: raise --ctx-size or shorten the prompt", ids.size(), pos_, pos_ + ids.size(), n_ctx());
    for (int32_t id : ids)
        if (id < 0 || id >= plan().config->n_vocab)
            fail("token id {} is outside the vocabulary [0, {})", id, plan().config->n_vocab);
    const float* logits = nullptr;
    if (plan().batch_rows > 0 && ids.size() > 1) {
        // prompt chunks through the batch phase; the last chunk computes the last row's logits
        const int n = int(ids.size()), chunk = plan().batch_rows;
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
            backend().batch(st);
            pos_ += m;
        }
        return backend().batch_logits(0);
    }
    for (size_t i = 0; i < ids.size(); ++i) {
        const bool last = i + 1 == ids.size();
        if (!last && opt_.with_prefill_decode)
            backend().prefill(ids[i], pos_);
        else
            logits = backend().decode(ids[i], pos_);
        ++pos_;
    }
    return logits;
}

void Engine::queue_decode(int32_t token) {
    if (pos_ >= n_ctx())
        fail("context overflow: a token at position {} needs {} positions, the context holds {}; "
             "hint: raise --ctx-size or shorten the prompt", pos_, pos_ + 1, n_ctx());
    if (token >= plan().config->n_vocab)
        fail("token id {} is outside the vocabulary [0, {})", token, plan().config->n_vocab);
    backend().decode_queue(token, pos_);
    ++pos_;
    ++queued_;
}

bool Engine::feed_masked(int32_t token, const std::function<const uint32_t*()>& mask) {
    JITLLM_CHECK(queued_ == 0, "feed_masked with {} queued decode steps not collected", queued_);
    if (pos_ >= n_ctx())
        fail("context overflow: a token at position {} needs {} positions, the context holds {}; "
             "hint: raise --ctx-size or shorten the prompt", pos_, pos_ + 1, n_ctx());
    if (token < 0 || token >= plan().config->n_vocab)
        fail("token id {} is outside the vocabulary [0, {})", token, plan().config->n_vocab);
    if (!backend().decode_masked(token, pos_, mask)) return false;
    ++pos_;
    return true;
}

int32_t Engine::collect_decode() {
    JITLLM_CHECK(queued_ > 0, "collect_decode with no queued decode step");
    --queued_;
    return backend().decode_collect();
}

void Engine::drop_position() {
    JITLLM_CHECK(pos_ > 0, "drop_position at position 0");
    --pos_;
}

void Engine::reset() {
    while (queued_ > 0) collect_decode();
    pos_ = 0;
    backend().reset();
}

}  // namespace jitllm
