// Launch accounting: the plan's predicted task executions (plan_task_executions, which
// --print-plan's --launch-skip arithmetic is built on) must equal what the CPU backend actually
// executes, for several prompt lengths, generation lengths and modes.
#include <gtest/gtest.h>

#include "backends/cuda/schedule.h"
#include "fixtures/test_support.h"
#include "runtime/engine.h"

namespace {

struct Case {
    int n_prompt, n_gen;
    bool prefill_decode;
    int chunk = 0;  // --batch-prefill-size
};
void PrintTo(const Case& c, std::ostream* os) {
    *os << "prompt " << c.n_prompt << " -n " << c.n_gen << (c.prefill_decode ? " prefill-decode" : "")
        << (c.chunk ? " chunk " + std::to_string(c.chunk) : std::string());
}

class LaunchAccounting : public ::testing::TestWithParam<Case> {};

jitllm::KernelStep step(const char* sym) {  // a schedule entry named sym (the two-list tests)
    jitllm::KernelStep k;
    k.symbol = sym;
    return k;
}

TEST_P(LaunchAccounting, PlanPredictsCpuTaskExecutions) {
    const Case c = GetParam();
    jitllm::EngineOptions o;
    o.model_path = jitllm::test::source_dir() + "/models/stories260K.gguf";
    o.n_ctx = 128;
    o.with_prefill_decode = c.prefill_decode;
    o.batch_prefill_size = c.chunk;
    jitllm::Engine e(o);
    std::vector<int32_t> prompt;
    for (int i = 0; i < c.n_prompt; ++i) prompt.push_back(1 + (i * 37) % 500);
    e.feed(prompt);
    // generate n_gen tokens: the last one is sampled but never fed back
    for (int i = 1; i < c.n_gen; ++i) e.feed({e.backend().sampled_token()});
    const jitllm::RunShape rs{c.n_prompt, c.n_gen, c.prefill_decode, e.plan().batch_rows};
    const auto expected = jitllm::plan_task_executions(e.plan(), rs);
    const auto& counted = e.backend().task_counts();
    ASSERT_EQ(expected.size(), counted.size());
    for (const auto& [name, n] : expected) {
        ASSERT_TRUE(counted.count(name)) << name;
        EXPECT_EQ(counted.at(name), n) << name;
    }
    // Kernel-level accounting for a CUDA target sums to the schedule's launches per phase run.
    const auto sched = jitllm::schedule_build(e.plan(), jitllm::DeviceInfo::for_target("sm_90"), {});
    const auto pr = jitllm::plan_phase_runs(rs);
    int64_t total = 0;
    for (const auto& k : jitllm::schedule_launch_accounting(sched, rs, 2)) {
        total += k.total;
        EXPECT_EQ(k.skip_decode, int64_t(k.per_prefill) * pr.prefill + int64_t(k.per_chunk) * pr.batch +
                                     int64_t(k.per_tail) * pr.batch_tail + int64_t(k.per_decode) * (pr.decode_in_prompt + 2));
        EXPECT_EQ(k.skip_chunk, int64_t(k.per_chunk) * std::min<int64_t>(2, pr.batch));
    }
    EXPECT_EQ(total, int64_t(sched.decode.size()) * pr.decode + int64_t(sched.prefill.size()) * pr.prefill +
                         int64_t(sched.batch_body) * pr.batch +
                         int64_t(sched.batch.size() - sched.batch_body) * pr.batch_tail);
    // the chunk kernels are the batch phase's body: launches per chunk sum to batch_body
    int64_t per_chunk = 0;
    for (const auto& k : jitllm::schedule_launch_accounting(sched, rs, 2)) per_chunk += k.per_chunk;
    EXPECT_EQ(per_chunk, int64_t(sched.batch_body));
}

// attn.tma_from: decode steps at positions below decode_short_below run the second list, so a
// kernel of one list only is launched on its own positions, and --launch-skip counts the runs as
// they come (the steady state's list sets the launches a step shown).
TEST(LaunchAccountingTwoLists, DecodeBelowTheSwitchRunsTheShortList) {
    jitllm::Schedule s;
    s.decode = {step("gemv"), step("attn_tma")};
    s.decode_short = {step("gemv"), step("attn_regs")};
    s.decode_short_below = 10;
    auto find = [](const std::vector<jitllm::KernelLaunchCount>& v, const std::string& k) {
        for (const auto& c : v)
            if (c.kernel == k) return c;
        ADD_FAILURE() << k;
        return jitllm::KernelLaunchCount{};
    };
    // single-token mode, prompt 5, -n 20: decode runs at positions 0..23, 10 of them below the switch;
    // the steady state (5 prompt runs + 2 warm-up) at position 7: the short list
    auto a = jitllm::schedule_launch_accounting(s, jitllm::RunShape{5, 20, false, 0}, 2);
    EXPECT_EQ(find(a, "gemv").total, 24);
    EXPECT_EQ(find(a, "attn_tma").total, 14);
    EXPECT_EQ(find(a, "attn_regs").total, 10);
    EXPECT_EQ(find(a, "attn_regs").per_decode, 1);
    EXPECT_EQ(find(a, "attn_tma").per_decode, 0);
    EXPECT_EQ(find(a, "gemv").skip_decode, 7);
    EXPECT_EQ(find(a, "attn_regs").skip_decode, 7);
    EXPECT_EQ(find(a, "attn_tma").skip_decode, 0);
    // prompt 12: the steady state at position 14, past the switch
    auto b = jitllm::schedule_launch_accounting(s, jitllm::RunShape{12, 20, false, 0}, 2);
    EXPECT_EQ(find(b, "attn_tma").total, 21);
    EXPECT_EQ(find(b, "attn_regs").total, 10);
    EXPECT_EQ(find(b, "attn_tma").per_decode, 1);
    EXPECT_EQ(find(b, "attn_regs").per_decode, 0);
    EXPECT_EQ(find(b, "attn_tma").skip_decode, 4);
    EXPECT_EQ(find(b, "attn_regs").skip_decode, 10);
    EXPECT_EQ(find(b, "gemv").skip_decode, 14);
    // --with-prefill-decode, prompt 12: decode runs from position 11 (the last prompt token): none short
    auto c = jitllm::schedule_launch_accounting(s, jitllm::RunShape{12, 20, true, 0}, 2);
    EXPECT_EQ(find(c, "attn_tma").total, 20);
    EXPECT_EQ(find(c, "attn_regs").total, 0);
}

// sample.fuse=gemv: runs without a device draw replay the greedy lists (the pick inside the output
// gemv, one kernel less a step); sampled runs drawn on the device the lists with the pick kernel
TEST(LaunchAccountingTwoLists, GreedyRunsReplayTheGreedyLists) {
    jitllm::Schedule s;
    s.decode = {step("gemv"), step("attn_tma"), step("out"), step("draw")};
    s.decode_short = {step("gemv"), step("attn_regs"), step("out"), step("draw")};
    s.decode_greedy = {step("gemv"), step("attn_tma"), step("out_pick")};
    s.decode_short_greedy = {step("gemv"), step("attn_regs"), step("out_pick")};
    s.decode_short_below = 10;
    auto count = [](const std::vector<jitllm::KernelLaunchCount>& v, const std::string& k) {
        for (const auto& c : v)
            if (c.kernel == k) return c.total;
        return int64_t(0);
    };
    // prompt 5, -n 20, single-token mode: 24 decode runs, 10 of them short
    const auto g = jitllm::schedule_launch_accounting(s, jitllm::RunShape{5, 20, false, 0}, 2);
    EXPECT_EQ(count(g, "out_pick"), 24);
    EXPECT_EQ(count(g, "draw"), 0);
    EXPECT_EQ(count(g, "out"), 0);
    EXPECT_EQ(count(g, "attn_regs"), 10);
    EXPECT_EQ(count(g, "attn_tma"), 14);
    jitllm::RunShape sampled{5, 20, false, 0};
    sampled.device_draw = true;
    const auto d = jitllm::schedule_launch_accounting(s, sampled, 2);
    EXPECT_EQ(count(d, "out_pick"), 0);
    EXPECT_EQ(count(d, "draw"), 24);
    EXPECT_EQ(count(d, "attn_regs"), 10);
}

INSTANTIATE_TEST_SUITE_P(Runs, LaunchAccounting,
                         ::testing::Values(Case{1, 1, false}, Case{5, 8, false}, Case{5, 8, true},
                                           Case{17, 3, true}, Case{9, 1, true}, Case{3, 20, false},
                                           Case{17, 3, false, 4}, Case{17, 3, false, 16}, Case{17, 3, false, 32},
                                           Case{1, 5, false, 8}, Case{40, 2, true, 7}, Case{9, 4, false, 1}));

}  // namespace
