// ModelConfig: every hyperparameter the engine uses, each read from one GGUF key (the key table
// in config.cpp is the only place keys are spelled). Architectures differ by flags here, not by
// code paths (see model/arch/*.cpp).
#pragma once

#include <string>

#include "core/rope_theta.h"

namespace jitllm {

class GgufReader;

enum class RopeStyle { Norm, NeoX };  // Norm: pairs (2i, 2i+1); NeoX: pairs (i, i + n_rot/2)

struct ModelConfig {
    std::string arch;        // general.architecture
    std::string name;        // general.name (informational)
    int n_layers = 0;        // number of transformer blocks          <arch>.block_count
    int dim = 0;             // residual stream width                 <arch>.embedding_length
    int hidden_dim = 0;      // FFN inner width                       <arch>.feed_forward_length
    int n_heads = 0;         // query heads                           <arch>.attention.head_count
    int n_kv_heads = 0;      // key/value heads (GQA when < n_heads)  <arch>.attention.head_count_kv
    int head_dim = 0;        // per-head width of q and k             <arch>.attention.key_length (default dim/n_heads)
    int head_dim_v = 0;      // per-head width of v                   <arch>.attention.value_length (default head_dim)
    int n_vocab = 0;         // vocabulary size                       token_embd rows / tokenizer.ggml.tokens
    int n_ctx_train = 0;     // training context                      <arch>.context_length
    int n_rot = 0;           // rotated dims per head                 <arch>.rope.dimension_count (default head_dim)
    float norm_eps = 1e-5f;  // RMSNorm epsilon                       <arch>.attention.layer_norm_rms_epsilon
    float rope_base = 10000; // RoPE base                             <arch>.rope.freq_base
    RopeStyle rope_style = RopeStyle::Norm;  // per architecture (llama: norm; qwen2/3, phi3: neox)
    // LongRoPE (phi3): short factors while n_ctx <= n_ctx_orig      <arch>.rope.scaling.original_context_length
    int n_ctx_orig = 0;      //   (default n_ctx_train)
    float rope_attn_factor = 1.0f;  // scales RoPE's cos and sin      <arch>.rope.scaling.attn_factor
    // YaRN (rope.scaling.type = yarn, factor > 1; any architecture): the angle ramp
    // (core/rope_theta.h; freq_scale = 1 / factor, low/high from yarn_beta_fast/slow and
    // n_ctx_orig) and the magnitude scale of RoPE's cos and sin, llama.cpp's
    // (1 + 0.1 ln factor) / (1 + 0.1 yarn_log_multiplier ln factor), or 1 + 0.1 ln factor
    // without the multiplier key                                    <arch>.rope.scaling.yarn_*
    RopeYarn rope_yarn;
    float rope_yarn_mscale = 1.0f;
    // Attention temperature: q at position p times 1 + s * ln(floor(p / n_ctx_orig) + 1)
    float attn_temp_scale = 0.0f;  // 0 = none (mistral3)            <arch>.attention.temperature_scale
    int sliding_window = 0;  // 0 = none                              <arch>.attention.sliding_window

    // Architecture flags (set by model/arch/<arch>.cpp).
    bool fused_qkv = false;      // one attn_qkv matrix (rows: Q, K, V)           phi3
    bool fused_gate_up = false;  // ffn_up holds gate rows then up rows           phi3
    bool qkv_bias = false;       // attn_q/k/v.bias                               qwen2
    bool qk_norm = false;        // per-head RMSNorm attn_q_norm/attn_k_norm      qwen3
    bool tied_output = false;    // no output.weight: logits use token_embd       (file decides)
    bool has_rope_freqs = false; // rope_freqs.weight present (Llama 3.1)         (file decides)
    bool has_long_rope = false;  // rope_factors_short/long.weight present (phi3 LongRoPE)

    // Mixture of experts (qwen2moe, qwen3moe): the FFN is a router over n_expert stacked experts,
    // of which n_expert_used run per token, plus an optional shared expert. 0 experts = dense FFN.
    int n_expert = 0;          // experts per layer                   <arch>.expert_count
    int n_expert_used = 0;     // experts a token runs (top-k)        <arch>.expert_used_count
    int expert_ff = 0;         // one expert's FFN width              <arch>.expert_feed_forward_length
    int shared_expert_ff = 0;  // the shared expert's width (0: none) <arch>.expert_shared_feed_forward_length
    bool expert_weights_norm = false;  // top-k probabilities renormalised to sum 1   qwen3moe

    // Scales (granite); neutral values elsewhere.
    float embedding_scale = 1.0f;  // x = embd * s                      <arch>.embedding_scale
    float residual_scale = 1.0f;   // x += s * block_out                <arch>.residual_scale
    float attention_scale = 0.0f;  // 0 = 1/sqrt(head_dim)              <arch>.attention.scale
    float logit_scale = 1.0f;      // logits = out / s                  <arch>.logit_scale

    int q_dim() const { return n_heads * head_dim; }
    int kv_dim() const { return n_kv_heads * head_dim; }
    int v_dim() const { return n_kv_heads * head_dim_v; }
    bool moe() const { return n_expert > 0; }
    // Softmax scale of q.k: attention.scale or 1/sqrt(head_dim), times (rope_attn_factor *
    // rope_yarn_mscale)^2. llama.cpp multiplies RoPE's cos and sin (so the rotated q and k) by
    // both; with every dimension rotated (checked at load) that scales q.k by the square of their
    // product, applied here once.
    float attn_scale() const;
};

// Reads the keys shared by the Llama family for architecture prefix `arch` (throws Error naming
// the file and key when a required key is missing or out of range).
ModelConfig parse_common_config(const GgufReader& g, const std::string& arch);

// Reads the mixture-of-experts keys of architecture prefix `arch` into c (all required, but the
// experts' width where expert_ff_default > 0 stands in for it; the shared expert's width only when
// `shared_expert`); throws Error naming the file and key when one is
// missing or out of range (no experts, more used than there are).
void parse_moe_config(const GgufReader& g, const std::string& arch, bool shared_expert, ModelConfig& c,
                      int expert_ff_default = 0);

// mistral3's optional attention temperature (attention.temperature_scale; absent: none).
void parse_attn_temperature(const GgufReader& g, const std::string& arch, ModelConfig& c);

// One line: "llama: 5 layers, dim 64, ff 172, heads 8/4 x 8, vocab 512, ctx 2048, rope norm 1e4".
std::string describe_config(const ModelConfig& c);

}  // namespace jitllm
