// CPU backend: one reference implementation per task kind, dispatched by TaskKind.
#include "backends/cpu/cpu_backend.h"

#include <algorithm>

#include "core/error.h"
#include "quant/quant.h"

namespace jitllm {

CpuBackend::CpuBackend(const Plan& plan, int n_threads)
    : plan_(plan), c_(*plan.config), n_threads_(std::max(1, n_threads)) {
    slots_.resize(size_t(Slot::Count));
    for (const auto& b : plan.buffers) {
        if (b.per_layer) continue;
        int64_t n = 1;
        for (auto d : b.shape) n *= d;
        slots_[size_t(b.slot)].assign(size_t(n), 0.0f);
    }
    const size_t kv = size_t(plan.n_ctx) * size_t(c_.kv_dim());
    k_cache_.assign(size_t(c_.n_layers), std::vector<float>(kv, 0.0f));
    v_cache_.assign(size_t(c_.n_layers), std::vector<float>(kv, 0.0f));
    for (const auto& t : plan.decode) count_ptrs_decode_.push_back(&counts_[t.name]);
    for (const auto& t : plan.prefill) count_ptrs_prefill_.push_back(&counts_[t.name]);
    for (auto& [k, v] : counts_) v = 0;
}

float* CpuBackend::slot(Slot s, int layer) {
    if (s == Slot::KCache) return k_cache_[size_t(layer)].data();
    if (s == Slot::VCache) return v_cache_[size_t(layer)].data();
    return slots_[size_t(s)].data();
}

void CpuBackend::run_phase(const std::vector<Task>& tasks, int32_t token, int pos) {
    JITLLM_CHECK(pos >= 0 && pos < plan_.n_ctx, "pos {} outside [0, {})", pos, plan_.n_ctx);
    JITLLM_CHECK(token >= 0 && token < c_.n_vocab, "token {} outside vocab {}", token, c_.n_vocab);
    token_ = token;
    pos_ = pos;
    auto& ptrs = &tasks == &plan_.decode ? count_ptrs_decode_ : count_ptrs_prefill_;
    for (size_t i = 0; i < tasks.size(); ++i) {
        run_task(tasks[i]);
        ++*ptrs[i];
    }
}

void CpuBackend::run_tasks_at(const std::vector<Task>& tasks, const std::vector<int>& indices, int32_t token,
                              int pos) {
    token_ = token;
    pos_ = pos;
    for (int i : indices) run_task(tasks[size_t(i)]);
}

const float* CpuBackend::decode(int32_t token, int pos) {
    run_phase(plan_.decode, token, pos);
    return slot(Slot::Logits);
}

void CpuBackend::prefill(int32_t token, int pos) { run_phase(plan_.prefill, token, pos); }

namespace {

void matvec_w(const WeightTensor* w, const float* x, float* y, int n_threads) {
    cpu::matvec(w->type, w->data, w->row_bytes, int(w->rows), int(w->cols), x, y, n_threads);
}

void add_bias(float* y, const WeightTensor* b) {
    if (!b) return;
    const float* bv = b->f32();
    for (uint64_t i = 0; i < b->cols; ++i) y[i] += bv[i];
}

}  // namespace

void CpuBackend::run_task(const Task& t) {
    const int L = t.layer;
    float* x = slot(Slot::X);
    float* xb = slot(Slot::Xb);
    switch (t.kind) {
        case TaskKind::TokenEmbd: {
            const WeightTensor* e = t.w[0];
            dequantize_row(e->type, e->data + size_t(token_) * e->row_bytes, x, int64_t(e->cols));
            if (t.scale != 1.0f)
                for (int i = 0; i < c_.dim; ++i) x[i] *= t.scale;
            break;
        }
        case TaskKind::AttnNorm:
        case TaskKind::FfnNorm:
        case TaskKind::OutputNorm:
            cpu::rms_norm(x, t.w[0]->f32(), xb, c_.dim, t.eps);
            break;
        case TaskKind::AttnQkv: {
            float* q = slot(Slot::Q);
            float* k = slot(Slot::K);
            float* v = slot(Slot::V);
            if (t.w[1] == nullptr) {  // fused attn_qkv: rows Q, then K, then V
                const WeightTensor* w = t.w[0];
                const int qd = c_.q_dim(), kd = c_.kv_dim();
                cpu::matvec(w->type, w->data, w->row_bytes, qd, int(w->cols), xb, q, n_threads_);
                cpu::matvec(w->type, w->data + size_t(qd) * w->row_bytes, w->row_bytes, kd,
                            int(w->cols), xb, k, n_threads_);
                cpu::matvec(w->type, w->data + size_t(qd + kd) * w->row_bytes, w->row_bytes, kd,
                            int(w->cols), xb, v, n_threads_);
            } else {
                matvec_w(t.w[0], xb, q, n_threads_);
                matvec_w(t.w[1], xb, k, n_threads_);
                matvec_w(t.w[2], xb, v, n_threads_);
            }
            if (t.w.size() > 3) {
                add_bias(q, t.w[3]);
                add_bias(k, t.w[4]);
                add_bias(v, t.w[5]);
            }
            break;
        }
        case TaskKind::AttnQkNorm: {
            float* q = slot(Slot::Q);
            float* k = slot(Slot::K);
            for (int h = 0; h < c_.n_heads; ++h)
                cpu::rms_norm(q + h * c_.head_dim, t.w[0]->f32(), q + h * c_.head_dim, c_.head_dim, t.eps);
            for (int h = 0; h < c_.n_kv_heads; ++h)
                cpu::rms_norm(k + h * c_.head_dim, t.w[1]->f32(), k + h * c_.head_dim, c_.head_dim, t.eps);
            break;
        }
        case TaskKind::AttnRope: {
            const auto style = c_.rope_style == RopeStyle::Norm ? cpu::RopePairing::Norm
                                                                : cpu::RopePairing::NeoX;
            const float* ff = t.w[0] ? t.w[0]->f32() : nullptr;
            cpu::rope(slot(Slot::Q), c_.n_heads, c_.head_dim, c_.n_rot, pos_, c_.rope_base, style, ff);
            cpu::rope(slot(Slot::K), c_.n_kv_heads, c_.head_dim, c_.n_rot, pos_, c_.rope_base, style, ff);
            break;
        }
        case TaskKind::AttnKvStore: {
            const size_t kd = size_t(c_.kv_dim());
            std::copy_n(slot(Slot::K), kd, slot(Slot::KCache, L) + size_t(pos_) * kd);
            std::copy_n(slot(Slot::V), kd, slot(Slot::VCache, L) + size_t(pos_) * kd);
            break;
        }
        case TaskKind::Attn: {
            // Sliding window: attend to the last `sliding_window` positions only (0 = all).
            int first = 0;
            if (c_.sliding_window > 0) first = std::max(0, pos_ + 1 - c_.sliding_window);
            const size_t kd = size_t(c_.kv_dim());
            cpu::attention(slot(Slot::Q), slot(Slot::KCache, L) + size_t(first) * kd,
                           slot(Slot::VCache, L) + size_t(first) * kd, kd, c_.n_heads,
                           c_.n_kv_heads, c_.head_dim, pos_ + 1 - first, t.scale, slot(Slot::Att));
            break;
        }
        case TaskKind::AttnOutput:
            matvec_w(t.w[0], slot(Slot::Att), slot(Slot::Tmp), n_threads_);
            break;
        case TaskKind::AttnResidual:
        case TaskKind::FfnResidual:
            cpu::add_scaled(x, slot(Slot::Tmp), t.scale, c_.dim);
            break;
        case TaskKind::FfnGateUp: {
            float* hb = slot(Slot::Hb);
            float* hb2 = slot(Slot::Hb2);
            if (t.w[0] == nullptr) {  // fused ffn_up: gate rows [0, ff), up rows [ff, 2ff)
                const WeightTensor* w = t.w[1];
                const int ff = c_.hidden_dim;
                cpu::matvec(w->type, w->data, w->row_bytes, ff, int(w->cols), xb, hb, n_threads_);
                cpu::matvec(w->type, w->data + size_t(ff) * w->row_bytes, w->row_bytes, ff,
                            int(w->cols), xb, hb2, n_threads_);
            } else {
                matvec_w(t.w[0], xb, hb, n_threads_);
                matvec_w(t.w[1], xb, hb2, n_threads_);
            }
            break;
        }
        case TaskKind::FfnAct:
            cpu::swiglu(slot(Slot::Hb), slot(Slot::Hb2), slot(Slot::Hb), c_.hidden_dim);
            break;
        case TaskKind::FfnDown:
            matvec_w(t.w[0], slot(Slot::Hb), slot(Slot::Tmp), n_threads_);
            break;
        case TaskKind::Output: {
            float* logits = slot(Slot::Logits);
            matvec_w(t.w[0], xb, logits, n_threads_);
            if (t.scale != 1.0f)
                for (int i = 0; i < c_.n_vocab; ++i) logits[i] *= t.scale;
            break;
        }
        case TaskKind::Sample:
            token_out_ = cpu::argmax(slot(Slot::Logits), c_.n_vocab);
            break;
        case TaskKind::Count:
            JITLLM_CHECK(false, "task kind Count");
    }
}

}  // namespace jitllm
