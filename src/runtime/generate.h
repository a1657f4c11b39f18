// Generation loop: sample, stop on end-of-generation tokens or the token budget, stream text as
// complete UTF-8 (a character split across byte tokens is held back until it is whole).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "runtime/token_constraint.h"

namespace jitllm {

// Accumulates bytes and releases the longest prefix that is complete UTF-8; invalid bytes are
// released as they are (the caller decides; we never drop data).
class Utf8Stream {
public:
    std::string push(const std::string& bytes);
    std::string flush();  // whatever is left

private:
    std::string pending_;
};

struct GenerateResult {
    std::vector<int32_t> ids;  // generated ids (the end-of-generation token excluded)
    std::string text;
    bool stopped_at_eog = false;
    bool stopped_at_context = false;
};

// Generates up to max_tokens after `logits` (the distribution after the prompt, on the host).
// `history` (prompt + generated so far) feeds the repetition penalties and is extended. on_text
// receives streamed text; returning false stops generation. Only picks that fed a decode step are
// in the cache afterwards: e.pos() counts the prompt and every generated id but the last (the last
// is cached too when the end-of-generation token stopped it). Plain greedy sampling runs one
// decode step ahead on the backend (Engine::queue_decode). With a constraint every pick is one
// the constraint allows (constrained output: the first from `logits`, the others on the device
// where the backend takes a token mask, Engine::feed_masked); it ends when none is allowed.
GenerateResult generate(Engine& e, Sampler& s, const float* logits, std::vector<int32_t>& history,
                        int max_tokens, const std::function<bool(const std::string&)>& on_text,
                        JsonConstraint* constraint = nullptr);

}  // namespace jitllm
