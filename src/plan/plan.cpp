// plan_build: the one block builder for the Llama family. Architectures differ only by the
// ModelConfig flags (biases, fused tensors, QK-norm, scales), read here in one place.
#include "plan/plan.h"

#include <algorithm>

#include "core/error.h"

namespace jitllm {

std::optional<TaskKind> task_kind_from_name(std::string_view name) {
    for (int k = 0; k < int(TaskKind::Count); ++k)
        if (task_kind_name(TaskKind(k)) == name) return TaskKind(k);
    return std::nullopt;
}

const char* slot_name(Slot s) {
    static const char* const kNames[] = {"token", "pos", "x", "xb", "q", "k", "v", "att", "tmp",
                                         "hb", "hb2", "logits", "k_cache", "v_cache", "tokens",
                                         "positions", "seqs", "router", "exp_ids", "exp_w", "exp_hb",
                                         "exp_hb2"};
    static_assert(sizeof(kNames) / sizeof(kNames[0]) == size_t(Slot::Count));
    return kNames[size_t(s)];
}

const char* phase_name(Phase p) {
    return p == Phase::Decode ? "decode" : p == Phase::Prefill ? "prefill" : "batch";
}

namespace {

uint64_t wbytes(const std::vector<const WeightTensor*>& w) {
    uint64_t b = 0;
    for (auto* t : w)
        if (t) b += t->n_bytes;
    return b;
}

uint64_t mat_flops(const std::vector<const WeightTensor*>& w) {
    uint64_t f = 0;
    for (auto* t : w)
        if (t && t->rows > 1) f += 2 * t->rows * t->cols;
    return f;
}

class Builder {
public:
    explicit Builder(std::vector<Task>& out) : out_(out) {}
    Task& add(TaskKind k, int layer, std::vector<Slot> in, std::vector<Slot> out,
              std::vector<const WeightTensor*> w = {}) {
        Task t;
        t.kind = k;
        t.layer = layer;
        t.name = layer >= 0 ? fmt::format("blk.{}.{}", layer, task_kind_name(k))
                            : std::string(task_kind_name(k));
        t.in = std::move(in);
        t.out = std::move(out);
        t.w = std::move(w);
        t.weight_bytes = wbytes(t.w);
        t.flops = mat_flops(t.w);
        out_.push_back(std::move(t));
        return out_.back();
    }

private:
    std::vector<Task>& out_;
};

// The mixture-of-experts FFN: router, top-k, the chosen experts, the shared expert. Expert tasks
// count the bytes and flops of the n_expert_used experts a token reads, not the whole stack.
void build_moe_ffn(Builder& b, const ModelConfig& c, const LayerWeights& w, int i) {
    using S = Slot;
    using K = TaskKind;
    const uint64_t k = uint64_t(c.n_expert_used);
    auto chosen = [&](Task& t) {
        uint64_t bytes = 0;
        for (auto* x : t.w) bytes += x->n_bytes / x->stack * k;
        t.weight_bytes = bytes;
        t.flops = 0;
        for (auto* x : t.w) t.flops += 2 * (x->rows / x->stack) * x->cols * k;
    };
    b.add(K::FfnRouter, i, {S::Xb}, {S::Router}, {w.ffn_gate_inp, w.ffn_gate_inp_shexp});
    b.add(K::FfnTopk, i, {S::Router}, {S::ExpIds, S::ExpW}).renorm = c.expert_weights_norm;
    chosen(b.add(K::FfnExpGateUp, i, {S::Xb, S::ExpIds}, {S::ExpHb, S::ExpHb2}, {w.ffn_gate_exps, w.ffn_up_exps}));
    b.add(K::FfnExpAct, i, {S::ExpHb, S::ExpHb2}, {S::ExpHb});
    const bool shared = c.shared_expert_ff > 0;
    if (shared) {  // before the downs: the GPU runs both gate/ups in one kernel, both downs in another
        b.add(K::FfnShexpGateUp, i, {S::Xb}, {S::Hb, S::Hb2}, {w.ffn_gate_shexp, w.ffn_up_shexp});
        b.add(K::FfnShexpAct, i, {S::Hb, S::Hb2}, {S::Hb});
    }
    chosen(b.add(K::FfnExpDown, i, {S::ExpHb, S::ExpIds, S::ExpW}, {S::Tmp}, {w.ffn_down_exps}));
    if (shared) b.add(K::FfnShexpDown, i, {S::Hb, S::Router, S::Tmp}, {S::Tmp}, {w.ffn_down_shexp});
}

void build_layer(Builder& b, const Model& m, int i, const WeightTensor* rope_factors, bool rows) {
    const ModelConfig& c = m.config;
    const LayerWeights& w = m.layers[size_t(i)];
    using S = Slot;
    using K = TaskKind;
    const S pos = rows ? S::Positions : S::Pos;
    b.add(K::AttnNorm, i, {S::X}, {S::Xb}, {w.attn_norm}).eps = c.norm_eps;
    if (c.fused_qkv)
        b.add(K::AttnQkv, i, {S::Xb}, {S::Q, S::K, S::V}, {w.attn_qkv, nullptr, nullptr});
    else
        b.add(K::AttnQkv, i, {S::Xb}, {S::Q, S::K, S::V},
              {w.attn_q, w.attn_k, w.attn_v, w.attn_q_bias, w.attn_k_bias, w.attn_v_bias});
    if (c.qk_norm) b.add(K::AttnQkNorm, i, {S::Q, S::K}, {S::Q, S::K}, {w.attn_q_norm, w.attn_k_norm}).eps = c.norm_eps;
    b.add(K::AttnRope, i, {S::Q, S::K, pos}, {S::Q, S::K}, {rope_factors});
    if (rows) {
        b.add(K::AttnKvStore, i, {S::K, S::V, pos, S::Seqs}, {S::KCache, S::VCache});
        b.add(K::Attn, i, {S::Q, S::KCache, S::VCache, pos, S::Seqs}, {S::Att}).scale = c.attn_scale();
    } else {
        b.add(K::AttnKvStore, i, {S::K, S::V, pos}, {S::KCache, S::VCache});
        b.add(K::Attn, i, {S::Q, S::KCache, S::VCache, pos}, {S::Att}).scale = c.attn_scale();
    }
    b.add(K::AttnOutput, i, {S::Att}, {S::Tmp}, {w.attn_output});
    b.add(K::AttnResidual, i, {S::X, S::Tmp}, {S::X}).scale = c.residual_scale;
    b.add(K::FfnNorm, i, {S::X}, {S::Xb}, {w.ffn_norm}).eps = c.norm_eps;
    if (c.moe()) {
        build_moe_ffn(b, c, w, i);
    } else {
        b.add(K::FfnGateUp, i, {S::Xb}, {S::Hb, S::Hb2}, {w.ffn_gate, w.ffn_up});
        b.add(K::FfnAct, i, {S::Hb, S::Hb2}, {S::Hb});
        b.add(K::FfnDown, i, {S::Hb}, {S::Tmp}, {w.ffn_down});
    }
    b.add(K::FfnResidual, i, {S::X, S::Tmp}, {S::X}).scale = c.residual_scale;
}

}  // namespace

Plan plan_build(const Model& m, const PlanOptions& o) {
    const ModelConfig& c = m.config;
    const int n_ctx = o.n_ctx;
    JITLLM_CHECK(n_ctx > 0, "n_ctx {}", n_ctx);
    JITLLM_CHECK(o.batch_rows >= 0 && o.n_seq >= 1, "batch_rows {} n_seq {}", o.batch_rows, o.n_seq);
    Plan p;
    p.model = &m;
    p.config = &m.config;
    p.n_ctx = n_ctx;
    p.batch_rows = o.batch_rows;
    p.n_seq = o.n_seq;
    p.kv_blocks = o.kv_blocks > 0 ? o.kv_blocks : o.n_seq * p.kv_blocks_per_seq();
    JITLLM_CHECK(p.kv_blocks >= p.kv_blocks_per_seq(), "kv pool of {} blocks for a context of {}", p.kv_blocks, n_ctx);
    using S = Slot;
    const int64_t R = std::max(1, o.batch_rows);
    p.buffers = {
        {S::Token, "i32", {1}},
        {S::Pos, "i32", {1}},
        {S::X, "f32", {R, c.dim}},
        {S::Xb, "f32", {R, c.dim}},
        {S::Q, "f32", {R, c.n_heads, c.head_dim}},
        {S::K, "f32", {R, c.n_kv_heads, c.head_dim}},
        {S::V, "f32", {R, c.n_kv_heads, c.head_dim}},
        {S::Att, "f32", {R, c.n_heads, c.head_dim}},
        {S::Tmp, "f32", {R, c.dim}},
        {S::Hb, "f32", {R, c.hidden_dim}},
        {S::Hb2, "f32", {R, c.hidden_dim}},
        {S::Logits, "f32", {o.n_seq, c.n_vocab}},
        {S::KCache, "kv", {p.kv_blocks, p.kv_block, c.n_kv_heads, c.head_dim}, true},
        {S::VCache, "kv", {p.kv_blocks, p.kv_block, c.n_kv_heads, c.head_dim}, true},
    };
    if (c.moe()) {
        const int64_t k = c.n_expert_used;
        p.buffers.push_back({S::Router, "f32", {R, c.n_expert + (c.shared_expert_ff > 0)}});
        p.buffers.push_back({S::ExpIds, "i32", {R, k}});
        p.buffers.push_back({S::ExpW, "f32", {R, k}});
        p.buffers.push_back({S::ExpHb, "f32", {R, k, c.expert_ff}});
        p.buffers.push_back({S::ExpHb2, "f32", {R, k, c.expert_ff}});
    }
    if (o.batch_rows > 0) {
        p.buffers.push_back({S::Tokens, "i32", {R}});
        p.buffers.push_back({S::Positions, "i32", {R}});
        p.buffers.push_back({S::Seqs, "i32", {R}});
    }
    for (Phase ph : {Phase::Decode, Phase::Prefill, Phase::Batch}) {
        if (ph == Phase::Batch && o.batch_rows == 0) continue;
        std::vector<Task>& tasks = ph == Phase::Decode ? p.decode : ph == Phase::Prefill ? p.prefill : p.batch;
        const bool rows = ph == Phase::Batch;
        Builder b(tasks);
        b.add(TaskKind::TokenEmbd, -1, {rows ? S::Tokens : S::Token}, {S::X}, {m.token_embd}).scale = c.embedding_scale;
        // token_embd reads one row, not the whole matrix
        tasks.back().weight_bytes = m.token_embd->row_bytes;
        tasks.back().flops = 0;
        for (int i = 0; i < c.n_layers; ++i) build_layer(b, m, i, m.rope_factors(n_ctx), rows);
        if (ph == Phase::Prefill) continue;  // only the last prompt token needs logits
        if (rows) p.batch_body = tasks.size();
        b.add(TaskKind::OutputNorm, -1, {S::X}, {S::Xb}, {m.output_norm}).eps = c.norm_eps;
        b.add(TaskKind::Output, -1, {S::Xb}, {S::Logits}, {m.output}).scale = 1.0f / c.logit_scale;
        b.add(TaskKind::Sample, -1, {S::Logits}, {rows ? S::Tokens : S::Token});
    }
    return p;
}

int64_t slot_row_elems(const Plan& p, Slot s) {
    const ModelConfig& c = *p.config;
    switch (s) {
        case Slot::Token: case Slot::Pos: case Slot::Tokens: case Slot::Positions: case Slot::Seqs: return 1;
        case Slot::X: case Slot::Xb: case Slot::Tmp: return c.dim;
        case Slot::Q: case Slot::Att: return int64_t(c.n_heads) * c.head_dim;
        case Slot::K: case Slot::V: case Slot::KCache: case Slot::VCache: return c.kv_dim();
        case Slot::Hb: case Slot::Hb2: return c.hidden_dim;
        case Slot::Logits: return c.n_vocab;
        case Slot::Router: return c.n_expert + (c.shared_expert_ff > 0);
        case Slot::ExpIds: case Slot::ExpW: return c.n_expert_used;
        case Slot::ExpHb: case Slot::ExpHb2: return int64_t(c.n_expert_used) * c.expert_ff;
        case Slot::Count: break;
    }
    JITLLM_CHECK(false, "slot {}", int(s));
    return 0;
}

PhaseRuns plan_phase_runs(const RunShape& r) {
    PhaseRuns pr;
    const int64_t gen_fed = std::max(0, r.n_gen - 1);
    if (r.n_prompt <= 0) return pr;
    if (r.batch_prefill > 0 && r.n_prompt > 1) {
        pr.batch = (r.n_prompt + r.batch_prefill - 1) / r.batch_prefill;
        pr.batch_tail = 1;
        pr.decode_in_prompt = 0;
    } else if (r.prefill_decode) {
        pr.prefill = r.n_prompt - 1;
        pr.decode_in_prompt = 1;
    } else {
        pr.decode_in_prompt = r.n_prompt;
    }
    pr.decode = pr.decode_in_prompt + gen_fed;
    return pr;
}

std::map<std::string, uint64_t> plan_task_executions(const Plan& p, const RunShape& r) {
    const PhaseRuns pr = plan_phase_runs(r);
    std::map<std::string, uint64_t> m;
    for (const auto& t : p.decode) m[t.name] += uint64_t(pr.decode);
    for (const auto& t : p.prefill) m[t.name] += uint64_t(pr.prefill);
    for (size_t i = 0; i < p.batch.size(); ++i)
        m[p.batch[i].name] += uint64_t(i < p.batch_body ? pr.batch : pr.batch_tail);
    return m;
}

std::string plan_describe(const Plan& p) {
    std::string s = fmt::format("plan: {} (n_ctx {})\nbuffers:\n", describe_config(*p.config), p.n_ctx);
    for (const auto& b : p.buffers) {
        std::string shape;
        for (size_t i = 0; i < b.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(b.shape[i]);
        s += fmt::format("  {:<8} {:<4} [{}]{}\n", slot_name(b.slot), b.dtype, shape,
                         b.per_layer ? " per layer" : "");
    }
    for (Phase ph : {Phase::Decode, Phase::Prefill, Phase::Batch}) {
        const auto& tasks = p.phase(ph);
        if (ph == Phase::Batch && tasks.empty()) continue;
        if (ph == Phase::Batch)
            s += fmt::format("phase batch ({} tasks per step of up to {} rows; the last {} only when logits are asked):\n",
                             tasks.size(), p.batch_rows, tasks.size() - p.batch_body);
        else
            s += fmt::format("phase {} ({} tasks per token):\n", phase_name(ph), tasks.size());
        for (const auto& t : tasks) {
            std::string in, out, w;
            for (auto x : t.in) in += (in.empty() ? "" : ",") + std::string(slot_name(x));
            for (auto x : t.out) out += (out.empty() ? "" : ",") + std::string(slot_name(x));
            for (auto* x : t.w)
                if (x) w += (w.empty() ? "" : " ") + x->name + ":" + type_name(x->type);
            s += fmt::format("  {:<22} {:<24} -> {:<14} {}\n", t.name, in, out, w);
        }
    }
    return s;
}

std::string task_group_name(const std::vector<Task>& tasks, const std::vector<size_t>& idx) {
    std::string first(task_kind_name(tasks[idx[0]].kind));
    const size_t us = first.find('_');
    const std::string prefix = us == std::string::npos ? first + "_" : first.substr(0, us + 1);
    std::string g = first;
    for (size_t j = 1; j < idx.size(); ++j) {
        std::string n(task_kind_name(tasks[idx[j]].kind));
        if (n.rfind(prefix, 0) == 0) n = n.substr(prefix.size());
        g += "_" + n;
    }
    return g;
}

}  // namespace jitllm
