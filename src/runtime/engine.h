// Engine: one loaded model with its tokenizer, plan and backend, and the position of the one
// sequence it holds. Feeding tokens runs the plan; the caller samples from the logits.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/loaded_model.h"

namespace jitllm {

// EngineOptions::batch_prefill_size's default of the CLI: chunks of kCpuPromptChunk rows on the CPU
// (weights read once a chunk), one token at a time on the GPU
constexpr int kAutoPromptChunks = -1;
constexpr int kCpuPromptChunk = 64;
// The prompt chunk rows a run gets: batch_prefill_size, kAutoPromptChunks resolved (0 on the GPU or
// with the prefill phase, else kCpuPromptChunk)
inline int prompt_chunk_rows(int batch_prefill_size, bool gpu, bool with_prefill_decode) {
    if (batch_prefill_size != kAutoPromptChunks) return batch_prefill_size;
    return gpu || with_prefill_decode ? 0 : kCpuPromptChunk;
}

// The model, context, threads and backend (LoadOptions), and how a prompt is fed.
struct EngineOptions : LoadOptions {
    bool with_prefill_decode = false;  // prompt tokens but the last through the prefill phase
    int batch_prefill_size = 0;        // > 0: prompt tokens but the last in chunks of this many
                                       // rows through the batch phase (wins over the above);
                                       // kAutoPromptChunks: kCpuPromptChunk on the CPU unless
                                       // with_prefill_decode, else 0
};

struct EngineTimes {
    double load_ms = 0;
    double prompt_ms = 0;
    int n_prompt = 0;
    double decode_ms = 0;
    int n_decode = 0;
};

class Engine {
public:
    explicit Engine(EngineOptions opt);
    ~Engine();

    Model& model() { return lm_.model(); }
    int n_threads() const { return lm_.n_threads(); }  // CPU threads, the default resolved
    const Tokenizer& tokenizer() const { return lm_.tokenizer(); }
    const Plan& plan() const { return lm_.plan(); }
    Backend& backend() { return lm_.backend(); }
    int n_ctx() const { return lm_.plan().n_ctx; }
    int pos() const { return pos_; }
    EngineTimes& times() { return times_; }

    // Runs every token of `ids` at positions pos()..; the last one through the decode phase,
    // earlier ones through decode (default) or prefill (with_prefill_decode); with
    // batch_prefill_size all of them in batch-phase chunks, the last chunk with the last row's
    // logits (a single token always goes through decode). Returns the logits
    // after the last token. Throws Error when the context would overflow.
    const float* feed(const std::vector<int32_t>& ids);
    // Greedy decode running one step ahead (Backend::decode_queue): queue_decode() queues the
    // decode step for `token` at pos() (token < 0: the previous step's greedy pick, on the
    // device) and moves pos() on; collect_decode() returns the oldest queued step's pick;
    // drop_position() gives back the last position of a collected step whose pick is not used
    // (a step queued past the end of a generation: its cache row is written again later).
    void queue_decode(int32_t token);
    // A decode step for `token` at pos() whose pick keeps to a token mask (Backend::decode_masked;
    // the pick is then backend().sampled_token()); false, with nothing run, where the backend
    // takes no masks.
    bool feed_masked(int32_t token, const std::function<const uint32_t*()>& mask);
    int32_t collect_decode();
    void drop_position();
    int queued() const { return queued_; }
    void reset();

private:
    EngineOptions opt_;
    LoadedModel lm_;
    int pos_ = 0;
    int queued_ = 0;  // decode steps queued and not collected
    EngineTimes times_;
};

}  // namespace jitllm
