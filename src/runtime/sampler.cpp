// Host sampler (see sampler.h).
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/error.h"

namespace jitllm {

void sampler_params_validate(const SamplerParams& p) {
    if (!(p.temperature >= 0.0f && p.temperature <= 100.0f))
        fail_usage("--temperature: expected a value in [0, 100], found {}", p.temperature);
    if (p.top_k < 0) fail_usage("--top-k: expected a value >= 0, found {}", p.top_k);
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
        fail_usage("--top-p: expected a value in (0, 1], found {}", p.top_p);
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
        fail_usage("--min-p: expected a value in [0, 1], found {}", p.min_p);
    if (!(p.repeat_penalty > 0.0f && p.repeat_penalty <= 10.0f))
        fail_usage("--repeat-penalty: expected a value in (0, 10], found {}", p.repeat_penalty);
    if (p.repeat_last_n < 0) fail_usage("--repeat-last-n: expected a value >= 0, found {}", p.repeat_last_n);
}

namespace {
uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
}  // namespace

double sampler_uniform(uint64_t seed, uint64_t draw) {
    return double(splitmix64(seed + splitmix64(draw)) >> 11) * 0x1.0p-53;
}

bool Sampler::device_drawable(int n_vocab, int max_k) const {
    const bool penalise = p_.repeat_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f;
    return !penalise && draw_in_bounds(draw_params(), n_vocab, max_k);  // (temperature > 0: not greedy)
}

DrawParams Sampler::draw_params() const {
    DrawParams d;
    d.temperature = p_.temperature;
    d.top_p = p_.top_p;
    d.min_p = p_.min_p;
    d.top_k = p_.top_k;
    d.seed = p_.seed;
    d.draw = draws_;
    return d;
}

int32_t Sampler::sample(const float* logits, int n_vocab, const std::vector<int32_t>& history) {
    cand_.resize(size_t(n_vocab));
    for (int i = 0; i < n_vocab; ++i) cand_[size_t(i)] = {logits[i], i};

    // Penalties over the recent window (llama.cpp semantics: divide positive, multiply negative).
    const bool penalise = p_.repeat_penalty != 1.0f || p_.presence_penalty != 0.0f ||
                          p_.frequency_penalty != 0.0f;
    if (penalise && !history.empty()) {
        std::unordered_map<int32_t, int> freq;
        const size_t start = history.size() > size_t(p_.repeat_last_n)
                                 ? history.size() - size_t(p_.repeat_last_n) : 0;
        for (size_t i = start; i < history.size(); ++i) freq[history[i]]++;
        for (auto [tok, n] : freq) {
            if (tok < 0 || tok >= n_vocab) continue;
            float& l = cand_[size_t(tok)].first;
            l = l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
            l -= float(n) * p_.frequency_penalty + p_.presence_penalty;
        }
    }
    auto best = [&] {
        return std::max_element(cand_.begin(), cand_.end(), [](const auto& a, const auto& b) {
                   return a.first < b.first || (a.first == b.first && a.second > b.second);
               })->second;
    };
    if (greedy()) return best();

    // Order descending (ties by id: a strict total order) and truncate; only as much of the order as
    // the filters read (the same candidates in the same order as a full sort). Top-k: the k best
    // (partial_sort; 128k logits: 0.31 ms a token against 9.96 for the full sort). No top-k but a
    // p filter: they keep a prefix of the order, so a growing prefix is ordered until the cut falls
    // inside it (the softmax sum then runs over the whole vocabulary, in id order). No filter: none.
    const auto desc = [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    size_t n = cand_.size();
    double sum_all = -1.0;  // >= 0: the softmax sum over every candidate (the p filters' denominator)
    if (p_.top_k > 0 && size_t(p_.top_k) < n) {
        n = size_t(p_.top_k);
        std::partial_sort(cand_.begin(), cand_.begin() + std::ptrdiff_t(n), cand_.end(), desc);
    } else if (p_.top_p < 1.0f || p_.min_p > 0.0f) {
        double mxa = -INFINITY;
        for (const auto& c : cand_) mxa = std::max(mxa, double(c.first));
        sum_all = 0.0;
        for (const auto& c : cand_) sum_all += std::exp(double(c.first) - mxa);
        for (size_t k = std::min(n, size_t(256));; k = std::min(n, k * 8)) {
            std::partial_sort(cand_.begin(), cand_.begin() + std::ptrdiff_t(k), cand_.end(), desc);
            if (k == n) break;
            // the top-p cut (the same sums as below) or the min-p cut inside the first k?
            bool inside = p_.min_p > 0.0f &&
                          std::exp(double(cand_[k - 1].first) - mxa) < p_.min_p;  // prob[0] = 1 here
            if (!inside && p_.top_p < 1.0f) {
                double acc = 0.0;
                for (size_t i = 0; i < k && !inside; ++i) inside = (acc += std::exp(double(cand_[i].first) - mxa) / sum_all) >= p_.top_p;
            }
            if (inside) {
                n = k;
                break;
            }
        }
    }
    // (no filter at all: nothing reads the order; the draw runs over the candidates in id order)
    double mx = cand_[0].first;  // the maximum once ordered
    if (n == cand_.size() && sum_all < 0.0)
        for (const auto& c : cand_) mx = std::max(mx, double(c.first));
    // softmax over the kept candidates (at temperature 1 for the p filters, as llama.cpp does)
    const bool p_filters = p_.top_p < 1.0f || p_.min_p > 0.0f;
    std::vector<double> prob(p_filters ? n : 0);
    double sum = 0;
    for (size_t i = 0; i < prob.size(); ++i) sum += prob[i] = std::exp(double(cand_[i].first) - mx);
    if (sum_all >= 0.0) sum = sum_all;
    if (p_.top_p < 1.0f) {
        double acc = 0;
        size_t keep = n;
        for (size_t i = 0; i < n; ++i) {
            acc += prob[i] / sum;
            if (acc >= p_.top_p) { keep = i + 1; break; }
        }
        n = keep;
    }
    if (p_.min_p > 0.0f) {
        const double thresh = prob[0] * p_.min_p;
        size_t keep = 1;
        while (keep < n && prob[keep] >= thresh) ++keep;
        n = keep;
    }
    // temperature, then draw (argmax.cu DRAW repeats these operations in this order, in double)
    std::vector<double> w(n);
    double tot = 0;
    for (size_t i = 0; i < n; ++i)
        tot += w[i] = std::exp((double(cand_[i].first) - mx) / double(p_.temperature));
    double r = sampler_uniform(p_.seed, draws_++) * tot;
    for (size_t i = 0; i < n; ++i) {
        r -= w[i];
        if (r <= 0) return cand_[i].second;
    }
    return cand_[n - 1].second;
}

}  // namespace jitllm
