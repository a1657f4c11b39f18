// Launch accounting: the plan's predicted task executions (plan_task_executions, which
// --print-plan's --launch-skip arithmetic is built on) must equal what the CPU backend actually
// executes, for several prompt lengths, generation lengths and modes.
#include <gtest/gtest.h>

#include <map>

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
    // Kernel-level accounting for a CUDA target sums to the schedule's launches per phase run; a
    // prompt chunk (and the output tail) takes the list its rows choose (Schedule::batch_list, as
    // CudaBackend::batch)
    const auto sched = jitllm::schedule_build(e.plan(), jitllm::DeviceInfo::for_target("sm_90"), {});
    const auto pr = jitllm::plan_phase_runs(rs);
    auto sizes = [&](int rows) -> std::pair<size_t, size_t> {  // (body, tail) of that step's list
        const auto l = sched.batch_list(rows);
        return {sched.batch_body_of(l), sched.batch_steps(l).size() - sched.batch_body_of(l)};
    };
    int64_t batch_launches = 0;
    for (int64_t ch = 0; ch < pr.batch; ++ch)
        batch_launches += int64_t(sizes(int(std::min<int64_t>(c.chunk, c.n_prompt - ch * c.chunk))).first);
    if (pr.batch_tail) batch_launches += int64_t(sizes(1).second);
    const int64_t before_decode = int64_t(sched.prefill.size()) * pr.prefill + batch_launches;
    int64_t total = 0, skip_decode = 0;
    for (const auto& k : jitllm::schedule_launch_accounting(sched, rs, 2)) {
        total += k.total;
        skip_decode += k.skip_decode;
        if (sched.batch_small.empty()) {
            EXPECT_EQ(k.skip_chunk, int64_t(k.per_chunk) * std::min<int64_t>(2, pr.batch));
        }
    }
    EXPECT_EQ(total, int64_t(sched.decode.size()) * pr.decode + before_decode);
    EXPECT_EQ(skip_decode, before_decode + int64_t(sched.decode.size()) * std::min<int64_t>(pr.decode, pr.decode_in_prompt + 2));
    // the chunk kernels are the batch phase's body: launches per chunk sum to batch_body
    int64_t per_chunk = 0;
    for (const auto& k : jitllm::schedule_launch_accounting(sched, rs, 2)) per_chunk += k.per_chunk;
    EXPECT_EQ(per_chunk, int64_t(sched.batch_body));
    // the launch walk (jitllm ncu's picks) issues as many launches of each kernel as the accounting
    // counts, and its pick of the steady state's first launch of a kernel has the accounting's skip
    std::map<std::string, int64_t> walked;
    jitllm::schedule_for_each_launch(sched, rs, [&](const jitllm::LaunchRef& l) {
        ++walked[l.step->symbol];
        return true;
    });
    for (const auto& k : jitllm::schedule_launch_accounting(sched, rs, 2)) {
        EXPECT_EQ(walked[k.kernel], k.total) << k.kernel;
        if (k.per_decode == 0 || pr.decode <= pr.decode_in_prompt + 2) continue;
        const auto pick = jitllm::schedule_pick_launch(sched, rs, [&](const jitllm::LaunchRef& l) {
            return l.phase == jitllm::Phase::Decode && l.run == pr.decode_in_prompt + 2 && l.step->symbol == k.kernel;
        });
        ASSERT_TRUE(pick) << k.kernel;
        EXPECT_EQ(pick->skip, k.skip_decode) << k.kernel;
        EXPECT_EQ(pick->total, k.total) << k.kernel;
    }
}

// The walk's order and the pick's skip on a hand-made schedule: prefill steps, then decode steps;
// a kernel used twice a step (two layers) counts both launches of every earlier step.
TEST(LaunchPick, SkipCountsEveryEarlierLaunchOfTheSymbol) {
    jitllm::Schedule s;
    s.prefill = {step("norm"), step("gemv"), step("gemv"), step("attn_p")};
    s.decode = {step("norm"), step("gemv"), step("attn"), step("gemv"), step("pick")};
    // --with-prefill-decode, prompt 4, -n 3: prefill runs at positions 0..2, decode at 3..5
    const jitllm::RunShape rs{4, 3, true, 0};
    std::vector<std::string> order;
    jitllm::schedule_for_each_launch(s, rs, [&](const jitllm::LaunchRef& l) {
        order.push_back(std::string(jitllm::phase_name(l.phase)) + std::to_string(l.position) + ":" + l.step->symbol);
        return true;
    });
    ASSERT_EQ(order.size(), 3u * 4 + 3u * 5);
    EXPECT_EQ(order.front(), std::string(jitllm::phase_name(jitllm::Phase::Prefill)) + "0:norm");
    EXPECT_EQ(order[12], std::string(jitllm::phase_name(jitllm::Phase::Decode)) + "3:norm");
    // the second gemv (index 3) of decode run 1 (position 4): 3 prefill runs x 2 + 1 decode run x 2 + 1
    auto p = jitllm::schedule_pick_launch(s, rs, [](const jitllm::LaunchRef& l) {
        return l.phase == jitllm::Phase::Decode && l.position == 4 && l.index == 3;
    });
    ASSERT_TRUE(p);
    EXPECT_EQ(p->at.step->symbol, "gemv");
    EXPECT_EQ(p->skip, 9);
    EXPECT_EQ(p->total, 12);
    // the first prefill launch of attn_p, the last decode pick
    p = jitllm::schedule_pick_launch(s, rs, [](const jitllm::LaunchRef& l) { return l.step->symbol == "attn_p"; });
    ASSERT_TRUE(p);
    EXPECT_EQ(p->skip, 0);
    EXPECT_EQ(p->total, 3);
    p = jitllm::schedule_pick_launch(s, rs, [](const jitllm::LaunchRef& l) {
        return l.phase == jitllm::Phase::Decode && l.position == 5 && l.step->symbol == "pick";
    });
    ASSERT_TRUE(p);
    EXPECT_EQ(p->skip, 2);
    // nothing at a position the run never reaches
    EXPECT_FALSE(jitllm::schedule_pick_launch(s, rs, [](const jitllm::LaunchRef& l) { return l.position == 6; }));
}

// Prompt chunks: each chunk's list by its rows (a short last chunk from the small-step list), the
// output tail once, after the last chunk, from the one-row list
TEST(LaunchPick, ChunksTakeTheirListByRowsAndTheTailComesLast) {
    jitllm::Schedule s;
    s.batch = {step("norm_rows"), step("gemm"), step("out_gemm")};
    s.batch_body = 2;
    s.batch_small = {step("norm_rows"), step("gemv_rows"), step("out_gemv")};
    s.batch_small_body = 2;
    s.batch_small_rows = 4;
    s.decode = {step("gemv")};
    // prompt 19 in chunks of 8: rows 8, 8, 3 (the last from the small list), then the tail, then
    // 2 decode steps (-n 3)
    const jitllm::RunShape rs{19, 3, false, 8};
    std::vector<std::string> order;
    jitllm::schedule_for_each_launch(s, rs, [&](const jitllm::LaunchRef& l) {
        order.push_back(l.step->symbol + "@" + std::to_string(l.run) + (l.tail ? "t" : ""));
        return true;
    });
    const std::vector<std::string> want{"norm_rows@0", "gemm@0", "norm_rows@1", "gemm@1", "norm_rows@2",
                                        "gemv_rows@2", "out_gemv@2t", "gemv@0", "gemv@1"};
    EXPECT_EQ(order, want);
    auto p = jitllm::schedule_pick_launch(s, rs, [](const jitllm::LaunchRef& l) {
        return l.phase == jitllm::Phase::Batch && l.run == 2 && l.step->symbol == "norm_rows";
    });
    ASSERT_TRUE(p);
    EXPECT_EQ(p->skip, 2);
    EXPECT_EQ(p->at.rows, 3);
    EXPECT_EQ(p->at.position, 16);
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
