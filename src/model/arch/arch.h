// Architecture table entry: how one `general.architecture` maps to a ModelConfig and a weight
// binding. The block structure itself is built by plan/builder.cpp from the config flags.
#pragma once

#include "model/model.h"

namespace jitllm {

struct ArchEntry {
    const char* name;                                             // general.architecture
    ModelConfig (*parse_config)(const GgufReader& g);             // keys -> config + flags
    void (*bind_layer)(WeightBinder& b, const ModelConfig& c, int i, LayerWeights& w);
};

// Shared by the Llama family: attn_norm, attn_q/k/v (or fused attn_qkv), attn_output,
// ffn_norm, ffn_gate/up/down (or fused up), with the optional extras the flags name.
void llama_family_bind_layer(WeightBinder& b, const ModelConfig& c, int i, LayerWeights& w);
// The attention half of that (attn_norm through attn_output), for blocks with another FFN.
void llama_family_bind_attention(WeightBinder& b, const ModelConfig& c, int i, LayerWeights& w);
// The Llama-family attention with a mixture-of-experts FFN: ffn_norm, the router ffn_gate_inp,
// the stacked experts ffn_{gate,up,down}_exps and, when the config has one, the shared expert
// (ffn_gate_inp_shexp, ffn_{gate,up,down}_shexp).
void moe_bind_layer(WeightBinder& b, const ModelConfig& c, int i, LayerWeights& w);

ModelConfig llama_parse_config(const GgufReader& g);
ModelConfig qwen2_parse_config(const GgufReader& g);
ModelConfig qwen3_parse_config(const GgufReader& g);
ModelConfig phi3_parse_config(const GgufReader& g);
ModelConfig granite_parse_config(const GgufReader& g);
ModelConfig qwen2moe_parse_config(const GgufReader& g);
ModelConfig qwen3moe_parse_config(const GgufReader& g);
ModelConfig mistral3_parse_config(const GgufReader& g);
void mistral3_bind_layer(WeightBinder& b, const ModelConfig& c, int i, LayerWeights& w);

}  // namespace jitllm
