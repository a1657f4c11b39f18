// Test helper: the CPU reference's logits of a model for a token sequence fed one decode step at
// a time (positions 0, 1, ...), one vector per position. Used by the RoPE scaling tests, which
// compare two models' runs with each other (never with stored numbers).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "model/model.h"
#include "plan/plan.h"

namespace jitllm::test {

inline std::vector<std::vector<float>> cpu_logits(const Model& m, int n_ctx, const std::vector<int32_t>& ids) {
    const Plan p = plan_build(m, n_ctx);
    CpuBackend be(p, 1);
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < ids.size(); ++i) {
        const float* l = be.decode(ids[i], int(i));
        out.emplace_back(l, l + m.config.n_vocab);
    }
    return out;
}

}  // namespace jitllm::test
