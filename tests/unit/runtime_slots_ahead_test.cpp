// SequenceBatch's run-ahead (SeqStep::ahead): a lone sequence's next decode step is queued on the
// backend, fed by the pick on the device, before run() returns; the caller's next step takes it
// when it is exactly that step, and anything else (another token, a second sequence, a reset, a
// step without the hint) discards it first. Whatever the caller does, the tokens must be those of
// the same steps run one at a time, no position written ahead may be read before it is written
// again, and no block may leak. On the CPU a queued step runs at once (run_ahead = 1 forces the
// code path); on a GPU (JITLLM_TEST_BACKEND=cuda) and on OpenCL (ctest -L opencl: PoCL in CI) the
// steps are queued without waiting, fed by the pick on the device.
// The bundled stories260K model on the test backend (JITLLM_TEST_BACKEND).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures/engine_factory.h"
#include "fixtures/test_support.h"
#include "runtime/slots.h"

namespace jitllm {
namespace {

constexpr int kCtx = 128;

std::string model_path() { return test::source_dir() + "/models/stories260K.gguf"; }

SequenceBatchOptions options(int n_seq, int run_ahead, int64_t pool_tokens = 0) {
    SequenceBatchOptions o;
    o.model_path = model_path();
    o.n_seq = n_seq;
    o.n_ctx = kCtx;
    o.kv_pool_tokens = test::backend_is_opencl() ? 0 : pool_tokens;  // (a fixed layout there: no pool size)
    test::use_test_backend(o);
    o.run_ahead = run_ahead;
    return o;
}

std::vector<int32_t> encode(const SequenceBatch& b, const std::string& text) {
    return b.tokenizer().encode(text, true, false);
}

// One step of sequence `seq`: `tokens` at `pos`, the pick wanted, no host logits.
SeqStep step(int seq, std::vector<int32_t> tokens, int pos, bool ahead) {
    SeqStep st;
    st.seq = seq;
    st.tokens = std::move(tokens);
    st.pos = pos;
    st.host_logits = false;
    st.ahead = ahead;
    return st;
}

// How generate() drives a sequence: picks fed back except those `forced` (generated index ->
// token: a caller feeding another token than the pick, so the step queued ahead must not be
// taken), begin()'s promise, and whether the last step too has the hint.
struct Drive {
    std::vector<std::pair<int, int32_t>> forced;
    int reserve = kCtx;
    bool hint_last = false;
};

// Runs sequence 0 of b alone for n_gen picks, the hint on every step but the last, feeding each
// pick (or the forced one) back; returns the tokens fed. The prompt's body first, then its last
// token alone: a one-token step, which may run ahead from the start.
std::vector<int32_t> generate(SequenceBatch& b, const std::vector<int32_t>& prompt, int n_gen, const Drive& d = {}) {
    EXPECT_EQ(b.begin(0, prompt, d.reserve), 0);
    std::vector<SeqStep> s = {step(0, {prompt.begin(), prompt.end() - 1}, 0, false)};
    s[0].want_logits = false;
    b.run(s);
    int pos = int(prompt.size()) - 1;
    std::vector<int32_t> out;
    for (int i = 0; i < n_gen; ++i) {
        s = {step(0, {i == 0 ? prompt.back() : out.back()}, pos++, i + 1 < n_gen || d.hint_last)};
        b.run(s);
        int32_t next = s[0].argmax;
        for (const auto& [at, t] : d.forced)
            if (at == i) next = t;
        out.push_back(next);
    }
    return out;
}

// The same steps run one at a time (no step queued ahead): the reference.
std::vector<int32_t> reference(const std::vector<int32_t>& prompt, int n_gen, const Drive& d = {}) {
    SequenceBatch b(options(1, 0));
    std::vector<int32_t> out = generate(b, prompt, n_gen, d);
    EXPECT_EQ(b.ahead_calls(), 0u);
    return out;
}

TEST(SequenceBatchAhead, ALoneSequenceGivesTheTokensOfOneStepAtATime) {
    SequenceBatch b(options(2, 1));
    const std::vector<int32_t> p = encode(b, "Once upon a time, there was a little girl named Lily. She loved to play");
    const int n_gen = 40;
    const uint64_t decodes = b.decode_calls();
    EXPECT_EQ(generate(b, p, n_gen), reference(p, n_gen));
    // every pick but the first was queued ahead and taken; the step after the last was never queued
    EXPECT_EQ(b.decode_calls() - decodes, uint64_t(n_gen));
    EXPECT_EQ(b.ahead_calls(), uint64_t(n_gen - 1));
    EXPECT_EQ(b.ahead_dropped(), 0u);
    b.reset(0);
    EXPECT_EQ(b.kv_stats().used, 0);
}

TEST(SequenceBatchAhead, AnotherTokenThanThePickDiscardsTheQueuedStep) {
    SequenceBatch b(options(1, 1));
    const std::vector<int32_t> p = encode(b, "The dog ran to the park and");
    Drive d;
    d.forced = {{3, encode(b, "cat").back()}, {9, 13}};
    const int n_gen = 24;
    const std::vector<int32_t> got = generate(b, p, n_gen, d);
    EXPECT_EQ(got, reference(p, n_gen, d));
    EXPECT_EQ(got[3], d.forced[0].second);
    EXPECT_EQ(b.ahead_calls(), uint64_t(n_gen - 1 - 2));  // the steps after the two forced tokens ran anew
    EXPECT_EQ(b.ahead_dropped(), 2u);
    b.reset(0);
    EXPECT_EQ(b.kv_stats().used, 0);
}

TEST(SequenceBatchAhead, ASecondSequenceOrAResetDiscardsTheQueuedStep) {
    SequenceBatch b(options(2, 1));
    const std::vector<int32_t> p0 = encode(b, "Once upon a time, there was a little girl named Lily. She loved to play");
    const std::vector<int32_t> p1 = encode(b, "Tom had a big red ball.");
    const int n_gen = 20, join = 6;
    const std::vector<int32_t> want0 = reference(p0, n_gen), want1 = reference(p1, n_gen - join);
    // sequence 0 alone (a step queued ahead after each), sequence 1 joins at pick `join`: both run
    // as batch steps from there, sequence 0's queued step discarded
    ASSERT_EQ(b.begin(0, p0, kCtx), 0);
    std::vector<SeqStep> s = {step(0, p0, 0, false)};
    b.run(s);
    std::vector<int32_t> got0 = {s[0].argmax}, got1;
    int pos0 = int(p0.size());
    for (int i = 1; i < join; ++i) {
        s = {step(0, {got0.back()}, pos0++, true)};
        b.run(s);
        got0.push_back(s[0].argmax);
    }
    EXPECT_GE(b.ahead_calls(), uint64_t(join - 2));
    ASSERT_EQ(b.begin(1, p1, kCtx), 0);
    s = {step(0, {got0.back()}, pos0++, true), step(1, p1, 0, true)};
    int pos1 = int(p1.size());
    for (int i = join; i < n_gen; ++i) {
        b.run(s);
        got0.push_back(s[0].argmax);
        got1.push_back(s[1].argmax);
        s = {step(0, {got0.back()}, pos0++, true), step(1, {got1.back()}, pos1++, true)};
    }
    EXPECT_EQ(got0, want0);
    EXPECT_EQ(got1, want1);
    b.reset(0);
    b.reset(1);
    EXPECT_EQ(b.kv_stats().used, 0);
    // a reset while a step is queued ahead: the sequence's next prompt gives its own tokens
    EXPECT_EQ(generate(b, p1, 5), reference(p1, 5));
    b.reset(0);  // (its last step had no hint: nothing queued)
    ASSERT_EQ(b.begin(0, p0, kCtx), 0);
    s = {step(0, p0, 0, false)};
    b.run(s);
    s = {step(0, {s[0].argmax}, int(p0.size()), true)};
    b.run(s);  // queues the step at p0.size() + 1
    EXPECT_EQ(b.ahead_dropped(), 1u);  // (the one queued when sequence 1 joined)
    b.reset(0);
    EXPECT_EQ(b.ahead_dropped(), 2u);
    EXPECT_EQ(b.kv_stats().used, 0);  // the block of the position written ahead went back too
    EXPECT_EQ(generate(b, p1, 12), reference(p1, 12));
    b.reset(0);
    EXPECT_EQ(b.kv_stats().used, 0);
}

TEST(SequenceBatchAhead, NoStepQueuedPastTheContext) {
    // the hint on the step at the context's last position: no step queued at n_ctx
    SequenceBatch b(options(1, 1, kCtx));
    const std::vector<int32_t> p = encode(b, "Tom had a big red ball.");
    const int n_gen = kCtx - int(p.size()) + 1;  // the last pick after position kCtx - 1
    Drive d;
    d.hint_last = true;
    EXPECT_EQ(generate(b, p, n_gen, d), reference(p, n_gen));
    EXPECT_EQ(b.ahead_calls(), uint64_t(n_gen - 1));
    EXPECT_EQ(b.kv_stats().used, b.kv_stats().blocks);
    b.reset(0);
    EXPECT_EQ(b.ahead_dropped(), 0u);  // nothing was queued at n_ctx
    EXPECT_EQ(b.kv_stats().used, 0);
}

TEST(SequenceBatchAhead, NoStepQueuedIntoABlockPromisedElsewhere) {
    if (test::backend_is_opencl()) GTEST_SKIP() << "the OpenCL backend keeps every sequence's whole context: no pool";
    // sequence 0 promised two blocks, sequence 1 (admitted, not run) the rest of the pool: the step
    // after sequence 0's last promised position would need a block promised to sequence 1
    const int block = kKvBlockTokens;
    SequenceBatch b(options(2, 1, kCtx));
    const std::vector<int32_t> p0 = encode(b, "Tom had a big red ball.");
    const std::vector<int32_t> p1 = encode(b, "The dog ran to the park and");
    const int blocks = b.kv_stats().blocks;
    ASSERT_EQ(b.begin(1, p1, (blocks - 2) * block), 0);
    Drive d;
    d.reserve = 2 * block;
    d.hint_last = true;
    const int n_gen = 2 * block - int(p0.size()) + 1;  // the last pick after position 2 * block - 1
    EXPECT_EQ(generate(b, p0, n_gen, d), reference(p0, n_gen));
    EXPECT_EQ(b.ahead_calls(), uint64_t(n_gen - 1));
    EXPECT_EQ(b.kv_table(0).size(), 2u);
    b.reset(0);
    EXPECT_EQ(b.ahead_dropped(), 0u);  // nothing was queued at 2 * block
    b.reset(1);
    EXPECT_EQ(b.kv_stats().used, 0);
}

TEST(SequenceBatchAhead, ByDefaultOnlyWhereQueuedStepsRunWithoutWaiting) {
    SequenceBatch b(options(1, -1));
    const std::vector<int32_t> p = encode(b, "The dog ran to the park and");
    const int n_gen = 8;
    EXPECT_EQ(generate(b, p, n_gen), reference(p, n_gen));
    // the CPU runs each step at once (a queued step would only delay the pick); a device queues
    EXPECT_EQ(b.ahead_calls(), test::backend_is_gpu() ? uint64_t(n_gen - 1) : 0u);
}

}  // namespace
}  // namespace jitllm
