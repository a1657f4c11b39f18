// phi3 LongRoPE: rope_factors_short/long.weight become the RoPE frequency factors (short while
// the context is <= rope.scaling.original_context_length, long beyond, as llama.cpp chooses),
// each angle is divided by its factor (checked against a hand-computed rotation and, end to end,
// against a model whose rope base the factors emulate), and rope.scaling.attn_factor scales q.k.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "model/model.h"
#include "plan/plan.h"
#include "cpu_logits.h"
#include "tiny_arch_model.h"

namespace jitllm {
namespace {

constexpr int kOrigCtx = 64;

test::TinySpec phi3_spec(float base = 10000.0f) {
    test::TinySpec s;
    s.arch = "phi3";
    s.n_kv_heads = s.n_heads;  // phi3 is MHA
    s.rope_base = base;
    s.n_ctx = 256;
    return s;
}

// A phi3 file with LongRoPE factors (n_rot / 2 = 8 each) and original context kOrigCtx.
std::unique_ptr<Model> phi3_long_rope(const std::vector<float>& short_f, const std::vector<float>& long_f,
                                      float base = 10000.0f, float attn_factor = 0.0f) {
    GgufWriter w = test::tiny_model(phi3_spec(base));
    w.set_u32("phi3.rope.scaling.original_context_length", kOrigCtx);
    if (attn_factor > 0.0f) w.set_f32("phi3.rope.scaling.attn_factor", attn_factor);
    test::add_f32(w, "rope_factors_long.weight", long_f);
    test::add_f32(w, "rope_factors_short.weight", short_f);
    return load_model(test::tiny_reader(w));
}

const std::vector<float> kShort = {1.0f, 1.5f, 2.0f, 3.0f, 5.0f, 8.0f, 13.0f, 21.0f};
const std::vector<float> kLong = {1.25f, 2.5f, 4.0f, 6.0f, 9.0f, 14.0f, 20.0f, 32.0f};

const WeightTensor* rope_weight(const Plan& p, int layer) {
    for (const Task& t : p.decode)
        if (t.kind == TaskKind::AttnRope && t.layer == layer) return t.w.at(0);
    return nullptr;
}

TEST(LongRope, short_factors_up_to_the_original_context_long_beyond) {
    auto m = phi3_long_rope(kShort, kLong);
    EXPECT_TRUE(m->config.has_long_rope);
    EXPECT_EQ(m->config.n_ctx_orig, kOrigCtx);
    ASSERT_NE(m->rope_factors_short, nullptr);
    ASSERT_NE(m->rope_factors_long, nullptr);
    EXPECT_EQ(m->rope_factors(kOrigCtx), m->rope_factors_short);
    EXPECT_EQ(m->rope_factors(kOrigCtx + 1), m->rope_factors_long);
    for (int n_ctx : {kOrigCtx, kOrigCtx + 1}) {
        const Plan p = plan_build(*m, n_ctx);
        const WeightTensor* want = n_ctx > kOrigCtx ? m->rope_factors_long : m->rope_factors_short;
        for (int l = 0; l < m->config.n_layers; ++l) EXPECT_EQ(rope_weight(p, l), want) << n_ctx;
        EXPECT_EQ(rope_weight(p, 0)->f32()[7], n_ctx > kOrigCtx ? 32.0f : 21.0f);
    }
}

TEST(LongRope, without_the_key_the_original_context_is_the_training_context) {
    GgufWriter w = test::tiny_model(phi3_spec());
    test::add_f32(w, "rope_factors_long.weight", kLong);
    test::add_f32(w, "rope_factors_short.weight", kShort);
    auto m = load_model(test::tiny_reader(w));
    EXPECT_EQ(m->config.n_ctx_orig, 256);
    EXPECT_EQ(m->rope_factors(256), m->rope_factors_short);
}

// NeoX pairing (x[i], x[i + n_rot/2]), angle pos * base^(-2i/n_rot) / factor_i, by hand in double.
TEST(LongRope, cpu_rope_divides_each_angle_by_its_factor) {
    auto m = phi3_long_rope(kShort, kLong);
    const ModelConfig& c = m->config;
    ASSERT_EQ(c.rope_style, RopeStyle::NeoX);
    ASSERT_EQ(c.n_rot, 16);
    const float* ff = m->rope_factors(kOrigCtx + 1)->f32();  // long
    std::vector<float> v(size_t(c.head_dim));
    for (int d = 0; d < c.head_dim; ++d) v[size_t(d)] = 0.1f * float(d + 1) - 0.7f;
    const std::vector<float> x = v;
    const int pos = 37;
    cpu::rope(v.data(), 1, c.head_dim, c.n_rot, pos, c.rope_base, cpu::RopePairing::NeoX, ff);
    for (int i = 0; i < 8; ++i) {
        const double theta = pos * std::pow(10000.0, -2.0 * i / 16.0) / kLong[size_t(i)];
        const double x0 = x[size_t(i)], x1 = x[size_t(i + 8)];
        EXPECT_NEAR(v[size_t(i)], x0 * std::cos(theta) - x1 * std::sin(theta), 2e-5) << i;
        EXPECT_NEAR(v[size_t(i + 8)], x0 * std::sin(theta) + x1 * std::cos(theta), 2e-5) << i;
    }
}

// Dividing angle i by f_i = (b2 / b1)^(2i / n_rot) turns base b1 into base b2, so a model with
// base b1 and such factors must produce the logits of the same weights with base b2 and no
// factors; with the other set of factors all 1 it must produce the plain base-b1 logits.
std::vector<std::vector<float>> run_cpu(const Model& m, int n_ctx, const std::vector<int32_t>& ids) {
    return test::cpu_logits(m, n_ctx, ids);
}

void expect_close(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                  float tol) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        for (size_t j = 0; j < a[i].size(); ++j) ASSERT_NEAR(a[i][j], b[i][j], tol) << i << "," << j;
}

TEST(LongRope, factors_end_to_end_on_the_cpu) {
    const float b1 = 10000.0f, b2 = 40.0f;
    std::vector<float> emulate(8), ones(8, 1.0f);
    for (int i = 0; i < 8; ++i) emulate[size_t(i)] = float(std::pow(double(b2) / b1, 2.0 * i / 16.0));
    const std::vector<int32_t> ids = {1, 7, 3, 30, 12, 5, 19, 2, 28, 9, 14, 21};

    auto with_short_emulating_b2 = phi3_long_rope(emulate, ones, b1);
    auto plain_b2 = load_model(test::tiny_reader(test::tiny_model(phi3_spec(b2))));
    auto plain_b1 = load_model(test::tiny_reader(test::tiny_model(phi3_spec(b1))));
    const auto short_run = run_cpu(*with_short_emulating_b2, kOrigCtx, ids);
    expect_close(short_run, run_cpu(*plain_b2, kOrigCtx, ids), 2e-5f);
    expect_close(run_cpu(*with_short_emulating_b2, kOrigCtx + 1, ids), run_cpu(*plain_b1, kOrigCtx, ids), 2e-5f);
    // and the two bases really differ on these weights (the test can fail)
    float diff = 0.0f;
    const auto b1_run = run_cpu(*plain_b1, kOrigCtx, ids);
    for (size_t i = 0; i < ids.size(); ++i)
        for (size_t j = 0; j < b1_run[i].size(); ++j) diff = std::max(diff, std::abs(b1_run[i][j] - short_run[i][j]));
    EXPECT_GT(diff, 1e-2f);
}

// llama.cpp multiplies RoPE's cos and sin by rope.scaling.attn_factor, so q.k grows by its square;
// we fold that into the attention's softmax scale.
TEST(LongRope, attn_factor_scales_the_attention_by_its_square) {
    auto m = phi3_long_rope(kShort, kLong, 10000.0f, 1.1902380714238083f);
    const float want = 1.1902380714238083f * 1.1902380714238083f / 4.0f;  // head_dim 16
    EXPECT_NEAR(m->config.attn_scale(), want, 1e-7f);
    const Plan p = plan_build(*m, kOrigCtx);
    int n_attn = 0;
    for (const Task& t : p.decode)
        if (t.kind == TaskKind::Attn) {
            EXPECT_NEAR(t.scale, want, 1e-7f);
            ++n_attn;
        }
    EXPECT_EQ(n_attn, m->config.n_layers);
    auto plain = phi3_long_rope(kShort, kLong);
    EXPECT_FLOAT_EQ(plain->config.attn_scale(), 0.25f);
}

}  // namespace
}  // namespace jitllm
