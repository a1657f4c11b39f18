// Golden model tests: our logits and greedy tokens against llama.cpp's, stored in
// tests/data/golden (stories260K + synthetic files of each architecture and tensor type), with the
// tolerances of tests/data/golden/README.md, on both CPU paths: the fast kernels (the default) and
// the exact reference operations (--cpu-exact). JITLLM_TEST_BACKEND=cuda runs the same on the GPU
// (once: the CPU path does not apply there).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "fixtures/engine_factory.h"
#include "fixtures/test_support.h"
#include "runtime/engine.h"

using jitllm::Engine;
using nlohmann::json;

namespace {

json load_json(const std::string& rel) { return json::parse(jitllm::test::read_data(rel)); }

std::vector<float> to_floats(const json& row) {
    // golden floats are the shortest decimals that round-trip float32: parse with strtof
    std::vector<float> v;
    v.reserve(row.size());
    for (const auto& x : row) v.push_back(float(x.get<double>()));
    return v;
}

double kl_div(const std::vector<float>& ref, const float* ours, int n) {
    double mr = -1e300, mo = -1e300;
    for (int i = 0; i < n; ++i) mr = std::max(mr, double(ref[i])), mo = std::max(mo, double(ours[i]));
    double sr = 0, so = 0;
    for (int i = 0; i < n; ++i) sr += std::exp(ref[i] - mr), so += std::exp(ours[i] - mo);
    double kl = 0;
    for (int i = 0; i < n; ++i) {
        const double lp = ref[i] - mr - std::log(sr), lq = ours[i] - mo - std::log(so);
        kl += std::exp(lp) * (lp - lq);
    }
    return kl;
}

int argmax(const float* x, int n) {
    int b = 0;
    for (int i = 1; i < n; ++i)
        if (x[i] > x[b]) b = i;
    return b;
}

struct Tol {
    double max_abs, kl_mean, gap;
    bool greedy_exact;
};

Tol tol_for(const std::string& file) {
    const bool gpu = jitllm::test::backend_is_gpu();  // F16 KV cache on the GPU
    if (file.find("-f32") != std::string::npos) return {gpu ? 3e-3 : 1e-4, gpu ? 1e-7 : 1e-9, 2e-4, true};
    if (file.find("-f16") != std::string::npos) return {3e-3, 1e-6, 6e-3, false};
    return {0.1, 1e-4, 0.2, false};
}

// The CPU path a test instance runs (the GPU runs the "fast" instances only)
enum class CpuPath { Fast, Exact };
std::string path_name(CpuPath p) { return p == CpuPath::Fast ? "fast" : "exact"; }

std::unique_ptr<Engine> engine_on(CpuPath path, const std::string& file) {
    return jitllm::test::make_engine(file, 256, [&](jitllm::EngineOptions& o) { o.cpu_exact = path == CpuPath::Exact; });
}

#define SKIP_EXACT_ON_GPU(path)                                                     \
    if ((path) == CpuPath::Exact && jitllm::test::backend_is_gpu())                  \
        GTEST_SKIP() << "the CPU's exact path: the GPU runs the fast instance only"

class SyntheticGolden : public ::testing::TestWithParam<std::tuple<std::string, CpuPath>> {};

TEST_P(SyntheticGolden, LogitsAndGreedyMatchLlamaCpp) {
    const auto [arch, path] = GetParam();
    SKIP_EXACT_ON_GPU(path);
    const std::string dir = jitllm::test::data_path("golden/synthetic/");
    const json g = load_json("golden/synthetic/" + arch + ".logits.json");
    const std::vector<int32_t> input = g["input_ids"].get<std::vector<int32_t>>();
    const int V = g["n_vocab"].get<int>();
    for (const auto& var : g["variants"]) {
        const std::string file = var["file"].get<std::string>();
        SCOPED_TRACE(file);
        if (var.contains("shipped") && !var["shipped"].get<bool>()) continue;  // logits only, no file
        const Tol tol = tol_for(file);
        if (jitllm::test::golden_left_out(file)) continue;
        auto e = engine_on(path, dir + file);
        double max_abs = 0, kl_sum = 0;
        int top1_bad = 0, top1_agree = 0;
        const float* l = nullptr;
        for (size_t p = 0; p < input.size(); ++p) {
            l = e->feed({input[p]});
            const std::vector<float> ref = to_floats(var["logits"][p]);
            for (int i = 0; i < V; ++i) max_abs = std::max(max_abs, double(std::fabs(l[i] - ref[i])));
            kl_sum += kl_div(ref, l, V);
            // top-1 must agree wherever the golden margin is clear
            std::vector<float> sorted = ref;
            std::nth_element(sorted.begin(), sorted.begin() + 1, sorted.end(), std::greater<float>());
            const int ra = argmax(ref.data(), V), oa = argmax(l, V);
            top1_agree += ra == oa;
            if (ra != oa && sorted[0] - sorted[1] > tol.gap) ++top1_bad;
        }
        const double kl_mean = kl_sum / double(input.size());
        EXPECT_LE(max_abs, tol.max_abs);
        EXPECT_LE(kl_mean, tol.kl_mean);
        EXPECT_EQ(top1_bad, 0);
        EXPECT_GE(top1_agree, int(0.8 * double(input.size())));
        // continuation: exact greedy for F32, teacher-forced otherwise
        const auto gen = var["gen_ids"].get<std::vector<int32_t>>();
        int fails = 0;
        for (size_t k = 0; k < gen.size(); ++k) {
            const int ours = argmax(l, V);
            if (tol.greedy_exact) {
                EXPECT_EQ(ours, gen[k]) << "greedy step " << k;
            } else if (l[ours] - l[gen[k]] > 2 * tol.max_abs) {
                ++fails;
            }
            if (k + 1 < gen.size()) l = e->feed({gen[k]});
        }
        EXPECT_EQ(fails, 0) << "teacher-forced continuation";
        std::printf("[golden] %-22s %-5s max_abs %.3g  kl_mean %.3g  top1 %d/%zu\n", file.c_str(),
                    path_name(path).c_str(), max_abs, kl_mean, top1_agree, input.size());
    }
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<std::string, CpuPath>>& i) {
    return std::get<0>(i.param) + "_" + path_name(std::get<1>(i.param));
}

INSTANTIATE_TEST_SUITE_P(Archs, SyntheticGolden,
                         ::testing::Combine(::testing::Values("llama", "qwen2", "qwen3", "phi3", "granite", "qwen2moe",
                                                              "qwen3moe", "mistral3"),
                                            ::testing::Values(CpuPath::Fast, CpuPath::Exact)),
                         param_name);

class Stories260KGolden : public ::testing::TestWithParam<CpuPath> {};

TEST_P(Stories260KGolden, GreedyContinuationsAndLogitsMatchLlamaCpp) {
    const CpuPath path = GetParam();
    SKIP_EXACT_ON_GPU(path);
    const json g = load_json("golden/stories260K.golden.json");
    const int V = g["n_vocab"].get<int>();
    const double tol = jitllm::test::backend_is_gpu() ? 5e-2 : 1e-3;
    auto e = engine_on(path, jitllm::test::source_dir() + "/models/stories260K.gguf");
    for (const auto& c : g["cases"]) {
        const std::string prompt = c["prompt"].get<std::string>();
        SCOPED_TRACE(prompt);
        e->reset();
        const auto ids = e->tokenizer().encode(prompt, true, true);
        EXPECT_EQ(ids, c["prompt_ids"].get<std::vector<int32_t>>());
        double max_abs = 0;
        const float* l = nullptr;
        for (size_t p = 0; p < ids.size(); ++p) {
            l = e->feed({ids[p]});
            if (c.contains("prompt_logits")) {
                const auto ref = to_floats(c["prompt_logits"][p]);
                for (int i = 0; i < V; ++i) max_abs = std::max(max_abs, double(std::fabs(l[i] - ref[i])));
            }
        }
        const auto gen = c["gen_ids"].get<std::vector<int32_t>>();
        std::vector<int32_t> ours;
        for (size_t k = 0; k < gen.size(); ++k) {
            const int t = argmax(l, V);
            ours.push_back(t);
            // gen_logits[j] is the distribution after feeding gen_ids[j]: we hold it at k = j + 1
            if (c.contains("gen_logits") && k >= 1 && k - 1 < c["gen_logits"].size()) {
                const auto ref = to_floats(c["gen_logits"][k - 1]);
                for (int i = 0; i < V; ++i) max_abs = std::max(max_abs, double(std::fabs(l[i] - ref[i])));
            }
            if (k + 1 < gen.size()) l = e->feed({t});
        }
        EXPECT_EQ(ours, gen);
        std::string text;
        for (int32_t t : ours) text += e->tokenizer().token_to_piece(t, false);
        EXPECT_EQ(text, c["gen_text"].get<std::string>());
        EXPECT_LE(max_abs, tol);
    }
}

INSTANTIATE_TEST_SUITE_P(Paths, Stories260KGolden, ::testing::Values(CpuPath::Fast, CpuPath::Exact),
                         [](const ::testing::TestParamInfo<CpuPath>& i) { return path_name(i.param); });

}  // namespace
