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

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"
#include "model/model.h"
#include "plan/plan.h"
#include "tokenizer/tokenizer.h"

namespace jitllm {

struct SequenceBatchOptions {
    std::string model_path;
    int n_seq = 1;        // sequences (server slots)
    int n_ctx = 0;        // per sequence; 0: min(model context, 4096)
    int n_threads = 1;    // CPU threads (shared by the sequences, which run one after another)
    bool gpu = false;
    int batch_rows = 0;   // rows of a batch step; 0: max(n_seq, min(n_ctx, 512))
    CudaOptions cuda;
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

    const Model& model() const { return *model_; }
    const Tokenizer& tokenizer() const { return *tok_; }
    const Plan& plan() const { return plan_; }
    int n_ctx() const { return plan_.n_ctx; }
    int n_seq() const { return plan_.n_seq; }
    int n_vocab() const { return model_->config.n_vocab; }
    std::string backend_name() const;
    double load_ms() const { return load_ms_; }

    // Runs one step. Every sequence appears at most once; tokens are in [0, n_vocab) and
    // pos + tokens.size() <= n_ctx (checked: these are our invariants, not user input).
    void run(std::vector<SeqStep>& steps);
    // Whether a step's draw parameters can be drawn on the device (SeqStep::draw), and the
    // largest top-k such a draw takes (0: none; the picks are then the argmax or the host's).
    bool device_draws(const DrawParams& p) const;
    int batch_draw_max_k() const { return backend_->batch_draw_max_k(); }
    // Forgets a sequence's KV cache (its next step starts at position 0).
    void reset(int seq);

private:
    std::unique_ptr<Model> model_;
    std::unique_ptr<Tokenizer> tok_;
    Plan plan_;
    std::unique_ptr<Backend> backend_;
    std::vector<int32_t> tok_buf_, pos_buf_, seq_buf_;
    std::vector<DrawParams> draw_buf_;
    double load_ms_ = 0;
};

}  // namespace jitllm
