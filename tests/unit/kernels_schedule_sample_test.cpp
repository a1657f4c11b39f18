// The schedule's pick, without a GPU: sample.draw (the draw on the device), sample.fuse (the greedy
// pick inside the output gemv, a second decode list) and step.advance (the pick kernel advances the
// token and position slots).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "unit/schedule_fixture.h"

namespace {

using namespace jitllm;
using namespace jitllm::test;

// sample.fuse=gemv: a second decode list (and graph) for greedy steps whose output gemv picks; the
// first keeps the pick kernel, which still draws (sample.draw=device), so sampled steps stay on the device
TEST(ScheduleGates, FusedPickIsASecondDecodeListForGreedySteps) {
    auto m = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false, 512, 352, 128);  // head dim 128: attn.kv=tma by default
    const Plan p = plan_build(*m, PlanOptions{4096, 16, 1});
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    const Schedule def = schedule_build(p, h200, {});
    EXPECT_EQ(gate(def, "sample.fuse"), "kernel");
    EXPECT_TRUE(def.decode_greedy.empty());
    EXPECT_TRUE(def.decode_short_greedy.empty());
    ScheduleOptions o;
    o.force = {{"sample.fuse", "gemv"}};
    const Schedule s = schedule_build(p, h200, o);
    EXPECT_EQ(gate(s, "sample.fuse"), "gemv");
    EXPECT_EQ(gate(s, "sample.draw"), "device");  // both together
    EXPECT_GT(s.draw_max_k, 0);
    ASSERT_EQ(s.decode_greedy.size() + 1, s.decode.size());
    EXPECT_EQ(s.decode.back().symbol, "sample__draw");
    EXPECT_TRUE(has_define(s.decode.back().variant, "DRAW", "1"));
    for (const KernelStep& k : s.decode) EXPECT_FALSE(k.variant.has("ARGMAX")) << k.symbol;
    const KernelStep& pick = s.decode_greedy.back();
    EXPECT_TRUE(has_define(pick.variant, "ARGMAX", "1")) << pick.symbol;
    EXPECT_EQ(pick.variant.source, "cuda/gemv.cu");
    EXPECT_EQ(p.decode[size_t(pick.tasks.back())].kind, TaskKind::Sample);
    EXPECT_TRUE(pick.pdl);
    for (size_t i = 0; i + 1 < s.decode_greedy.size(); ++i) {  // the rest as decode's
        EXPECT_EQ(s.decode_greedy[i].symbol, s.decode[i].symbol);
        EXPECT_EQ(s.decode_greedy[i].tasks, s.decode[i].tasks);
    }
    // beside the short-context list (attn.tma_from's automatic 768): its greedy twin, with the
    // register kernel's attention and the fused pick
    ASSERT_FALSE(s.decode_short.empty());
    ASSERT_EQ(s.decode_short_greedy.size(), s.decode_greedy.size());
    for (size_t i = 0; i < s.decode_greedy.size(); ++i) {
        EXPECT_EQ(s.decode_short_greedy[i].tasks, s.decode_greedy[i].tasks);
        if (s.decode_greedy[i].variant.source == "cuda/attention_decode_tma.cu") {
            EXPECT_EQ(s.decode_short_greedy[i].variant.source, "cuda/attention_decode.cu");
        }
    }
    EXPECT_TRUE(has_define(s.decode_short_greedy.back().variant, "ARGMAX", "1"));
    // the JIT list holds the fused gemv; --print-plan names the greedy list
    bool fused = false;
    for (const auto& v : schedule_variants(s)) fused |= v.has("ARGMAX");
    EXPECT_TRUE(fused);
    const std::string described = schedule_describe(p, s, false);
    EXPECT_NE(described.find("greedy steps (sample.fuse=gemv"), std::string::npos) << described;
    EXPECT_NE(described.find("+ " + pick.symbol), std::string::npos) << described;
    // --no-fuse: no fused pick, no second list
    ScheduleOptions nf = o;
    nf.fuse = false;
    EXPECT_TRUE(schedule_build(p, h200, nf).decode_greedy.empty());
}

// sample.fuse's default follows the output head's lowering: a bulk output gemv (plain rows here;
// split-layout heads of >= 4096 columns and rows on 8B) picks on the greedy list by default, a lanes
// one keeps the pick kernel (1B Q4_0 / Q8_0 lost 1.4 / 2.1 % with the fused lanes pick)
TEST(ScheduleGates, FusedPickByDefaultWhereTheOutputGemvIsBulk) {
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    auto out_step = [](const Plan& p, const Schedule& s) -> const KernelStep* {
        for (const KernelStep& k : s.decode)
            for (int ti : k.tasks)
                if (p.decode[size_t(ti)].kind == TaskKind::Output) return &k;
        return nullptr;
    };
    auto f16 = tiny(GgmlType::F16, GgmlType::F16, false);
    const Plan pf = plan_build(*f16, PlanOptions{512, 16, 1});
    const Schedule sf = schedule_build(pf, h200, {});
    ASSERT_NE(out_step(pf, sf), nullptr);
    EXPECT_TRUE(out_step(pf, sf)->variant.has("BULK"));
    EXPECT_EQ(gate(sf, "sample.fuse"), "gemv");
    ASSERT_EQ(sf.decode_greedy.size() + 1, sf.decode.size());
    EXPECT_TRUE(has_define(sf.decode_greedy.back().variant, "ARGMAX", "1"));
    EXPECT_TRUE(has_define(sf.decode_greedy.back().variant, "BULK", "1"));
    EXPECT_EQ(gate(sf, "sample.draw"), "device");  // sampled steps keep the draw kernel
    EXPECT_EQ(sf.decode.back().symbol, "sample__draw");
    // the head kept on the lanes loop: the pick kernel again
    ScheduleOptions lanes;
    lanes.force = {{"gemv.load", "lanes"}};
    const Schedule sl = schedule_build(pf, h200, lanes);
    EXPECT_FALSE(out_step(pf, sl)->variant.has("BULK"));
    EXPECT_EQ(gate(sl, "sample.fuse"), "kernel");
    EXPECT_TRUE(sl.decode_greedy.empty());
    // a split-layout head of 512 columns: lanes, so the pick kernel
    auto q4 = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false);
    const Plan pq = plan_build(*q4, PlanOptions{512, 16, 1});
    const Schedule sq = schedule_build(pq, h200, {});
    EXPECT_FALSE(out_step(pq, sq)->variant.has("BULK"));
    EXPECT_EQ(gate(sq, "sample.fuse"), "kernel");
    EXPECT_TRUE(sq.decode_greedy.empty());
    // --no-fuse: the pick kernel whatever the head
    ScheduleOptions nf;
    nf.fuse = false;
    const Schedule sn = schedule_build(pf, h200, nf);
    EXPECT_EQ(gate(sn, "sample.fuse"), "kernel");
    EXPECT_TRUE(sn.decode_greedy.empty());
    // before sm_90 (sm_80 here) no bulk gemv, so no fused pick by default
    const Schedule s86 = schedule_build(pf, DeviceInfo::for_target("sm_80"), {});
    EXPECT_EQ(gate(s86, "sample.fuse"), "kernel");
}

// sample.draw=device (the default where a warp is 32 lanes): decode's pick kernel is `sample__draw`
// (argmax.cu DRAW=1, KMAX from the last block's shared memory: 64 on sm_90), with the parameters'
// buffer and the per-block lists; `host` keeps the argmax alone; sample.fuse=gemv takes the
// argmax inside the output gemv, so the draw falls back to the host (and forcing both is refused).
TEST(ScheduleGates, SampleDrawOnTheDeviceByDefault) {
    auto m = tiny(GgmlType::Q8_0, GgmlType::Q8_0, false);
    const Plan p = plan_build(*m, PlanOptions{128, 16, 1});
    for (const char* target : {"sm_90", "sm_80", "sm_75"}) {
        SCOPED_TRACE(target);
        const DeviceInfo dev = DeviceInfo::for_target(target);
        const Schedule d = schedule_build(p, dev, ScheduleOptions{});
        EXPECT_EQ(gate(d, "sample.draw"), "device");
        const KernelStep& k = at(d.decode, "sample");
        EXPECT_EQ(k.symbol, "sample__draw");
        EXPECT_TRUE(has_define(k.variant, "DRAW", "1"));
        const int parts = int(k.grid.x);
        EXPECT_EQ(parts, dev.sm_count);
        EXPECT_EQ(d.draw_max_k, std::min(64, (dev.max_shared_block() - 64 * 32 - 1024) / (8 * parts)));
        EXPECT_TRUE(has_define(k.variant, "KMAX", std::to_string(d.draw_max_k)));
        ASSERT_EQ(k.args.size(), 10u);
        EXPECT_EQ(k.args[8].scratch, "draw_params");
        EXPECT_EQ(k.args[9].scratch, "draw_keys");
        EXPECT_EQ(d.scratch.at("draw_params"), 32u);
        EXPECT_EQ(d.scratch.at("draw_keys"), size_t(parts) * size_t(d.draw_max_k) * 8);
        EXPECT_EQ(k.smem, unsigned(8 * parts * d.draw_max_k));  // the merge's lists (more than the sort's 4 keys)
        EXPECT_LE(int(k.smem) + 64 * 32 + 1024, dev.max_shared_block());
        // the batch phase's logits rows: the same draw, each row its own parameters and lists
        const KernelStep& rows = at(d.batch, "sample");
        EXPECT_EQ(rows.symbol, "sample__draw_rows");
        EXPECT_TRUE(has_define(rows.variant, "DRAW", "1"));
        EXPECT_TRUE(has_define(rows.variant, "KMAX", std::to_string(d.draw_max_k)));
        EXPECT_EQ(int(rows.grid.x), parts);
        ASSERT_EQ(rows.args.size(), 10u);
        EXPECT_EQ(rows.args[8].scratch, "draw_rows_params");
        EXPECT_EQ(rows.args[9].scratch, "draw_rows_keys");
        EXPECT_EQ(d.scratch.at("draw_rows_params"), size_t(p.n_seq) * 32u);
        EXPECT_EQ(d.scratch.at("draw_rows_keys"), size_t(p.n_seq) * size_t(parts) * size_t(d.draw_max_k) * 8);
        EXPECT_EQ(rows.smem, k.smem);
    }
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    EXPECT_EQ(schedule_build(p, h200, ScheduleOptions{}).draw_max_k, 64);
    ScheduleOptions host;
    host.force["sample.draw"] = "host";
    const Schedule h = schedule_build(p, h200, host);
    EXPECT_EQ(h.draw_max_k, 0);
    EXPECT_EQ(at(h.decode, "sample").symbol, "sample__argmax");
    EXPECT_FALSE(defines(at(h.decode, "sample").variant, "DRAW"));
    ASSERT_EQ(at(h.decode, "sample").args.size(), 10u);
    EXPECT_EQ(at(h.decode, "sample").args[8].kind, KArg::Kind::Null);
    EXPECT_EQ(h.scratch.count("draw_params"), 0u);
    EXPECT_EQ(at(h.batch, "sample").symbol, "sample__argmax_rows");
    EXPECT_EQ(h.scratch.count("draw_rows_params"), 0u);
    // sample.fuse=gemv puts the greedy pick on a list of its own: the draw stays with decode's
    ScheduleOptions fused;
    fused.force["sample.fuse"] = "gemv";
    const Schedule f = schedule_build(p, h200, fused);
    EXPECT_EQ(gate(f, "sample.draw"), "device");
    EXPECT_EQ(f.draw_max_k, 64);
    EXPECT_EQ(at(f.decode, "sample").symbol, "sample__draw");
    fused.force["sample.draw"] = "host";  // and each is forced on its own
    EXPECT_EQ(schedule_build(p, h200, fused).draw_max_k, 0);
    EXPECT_FALSE(schedule_build(p, h200, fused).decode_greedy.empty());
}

// sample.fuse=gemv (off by default until measured): the greedy list's pick goes into the output gemv
// (gemv.cu ARGMAX, its y1/y2 arguments the key scratch and the token); the pick kernel stays with
// `kernel`, with --no-fuse, in decode's own list (sampled steps) and in the batch phase; refused with
// gemv.reduce=tree.
TEST(ScheduleGates, SampleFuseMovesThePickIntoTheOutputGemv) {
    auto m = tiny(GgmlType::Q8_0, GgmlType::Q8_0, false);
    const Plan p = plan_build(*m, PlanOptions{128, 16, 1});
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    auto argmax_kernel = [](const std::vector<KernelStep>& ks) {
        return std::any_of(ks.begin(), ks.end(), [](const KernelStep& k) { return k.variant.source == "cuda/argmax.cu"; });
    };
    const Schedule d = schedule_build(p, h200, ScheduleOptions{});
    EXPECT_EQ(gate(d, "sample.fuse"), "kernel");
    EXPECT_TRUE(argmax_kernel(d.decode));
    EXPECT_FALSE(defines(at(d.decode, "output_norm_output").variant, "ARGMAX"));
    ScheduleOptions o;
    o.force["sample.fuse"] = "gemv";
    const Schedule f = schedule_build(p, h200, o);
    EXPECT_EQ(gate(f, "sample.fuse"), "gemv");
    EXPECT_TRUE(argmax_kernel(f.decode));
    EXPECT_FALSE(argmax_kernel(f.decode_greedy));
    const KernelStep& out = at(f.decode_greedy, "output_norm_output_sample");
    EXPECT_TRUE(has_define(out.variant, "ARGMAX", "1"));
    EXPECT_EQ(out.tasks.size(), 3u);  // output_norm, output, sample
    EXPECT_EQ(p.decode[size_t(out.tasks.back())].kind, TaskKind::Sample);
    ASSERT_GE(out.args.size(), 9u);
    EXPECT_EQ(out.args[7].scratch, "argmax_key");
    EXPECT_EQ(out.args[8].scratch, "token_out");
    EXPECT_EQ(f.scratch.at("argmax_key"), 16u);
    EXPECT_LE(out.grid.x, 2u * h200.sm_count);  // bounded atomics
    EXPECT_TRUE(argmax_kernel(f.batch)) << "the batch phase keeps its per-row argmax";
    ScheduleOptions unfused = o;
    unfused.fuse = false;
    EXPECT_TRUE(argmax_kernel(schedule_build(p, h200, unfused).decode));
    EXPECT_TRUE(schedule_build(p, h200, unfused).decode_greedy.empty());
    ScheduleOptions tree = o;
    tree.force["gemv.reduce"] = "tree";
    EXPECT_THROW(schedule_build(p, h200, tree), std::exception);
}

// step.advance=device (the default, measured on the H200): decode's pick kernel advances the token and
// position slots (argmax.cu FUSE_ADVANCE; with sample.fuse=gemv the fused gemv's ARGMAX_ADVANCE, its
// pos_ptr and k_cache arguments the position and token slots) and the schedule says so
// (decode_advance: the backend then skips a queued greedy step's copies)
TEST(ScheduleGates, StepAdvanceOnTheDevice) {
    auto m = tiny(GgmlType::Q8_0, GgmlType::Q8_0, false);
    const Plan p = plan_build(*m, PlanOptions{128, 16, 1});
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    ScheduleOptions host;
    host.force["step.advance"] = "host";
    const Schedule d = schedule_build(p, h200, host);
    EXPECT_EQ(gate(d, "step.advance"), "host");
    EXPECT_FALSE(d.decode_advance);
    EXPECT_TRUE(has_define(at(d.decode, "sample").variant, "FUSE_ADVANCE", "0"));
    ScheduleOptions o;
    EXPECT_EQ(gate(schedule_build(p, h200, o), "step.advance"), "device");  // the default
    o.force["step.advance"] = "device";
    const Schedule a = schedule_build(p, h200, o);
    EXPECT_TRUE(a.decode_advance);
    EXPECT_TRUE(has_define(at(a.decode, "sample").variant, "FUSE_ADVANCE", "1"));
    ASSERT_EQ(at(a.decode, "sample").args.size(), 10u);  // + the draw's parameters and lists
    EXPECT_EQ(at(a.decode, "sample").args[7].kind, KArg::Kind::HostRing);  // the pick for the host, no copy back
    EXPECT_EQ(at(d.decode, "sample").args[7].kind, KArg::Kind::Null);
    for (const KernelStep& k : a.batch)  // the batch phase's per-row pick never advances
        if (k.variant.source == "cuda/argmax.cu") {
            EXPECT_TRUE(has_define(k.variant, "FUSE_ADVANCE", "0"));
        }
    o.force["sample.fuse"] = "gemv";
    const Schedule f = schedule_build(p, h200, o);
    const KernelStep& out = at(f.decode_greedy, "output_norm_output_sample");
    EXPECT_TRUE(has_define(out.variant, "ARGMAX_ADVANCE", "1"));
    EXPECT_EQ(out.args[13].slot, Slot::Pos);
    EXPECT_EQ(out.args[14].slot, Slot::Token);
    EXPECT_EQ(out.args[15].kind, KArg::Kind::HostRing);
}

}  // namespace
