// The GGUF key table: the only place hyperparameter keys are spelled.
#include "model/config.h"

#include <cmath>

#include "core/error.h"
#include "gguf/gguf_reader.h"

namespace jitllm {

float ModelConfig::attn_scale() const {
    const float base = attention_scale > 0.0f ? attention_scale : 1.0f / std::sqrt(float(head_dim));
    return base * rope_attn_factor * rope_attn_factor;
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

// RoPE scaling keys. LongRoPE (phi3) is factors tensors plus two keys and is supported; linear
// and YaRN scaling change every angle and are refused rather than run wrong. Matches llama.cpp's
// reading: original_context_length defaults to the training context, attn_factor to 1, and a
// missing scaling type means linear with rope.scaling.factor (0 or 1 = none).
void parse_rope_scaling(const GgufReader& g, const std::string& a, ModelConfig& c) {
    c.n_ctx_orig = get_positive_or(g, a + ".rope.scaling.original_context_length", c.n_ctx_train, 1 << 24);
    c.rope_attn_factor = get_float_or(g, a + ".rope.scaling.attn_factor", 1.0f);
    if (!(c.rope_attn_factor > 0.0f))
        fail("{}: key '{}.rope.scaling.attn_factor': expected a value > 0, found {}", g.path(), a,
             c.rope_attn_factor);
    if (c.rope_attn_factor != 1.0f && c.n_rot != c.head_dim)
        fail("{}: key '{}.rope.scaling.attn_factor' = {} with partial rotation is not supported: "
             "expected rope.dimension_count = head dim {}, found {}", g.path(), a,
             c.rope_attn_factor, c.head_dim, c.n_rot);
    const std::string type = g.get_string_opt(a + ".rope.scaling.type").value_or("linear");
    float factor = get_float_or(g, a + ".rope.scaling.factor", 0.0f);
    if (factor == 0.0f) factor = get_float_or(g, a + ".rope.scale_linear", 0.0f);
    const bool scaled = factor != 0.0f && factor != 1.0f;
    if (type == "none" || type == "longrope" || ((type == "linear" || type == "yarn") && !scaled))
        return;
    if (type == "linear" || type == "yarn")
        fail("{}: key '{}.rope.scaling.factor': {} RoPE scaling is not supported: expected no "
             "scaling (factor 1), found factor {}", g.path(), a, type, factor);
    fail("{}: key '{}.rope.scaling.type': expected none, linear, yarn or longrope, found '{}'",
         g.path(), a, type);
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

void parse_moe_config(const GgufReader& g, const std::string& a, bool shared_expert, ModelConfig& c) {
    constexpr int64_t kMaxDim = 1 << 20;
    c.n_expert = get_positive(g, a + ".expert_count", 1 << 16);
    c.n_expert_used = get_positive(g, a + ".expert_used_count", 1 << 16);
    if (c.n_expert_used > c.n_expert)
        fail("{}: key '{}.expert_used_count': expected at most expert_count {}, found {}", g.path(), a,
             c.n_expert, c.n_expert_used);
    c.expert_ff = get_positive(g, a + ".expert_feed_forward_length", kMaxDim);
    if (shared_expert) c.shared_expert_ff = get_positive(g, a + ".expert_shared_feed_forward_length", kMaxDim);
}

std::string describe_config(const ModelConfig& c) {
    std::string s = fmt::format("{}: {} layers, dim {}, ff {}, heads {}/{} x {}, vocab {}, ctx {}, rope {} base {:g}",
                                c.arch, c.n_layers, c.dim, c.hidden_dim, c.n_heads, c.n_kv_heads, c.head_dim,
                                c.n_vocab, c.n_ctx_train, c.rope_style == RopeStyle::Norm ? "norm" : "neox",
                                c.rope_base);
    if (c.moe())
        s += fmt::format(", experts {} used {} x ff {}{}{}", c.n_expert, c.n_expert_used, c.expert_ff,
                         c.shared_expert_ff ? fmt::format(" + shared ff {}", c.shared_expert_ff) : "",
                         c.expert_weights_norm ? " (renormalised)" : "");
    return s;
}

}  // namespace jitllm
