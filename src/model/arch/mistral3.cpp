// mistral3 (Ministral 3, Devstral 2): the Llama block with head_dim from attention.key_length
// (n_head * head_dim may differ from dim), YaRN RoPE scaling from the file's keys (read for every
// architecture by parse_common_config), adjacent-pair RoPE (llama.cpp's LLAMA_ROPE_TYPE_NORM for
// this architecture; the golden logits confirm it: NeoX pairing misses them by 0.65), and the
// optional attention temperature (attention.temperature_scale, q scaled per position).
#include "model/arch/arch.h"

namespace jitllm {

ModelConfig mistral3_parse_config(const GgufReader& g) {
    ModelConfig c = parse_common_config(g, "mistral3");
    c.rope_style = RopeStyle::Norm;
    parse_attn_temperature(g, "mistral3", c);
    return c;
}

}  // namespace jitllm
