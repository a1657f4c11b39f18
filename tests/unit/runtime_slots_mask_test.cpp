// SequenceBatch steps with a token mask (SeqStep::mask, the server's constrained output): a lone
// sequence on a backend that takes masks picks among the mask's tokens on the device (`masked`,
// the mask built while the step runs); elsewhere (the CPU, OpenCL, a batch step of several
// sequences) the step's logits come to the host and no device draw is made, so the caller masks
// and picks. Either way the pick the caller ends with is the best allowed token of the same logits,
// and a step queued ahead is not taken for a masked step.
// The bundled stories260K model on the test backend (JITLLM_TEST_BACKEND).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fixtures/engine_factory.h"
#include "fixtures/test_support.h"
#include "runtime/slots.h"

namespace jitllm {
namespace {

constexpr int kCtx = 128;

bool cuda() { return test::backend_is_gpu() && !test::backend_is_opencl(); }

SequenceBatchOptions options(int n_seq, int run_ahead = -1) {
    SequenceBatchOptions o;
    o.model_path = test::source_dir() + "/models/stories260K.gguf";
    o.n_seq = n_seq;
    o.n_ctx = kCtx;
    test::use_test_backend(o);
    o.run_ahead = run_ahead;
    return o;
}

// Every `stride`-th token from `first` (bits over the vocabulary).
std::vector<uint32_t> every(int n_vocab, int first, int stride) {
    std::vector<uint32_t> w(size_t(n_vocab + 31) / 32, 0u);
    for (int t = first; t < n_vocab; t += stride) w[size_t(t) / 32] |= 1u << (t % 32);
    return w;
}

bool allowed(const std::vector<uint32_t>& w, int32_t t) { return t >= 0 && (w[size_t(t) / 32] >> (t % 32)) & 1u; }

// The best allowed token of `logits` (the lowest id among equals, as the argmax kernels).
int32_t best_allowed(const float* logits, int n_vocab, const std::vector<uint32_t>& w) {
    int32_t best = -1;
    for (int t = 0; t < n_vocab; ++t)
        if (allowed(w, t) && (best < 0 || logits[t] > logits[best])) best = t;
    return best;
}

// The pick the caller ends with for a masked step: the device's, or the best allowed of the logits.
int32_t pick(const SeqStep& s, int n_vocab, const std::vector<uint32_t>& w) {
    if (s.masked) return s.argmax;
    EXPECT_NE(s.logits, nullptr) << "an unmasked step of a mask must bring the logits";
    EXPECT_FALSE(s.drawn) << "no device draw for a mask the device did not apply";
    return s.logits ? best_allowed(s.logits, n_vocab, w) : -1;
}

SeqStep step(int seq, std::vector<int32_t> tokens, int pos) {
    SeqStep st;
    st.seq = seq;
    st.tokens = std::move(tokens);
    st.pos = pos;
    st.host_logits = false;
    return st;
}

TEST(SequenceBatchMask, ALoneSequencesPickKeepsToTheMask) {
    SequenceBatch b(options(1));
    const int nv = b.n_vocab();
    const std::vector<int32_t> p = b.tokenizer().encode("Once upon a time, there was", true, false);
    ASSERT_EQ(b.begin(0, p, kCtx), 0);
    // the reference: the same steps with the logits on the host
    SequenceBatch ref(options(1, 0));
    ASSERT_EQ(ref.begin(0, p, kCtx), 0);
    std::vector<SeqStep> s = {step(0, p, 0)}, r = {step(0, p, 0)};
    r[0].host_logits = true;
    b.run(s);
    ref.run(r);
    int32_t next = s[0].argmax;
    ASSERT_EQ(next, r[0].argmax);
    int calls = 0;
    for (int i = 0; i < 12; ++i) {
        const std::vector<uint32_t> w = every(nv, i % 5, 3 + i % 4);
        const int pos = int(p.size()) + i;
        s = {step(0, {next}, pos)};
        s[0].mask = [&] {
            ++calls;
            return static_cast<const uint32_t*>(w.data());
        };
        r = {step(0, {next}, pos)};
        r[0].host_logits = true;
        b.run(s);
        ref.run(r);
        const int32_t got = pick(s[0], nv, w);
        EXPECT_TRUE(allowed(w, got)) << "step " << i << ": token " << got;
        EXPECT_EQ(got, best_allowed(r[0].logits, nv, w)) << "step " << i;
        EXPECT_EQ(s[0].masked, cuda());
        next = got;
    }
    // CUDA takes the masks, each step's called once; the CPU and OpenCL none (the logits came)
    EXPECT_EQ(calls, cuda() ? 12 : 0);
}

TEST(SequenceBatchMask, BatchStepsBringTheLogitsAndDrawNothing) {
    SequenceBatch b(options(2));
    const int nv = b.n_vocab();
    const std::vector<int32_t> p0 = b.tokenizer().encode("Tom had a big red ball.", true, false);
    const std::vector<int32_t> p1 = b.tokenizer().encode("The dog ran to the park and", true, false);
    ASSERT_EQ(b.begin(0, p0, kCtx), 0);
    ASSERT_EQ(b.begin(1, p1, kCtx), 0);
    std::vector<SeqStep> s = {step(0, p0, 0), step(1, p1, 0)};
    b.run(s);
    const std::vector<uint32_t> w = every(nv, 1, 2);
    int calls = 0;
    std::vector<int32_t> next = {s[0].argmax, s[1].argmax};
    for (int i = 0; i < 4; ++i) {
        s = {step(0, {next[0]}, int(p0.size()) + i), step(1, {next[1]}, int(p1.size()) + i)};
        for (auto& st : s) {
            st.mask = [&] {
                ++calls;
                return static_cast<const uint32_t*>(w.data());
            };
            st.draw.temperature = 0.8f;  // (a draw the device could make, not for a mask it did not apply)
            st.draw.top_k = 8;
            st.draw.seed = 5;
        }
        b.run(s);
        for (size_t q = 0; q < 2; ++q) {
            EXPECT_FALSE(s[q].masked);
            next[q] = pick(s[q], nv, w);
            EXPECT_TRUE(allowed(w, next[q]));
        }
    }
    EXPECT_EQ(calls, 0);
}

TEST(SequenceBatchMask, AStepQueuedAheadIsNotTakenForAMaskedStep) {
    SequenceBatch b(options(1, 1));
    const int nv = b.n_vocab();
    const std::vector<int32_t> p = b.tokenizer().encode("Once upon a time, there was", true, false);
    ASSERT_EQ(b.begin(0, p, kCtx), 0);
    std::vector<SeqStep> s = {step(0, p, 0)};
    b.run(s);
    s = {step(0, {s[0].argmax}, int(p.size()))};
    s[0].ahead = true;
    b.run(s);  // queues the step at p.size() + 1, fed by this pick
    const std::vector<uint32_t> w = every(nv, 2, 5);
    SequenceBatch ref(options(1, 0));
    ASSERT_EQ(ref.begin(0, p, kCtx), 0);
    std::vector<SeqStep> r = {step(0, p, 0)};
    ref.run(r);
    r = {step(0, {r[0].argmax}, int(p.size()))};
    ref.run(r);
    ASSERT_EQ(r[0].argmax, s[0].argmax);
    s = {step(0, {s[0].argmax}, int(p.size()) + 1)};
    s[0].mask = [&] { return static_cast<const uint32_t*>(w.data()); };
    b.run(s);
    EXPECT_EQ(b.ahead_dropped(), 1u);
    r = {step(0, {r[0].argmax}, int(p.size()) + 1)};
    r[0].host_logits = true;
    ref.run(r);
    EXPECT_EQ(pick(s[0], nv, w), best_allowed(r[0].logits, nv, w));
}

}  // namespace
}  // namespace jitllm
