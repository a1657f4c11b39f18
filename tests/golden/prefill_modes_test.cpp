// The three prompt modes of issue 7 give the same logits after the prompt: single token (the
// decode plan for every prompt token), --with-prefill-decode (the prefill plan, then decode for
// the last token) and --batch-prefill-size N (chunks of N rows through the batch phase, then
// decode), for N = 1, 7, 32, 128, 512 and prompt lengths that leave partial chunks.
//  - Golden: on every synthetic file (5 architectures x 7 types), prompts of 24 and 17 tokens of
//    the golden input, each mode against llama.cpp's logits at the last prompt position.
//  - Long prompts (600 and 259 tokens: several chunks of 128, one partial 512) on the F32, F16 and
//    Q4_0 files of each architecture, each mode against the single-token mode: bit-identical on
//    the CPU (a batch row runs the same reference operations as a decode step); within the
//    file's golden tolerance on the GPU (JITLLM_TEST_BACKEND=cuda), where the batch phase uses
//    matrix-matrix kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "fixtures/engine_factory.h"
#include "fixtures/test_support.h"

using nlohmann::json;

namespace {

struct Mode {
    const char* name;
    bool prefill_decode;
    int chunk;
};
const Mode kModes[] = {{"single", false, 0},   {"prefill-decode", true, 0}, {"batch-1", false, 1},
                       {"batch-7", false, 7},  {"batch-32", false, 32},     {"batch-128", false, 128},
                       {"batch-512", false, 512}};

std::vector<float> logits_after(const std::string& file, const Mode& m, const std::vector<int32_t>& prompt,
                                int n_vocab) {
    auto e = jitllm::test::make_engine(file, 1024, [&](jitllm::EngineOptions& o) {
        o.with_prefill_decode = m.prefill_decode;
        o.batch_prefill_size = m.chunk;
    });
    const float* l = e->feed(prompt);
    std::vector<float> v(l, l + n_vocab);
    // and one generated token after it: the cache the chunks wrote must serve decode too
    const float* l2 = e->feed({int32_t(std::max_element(v.begin(), v.end()) - v.begin())});
    v.insert(v.end(), l2, l2 + n_vocab);
    return v;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
    return d;
}

double tol_for(const std::string& file) {
    const bool gpu = jitllm::test::backend_is_gpu();
    if (file.find("-f32") != std::string::npos) return gpu ? 3e-3 : 1e-4;
    if (file.find("-f16") != std::string::npos) return 3e-3;
    return 0.1;
}

class PromptModes : public ::testing::TestWithParam<std::string> {};

TEST_P(PromptModes, GoldenLogitsAfterPromptInEveryMode) {
    const std::string arch = GetParam();
    const std::string dir = jitllm::test::data_path("golden/synthetic/");
    const json g = json::parse(jitllm::test::read_data("golden/synthetic/" + arch + ".logits.json"));
    const auto input = g["input_ids"].get<std::vector<int32_t>>();
    const int V = g["n_vocab"].get<int>();
    for (const auto& var : g["variants"]) {
        const std::string file = var["file"].get<std::string>();
        if (var.contains("shipped") && !var["shipped"].get<bool>()) continue;  // logits only, no file
        if (jitllm::test::golden_left_out(file)) continue;
        for (int len : {24, 17}) {
            const std::vector<int32_t> prompt(input.begin(), input.begin() + len);
            const auto& ref_row = var["logits"][size_t(len - 1)];
            double worst = 0;
            for (const Mode& m : kModes) {
                SCOPED_TRACE(file + " len " + std::to_string(len) + " " + m.name);
                const auto l = logits_after(dir + file, m, prompt, V);
                double d = 0;
                for (int i = 0; i < V; ++i) d = std::max(d, std::fabs(double(l[size_t(i)]) - ref_row[size_t(i)].get<double>()));
                EXPECT_LE(d, tol_for(file));
                worst = std::max(worst, d);
            }
            std::printf("[modes] %-22s len %2d: 7 modes, max_abs vs llama.cpp %.3g\n", file.c_str(), len, worst);
        }
    }
}

TEST_P(PromptModes, LongPromptsSameLogitsInEveryMode) {
    const std::string arch = GetParam();
    const std::string dir = jitllm::test::data_path("golden/synthetic/");
    const bool gpu = jitllm::test::backend_is_gpu();
    const json g = json::parse(jitllm::test::read_data("golden/synthetic/" + arch + ".logits.json"));
    for (const char* type : {"f32", "f16", "q4_0"}) {
        const std::string name = arch + "-" + type + ".gguf", file = dir + name;
        bool shipped = false;  // a file of the golden set (the MoE sets have no F32 file)
        for (const auto& var : g["variants"])
            shipped = shipped || (var["file"] == name && var.value("shipped", true));
        if (!shipped || jitllm::test::golden_left_out(name)) continue;
        for (int len : {600, 259}) {
            std::vector<int32_t> prompt{1};
            for (int i = 1; i < len; ++i) prompt.push_back(3 + (i * 131 + i / 7) % 509);
            const auto ref = logits_after(file, kModes[0], prompt, 512);
            for (const Mode& m : kModes) {
                SCOPED_TRACE(std::string(arch) + "-" + type + " len " + std::to_string(len) + " " + m.name);
                const auto l = logits_after(file, m, prompt, 512);
                const double d = max_abs_diff(l, ref);
                if (gpu)
                    EXPECT_LE(d, tol_for(file));
                else
                    EXPECT_EQ(d, 0.0) << "the CPU batch phase must be bit-identical to decode";
                std::printf("[modes] %s-%s len %d %-14s max_abs vs single-token %.3g\n", arch.c_str(), type, len,
                            m.name, d);
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Archs, PromptModes,
                         ::testing::Values("llama", "qwen2", "qwen3", "phi3", "granite", "qwen2moe", "qwen3moe",
                                           "mistral3"));

}  // namespace
