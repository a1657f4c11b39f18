// YaRN RoPE scaling (rope.scaling.type = yarn, any architecture) and mistral3's attention
// temperature, against the published formulas evaluated here in double (llama.cpp's ggml rope:
// correction dims, ramp, magnitude scale; its graph input for the temperature). End to end, the
// golden mistral3 files (tests/golden) check the same numbers against llama.cpp's logits.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "backends/cpu/cpu_ops.h"
#include "model/model.h"
#include "cpu_logits.h"
#include "tiny_arch_model.h"

namespace jitllm {
namespace {

test::TinySpec mistral3_spec(int n_layers = 2) {
    test::TinySpec s;
    s.arch = "mistral3";
    s.head_dim = 32;  // n_heads * head_dim = 128 != dim 64, as Ministral 3's attention.key_length
    s.rope_base = 1e6f;
    s.n_layers = n_layers;
    return s;
}

void set_yarn(GgufWriter& w, const std::string& a, float factor, int orig_ctx) {
    w.set_string(a + ".rope.scaling.type", "yarn");
    w.set_f32(a + ".rope.scaling.factor", factor);
    w.set_u32(a + ".rope.scaling.original_context_length", uint32_t(orig_ctx));
}

// correction dim of ggml's YaRN: n_rot * ln(n_ctx_orig / (2 pi beta)) / (2 ln base)
double corr_dim(int n_rot, int orig, double beta, double base) {
    return n_rot * std::log(orig / (2.0 * M_PI * beta)) / (2.0 * std::log(base));
}

TEST(Yarn, keys_give_the_ramp_and_the_magnitude) {
    GgufWriter w = test::tiny_model(mistral3_spec());
    set_yarn(w, "mistral3", 8.0f, 64);
    w.set_f32("mistral3.rope.scaling.yarn_beta_fast", 32.0f);
    w.set_f32("mistral3.rope.scaling.yarn_beta_slow", 1.0f);
    w.set_f32("mistral3.rope.scaling.yarn_log_multiplier", 0.1f);
    auto m = load_model(test::tiny_reader(w));
    const ModelConfig& c = m->config;
    ASSERT_EQ(c.n_rot, 32);
    EXPECT_EQ(c.rope_style, RopeStyle::Norm);
    EXPECT_FLOAT_EQ(c.rope_yarn.freq_scale, 0.125f);
    EXPECT_EQ(c.rope_yarn.low, std::max(0.0, std::floor(corr_dim(32, 64, 32.0, 1e6))));
    EXPECT_EQ(c.rope_yarn.high, std::min(31.0, std::ceil(corr_dim(32, 64, 1.0, 1e6))));
    EXPECT_EQ(c.rope_yarn.high, 3.0f);  // the ramp is not empty here
    // llama.cpp: (1 + 0.1 ln f) / (1 + 0.1 * mul * ln f) with the multiplier
    const double ms = (1 + 0.1 * std::log(8.0)) / (1 + 0.1 * 0.1 * std::log(8.0));
    EXPECT_NEAR(c.rope_yarn_mscale, ms, 1e-6);
    EXPECT_NEAR(c.attn_scale(), ms * ms / std::sqrt(32.0), 1e-6);
}

TEST(Yarn, defaults_and_any_architecture) {
    GgufWriter w = test::tiny_model([] {
        test::TinySpec s;
        s.arch = "qwen2";
        return s;
    }());
    set_yarn(w, "qwen2", 4.0f, 32);  // beta_fast 32, beta_slow 1, no multiplier: 1 + 0.1 ln f
    auto m = load_model(test::tiny_reader(w));
    const ModelConfig& c = m->config;
    EXPECT_FLOAT_EQ(c.rope_yarn.freq_scale, 0.25f);
    EXPECT_EQ(c.rope_yarn.low, std::max(0.0, std::floor(corr_dim(16, 32, 32.0, 1e4))));
    EXPECT_EQ(c.rope_yarn.high, std::min(15.0, std::ceil(corr_dim(16, 32, 1.0, 1e4))));
    EXPECT_NEAR(c.rope_yarn_mscale, 1 + 0.1 * std::log(4.0), 1e-6);
    // factor 1: no scaling, as llama.cpp
    GgufWriter one = test::tiny_model(mistral3_spec());
    set_yarn(one, "mistral3", 1.0f, 64);
    auto plain = load_model(test::tiny_reader(one));
    EXPECT_FALSE(plain->config.rope_yarn.active());
    EXPECT_EQ(plain->config.rope_yarn_mscale, 1.0f);
}

TEST(Yarn, keys_out_of_range_are_refused) {
    auto with = [](const std::function<void(GgufWriter&)>& f) {
        GgufWriter w = test::tiny_model(mistral3_spec());
        set_yarn(w, "mistral3", 8.0f, 64);
        f(w);
        return test::load_error(w);
    };
    EXPECT_EQ(with([](GgufWriter& w) { w.set_f32("mistral3.rope.scaling.factor", 0.5f); }),
              "tiny.gguf: key 'mistral3.rope.scaling.factor': expected a YaRN factor > 1, found 0.5");
    EXPECT_EQ(with([](GgufWriter& w) { w.set_f32("mistral3.rope.scaling.yarn_beta_slow", 40.0f); }),
              "tiny.gguf: keys 'mistral3.rope.scaling.yarn_beta_fast' and 'mistral3.rope.scaling.yarn_beta_slow': "
              "expected beta_fast > beta_slow > 0, found 32 and 40");
    EXPECT_EQ(with([](GgufWriter& w) { w.set_f32("mistral3.rope.scaling.yarn_log_multiplier", -1.0f); }),
              "tiny.gguf: key 'mistral3.rope.scaling.yarn_log_multiplier': expected a value >= 0, found -1");
    EXPECT_EQ(with([](GgufWriter& w) { w.set_f32("mistral3.attention.temperature_scale", -0.1f); }),
              "tiny.gguf: key 'mistral3.attention.temperature_scale': expected a value >= 0, found -0.1");
    EXPECT_EQ(with([](GgufWriter& w) { w.set_u32("mistral3.rope.dimension_count", 16); }),
              "tiny.gguf: key 'mistral3.rope.scaling.type' = yarn with partial rotation is not supported: "
              "expected rope.dimension_count = head dim 32, found 16");
}

// Adjacent pairs, theta_i = pos * base^(-2i/n_rot), then theta * f^-1 * (1 - r_i) + theta * r_i with
// r_i = 1 - clamp((i - low) / (high - low), 0, 1): by hand in double.
TEST(Yarn, cpu_rope_mixes_the_interpolated_and_the_original_angle) {
    const RopeYarn y{0.125f, 1.0f, 5.0f};
    const int n_rot = 16, pos = 29;
    std::vector<float> v(16);
    for (int d = 0; d < 16; ++d) v[size_t(d)] = 0.1f * float(d + 1) - 0.7f;
    const std::vector<float> x = v;
    cpu::rope(v.data(), 1, 16, n_rot, pos, 10000.0f, cpu::RopePairing::Norm, nullptr, y);
    for (int i = 0; i < n_rot / 2; ++i) {
        const double theta = pos * std::pow(10000.0, -2.0 * i / n_rot);
        const double r = 1.0 - std::min(1.0, std::max(0.0, (i - 1.0) / 4.0));
        const double t = theta * 0.125 * (1 - r) + theta * r;
        const double x0 = x[size_t(2 * i)], x1 = x[size_t(2 * i + 1)];
        EXPECT_NEAR(v[size_t(2 * i)], x0 * std::cos(t) - x1 * std::sin(t), 2e-5) << i;
        EXPECT_NEAR(v[size_t(2 * i + 1)], x0 * std::sin(t) + x1 * std::cos(t), 2e-5) << i;
    }
}

std::vector<std::vector<float>> run_cpu(const Model& m, const std::vector<int32_t>& ids) {
    return test::cpu_logits(m, 64, ids);
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    float d = 0.0f;
    for (size_t j = 0; j < a.size(); ++j) d = std::max(d, std::abs(a[j] - b[j]));
    return d;
}

// The temperature multiplies q at position p by 1 + s ln(floor(p / n_ctx_orig) + 1). In a one-layer
// model K and V do not depend on q, so position p's logits equal those of the same weights with
// attention.scale = that factor / sqrt(head_dim); below n_ctx_orig the factor is 1.
TEST(Yarn, attention_temperature_scales_q_per_position) {
    constexpr int kOrig = 8;
    const float s = 0.5f;
    GgufWriter t = test::tiny_model(mistral3_spec(1));
    t.set_u32("mistral3.rope.scaling.original_context_length", kOrig);
    t.set_f32("mistral3.attention.temperature_scale", s);
    auto tm = load_model(test::tiny_reader(t));
    EXPECT_EQ(tm->config.attn_temp_scale, s);
    std::vector<int32_t> ids;
    for (int i = 0; i < 3 * kOrig; ++i) ids.push_back(int32_t((i * 7 + 3) % 32));
    const auto got = run_cpu(*tm, ids);
    const auto plain = run_cpu(*load_model(test::tiny_reader(test::tiny_model(mistral3_spec(1)))), ids);
    for (int steps = 0; steps < 3; ++steps) {
        GgufWriter w = test::tiny_model(mistral3_spec(1));
        const double f = 1.0 + s * std::log(steps + 1.0);
        w.set_f32("mistral3.attention.scale", float(f / std::sqrt(32.0)));
        const auto want = run_cpu(*load_model(test::tiny_reader(w)), ids);
        for (int p = steps * kOrig; p < (steps + 1) * kOrig; ++p)
            EXPECT_LE(max_diff(got[size_t(p)], want[size_t(p)]), 2e-5f) << "position " << p;
        if (steps > 0) {  // and the factor matters on these weights (the test can fail)
            EXPECT_GT(max_diff(got[size_t(steps * kOrig)], plain[size_t(steps * kOrig)]), 1e-3f);
        }
    }
}

}  // namespace
}  // namespace jitllm
