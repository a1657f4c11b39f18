// SequenceBatch over the paged KV cache: sequences whose blocks are scattered through the pool
// (taken in turns, and blocks freed by an earlier sequence handed out again with its rows still
// in them) give the same greedy tokens and the same logits, bit for bit, as the single-sequence
// decode of each prompt (the CPU backend; on a GPU: as the same steps with the blocks in order);
// a prompt whose prefix was computed before attaches those blocks, computes only the rest and gives
// the same output; every block goes back to the pool; an empty pool stops a step before it runs.
// The bundled stories260K model on the test backend (JITLLM_TEST_BACKEND).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "fixtures/engine_factory.h"
#include "fixtures/test_support.h"
#include "runtime/slots.h"

namespace jitllm {
namespace {

constexpr int kCtx = 128;

std::string model_path() { return test::source_dir() + "/models/stories260K.gguf"; }

SequenceBatchOptions options(int n_seq, int64_t pool_tokens, int n_threads = 1) {
    SequenceBatchOptions o;
    o.model_path = model_path();
    o.n_threads = n_threads;
    o.n_seq = n_seq;
    o.n_ctx = kCtx;
    o.kv_pool_tokens = pool_tokens;
    test::use_test_backend(o);
    // (the GPU's batch kernels are compared with themselves bit for bit below)
    o.alone_decode = !test::backend_is_gpu();
    return o;
}

// What a sequence produced: its greedy tokens and the logits each was picked from.
struct Output {
    std::vector<int32_t> tokens;
    std::vector<std::vector<float>> logits;
};

// One sequence's job in drive(): its prompt (from `cached`, the positions begin() attached), the
// tokens to generate, and the step it starts at.
struct SeqJob {
    int seq = 0;
    std::vector<int32_t> prompt;
    int n_gen = 0;
    int start = 0;
    int cached = 0;
};

// Steps every job together: prompt chunks of `chunk` tokens, then one token a step, each job from
// its start step; returns each job's output.
std::vector<Output> drive(SequenceBatch& b, const std::vector<SeqJob>& jobs, int chunk) {
    std::vector<Output> out(jobs.size());
    std::vector<int> fed(jobs.size()), pos(jobs.size());
    for (size_t j = 0; j < jobs.size(); ++j) fed[j] = pos[j] = jobs[j].cached;
    for (int step = 0;; ++step) {
        std::vector<SeqStep> steps;
        std::vector<size_t> of;
        for (size_t j = 0; j < jobs.size(); ++j) {
            const SeqJob& jb = jobs[j];
            if (step < jb.start || int(out[j].tokens.size()) == jb.n_gen) continue;
            SeqStep st;
            st.seq = jb.seq;
            st.pos = pos[j];
            if (fed[j] < int(jb.prompt.size())) {
                const int n = std::min(chunk, int(jb.prompt.size()) - fed[j]);
                st.tokens.assign(jb.prompt.begin() + fed[j], jb.prompt.begin() + fed[j] + n);
                st.want_logits = fed[j] + n == int(jb.prompt.size());
                fed[j] += n;
            } else {
                st.tokens = {out[j].tokens.back()};
            }
            pos[j] += int(st.tokens.size());
            steps.push_back(st);
            of.push_back(j);
        }
        if (steps.empty()) break;
        b.run(steps);
        for (size_t i = 0; i < steps.size(); ++i) {
            if (!steps[i].want_logits) continue;
            Output& o = out[of[i]];
            o.tokens.push_back(steps[i].argmax);
            o.logits.emplace_back(steps[i].logits, steps[i].logits + b.n_vocab());
        }
    }
    return out;
}

// The single-sequence decode of a prompt (the CPU's reference for every batched row).
Output decode_alone(const std::vector<int32_t>& prompt, int n_gen) {
    auto e = test::make_engine(model_path(), kCtx);
    Output o;
    const float* l = e->feed(prompt);
    const int nv = e->model().config.n_vocab;
    for (int i = 0; i < n_gen; ++i) {
        o.logits.emplace_back(l, l + nv);
        o.tokens.push_back(e->backend().sampled_token());
        if (i + 1 < n_gen) l = e->feed({o.tokens.back()});
    }
    return o;
}

void expect_same(const Output& got, const Output& want) {
    ASSERT_EQ(got.tokens, want.tokens);
    ASSERT_EQ(got.logits.size(), want.logits.size());
    for (size_t i = 0; i < got.logits.size(); ++i)
        EXPECT_EQ(std::memcmp(got.logits[i].data(), want.logits[i].data(), got.logits[i].size() * 4), 0)
            << "logits of generated token " << i;
}

std::vector<int32_t> encode(const SequenceBatch& b, const std::string& text) { return b.tokenizer().encode(text, true, false); }

bool consecutive(const std::vector<int32_t>& t) {
    for (size_t i = 1; i < t.size(); ++i)
        if (t[i] != t[i - 1] + 1) return false;
    return true;
}

// n_threads 2: the CPU's fast path runs a step's rows on two threads at once, each gathering the
// scattered rows of its own sequence
void scattered_blocks(int n_threads) {
    SequenceBatch b(options(3, kCtx, n_threads));  // 8 blocks of 16 for 3 sequences of up to 128 positions
    EXPECT_EQ(b.kv_pool_tokens(), kCtx);
    const std::vector<int32_t> p0 = encode(b, "Once upon a time, there was a little girl named Lily. She loved to play");
    const std::vector<int32_t> p1 = encode(b, "The dog ran to the park and");
    const std::vector<int32_t> p2 = encode(b, "Tom had a big red ball.");
    // a sequence that leaves its rows behind in 3 blocks, then goes: the others take them again
    {
        std::vector<SeqJob> scratch = {{0, encode(b, "One day, a cat and a bird went to the river to drink water."), 30, 0, 0}};
        drive(b, scratch, 7);
        EXPECT_GE(b.kv_stats().used, 3);
        b.reset(0);
        EXPECT_EQ(b.kv_stats().used, 0);
    }
    const int n_gen = 14;
    const std::vector<SeqJob> jobs = {{0, p0, n_gen, 0, 0}, {1, p1, n_gen, 1, 0}, {2, p2, n_gen, 3, 0}};
    const std::vector<Output> got = drive(b, jobs, 5);
    // the blocks were taken in turns: at least one sequence's are not in pool order
    EXPECT_FALSE(consecutive(b.kv_table(0)) && consecutive(b.kv_table(1)) && consecutive(b.kv_table(2)));
    if (!test::backend_is_gpu()) {
        for (size_t j = 0; j < jobs.size(); ++j) {
            SCOPED_TRACE(j);
            expect_same(got[j], decode_alone(jobs[j].prompt, n_gen));
        }
    } else {
        // the GPU's batch kernels against themselves with the blocks laid out otherwise
        SequenceBatch ordered(options(3, 0));
        const std::vector<SeqJob> alone = {{0, p0, n_gen, 0, 0}, {1, p1, n_gen, 1, 0}, {2, p2, n_gen, 3, 0}};
        const std::vector<Output> want = drive(ordered, alone, 5);
        for (size_t j = 0; j < jobs.size(); ++j) expect_same(got[j], want[j]);
    }
    for (int s = 0; s < 3; ++s) b.reset(s);
    EXPECT_EQ(b.kv_stats().used, 0);  // no block leaked
}

TEST(SequenceBatchPaged, ScatteredBlocksGiveTheSingleSequenceDecode) { scattered_blocks(1); }

TEST(SequenceBatchPaged, ScatteredBlocksOnTwoThreads) {
    for (int round = 0; round < 20; ++round) scattered_blocks(2);
}

TEST(SequenceBatchPaged, ALoneSequenceDecodesThroughTheDecodePhase) {
    SequenceBatchOptions o = options(2, 0);
    o.alone_decode = true;
    SequenceBatch b(o);
    const int n_gen = 12;
    // two sequences' blocks left behind first: scattered free and cached blocks, and sequence 0's
    // block table in the backend not the identity
    {
        std::vector<SeqJob> scratch = {{1, encode(b, "One day, a cat and a bird went to the river to drink water."), 30, 0, 0},
                                       {0, encode(b, "Tom had a big red ball."), 30, 1, 0}};
        drive(b, scratch, 7);
        EXPECT_FALSE(consecutive(b.kv_table(0)) && b.kv_table(0).front() == 0);
        b.reset(0);
        b.reset(1);
    }
    const std::vector<int32_t> p0 = encode(b, "Once upon a time, there was a little girl named Lily. She loved to play");
    const uint64_t decodes = b.decode_calls();
    const std::vector<SeqJob> one = {{1, p0, n_gen, 0, 0}};
    const Output got = drive(b, one, 200)[0];
    // alone: blocks 0, 1, 2... and every step after the prompt's through the decode phase
    EXPECT_EQ(b.kv_table(1).front(), 0);
    EXPECT_TRUE(consecutive(b.kv_table(1)));
    EXPECT_EQ(b.decode_calls() - decodes, uint64_t(n_gen - 1));
    const Output want = decode_alone(p0, n_gen);
    if (!test::backend_is_gpu()) expect_same(got, want);
    else EXPECT_EQ(got.tokens, want.tokens);
    b.reset(1);
    // two sequences in step: batch steps only
    const std::vector<int32_t> p1 = encode(b, "The dog ran to the park and");
    const uint64_t before = b.decode_calls();
    const std::vector<SeqJob> jobs = {{0, p0, n_gen, 0, 0}, {1, p1, n_gen, 0, 0}};
    const std::vector<Output> two = drive(b, jobs, 200);
    EXPECT_EQ(b.decode_calls(), before);
    if (!test::backend_is_gpu()) {
        expect_same(two[0], want);
        expect_same(two[1], decode_alone(p1, n_gen));
    }
    b.reset(0);
    b.reset(1);
    EXPECT_EQ(b.kv_stats().used, 0);
}

TEST(SequenceBatchPaged, SharedPromptPrefixIsAttachedNotComputed) {
    SequenceBatch b(options(2, 0));
    const std::string system = "You are a friendly storyteller. Tell short, happy stories about animals and kids. ";
    const std::vector<int32_t> a = encode(b, system + "Tell me about a cat.");
    const std::vector<int32_t> c = encode(b, system + "Tell me about a big dog.");
    size_t common = 0;
    while (common < a.size() && common < c.size() && a[common] == c[common]) ++common;
    ASSERT_GE(common, size_t(2 * kKvBlockTokens));
    const int n_gen = 10;
    ASSERT_EQ(b.begin(0, a, int(a.size()) + n_gen), 0);  // nothing computed yet
    const Output first = drive(b, {{0, a, n_gen, 0, 0}}, 16)[0];
    const int want_cached = int(std::min(common, c.size() - 1)) / kKvBlockTokens * kKvBlockTokens;
    // while the first sequence still holds its blocks
    const int cached = b.begin(1, c, int(c.size()) + n_gen);
    EXPECT_EQ(cached, want_cached);
    const Output second = drive(b, {{1, c, n_gen, 0, cached}}, 16)[0];
    EXPECT_EQ(b.kv_stats().reused_tokens, uint64_t(want_cached));
    // after both ended: the prefix stays cached and is attached again
    b.reset(0);
    b.reset(1);
    EXPECT_EQ(b.kv_stats().used, 0);
    EXPECT_GT(b.kv_stats().cached, 0);
    EXPECT_EQ(b.begin(1, c, int(c.size()) + n_gen), want_cached);
    const Output again = drive(b, {{1, c, n_gen, 0, want_cached}}, 16)[0];
    b.reset(1);
    EXPECT_EQ(b.kv_stats().used, 0);
    expect_same(again, second);
    if (!test::backend_is_gpu()) {
        expect_same(first, decode_alone(a, n_gen));
        expect_same(second, decode_alone(c, n_gen));
    }
}

TEST(SequenceBatchPaged, DecodeAndPromptChunksShareOneBackendStep) {
    SequenceBatchOptions o = options(3, 0);
    o.batch_rows = 16;
    SequenceBatch b(o);
    const int R = b.plan().batch_rows;
    const std::vector<int32_t> p = encode(b, "Once upon a time");
    std::vector<SeqStep> steps(1);
    steps[0].seq = 0, steps[0].tokens = p;
    b.run(steps);
    EXPECT_EQ(b.batch_calls(), 1u);  // a prompt alone: its body and its last token's logits together
    // sequence 0 decodes while sequence 1's prompt chunk enters (no logits) and sequence 2's ends
    std::vector<int32_t> chunk(size_t(R - 4), 5), tail = {7, 8, 9};
    steps.resize(3);
    steps[0].tokens = {steps[0].argmax}, steps[0].pos = int(p.size());
    steps[1].seq = 1, steps[1].tokens = chunk, steps[1].want_logits = false;
    steps[2].seq = 2, steps[2].tokens = tail;
    b.run(steps);
    EXPECT_EQ(b.batch_calls(), 2u);  // 1 + (R - 4) + 3 rows: one backend step
    EXPECT_GE(steps[0].argmax, 0);
    EXPECT_GE(steps[2].argmax, 0);
    // one row more than a step holds: the earliest prompt rows go first, in a step of their own
    steps[0].tokens = {steps[0].argmax}, steps[0].pos += 1;
    steps[1].tokens = std::vector<int32_t>(size_t(R - 1), 6), steps[1].pos = R - 4;
    steps[2].tokens = {steps[2].argmax}, steps[2].pos = 3;
    b.run(steps);
    EXPECT_EQ(b.batch_calls(), 4u);
    for (int s = 0; s < 3; ++s) b.reset(s);
    EXPECT_EQ(b.kv_stats().used, 0);
}

TEST(SequenceBatchPaged, PromisesAndAnEmptyPool) {
    SequenceBatch b(options(3, kCtx));  // 8 blocks: one whole context
    const std::vector<int32_t> p = encode(b, "Once upon a time");
    ASSERT_EQ(b.begin(0, p, 40), 0);      // 3 blocks promised
    EXPECT_EQ(b.begin(1, p, 96), -1);     // 6 more: not now
    ASSERT_EQ(b.begin(1, p, 80), 0);      // 5: the rest of the pool
    // sequence 2 was promised nothing and the pool has nothing left for it: an error before the step runs
    std::vector<SeqStep> steps(2);
    steps[0].seq = 0, steps[0].tokens = p;
    steps[1].seq = 2, steps[1].tokens = p;
    EXPECT_THROW(b.run(steps), Error);
    b.reset(0);
    b.reset(1);
    b.reset(2);
    EXPECT_EQ(b.kv_stats().used, 0);
    // the smallest pool: one sequence's whole context; less is a usage error
    try {
        SequenceBatch small(options(2, kCtx - 1));
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Usage);
        EXPECT_NE(std::string(e.what()).find("--kv-pool-tokens 127: expected at least the context of one sequence "
                                             "(128 positions)"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace jitllm
