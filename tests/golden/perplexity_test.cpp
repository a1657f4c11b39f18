// `jitllm perplexity` against llama.cpp: on each synthetic model's 24-token input, every prediction
// scored (--score all), our perplexity equals the one llama.cpp's golden logits give (computed here
// in double from the JSON), within what the files' logit tolerances allow: each prediction's
// -log softmax moves by at most twice the largest |Δlogit|, so the mean by as much.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "fixtures/test_support.h"

namespace jitllm {
namespace {

double golden_mean_nll(const nlohmann::json& logits, const std::vector<int>& ids) {
    double s = 0.0;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
        const auto& l = logits[i];
        double m = -1e300;
        for (const auto& x : l) m = std::max(m, x.get<double>());
        double e = 0.0;
        for (const auto& x : l) e += std::exp(x.get<double>() - m);
        s += m + std::log(e) - l[size_t(ids[i + 1])].get<double>();
    }
    return s / double(ids.size() - 1);
}

TEST(Perplexity, EqualsTheGoldenLogitsPerplexity) {
    int checked = 0;
    for (const char* arch : {"llama", "qwen2", "qwen3", "phi3", "granite"}) {
        const std::string dir = test::data_path("golden/synthetic/");
        const auto g = nlohmann::json::parse(test::read_data("golden/synthetic/" + std::string(arch) + ".logits.json"));
        const std::vector<int> ids = g.at("input_ids").get<std::vector<int>>();
        std::string toks;
        for (int id : ids) toks += (toks.empty() ? "" : " ") + std::to_string(id);
        for (const auto& v : g.at("variants")) {
            const std::string file = v.at("file").get<std::string>();
            // the recommended max |Δlogit| tolerances (tests/data/golden/README.md)
            const double tol = file.find("-f32") != std::string::npos ? 1e-4
                               : file.find("-f16") != std::string::npos ? 3e-3
                                                                         : 0.1;
            std::string out, err;
            const int rc = test::run_command("'" + test::binary_path() + "' perplexity -m '" + dir + file +
                                                 "' --tokens '" + toks + "' -c " + std::to_string(ids.size()) +
                                                 " --score all -o json",
                                             &out, &err);
            ASSERT_EQ(rc, 0) << file << ": " << err;
            const auto r = nlohmann::json::parse(out);
            EXPECT_EQ(r.at("scored").get<int>(), int(ids.size()) - 1) << file;
            const double want = golden_mean_nll(v.at("logits"), ids);
            const double got = r.at("mean_nll").get<double>();
            EXPECT_LE(std::fabs(got - want), 2 * tol) << file << ": mean -log p " << got << " against llama.cpp's " << want;
            EXPECT_NEAR(r.at("ppl").get<double>(), std::exp(got), 1e-9 * std::exp(got)) << file;
            ++checked;
        }
    }
    EXPECT_EQ(checked, 35);
}

// Text mode: chunks of -c tokens, each from an empty cache with BOS first (stories260K adds one);
// the second halves scored by default, every prediction with --score all; --chunks caps them
TEST(Perplexity, TextChunksAndScoring) {
    const std::string model = test::source_dir() + "/models/stories260K.gguf";
    char tmpl[] = "/tmp/jitllm_ppl_XXXXXX";
    const int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    std::string text;
    for (int i = 0; i < 40; ++i) text += "Once upon a time, there was a little girl named Lily. She liked to play. ";
    ASSERT_EQ(::write(fd, text.data(), text.size()), ssize_t(text.size()));
    ::close(fd);
    auto run = [&](const std::string& extra) {
        std::string out, err;
        const int rc = test::run_command("'" + test::binary_path() + "' perplexity -m '" + model + "' -f " + tmpl +
                                             " -c 64 -o json " + extra,
                                         &out, &err);
        EXPECT_EQ(rc, 0) << err;
        return nlohmann::json::parse(out.empty() ? "{}" : out);
    };
    const auto half = run(""), all = run("--score all"), two = run("--chunks 2");
    const int n_chunks = half.at("n_chunks").get<int>();
    EXPECT_GE(n_chunks, 10);
    EXPECT_EQ(half.at("scored").get<int>(), n_chunks * 31);  // predictions 32..62 of 64 tokens
    EXPECT_EQ(all.at("scored").get<int>(), n_chunks * 63);
    EXPECT_EQ(two.at("n_chunks").get<int>(), 2);
    // a repeated sentence: a trained model predicts most of it (and the second halves better than all)
    EXPECT_LT(half.at("ppl").get<double>(), 3.0);
    EXPECT_LE(half.at("ppl").get<double>(), all.at("ppl").get<double>());
    // the running value after 2 chunks is what --chunks 2 reports
    EXPECT_DOUBLE_EQ(half.at("chunk_ppl")[1].get<double>(), two.at("ppl").get<double>());
    ::unlink(tmpl);
}

}  // namespace
}  // namespace jitllm
