// SequenceBatch (see slots.h): one LoadedModel, a step is its rows packed into batch steps.
#include "runtime/slots.h"

#include <algorithm>

#include "core/error.h"

namespace jitllm {

namespace {
// (checked before the model loads)
const SequenceBatchOptions& with_sequences(const SequenceBatchOptions& opt) {
    if (opt.n_seq < 1) fail_usage("--parallel: expected at least 1 sequence, found {}", opt.n_seq);
    if (opt.kv_pool_tokens < 0)
        fail_usage("--kv-pool-tokens: expected 0 (every sequence its context) or more positions, found {}",
                   opt.kv_pool_tokens);
    if (!(opt.kv_pool_fraction > 0.0 && opt.kv_pool_fraction <= 1.0))
        fail_usage("--kv-pool-fraction: expected a share of the free GPU memory in (0, 1], found {}",
                   opt.kv_pool_fraction);
    return opt;
}

// The GPU's pool when --kv-pool-tokens is not given: every sequence its context where
// kv_pool_fraction of the memory free beside the weights holds that, else what it holds.
int64_t gpu_pool_tokens(const SequenceBatchOptions& opt, const PlanOptions& po, const Model& m) {
    size_t free_b = 0, total_b = 0;
    CudaContext(opt.cuda.device).mem_info(&free_b, &total_b);
    const ModelConfig& c = m.config;
    const uint64_t per_pos = uint64_t(c.n_layers) * uint64_t(c.kv_dim() + c.v_dim()) *
                             (opt.cuda.schedule.kv_f32 ? 4u : 2u);
    const int64_t all = int64_t(po.n_seq) * ((po.n_ctx + kKvBlockTokens - 1) / kKvBlockTokens) * kKvBlockTokens;
    const int64_t n = kv_pool_positions_for_memory(free_b, m.weight_bytes(), opt.kv_pool_fraction, per_pos,
                                                   kKvBlockTokens, all);
    if (n < po.n_ctx)
        fail_usage("--kv-pool-fraction {}: {} of the {} of GPU memory free beside the weights holds {} KV positions, "
                   "expected at least the context of one sequence ({}); hint: lower --ctx-size or give "
                   "--kv-pool-tokens", opt.kv_pool_fraction, opt.kv_pool_fraction,
                   format_bytes(free_b > m.weight_bytes() ? free_b - m.weight_bytes() : 0), n, po.n_ctx);
    return n;
}
}  // namespace

SequenceBatch::SequenceBatch(const SequenceBatchOptions& opt)
    : lm_(with_sequences(opt), [&opt](PlanOptions& po, const Model& m) {
          po.n_seq = opt.n_seq;
          po.batch_rows = opt.batch_rows > 0 ? opt.batch_rows : std::max(opt.n_seq, std::min(po.n_ctx, 512));
          if (po.batch_rows < opt.n_seq)
              fail_usage("batch rows {} must be at least the number of sequences {}", po.batch_rows, opt.n_seq);
          if (opt.kv_pool_tokens > 0) {
              if (opt.kv_pool_tokens < po.n_ctx)
                  fail_usage("--kv-pool-tokens {}: expected at least the context of one sequence ({} positions)",
                             opt.kv_pool_tokens, po.n_ctx);
              const int64_t blocks = (opt.kv_pool_tokens + kKvBlockTokens - 1) / kKvBlockTokens;
              if (blocks > (int64_t(1) << 30) / kKvBlockTokens)
                  fail_usage("--kv-pool-tokens {}: expected at most {} positions", opt.kv_pool_tokens, int64_t(1) << 30);
              po.kv_blocks = int(blocks);
          } else if (opt.gpu) {
              po.kv_blocks = int(gpu_pool_tokens(opt, po, m) / kKvBlockTokens);
          }
      }),
      prefix_reuse_(opt.prefix_reuse),
      alone_decode_(opt.alone_decode),
      run_ahead_(opt.run_ahead > 0 || (opt.run_ahead < 0 && lm_.backend().decode_queues_ahead())) {
    const Plan& p = plan();
    // a backend without block tables keeps sequence s in blocks s * per_seq + b
    const bool paged = lm_.backend().set_kv_blocks(0, nullptr, 0);
    if (!paged && int64_t(p.kv_blocks) < int64_t(p.n_seq) * p.kv_blocks_per_seq())
        fail_usage("--kv-pool-tokens {}: the {} backend keeps every sequence's whole context ({} positions); "
                   "hint: leave it out", opt.kv_pool_tokens, backend_name(),
                   int64_t(p.n_seq) * p.kv_blocks_per_seq() * p.kv_block);
    const int n_blocks = paged ? p.kv_blocks : p.n_seq * p.kv_blocks_per_seq();
    pool_ = std::make_unique<KvPool>(n_blocks, p.kv_block, p.n_seq, p.kv_blocks_per_seq(), !paged);
    table_sent_.assign(size_t(p.n_seq), kUnsent);
}

SequenceBatch::~SequenceBatch() {
    try {
        if (ahead_) drop_ahead();
    } catch (...) {  // (the backend's own failure; it goes with the model)
    }
}

std::string SequenceBatch::backend_name() const { return lm_.backend().name(); }

int SequenceBatch::begin(int seq, const std::vector<int32_t>& prompt, int reserve_tokens) {
    JITLLM_CHECK(seq >= 0 && seq < n_seq(), "sequence {} outside [0, {})", seq, n_seq());
    const int reserve = std::min(std::max(reserve_tokens, int(prompt.size())), n_ctx());
    return pool_->admit(seq, prompt.data(), int(prompt.size()), reserve, prefix_reuse_);
}

void SequenceBatch::take_blocks(const std::vector<SeqStep>& steps) {
    // the blocks of every step's positions first: an empty pool stops the step before it runs
    for (const auto& s : steps) {
        const int end = s.pos + int(s.tokens.size());
        if (!pool_->grow(s.seq, end))
            fail("KV cache: sequence {} needs {} positions, and the pool's {} blocks of {} are taken; hint: "
                 "raise --kv-pool-tokens", s.seq, end, pool_->n_blocks(), pool_->block_tokens());
    }
    if (pool_->fixed()) return;  // the backend's own layout is the pool's
    for (const auto& s : steps) {
        const auto& t = pool_->table(s.seq);
        if (table_sent_[size_t(s.seq)] == t.size()) continue;
        lm_.backend().set_kv_blocks(s.seq, t.data(), int(t.size()));
        table_sent_[size_t(s.seq)] = t.size();
    }
}

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
        JITLLM_CHECK(s.pos == pool_->length(s.seq), "sequence {}: a step at position {}, its length is {}", s.seq,
                     s.pos, pool_->length(s.seq));
        s.logits = nullptr;
        s.argmax = -1;
        s.drawn = false;
        s.masked = false;
    }
    if (ahead_ && !(steps.size() == 1 && takes_ahead(steps[0]))) drop_ahead();
    take_blocks(steps);
    if (steps.size() != 1 || !run_alone(steps[0])) {
        for (auto& s : steps)
            if (s.mask) {  // (the batch phase takes no masks: the caller masks and picks)
                s.host_logits = true;
                s.draw = DrawParams{};
            }
        run_rows(steps);
    }
    for (const auto& s : steps) pool_->append(s.seq, s.tokens.data(), int(s.tokens.size()));
}

namespace {
bool identity(const std::vector<int32_t>& table) {
    for (size_t b = 0; b < table.size(); ++b)
        if (table[b] != int32_t(b)) return false;
    return true;
}

bool same_draw(const DrawParams& a, const DrawParams& b) {
    return a.temperature == b.temperature && a.top_p == b.top_p && a.min_p == b.min_p && a.top_k == b.top_k &&
           a.seed == b.seed && a.draw == b.draw;
}
}  // namespace

bool SequenceBatch::takes_ahead(const SeqStep& s) const {
    const DrawParams greedy{};
    return s.seq == ahead_->seq && s.pos == ahead_->pos && s.tokens.size() == 1 && s.tokens[0] == ahead_->input &&
           s.want_logits && !s.host_logits && !s.mask && same_draw(s.draw.temperature > 0.0f ? s.draw : greedy, ahead_->draw);
}

void SequenceBatch::drop_ahead() {
    ahead_.reset();
    ++ahead_dropped_;
    lm_.backend().decode_collect();  // (its KV row is past the sequence's length: written again before read)
}

bool SequenceBatch::run_alone(SeqStep& s) {
    // one token of one sequence whose blocks are the identity (KvPool keeps a lone sequence's so):
    // the decode phase, which reads and writes pool row p for position p (plan.h), with its graph
    // and fused pick, instead of a batch step of one row
    if (!alone_decode_ || s.tokens.size() != 1 || !s.want_logits || !identity(pool_->table(s.seq))) return false;
    Backend& be = lm_.backend();
    const bool draw = s.draw.temperature > 0.0f;
    const bool queued = ahead_.has_value();  // (run() kept it only for this very step)
    if (!queued) {
        if (draw && !device_draws(s.draw)) return false;  // the host draws from the batch step's logits
        if (draw || decode_draw_set_) {
            if (!be.set_draw(draw ? &s.draw : nullptr)) return false;  // (greedy: always taken)
            decode_draw_set_ = draw;
        }
        be.set_logits_needed(s.host_logits);
    }
    ++decode_calls_;
    s.drawn = draw;
    if (s.mask) {  // constrained: the pick among the mask's tokens on the device, else host logits
        if (be.decode_masked(s.tokens[0], s.pos, s.mask)) {
            s.argmax = be.sampled_token();
            s.masked = true;
            return true;
        }
        s.host_logits = true;  // (the plain step below, nothing queued after it)
        be.set_logits_needed(true);
        s.drawn = false;  // (the caller draws from the masked logits)
    }
    // the step after this one queued before this one's pick is read, where it will likely be
    // wanted and its position's block comes as the identity's
    const bool next = run_ahead_ && s.ahead && !s.host_logits && s.pos + 2 <= n_ctx() &&
                      pool_->grow(s.seq, s.pos + 2) && identity(pool_->table(s.seq));
    if (!queued && !next) {
        const float* logits = be.decode(s.tokens[0], s.pos);
        s.logits = s.host_logits ? logits : nullptr;
        s.argmax = be.sampled_token();
        return true;
    }
    if (queued) ++ahead_calls_;
    else be.decode_queue(s.tokens[0], s.pos);
    ahead_.reset();
    if (next) be.decode_queue(-1, s.pos + 1);
    s.logits = nullptr;
    s.argmax = be.decode_collect();
    if (next) {
        DrawParams d = draw ? s.draw : DrawParams{};
        if (draw) d.draw += 1;
        ahead_ = Ahead{s.seq, s.pos + 1, s.argmax, d};
    }
    return true;
}

void SequenceBatch::run_rows(std::vector<SeqStep>& steps) {
    const int R = plan().batch_rows;
    // rows [from, to) of the buffers as one backend step; logits_first: its first rows' logits
    auto call = [&](size_t from, size_t to, int logits_first = 0, const DrawParams* draw = nullptr) {
        BatchStep b;
        b.tokens = tok_buf_.data() + from;
        b.pos = pos_buf_.data() + from;
        b.seq = seq_buf_.data() + from;
        b.n = int(to - from);
        // a backend without logits_first takes a step of logits rows alone
        if (logits_first > 0 && !lm_.backend().batch_logits_first()) b.logits = true;
        else b.logits_first = logits_first;
        b.draw = draw;
        lm_.backend().batch(b);
        ++batch_calls_;
    };
    auto push = [&](int32_t tok, int pos, int seq) {
        tok_buf_.push_back(tok);
        pos_buf_.push_back(pos);
        seq_buf_.push_back(seq);
    };
    // The rows needing no logits (prompt bodies, each sequence's in position order), and the last
    // token of each sequence that wants logits: one row each, its pick drawn on the device where
    // its parameters allow, else the argmax; the logits cross to the host only when some row asks
    // for them or needs a host draw.
    std::vector<SeqStep*> rows;
    draw_buf_.clear();
    bool any_draw = false, host_logits = false;
    size_t n_body = 0;
    for (auto& s : steps) {
        n_body += s.want_logits ? s.tokens.size() - 1 : s.tokens.size();
        if (!s.want_logits) continue;
        rows.push_back(&s);
        s.drawn = device_draws(s.draw);
        draw_buf_.push_back(s.drawn ? s.draw : DrawParams{});
        any_draw = any_draw || s.drawn;
        host_logits = host_logits || s.host_logits || (s.draw.temperature > 0.0f && !s.drawn);
    }
    const size_t k = rows.size();
    // The body rows that do not fit beside the logits rows go first, in steps of R rows (the
    // earliest positions: rows of a later step attend to them); the rest join the logits rows in
    // one step, those first: running sequences' decode and entering prompts in one backend step.
    const size_t room = k > 0 && lm_.backend().batch_logits_first() ? size_t(R) - k : 0;
    const size_t alone = n_body > room ? n_body - room : 0;
    tok_buf_.clear(), pos_buf_.clear(), seq_buf_.clear();
    size_t body = 0;
    auto push_logits_rows = [&] {
        for (const SeqStep* s : rows) push(s->tokens.back(), s->pos + int(s->tokens.size()) - 1, s->seq);
    };
    for (const auto& s : steps) {
        const size_t n = s.want_logits ? s.tokens.size() - 1 : s.tokens.size();
        for (size_t i = 0; i < n; ++i, ++body) {
            if (body == alone) push_logits_rows();
            push(s.tokens[i], s.pos + int(i), s.seq);
        }
    }
    if (body == alone) push_logits_rows();
    for (size_t i = 0; i < alone; i += size_t(R)) call(i, std::min(alone, i + size_t(R)));
    if (k == 0) return;
    lm_.backend().set_logits_needed(host_logits);
    call(alone, tok_buf_.size(), int(k), any_draw ? draw_buf_.data() : nullptr);
    for (size_t r = 0; r < k; ++r) {
        rows[r]->logits = host_logits ? lm_.backend().batch_logits(int(r)) : nullptr;
        rows[r]->argmax = lm_.backend().batch_sampled(int(r));
    }
}

bool SequenceBatch::device_draws(const DrawParams& p) const {
    return draw_in_bounds(p, n_vocab(), lm_.backend().batch_draw_max_k());
}

void SequenceBatch::reset(int seq) {
    JITLLM_CHECK(seq >= 0 && seq < n_seq(), "sequence {} outside [0, {})", seq, n_seq());
    if (ahead_ && ahead_->seq == seq) drop_ahead();
    // positions restart at 0 in blocks the pool hands out again: their old rows are never read
    // before the steps that write them
    pool_->release(seq);
    table_sent_[size_t(seq)] = kUnsent;
}

}  // namespace jitllm
