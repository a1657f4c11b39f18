// generate()'s greedy path, which queues each decode step one ahead of the pick the host reads
// (Engine::queue_decode / collect_decode), against greedy decode fed one token at a time
// (Engine::feed + the backend's pick): the same picks, and only picks that fed a step cached.
// The bundled stories260K model on the test backend (CPU by default).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures/engine_factory.h"
#include "fixtures/test_support.h"
#include "runtime/generate.h"
#include "core/error.h"
#include "runtime/sampler.h"

namespace jitllm {
namespace {

std::string bundled_model() { return test::source_dir() + "/models/stories260K.gguf"; }

std::vector<int32_t> prompt_ids(Engine& e) { return e.tokenizer().encode("Once upon a time, a little", true, false); }

// Greedy picks fed one at a time: pick 0 after the prompt, pick i + 1 after feeding pick i.
std::vector<int32_t> stepwise_picks(Engine& e, int n) {
    e.reset();
    e.feed(prompt_ids(e));
    std::vector<int32_t> picks;
    for (int i = 0; i < n; ++i) {
        picks.push_back(e.backend().sampled_token());
        e.feed({picks.back()});
    }
    return picks;
}

Sampler greedy() {
    SamplerParams p;
    p.temperature = 0.0f;
    return Sampler(p);
}

TEST(GenerateGreedy, QueuedStepsGiveTheStepwisePicks) {
    auto e = test::make_engine(bundled_model(), 256);
    e->backend().set_logits_needed(false);
    const std::vector<int32_t> ref = stepwise_picks(*e, 40);
    const int n_prompt = int(prompt_ids(*e).size());
    for (int n : {1, 2, 3, 17, 40}) {
        SCOPED_TRACE(n);
        e->reset();
        const float* logits = e->feed(prompt_ids(*e));
        std::vector<int32_t> history = prompt_ids(*e);
        Sampler s = greedy();
        const GenerateResult r = generate(*e, s, logits, history, n, nullptr);
        ASSERT_FALSE(r.stopped_at_eog);  // stories260K runs on past 40 tokens from this prompt
        EXPECT_EQ(r.ids, std::vector<int32_t>(ref.begin(), ref.begin() + n));
        EXPECT_EQ(e->pos(), n_prompt + n - 1);  // the last pick fed no step
        EXPECT_EQ(e->queued(), 0);
        EXPECT_EQ(int(history.size()), n_prompt + n);
    }
}

TEST(GenerateGreedy, StopFromTheCallbackKeepsTheCacheConsistent) {
    auto e = test::make_engine(bundled_model(), 256);
    e->backend().set_logits_needed(false);
    const std::vector<int32_t> ref = stepwise_picks(*e, 30);
    const int n_prompt = int(prompt_ids(*e).size());
    e->reset();
    const float* logits = e->feed(prompt_ids(*e));
    std::vector<int32_t> history = prompt_ids(*e);
    Sampler s = greedy();
    int texts = 0;
    const GenerateResult r = generate(*e, s, logits, history, 30, [&](const std::string&) { return ++texts < 5; });
    ASSERT_GE(r.ids.size(), 5u);
    ASSERT_LT(r.ids.size(), 30u);
    EXPECT_EQ(r.ids, std::vector<int32_t>(ref.begin(), ref.begin() + long(r.ids.size())));
    // the step queued ahead (fed by the last pick) was dropped: the cache holds the prompt and
    // the picks before the last, so feeding the last continues the stepwise run exactly
    EXPECT_EQ(e->pos(), n_prompt + int(r.ids.size()) - 1);
    e->feed({r.ids.back()});
    EXPECT_EQ(e->backend().sampled_token(), ref[r.ids.size()]);
}

TEST(EngineQueue, PicksInOrderAndDroppedPositionsAreRewritten) {
    auto e = test::make_engine(bundled_model(), 256);
    e->backend().set_logits_needed(false);
    const std::vector<int32_t> ref = stepwise_picks(*e, 6);
    const int n_prompt = int(prompt_ids(*e).size());
    e->reset();
    e->feed(prompt_ids(*e));
    e->queue_decode(ref[0]);  // a host token
    e->queue_decode(-1);      // fed by the previous step's pick
    e->queue_decode(-1);
    EXPECT_EQ(e->queued(), 3);
    EXPECT_EQ(e->pos(), n_prompt + 3);
    EXPECT_EQ(e->collect_decode(), ref[1]);
    EXPECT_EQ(e->collect_decode(), ref[2]);
    EXPECT_EQ(e->collect_decode(), ref[3]);
    EXPECT_EQ(e->backend().sampled_token(), ref[3]);
    // give back the last step (fed by ref[2]) and feed ref[2] again at its position
    e->drop_position();
    EXPECT_EQ(e->pos(), n_prompt + 2);
    e->feed({ref[2]});
    EXPECT_EQ(e->backend().sampled_token(), ref[3]);
    e->feed({ref[3]});
    EXPECT_EQ(e->backend().sampled_token(), ref[4]);
    // at the end of the context a queued step is refused
    auto small = test::make_engine(bundled_model(), 8);
    small->feed(std::vector<int32_t>(7, ref[0]));
    small->queue_decode(-1);
    EXPECT_THROW(small->queue_decode(-1), Error);
    small->collect_decode();
}

// Sampled generation: with sample.draw=device (the GPU's default) the picks after the first are
// drawn on the device and the steps run ahead; the tokens equal the host sampler's (the same
// engine with sample.draw=host: logits copied back, sampled here), for several filters and
// seeds, and a second call continues the draw counter. On the CPU both engines sample on the host.
TEST(GenerateSampled, DeviceDrawsGiveTheHostSamplersTokens) {
    auto dev = test::make_engine(bundled_model(), 256);
    auto host = test::make_engine(bundled_model(), 256,
                                  [](EngineOptions& o) { o.cuda.schedule.force["sample.draw"] = "host"; });
    if (test::backend_is_gpu()) {
        EXPECT_EQ(dev->backend().draw_max_k(), 64);
    }
    EXPECT_EQ(host->backend().draw_max_k(), 0);
    struct P {
        float t, p, min_p;
        int k;
        uint64_t seed;
    };
    for (const P& q : {P{0.8f, 0.95f, 0.05f, 40, 1}, P{1.2f, 1.0f, 0.0f, 64, 2}, P{0.5f, 0.7f, 0.0f, 10, 3},
                       P{1.0f, 1.0f, 0.1f, 20, 4}}) {
        SCOPED_TRACE(::testing::Message() << "T " << q.t << " top-k " << q.k << " seed " << q.seed);
        SamplerParams sp;
        sp.temperature = q.t;
        sp.top_p = q.p;
        sp.min_p = q.min_p;
        sp.top_k = q.k;
        sp.seed = q.seed;
        std::vector<int32_t> got[2];
        uint64_t draws[2] = {0, 0};
        for (int side = 0; side < 2; ++side) {
            Engine& e = side == 0 ? *dev : *host;
            e.backend().set_logits_needed(true);
            e.reset();
            const float* logits = e.feed(prompt_ids(e));
            std::vector<int32_t> history = prompt_ids(e);
            Sampler s(sp);
            GenerateResult r = generate(e, s, logits, history, 24, nullptr);
            got[side] = r.ids;
            if (!r.stopped_at_eog && !r.ids.empty()) {  // continue: the counter carries over
                logits = e.feed({r.ids.back()});
                r = generate(e, s, logits, history, 16, nullptr);
                got[side].insert(got[side].end(), r.ids.begin(), r.ids.end());
            }
            draws[side] = s.draws();
            EXPECT_EQ(e.queued(), 0);
        }
        EXPECT_EQ(got[0], got[1]);
        EXPECT_EQ(draws[0], draws[1]);
        EXPECT_GE(got[0].size(), 10u);
    }
}

}  // namespace
}  // namespace jitllm
