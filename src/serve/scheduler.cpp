// Scheduler (see scheduler.h).
#include "serve/scheduler.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/tokenizer.h"

namespace jitllm::serve {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
    if (a == Clock::time_point{} || b == Clock::time_point{} || b < a) return 0;
    return std::chrono::duration<double, std::milli>(b - a).count();
}

double seconds_since(Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
}

// Log-probabilities of the model's distribution (raw logits, before sampling filters).
TokenLogprob make_logprob(const float* logits, int n_vocab, int32_t id, int top_n, size_t offset) {
    float mx = logits[0];
    for (int i = 1; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
    double sum = 0;
    for (int i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - mx);
    const double lse = double(mx) + std::log(sum);
    TokenLogprob t;
    t.id = id;
    t.logprob = float(double(logits[id]) - lse);
    t.text_offset = offset;
    if (top_n > 0) {
        std::vector<int32_t> idx(static_cast<size_t>(n_vocab));
        for (int i = 0; i < n_vocab; ++i) idx[size_t(i)] = i;
        const size_t k = std::min(size_t(top_n), idx.size());
        std::partial_sort(idx.begin(), idx.begin() + long(k), idx.end(), [&](int32_t a, int32_t b) {
            return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
        });
        for (size_t i = 0; i < k; ++i) t.top.push_back({idx[i], float(double(logits[idx[i]]) - lse)});
    }
    return t;
}

}  // namespace

const char* finish_reason(Finish f) {
    switch (f) {
        case Finish::Stop: return "stop";
        // a response cut short by the server (shutdown) is reported like one cut by a limit
        case Finish::Length:
        case Finish::Shutdown: return "length";
        case Finish::Cancelled: return "cancelled";
        case Finish::Error: return "error";
        case Finish::None: break;
    }
    return "";
}

bool Job::take(JobDelta& d, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lk(mu_);
    if (!fresh_ && !done_) cv_.wait_for(lk, timeout, [&] { return fresh_ || done_; });
    d.text = std::move(text_);
    text_.clear();
    d.logprobs = std::move(lp_);
    lp_.clear();
    d.done = done_;
    d.started = started_.load();
    d.finish = finish_;
    d.error = error_;
    d.n_prompt = int(params_.prompt.size());
    d.n_gen = n_gen_;
    d.queue_ms = queue_ms_;
    d.prompt_ms = prompt_ms_;
    d.predicted_ms = predicted_ms_;
    const bool any = fresh_ || done_;
    fresh_ = false;
    return any;
}

void Job::publish(std::string text, std::vector<TokenLogprob> lp, int n_gen) {
    std::lock_guard<std::mutex> lk(mu_);
    n_gen_ = n_gen;
    if (text.empty() && lp.empty()) return;
    text_ += text;
    for (auto& t : lp) lp_.push_back(std::move(t));
    fresh_ = true;
    cv_.notify_all();
}

void Job::finish(Finish f, std::string error) {
    std::lock_guard<std::mutex> lk(mu_);
    if (done_) return;
    done_ = true;
    finish_ = f;
    error_ = std::move(error);
    queue_ms_ = ms_between(t_submit_, t_start_);
    prompt_ms_ = ms_between(t_start_, t_first_);
    predicted_ms_ = ms_between(t_first_, t_last_);
    cv_.notify_all();
}

Scheduler::Scheduler(SequenceBatch& batch, Metrics& metrics, SchedulerOptions opt)
    : batch_(batch), metrics_(metrics), opt_(opt), slots_(size_t(batch.n_seq())),
      kv_blocks_(batch.kv_stats().blocks), kv_block_tokens_(batch.kv_stats().block_tokens) {
    opt_.prefill_chunk = std::max(1, opt_.prefill_chunk);
    opt_.queue_size = std::max(0, opt_.queue_size);
    thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { shutdown(); }

std::shared_ptr<Job> Scheduler::submit(JobParams p, Admit& why) {
    std::unique_lock<std::mutex> lk(mu_);
    if (closed_) {
        why = Admit::Closed;
        return nullptr;
    }
    purge_cancelled_locked();
    if (size_t(n_active_.load()) + queue_.size() >= slots_.size() + size_t(opt_.queue_size)) {
        why = Admit::QueueFull;
        return nullptr;
    }
    auto job = std::make_shared<Job>(std::move(p));
    queue_.push_back(job);
    n_queued_.store(int(queue_.size()));
    why = Admit::Ok;
    lk.unlock();
    cv_.notify_all();
    return job;
}

void Scheduler::shutdown() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        closed_ = true;
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void Scheduler::purge_cancelled_locked() {
    for (auto it = queue_.begin(); it != queue_.end();) {
        if ((*it)->cancelled()) {
            (*it)->finish(Finish::Cancelled);
            metrics_.requests_cancelled++;
            it = queue_.erase(it);
        } else {
            ++it;
        }
    }
    n_queued_.store(int(queue_.size()));
}

void Scheduler::admit_locked() {
    for (size_t i = 0; i < slots_.size() && !queue_.empty(); ++i) {
        Slot& s = slots_[i];
        if (s.job) continue;
        // the head's blocks promised (its prompt's cached prefix attached), or it waits
        const JobParams& head = queue_.front()->params_;
        const int64_t want = int64_t(head.prompt.size()) + head.max_tokens;
        const int cached = batch_.begin(int(i), head.prompt, int(std::min<int64_t>(want, batch_.n_ctx())));
        if (cached < 0) break;
        s = Slot{};
        s.job = std::move(queue_.front());
        queue_.pop_front();
        s.n_fed = size_t(cached);
        s.pos = cached;
        metrics_.prompt_tokens_reused_total += uint64_t(cached);
        const JobParams& p = s.job->params_;
        s.job->t_start_ = Clock::now();
        s.job->started_.store(true);
        s.sampler = std::make_unique<Sampler>(p.sp);
        s.constraint.reset();
        if (p.schema) {
            if (!constraint_vocab_) constraint_vocab_ = constraint_vocab(batch_.tokenizer());
            s.constraint = std::make_unique<JsonConstraint>(p.schema, constraint_vocab_);
        }
        s.history = p.prompt;
        s.stop = StopMatcher(p.stop);
        n_active_++;
    }
    n_queued_.store(int(queue_.size()));
    publish_kv();
}

KvPoolStats Scheduler::kv_stats() const {
    KvPoolStats st;
    st.blocks = kv_blocks_;
    st.block_tokens = kv_block_tokens_;
    st.used = kv_used_.load();
    st.cached = kv_cached_.load();
    st.reused_tokens = kv_reused_.load();
    return st;
}

void Scheduler::publish_kv() {
    const KvPoolStats st = batch_.kv_stats();
    kv_used_.store(st.used);
    kv_cached_.store(st.cached);
    kv_reused_.store(st.reused_tokens);
}

void Scheduler::loop() {
    for (;;) {
        {
            std::unique_lock<std::mutex> lk(mu_);
            purge_cancelled_locked();
            if (stop_) break;
            admit_locked();
            if (n_active_.load() == 0) {
                // idle: wake on a submit, or now and then to purge cancelled queue entries
                cv_.wait_for(lk, std::chrono::milliseconds(200), [&] { return stop_ || !queue_.empty(); });
                continue;
            }
        }
        step();
        if (opt_.step_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(opt_.step_delay_ms));
    }
    for (size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].job) end(int(i), Finish::Shutdown);
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& j : queue_) j->finish(Finish::Shutdown);
    queue_.clear();
    n_queued_.store(0);
}

void Scheduler::step() {
    steps_.clear();
    for (size_t i = 0; i < slots_.size(); ++i) {
        Slot& s = slots_[i];
        if (!s.job) continue;
        if (s.job->cancelled()) {
            end(int(i), Finish::Cancelled);
            continue;
        }
        const auto& prompt = s.job->params_.prompt;
        SeqStep st;
        st.seq = int(i);
        if (s.n_fed < prompt.size()) {
            const size_t n = std::min(size_t(opt_.prefill_chunk), prompt.size() - s.n_fed);
            st.tokens.assign(prompt.begin() + long(s.n_fed), prompt.begin() + long(s.n_fed + n));
            st.pos = int(s.n_fed);
            st.want_logits = s.n_fed + n == prompt.size();
        } else {
            st.tokens = {s.next};
            st.pos = s.pos;
            st.want_logits = true;
        }
        if (st.want_logits) {
            // the pick on the device (no logits to the host) unless the request needs the logits:
            // log-probabilities, a logit bias, or a sampler the device cannot draw for; a schema's
            // mask goes with the step (built while it runs; SequenceBatch says where it was applied)
            const JobParams& p = s.job->params_;
            const bool host_pick = !p.logit_bias.empty() || (p.schema && (p.logprobs || st.tokens.size() != 1)) ||
                                   (!s.sampler->plain_greedy() &&
                                    !s.sampler->device_drawable(batch_.n_vocab(), batch_.batch_draw_max_k()));
            st.host_logits = p.logprobs || host_pick;
            if (!host_pick && !s.sampler->plain_greedy()) st.draw = s.sampler->draw_params();
            if (!host_pick && p.schema) {
                JsonConstraint* c = s.constraint.get();
                const int budget = p.max_tokens - s.n_gen, nv = batch_.n_vocab();
                st.mask = [c, budget, nv] { return c->allowed_words(budget, nv); };
            }
            // a one-token step whose pick will likely feed the next (not the request's last token)
            st.ahead = st.tokens.size() == 1 && s.n_gen + 1 < p.max_tokens;
        }
        steps_.push_back(std::move(st));
    }
    if (steps_.empty()) return;

    const auto t0 = Clock::now();
    try {
        batch_.run(steps_);
    } catch (const std::exception& e) {
        // a backend failure ends the requests of this step; the server keeps serving
        for (const auto& st : steps_) end(st.seq, Finish::Error, e.what());
        return;
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    uint64_t n_prompt = 0, n_total = 0;
    for (const auto& st : steps_) {
        n_total += st.tokens.size();
        if (slots_[size_t(st.seq)].n_fed < slots_[size_t(st.seq)].job->params_.prompt.size())
            n_prompt += st.tokens.size();
    }
    metrics_.n_decode_total++;
    metrics_.busy_slots_total += steps_.size();
    metrics_.prompt_tokens_total += n_prompt;
    metrics_.prompt_us_total += uint64_t(us * double(n_prompt) / double(n_total));
    metrics_.predicted_us_total += uint64_t(us * double(n_total - n_prompt) / double(n_total));

    for (const auto& st : steps_) {
        Slot& s = slots_[size_t(st.seq)];
        if (s.n_fed < s.job->params_.prompt.size()) {
            s.n_fed += st.tokens.size();
            s.pos = int(s.n_fed);
        } else {
            s.pos += 1;
        }
        if (st.want_logits) on_logits(st.seq, st.logits, st.argmax, st.drawn, st.masked);
    }
    publish_kv();
}

std::vector<TokenLogprob> Scheduler::release_logprobs(Slot& s, bool all) {
    std::vector<TokenLogprob> out;
    size_t n = s.lp_pending.size();
    if (!all) {
        n = 0;
        while (n < s.lp_pending.size() && s.lp_pending[n].text_offset < s.stop.released_bytes()) ++n;
    }
    out.assign(std::make_move_iterator(s.lp_pending.begin()), std::make_move_iterator(s.lp_pending.begin() + long(n)));
    s.lp_pending.erase(s.lp_pending.begin(), s.lp_pending.begin() + long(n));
    return out;
}

void Scheduler::on_logits(int seq, const float* logits, int32_t argmax, bool drawn, bool masked) {
    Slot& s = slots_[size_t(seq)];
    Job& j = *s.job;
    const JobParams& p = j.params_;
    const Tokenizer& tok = batch_.tokenizer();
    const int nv = batch_.n_vocab();
    int32_t id = argmax;
    if (masked) {  // the device picked among the schema's tokens (drawn, or the argmax)
        if (s.constraint->n_allowed() == 0) {
            end(seq, Finish::Stop);  // nothing can follow (a stop string or the budget ruled it out)
            return;
        }
        if (drawn) s.sampler->skip_draws(1);
        s.constraint->accept(id);
    } else if (drawn) {
        s.sampler->skip_draws(1);  // the device drew with draw_params(): the host's counter follows
    } else if (!s.sampler->plain_greedy() || !p.logit_bias.empty() || s.constraint || argmax < 0) {
        JITLLM_CHECK(logits != nullptr, "sequence {}: a host pick without host logits", seq);
        const float* l = logits;
        if (!p.logit_bias.empty() || s.constraint) {
            biased_.assign(logits, logits + nv);
            for (const auto& [bid, b] : p.logit_bias) biased_[size_t(bid)] += b;
            l = biased_.data();
        }
        // constrained output: only the tokens that keep the reply valid and completable remain
        if (s.constraint && s.constraint->mask(biased_.data(), nv, p.max_tokens - s.n_gen) == 0) {
            end(seq, Finish::Stop);  // nothing can follow (a stop string or logit_bias ruled it out)
            return;
        }
        id = s.sampler->sample(l, nv, s.history);
        if (s.constraint) s.constraint->accept(id);
    }
    const auto now = Clock::now();
    if (s.n_gen == 0) {
        j.t_first_ = now;
        metrics_.ttft.observe(std::chrono::duration<double>(now - j.t_submit_).count());
    } else {
        metrics_.itl.observe(std::chrono::duration<double>(now - j.t_last_).count());
    }
    j.t_last_ = now;
    metrics_.tokens_predicted_total++;
    metrics_.add_decoded(1);

    if (!p.ignore_eos && tok.is_eog(id)) {
        end(seq, Finish::Stop);
        return;
    }
    s.n_gen++;
    s.history.push_back(id);
    if (p.logprobs) s.lp_pending.push_back(make_logprob(logits, nv, id, p.top_logprobs, s.text_bytes));
    const std::string piece = tok.token_to_piece(id, p.special_text);
    s.text_bytes += piece.size();
    std::string out = s.stop.push(s.utf8.push(piece));
    j.publish(std::move(out), release_logprobs(s, false), s.n_gen);
    if (s.stop.stopped()) {
        end(seq, Finish::Stop);
    } else if (s.n_gen >= p.max_tokens) {
        end(seq, Finish::Length);
    } else {
        s.next = id;
    }
}

void Scheduler::end(int seq, Finish f, std::string error) {
    Slot& s = slots_[size_t(seq)];
    Job& j = *s.job;
    if (f != Finish::Cancelled && f != Finish::Error && !s.stop.stopped()) {
        // release what was held back (an incomplete character, a possible stop-string start)
        std::string out = s.stop.push(s.utf8.flush());
        if (s.stop.stopped()) {
            if (f == Finish::Length) f = Finish::Stop;
        } else {
            out += s.stop.flush();
        }
        j.publish(std::move(out), release_logprobs(s, !s.stop.stopped()), s.n_gen);
    }
    if (f == Finish::Cancelled)
        metrics_.requests_cancelled++;
    else
        metrics_.requests_finished++;
    metrics_.e2e.observe(seconds_since(j.t_submit_));
    j.finish(f, std::move(error));
    batch_.reset(seq);  // its KV blocks back to the pool
    publish_kv();
    s = Slot{};
    n_active_--;
}

}  // namespace jitllm::serve
