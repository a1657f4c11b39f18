// `jitllm synth` through the binary: each architecture's tiny shape is written and read back with
// the GGUF reader (keys, every tensor's name, shape and type, the random values' spread, vocabulary
// padding), the output does not depend on the thread count, and the file loads where the
// architecture is supported (mistral3 with its YaRN keys).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "fixtures/test_support.h"
#include "gguf/gguf_reader.h"
#include "model/model.h"
#include "quant/quant.h"

namespace jitllm {
namespace {

std::string synth(const std::string& shape, const std::string& extra = "") {
    const std::string out = "/tmp/jitllm_synth_test_" + std::to_string(::getpid()) + "_" + shape + ".gguf";
    std::string o, e;
    const int rc = test::run_command("'" + test::binary_path() + "' synth --shape " + shape +
                                         " --type q8_0 --vocab '" + test::source_dir() +
                                         "/models/stories260K.gguf' --out '" + out + "' " + extra,
                                     &o, &e);
    EXPECT_EQ(rc, 0) << e;
    return out;
}

// mean and standard deviation of a tensor's values
std::pair<double, double> spread(const GgufTensorInfo& t) {
    std::vector<float> v(t.dims[0]);
    double s = 0, s2 = 0, n = 0;
    for (uint64_t r = 0; r < t.rows(); ++r) {
        dequantize_row(t.type, t.data + r * row_bytes(t.type, t.dims[0]), v.data(), int64_t(v.size()));
        for (float x : v) s += x, s2 += double(x) * x, n += 1;
    }
    return {s / n, std::sqrt(s2 / n - (s / n) * (s / n))};
}

using Dims = std::vector<uint64_t>;

struct Expect {
    const char* shape;
    const char* arch;
    std::map<std::string, Dims> layer0;  // blk.0.<name>: dims (the shape's own tensors)
};

TEST(CliSynth, tiny_shapes_of_the_new_architectures_read_back) {
    const Expect cases[] = {
        {"tiny-qwen3moe", "qwen3moe",
         {{"attn_q.weight", {256, 512}}, {"attn_k.weight", {256, 256}}, {"attn_q_norm.weight", {128}},
          {"attn_k_norm.weight", {128}}, {"attn_output.weight", {512, 256}}, {"ffn_gate_inp.weight", {256, 4}},
          {"ffn_gate_exps.weight", {256, 128, 4}}, {"ffn_up_exps.weight", {256, 128, 4}},
          {"ffn_down_exps.weight", {128, 256, 4}}}},
        {"tiny-qwen2moe", "qwen2moe",
         {{"attn_q.weight", {256, 256}}, {"attn_q.bias", {256}}, {"attn_k.bias", {256}}, {"attn_v.bias", {256}},
          {"ffn_gate_inp.weight", {256, 4}}, {"ffn_gate_exps.weight", {256, 128, 4}},
          {"ffn_down_exps.weight", {128, 256, 4}}, {"ffn_gate_inp_shexp.weight", {256}},
          {"ffn_gate_shexp.weight", {256, 512}}, {"ffn_up_shexp.weight", {256, 512}},
          {"ffn_down_shexp.weight", {512, 256}}}},
        {"tiny-mistral3", "mistral3",
         {{"attn_q.weight", {256, 512}}, {"attn_k.weight", {256, 256}}, {"attn_output.weight", {512, 256}},
          {"ffn_gate.weight", {256, 512}}, {"ffn_down.weight", {512, 256}}}},
    };
    for (const Expect& c : cases) {
        SCOPED_TRACE(c.shape);
        const std::string path = synth(c.shape);
        auto g = GgufReader::open(path);
        const std::string a = c.arch;
        EXPECT_EQ(g->get_string("general.architecture"), a);
        EXPECT_EQ(g->get_int(a + ".block_count"), 2);
        for (const auto& [name, dims] : c.layer0) {
            const GgufTensorInfo* t = g->find_tensor("blk.0." + name);
            ASSERT_NE(t, nullptr) << name;
            EXPECT_EQ(t->dims, dims) << name;
            const bool vector = dims.size() == 1, router = name == "ffn_gate_inp.weight";
            EXPECT_EQ(t->type, vector || router ? GgmlType::F32 : GgmlType::Q8_0) << name;
            const auto [mean, sd] = spread(*t);
            // routers N(0, 1) (clear expert choices), norm weights around 1, matrices N(0, 0.02)
            const bool norm = name.find("norm") != std::string::npos;
            const double want_sd = router ? 1.0 : norm ? 0.1 : 0.02;
            EXPECT_NEAR(mean, norm ? 1.0 : 0.0, 4 * want_sd / std::sqrt(double(t->dims[0]))) << name;
            if (!vector || norm) {
                EXPECT_NEAR(sd, want_sd, 0.25 * want_sd) << name;
            }
        }
        EXPECT_EQ(g->find_tensor("blk.1.ffn_norm.weight") != nullptr, true);
        EXPECT_EQ(g->find_tensor("blk.2.ffn_norm.weight"), nullptr);
        if (a != "mistral3") {
            EXPECT_EQ(g->get_int(a + ".expert_count"), 4);
            EXPECT_EQ(g->get_int(a + ".expert_used_count"), 2);
            EXPECT_EQ(g->get_int(a + ".expert_feed_forward_length"), 128);
            EXPECT_EQ(g->find_kv(a + ".expert_shared_feed_forward_length") != nullptr, a == "qwen2moe");
        }
        for (const auto& s : supported_architectures())
            if (s == a) {
                auto m = load_model(path);
                EXPECT_EQ(m->config.arch, a);
                EXPECT_TRUE(m->unused_tensors.empty());
                if (a == "mistral3") {
                    EXPECT_FLOAT_EQ(m->config.rope_yarn.freq_scale, 0.125f);
                    EXPECT_FLOAT_EQ(m->config.attn_temp_scale, 0.1f);
                }
            }
        ::unlink(path.c_str());
    }
}

// tiny-qwen2moe's embedding has 544 rows: the 512 tokens of the vocabulary file, then [PAD512] ..
// [PAD543] of type unused (5), score 0.
TEST(CliSynth, vocabulary_padded_to_the_embedding_rows) {
    const std::string path = synth("tiny-qwen2moe");
    auto g = GgufReader::open(path);
    const auto tokens = g->get_string_array_opt("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.has_value());
    ASSERT_EQ(tokens->size(), 544u);
    const auto own = GgufReader::open(test::source_dir() + "/models/stories260K.gguf")
                         ->get_string_array_opt("tokenizer.ggml.tokens");
    ASSERT_EQ(own->size(), 512u);
    EXPECT_TRUE(std::equal(own->begin(), own->end(), tokens->begin()));  // the file's own entries kept
    EXPECT_EQ(tokens->at(512), "[PAD512]");
    EXPECT_EQ(tokens->back(), "[PAD543]");
    EXPECT_EQ(g->get_int_array_opt("tokenizer.ggml.token_type")->back(), 5);
    EXPECT_EQ(g->get_float_array_opt("tokenizer.ggml.scores")->size(), 544u);
    EXPECT_EQ(g->find_tensor("token_embd.weight")->dims, (Dims{256, 544}));
    EXPECT_EQ(g->get_int("qwen2moe.vocab_size"), 544);
    ::unlink(path.c_str());
}

// Each row has its own random stream: one thread and three give the same file.
TEST(CliSynth, output_does_not_depend_on_the_thread_count) {
    const std::string one = synth("tiny-mistral3", "--threads 1 --seed 7");
    const std::string bytes_one = test::read_file(one);
    ::unlink(one.c_str());
    const std::string three = synth("tiny-mistral3", "--threads 3 --seed 7");
    EXPECT_TRUE(test::read_file(three) == bytes_one);
    ::unlink(three.c_str());
}

}  // namespace
}  // namespace jitllm
