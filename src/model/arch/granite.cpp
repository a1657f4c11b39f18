// granite (3.x, and 4.0 dense files whose architecture is granite): Llama block with
// embedding_scale, residual_scale, attention.scale and logit_scale (logits are DIVIDED by it).
#include "model/arch/arch.h"

namespace jitllm {

ModelConfig granite_parse_config(const GgufReader& g) {
    ModelConfig c = parse_common_config(g, "granite");
    c.rope_style = RopeStyle::Norm;
    return c;
}

}  // namespace jitllm
