// SequenceBatch (the server's batched steps) with per-row device draws: each logits row's pick is
// drawn on the device with its own sampler parameters where the backend can (SeqStep::draw,
// `drawn`), the others take the argmax or a host draw from copied logits. Every device draw must
// be the token the host sampler draws from the same row's logits with the same counter. On the
// CPU no row is drawn on the device (batch_draw_max_k() = 0) and every pick comes from the host.
// The bundled stories260K model on the test backend (JITLLM_TEST_BACKEND).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures/engine_factory.h"
#include "fixtures/test_support.h"
#include "runtime/sampler.h"
#include "runtime/slots.h"

namespace jitllm {
namespace {

TEST(SequenceBatchDraw, DeviceDrawsPerRowAreTheHostSamplersTokens) {
    SequenceBatchOptions o;
    o.model_path = test::source_dir() + "/models/stories260K.gguf";
    o.n_seq = 4;
    o.n_ctx = 128;
    test::use_test_backend(o);
    SequenceBatch b(o);
    const int nv = b.n_vocab();
    const int max_k = b.batch_draw_max_k();
    EXPECT_EQ(max_k > 0, o.gpu);
    // one row each: drawn (k 40, top-p 0.9), drawn (k 5, min-p 0.05, hot), greedy, top-k 0 (a
    // host draw: the device takes at most max_k)
    const std::vector<SamplerParams> ps = {test::sampler_params(0.8f, 40, 0.9f, 0.0f, 11), test::sampler_params(1.5f, 5, 1.0f, 0.05f, 12),
                                           test::sampler_params(0.0f, 40, 1.0f, 0.0f, 13), test::sampler_params(0.9f, 0, 0.95f, 0.0f, 14)};
    std::vector<Sampler> dev, ref;
    for (const auto& p : ps) dev.emplace_back(p), ref.emplace_back(p);
    const std::vector<int32_t> prompt = b.tokenizer().encode("Once upon a time, there was", true, false);
    std::vector<int32_t> next(ps.size());
    std::vector<int> pos(ps.size(), 0);
    int device_draws = 0;
    for (int step = 0; step < 24; ++step) {
        SCOPED_TRACE(step);
        std::vector<SeqStep> steps(ps.size());
        for (size_t i = 0; i < ps.size(); ++i) {
            SeqStep& st = steps[i];
            st.seq = int(i);
            st.tokens = step == 0 ? prompt : std::vector<int32_t>{next[i]};
            st.pos = pos[i];
            // the logits come back for every row here, so the host can check the device's draws
            st.host_logits = true;
            if (!dev[i].plain_greedy() && dev[i].device_drawable(nv, max_k)) st.draw = dev[i].draw_params();
        }
        b.run(steps);
        for (size_t i = 0; i < ps.size(); ++i) {
            SCOPED_TRACE(i);
            const SeqStep& st = steps[i];
            ASSERT_NE(st.logits, nullptr);
            std::vector<int32_t> history;
            const int32_t want = ref[i].sample(st.logits, nv, history);
            const bool drawable = o.gpu && (i == 0 || i == 1);
            EXPECT_EQ(st.drawn, drawable);
            int32_t got = st.argmax;
            if (st.drawn) {
                dev[i].skip_draws(1);
                ++device_draws;
            } else if (!dev[i].plain_greedy()) {
                got = dev[i].sample(st.logits, nv, history);
            }
            EXPECT_EQ(got, want);
            pos[i] += int(st.tokens.size());
            next[i] = got;
        }
    }
    EXPECT_EQ(device_draws, o.gpu ? 48 : 0);
    // without host_logits the drawn and greedy rows leave their logits on the device
    std::vector<SeqStep> steps(2);
    for (size_t i = 0; i < 2; ++i) {
        steps[i].seq = int(i);
        steps[i].tokens = {next[i]};
        steps[i].pos = pos[i];
        steps[i].host_logits = false;
    }
    steps[0].draw = dev[0].draw_params();
    b.run(steps);
    EXPECT_EQ(steps[0].drawn, o.gpu);
    if (o.gpu) {
        EXPECT_EQ(steps[0].logits, nullptr);
        EXPECT_EQ(steps[1].logits, nullptr);
    } else {
        EXPECT_NE(steps[0].logits, nullptr);  // a host draw needs them
    }
    EXPECT_GE(steps[1].argmax, 0);
}

}  // namespace
}  // namespace jitllm
