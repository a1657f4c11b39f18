// SequenceBatch (see slots.h): one LoadedModel, a step is its rows packed into batch steps.
#include "runtime/slots.h"

#include <algorithm>

#include "core/error.h"

namespace jitllm {

namespace {
// (checked before the model loads)
const SequenceBatchOptions& with_sequences(const SequenceBatchOptions& opt) {
    if (opt.n_seq < 1) fail_usage("--parallel: expected at least 1 sequence, found {}", opt.n_seq);
    return opt;
}
}  // namespace

SequenceBatch::SequenceBatch(const SequenceBatchOptions& opt)
    : lm_(with_sequences(opt), [&opt](PlanOptions& po) {
          po.n_seq = opt.n_seq;
          po.batch_rows = opt.batch_rows > 0 ? opt.batch_rows : std::max(opt.n_seq, std::min(po.n_ctx, 512));
          if (po.batch_rows < opt.n_seq)
              fail_usage("batch rows {} must be at least the number of sequences {}", po.batch_rows, opt.n_seq);
      }) {}

SequenceBatch::~SequenceBatch() = default;

std::string SequenceBatch::backend_name() const { return lm_.backend().name(); }

void SequenceBatch::run(std::vector<SeqStep>& steps) {
    std::vector<bool> seen(size_t(n_seq()), false);
    for (auto& s : steps) {
        JITLLM_CHECK(s.seq >= 0 && s.seq < n_seq(), "sequence {} outside [0, {})", s.seq, n_seq());
        JITLLM_CHECK(!seen[size_t(s.seq)], "sequence {} twice in one step", s.seq);
        seen[size_t(s.seq)] = true;
        JITLLM_CHECK(!s.tokens.empty(), "sequence {}: empty step", s.seq);
        JITLLM_CHECK(s.pos >= 0 && s.pos + int64_t(s.tokens.size()) <= n_ctx(),
                     "sequence {}: positions [{}, {}) outside the context {}", s.seq, s.pos,
                     s.pos + s.tokens.size(), n_ctx());
        s.logits = nullptr;
        s.argmax = -1;
        s.drawn = false;
    }
    const int R = plan().batch_rows;
    // the rows so far as one step (with logits: each row's pick drawn with draw[row] or not)
    auto flush = [&](bool logits = false, const DrawParams* draw = nullptr) {
        if (tok_buf_.empty()) return;
        BatchStep b;
        b.tokens = tok_buf_.data();
        b.pos = pos_buf_.data();
        b.seq = seq_buf_.data();
        b.n = int(tok_buf_.size());
        b.logits = logits;
        b.draw = draw;
        lm_.backend().batch(b);
        tok_buf_.clear(), pos_buf_.clear(), seq_buf_.clear();
    };
    auto push = [&](int32_t tok, int pos, int seq) {
        tok_buf_.push_back(tok);
        pos_buf_.push_back(pos);
        seq_buf_.push_back(seq);
    };
    tok_buf_.clear(), pos_buf_.clear(), seq_buf_.clear();
    // 1. tokens that need no logits (prompt bodies), every sequence's packed into chunks of R rows
    for (const auto& s : steps) {
        const size_t n = s.want_logits ? s.tokens.size() - 1 : s.tokens.size();
        for (size_t i = 0; i < n; ++i) {
            push(s.tokens[i], s.pos + int(i), s.seq);
            if (int(tok_buf_.size()) == R) flush();
        }
    }
    flush();
    // 2. the last token of each sequence that wants logits: one step, one row per sequence.
    // Each row's pick drawn on the device where its parameters allow (else the argmax); the
    // logits cross to the host only when some row asks for them or needs a host draw.
    std::vector<SeqStep*> rows;
    draw_buf_.clear();
    bool any_draw = false, host_logits = false;
    for (auto& s : steps)
        if (s.want_logits) {
            push(s.tokens.back(), s.pos + int(s.tokens.size()) - 1, s.seq);
            rows.push_back(&s);
            s.drawn = device_draws(s.draw);
            draw_buf_.push_back(s.drawn ? s.draw : DrawParams{});
            any_draw = any_draw || s.drawn;
            host_logits = host_logits || s.host_logits || (s.draw.temperature > 0.0f && !s.drawn);
        }
    if (rows.empty()) return;
    lm_.backend().set_logits_needed(host_logits);
    flush(true, any_draw ? draw_buf_.data() : nullptr);
    for (size_t r = 0; r < rows.size(); ++r) {
        rows[r]->logits = host_logits ? lm_.backend().batch_logits(int(r)) : nullptr;
        rows[r]->argmax = lm_.backend().batch_sampled(int(r));
    }
}

bool SequenceBatch::device_draws(const DrawParams& p) const {
    return draw_in_bounds(p, n_vocab(), lm_.backend().batch_draw_max_k());
}

void SequenceBatch::reset(int seq) {
    JITLLM_CHECK(seq >= 0 && seq < n_seq(), "sequence {} outside [0, {})", seq, n_seq());
    // positions restart at 0 and overwrite the cache rows they attend to: nothing to clear
}

}  // namespace jitllm
