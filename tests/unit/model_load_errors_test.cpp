// Bad input for a known architecture: files whose tensors or keys do not match it get one
// sentence naming the tensor or key with expected vs found; an unknown architecture lists the
// supported ones. Files are tiny models written with GgufWriter (tiny_arch_model.h).
#include <gtest/gtest.h>

#include "core/error.h"
#include "model/model.h"
#include "tiny_arch_model.h"

namespace jitllm {
namespace {

using test::TinySpec;
using test::TinyTensor;

using test::load_error;

TinySpec spec(const std::string& arch) {
    TinySpec s;
    s.arch = arch;
    if (arch == "phi3") s.n_kv_heads = s.n_heads;
    if (arch == "qwen3" || arch == "qwen3moe") s.head_dim = 32;  // n_heads * head_dim = 128 != dim 64
    return s;
}

TEST(ModelLoad, every_tiny_architecture_loads) {
    for (const char* arch : {"llama", "qwen2", "qwen3", "phi3", "granite", "qwen2moe", "qwen3moe", "mistral3"}) {
        auto m = load_model(test::tiny_reader(test::tiny_model(spec(arch))));
        EXPECT_EQ(m->config.arch, arch);
        EXPECT_TRUE(m->unused_tensors.empty()) << arch;
    }
}

TEST(ModelLoad, unknown_architecture_lists_the_supported_ones) {
    TinySpec s = spec("llama");
    GgufWriter w = test::tiny_model(s);
    w.set_string("general.architecture", "mamba2");
    EXPECT_EQ(load_error(w), "tiny.gguf: unsupported architecture 'mamba2'; supported: llama, "
                             "qwen2, qwen3, phi3, granite, qwen2moe, qwen3moe, mistral3");
}

TEST(ModelLoad, moe_without_experts_is_refused) {
    GgufWriter w = test::tiny_model(spec("qwen3moe"));
    w.set_u32("qwen3moe.expert_count", 0);
    EXPECT_EQ(load_error(w), "tiny.gguf: key 'qwen3moe.expert_count': expected an integer in [1, 65536], found 0");
}

TEST(ModelLoad, moe_using_more_experts_than_it_has_is_refused) {
    GgufWriter w = test::tiny_model(spec("qwen2moe"));
    w.set_u32("qwen2moe.expert_used_count", 5);
    EXPECT_EQ(load_error(w), "tiny.gguf: key 'qwen2moe.expert_used_count': expected at most expert_count 4, found 5");
}

TEST(ModelLoad, moe_stacked_experts_that_disagree_name_the_tensor) {
    // three experts in ffn_up_exps where expert_count and the other stacks say four
    GgufWriter w = test::tiny_model(spec("qwen3moe"), [](TinyTensor& t) {
        if (t.name == "blk.1.ffn_up_exps.weight") t.dims[2] = 3;
        return true;
    });
    EXPECT_EQ(load_error(w), "tiny.gguf: tensor 'blk.1.ffn_up_exps.weight': expected shape [64, 32, 4], "
                             "found [64, 32, 3]");
    // an expert width other than expert_feed_forward_length
    GgufWriter w2 = test::tiny_model(spec("qwen2moe"), [](TinyTensor& t) {
        if (t.name == "blk.0.ffn_down_exps.weight") t.dims[0] = 16;
        return true;
    });
    EXPECT_EQ(load_error(w2), "tiny.gguf: tensor 'blk.0.ffn_down_exps.weight': expected shape [32, 64, 4], "
                              "found [16, 64, 4]");
}

TEST(ModelLoad, moe_router_must_be_f32) {
    GgufWriter w = test::tiny_model(spec("qwen3moe"), [](TinyTensor& t) {
        if (t.name == "blk.0.ffn_gate_inp.weight") t.type = GgmlType::F16;
        return true;
    });
    EXPECT_EQ(load_error(w), "tiny.gguf: tensor 'blk.0.ffn_gate_inp.weight': expected type f32, found f16");
}

TEST(ModelLoad, missing_bias_names_the_tensor_and_its_shape) {
    GgufWriter w = test::tiny_model(spec("qwen2"), [](TinyTensor& t) { return t.name != "blk.1.attn_k.bias"; });
    EXPECT_EQ(load_error(w), "tiny.gguf: missing tensor 'blk.1.attn_k.bias' (expected shape [32]) "
                             "required by architecture 'qwen2'");
}

TEST(ModelLoad, qk_norm_of_the_wrong_width_gives_expected_and_found) {
    // head_dim is key_length (32), not dim / n_heads (16)
    GgufWriter w = test::tiny_model(spec("qwen3"), [](TinyTensor& t) {
        if (t.name == "blk.0.attn_q_norm.weight") t.dims = {16};
        return true;
    });
    EXPECT_EQ(load_error(w), "tiny.gguf: tensor 'blk.0.attn_q_norm.weight': expected shape [32], "
                             "found [16]");
}

TEST(ModelLoad, phi3_with_separate_qkv_asks_for_the_fused_tensor) {
    // a llama-style layer under the phi3 architecture
    GgufWriter w = test::tiny_model(spec("phi3"), [](TinyTensor& t) { return t.name.find("attn_qkv") == std::string::npos; },
                                    {{"blk.0.attn_q.weight", {64, 64}}});
    EXPECT_EQ(load_error(w), "tiny.gguf: missing tensor 'blk.0.attn_qkv.weight' (expected shape "
                             "[64, 192]) required by architecture 'phi3'");
}

TEST(ModelLoad, phi3_unfused_ffn_up_gives_expected_and_found) {
    GgufWriter w = test::tiny_model(spec("phi3"), [](TinyTensor& t) {
        if (t.name == "blk.0.ffn_up.weight") t.dims = {64, 64};
        return true;
    });
    EXPECT_EQ(load_error(w), "tiny.gguf: tensor 'blk.0.ffn_up.weight': expected shape [64, 128], "
                             "found [64, 64]");
}

TEST(ModelLoad, gqa_mismatch_names_the_k_projection) {
    // the file says 2 KV heads but stores MHA-sized K
    GgufWriter w = test::tiny_model(spec("llama"), [](TinyTensor& t) {
        if (t.name == "blk.0.attn_k.weight") t.dims = {64, 64};
        return true;
    });
    EXPECT_EQ(load_error(w), "tiny.gguf: tensor 'blk.0.attn_k.weight': expected shape [64, 32], "
                             "found [64, 64]");
}

TEST(ModelLoad, norm_weight_must_be_f32) {
    GgufWriter w = test::tiny_model(spec("granite"), [](TinyTensor& t) {
        if (t.name == "blk.1.ffn_norm.weight") t.type = GgmlType::F16;
        return true;
    });
    EXPECT_EQ(load_error(w), "tiny.gguf: tensor 'blk.1.ffn_norm.weight': expected type f32, found f16");
}

TEST(ModelLoad, missing_key_names_it_and_the_architecture) {
    TinySpec s = spec("qwen2");
    s.key_prefix = "llama";  // keys written under the wrong prefix
    EXPECT_EQ(load_error(test::tiny_model(s)),
              "tiny.gguf: missing key 'qwen2.block_count' required by architecture 'qwen2': expected "
              "it, found 'llama.block_count' instead; hint: general.architecture may not match the "
              "rest of the file");
}

TEST(ModelLoad, per_layer_kv_heads_must_agree) {
    GgufWriter w = test::tiny_model(spec("granite"));
    w.set_i32_array("granite.attention.head_count_kv", {2, 2});
    EXPECT_EQ(load_error(w), "");
    w.set_i32_array("granite.attention.head_count_kv", {2, 4});
    EXPECT_EQ(load_error(w), "tiny.gguf: key 'granite.attention.head_count_kv': per-layer values "
                             "that differ are not supported: expected one value for all layers, "
                             "found 2 and 4");
}

TEST(ModelLoad, rope_scaling_that_would_run_wrong_is_refused) {
    GgufWriter w = test::tiny_model(spec("qwen2"));
    w.set_string("qwen2.rope.scaling.type", "linear");
    w.set_f32("qwen2.rope.scaling.factor", 4.0f);
    EXPECT_EQ(load_error(w), "tiny.gguf: key 'qwen2.rope.scaling.factor': linear RoPE scaling is not "
                             "supported: expected no scaling (factor 1), found factor 4");
    w.set_string("qwen2.rope.scaling.type", "yarn");
    EXPECT_EQ(load_error(w), "");  // YaRN: tests/unit/backend_cpu_yarn_test.cpp
    w.set_string("qwen2.rope.scaling.type", "linear");
    w.set_f32("qwen2.rope.scaling.factor", 1.0f);
    EXPECT_EQ(load_error(w), "");
    w.set_string("qwen2.rope.scaling.type", "ntk");
    EXPECT_EQ(load_error(w), "tiny.gguf: key 'qwen2.rope.scaling.type': expected none, linear, "
                             "yarn or longrope, found 'ntk'");
}

TEST(ModelLoad, long_rope_needs_both_factor_tensors) {
    GgufWriter w = test::tiny_model(spec("phi3"));
    test::add_f32(w, "rope_factors_long.weight", std::vector<float>(8, 1.0f));
    EXPECT_EQ(load_error(w), "tiny.gguf: tensor 'rope_factors_short.weight' is missing: LongRoPE "
                             "expects both rope_factors_short.weight and rope_factors_long.weight, "
                             "found only 'rope_factors_long.weight'");
}

TEST(ModelLoad, long_rope_factors_are_checked) {
    GgufWriter w = test::tiny_model(spec("phi3"));
    test::add_f32(w, "rope_factors_long.weight", std::vector<float>(8, 1.0f));
    test::add_f32(w, "rope_factors_short.weight", std::vector<float>(7, 1.0f));
    EXPECT_EQ(load_error(w), "tiny.gguf: tensor 'rope_factors_short.weight': expected shape [8], found [7]");

    GgufWriter z = test::tiny_model(spec("phi3"));
    test::add_f32(z, "rope_factors_long.weight", std::vector<float>(8, 1.0f));
    test::add_f32(z, "rope_factors_short.weight", {1, 1, 1, 0, 1, 1, 1, 1});
    EXPECT_EQ(load_error(z), "tiny.gguf: tensor 'rope_factors_short.weight': expected positive "
                             "finite factors, found 0 at index 3");
}

TEST(ModelLoad, attn_factor_with_partial_rotation_is_refused) {
    GgufWriter w = test::tiny_model(spec("phi3"));
    w.set_u32("phi3.rope.dimension_count", 8);
    w.set_f32("phi3.rope.scaling.attn_factor", 1.19f);
    EXPECT_EQ(load_error(w), "tiny.gguf: key 'phi3.rope.scaling.attn_factor' = 1.19 with partial "
                             "rotation is not supported: expected rope.dimension_count = head dim "
                             "16, found 8");
}

TEST(ModelLoad, vocab_size_must_match_token_embd) {
    GgufWriter w = test::tiny_model(spec("llama"));
    w.set_string_array("tokenizer.ggml.tokens", std::vector<std::string>(31, "x"));
    EXPECT_EQ(load_error(w), "tiny.gguf: key 'tokenizer.ggml.tokens': expected 32 tokens (rows of "
                             "token_embd.weight), found 31");
}

}  // namespace
}  // namespace jitllm
