// SequenceBatch: one model (weights, tokenizer, plan) loaded once and shared by N independent
// sequences, each with its own KV cache in one backend. run() is one scheduler step: every
// listed sequence consumes its tokens, through the plan's batch phase — prompt tokens of all
// sequences packed into chunks of rows (no logits), then the last token of every sequence that
// wants logits in one step together (on the GPU: matrix-matrix products over the sequences,
// attention per sequence). Not thread-safe: one thread (the scheduler) drives it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/loaded_model.h"

namespace jitllm {

// The model, per-sequence context, threads (shared by the sequences, which run one after
// another) and backend (LoadOptions), and the batch shape.
struct SequenceBatchOptions : LoadOptions {
    int n_seq = 1;        // sequences (server slots)
    int batch_rows = 0;   // rows of a batch step; 0: max(n_seq, min(n_ctx, 512))
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
    // outputs (valid until the next run() or reset of this sequence)
    const float* logits = nullptr;  // when host_logits, or when a draw was asked for and not made
    int32_t argmax = -1;          // the backend's pick after the last token: the argmax, or the draw
    bool drawn = false;           // argmax is the device's draw with `draw`
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

    // Runs one step. Every sequence appears at most once; tokens are in [0, n_vocab) and
    // pos + tokens.size() <= n_ctx (checked: these are our invariants, not user input).
    void run(std::vector<SeqStep>& steps);
    // Whether a step's draw parameters can be drawn on the device (SeqStep::draw), and the
    // largest top-k such a draw takes (0: none; the picks are then the argmax or the host's).
    bool device_draws(const DrawParams& p) const;
    int batch_draw_max_k() const { return lm_.backend().batch_draw_max_k(); }
    // Forgets a sequence's KV cache (its next step starts at position 0).
    void reset(int seq);

private:
    LoadedModel lm_;
    std::vector<int32_t> tok_buf_, pos_buf_, seq_buf_;
    std::vector<DrawParams> draw_buf_;
};

}  // namespace jitllm
