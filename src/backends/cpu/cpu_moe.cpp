// CPU reference of the mixture-of-experts tasks (plan/task_kind.h: ffn_router .. ffn_shexp_down),
// row by row: each row of a batch step chooses its own experts.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace jitllm {

namespace cpu {

void moe_topk(const float* logits, int n_expert, int k, bool renorm, int32_t* ids, float* w) {
    // softmax over all experts, then the k largest probabilities (the lower index first on a tie)
    float mx = logits[0];
    for (int e = 1; e < n_expert; ++e) mx = std::max(mx, logits[e]);
    thread_local std::vector<float> p;
    thread_local std::vector<int> order;
    p.resize(static_cast<size_t>(n_expert));
    float sum = 0.0f;
    for (int e = 0; e < n_expert; ++e) sum += p[size_t(e)] = std::exp(logits[e] - mx);
    for (auto& x : p) x /= sum;
    order.resize(static_cast<size_t>(n_expert));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[size_t(a)] > p[size_t(b)]; });
    float wsum = 0.0f;
    for (int j = 0; j < k; ++j) {
        ids[j] = order[size_t(j)];
        w[j] = p[size_t(order[size_t(j)])];
        wsum += w[j];
    }
    if (renorm)
        for (int j = 0; j < k; ++j) w[j] /= wsum;
}

}  // namespace cpu

namespace {

// expert e's matrix of a stacked tensor
const uint8_t* expert(const WeightTensor* t, int e) { return t->data + size_t(e) * (t->n_bytes / t->stack); }

}  // namespace

bool CpuBackend::run_moe(const Task& t) {
    if (!is_moe_task(t.kind)) return false;
    const int k = c_.n_expert_used, ff = c_.expert_ff, dim = c_.dim;
    int32_t* ids0 = reinterpret_cast<int32_t*>(slot(Slot::ExpIds));
    for (int r = 0; r < n_rows_; ++r) {
        const float* xb = row(Slot::Xb, r);
        int32_t* ids = ids0 + size_t(r) * size_t(k);
        switch (t.kind) {
            case TaskKind::FfnRouter: {
                const WeightTensor* g = t.w[0];
                float* logits = row(Slot::Router, r);
                cpu::matvec(g->type, g->data, g->row_bytes, c_.n_expert, dim, xb, logits, n_threads_);
                if (t.w[1]) cpu::matvec(t.w[1]->type, t.w[1]->data, t.w[1]->row_bytes, 1, dim, xb,
                                        logits + c_.n_expert, 1);
                break;
            }
            case TaskKind::FfnTopk:
                cpu::moe_topk(row(Slot::Router, r), c_.n_expert, k, t.renorm, ids, row(Slot::ExpW, r));
                break;
            case TaskKind::FfnExpGateUp:
                for (int j = 0; j < k; ++j) {
                    JITLLM_CHECK(ids[j] >= 0 && ids[j] < c_.n_expert, "expert id {}", ids[j]);
                    for (int m = 0; m < 2; ++m) {
                        const WeightTensor* w = t.w[size_t(m)];
                        float* y = row(m ? Slot::ExpHb2 : Slot::ExpHb, r) + size_t(j) * size_t(ff);
                        cpu::matvec(w->type, expert(w, ids[j]), w->row_bytes, ff, dim, xb, y, n_threads_);
                    }
                }
                break;
            case TaskKind::FfnExpAct:
                cpu::swiglu(row(Slot::ExpHb, r), row(Slot::ExpHb2, r), row(Slot::ExpHb, r), k * ff);
                break;
            case TaskKind::FfnExpDown: {
                const WeightTensor* w = t.w[0];
                float* tmp = row(Slot::Tmp, r);
                const float* wj = row(Slot::ExpW, r);
                std::vector<float>& y = moe_y_;
                y.resize(size_t(dim));
                for (int j = 0; j < k; ++j) {
                    cpu::matvec(w->type, expert(w, ids[j]), w->row_bytes, dim, ff,
                                row(Slot::ExpHb, r) + size_t(j) * size_t(ff), y.data(), n_threads_);
                    for (int i = 0; i < dim; ++i) tmp[i] = j == 0 ? y[size_t(i)] * wj[0] : tmp[i] + y[size_t(i)] * wj[j];
                }
                break;
            }
            case TaskKind::FfnShexpGateUp:
                cpu::matvec(t.w[0]->type, t.w[0]->data, t.w[0]->row_bytes, c_.shared_expert_ff, dim, xb,
                            row(Slot::Hb, r), n_threads_);
                cpu::matvec(t.w[1]->type, t.w[1]->data, t.w[1]->row_bytes, c_.shared_expert_ff, dim, xb,
                            row(Slot::Hb2, r), n_threads_);
                break;
            case TaskKind::FfnShexpAct:
                cpu::swiglu(row(Slot::Hb, r), row(Slot::Hb2, r), row(Slot::Hb, r), c_.shared_expert_ff);
                break;
            case TaskKind::FfnShexpDown: {
                const WeightTensor* w = t.w[0];
                std::vector<float>& y = moe_y_;
                y.resize(size_t(dim));
                cpu::matvec(w->type, w->data, w->row_bytes, dim, c_.shared_expert_ff, row(Slot::Hb, r), y.data(),
                            n_threads_);
                const float g = 1.0f / (1.0f + std::exp(-row(Slot::Router, r)[c_.n_expert]));
                float* tmp = row(Slot::Tmp, r);
                for (int i = 0; i < dim; ++i) tmp[i] += y[size_t(i)] * g;
                break;
            }
            default:
                JITLLM_CHECK(false, "task {} is not a mixture-of-experts task", t.name);
        }
    }
    return true;
}

}  // namespace jitllm
