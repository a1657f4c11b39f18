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
        case TaskKind::OutputNorm: return "output_norm";
        case TaskKind::Output: return "output";
        case TaskKind::Sample: return "sample";
        case TaskKind::Count: break;
    }
    return "?";
}

std::optional<TaskKind> task_kind_from_name(std::string_view name);

}  // namespace jitllm
