// Token sampling on the host: greedy, temperature, top-k, top-p, min-p, repetition penalty,
// seeded (same seed and inputs => same tokens). Applied in llama.cpp's usual order:
// penalties -> top-k -> top-p -> min-p -> temperature -> draw.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace jitllm {

struct SamplerParams {
    float temperature = 0.0f;  // 0 = greedy (argmax; lowest id on ties)
    int top_k = 40;            // 0 = off
    float top_p = 0.95f;       // 1 = off
    float min_p = 0.05f;       // 0 = off
    float repeat_penalty = 1.0f;  // 1 = off; applied to the last repeat_last_n tokens
    int repeat_last_n = 64;
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    uint64_t seed = 0;
};

// Validates ranges; throws Error (usage) naming the flag.
void sampler_params_validate(const SamplerParams& p);

class Sampler {
public:
    explicit Sampler(const SamplerParams& p) : p_(p), rng_(p.seed) {}
    bool greedy() const { return p_.temperature <= 0.0f; }
    // Plain argmax with no penalties: the backend's own `sample` task result can be used.
    bool plain_greedy() const {
        return greedy() && p_.repeat_penalty == 1.0f && p_.presence_penalty == 0.0f &&
               p_.frequency_penalty == 0.0f;
    }
    // Picks the next token from logits (n_vocab); `history` holds the tokens seen so far.
    int32_t sample(const float* logits, int n_vocab, const std::vector<int32_t>& history);

private:
    SamplerParams p_;
    std::mt19937_64 rng_;
    std::vector<std::pair<float, int32_t>> cand_;
};

}  // namespace jitllm
