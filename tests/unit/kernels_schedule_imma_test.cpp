// Gate batch.imma without a GPU: the batch phase's list for decode-sized steps (batch.small_rows + 1
// .. batch.imma_rows rows), whose split-layout Q4_0/Q8_0 products are integer tensor-core GEMMs
// (gemm.cu MMA=3 after a Q8_0 conversion of x, convert.cu Q8_OUT): which steps take it, what its
// kernels are, the tiles the host picks, and where the gate says no (sm_75, no split-layout
// weights, batch.imma_rows at or below batch.small_rows). Numerics: GemmImmaVsCpu and the golden
// and prompt-mode tests on the GPU.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "backends/cuda/gemm_variant.h"
#include "core/error.h"
#include "unit/schedule_fixture.h"

namespace {

using namespace jitllm;
using namespace jitllm::test;

int count_mma3(const std::vector<KernelStep>& ks) {
    int n = 0;
    for (const KernelStep& k : ks) n += has_define(k.variant, "MMA", "3") ? 1 : 0;
    return n;
}

TEST(ScheduleImma, DecodeSizedStepsTakeTheIntegerGemmList) {
    const DeviceInfo h100 = DeviceInfo::for_target("sm_90");
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0}) {
        SCOPED_TRACE(type_name(t));
        auto m = tiny(t, t, false, 512, 768);
        const Plan p = plan_build(*m, PlanOptions{256, 64, 64});
        const Schedule s = schedule_build(p, h100, {});
        EXPECT_EQ(gate(s, "batch.imma"), "imma");
        ASSERT_FALSE(s.batch_imma.empty());
        EXPECT_EQ(s.batch_imma_from, 5);
        EXPECT_EQ(s.batch_imma_rows, 64);
        // which list a step of n rows runs: 1 the one-row gemvs, 2..4 the x-rows gemvs, 5..64 this
        // list (before the small-step lists, which would take up to 8), longer steps (prompt
        // chunks) the f16 GEMM list
        EXPECT_EQ(s.batch_list(1), Schedule::List::Small);
        EXPECT_EQ(s.batch_list(4), Schedule::List::Xrows);
        EXPECT_EQ(s.batch_list(5), Schedule::List::Imma);
        EXPECT_EQ(s.batch_list(8), Schedule::List::Imma);
        EXPECT_EQ(s.batch_list(64), Schedule::List::Imma);
        EXPECT_EQ(s.batch_list(65), Schedule::List::Gemm);
        EXPECT_EQ(&s.batch_steps(Schedule::List::Imma), &s.batch_imma);
        EXPECT_EQ(s.batch_body_of(Schedule::List::Imma), s.batch_imma_body);
        // the same tasks as the GEMM list; each split-layout product (q/k/v, attn_output, gate/up,
        // down) an MMA=3 GEMM right after its to_q8_rows conversion, whose Q8_0 rows it reads
        std::set<int> tasks_gemm, tasks_imma;
        for (const KernelStep& k : s.batch) tasks_gemm.insert(k.tasks.begin(), k.tasks.end());
        for (const KernelStep& k : s.batch_imma) tasks_imma.insert(k.tasks.begin(), k.tasks.end());
        EXPECT_EQ(tasks_gemm, tasks_imma);
        EXPECT_EQ(count_mma3(s.batch_imma), 4 * m->config.n_layers);
        EXPECT_EQ(count_mma3(s.batch), 0);
        std::set<std::string> vs;
        for (const auto& v : schedule_variants(s)) vs.insert(v.display_name());
        for (size_t i = 0; i < s.batch_imma.size(); ++i) {
            const KernelStep& k = s.batch_imma[i];
            EXPECT_TRUE(vs.count(k.variant.display_name())) << k.symbol;
            if (!has_define(k.variant, "MMA", "3")) continue;
            EXPECT_NE(k.symbol.find("__gemm_imma_" + std::string(type_name(t)) + "_split"), std::string::npos) << k.symbol;
            ASSERT_GT(i, 0u);
            const KernelStep& c = s.batch_imma[i - 1];
            EXPECT_NE(c.symbol.find("__to_q8_rows"), std::string::npos) << c.symbol;
            EXPECT_TRUE(has_define(c.variant, "Q8_OUT", "1")) << c.symbol;
            ASSERT_EQ(c.args.size(), 2u);
            EXPECT_EQ(c.args[1].kind, KArg::Kind::Scratch);
            EXPECT_EQ(k.args[9].scratch, c.args[1].scratch) << k.symbol;  // gemm.cu's x argument
            EXPECT_EQ(k.args.back().kind, KArg::Kind::Rows) << k.symbol;
            // tiles: 32 rows (64-row steps: two); 64 weight rows a tile, halved while fewer tiles than SMs
            // (this model's widest product, gate/up, has 1536 rows: 24 tiles of 64 -> 16 rows)
            EXPECT_TRUE(has_define(k.variant, "BM", "32")) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "WARPS_N", "1")) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "WARPS_K", "8")) << k.symbol;
            EXPECT_EQ(k.rows_dim, 0);
            EXPECT_EQ(k.grid_for_rows(9).x, 1u);
            EXPECT_EQ(k.grid_for_rows(32).x, 1u);
            EXPECT_EQ(k.grid_for_rows(33).x, 2u);
            EXPECT_EQ(k.grid_for_rows(64).x, 2u);
            // shared memory for the step's rows: 4 entries (8 .. 32 rows), growing, the last = smem
            ASSERT_EQ(k.smem_n8.size(), 4u) << k.symbol;
            EXPECT_EQ(k.smem_n8.back(), k.smem) << k.symbol;
            EXPECT_LT(k.smem_for_rows(9), k.smem_for_rows(25)) << k.symbol;
            EXPECT_EQ(k.smem_for_rows(9), k.smem_n8[1]) << k.symbol;
            EXPECT_EQ(k.smem_for_rows(33), k.smem) << k.symbol;
        }
        EXPECT_GT(s.scratch.at("xq8"), 0u);
        // a wider FFN's gate/up keeps 64-row tiles (8704 rows: 136 tiles on 132 SMs)
        auto w = tiny(t, t, false, 512, 4352);
        const Schedule sw = schedule_build(plan_build(*w, PlanOptions{256, 32, 32}), h100, {});
        int seen = 0;
        for (const KernelStep& k : sw.batch_imma) {
            if (!has_define(k.variant, "MMA", "3") || k.symbol.find("ffn_gate_up") == std::string::npos) continue;
            ++seen;
            EXPECT_TRUE(has_define(k.variant, "BM", "32")) << k.symbol;  // the plan's 32 rows
            EXPECT_TRUE(has_define(k.variant, "WARPS_N", "4")) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "WARPS_K", "2")) << k.symbol;
            EXPECT_EQ(k.grid.y, 136u) << k.symbol;
        }
        EXPECT_EQ(seen, w->config.n_layers);
        // tunables: the tile, the K shares, the ring
        ScheduleOptions o;
        o.imma_bn = 32;
        o.imma_warps_k = 1;
        o.imma_stages = 3;
        o.imma_bm = 16;
        const Schedule st = schedule_build(plan_build(*w, PlanOptions{256, 32, 32}), h100, o);
        for (const KernelStep& k : st.batch_imma) {
            if (!has_define(k.variant, "MMA", "3")) continue;
            EXPECT_TRUE(has_define(k.variant, "WARPS_N", "2")) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "WARPS_K", "1")) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "STAGES", "3")) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "BM", "16")) << k.symbol;
            EXPECT_EQ(k.grid_for_rows(32).x, 2u) << k.symbol;
        }
    }
}

TEST(ScheduleImma, TheGateSaysWhereTheListIsNot) {
    auto q4 = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false, 512, 768);
    const Plan p = plan_build(*q4, PlanOptions{256, 64, 64});
    // sm_75: no mma.sync m16n8k32 s8; forcing it is refused with the reason
    const Schedule s75 = schedule_build(p, DeviceInfo::for_target("sm_75"), {});
    EXPECT_EQ(gate(s75, "batch.imma"), "gemm");
    EXPECT_TRUE(s75.batch_imma.empty());
    ScheduleOptions forced;
    forced.force = {{"batch.imma", "imma"}};
    try {
        schedule_build(p, DeviceInfo::for_target("sm_75"), forced);
        ADD_FAILURE() << "forcing batch.imma=imma on sm_75 was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("7.5"), std::string::npos) << e.what();
    }
    const DeviceInfo h100 = DeviceInfo::for_target("sm_90");
    // the sibling by force: no list, every step past the small ones on the f16 GEMM list
    ScheduleOptions off;
    off.force = {{"batch.imma", "gemm"}};
    const Schedule sg = schedule_build(p, h100, off);
    EXPECT_TRUE(sg.batch_imma.empty());
    EXPECT_EQ(sg.batch_list(9), Schedule::List::Gemm);
    // no step for the list
    ScheduleOptions narrow;
    narrow.batch_imma_rows = 8;
    narrow.batch_imma_from = 9;
    EXPECT_EQ(gate(schedule_build(p, h100, narrow), "batch.imma"), "gemm");
    // from 9 rows: the small-step lists keep 1 .. 8
    ScheduleOptions late;
    late.batch_imma_from = 9;
    const Schedule sl = schedule_build(p, h100, late);
    EXPECT_EQ(sl.batch_list(8), Schedule::List::Xrows);
    EXPECT_EQ(sl.batch_list(9), Schedule::List::Imma);
    // F16 weights: no split-layout matrix
    auto f16 = tiny(GgmlType::F16, GgmlType::F16, false, 512, 768);
    const Schedule sf = schedule_build(plan_build(*f16, PlanOptions{256, 64, 64}), h100, {});
    EXPECT_EQ(gate(sf, "batch.imma"), "gemm");
    EXPECT_TRUE(sf.batch_imma.empty());
    // no batch phase
    const Schedule sd = schedule_build(plan_build(*q4, PlanOptions{256, 0, 1}), h100, {});
    EXPECT_EQ(gate(sd, "batch.imma"), "gemm");
}

}  // namespace
