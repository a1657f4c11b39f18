// Constrained output on the GPU (CudaBackend::decode_masked, kernels/cuda/logit_mask.cu): a decode
// step with a token mask leaves the logits of the tokens the mask leaves out at -inf and the rest
// as decode() computes them, and its pick is the host's pick of those masked logits: the argmax
// (lowest id on ties) and draws with the host sampler's parameters and counter. Masks from dense
// to a single token, with and without graphs, vocabularies of 1003 and 32000. Without a GPU:
// logit_mask.cu compiles for sm_80 and sm_90.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "fixtures/engine_factory.h"  // cuda_available
#include "jit/jit_compiler.h"
#include "model/model.h"
#include "plan/plan.h"
#include "runtime/sampler.h"
#include "unit/tiny_arch_model.h"

namespace {

using namespace jitllm;
using namespace jitllm::test;

TEST(LogitMask, CompilesWithoutAGpu) {
    for (const char* target : {"sm_80", "sm_90"})
        for (int n : {1003, 128256}) {
            Variant v("cuda/logit_mask.cu", "logit_mask");
            v.set("N", n).set("BLOCK", 256);
            JitOptions jo;
            jo.cache.disk = false;
            JitCompiler jit(target, jo);
            EXPECT_NO_THROW(jit.compile(v)) << target << " N " << n;
        }
}

// A mask of about `density` of the tokens (at least one).
std::vector<uint32_t> random_mask(int n, double density, std::mt19937_64& g) {
    std::vector<uint32_t> m(size_t(n + 31) / 32, 0u);
    std::bernoulli_distribution keep(density);
    for (int i = 0; i < n; ++i)
        if (keep(g)) m[size_t(i) / 32] |= 1u << (i % 32);
    const int one = int(g() % uint64_t(n));
    m[size_t(one) / 32] |= 1u << (one % 32);
    return m;
}

bool allowed(const std::vector<uint32_t>& m, int id) { return m[size_t(id) / 32] >> (id % 32) & 1u; }

class MaskedDecode : public ::testing::TestWithParam<int> {};

TEST_P(MaskedDecode, PicksTheHostsPickOfTheMaskedLogits) {
    std::string why;
    if (!cuda_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    const int n_vocab = GetParam();
    TinySpec spec;
    spec.n_vocab = n_vocab;
    auto model = load_model(GgufReader::from_bytes(tiny_model(spec).to_bytes(), "mask.gguf"));
    const Plan plan = plan_build(*model, 64);
    std::mt19937_64 g{uint64_t(n_vocab)};
    for (bool graphs : {true, false}) {
        CudaOptions o;
        o.cache.disk = false;
        o.graphs = graphs;
        CudaBackend gpu(plan, o);
        gpu.set_logits_needed(true);
        int pos = 0;
        for (double density : {0.5, 0.05, 0.0}) {
            for (int trial = 0; trial < 6; ++trial, ++pos) {
                SCOPED_TRACE(::testing::Message() << "graphs " << graphs << " density " << density << " trial " << trial);
                const int32_t token = int32_t(g() % uint64_t(n_vocab));
                const float* l = gpu.decode(token, pos);
                const std::vector<float> logits(l, l + n_vocab);
                const std::vector<uint32_t> mask = random_mask(n_vocab, density, g);
                // draws on odd trials (the host's sampler and counter), the argmax on even ones
                SamplerParams sp = sampler_params(trial % 2 ? 0.9f : 0.0f, 40, 0.95f, 0.0f, uint64_t(trial));
                Sampler host(sp);
                host.skip_draws(uint64_t(trial));
                const DrawParams dp = host.draw_params();
                ASSERT_TRUE(gpu.set_draw(trial % 2 ? &dp : nullptr));
                bool called = false;
                ASSERT_TRUE(gpu.decode_masked(token, pos, [&] {
                    called = true;
                    return mask.data();
                }));
                EXPECT_TRUE(called);
                std::vector<float> masked(static_cast<size_t>(n_vocab));
                gpu.download_slot(Slot::Logits, masked.data(), masked.size());
                std::vector<float> want = logits;
                for (int i = 0; i < n_vocab; ++i) {
                    if (!allowed(mask, i)) want[size_t(i)] = -INFINITY;
                    if (allowed(mask, i))
                        ASSERT_NEAR(masked[size_t(i)], want[size_t(i)], 1e-4f * (1 + std::fabs(want[size_t(i)]))) << i;
                    else
                        ASSERT_TRUE(std::isinf(masked[size_t(i)]) && masked[size_t(i)] < 0) << i;
                }
                EXPECT_EQ(gpu.sampled_token(), host.sample(masked.data(), n_vocab, {}));
                EXPECT_TRUE(allowed(mask, gpu.sampled_token()));
            }
        }
        ASSERT_TRUE(gpu.set_draw(nullptr));
    }
}

INSTANTIATE_TEST_SUITE_P(Vocab, MaskedDecode, ::testing::Values(1003, 32000),
                         [](const auto& info) { return "vocab" + std::to_string(info.param); });

}  // namespace
