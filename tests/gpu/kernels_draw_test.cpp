// sample.draw=device (kernels/cuda/argmax.cu DRAW): the device's pick against the host sampler
// (runtime/sampler.cpp) on the same logits with the same parameters and draw counter. The tokens
// must be equal, not only equally distributed: the device takes the host's k best in the host's
// order (value, then lower id), applies top-p, min-p and the temperature with the same double
// operations in the same order and draws with the same sampler_uniform(seed, draw). Logits with
// many ties, -inf entries and all-equal rows; vocabularies whose chunk a block is 8, 244 and 972
// logits (sort sizes 8, 256, 1024). Needs a GPU (skipped without one).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/schedule.h"
#include "jit/jit_compiler.h"
#include "core/error.h"
#include "model/model.h"
#include "plan/plan.h"
#include "runtime/sampler.h"
#include "fixtures/engine_factory.h"  // cuda_available
#include "unit/tiny_arch_model.h"

namespace {

using namespace jitllm;
using namespace jitllm::test;

struct Params {
    float temperature, top_p, min_p;
    int top_k;
};

// logits of one trial: kind 0 normal values rounded to quarters (ties), 1% -inf; kind 1 all equal;
// kind 2 a plateau of 100 equal maxima over normal values
std::vector<float> trial_logits(int n, int kind, std::mt19937_64& g) {
    std::normal_distribution<float> nd(0.0f, 3.0f);
    std::vector<float> l(static_cast<size_t>(n));
    for (float& x : l) x = std::round(nd(g) * 4.0f) / 4.0f;
    if (kind == 0)
        for (int i = 0; i < n / 100; ++i) l[g() % size_t(n)] = -INFINITY;
    if (kind == 1) std::fill(l.begin(), l.end(), 0.5f);
    if (kind == 2)
        for (int i = 0; i < 100; ++i) l[g() % size_t(n)] = 20.0f;
    return l;
}

struct DrawCase {
    int n_vocab;
};

class DeviceDraw : public ::testing::TestWithParam<DrawCase> {};

std::unique_ptr<Model> vocab_model(int n_vocab) {
    TinySpec spec;
    spec.n_vocab = n_vocab;
    spec.n_layers = 1;
    return load_model(GgufReader::from_bytes(tiny_model(spec).to_bytes(), "draw.gguf"));
}

// Without a GPU: the draw kernel of each case compiles for sm_75 (shuffles) and sm_90 (redux).
TEST_P(DeviceDraw, CompilesWithoutAGpu) {
    const DrawCase c = GetParam();
    auto model = vocab_model(c.n_vocab);
    const Plan plan = plan_build(*model, 64);
    ScheduleOptions so;
    for (const char* target : {"sm_75", "sm_90"}) {
        const Schedule s = schedule_build(plan, DeviceInfo::for_target(target), so);
        const KernelStep* k = nullptr;
        for (const KernelStep& st : s.decode)
            if (st.symbol == "sample__draw") k = &st;
        ASSERT_NE(k, nullptr) << target;
        JitOptions jo;
        jo.cache.disk = false;
        JitCompiler jit(target, jo);
        EXPECT_NO_THROW(jit.compile(k->variant)) << target;
    }
}

TEST_P(DeviceDraw, PicksTheHostSamplersToken) {
    std::string why;
    if (!cuda_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    const int n_vocab = GetParam().n_vocab;
    auto model = vocab_model(n_vocab);
    const Plan plan = plan_build(*model, 64);
    CudaOptions o;
    o.cache.disk = false;
    o.graphs = false;
    CudaBackend gpu(plan, o);
    ASSERT_EQ(gpu.draw_max_k(), 64) << "sample.draw=device with KMAX 64 on this device";
    size_t pick = SIZE_MAX;
    const auto& steps = gpu.schedule().decode;
    for (size_t i = 0; i < steps.size(); ++i)
        if (steps[i].symbol == "sample__draw") pick = i;
    ASSERT_NE(pick, SIZE_MAX);

    const Params sets[] = {{0.8f, 0.95f, 0.05f, 40},  // the CLI's defaults
                           {1.0f, 1.0f, 0.0f, 64},    // top-k alone, the largest k
                           {2.0f, 1.0f, 0.0f, 1},     // k = 1: the argmax, a draw counted
                           {0.3f, 0.5f, 0.1f, 7},
                           {1.5f, 0.99f, 0.0f, 63},
                           {0.7f, 1.0f, 0.2f, 33}};
    std::mt19937_64 g{static_cast<uint64_t>(n_vocab)};
    int compared = 0;
    for (const Params& ps : sets) {
        SamplerParams sp;
        sp.temperature = ps.temperature;
        sp.top_k = ps.top_k;
        sp.top_p = ps.top_p;
        sp.min_p = ps.min_p;
        sp.seed = 1234 + uint64_t(ps.top_k);
        for (int trial = 0; trial < 40; ++trial) {
            SCOPED_TRACE(::testing::Message() << "T " << ps.temperature << " k " << ps.top_k << " p " << ps.top_p
                                              << " min-p " << ps.min_p << " trial " << trial);
            const std::vector<float> l = trial_logits(n_vocab, trial % 10 == 9 ? 1 : trial % 10 == 8 ? 2 : 0, g);
            gpu.upload_slot(Slot::Logits, l.data(), l.size());
            Sampler host(sp);
            host.skip_draws(uint64_t(trial) * 7 + 3);
            const DrawParams dp = host.draw_params();
            ASSERT_TRUE(gpu.set_draw(&dp));
            gpu.run_step(Phase::Decode, pick, 0, 0);
            EXPECT_EQ(gpu.device_token_out(), host.sample(l.data(), n_vocab, {}));
            // the kernel advanced its counter: the next step draws number draw + 1
            gpu.run_step(Phase::Decode, pick, 0, 0);
            EXPECT_EQ(gpu.device_token_out(), host.sample(l.data(), n_vocab, {}));
            compared += 2;
        }
    }
    // back to the argmax (lowest id on ties)
    ASSERT_TRUE(gpu.set_draw(nullptr));
    const std::vector<float> l = trial_logits(n_vocab, 2, g);
    gpu.upload_slot(Slot::Logits, l.data(), l.size());
    gpu.run_step(Phase::Decode, pick, 0, 0);
    SamplerParams greedy;
    greedy.temperature = 0.0f;
    EXPECT_EQ(gpu.device_token_out(), Sampler(greedy).sample(l.data(), n_vocab, {}));
    // what the device cannot draw is refused (the host samples those)
    DrawParams bad;
    bad.temperature = 0.8f;
    bad.top_k = 65;
    EXPECT_FALSE(gpu.set_draw(&bad));
    bad.top_k = 0;
    EXPECT_FALSE(gpu.set_draw(&bad));
    std::printf("[draw] vocab %d: %d device picks equal to the host's\n", n_vocab, compared);
}

INSTANTIATE_TEST_SUITE_P(Vocab, DeviceDraw,
                         ::testing::Values(DrawCase{1003}, DrawCase{32000}, DrawCase{128256}),
                         [](const auto& info) { return "vocab" + std::to_string(info.param.n_vocab); });

}  // namespace
