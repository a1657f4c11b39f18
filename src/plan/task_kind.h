// The closed vocabulary of task names. A task is a named model step with a CPU reference; the
// same string is the plan entry, the profiler row, the NVTX range, the kernel-name stem and the
// subject of errors ("blk.3.attn_norm"). Adding a name here is an architecture decision.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace jitllm {

enum class TaskKind : uint8_t {
    TokenEmbd,     // x = token_embd[token] * embedding_scale
    AttnNorm,      // xb = rms_norm(x) * attn_norm
    AttnQkv,       // q, k, v = xb @ attn_q/k/v (+ biases) | xb @ attn_qkv
    AttnQkNorm,    // q, k per-head rms_norm * attn_q_norm / attn_k_norm            (qwen3)
    AttnRope,      // rotate q, k at pos
    AttnKvStore,   // k_cache[pos], v_cache[pos] = k, v
    Attn,          // att = softmax(q . k_cache[0..pos] * scale) . v_cache
    AttnOutput,    // tmp = att @ attn_output
    AttnResidual,  // x += residual_scale * tmp
    FfnNorm,       // xb = rms_norm(x) * ffn_norm
    FfnGateUp,     // hb = xb @ ffn_gate, hb2 = xb @ ffn_up     (fused ffn_up: gate rows, up rows)
    FfnAct,        // hb = silu(hb) * hb2
    FfnDown,       // tmp = hb @ ffn_down
    FfnResidual,   // x += residual_scale * tmp
    // mixture of experts (ModelConfig::moe()), in place of ffn_gate_up .. ffn_down:
    FfnRouter,       // router = xb @ ffn_gate_inp [, xb . ffn_gate_inp_shexp]   (n_expert [+ 1] logits)
    FfnTopk,         // exp_ids, exp_w = the expert_used_count largest of softmax(router) [renormalised]
    FfnExpGateUp,    // exp_hb[j], exp_hb2[j] = xb @ ffn_gate_exps[id j], xb @ ffn_up_exps[id j]
    FfnExpAct,       // exp_hb = silu(exp_hb) * exp_hb2
    FfnExpDown,      // tmp = sum_j exp_w[j] * (exp_hb[j] @ ffn_down_exps[id j])
    FfnShexpGateUp,  // hb, hb2 = xb @ ffn_gate_shexp, xb @ ffn_up_shexp          (shared expert)
    FfnShexpAct,     // hb = silu(hb) * hb2
    FfnShexpDown,    // tmp += sigmoid(router[n_expert]) * (hb @ ffn_down_shexp)
    OutputNorm,    // xb = rms_norm(x) * output_norm
    Output,        // logits = xb @ output / logit_scale
    Sample,        // token = argmax(logits)   (greedy; other samplers run on the logits)
    Count,
};

constexpr std::string_view task_kind_name(TaskKind k) {
    switch (k) {
        case TaskKind::TokenEmbd: return "token_embd";
        case TaskKind::AttnNorm: return "attn_norm";
        case TaskKind::AttnQkv: return "attn_qkv";
        case TaskKind::AttnQkNorm: return "attn_qk_norm";
        case TaskKind::AttnRope: return "attn_rope";
        case TaskKind::AttnKvStore: return "attn_kv_store";
        case TaskKind::Attn: return "attn";
        case TaskKind::AttnOutput: return "attn_output";
        case TaskKind::AttnResidual: return "attn_residual";
        case TaskKind::FfnNorm: return "ffn_norm";
        case TaskKind::FfnGateUp: return "ffn_gate_up";
        case TaskKind::FfnAct: return "ffn_act";
        case TaskKind::FfnDown: return "ffn_down";
        case TaskKind::FfnResidual: return "ffn_residual";
        case TaskKind::FfnRouter: return "ffn_router";
        case TaskKind::FfnTopk: return "ffn_topk";
        case TaskKind::FfnExpGateUp: return "ffn_exp_gate_up";
        case TaskKind::FfnExpAct: return "ffn_exp_act";
        case TaskKind::FfnExpDown: return "ffn_exp_down";
        case TaskKind::FfnShexpGateUp: return "ffn_shexp_gate_up";
        case TaskKind::FfnShexpAct: return "ffn_shexp_act";
        case TaskKind::FfnShexpDown: return "ffn_shexp_down";
        case TaskKind::OutputNorm: return "output_norm";
        case TaskKind::Output: return "output";
        case TaskKind::Sample: return "sample";
        case TaskKind::Count: break;
    }
    return "?";
}

std::optional<TaskKind> task_kind_from_name(std::string_view name);

// The mixture-of-experts tasks (ffn_router .. ffn_shexp_down).
constexpr bool is_moe_task(TaskKind k) { return k >= TaskKind::FfnRouter && k <= TaskKind::FfnShexpDown; }

}  // namespace jitllm
