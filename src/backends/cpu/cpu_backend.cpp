// CPU backend: one reference implementation per task kind, dispatched by TaskKind.
#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <initializer_list>

#include "backends/cpu/fast/fast_ops.h"
#include "backends/cpu/fast/team.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "quant/quant.h"

namespace jitllm {

namespace {
// The task kinds run_products runs (their weights: matrices, and biases of one row)
bool is_product(TaskKind k) {
    return k == TaskKind::AttnQkv || k == TaskKind::AttnOutput || k == TaskKind::FfnGateUp ||
           k == TaskKind::FfnDown || k == TaskKind::Output;
}
// The row-wise task kinds whose rows may run on the fast path's threads at once: each writes its
// own row (attention reads the cache rows of positions stored by an earlier task) and calls
// nothing that uses the global ThreadPool
bool rows_in_parallel(TaskKind k) {
    switch (k) {
        case TaskKind::TokenEmbd: case TaskKind::AttnNorm: case TaskKind::FfnNorm: case TaskKind::OutputNorm:
        case TaskKind::AttnQkNorm: case TaskKind::AttnRope: case TaskKind::AttnKvStore: case TaskKind::Attn:
        case TaskKind::AttnResidual: case TaskKind::FfnResidual: case TaskKind::FfnAct:
            return true;
        default:
            return false;
    }
}
}  // namespace

CpuBackend::CpuBackend(const Plan& plan, int n_threads, bool fast)
    : plan_(plan), c_(*plan.config), n_threads_(std::max(1, n_threads)), fast_(fast) {
    (void)cpu_isa();  // JITLLM_CPU_ISA read here, on the caller's thread, not first in a worker
    slots_.resize(size_t(Slot::Count));
    for (const auto& b : plan.buffers) {
        if (b.per_layer) continue;
        int64_t n = 1;
        for (auto d : b.shape) n *= d;
        slots_[size_t(b.slot)].assign(size_t(n), 0.0f);
    }
    const size_t kv = size_t(plan.kv_blocks) * size_t(plan.kv_block) * size_t(c_.kv_dim());
    k_cache_.assign(size_t(c_.n_layers), std::vector<float>(kv, 0.0f));
    v_cache_.assign(size_t(c_.n_layers), std::vector<float>(kv, 0.0f));
    if (fast_)
        for (const auto* phase : {&plan.decode, &plan.batch})
            for (const Task& t : *phase)
                if (is_product(t.kind))
                    for (const WeightTensor* w : t.w)
                        if (w) packed_.add(w->type, w->data, w->row_bytes, int(w->rows), int(w->cols), n_threads_);
    // sequence s: blocks s * per_seq + b where the pool holds them, else none until set
    const int per_seq = plan.kv_blocks_per_seq();
    kv_table_.assign(size_t(plan.n_seq) * size_t(per_seq), -1);
    for (size_t i = 0; i < kv_table_.size(); ++i)
        if (int64_t(i) < plan.kv_blocks) kv_table_[i] = int32_t(i);
    for (const auto& t : plan.decode) count_ptrs_decode_.push_back(&counts_[t.name]);
    for (const auto& t : plan.prefill) count_ptrs_prefill_.push_back(&counts_[t.name]);
    for (const auto& t : plan.batch) count_ptrs_batch_.push_back(&counts_[t.name]);
    for (auto& [k, v] : counts_) v = 0;
}

BackendInfo CpuBackend::info() const {
    BackendInfo i;
    i.cpu_products = std::string("exact ") + cpu_isa_name(cpu_isa());
    if (fast_ && cpu::fast::fast_isa() != cpu::fast::FastIsa::None)
        i.cpu_products = std::string("fast ") + cpu::fast::fast_isa_name(cpu::fast::fast_isa()) + ", other types " +
                         i.cpu_products;
    return i;
}

float* CpuBackend::slot(Slot s, int layer) {
    if (s == Slot::KCache) return k_cache_[size_t(layer)].data();
    if (s == Slot::VCache) return v_cache_[size_t(layer)].data();
    return slots_[size_t(s)].data();
}

void CpuBackend::run_phase(const std::vector<Task>& tasks, int32_t token, int pos) {
    JITLLM_CHECK(pos >= 0 && pos < plan_.n_ctx, "pos {} outside [0, {})", pos, plan_.n_ctx);
    JITLLM_CHECK(token >= 0 && token < c_.n_vocab, "token {} outside vocab {}", token, c_.n_vocab);
    set_single_row(token, pos);
    auto& ptrs = &tasks == &plan_.decode ? count_ptrs_decode_ : count_ptrs_prefill_;
    for (size_t i = 0; i < tasks.size(); ++i) {
        run_task(tasks[i]);
        ++*ptrs[i];
    }
}

void CpuBackend::set_single_row(int32_t token, int pos) {
    token_ = token;
    pos_ = pos;
    n_rows_ = 1;
    row_tok_ = &token_;
    row_pos_ = &pos_;
    row_seq_ = nullptr;
}

void CpuBackend::run_tasks_at(const std::vector<Task>& tasks, const std::vector<int>& indices, int32_t token,
                              int pos) {
    set_single_row(token, pos);
    for (int i : indices) run_task(tasks[size_t(i)]);
}

const float* CpuBackend::decode(int32_t token, int pos) {
    run_phase(plan_.decode, token, pos);
    return slot(Slot::Logits);
}

void CpuBackend::prefill(int32_t token, int pos) { run_phase(plan_.prefill, token, pos); }

void CpuBackend::decode_queue(int32_t token, int pos) {
    // token < 0: the newest step's pick, which is the last queued one while any is not collected
    // (collecting sets token_out_ to an older pick); else token_out_ (a collect or a feed since)
    if (token < 0) token = queued_head_ < queued_picks_.size() ? queued_picks_.back() : token_out_;
    decode(token, pos);
    if (queued_head_ == queued_picks_.size()) queued_picks_.clear(), queued_head_ = 0;
    queued_picks_.push_back(token_out_);
}

int32_t CpuBackend::decode_collect() {
    JITLLM_CHECK(queued_head_ < queued_picks_.size(), "decode_collect with no queued decode step");
    token_out_ = queued_picks_[queued_head_++];
    return token_out_;
}

void CpuBackend::set_rows(const BatchStep& b) {
    JITLLM_CHECK(plan_.batch_rows >= b.n && b.n >= 1, "batch of {} rows, plan has {}", b.n, plan_.batch_rows);
    JITLLM_CHECK(!b.logits || b.n <= plan_.n_seq, "batch logits for {} rows, plan has {} sequences", b.n,
                 plan_.n_seq);
    JITLLM_CHECK(b.logits_first >= 0 && b.logits_first <= std::min(b.n, plan_.n_seq) && !(b.logits_first && b.logits),
                 "batch logits for the first {} of {} rows, plan has {} sequences", b.logits_first, b.n, plan_.n_seq);
    for (int i = 0; i < b.n; ++i) {
        JITLLM_CHECK(b.pos[i] >= 0 && b.pos[i] < plan_.n_ctx, "row {}: pos {} outside [0, {})", i, b.pos[i],
                     plan_.n_ctx);
        JITLLM_CHECK(b.tokens[i] >= 0 && b.tokens[i] < c_.n_vocab, "row {}: token {} outside vocab {}", i,
                     b.tokens[i], c_.n_vocab);
        JITLLM_CHECK(b.seq[i] >= 0 && b.seq[i] < plan_.n_seq, "row {}: sequence {} outside [0, {})", i,
                     b.seq[i], plan_.n_seq);
    }
    batch_tok_.assign(b.tokens, b.tokens + b.n);
    batch_pos_.assign(b.pos, b.pos + b.n);
    batch_seq_.assign(b.seq, b.seq + b.n);
    n_rows_ = b.n;
    row_tok_ = batch_tok_.data();
    row_pos_ = batch_pos_.data();
    row_seq_ = batch_seq_.data();
    row_logits_ = b.logits;
}

void CpuBackend::batch(const BatchStep& b) {
    set_rows(b);
    const size_t n = b.logits ? plan_.batch.size() : plan_.batch_body;
    for (size_t i = 0; i < n; ++i) {
        run_task(plan_.batch[i]);
        ++*count_ptrs_batch_[i];
    }
    if (b.logits_first > 0) {
        // the output tail for the first rows only
        n_rows_ = b.logits_first;
        row_logits_ = true;
        for (size_t i = plan_.batch_body; i < plan_.batch.size(); ++i) {
            run_task(plan_.batch[i]);
            ++*count_ptrs_batch_[i];
        }
    } else if (b.logits_last && !b.logits) {
        // the output tail for the last row only: its residual stream moves to row 0
        std::copy_n(row(Slot::X, b.n - 1), size_t(c_.dim), row(Slot::X, 0));
        batch_tok_[0] = batch_tok_[size_t(b.n - 1)];
        batch_pos_[0] = batch_pos_[size_t(b.n - 1)];
        batch_seq_[0] = batch_seq_[size_t(b.n - 1)];
        n_rows_ = 1;
        row_logits_ = true;
        for (size_t i = plan_.batch_body; i < plan_.batch.size(); ++i) {
            run_task(plan_.batch[i]);
            ++*count_ptrs_batch_[i];
        }
        token_out_ = batch_tok_[0];
    }
}

void CpuBackend::run_batch_tasks_at(const std::vector<int>& indices, const BatchStep& b) {
    set_rows(b);
    for (int i : indices) run_task(plan_.batch[size_t(i)]);
}

bool CpuBackend::set_kv_blocks(int seq, const int32_t* blocks, int n) {
    const int per_seq = plan_.kv_blocks_per_seq();
    JITLLM_CHECK(seq >= 0 && seq < plan_.n_seq && n >= 0 && n <= per_seq, "kv blocks: sequence {}, {} blocks", seq, n);
    int32_t* t = kv_table_.data() + size_t(seq) * size_t(per_seq);
    for (int b = 0; b < per_seq; ++b) {
        t[b] = b < n ? blocks[b] : -1;
        JITLLM_CHECK(t[b] < plan_.kv_blocks, "kv blocks: block {} outside the pool of {}", t[b], plan_.kv_blocks);
    }
    return true;
}

size_t CpuBackend::pool_row(int seq, int pos) const {
    if (seq < 0) return size_t(pos);  // decode / prefill: position p in pool row p (plan.h)
    const int32_t b = kv_table_[size_t(seq) * size_t(plan_.kv_blocks_per_seq()) + size_t(pos / plan_.kv_block)];
    JITLLM_CHECK(b >= 0, "sequence {}: position {} has no KV block", seq, pos);
    return size_t(b) * size_t(plan_.kv_block) + size_t(pos % plan_.kv_block);
}

void CpuBackend::attention_row(const Task& t, int r, int seq, int first, int pos) {
    const size_t kd = size_t(c_.kv_dim());
    const int n = pos + 1 - first;
    const float* k = cache_row(Slot::KCache, t.layer, seq, first);
    const float* v = cache_row(Slot::VCache, t.layer, seq, first);
    // consecutive in the pool when every block of the span follows the one before
    const int B = plan_.kv_block;
    bool consecutive = true;
    for (int b = first / B + 1; b <= pos / B && consecutive; ++b)
        consecutive = pool_row(seq, b * B) == pool_row(seq, (b - 1) * B) + size_t(B);
    if (!consecutive) {
        // per thread: the fast path runs the rows of a batch step on several threads at once
        thread_local std::vector<float> gather_k, gather_v;
        gather_k.resize(size_t(n) * kd);
        gather_v.resize(size_t(n) * kd);
        for (int p = first; p <= pos; ++p) {
            std::copy_n(cache_row(Slot::KCache, t.layer, seq, p), kd, gather_k.data() + size_t(p - first) * kd);
            std::copy_n(cache_row(Slot::VCache, t.layer, seq, p), kd, gather_v.data() + size_t(p - first) * kd);
        }
        k = gather_k.data();
        v = gather_v.data();
    }
    (fast_ ? cpu::fast::attention : cpu::attention)(row(Slot::Q, r), k, v, kd, c_.n_heads, c_.n_kv_heads, c_.head_dim,
                                                    n, t.scale, row(Slot::Att, r), n_threads_);
}

const float* CpuBackend::batch_logits(int r) {
    JITLLM_CHECK(r >= 0 && r < n_rows_ && row_logits_, "batch row {} has no logits", r);
    return row(Slot::Logits, r);
}

int32_t CpuBackend::batch_sampled(int r) const {
    JITLLM_CHECK(r >= 0 && r < n_rows_ && row_logits_, "batch row {} has no pick", r);
    return batch_tok_[size_t(r)];
}

namespace {

void add_bias(float* y, const WeightTensor* b) {
    if (!b) return;
    const float* bv = b->f32();
    for (uint64_t i = 0; i < b->cols; ++i) y[i] += bv[i];
}

}  // namespace

bool CpuBackend::run_products(const Task& t) {
    // rows [r0, r0 + n) of w times every current row of slot `in` into `out` (cpu::matmul: each
    // weight tile read once for all rows; each row's bits those of its own matvec)
    auto mm = [&](const WeightTensor* w, int r0, int n, Slot in, Slot out) {
        const cpu::fast::PackedMatrix* p = fast_ ? packed_.find(w->data) : nullptr;
        if (p && cpu::fast::matmul_packed(*p, r0, n, row(in, 0), size_t(slot_row_elems(plan_, in)), n_rows_,
                                          row(out, 0), size_t(slot_row_elems(plan_, out)), n_threads_))
            return;
        if (fast_ && cpu::fast::matmul(w->type, w->data + size_t(r0) * w->row_bytes, w->row_bytes, n, int(w->cols),
                                  row(in, 0), size_t(slot_row_elems(plan_, in)), n_rows_, row(out, 0),
                                  size_t(slot_row_elems(plan_, out)), n_threads_))
            return;
        cpu::matmul(w->type, w->data + size_t(r0) * w->row_bytes, w->row_bytes, n, int(w->cols), row(in, 0),
                    size_t(slot_row_elems(plan_, in)), n_rows_, row(out, 0), size_t(slot_row_elems(plan_, out)),
                    n_threads_);
    };
    auto all = [&](const WeightTensor* w, Slot in, Slot out) { mm(w, 0, int(w->rows), in, out); };
    // products of the same input: on the fast path one job of its team where each has a packed
    // form of one type (the same bits as one by one), else one by one
    struct Part {
        const WeightTensor* w;
        int r0, n;
        Slot out;
    };
    auto products = [&](std::initializer_list<Part> parts, Slot in) {
        cpu::fast::PackedProduct pp[cpu::fast::kMaxFused];
        int k = 0;
        for (const Part& q : parts) {
            const cpu::fast::PackedMatrix* p = fast_ && k < cpu::fast::kMaxFused ? packed_.find(q.w->data) : nullptr;
            if (!p) break;
            pp[k++] = {p, q.r0, q.n, row(q.out, 0), size_t(slot_row_elems(plan_, q.out))};
        }
        if (k == int(parts.size()) &&
            cpu::fast::matmul_packed(pp, k, row(in, 0), size_t(slot_row_elems(plan_, in)), n_rows_, n_threads_))
            return;
        for (const Part& q : parts) mm(q.w, q.r0, q.n, in, q.out);
    };
    switch (t.kind) {
        case TaskKind::AttnQkv:
            if (t.w[1] == nullptr) {  // fused attn_qkv: rows Q, then K, then V
                const int qd = c_.q_dim(), kd = c_.kv_dim();
                products({{t.w[0], 0, qd, Slot::Q}, {t.w[0], qd, kd, Slot::K}, {t.w[0], qd + kd, kd, Slot::V}},
                         Slot::Xb);
            } else {
                products({{t.w[0], 0, int(t.w[0]->rows), Slot::Q}, {t.w[1], 0, int(t.w[1]->rows), Slot::K},
                          {t.w[2], 0, int(t.w[2]->rows), Slot::V}},
                         Slot::Xb);
            }
            if (t.w.size() > 3)
                for (int r = 0; r < n_rows_; ++r) {
                    add_bias(row(Slot::Q, r), t.w[3]);
                    add_bias(row(Slot::K, r), t.w[4]);
                    add_bias(row(Slot::V, r), t.w[5]);
                }
            return true;
        case TaskKind::AttnOutput:
            all(t.w[0], Slot::Att, Slot::Tmp);
            return true;
        case TaskKind::FfnGateUp:
            if (t.w[0] == nullptr) {  // fused ffn_up: gate rows [0, ff), up rows [ff, 2ff)
                const int ff = c_.hidden_dim;
                products({{t.w[1], 0, ff, Slot::Hb}, {t.w[1], ff, ff, Slot::Hb2}}, Slot::Xb);
            } else {
                products({{t.w[0], 0, int(t.w[0]->rows), Slot::Hb}, {t.w[1], 0, int(t.w[1]->rows), Slot::Hb2}},
                         Slot::Xb);
            }
            return true;
        case TaskKind::FfnDown:
            all(t.w[0], Slot::Hb, Slot::Tmp);
            return true;
        case TaskKind::Output:
            all(t.w[0], Slot::Xb, Slot::Logits);
            if (t.scale != 1.0f)
                for (int r = 0; r < n_rows_; ++r) {
                    float* logits = row(Slot::Logits, r);
                    for (int i = 0; i < c_.n_vocab; ++i) logits[i] *= t.scale;
                }
            return true;
        default:
            return false;
    }
}

void CpuBackend::run_task(const Task& t) {
    if (run_products(t) || run_moe(t)) return;
    // Every other task is row-wise except attention (which reads other rows only through the cache):
    // row r is token row_tok_[r] at position row_pos_[r] of sequence row_seq_[r].
    const int L = t.layer;
    auto one_row = [&](int r) {
        const int pos = row_pos_[r];
        const int seq = row_seq_ ? row_seq_[r] : -1;  // -1: rows by position
        float* x = row(Slot::X, r);
        float* xb = row(Slot::Xb, r);
        switch (t.kind) {
            case TaskKind::TokenEmbd: {
                const WeightTensor* e = t.w[0];
                dequantize_row(e->type, e->data + size_t(row_tok_[r]) * e->row_bytes, x, int64_t(e->cols));
                if (t.scale != 1.0f)
                    for (int i = 0; i < c_.dim; ++i) x[i] *= t.scale;
                break;
            }
            case TaskKind::AttnNorm:
            case TaskKind::FfnNorm:
            case TaskKind::OutputNorm:
                (fast_ ? cpu::fast::rms_norm : cpu::rms_norm)(x, t.w[0]->f32(), xb, c_.dim, t.eps);
                break;
            case TaskKind::AttnQkNorm: {
                float* q = row(Slot::Q, r);
                float* k = row(Slot::K, r);
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
                float* q = row(Slot::Q, r);
                cpu::rope(q, c_.n_heads, c_.head_dim, c_.n_rot, pos, c_.rope_base, style, ff, c_.rope_yarn);
                cpu::rope(row(Slot::K, r), c_.n_kv_heads, c_.head_dim, c_.n_rot, pos, c_.rope_base, style, ff,
                          c_.rope_yarn);
                if (c_.attn_temp_scale != 0.0f) {  // mistral3's temperature: q alone, after RoPE
                    const float s = attn_temperature(pos, c_.attn_temp_scale, c_.n_ctx_orig);
                    for (int d = 0; d < c_.q_dim(); ++d) q[d] *= s;
                }
                break;
            }
            case TaskKind::AttnKvStore: {
                const size_t kd = size_t(c_.kv_dim());
                std::copy_n(row(Slot::K, r), kd, cache_row(Slot::KCache, L, seq, pos));
                std::copy_n(row(Slot::V, r), kd, cache_row(Slot::VCache, L, seq, pos));
                break;
            }
            case TaskKind::Attn: {
                // Sliding window: attend to the last `sliding_window` positions only (0 = all).
                int first = 0;
                if (c_.sliding_window > 0) first = std::max(0, pos + 1 - c_.sliding_window);
                attention_row(t, r, seq, first, pos);
                break;
            }
            case TaskKind::AttnResidual:
            case TaskKind::FfnResidual:
                cpu::add_scaled(x, row(Slot::Tmp, r), t.scale, c_.dim);
                break;
            case TaskKind::FfnAct:
                (fast_ ? cpu::fast::swiglu : cpu::swiglu)(row(Slot::Hb, r), row(Slot::Hb2, r), row(Slot::Hb, r),
                                                          c_.hidden_dim);
                break;
            case TaskKind::AttnQkv:
            case TaskKind::AttnOutput:
            case TaskKind::FfnGateUp:
            case TaskKind::FfnDown:
            case TaskKind::Output:
                break;  // run_products, above
            case TaskKind::Sample: {
                const int32_t pick = cpu::argmax(row(Slot::Logits, r), c_.n_vocab);
                if (row_seq_) batch_tok_[size_t(r)] = pick;
                else token_out_ = pick;
                break;
            }
            case TaskKind::FfnRouter: case TaskKind::FfnTopk: case TaskKind::FfnExpGateUp:
            case TaskKind::FfnExpAct: case TaskKind::FfnExpDown: case TaskKind::FfnShexpGateUp:
            case TaskKind::FfnShexpAct: case TaskKind::FfnShexpDown:
                break;  // run_moe (cpu_moe.cpp)
            case TaskKind::Count:
                JITLLM_CHECK(false, "task kind Count");
        }
    };
    // the fast path's batch steps: rows over the team (each row's bits its own either way)
    if (fast_ && n_rows_ > 1 && rows_in_parallel(t.kind)) return cpu::fast::team_for(n_threads_, n_rows_, one_row);
    for (int r = 0; r < n_rows_; ++r) one_row(r);
}

DecodeBytes CpuBackend::decode_bytes() const {
    DecodeBytes b;
    for (const auto& t : plan_.decode) b.fixed += t.weight_bytes;
    b.per_pos = uint64_t(c_.n_layers) * uint64_t(c_.kv_dim() + c_.v_dim()) * sizeof(float);
    return b;
}

double cpu_copy_bandwidth_gb_s(int n_threads, size_t bytes) {
    constexpr size_t kDefaultBytes = size_t(256) << 20;
    constexpr int kReps = 5;
    if (bytes == 0) bytes = kDefaultBytes;
    n_threads = std::max(n_threads, 1);
    bytes = std::max<size_t>(bytes, size_t(n_threads) * 4096);
    std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);  // every page touched before timing
    ThreadPool pool(n_threads);
    const size_t chunk = (bytes + size_t(n_threads) - 1) / size_t(n_threads);
    std::vector<double> gb_s;
    volatile uint8_t sink = 0;
    for (int i = 0; i <= kReps; ++i) {  // i == 0: warm-up
        const auto t0 = std::chrono::steady_clock::now();
        pool.parallel_for(n_threads, [&](int k) {
            const size_t off = size_t(k) * chunk;
            if (off < bytes) std::memcpy(dst.data() + off, src.data() + off, std::min(chunk, bytes - off));
        });
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        sink = sink + dst[size_t(i) % bytes];
        if (i > 0 && s > 0) gb_s.push_back(2.0 * double(bytes) / s / 1e9);
    }
    (void)sink;
    if (gb_s.empty()) return 0.0;
    std::sort(gb_s.begin(), gb_s.end());
    const size_t n = gb_s.size();
    return n % 2 ? gb_s[n / 2] : 0.5 * (gb_s[n / 2 - 1] + gb_s[n / 2]);
}

}  // namespace jitllm
