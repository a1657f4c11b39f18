// Token sampling on the host: greedy, temperature, top-k, top-p, min-p, repetition penalty,
// seeded (same seed and inputs => same tokens). Applied in llama.cpp's usual order:
// penalties -> top-k -> top-p -> min-p -> temperature -> draw.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"  // DrawParams

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

// The uniform number in [0, 1) of draw number `draw` for `seed`: a counter-based hash (splitmix64
// of the seed plus splitmix64 of the counter, top 53 bits), so the device's draw kernel
// (kernels/cuda/argmax.cu DRAW) takes the same number for the same draw without a generator's state.
double sampler_uniform(uint64_t seed, uint64_t draw);


class Sampler {
public:
    explicit Sampler(const SamplerParams& p) : p_(p) {}
    bool greedy() const { return p_.temperature <= 0.0f; }
    // Plain argmax with no penalties: the backend's own `sample` task result can be used.
    bool plain_greedy() const {
        return greedy() && p_.repeat_penalty == 1.0f && p_.presence_penalty == 0.0f &&
               p_.frequency_penalty == 0.0f;
    }
    // Picks the next token from logits (n_vocab); `history` holds the tokens seen so far. Each
    // non-greedy pick takes one draw: r = sampler_uniform(seed, draws()) x the kept weights' sum.
    int32_t sample(const float* logits, int n_vocab, const std::vector<int32_t>& history);
    // Whether a backend can draw the same tokens on the device: temperature > 0, no penalties,
    // 1 <= top-k <= max_k and top-k < n_vocab (every filter then reads only the k best).
    bool device_drawable(int n_vocab, int max_k) const;
    // The parameters of the next draw for the device; skip_draws(n): n draws were made there.
    DrawParams draw_params() const;
    uint64_t draws() const { return draws_; }
    void skip_draws(uint64_t n) { draws_ += n; }

private:
    SamplerParams p_;
    uint64_t draws_ = 0;
    std::vector<std::pair<float, int32_t>> cand_;
};

}  // namespace jitllm
