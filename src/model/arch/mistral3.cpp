// mistral3 (Ministral 3, Devstral 2): the Llama block with head_dim from attention.key_length
// (n_head * head_dim may differ from dim), YaRN RoPE scaling from the file's keys (read for every
// architecture by parse_common_config), adjacent-pair RoPE (llama.cpp's LLAMA_ROPE_TYPE_NORM for
// this architecture; the golden logits confirm it: NeoX pairing misses them by 0.65), and the
// optional attention temperature (attention.temperature_scale, q scaled per position).
// The mixture-of-experts form, when the file has mistral3.expert_count > 0: the Llama attention with
// experts in place of the FFN (stacked ffn_{gate,up,down}_exps and the router ffn_gate_inp), softmax
// over all experts, the top expert_used_count renormalised to sum 1, no shared expert; an expert's
// width is feed_forward_length unless expert_feed_forward_length is present (llama.cpp's mistral3
// graph: build_moe_ffn with softmax gating and normalised weights, n_ff wide).
#include "model/arch/arch.h"

#include "gguf/gguf_reader.h"

namespace jitllm {

ModelConfig mistral3_parse_config(const GgufReader& g) {
    ModelConfig c = parse_common_config(g, "mistral3");
    c.rope_style = RopeStyle::Norm;
    parse_attn_temperature(g, "mistral3", c);
    if (g.get_int_opt("mistral3.expert_count").value_or(0) > 0) {
        parse_moe_config(g, "mistral3", false, c, c.hidden_dim);
        c.expert_weights_norm = true;
    }
    return c;
}

void mistral3_bind_layer(WeightBinder& b, const ModelConfig& c, int i, LayerWeights& w) {
    if (c.moe()) moe_bind_layer(b, c, i, w);
    else llama_family_bind_layer(b, c, i, w);
}

}  // namespace jitllm
