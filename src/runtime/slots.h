// SequenceBatch: one model (weights, tokenizer, plan) loaded once and shared by N independent
// sequences, their KV caches blocks of one pool in the backend (a paged cache, KvPool: a sequence
// holds the blocks its positions use; blocks of a prompt prefix already computed are shared
// instead of computed again, see begin()). run() is one scheduler step: every
// listed sequence consumes its tokens, through the plan's batch phase — prompt tokens of all
// sequences packed into chunks of rows (no logits), then the last token of every sequence that
// wants logits in one step together (on the GPU: matrix-matrix products over the sequences,
// attention per sequence). A step of one token of a single sequence whose blocks are pool blocks
// 0, 1, 2... (a sequence running alone gets those) runs the decode phase instead: the path and
// rate of single-sequence generation (`jitllm --gpu`). Not thread-safe: one thread (the
// scheduler) drives it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/kv_pool.h"
#include "runtime/loaded_model.h"

namespace jitllm {

// The share of the GPU memory free beside the weights that the KV pool takes when its size is not
// given (the rest: activations, logits rows, the JIT modules and graphs).
constexpr double kDefaultKvPoolFraction = 0.9;

// The model, per-sequence context, threads (shared by the sequences, which run one after
// another) and backend (LoadOptions), and the batch shape.
struct SequenceBatchOptions : LoadOptions {
    int n_seq = 1;        // sequences (server slots)
    int batch_rows = 0;   // rows of a batch step; 0: max(n_seq, min(n_ctx, 512))
    // KV positions of all sequences together (the pool, in blocks of kKvBlockTokens); 0: every
    // sequence its whole context (n_seq x n_ctx), on the GPU at most what kv_pool_fraction of the
    // memory free beside the weights holds; else at least n_ctx
    int64_t kv_pool_tokens = 0;
    double kv_pool_fraction = kDefaultKvPoolFraction;  // (0, 1]
    bool prefix_reuse = true;  // begin() attaches the blocks of a prompt prefix already computed
    // a lone sequence's one-token steps through the decode phase (see the class); off: every
    // step through the batch phase (the GPU's decode kernels sum in another order)
    bool alone_decode = true;
    // a lone sequence's decode steps queued one ahead of the host (SeqStep::ahead): -1 where the
    // backend's queued steps run without waiting for the host (Backend::decode_queues_ahead), 1
    // always (on the CPU each step then runs at once: the tests' way to the same code), 0 never
    int run_ahead = -1;
};

// One sequence's share of a step.
struct SeqStep {
    int seq = 0;
    std::vector<int32_t> tokens;  // consumed at positions pos, pos+1, ...
    int pos = 0;
    bool want_logits = true;      // a pick after the last token (otherwise prefill may skip it)
    // with want_logits: the pick drawn on the device with these parameters where the backend can
    // (temperature > 0, 1 <= top_k <= Backend::batch_draw_max_k(); then `drawn`), else the argmax
    DrawParams draw{};
    bool host_logits = true;      // with want_logits: the logits copied to the host (`logits`)
    // with want_logits and one token, no host logits: the caller will likely feed this step's
    // pick at pos + 1 next (generation goes on). A lone sequence then has that step queued on the
    // backend, fed by the pick on the device, before run() returns (the run-ahead of `jitllm
    // --gpu`); a next step other than exactly that one (another token, other sequences, a reset)
    // discards it first, so callers see no difference but the time
    bool ahead = false;
    // with want_logits, a one-token step (constrained output): the tokens the pick may take (bits
    // over the vocabulary, as Backend::decode_masked), built by the call while the step runs. A lone
    // sequence on a backend that takes masks picks among them on the device (`masked`); elsewhere
    // the logits come to the host (as with host_logits) for the caller to mask and pick from.
    std::function<const uint32_t*()> mask;
    // outputs (valid until the next run() or reset of this sequence)
    const float* logits = nullptr;  // when host_logits, or when a draw was asked for and not made
    int32_t argmax = -1;          // the backend's pick after the last token: the argmax, or the draw
    bool drawn = false;           // argmax is the device's draw with `draw`
    bool masked = false;          // argmax is the device's pick among `mask`'s tokens (none: -1)
};

class SequenceBatch {
public:
    explicit SequenceBatch(const SequenceBatchOptions& opt);
    ~SequenceBatch();

    const Model& model() const { return lm_.model(); }
    const Tokenizer& tokenizer() const { return lm_.tokenizer(); }
    const Plan& plan() const { return lm_.plan(); }
    int n_ctx() const { return plan().n_ctx; }
    int n_seq() const { return plan().n_seq; }
    int n_vocab() const { return model().config.n_vocab; }
    std::string backend_name() const;
    double load_ms() const { return lm_.load_ms(); }

    // Starts an empty sequence (reset, or never run) on `prompt`: attaches the pool's blocks of
    // its longest already computed prefix (at most prompt.size() - 1 positions) and promises the
    // blocks of `reserve_tokens` positions in all (capped at n_ctx), so that its steps up to there
    // never find the pool empty. Returns the prompt positions already in the cache (its first
    // step feeds the prompt from there), or -1 when the pool cannot promise that beside the
    // running sequences' promises now (nothing changes; retry once one of them ended).
    int begin(int seq, const std::vector<int32_t>& prompt, int reserve_tokens);
    // Runs one step. Every sequence appears at most once, at pos = its length (the positions it
    // consumed since its reset, or begin()'s return); tokens are in [0, n_vocab) and
    // pos + tokens.size() <= n_ctx (checked: these are our invariants, not user input). The
    // pool's blocks are taken as the positions need them (within a sequence's promise always
    // there; beyond it an Error when the pool has none left, before anything runs).
    void run(std::vector<SeqStep>& steps);
    // Whether a step's draw parameters can be drawn on the device (SeqStep::draw), and the
    // largest top-k such a draw takes (0: none; the picks are then the argmax or the host's).
    bool device_draws(const DrawParams& p) const;
    int batch_draw_max_k() const { return lm_.backend().batch_draw_max_k(); }
    // Forgets a sequence's KV cache (its next step starts at position 0): its blocks go back to
    // the pool (a block of a computed prefix stays there for reuse until the pool needs it).
    void reset(int seq);
    // The pool's occupancy (blocks, used, cached, reused tokens).
    KvPoolStats kv_stats() const { return pool_->stats(); }
    int64_t kv_pool_tokens() const { return int64_t(pool_->n_blocks()) * pool_->block_tokens(); }
    const std::vector<int32_t>& kv_table(int seq) const { return pool_->table(seq); }  // its pool blocks
    uint64_t batch_calls() const { return batch_calls_; }  // backend batch steps so far
    uint64_t decode_calls() const { return decode_calls_; }  // steps run as the decode phase (run())
    uint64_t ahead_calls() const { return ahead_calls_; }  // of those, steps queued ahead and taken
    uint64_t ahead_dropped() const { return ahead_dropped_; }  // steps queued ahead and discarded

private:
    void take_blocks(const std::vector<SeqStep>& steps);  // the pool's blocks for the steps' positions
    void run_rows(std::vector<SeqStep>& steps);           // the steps' rows through the batch phase
    bool run_alone(SeqStep& s);  // a lone sequence's decode step through the decode phase; false: not taken
    bool takes_ahead(const SeqStep& s) const;  // whether s is the step queued ahead
    void drop_ahead();  // collects the step queued ahead, its pick unused

    static constexpr size_t kUnsent = ~size_t(0);
    LoadedModel lm_;
    bool prefix_reuse_, alone_decode_, run_ahead_;
    std::unique_ptr<KvPool> pool_;
    std::vector<size_t> table_sent_;  // per sequence: block-table entries the backend has (kUnsent: none)
    uint64_t batch_calls_ = 0, decode_calls_ = 0, ahead_calls_ = 0, ahead_dropped_ = 0;
    // the decode step queued ahead (run_alone): sequence, position, the pick it is fed (known to
    // the host once the step before it was collected) and its draw (counter included; greedy:
    // temperature 0)
    struct Ahead {
        int seq = -1, pos = 0;
        int32_t input = -1;
        DrawParams draw{};
    };
    std::optional<Ahead> ahead_;
    bool decode_draw_set_ = false;  // the backend's decode steps draw (Backend::set_draw) rather than argmax
    std::vector<int32_t> tok_buf_, pos_buf_, seq_buf_;
    std::vector<DrawParams> draw_buf_;
};

}  // namespace jitllm
