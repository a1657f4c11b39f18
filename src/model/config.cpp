// The GGUF key table: the only place hyperparameter keys are spelled.
#include "model/config.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "gguf/gguf_reader.h"

namespace jitllm {

float ModelConfig::attn_scale() const {
    const float base = attention_scale > 0.0f ? attention_scale : 1.0f / std::sqrt(float(head_dim));
    const float m = rope_attn_factor * rope_yarn_mscale;
    return base * m * m;
}

namespace {

// "<file>: missing key 'qwen2.block_count' required by architecture 'qwen2'", with a hint when
// the file has the same key under another prefix (a file whose architecture key is wrong).
[[noreturn]] void fail_missing_key(const GgufReader& g, const std::string& key) {
    const size_t dot = key.find('.');
    const std::string arch = key.substr(0, dot), suffix = key.substr(dot);
    for (const auto& kv : g.kvs()) {
        if (kv.key.size() > suffix.size() && kv.key.compare(kv.key.size() - suffix.size(), suffix.size(), suffix) == 0 &&
            kv.key.find('.') == kv.key.size() - suffix.size())
            fail("{}: missing key '{}' required by architecture '{}': expected it, found '{}' "
                 "instead; hint: general.architecture may not match the rest of the file",
                 g.path(), key, arch, kv.key);
    }
    fail("{}: missing key '{}' required by architecture '{}'", g.path(), key, arch);
}

// One integer; a per-layer array (Granite 4.0 writes head_count_kv so) is accepted when all its
// values agree, since every layer here has the same shape.
int64_t get_uniform_int(const GgufReader& g, const std::string& key) {
    const GgufKv* kv = g.find_kv(key);
    if (!kv) fail_missing_key(g, key);
    if (kv->value.type == GgufValueType::ARRAY) {
        const auto arr = g.get_int_array_opt(key);
        if (arr->empty()) fail("{}: key '{}': expected a value, found an empty array", g.path(), key);
        for (int64_t x : *arr)
            if (x != arr->front())
                fail("{}: key '{}': per-layer values that differ are not supported: expected one "
                     "value for all layers, found {} and {}", g.path(), key, arr->front(), x);
        return arr->front();
    }
    return g.get_int(key);
}

int get_positive(const GgufReader& g, const std::string& key, int64_t max_value) {
    const int64_t v = get_uniform_int(g, key);
    if (v <= 0 || v > max_value)
        fail("{}: key '{}': expected an integer in [1, {}], found {}", g.path(), key, max_value, v);
    return int(v);
}

int get_positive_or(const GgufReader& g, const std::string& key, int fallback, int64_t max_value) {
    if (!g.find_kv(key)) return fallback;
    return get_positive(g, key, max_value);
}

float get_float_or(const GgufReader& g, const std::string& key, float fallback) {
    auto v = g.get_float_opt(key);
    if (!v) return fallback;
    if (!std::isfinite(*v)) fail("{}: key '{}': expected a finite number, found {}", g.path(), key, *v);
    return float(*v);
}

// llama.cpp's YaRN correction dim: the (fractional) pair index whose wavelength turns `beta`
// times over the original context, n_rot * ln(n_ctx_orig / (2 pi beta)) / (2 ln base), in float.
float yarn_corr_dim(int n_rot, int n_ctx_orig, float beta, float base) {
    return float(n_rot) * std::log(float(n_ctx_orig) / (beta * 2.0f * float(M_PI))) / (2.0f * std::log(base));
}

// YaRN with factor f > 1: the ramp between the correction dims of beta_fast (floor, >= 0) and
// beta_slow (ceil, <= n_rot - 1), and the magnitude scale as llama.cpp's context sets it up
// (yarn_attn_factor, its cancelling 1 / (1 + 0.1 ln f) and the rope's own 1 + 0.1 ln f, in that
// order of float steps).
void parse_yarn(const GgufReader& g, const std::string& a, float factor, ModelConfig& c) {
    const std::string k = a + ".rope.scaling.";
    const float beta_fast = get_float_or(g, k + "yarn_beta_fast", 32.0f);
    const float beta_slow = get_float_or(g, k + "yarn_beta_slow", 1.0f);
    const float log_mul = get_float_or(g, k + "yarn_log_multiplier", 0.0f);
    if (!(factor > 1.0f))
        fail("{}: key '{}factor': expected a YaRN factor > 1, found {}", g.path(), k, factor);
    if (!(beta_slow > 0.0f && beta_fast > beta_slow))
        fail("{}: keys '{}yarn_beta_fast' and '{}yarn_beta_slow': expected beta_fast > beta_slow > 0, "
             "found {} and {}", g.path(), k, k, beta_fast, beta_slow);
    if (!(log_mul >= 0.0f))
        fail("{}: key '{}yarn_log_multiplier': expected a value >= 0, found {}", g.path(), k, log_mul);
    c.rope_yarn.freq_scale = 1.0f / factor;
    c.rope_yarn.low = std::max(0.0f, std::floor(yarn_corr_dim(c.n_rot, c.n_ctx_orig, beta_fast, c.rope_base)));
    c.rope_yarn.high = std::min(float(c.n_rot - 1), std::ceil(yarn_corr_dim(c.n_rot, c.n_ctx_orig, beta_slow, c.rope_base)));
    auto mscale = [factor](float m) { return 0.1f * m * std::log(factor) + 1.0f; };
    float attn = log_mul != 0.0f ? mscale(1.0f) / mscale(log_mul) : mscale(1.0f);
    attn *= 1.0f / (1.0f + 0.1f * std::log(factor));
    c.rope_yarn_mscale = attn * (1.0f + 0.1f * std::log(1.0f / c.rope_yarn.freq_scale));
}

// RoPE scaling keys. LongRoPE (phi3) is factors tensors plus two keys; YaRN is the ramp and
// magnitude of parse_yarn; linear scaling changes every angle and is refused rather than run
// wrong. Matches llama.cpp's reading: original_context_length defaults to the training context,
// attn_factor to 1, and a missing scaling type means linear with rope.scaling.factor (0 or 1 =
// none).
void parse_rope_scaling(const GgufReader& g, const std::string& a, ModelConfig& c) {
    c.n_ctx_orig = get_positive_or(g, a + ".rope.scaling.original_context_length", c.n_ctx_train, 1 << 24);
    c.rope_attn_factor = get_float_or(g, a + ".rope.scaling.attn_factor", 1.0f);
    if (!(c.rope_attn_factor > 0.0f))
        fail("{}: key '{}.rope.scaling.attn_factor': expected a value > 0, found {}", g.path(), a,
             c.rope_attn_factor);
    const std::string type = g.get_string_opt(a + ".rope.scaling.type").value_or("linear");
    float factor = get_float_or(g, a + ".rope.scaling.factor", 0.0f);
    if (factor == 0.0f) factor = get_float_or(g, a + ".rope.scale_linear", 0.0f);
    const bool scaled = factor != 0.0f && factor != 1.0f;
    if (type == "yarn" && scaled) {
        parse_yarn(g, a, factor, c);
    } else if (type == "linear" && scaled) {
        fail("{}: key '{}.rope.scaling.factor': linear RoPE scaling is not supported: expected no "
             "scaling (factor 1), found factor {}", g.path(), a, factor);
    } else if (type != "none" && type != "longrope" && type != "linear" && type != "yarn") {
        fail("{}: key '{}.rope.scaling.type': expected none, linear, yarn or longrope, found '{}'",
             g.path(), a, type);
    }
    // both magnitudes are folded into attn_scale(), exact only when every dimension rotates
    if ((c.rope_attn_factor != 1.0f || c.rope_yarn_mscale != 1.0f) && c.n_rot != c.head_dim) {
        const std::string what = c.rope_attn_factor != 1.0f
                                     ? fmt::format("'{}.rope.scaling.attn_factor' = {}", a, c.rope_attn_factor)
                                     : fmt::format("'{}.rope.scaling.type' = yarn", a);
        fail("{}: key {} with partial rotation is not supported: expected rope.dimension_count = "
             "head dim {}, found {}", g.path(), what, c.head_dim, c.n_rot);
    }
}

}  // namespace

ModelConfig parse_common_config(const GgufReader& g, const std::string& a) {
    constexpr int64_t kMaxDim = 1 << 20;
    ModelConfig c;
    c.arch = a;
    c.name = g.get_string_opt("general.name").value_or("");
    c.n_layers = get_positive(g, a + ".block_count", 4096);
    c.dim = get_positive(g, a + ".embedding_length", kMaxDim);
    c.hidden_dim = get_positive(g, a + ".feed_forward_length", kMaxDim);
    c.n_heads = get_positive(g, a + ".attention.head_count", 4096);
    c.n_kv_heads = get_positive_or(g, a + ".attention.head_count_kv", c.n_heads, 4096);
    if (c.n_heads % c.n_kv_heads != 0)
        fail("{}: key '{}.attention.head_count_kv': expected a divisor of head_count {}, found {}",
             g.path(), a, c.n_heads, c.n_kv_heads);
    if (c.dim % c.n_heads != 0 && !g.find_kv(a + ".attention.key_length"))
        fail("{}: key '{}.embedding_length' = {} is not a multiple of head_count {} and "
             "'{}.attention.key_length' is absent", g.path(), a, c.dim, c.n_heads, a);
    c.head_dim = get_positive_or(g, a + ".attention.key_length", c.dim / c.n_heads, 4096);
    c.head_dim_v = get_positive_or(g, a + ".attention.value_length", c.head_dim, 4096);
    if (c.head_dim_v != c.head_dim)
        fail("{}: key '{}.attention.value_length': expected {} (equal to key_length), found {}",
             g.path(), a, c.head_dim, c.head_dim_v);
    c.n_ctx_train = get_positive_or(g, a + ".context_length", 2048, 1 << 24);
    c.n_rot = get_positive_or(g, a + ".rope.dimension_count", c.head_dim, 4096);
    if (c.n_rot > c.head_dim || c.n_rot % 2 != 0)
        fail("{}: key '{}.rope.dimension_count': expected an even number <= head dim {}, found {}",
             g.path(), a, c.head_dim, c.n_rot);
    c.norm_eps = get_float_or(g, a + ".attention.layer_norm_rms_epsilon", 1e-5f);
    if (!(c.norm_eps > 0.0f && c.norm_eps < 1.0f))
        fail("{}: key '{}.attention.layer_norm_rms_epsilon': expected a value in (0, 1), found {}",
             g.path(), a, c.norm_eps);
    c.rope_base = get_float_or(g, a + ".rope.freq_base", 10000.0f);
    if (!(c.rope_base > 1.0f))
        fail("{}: key '{}.rope.freq_base': expected a value > 1, found {}", g.path(), a, c.rope_base);
    c.sliding_window = get_positive_or(g, a + ".attention.sliding_window", 0, 1 << 24);
    parse_rope_scaling(g, a, c);
    c.embedding_scale = get_float_or(g, a + ".embedding_scale", 1.0f);
    c.residual_scale = get_float_or(g, a + ".residual_scale", 1.0f);
    c.attention_scale = get_float_or(g, a + ".attention.scale", 0.0f);
    c.logit_scale = get_float_or(g, a + ".logit_scale", 1.0f);
    if (c.logit_scale == 0.0f) fail("{}: key '{}.logit_scale': expected a nonzero value, found 0", g.path(), a);
    return c;
}

void parse_moe_config(const GgufReader& g, const std::string& a, bool shared_expert, ModelConfig& c,
                      int expert_ff_default) {
    constexpr int64_t kMaxDim = 1 << 20;
    c.n_expert = get_positive(g, a + ".expert_count", 1 << 16);
    c.n_expert_used = get_positive(g, a + ".expert_used_count", 1 << 16);
    if (c.n_expert_used > c.n_expert)
        fail("{}: key '{}.expert_used_count': expected at most expert_count {}, found {}", g.path(), a,
             c.n_expert, c.n_expert_used);
    c.expert_ff = expert_ff_default > 0 ? get_positive_or(g, a + ".expert_feed_forward_length", expert_ff_default, kMaxDim)
                                        : get_positive(g, a + ".expert_feed_forward_length", kMaxDim);
    if (shared_expert) c.shared_expert_ff = get_positive(g, a + ".expert_shared_feed_forward_length", kMaxDim);
}

void parse_attn_temperature(const GgufReader& g, const std::string& a, ModelConfig& c) {
    c.attn_temp_scale = get_float_or(g, a + ".attention.temperature_scale", 0.0f);
    if (!(c.attn_temp_scale >= 0.0f))
        fail("{}: key '{}.attention.temperature_scale': expected a value >= 0, found {}", g.path(), a,
             c.attn_temp_scale);
}

std::string describe_config(const ModelConfig& c) {
    std::string s = fmt::format("{}: {} layers, dim {}, ff {}, heads {}/{} x {}, vocab {}, ctx {}, rope {} base {:g}",
                                c.arch, c.n_layers, c.dim, c.hidden_dim, c.n_heads, c.n_kv_heads, c.head_dim,
                                c.n_vocab, c.n_ctx_train, c.rope_style == RopeStyle::Norm ? "norm" : "neox",
                                c.rope_base);
    if (c.rope_yarn.active())
        s += fmt::format(", yarn x{:g} over {}", 1.0f / c.rope_yarn.freq_scale, c.n_ctx_orig);
    if (c.attn_temp_scale != 0.0f) s += fmt::format(", attention temperature {:g}", c.attn_temp_scale);
    if (c.moe())
        s += fmt::format(", experts {} used {} x ff {}{}{}", c.n_expert, c.n_expert_used, c.expert_ff,
                         c.shared_expert_ff ? fmt::format(" + shared ff {}", c.shared_expert_ff) : "",
                         c.expert_weights_norm ? " (renormalised)" : "");
    return s;
}

}  // namespace jitllm
