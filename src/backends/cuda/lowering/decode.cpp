// The walk over a phase's tasks, one case per task kind (decode / prefill lists and the batch phase):
// fusion of norms, q/k/v and gate/up into products, the row-wise kernels, the second decode lists
// (decode_short, decode_greedy).
#include "backends/cuda/lowering/lowering.h"

#include <algorithm>
#include <cmath>

#include "backends/cuda/gemm_variant.h"
#include "core/error.h"
#include "quant/quant.h"

namespace jitllm::lowering {

void Lowering::lower(const std::vector<Task>& tasks, std::vector<KernelStep>& out) {
    out_ = &out;
    tasks_ = &tasks;
    batch_ = false;
    xq_prev_.reset();  // (indices into the previous list)
    norm_prev_.reset();
    for (size_t i = 0; i < tasks.size();) i += lower_at(i);
    early_blocks(out);
}

void Lowering::early_blocks(std::vector<KernelStep>& steps) const {
    if (batch_) return;
    for (size_t i = 0; i < steps.size(); ++i) {
        KernelStep& k = steps[i];
        if (k.variant.source != "cuda/gemv.cu" || !k.variant.has("BULK")) continue;
        const std::string kind(task_kind_name(t(size_t(k.tasks[0])).kind));
        if (const auto eb = o_.gemv_early_blocks_for.find(kind); eb != o_.gemv_early_blocks_for.end()) {
            if (eb->second > 0) k.variant.set("BULK_PRE_B", eb->second);
            continue;
        }
        if (i == 0 || !o_.gemv_early_blocks || !k.variant.has("BULK_PRE")) continue;
        const KernelStep& before = steps[i - 1];
        if (before.variant.source == "cuda/gemv.cu" && before.variant.has("BULK") && int(before.grid.x) < d_.sm_count)
            k.variant.set("BULK_PRE_B", d_.sm_count - int(before.grid.x));
    }
}

void Lowering::lower_decode_short(const Plan& plan) {
    if (tma_from(o_) <= 0 || !g_.attn_tma) return;
    g_.attn_tma = false;
    lower(plan.decode, s_.decode_short);
    g_.attn_tma = true;
    mark_pdl(s_.decode_short);
    JITLLM_CHECK(s_.decode_short.size() == s_.decode.size(), "attn.tma_from: {} kernels against {}",
                 s_.decode_short.size(), s_.decode.size());
    s_.decode_short_below = std::min(tma_from(o_), p_.n_ctx);
}

void Lowering::lower_decode_greedy(const Plan& plan) {
    if (g_.sample_fuse_auto) {  // the default: the fused pick where decode's output gemv is bulk
        const KernelStep* head = nullptr;
        for (const KernelStep& k : s_.decode)
            for (int ti : k.tasks)
                if (plan.decode[size_t(ti)].kind == K::Output) head = &k;
        g_.sample_fuse = o_.fuse && head && head->variant.has("BULK");
        for (GateDecision& d : s_.gates)
            if (d.gate == "sample.fuse" && !g_.sample_fuse) {
                d.chosen = "kernel";
                d.sibling = "gemv";
                d.reason = o_.fuse ? kFusePickLanes : "--no-fuse: the pick keeps its own kernel";
            }
    }
    if (!g_.sample_fuse || !o_.fuse) return;  // (--no-fuse: no fused pick, so no second list either)
    greedy_list_ = true;
    lower(plan.decode, s_.decode_greedy);
    mark_pdl(s_.decode_greedy);
    if (!s_.decode_short.empty()) {
        g_.attn_tma = false;
        lower(plan.decode, s_.decode_short_greedy);
        g_.attn_tma = true;
        mark_pdl(s_.decode_short_greedy);
    }
    greedy_list_ = false;
    JITLLM_CHECK(s_.decode_greedy.size() + 1 == s_.decode.size(), "sample.fuse=gemv: {} kernels against {}",
                 s_.decode_greedy.size(), s_.decode.size());
    JITLLM_CHECK(s_.decode_short_greedy.size() == s_.decode_greedy.size() || s_.decode_short.empty(),
                 "sample.fuse=gemv: {} short kernels against {}", s_.decode_short_greedy.size(), s_.decode_greedy.size());
}

bool Lowering::split(const std::vector<const WeightTensor*>& ws) const {
    int n = 0, in = 0;
    for (const WeightTensor* w : ws)
        if (w) { ++n; in += int(s_.split_weights.count(w)); }
    JITLLM_CHECK(in == 0 || in == n, "kernel mixes split and block layouts ({} of {})", in, n);
    return n > 0 && in == n;
}

bool Lowering::split(const std::vector<KArg>& ws) const {
    std::vector<const WeightTensor*> v;
    for (const KArg& a : ws) v.push_back(a.kind == KArg::Kind::Weight ? a.w : nullptr);
    return split(v);
}

KernelStep& Lowering::add(std::vector<size_t> idx, const std::string& algo, Variant v) {
    KernelStep k;
    k.group = task_group_name(*tasks_, idx);
    k.symbol = k.group + "__" + algo;
    v.symbol = k.symbol;
    k.variant = std::move(v);
    for (size_t i : idx) {
        k.tasks.push_back(int(i));
        k.flops += t(i).flops;
    }
    k.layer = t(idx[0]).layer;
    out_->push_back(std::move(k));
    return out_->back();
}

void Lowering::rms_norm(size_t i, Slot in, Slot outs, int per_row, int D, const WeightTensor* w, float eps) {
    const int block = D >= 1024 ? 256 : 128;
    const int rows = (batch_ ? std::max(1, p_.batch_rows) : 1) * per_row;
    Variant v("cuda/rms_norm.cu", "");
    v.set("D", D).set("BLOCK", block).set("REDUCE", int(g_.norm_warp)).set("HAS_WEIGHT", int(w != nullptr));
    auto& k = add({i}, std::string("rms_norm_") + (g_.norm_warp ? "warp" : "tree"), v);
    k.grid = Dim3(unsigned(rows)); k.block = Dim3(unsigned(block));
    k.args = {slot(in), weight(w), slot(outs), f32(eps)};
    k.bytes = uint64_t(rows) * D * 8 + (w ? uint64_t(D) * 4 : 0);
    if (batch_) rms_norm_rows(k, i, in, outs, per_row, D, w != nullptr);
}

size_t Lowering::lower_at(size_t i) {
    if (batch_) {
        x16_now_ = x16_next_;  // set by the norm just before this task
        x16_next_ = false;
    }
    if (moe_at(i)) return lower_moe_at(i);
    const Task& a = t(i);
    const bool fuse = o_.fuse;
    switch (a.kind) {
        case K::TokenEmbd:
            embed(i);
            return 1;
        case K::AttnNorm:
        case K::FfnNorm:
        case K::OutputNorm: {
            // into the next product (NORM_IN): decode and prefill; the batch phase's small-step
            // list where that product is one gemv
            const K next = a.kind == K::AttnNorm ? K::AttnQkv : a.kind == K::FfnNorm ? K::FfnGateUp : K::Output;
            if (fuse && is(i + 1, next) && (!batch_ || (small_ && one_type(i + 1)))) return lower_norm_matmul(i);
            rms_norm(i, Slot::X, Slot::Xb, 1, c_.dim, a.w[0], a.eps);
            return 1;
        }
        case K::AttnQkv: {
            Gemv g;
            fill_qkv(a, g);
            std::vector<size_t> idx{i};
            const size_t extra = fuse_rope(i, g, idx);
            product_each(idx, g);
            return 1 + extra;
        }
        case K::AttnQkNorm:
            if (fuse && is(i + 1, K::AttnRope)) {  // rope.cu QK_NORM: the heads' norm in the rotation
                rope(i + 1, &a);
                return 3;
            }
            rms_norm(i, Slot::Q, Slot::Q, c_.n_heads, c_.head_dim, a.w[0], a.eps);
            rms_norm(i, Slot::K, Slot::K, c_.n_kv_heads, c_.head_dim, a.w[1], a.eps);
            return 1;
        case K::AttnRope:
            rope(i);
            return 2;
        case K::Attn:
            if (batch_)
                batch_attention(i, a);
            else
                decode_attention(i, a);
            return 1;
        case K::AttnOutput:
        case K::FfnDown: {
            const K res = a.kind == K::AttnOutput ? K::AttnResidual : K::FfnResidual;
            Gemv g;
            g.w = {a.w[0]}; g.w_off = {0}; g.rows = {int(a.w[0]->rows)};
            g.x = a.kind == K::AttnOutput ? Slot::Att : Slot::Hb;
            if (fuse && is(i + 1, res)) {
                g.y = {Slot::X}; g.epi = 1; g.scale = t(i + 1).scale;
                product({i, i + 1}, g);
                return 2;
            }
            g.y = {Slot::Tmp};
            product({i}, g);
            return 1;
        }
        case K::AttnResidual:
        case K::FfnResidual:
        case K::FfnAct:
            pointwise(i);
            return 1;
        case K::FfnGateUp: {
            Gemv g;
            fill_gate_up(a, g);
            if (fuse && is(i + 1, K::FfnAct) && g.w[0]->type == g.w[1]->type) {
                swiglu_out(g);
                product({i, i + 1}, g);
                return 2;
            }
            g.y = {Slot::Hb, Slot::Hb2};
            product_each({i}, g);
            return 1;
        }
        case K::Output: {
            Gemv g;
            fill_output(a, g);
            g.argmax = fuse && greedy_list_ && is(i + 1, K::Sample);  // sample.fuse=gemv
            if (g.argmax) {
                product({i, i + 1}, g);
                return 2;
            }
            product({i}, g);
            return 1;
        }
        case K::Sample:
            sample(i);
            return 1;
        case K::AttnKvStore:
        case K::FfnRouter: case K::FfnTopk: case K::FfnExpGateUp: case K::FfnExpAct: case K::FfnExpDown:
        case K::FfnShexpGateUp: case K::FfnShexpAct: case K::FfnShexpDown:  // lower_moe_at
        case K::Count:
            break;
    }
    JITLLM_CHECK(false, "task {} has no CUDA {} lowering", a.name, batch_ ? "batch" : "decode");
}

void Lowering::embed(size_t i) {
    const WeightTensor* e = t(i).w[0];
    Variant v("cuda/embed.cu", "");
    v.set("WTYPE", wtype_define(e->type)).set("D", c_.dim).set("N_VOCAB", c_.n_vocab)
        .set("EMB_SCALE", fstr(t(i).scale)).set("BLOCK", 256);
    auto& k = add({i}, std::string("embed_") + (batch_ ? "rows_" : "") + lowercase(type_name(e->type)), v);
    k.grid = Dim3(unsigned((c_.dim + 255) / 256)); k.block = Dim3(256);
    k.args = {weight(e), slot(batch_ ? Slot::Tokens : Slot::Token), slot(Slot::X), null(), null()};  // nw, xq: embed.cu XQ_OUT
    k.bytes = e->row_bytes + uint64_t(c_.dim) * 4;
    if (batch_) {
        k.grid.y = unsigned(std::max(1, p_.batch_rows));
        rows_grid(k, 1);
        return;
    }
    // gemv.xq_norm: the first layer's q/k/v gemv may take the row quantized from here
    norm_prev_.reset();
    if (c_.dim % 32 == 0) norm_prev_ = NormProducer{out_->size() - 1, Slot::X, c_.dim, true};
}

void Lowering::rope(size_t i, const Task* qk_norm) {
    const Task& a = t(i);
    JITLLM_CHECK(is(i + 1, K::AttnKvStore), "attn_rope must precede attn_kv_store");
    Variant v("cuda/rope.cu", "");
    v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", c_.head_dim)
        .set("N_ROT", c_.n_rot).set("PAIRING", int(c_.rope_style == RopeStyle::NeoX))
        .set("HAS_FREQ_FACTORS", int(a.w[0] != nullptr)).set("KV_T", s_.kv_type);
    if (batch_) {
        v.set("BATCH", 1);
        kv_paged(v);
    }
    if (qk_norm) v.set("QK_NORM", 1);
    const KArg angles = rope_angles(v, a.w[0]);
    const std::string algo = c_.rope_style == RopeStyle::NeoX ? "rope_neox" : "rope_norm";
    std::vector<size_t> idx{i, i + 1};
    if (qk_norm) idx.insert(idx.begin(), i - 1);
    auto& k = add(idx, batch_ ? algo + "_rows" : algo, v);
    k.grid = Dim3(unsigned(c_.n_heads + c_.n_kv_heads));
    k.block = Dim3(unsigned((c_.head_dim / 2 + 31) / 32 * 32));  // rope.cu ROPE_BLOCK
    if (batch_) {
        k.grid.y = unsigned(std::max(1, p_.batch_rows));
        rows_grid(k, 1);
    }
    k.args = {slot(Slot::Q), slot(Slot::K), slot(Slot::V), kcache(a.layer), vcache(a.layer),
              slot(batch_ ? Slot::Positions : Slot::Pos), angles, f32(c_.rope_base), batch_ ? slot(Slot::Seqs) : null(),
              weight(qk_norm ? qk_norm->w[0] : nullptr), weight(qk_norm ? qk_norm->w[1] : nullptr),
              f32(qk_norm ? qk_norm->eps : 0.0f), batch_ ? kv_table() : null()};
    const uint64_t kvsz = o_.kv_f32 ? 4 : 2;
    k.bytes = uint64_t(c_.n_heads + 2 * c_.n_kv_heads) * c_.head_dim * 8 + 2 * uint64_t(c_.kv_dim()) * kvsz +
              (qk_norm ? uint64_t(c_.head_dim) * 8 : 0);
}

void Lowering::sample(size_t i) {
    // decode: the pick of one logits row (step.advance=device: it advances the token and position
    // slots too); batch: each logits row's pick drawn with its own parameters (the host's per-row
    // DrawParams; temperature 0: the argmax), decode's block count a row
    const int parts = !batch_ || g_.sample_draw ? sample_parts(d_) : 8;
    const bool advance = !batch_ && g_.step_advance;
    const std::string rows = batch_ ? "_rows" : "";
    Variant v("cuda/argmax.cu", "");
    v.set("N", c_.n_vocab).set("BLOCK", 256).set("REDUCE", int(g_.sample_warp))
        .set("N_PARTS", parts).set("FUSE_ADVANCE", int(advance));
    if (g_.sample_draw) v.set("DRAW", 1).set("KMAX", g_.draw_kmax);  // sample.draw=device
    auto& k = add({i}, (g_.sample_draw ? "draw" : "argmax") + rows, v);
    k.grid = Dim3(unsigned(parts)); k.block = Dim3(256);
    const std::string val = "argmax" + rows + "_val", idx = "argmax" + rows + "_idx", counter = "argmax" + rows + "_counter";
    const std::string params = "draw" + rows + "_params", keys = "draw" + rows + "_keys";
    k.args = {slot(Slot::Logits), scratch(val), scratch(idx), scratch(counter),
              batch_ ? slot(Slot::Tokens) : scratch("token_out"), slot(batch_ ? Slot::Positions : Slot::Pos),
              batch_ ? null() : slot(Slot::Token),
              advance ? host_ring() : null(),  // step.advance=device: the pick for the host too
              g_.sample_draw ? scratch(params) : null(), g_.sample_draw ? scratch(keys) : null()};
    const size_t R = size_t(batch_ ? std::max(1, p_.batch_rows) : 1);
    if (g_.sample_draw) {  // batch: logits rows at most n_seq (CudaBackend::batch checks)
        const size_t draws = size_t(batch_ ? std::max(1, p_.n_seq) : 1);
        s_.scratch[params] = draws * 32;  // DrawParams
        s_.scratch[keys] = draws * size_t(parts) * size_t(g_.draw_kmax) * 8;
        k.smem = unsigned(8 * std::max<int64_t>(pow2_at_least(sample_chunk(c_, parts)), int64_t(parts) * g_.draw_kmax));
    }
    s_.scratch[val] = R * size_t(parts) * 4;
    s_.scratch[idx] = R * size_t(parts) * 4;
    s_.scratch[counter] = batch_ ? R * 4 : 16;
    if (batch_) {
        k.grid.y = unsigned(R);
        rows_grid(k, 1);
    } else {
        s_.scratch["token_out"] = 16;
    }
    k.bytes = uint64_t(c_.n_vocab) * 4 + 8 * uint64_t(parts);
}

void Lowering::fill_qkv(const Task& a, Gemv& g) {
    if (a.w[1] == nullptr) {  // fused attn_qkv: row ranges of one matrix
        const WeightTensor* w = a.w[0];
        g.w = {w, w, w};
        g.w_off = {0, uint64_t(c_.q_dim()) * w->row_bytes, uint64_t(c_.q_dim() + c_.kv_dim()) * w->row_bytes};
    } else {
        g.w = {a.w[0], a.w[1], a.w[2]};
        g.w_off = {0, 0, 0};
    }
    g.rows = {c_.q_dim(), c_.kv_dim(), c_.kv_dim()};
    if (a.w.size() > 3 && a.w[3]) g.bias = {a.w[3], a.w[4], a.w[5]};
    g.y = {Slot::Q, Slot::K, Slot::V};
}

size_t Lowering::fuse_rope(size_t iq, Gemv& g, std::vector<size_t>& idx) {
    if (!o_.fuse || !g_.rope_fuse || batch_) return 0;
    if (!is(iq + 1, K::AttnRope) || !is(iq + 2, K::AttnKvStore)) return 0;
    if (c_.rope_style == RopeStyle::NeoX || c_.head_dim % 2 != 0 || c_.n_rot % 2 != 0) return 0;
    if (g.w.size() != 3 || g.w[0]->type != g.w[1]->type || g.w[1]->type != g.w[2]->type) return 0;
    g.rope = true;
    g.rope_layer = t(iq + 1).layer;
    g.rope_freqs = t(iq + 1).w[0];
    idx.push_back(iq + 1);
    idx.push_back(iq + 2);
    return 2;
}

void Lowering::pointwise(size_t i) {
    const Task& a = t(i);
    const bool residual = a.kind != K::FfnAct;
    const int n = residual ? c_.dim : c_.hidden_dim;
    const int per_block = residual ? 1024 : 256;  // add.cu: 4 elements a thread
    Variant v(residual ? "cuda/add.cu" : "cuda/swiglu.cu", "");
    v.set("N", n).set("BLOCK", 256);
    auto& k = add({i}, std::string(residual ? "add" : "swiglu") + (batch_ ? "_rows" : ""), v);
    k.grid = Dim3(unsigned((n + per_block - 1) / per_block)); k.block = Dim3(256);
    if (batch_) {
        k.grid.y = unsigned(std::max(1, p_.batch_rows));
        rows_grid(k, 1);
    }
    k.args = residual ? std::vector<KArg>{slot(Slot::X), slot(Slot::Tmp), f32(a.scale)}
                      : std::vector<KArg>{slot(Slot::Hb), slot(Slot::Hb2), slot(Slot::Hb)};
    k.bytes = uint64_t(n) * 12;
}

void Lowering::product(std::vector<size_t> idx, const Gemv& g) {
    if (!batch_)
        gemv(std::move(idx), g);
    else if (g.w[0]->cols % 32 != 0 || small_)
        gemv_rows(std::move(idx), g);  // gemm.cu's K step is 32: the row-batched gemv takes the rest
    else
        gemm(std::move(idx), gemm_of(g));
}

void Lowering::product_each(const std::vector<size_t>& idx, const Gemv& g) {
    bool same = true;
    for (const WeightTensor* w : g.w) same = same && w->type == g.w[0]->type;
    if (same) {
        product(idx, g);
        return;
    }
    for (size_t m = 0; m < g.w.size(); ++m) {
        Gemv one = g;
        one.w = {g.w[m]}; one.w_off = {g.w_off[m]}; one.rows = {g.rows[m]}; one.y = {g.y[m]};
        one.bias = g.bias.empty() ? std::vector<const WeightTensor*>{} : std::vector<const WeightTensor*>{g.bias[m]};
        product(idx, one);
    }
}

void Lowering::fill_gate_up(const Task& a, Gemv& g) {
    if (a.w[0] == nullptr) {  // phi3: ffn_up holds gate rows then up rows
        const WeightTensor* w = a.w[1];
        g.w = {w, w};
        g.w_off = {0, uint64_t(c_.hidden_dim) * w->row_bytes};
    } else {
        g.w = {a.w[0], a.w[1]};
        g.w_off = {0, 0};
    }
    g.rows = {c_.hidden_dim, c_.hidden_dim};
}

void Lowering::swiglu_out(Gemv& g) const {
    g.epi = 2;
    g.y = {Slot::Hb};
    if (g.w[0] == g.w[1]) {  // one matrix: up rows follow the gate rows
        g.w = {g.w[0]}; g.w_off = {0}; g.rows = {c_.hidden_dim};
        g.up_offset_rows = c_.hidden_dim;
    }
}

void Lowering::fill_output(const Task& a, Gemv& g) {
    g.w = {a.w[0]}; g.w_off = {0}; g.rows = {int(a.w[0]->rows)}; g.y = {Slot::Logits};
    g.epi = a.scale != 1.0f ? 3 : 0; g.scale = a.scale;
}

size_t Lowering::lower_norm_matmul(size_t i) {
    const Task& n = t(i);
    const Task& m = t(i + 1);
    Gemv g;
    g.x = Slot::X;
    g.norm_w = n.w[0];
    g.eps = n.eps;
    if (m.kind == K::AttnQkv) {
        fill_qkv(m, g);
        std::vector<size_t> idx{i, i + 1};
        const size_t extra = fuse_rope(i + 1, g, idx);
        product_each(idx, g);
        return 2 + extra;
    }
    if (m.kind == K::Output) {
        fill_output(m, g);
        // sample.fuse=gemv: the greedy pick after it goes into it
        g.argmax = greedy_list_ && !batch_ && is(i + 2, K::Sample);
        if (g.argmax) {
            product({i, i + 1, i + 2}, g);
            return 3;
        }
        product({i, i + 1}, g);
        return 2;
    }
    // ffn_norm + ffn_gate_up (+ ffn_act)
    fill_gate_up(m, g);
    if (is(i + 2, K::FfnAct) && g.w[0]->type == g.w[1]->type) {
        swiglu_out(g);
        product({i, i + 1, i + 2}, g);
        return 3;
    }
    g.y = {Slot::Hb, Slot::Hb2};
    product_each({i, i + 1}, g);
    return 2;
}

}  // namespace jitllm::lowering
