// The RoPE angle of pair i at position pos, as llama.cpp computes it: pos * base^(-2i/n_rot) in
// float, divided by the pair's frequency factor when the model has them (llama3 rope_freqs), then
// YaRN's mix of the interpolated and the original angle when the model scales with YaRN.
// The one definition the CPU reference (cpu::rope) and the CUDA backend's angle table use
// (rope_angle.cuh repeats the same float steps on the device).
#pragma once

#include <algorithm>
#include <cmath>

namespace jitllm {

// YaRN's frequency part (rope.scaling.type = yarn): pair i's angle is
//   theta_interp * (1 - r_i) + theta * r_i,   theta_interp = theta * freq_scale (1 / factor),
//   r_i = 1 - clamp((i - low) / max(0.001, high - low), 0, 1)
// so pairs below `low` (high frequencies) keep their angle, pairs from `high` on are interpolated,
// linear in between. low and high are the correction dims (whole numbers, see
// ModelConfig's parsing). freq_scale 1: no YaRN, the angle as it is.
struct RopeYarn {
    float freq_scale = 1.0f;
    float low = 0.0f, high = 0.0f;
    bool active() const { return freq_scale != 1.0f; }
};

inline float rope_yarn_mix(const RopeYarn& y, int i, float theta) {
    const float interp = y.freq_scale * theta;
    const float t = (float(i) - y.low) / std::max(0.001f, y.high - y.low);
    const float r = 1.0f - std::min(1.0f, std::max(0.0f, t));
    return interp * (1.0f - r) + theta * r;
}

inline float rope_theta(int pos, int i, int n_rot, float base, const float* freq_factors,
                        const RopeYarn& yarn = {}) {
    float theta = float(pos) * std::pow(base, -2.0f * float(i) / float(n_rot));
    if (freq_factors) theta /= freq_factors[i];
    return yarn.active() ? rope_yarn_mix(yarn, i, theta) : theta;
}

// The attention temperature (mistral3's attention.temperature_scale, Llama 4's tuning): q at
// position pos is multiplied by 1 + scale * ln(floor(pos / floor_len) + 1), evaluated as llama.cpp
// does (the quotient and floor in float, the logarithm in double). scale 0: 1.
inline float attn_temperature(int pos, float scale, int floor_len) {
    if (scale == 0.0f) return 1.0f;
    const float steps = std::floor(float(pos) / float(floor_len));
    return float(std::log(double(steps) + 1.0) * double(scale) + 1.0);
}

}  // namespace jitllm
