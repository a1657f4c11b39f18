// The RoPE angle of pair i at position pos, as llama.cpp computes it: pos * base^(-2i/n_rot) in
// float, divided by the pair's frequency factor when the model has them (llama3 rope_freqs).
// The one definition the CPU reference (cpu::rope) and the CUDA backend's angle table use.
#pragma once

#include <cmath>

namespace jitllm {

inline float rope_theta(int pos, int i, int n_rot, float base, const float* freq_factors) {
    float theta = float(pos) * std::pow(base, -2.0f * float(i) / float(n_rot));
    if (freq_factors) theta /= freq_factors[i];
    return theta;
}

}  // namespace jitllm
