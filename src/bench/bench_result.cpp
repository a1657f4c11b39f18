// BenchResult statistics and the naming helpers of model_type (see bench_result.h).
#include "bench/bench_result.h"

#include <cmath>
#include <ctime>

#include "core/error.h"

namespace jitllm {

std::string BenchTest::name() const {
    std::string s;
    if (n_prompt > 0) s = fmt::format("pp{}", n_prompt);
    if (n_gen > 0) s += fmt::format("{}tg{}", s.empty() ? "" : "+", n_gen);
    if (n_depth > 0) s += fmt::format(" @ d{}", n_depth);
    return s;
}

double mean_of(const std::vector<double>& v) {
    if (v.empty()) return 0.0;
    double s = 0.0;
    for (double x : v) s += x;
    return s / double(v.size());
}

double sample_stddev_of(const std::vector<double>& v) {
    if (v.size() < 2) return 0.0;
    const double m = mean_of(v);
    double s = 0.0;
    for (double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / double(v.size() - 1));
}

namespace {
std::vector<double> as_double(const std::vector<uint64_t>& v) {
    return std::vector<double>(v.begin(), v.end());
}
}  // namespace

std::vector<double> BenchResult::samples_ts() const {
    std::vector<double> ts;
    ts.reserve(samples_ns.size());
    for (uint64_t ns : samples_ns)
        ts.push_back(1e9 * double(n_prompt + n_gen) / double(ns > 0 ? ns : 1));
    return ts;
}

uint64_t BenchResult::avg_ns() const { return uint64_t(std::llround(mean_of(as_double(samples_ns)))); }
uint64_t BenchResult::stddev_ns() const {
    return uint64_t(std::llround(sample_stddev_of(as_double(samples_ns))));
}
double BenchResult::avg_ts() const { return mean_of(samples_ts()); }
double BenchResult::stddev_ts() const { return sample_stddev_of(samples_ts()); }

double BenchResult::bw_gb_s() const { return double(bytes_per_token) * avg_ts() / 1e9; }

double BenchResult::pct_copy_bw() const {
    return copy_bw_gb_s > 0 ? 100.0 * bw_gb_s() / copy_bw_gb_s : 0.0;
}

// The values of general.file_type (llama.cpp's llama_ftype) and the names llama.cpp prints for
// them in model descriptions.
std::string ftype_name(int64_t file_type) {
    struct Name {
        int64_t id;
        const char* name;
    };
    static const Name kNames[] = {
        {0, "all F32"},           {1, "F16"},
        {2, "Q4_0"},              {3, "Q4_1"},
        {7, "Q8_0"},              {8, "Q5_0"},
        {9, "Q5_1"},              {10, "Q2_K - Medium"},
        {11, "Q3_K - Small"},     {12, "Q3_K - Medium"},
        {13, "Q3_K - Large"},     {14, "Q4_K - Small"},
        {15, "Q4_K - Medium"},    {16, "Q5_K - Small"},
        {17, "Q5_K - Medium"},    {18, "Q6_K"},
        {19, "IQ2_XXS - 2.0625 bpw"}, {20, "IQ2_XS - 2.3125 bpw"},
        {21, "Q2_K - Small"},     {22, "IQ3_XS - 3.3 bpw"},
        {23, "IQ3_XXS - 3.0625 bpw"}, {24, "IQ1_S - 1.5625 bpw"},
        {25, "IQ4_NL - 4.5 bpw"}, {26, "IQ3_S - 3.4375 bpw"},
        {27, "IQ3_S mix - 3.66 bpw"}, {28, "IQ2_S - 2.5 bpw"},
        {29, "IQ2_M - 2.7 bpw"},  {30, "IQ4_XS - 4.25 bpw"},
        {31, "IQ1_M - 1.75 bpw"}, {32, "BF16"},
        {36, "TQ1_0 - 1.69 bpw ternary"}, {37, "TQ2_0 - 2.06 bpw ternary"},
        {38, "MXFP4 MoE"},
    };
    for (const auto& n : kNames)
        if (n.id == file_type) return n.name;
    return fmt::format("ftype {}", file_type);
}

std::string params_size_label(uint64_t n_params) {
    static const struct {
        double scale;
        const char* suffix;
    } kUnits[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
    for (const auto& u : kUnits)
        if (double(n_params) >= u.scale)
            return fmt::format("{}{}", std::llround(double(n_params) / u.scale), u.suffix);
    return fmt::format("{}", n_params);
}

std::string iso8601_utc(int64_t unix_seconds) {
    const std::time_t t = std::time_t(unix_seconds);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace jitllm
