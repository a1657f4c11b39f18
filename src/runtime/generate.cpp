// Generation loop (see generate.h).
#include "runtime/generate.h"

#include <algorithm>
#include <chrono>

namespace jitllm {

namespace {
// Length of the UTF-8 sequence a lead byte starts (0 for a continuation / invalid byte).
int utf8_len(unsigned char c) {
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) return 2;
    if ((c & 0xF0) == 0xE0) return 3;
    if ((c & 0xF8) == 0xF0) return 4;
    return 0;
}
// Constrained output (generate's constraint): each pick among the tokens c allows. The first
// from the prompt's logits on the host; the others on the device where the backend takes the
// mask (the argmax, or a draw the device makes, its counter followed by the host's), else from
// the host's masked logits. accept(id) keeps a pick (false: stop).
void constrained_picks(Engine& e, Sampler& s, const float* logits, std::vector<int32_t>& history, int max_tokens,
                       JsonConstraint& c, const std::function<bool(int32_t)>& accept, GenerateResult& r,
                       bool& on_device) {
    Backend& be = e.backend();
    const int n_vocab = e.model().config.n_vocab;
    std::vector<float> masked;
    auto host_pick = [&](const float* l, int budget) -> int32_t {
        masked.assign(l, l + n_vocab);
        return c.mask(masked.data(), n_vocab, budget) > 0 ? s.sample(masked.data(), n_vocab, history) : -1;
    };
    int32_t id = host_pick(logits, max_tokens);
    bool device = s.plain_greedy();
    if (!device && s.device_drawable(n_vocab, be.draw_max_k())) {
        const DrawParams dp = s.draw_params();
        device = on_device = be.set_draw(&dp);
    }
    if (device) be.set_logits_needed(false);
    uint64_t draws = 0;  // made on the device
    for (int i = 0; id >= 0 && i < max_tokens; ++i) {
        if (!accept(id) || i + 1 == max_tokens) break;
        c.accept(id);
        if (e.pos() >= e.n_ctx()) {
            r.stopped_at_context = true;
            break;
        }
        const int budget = max_tokens - i - 1;
        if (device && e.feed_masked(id, [&] { return c.allowed_words(budget, n_vocab); })) {
            id = c.n_allowed() > 0 ? be.sampled_token() : -1;
            draws += on_device ? 1 : 0;
            continue;
        }
        if (device) {  // the backend takes no mask: the host picks from here on
            device = false;
            be.set_logits_needed(true);
        }
        id = host_pick(e.feed({id}), budget);
    }
    s.skip_draws(draws);
    be.set_logits_needed(true);  // as it was: the prompt's logits came to the host
}

}  // namespace

std::string Utf8Stream::push(const std::string& bytes) {
    pending_ += bytes;
    // find the start of a trailing incomplete sequence, if any
    size_t cut = pending_.size();
    for (size_t back = 1; back <= 4 && back <= pending_.size(); ++back) {
        const unsigned char c = static_cast<unsigned char>(pending_[pending_.size() - back]);
        const int n = utf8_len(c);
        if (n == 0) continue;  // continuation byte: keep looking for the lead
        if (size_t(n) > back) cut = pending_.size() - back;
        break;
    }
    std::string out = pending_.substr(0, cut);
    pending_.erase(0, cut);
    return out;
}

std::string Utf8Stream::flush() {
    std::string out;
    out.swap(pending_);
    return out;
}

GenerateResult generate(Engine& e, Sampler& s, const float* logits, std::vector<int32_t>& history,
                        int max_tokens, const std::function<bool(const std::string&)>& on_text,
                        JsonConstraint* constraint) {
    GenerateResult r;
    Utf8Stream utf8;
    const Tokenizer& tok = e.tokenizer();
    const int n_vocab = e.model().config.n_vocab;
    const auto t0 = std::chrono::steady_clock::now();
    bool keep_going = true;
    // a pick: false for the end of generation; else kept, its text streamed (on_text may stop)
    auto accept = [&](int32_t id) {
        if (tok.is_eog(id)) {
            r.stopped_at_eog = true;
            return false;
        }
        r.ids.push_back(id);
        history.push_back(id);
        const std::string text = utf8.push(tok.token_to_piece(id, false));
        r.text += text;
        if (!text.empty() && on_text) keep_going = on_text(text);
        return true;
    };
    // A sampled pick the backend can draw on the device (Backend::set_draw): the first pick from
    // the prompt's logits here, the rest there, with the draw counter carried over, so the tokens
    // are the ones this sampler would draw from the same logits.
    Backend& be = e.backend();
    // the backend back to the argmax and to host logits however this call ends (an exception
    // too: a later greedy call must not draw)
    struct DrawScope {
        Engine& e;
        bool on = false;
        ~DrawScope() {
            if (!on) return;
            try {
                while (e.queued() > 0) {
                    e.collect_decode();
                    e.drop_position();
                }
                e.backend().set_draw(nullptr);
            } catch (...) {  // (already unwinding from the backend's own error)
            }
            e.backend().set_logits_needed(true);
        }
    } scope{e};
    bool& on_device = scope.on;
    int32_t first = -1;
    if (constraint && logits && max_tokens > 0) {
        constrained_picks(e, s, logits, history, max_tokens, *constraint,
                          [&](int32_t id) { return accept(id) && keep_going; }, r, on_device);
        logits = nullptr;  // (done)
    } else if (!s.plain_greedy() && logits && max_tokens > 0 && s.device_drawable(n_vocab, be.draw_max_k())) {
        first = s.sample(logits, n_vocab, history);
        const DrawParams dp = s.draw_params();
        on_device = be.set_draw(&dp);
        if (on_device) be.set_logits_needed(false);
    }
    uint64_t device_draws = 0;
    if ((s.plain_greedy() || on_device) && logits) {
        // picks on the backend, one step queued ahead: while the host handles pick i (stop
        // checks, text), the step fed by pick i + 1 already runs
        int32_t id = on_device ? first : be.sampled_token();
        for (int i = 0; i < max_tokens && keep_going; ++i) {
            if (on_device && i > 0) ++device_draws;  // the host's draw count follows the picks it takes
            if (!accept(id) || i + 1 == max_tokens || !keep_going) break;
            if (e.queued() == 0) {  // the step fed by this pick (queued ahead unless at the start)
                if (e.pos() >= e.n_ctx()) {
                    r.stopped_at_context = true;
                    break;
                }
                e.queue_decode(id);
            }
            // the step after it, fed by its pick on the device, when that pick would be used
            if (i + 2 < max_tokens && e.pos() < e.n_ctx()) e.queue_decode(-1);
            id = e.collect_decode();
        }
        // a step queued past the stop: its pick is not used and its position is given back
        while (e.queued() > 0) {
            e.collect_decode();
            e.drop_position();
        }
        s.skip_draws(device_draws);  // (0 unless drawn on the device; the scope resets the backend)
    } else {
        for (int i = 0; i < max_tokens && logits && keep_going; ++i) {
            if (!accept(first >= 0 ? first : s.sample(logits, n_vocab, history)) || i + 1 == max_tokens) break;
            first = -1;
            if (e.pos() >= e.n_ctx()) {
                r.stopped_at_context = true;
                break;
            }
            logits = e.feed({r.ids.back()});  // the pick just kept
        }
    }
    const std::string rest = utf8.flush();
    r.text += rest;
    if (!rest.empty() && on_text) on_text(rest);
    auto& t = e.times();
    t.decode_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    t.n_decode += int(r.ids.size());
    return r;
}

}  // namespace jitllm
