// The host sampler (runtime/sampler.h): seeded reproducibility, each filter's effect on what can be
// drawn (top-k, top-p, min-p, penalties), the draw's frequencies against the softmax at the given
// temperature, and over a 128k vocabulary the partial orderings (top-k; the p filters' growing
// prefix) drawing exactly what a full ordering draws; the draw counter a device draw continues.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "fixtures/engine_factory.h"
#include "runtime/sampler.h"

namespace jitllm {
namespace {

std::vector<float> random_logits(int n, uint64_t seed) {
    std::mt19937_64 g(seed);
    std::normal_distribution<float> d(0.0f, 3.0f);
    std::vector<float> l(static_cast<size_t>(n));
    for (auto& v : l) v = std::round(d(g) * 8.0f) / 8.0f;  // coarse values: many exact ties
    return l;
}

std::vector<int32_t> draws(const SamplerParams& p, const std::vector<float>& logits, int n) {
    Sampler s(p);
    std::vector<int32_t> out;
    const std::vector<int32_t> history;
    for (int i = 0; i < n; ++i) out.push_back(s.sample(logits.data(), int(logits.size()), history));
    return out;
}

TEST(Sampler, SameSeedSameTokensOtherSeedOtherTokens) {
    const auto l = random_logits(1000, 1);
    const auto a = draws(test::sampler_params(1.0f, 0, 1.0f, 0.0f, 42), l, 200);
    EXPECT_EQ(a, draws(test::sampler_params(1.0f, 0, 1.0f, 0.0f, 42), l, 200));
    EXPECT_NE(a, draws(test::sampler_params(1.0f, 0, 1.0f, 0.0f, 43), l, 200));
}

// Draw i uses sampler_uniform(seed, i) whoever makes it: a sampler that skips the draws another
// side made (the device's, Backend::set_draw) picks what one that made them itself picks next.
// Greedy picks take no draw.
TEST(Sampler, DrawCounterCarriesAcrossSkippedDraws) {
    const auto l = random_logits(5000, 3);
    const SamplerParams p = test::sampler_params(0.9f, 40, 0.95f, 0.05f, 11);
    const auto all = draws(p, l, 30);
    Sampler s(p);
    s.skip_draws(17);
    EXPECT_EQ(s.draw_params().draw, 17u);
    for (int i = 17; i < 30; ++i) EXPECT_EQ(s.sample(l.data(), int(l.size()), {}), all[size_t(i)]) << i;
    EXPECT_EQ(s.draws(), 30u);
    Sampler g(test::sampler_params(0.0f, 40, 0.95f, 0.05f, 11));
    g.sample(l.data(), int(l.size()), {});
    EXPECT_EQ(g.draws(), 0u);
    // the uniform numbers: in [0, 1), mean near 1/2, a function of (seed, draw) only
    double sum = 0;
    std::set<double> seen;
    for (uint64_t i = 0; i < 20000; ++i) {
        const double u = sampler_uniform(5, i);
        ASSERT_GE(u, 0.0);
        ASSERT_LT(u, 1.0);
        sum += u;
        seen.insert(u);
    }
    EXPECT_NEAR(sum / 20000.0, 0.5, 0.01);
    EXPECT_EQ(seen.size(), 20000u);
    EXPECT_EQ(sampler_uniform(5, 7), sampler_uniform(5, 7));
    EXPECT_NE(sampler_uniform(5, 7), sampler_uniform(6, 7));
}

// What a device draw can take (argmax.cu DRAW): a temperature, 1 <= top-k <= the backend's
// largest and below the vocabulary, no penalties; the parameters it gets are the sampler's.
TEST(Sampler, DeviceDrawableOnlyWithTopKAndNoPenalties) {
    EXPECT_TRUE(Sampler(test::sampler_params(0.8f, 40, 0.95f, 0.05f)).device_drawable(128256, 64));
    EXPECT_TRUE(Sampler(test::sampler_params(0.8f, 64, 1.0f, 0.0f)).device_drawable(128256, 64));
    EXPECT_FALSE(Sampler(test::sampler_params(0.8f, 65, 0.95f, 0.05f)).device_drawable(128256, 64));
    EXPECT_FALSE(Sampler(test::sampler_params(0.8f, 0, 0.95f, 0.05f)).device_drawable(128256, 64));
    EXPECT_FALSE(Sampler(test::sampler_params(0.0f, 40, 0.95f, 0.05f)).device_drawable(128256, 64));  // greedy: the argmax
    EXPECT_FALSE(Sampler(test::sampler_params(0.8f, 40, 0.95f, 0.05f)).device_drawable(40, 64));      // k = the vocabulary
    EXPECT_FALSE(Sampler(test::sampler_params(0.8f, 40, 0.95f, 0.05f)).device_drawable(128256, 0));   // no device draw
    SamplerParams pen = test::sampler_params(0.8f, 40, 0.95f, 0.05f);
    pen.repeat_penalty = 1.1f;
    EXPECT_FALSE(Sampler(pen).device_drawable(128256, 64));
    const DrawParams d = Sampler(test::sampler_params(0.7f, 33, 0.9f, 0.1f, 99)).draw_params();
    EXPECT_EQ(d.temperature, 0.7f);
    EXPECT_EQ(d.top_k, 33);
    EXPECT_EQ(d.top_p, 0.9f);
    EXPECT_EQ(d.min_p, 0.1f);
    EXPECT_EQ(d.seed, 99u);
    EXPECT_EQ(d.draw, 0u);
}

TEST(Sampler, GreedyAndTopKOneTakeTheLowestIdOfTheMaximum) {
    const std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f};
    for (int32_t t : draws(test::sampler_params(0.0f, 40, 0.95f, 0.05f), l, 20)) EXPECT_EQ(t, 1);
    for (int32_t t : draws(test::sampler_params(5.0f, 1, 1.0f, 0.0f), l, 50)) EXPECT_EQ(t, 1);
}

// probabilities 0.5 / 0.3 / 0.15 / 0.05 at temperature 1
std::vector<float> four() { return {std::log(0.3f), std::log(0.05f), std::log(0.5f), std::log(0.15f)}; }

TEST(Sampler, TopKTopPAndMinPBoundWhatIsDrawn) {
    auto seen = [](const std::vector<int32_t>& v) { return std::set<int32_t>(v.begin(), v.end()); };
    EXPECT_EQ(seen(draws(test::sampler_params(1.0f, 2, 1.0f, 0.0f), four(), 400)), (std::set<int32_t>{2, 0}));
    // top-p 0.7: 0.5 then 0.8 >= 0.7: the two most likely
    EXPECT_EQ(seen(draws(test::sampler_params(1.0f, 0, 0.7f, 0.0f), four(), 400)), (std::set<int32_t>{2, 0}));
    // top-p 0.85: 0.5, 0.8, 0.95: three
    EXPECT_EQ(seen(draws(test::sampler_params(1.0f, 0, 0.85f, 0.0f), four(), 600)), (std::set<int32_t>{2, 0, 3}));
    // min-p 0.2: at least 0.1 (0.2 x 0.5): 0.5, 0.3, 0.15
    EXPECT_EQ(seen(draws(test::sampler_params(1.0f, 0, 1.0f, 0.2f), four(), 600)), (std::set<int32_t>{2, 0, 3}));
    // nothing filtered: all four
    EXPECT_EQ(seen(draws(test::sampler_params(1.0f, 0, 1.0f, 0.0f), four(), 2000)), (std::set<int32_t>{0, 1, 2, 3}));
}

TEST(Sampler, FrequenciesFollowTheSoftmaxAtTheTemperature) {
    const int n = 40000;
    for (float temp : {1.0f, 0.5f}) {
        std::vector<double> expect(4);
        double tot = 0;
        const auto l = four();
        for (int i = 0; i < 4; ++i) tot += expect[size_t(i)] = std::exp(double(l[size_t(i)]) / temp);
        std::vector<int> count(4);
        for (int32_t t : draws(test::sampler_params(temp, 0, 1.0f, 0.0f, 11), l, n)) count[size_t(t)]++;
        for (int i = 0; i < 4; ++i) {
            const double p = expect[size_t(i)] / tot, sd = std::sqrt(p * (1 - p) / n);
            EXPECT_NEAR(double(count[size_t(i)]) / n, p, 5 * sd) << "temperature " << temp << " token " << i;
        }
    }
}

TEST(Sampler, RepeatPenaltyMovesTheGreedyPick) {
    SamplerParams p = test::sampler_params(0.0f, 40, 0.95f, 0.05f);
    p.repeat_penalty = 2.0f;  // 2.0 -> 1.0 for token 1: token 4 (1.9) wins
    Sampler s(p);
    const std::vector<float> l = {0.5f, 2.0f, -1.0f, 1.0f, 1.9f};
    EXPECT_EQ(s.sample(l.data(), int(l.size()), {}), 1);
    EXPECT_EQ(s.sample(l.data(), int(l.size()), {1}), 4);
}

// top-k orders only the first k candidates: over a 128k vocabulary with many exact ties, the draws
// equal those of the same filters over the fully ordered list (top-k = vocabulary size, with the
// k-th candidate's cut applied by top-p = 1 and min-p = 0 ... i.e. a full sort), seed for seed.
TEST(Sampler, TopKOverALargeVocabularyDrawsWhatTheFullOrderingDraws) {
    const int n_vocab = 128256;
    for (int k : {1, 40, 1000}) {
        const auto l = random_logits(n_vocab, uint64_t(k));
        // the reference: logits outside the k best (by value, then id) pushed to -inf, no top-k:
        // the full sort then keeps them last with zero weight, so both draw from the same k
        std::vector<std::pair<float, int32_t>> c;
        for (int i = 0; i < n_vocab; ++i) c.push_back({l[size_t(i)], i});
        std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) {
            return a.first > b.first || (a.first == b.first && a.second < b.second);
        });
        std::vector<float> masked(size_t(n_vocab), -INFINITY);
        for (int i = 0; i < k; ++i) masked[size_t(c[size_t(i)].second)] = c[size_t(i)].first;
        for (float top_p : {1.0f, 0.9f}) {
            const auto got = draws(test::sampler_params(0.8f, k, top_p, 0.05f, 5), l, 30);
            const auto want = draws(test::sampler_params(0.8f, 0, top_p, 0.05f, 5), masked, 30);
            EXPECT_EQ(got, want) << "k " << k << " top-p " << top_p;
        }
    }
}

// Without top-k the p filters order only a growing prefix of the candidates: the draws equal
// those of top-k = vocabulary - 1 (a partial sort of all but one candidate, whose weight is ~e-30 of
// the best), seed for seed, for nuclei small and large (the prefix grows 256, 2048, 16384, ...).
TEST(Sampler, TopPAndMinPWithoutTopKDrawWhatTheNearlyFullOrderingDraws) {
    const int n_vocab = 128256;
    const auto l = random_logits(n_vocab, 99);
    for (auto [top_p, min_p] : {std::pair{0.9f, 0.05f}, std::pair{1.0f, 0.05f}, std::pair{0.5f, 0.0f},
                                std::pair{0.999f, 0.0f}, std::pair{1.0f, 1e-6f}}) {
        const auto got = draws(test::sampler_params(1.5f, 0, top_p, min_p, 3), l, 30);
        const auto want = draws(test::sampler_params(1.5f, n_vocab - 1, top_p, min_p, 3), l, 30);
        EXPECT_EQ(got, want) << "top-p " << top_p << " min-p " << min_p;
    }
}

}  // namespace
}  // namespace jitllm
