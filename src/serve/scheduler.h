// Scheduler: N slots over one SequenceBatch, a bounded FIFO queue, and one thread that runs steps.
// A step gives every active slot its next tokens (a prompt chunk or the last sampled token) and
// runs them through SequenceBatch::run together, then samples, applies stop strings and publishes
// text to each request's Job. HTTP threads only submit, read Jobs and cancel; they never touch
// the model. Admission beyond slots + queue is refused (the server answers 503).
// The KV cache is one pool of blocks (SequenceBatch::begin): the queue's head takes a free slot
// once the pool can promise it the blocks of its prompt + max_tokens (capped at the context), so
// a running stream never finds the pool empty; until then it waits, FIFO. The blocks of a prompt
// prefix an earlier request computed are attached, not computed again. A request's blocks go
// back when it ends (finished, cancelled, client gone, error, shutdown).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/generate.h"
#include "runtime/sampler.h"
#include "runtime/slots.h"
#include "runtime/token_constraint.h"
#include "serve/metrics.h"
#include "serve/stop_matcher.h"

namespace jitllm::serve {

struct JobParams {
    std::vector<int32_t> prompt;     // validated ids, 1 <= size < n_ctx
    SamplerParams sp;
    int max_tokens = 1;              // >= 1 and <= n_ctx - prompt.size()
    std::vector<std::string> stop;
    bool ignore_eos = false;
    bool logprobs = false;
    int top_logprobs = 0;
    std::vector<std::pair<int32_t, float>> logit_bias;
    bool special_text = false;       // control tokens appear in the text (tool-call and think markers)
    std::shared_ptr<const JsonSchema> schema;  // constrained output: the reply is JSON of this schema
};

struct TokenLogprob {
    int32_t id = 0;
    float logprob = 0;
    std::vector<std::pair<int32_t, float>> top;  // most likely first
    size_t text_offset = 0;                      // byte offset of the token in the generated text
};

enum class Finish { None, Stop, Length, Cancelled, Shutdown, Error };

// What a Job produced since the reader last looked (text is a delta), plus the final state.
struct JobDelta {
    std::string text;
    std::vector<TokenLogprob> logprobs;
    bool done = false;
    bool started = false;  // the job had a slot (false: it ended while still queued)
    Finish finish = Finish::None;
    std::string error;
    int n_prompt = 0;
    int n_gen = 0;
    double queue_ms = 0, prompt_ms = 0, predicted_ms = 0;
};

class Job {
public:
    explicit Job(JobParams p) : params_(std::move(p)), t_submit_(std::chrono::steady_clock::now()) {}
    // Replaces d with what arrived since the last call; waits up to `timeout` when nothing has.
    // Returns true when something arrived or the job is done.
    bool take(JobDelta& d, std::chrono::milliseconds timeout);
    // The client went away: the scheduler frees the slot at its next step.
    void cancel() { cancelled_.store(true); }
    bool cancelled() const { return cancelled_.load(); }

private:
    friend class Scheduler;
    void publish(std::string text, std::vector<TokenLogprob> lp, int n_gen);
    void finish(Finish f, std::string error = {});

    JobParams params_;
    std::chrono::steady_clock::time_point t_submit_, t_start_, t_first_, t_last_;
    std::atomic<bool> cancelled_{false};
    std::atomic<bool> started_{false};
    std::mutex mu_;
    std::condition_variable cv_;
    std::string text_;
    std::vector<TokenLogprob> lp_;
    bool fresh_ = false;
    bool done_ = false;
    Finish finish_ = Finish::None;
    std::string error_;
    int n_gen_ = 0;
    double queue_ms_ = 0, prompt_ms_ = 0, predicted_ms_ = 0;
};

struct SchedulerOptions {
    int queue_size = 64;     // requests that may wait for a slot
    int prefill_chunk = 16;  // prompt tokens a slot consumes per step
    int step_delay_ms = 0;   // test aid: sleep after each step (makes busy states observable)
};

class Scheduler {
public:
    Scheduler(SequenceBatch& batch, Metrics& metrics, SchedulerOptions opt);
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    enum class Admit { Ok, QueueFull, Closed };
    // Queues a request; nullptr with `why` set when refused.
    std::shared_ptr<Job> submit(JobParams p, Admit& why);
    // Refuses new work, ends every running and queued job with Finish::Shutdown (their text so
    // far is published) and stops the thread. Idempotent.
    void shutdown();

    int active() const { return n_active_.load(); }
    int queued() const { return n_queued_.load(); }
    int slots() const { return int(slots_.size()); }
    // The KV pool's occupancy after the last step or admission (any thread).
    KvPoolStats kv_stats() const;

private:
    struct Slot {
        std::shared_ptr<Job> job;
        size_t n_fed = 0;   // prompt tokens in the KV cache
        int pos = 0;        // next position
        int32_t next = -1;  // sampled token to feed
        std::vector<int32_t> history;
        std::unique_ptr<Sampler> sampler;
        std::unique_ptr<JsonConstraint> constraint;  // the job's schema, as a token mask
        Utf8Stream utf8;
        StopMatcher stop;
        size_t text_bytes = 0;
        std::vector<TokenLogprob> lp_pending;
        int n_gen = 0;
    };
    void loop();
    void admit_locked();
    void purge_cancelled_locked();
    void step();
    // a sequence's step output: its logits (nullptr when not copied), the backend's pick, whether
    // that pick is the device's draw with the slot's sampler parameters, and whether it kept to
    // the slot's schema mask (SeqStep::masked)
    void on_logits(int seq, const float* logits, int32_t argmax, bool drawn, bool masked);
    void end(int seq, Finish f, std::string error = {});
    void publish_kv();  // the pool's occupancy for kv_stats()
    std::vector<TokenLogprob> release_logprobs(Slot& s, bool all);

    SequenceBatch& batch_;
    Metrics& metrics_;
    SchedulerOptions opt_;
    std::vector<Slot> slots_;
    std::vector<float> biased_;  // logits with logit_bias and the constraint's mask applied
    std::shared_ptr<const ConstraintVocab> constraint_vocab_;  // made at the first constrained job
    std::vector<SeqStep> steps_;

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Job>> queue_;
    bool closed_ = false;
    bool stop_ = false;
    std::atomic<int> n_active_{0}, n_queued_{0};
    const int kv_blocks_, kv_block_tokens_;
    std::atomic<int> kv_used_{0}, kv_cached_{0};
    std::atomic<uint64_t> kv_reused_{0};
    std::thread thread_;
};

const char* finish_reason(Finish f);

}  // namespace jitllm::serve
