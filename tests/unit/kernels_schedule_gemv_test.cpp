// The schedule's gemv kernels, without a GPU: gemv.load=bulk (the shared-memory rings, their early
// slots and blocks), gemv.early / gemv.grid / gemv.trigger, the per-kernel tunables (gemv.*.KIND),
// x in registers, the norm weight before the PDL wait and the row-set balance --print-threads shows.
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

// kv.l2_prefetch: KV_PF on the q/k/v gemv with the RoPE / KV-store epilogue and bulk rings only
TEST(ScheduleGates, KvPrefetchOnlyOnTheBulkRopeGemv) {
    auto m = tiny(GgmlType::Q8_0, GgmlType::Q8_0, /*tied=*/false);
    const Plan p = plan_build(*m, PlanOptions{512, 16, 1});
    for (int mode : {0, 1, 2}) {
        SCOPED_TRACE(mode);
        ScheduleOptions o;
        o.kv_l2_prefetch = mode;
        o.force = {{"gemv.load", "bulk"}};
        const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), o);
        int with = 0;
        for (const KernelStep& k : s.decode) {
            const bool rope = has_define(k.variant, "EPI", "4");
            if (defines(k.variant, "KV_PF")) {
                ++with;
                EXPECT_TRUE(rope) << k.symbol;
                EXPECT_TRUE(has_define(k.variant, "KV_PF", std::to_string(mode)));
            }
        }
        EXPECT_EQ(with, mode == 0 ? 0 : int(m->config.n_layers));
        o.force.clear();  // lanes gemvs (the tiny shapes' default): no rings, no prefetch
        for (const KernelStep& k : schedule_build(p, DeviceInfo::for_target("sm_90"), o).decode)
            EXPECT_FALSE(defines(k.variant, "KV_PF"));
    }
}

// gemv.cu XREG: every bulk split-layout Q4_0 / Q8_0 decode gemv whose lane's x units fit
// ~40 registers (Q4_0: 4 units, Q8_0: 8) keeps them in registers by default; a Q4_0 ffn_down of 8192
// columns (at least 8 units a lane whatever its chunk) reads its x copy; gemv.x_regs=off: none; the
// lanes gemvs never
TEST(ScheduleGates, BulkGemvsKeepXInRegistersWhereItFits) {
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0}) {
        auto m = tiny(t, t, /*tied=*/false, 512, 8192);
        const Plan p = plan_build(*m, PlanOptions{512, 16, 1});
        ScheduleOptions o;
        o.force = {{"gemv.load", "bulk"}};
        int xreg = 0, bulk = 0, wide_n = 0;
        for (const KernelStep& k : schedule_build(p, h200, o).decode) {
            if (!has_define(k.variant, "BULK", "1") || !has_define(k.variant, "WSPLIT", "1")) {
                EXPECT_FALSE(defines(k.variant, "XREG")) << k.symbol;
                continue;
            }
            ++bulk;
            const bool wide = define_value(k.variant, "COLS") == "8192";
            wide_n += wide ? 1 : 0;
            if (t == GgmlType::Q4_0 && wide) {
                EXPECT_FALSE(defines(k.variant, "XREG")) << k.symbol;
            } else if (!wide) {
                EXPECT_TRUE(has_define(k.variant, "XREG", "1")) << k.symbol;
            }
            xreg += defines(k.variant, "XREG") ? 1 : 0;
        }
        EXPECT_GT(bulk, 0);
        EXPECT_GT(xreg, 0);
        EXPECT_GT(wide_n, 0);  // ffn_down's 8192 columns are a bulk split-layout gemv too
        ScheduleOptions off = o;
        off.gemv_x_regs = false;
        for (const KernelStep& k : schedule_build(p, h200, off).decode) EXPECT_FALSE(defines(k.variant, "XREG")) << k.symbol;
        ScheduleOptions lanes;
        lanes.force = {{"gemv.load", "lanes"}};
        for (const KernelStep& k : schedule_build(p, h200, lanes).decode) EXPECT_FALSE(defines(k.variant, "XREG")) << k.symbol;
    }
}

// gemv.rows.KIND=N: only the gemv whose first task is KIND takes N rows a warp and pass (bulk
// ffn_down here: 16 warps x 4 rows a block pass, the others keep 2)
TEST(ScheduleGates, GemvRowsForSetsOneKernelsRows) {
    auto m = tiny(GgmlType::Q4_0, GgmlType::Q4_0, /*tied=*/false, 512, 512);
    const Plan p = plan_build(*m, PlanOptions{512, 16, 1});
    ScheduleOptions o;
    o.force = {{"gemv.load", "bulk"}};
    o.gemv_rows_for = {{"ffn_down", 4}};
    int down = 0;
    for (const KernelStep& k : schedule_build(p, DeviceInfo::for_target("sm_90"), o).decode) {
        if (!has_define(k.variant, "BULK", "1")) continue;
        const bool is_down = p.decode[size_t(k.tasks.front())].kind == TaskKind::FfnDown;
        down += is_down ? 1 : 0;
        if (is_down) {
            EXPECT_EQ(define_value(k.variant, "ROWS_PER_BLOCK"), "64") << k.symbol;
        } else if (!defines(k.variant, "EPI") || define_value(k.variant, "EPI") != "2") {
            EXPECT_EQ(define_value(k.variant, "ROWS_PER_BLOCK"), "32") << k.symbol;
        }
    }
    EXPECT_EQ(down, m->config.n_layers);
}

// gemv.early_blocks.KIND=B: only that bulk gemv gets BULK_PRE_B (its first B blocks fill the whole
// ring before the PDL wait); the others keep their early slot count alone
TEST(ScheduleGates, GemvEarlyBlocksForSetsOneKernelsBlocks) {
    auto m = tiny(GgmlType::Q4_0, GgmlType::Q4_0, /*tied=*/false, 512, 512);
    const Plan p = plan_build(*m, PlanOptions{512, 16, 1});
    ScheduleOptions o;
    o.force = {{"gemv.load", "bulk"}};
    o.gemv_early_blocks_for = {{"ffn_norm", 3}};
    o.gemv_early_blocks = false;  // (the default's counts aside)
    int gate_up = 0;
    for (const KernelStep& k : schedule_build(p, DeviceInfo::for_target("sm_90"), o).decode) {
        if (!has_define(k.variant, "BULK", "1")) continue;
        if (p.decode[size_t(k.tasks.front())].kind == TaskKind::FfnNorm) {
            ++gate_up;
            EXPECT_EQ(define_value(k.variant, "BULK_PRE_B"), "3") << k.symbol;
        } else {
            EXPECT_FALSE(defines(k.variant, "BULK_PRE_B")) << k.symbol;
        }
    }
    EXPECT_EQ(gate_up, m->config.n_layers);
}

// By default a bulk gemv right after a bulk gemv on fewer blocks than SMs gets BULK_PRE_B = the SMs
// that one leaves free (its first blocks land there early); gemv.early_blocks=off: none
TEST(ScheduleGates, EarlyBlocksByDefaultAfterAGemvOnFewerBlocks) {
    auto m = tiny(GgmlType::Q4_0, GgmlType::Q4_0, /*tied=*/false, 512, 512);
    const Plan p = plan_build(*m, PlanOptions{512, 16, 1});
    const DeviceInfo d = DeviceInfo::for_target("sm_90");
    for (const bool on : {true, false}) {
        SCOPED_TRACE(on ? "default" : "gemv.early_blocks=off");
        ScheduleOptions o;
        o.force = {{"gemv.load", "bulk"}};
        o.gemv_early_blocks = on;
        const auto steps = schedule_build(p, d, o).decode;
        int set = 0;
        for (size_t i = 1; i < steps.size(); ++i) {
            const KernelStep& k = steps[i];
            const KernelStep& b = steps[i - 1];
            const bool after_small = has_define(b.variant, "BULK", "1") && int(b.grid.x) < d.sm_count;
            if (on && after_small && defines(k.variant, "BULK_PRE")) {
                EXPECT_EQ(define_value(k.variant, "BULK_PRE_B"), std::to_string(d.sm_count - int(b.grid.x))) << k.symbol;
                ++set;
            } else {
                EXPECT_FALSE(defines(k.variant, "BULK_PRE_B")) << k.symbol;
            }
        }
        if (on) {
            EXPECT_GE(set, m->config.n_layers);  // (gate/up after attn_output at least)
        }
    }
}

// gemv.early=load picks the split-layout gemvs on sm_90 (PDL): their first weight step before the
// wait; plain F16 gemvs wait (measured slower), forcing it takes every gemv. gemv.grid=capped caps
// the split-layout gemvs of >= 4096 columns at 2 blocks per SM.
TEST(ScheduleGates, EarlyLoadAndGridCapForSplitLayoutGemvs) {
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    auto gemvs = [](const Schedule& s) {
        std::vector<const KernelStep*> v;
        for (const KernelStep& k : s.decode)
            if (k.symbol.find("__gemv_") != std::string::npos) v.push_back(&k);
        return v;
    };
    auto q4 = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false);
    const Plan pq = plan_build(*q4, PlanOptions{128, 16, 1});
    const Schedule sq = schedule_build(pq, h200, {});
    EXPECT_EQ(gate(sq, "gemv.early"), "load");
    EXPECT_EQ(gate(sq, "gemv.grid"), "full");  // 512 columns
    int early = 0, waits = 0;
    for (const KernelStep* k : gemvs(sq)) {
        const bool split = has_define(k->variant, "WSPLIT", "1");
        EXPECT_EQ(has_define(k->variant, "EARLY_LOAD", "1"), split) << k->symbol;
        (split ? early : waits)++;
    }
    EXPECT_GT(early, 0);
    EXPECT_GT(waits, 0);  // ffn_down: rows of 352, GGUF blocks
    // no PDL on sm_80: nothing to overlap
    EXPECT_EQ(gate(schedule_build(pq, DeviceInfo::for_target("sm_80"), {}), "gemv.early"), "wait");
    // F16: every gemv waits; forced, every gemv loads early
    auto f16 = tiny(GgmlType::F16, GgmlType::F16, false);
    const Plan pf = plan_build(*f16, PlanOptions{128, 16, 1});
    const Schedule sf = schedule_build(pf, h200, {});
    EXPECT_EQ(gate(sf, "gemv.early"), "wait");
    for (const KernelStep* k : gemvs(sf)) EXPECT_FALSE(has_define(k->variant, "EARLY_LOAD", "1")) << k->symbol;
    ScheduleOptions all;
    all.force = {{"gemv.early", "load"}, {"gemv.load", "lanes"}};  // (the bulk rings load before the wait anyway)
    for (const KernelStep* k : gemvs(schedule_build(pf, h200, all)))
        EXPECT_TRUE(has_define(k->variant, "EARLY_LOAD", "1")) << k->symbol;
    // 4096 columns, split layout: q/k/v (4096 + 2 x 128 rows over 16 per block: 272 blocks) capped at 2 x 132
    // (with gemv.load=lanes: the bulk rings, default for these, take one block per SM)
    auto wide = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false, 4096);
    const Plan pw = plan_build(*wide, PlanOptions{128, 16, 1});
    ScheduleOptions lanes;
    lanes.force = {{"gemv.load", "lanes"}};
    const Schedule sw = schedule_build(pw, h200, lanes);
    EXPECT_EQ(gate(sw, "gemv.grid"), "capped");
    const KernelStep* qkv = step(sw.decode, "attn_norm_qkv_rope_kv_store");
    ASSERT_NE(qkv, nullptr);
    EXPECT_EQ(qkv->grid.x, 264u);
    ScheduleOptions full;
    full.force = {{"gemv.grid", "full"}, {"gemv.load", "lanes"}};
    EXPECT_EQ(at(schedule_build(pw, h200, full).decode, "attn_norm_qkv_rope_kv_store").grid.x, 272u);
}

// gemv.load=bulk (gemv.cu BULK): sm_90 only, decode's split-layout gemvs of >= 4096 columns by
// default (forced: every split-layout gemv); 16 warps, one block per SM; the ring's items fit
// the gemv.bulk_kb budget.
TEST(ScheduleGates, BulkRingsForDecodeSplitLayoutGemvsOnSm90) {
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    auto narrow = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false);  // 512 columns
    const Plan pn = plan_build(*narrow, PlanOptions{128, 16, 1});
    EXPECT_EQ(gate(schedule_build(pn, h200, {}), "gemv.load"), "lanes");
    auto wide = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false, 4096);
    const Plan p = plan_build(*wide, PlanOptions{128, 16, 1});
    EXPECT_EQ(gate(schedule_build(p, DeviceInfo::for_target("sm_80"), {}), "gemv.load"), "lanes");
    ScheduleOptions o;
    o.force = {{"gemv.load", "bulk"}};
    EXPECT_THROW(schedule_build(p, DeviceInfo::for_target("sm_80"), o), Error);
    for (const KernelStep& k : schedule_build(pn, h200, o).decode) {  // forced: narrow ones too
        if (has_define(k.variant, "WSPLIT", "1")) {
            EXPECT_TRUE(has_define(k.variant, "BULK", "1")) << k.symbol;
        }
    }
    const Schedule s = schedule_build(p, h200, {});
    EXPECT_EQ(gate(s, "gemv.load"), "bulk");
    int bulk = 0;
    for (const KernelStep& k : s.decode) {
        if (k.symbol.find("__gemv_") == std::string::npos) continue;
        // split layout and >= 4096 output rows: q/k/v (4096 + 2 x 128) and attn_output; gate/up
        // (352 rows) and the output (64) keep their 16-byte loads
        const bool split = has_define(k.variant, "WSPLIT", "1");
        const bool tall = k.group == "attn_norm_qkv_rope_kv_store" || k.group == "attn_output_residual";
        EXPECT_EQ(has_define(k.variant, "BULK", "1"), split && tall) << k.symbol;
        if (!split || !tall) continue;
        ++bulk;
        EXPECT_NE(k.symbol.find("_split_bulk"), std::string::npos) << k.symbol;
        EXPECT_FALSE(has_define(k.variant, "EARLY_LOAD", "1")) << k.symbol;
        EXPECT_LE(k.grid.x, unsigned(h200.sm_count)) << k.symbol;
        // 4096 columns: 2048-column items of 2 rows (Q4_0: 2 x 1152 bytes), 16 warps x 5 slots
        // (200 KiB / 36 KiB)
        EXPECT_TRUE(has_define(k.variant, "BLOCK", "512")) << k.symbol;
        EXPECT_TRUE(has_define(k.variant, "BULK_CH", "2048")) << k.symbol;
        EXPECT_TRUE(has_define(k.variant, "BULK_S", "5")) << k.symbol;
        EXPECT_GE(k.smem, 16u * 5 * 2 * 1152) << k.symbol;
        EXPECT_LE(k.smem, 227u * 1024) << k.symbol;
        // Q4_0: 2 of the 5 slots before the PDL wait, the rest once the x prologue's loads are out;
        // attn_output, whose x the attention quantizes (gemv.xq=producer): 3
        EXPECT_TRUE(has_define(k.variant, "BULK_PRE", k.variant.has("XQ_IN") ? "3" : "2")) << k.symbol;
        EXPECT_EQ(k.variant.has("XQ_IN"), k.group == "attn_output_residual") << k.symbol;
        EXPECT_TRUE(has_define(k.variant, "BULK_FILL_AT_LOADS", "1")) << k.symbol;
    }
    EXPECT_EQ(bulk, 4);  // 2 layers
    // the batch phase keeps its kernels
    for (const KernelStep& k : s.batch) EXPECT_FALSE(has_define(k.variant, "BULK", "1")) << k.symbol;
    // gemv.bulk_min_slots=6: the bulk gemvs' items shrink until 6 slots fit their 200 KiB
    ScheduleOptions six;
    six.gemv_bulk_min_slots = 6;
    int six_n = 0;
    for (const KernelStep& k : schedule_build(p, h200, six).decode) {
        if (!has_define(k.variant, "BULK", "1")) continue;
        int slots = 0;
        for (const auto& [name, val] : k.variant.defines)
            if (name == "BULK_S") slots = std::stoi(val);
        EXPECT_GE(slots, 6) << k.symbol;
        ++six_n;
    }
    EXPECT_GT(six_n, 0);
    // a 1 KiB budget: the smallest items (256 columns), 2 slots
    ScheduleOptions small;
    small.gemv_bulk_kb = 1;
    for (const KernelStep& k : schedule_build(p, h200, small).decode)
        if (has_define(k.variant, "BULK", "1")) {
            EXPECT_TRUE(has_define(k.variant, "BULK_CH", "256")) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "BULK_S", "2")) << k.symbol;
        }
}

// The bulk gemvs' early ring slots and grids: gemv.early_slots (and .KIND) before the PDL wait,
// gemv.fill_at_loads, gemv.grid.KIND (by default a Q4_0 attn_output after attention on 76 of 132
// SMs), and Q8_0's 3 of 5 slots early.
TEST(ScheduleGates, BulkGemvsEarlySlotsAndGrids) {
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    auto wide = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false, 4096);
    const Plan p = plan_build(*wide, PlanOptions{128, 16, 1});
    // gemv.early_slots=N sets it (N >= the slots: all before the wait, no define);
    // gemv.fill_at_loads=off: no hook, and all slots early unless N is given
    ScheduleOptions early;
    early.gemv_early_slots = 3;
    early.gemv_fill_at_loads = false;
    for (const KernelStep& k : schedule_build(p, h200, early).decode) {
        if (has_define(k.variant, "BULK", "1")) {
            EXPECT_TRUE(has_define(k.variant, "BULK_PRE", "3")) << k.symbol;
            EXPECT_FALSE(defines(k.variant, "BULK_FILL_AT_LOADS")) << k.symbol;
        }
    }
    early.gemv_early_slots = 0;
    for (const KernelStep& k : schedule_build(p, h200, early).decode) {
        EXPECT_FALSE(defines(k.variant, "BULK_PRE")) << k.symbol;
    }
    early.gemv_fill_at_loads = true;
    // gemv.early_slots.KIND attn_output=4 attn_norm=5: each of the two bulk kernels its own count
    early.gemv_early_slots_for = {{"attn_output", 4}, {"attn_norm", 5}};
    int seen = 0;
    for (const KernelStep& k : schedule_build(p, h200, early).decode) {
        if (!has_define(k.variant, "BULK", "1")) continue;
        const std::string_view first = first_kind(p, k);
        if (first == "attn_output") {
            EXPECT_TRUE(has_define(k.variant, "BULK_PRE", "4")) << k.symbol;
        } else if (first == "attn_norm") {
            EXPECT_FALSE(defines(k.variant, "BULK_PRE")) << k.symbol;
        }
        seen += first == "attn_output" || first == "attn_norm";
    }
    EXPECT_EQ(seen, 4);  // 2 layers
    early.gemv_early_slots_for.clear();
    // gemv.grid.KIND attn_output=66: that kernel on 66 blocks, the others on every SM
    ScheduleOptions half;
    half.gemv_grid_for = {{"attn_output", 66}};
    int half_n = 0;
    for (const KernelStep& k : schedule_build(p, h200, half).decode) {
        if (!has_define(k.variant, "BULK", "1")) continue;
        const bool ao = first_kind(p, k) == "attn_output";
        if (ao) {
            EXPECT_EQ(k.grid.x, 66u) << k.symbol;
        }
        half_n += ao;
    }
    EXPECT_EQ(half_n, 2);
    // by default a Q4_0 attn_output (the bulk gemv after attention) takes 76 of the 132 SMs;
    // attn_output=999 gives it every SM again (4096 rows, 32 a block: 128 blocks)
    ScheduleOptions all;
    all.gemv_grid_for = {{"attn_output", 999}};
    for (const auto& [opts, want] : {std::pair{ScheduleOptions{}, 76u}, std::pair{all, 128u}}) {
        int n = 0;
        for (const KernelStep& k : schedule_build(p, h200, opts).decode) {
            if (!has_define(k.variant, "BULK", "1")) continue;
            if (first_kind(p, k) == "attn_output") {
                EXPECT_EQ(k.grid.x, want) << k.symbol;
                ++n;
            } else {
                EXPECT_GE(k.grid.x, 128u) << k.symbol;
            }
        }
        EXPECT_EQ(n, 2);
    }
    early.gemv_early_slots = 5;  // all before the wait: nothing late, no BULK_FILL_AT_LOADS either
    for (const KernelStep& k : schedule_build(p, h200, early).decode) {
        EXPECT_FALSE(defines(k.variant, "BULK_PRE")) << k.symbol;
        EXPECT_FALSE(defines(k.variant, "BULK_FILL_AT_LOADS")) << k.symbol;
    }
    auto wide8 = tiny(GgmlType::Q8_0, GgmlType::Q8_0, false, 4096);
    int bulk8 = 0;
    for (const KernelStep& k : schedule_build(plan_build(*wide8, PlanOptions{128, 16, 1}), h200, {}).decode) {
        if (!has_define(k.variant, "BULK", "1")) continue;
        ++bulk8;
        EXPECT_TRUE(has_define(k.variant, "BULK_PRE", "3")) << k.symbol;  // Q8_0: 3 of 5 early
        EXPECT_TRUE(has_define(k.variant, "BULK_FILL_AT_LOADS", "1")) << k.symbol;
    }
    EXPECT_GT(bulk8, 0);
}

// gemv.load=bulk for plain-type (F16) gemvs: by default for every one with x in shared memory and
// 256-column multiples (narrow models too), rows round the blocks first; `lanes` below sm_90.
TEST(ScheduleGates, BulkRingsForPlainTypeGemvs) {
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    ScheduleOptions o;
    o.force = {{"gemv.load", "bulk"}};
    // F16: bulk by default for every plain-type gemv with x in shared memory and
    // 256-column multiples (narrow models too), rows round the blocks first; `lanes` below sm_90.
    // The rings: 512-column items (2 rows x 1 KiB; 16 warps x 6 slots = 192 KiB + the 16 KiB
    // float x copy); forcing the gate changes nothing for them
    auto f16_narrow = tiny(GgmlType::F16, GgmlType::F16, false);
    EXPECT_EQ(gate(schedule_build(plan_build(*f16_narrow, PlanOptions{128, 16, 1}), h200, {}), "gemv.load"), "bulk");
    auto f16 = tiny(GgmlType::F16, GgmlType::F16, false, 4096);
    const Plan pf = plan_build(*f16, PlanOptions{128, 16, 1});
    EXPECT_EQ(gate(schedule_build(pf, h200, {}), "gemv.load"), "bulk");
    EXPECT_EQ(gate(schedule_build(pf, DeviceInfo::for_target("sm_80"), {}), "gemv.load"), "lanes");
    int f16_bulk = 0;
    for (const auto& opts : {ScheduleOptions{}, o}) {
        for (const KernelStep& k : schedule_build(pf, h200, opts).decode) {
            if (!has_define(k.variant, "BULK", "1")) continue;
            ++f16_bulk;
            EXPECT_TRUE(has_define(k.variant, "X_SMEM", "1")) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "BULK_CH", "512")) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "BULK_S", "6")) << k.symbol;
            EXPECT_EQ(k.smem, 4096u * 4 + 16u * 6 * 2 * 1024) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "WARP_MAJOR", "1")) << k.symbol;
        }
    }
    // per layer q/k/v, attn_output, gate/up (4096 columns; ffn_down's 352 are no 256-multiple);
    // the output; by default and forced
    EXPECT_EQ(f16_bulk, 2 * (2 * 3 + 1));
}

// gemv.trigger=start (gemv.cu TRIGGER_EARLY): with PDL, the split-layout bulk gemvs trigger their
// dependents at their start; the other gemvs (lanes, F16 bulk) after their last loads; forced:
// every gemv; without PDL (sm_80, launch.pdl=serial) `loads`, and forcing `start` is refused.
TEST(ScheduleGates, SplitBulkGemvsTriggerTheNextKernelAtTheirStart) {
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    auto wide = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false, 4096);
    const Plan p = plan_build(*wide, PlanOptions{128, 16, 1});
    const Schedule s = schedule_build(p, h200, {});
    EXPECT_EQ(gate(s, "gemv.trigger"), "start");
    int early = 0, gemvs = 0;
    for (const KernelStep& k : s.decode) {
        if (k.symbol.find("__gemv_") == std::string::npos) continue;
        ++gemvs;
        const bool split_bulk = has_define(k.variant, "BULK", "1") && has_define(k.variant, "WSPLIT", "1");
        EXPECT_EQ(has_define(k.variant, "TRIGGER_EARLY", "1"), split_bulk) << k.symbol;
        early += split_bulk;
    }
    EXPECT_EQ(early, 4);  // q/k/v and attn_output of 2 layers
    EXPECT_GT(gemvs, early);
    auto f16 = tiny(GgmlType::F16, GgmlType::F16, false, 4096);  // bulk, plain rows: `loads`
    const Plan pf = plan_build(*f16, PlanOptions{128, 16, 1});
    const Schedule sf = schedule_build(pf, h200, {});
    EXPECT_EQ(gate(sf, "gemv.trigger"), "loads");
    for (const KernelStep& k : sf.decode) EXPECT_FALSE(defines(k.variant, "TRIGGER_EARLY")) << k.symbol;
    ScheduleOptions all;
    all.force = {{"gemv.trigger", "start"}};
    for (const KernelStep& k : schedule_build(pf, h200, all).decode) {
        if (k.symbol.find("__gemv_") != std::string::npos) {
            EXPECT_TRUE(has_define(k.variant, "TRIGGER_EARLY", "1")) << k.symbol;
        }
    }
    EXPECT_EQ(gate(schedule_build(p, DeviceInfo::for_target("sm_80"), {}), "gemv.trigger"), "loads");
    EXPECT_THROW(schedule_build(p, DeviceInfo::for_target("sm_80"), all), Error);
    ScheduleOptions serial;
    serial.force = {{"launch.pdl", "serial"}};
    EXPECT_EQ(gate(schedule_build(p, h200, serial), "gemv.trigger"), "loads");
}

// gemv_balance (--print-threads): row sets per block as gemv.cu assigns them. The 8B q/k/v gemv
// with the bulk rings: 6144 rows, 2 per group, 16 groups in each of 132 blocks: 3072 sets in 2
// passes; block-major, the second pass's 960 sets fill blocks 0-59 (16 each): 32 on those; group-
// major they go 8 or 7 to every block: 16 + 8 = 24. The mean is 3072 / 132 = 23.3.
TEST(ScheduleGates, GemvBalanceCountsRowSetsPerBlock) {
    KernelStep k;
    k.variant = Variant("cuda/gemv.cu", "");
    k.variant.set("N_MAT", 3).set("ROWS0", 4096).set("ROWS1", 1024).set("ROWS2", 1024).set("BLOCK", 512)
        .set("ROWS_PER_BLOCK", 32).set("REDUCE", 1).set("EPI", 4);
    k.grid = Dim3(132);
    auto b = gemv_balance(k);
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->sets, 3072);
    EXPECT_EQ(b->passes, 2);
    EXPECT_EQ(b->max_per_block, 32);
    EXPECT_NEAR(b->mean_per_block, 23.27, 0.01);
    k.variant = Variant("cuda/gemv.cu", "");
    k.variant.set("N_MAT", 3).set("ROWS0", 4096).set("ROWS1", 1024).set("ROWS2", 1024).set("BLOCK", 512)
        .set("ROWS_PER_BLOCK", 32).set("REDUCE", 1).set("EPI", 4).set("WARP_MAJOR", 1);
    EXPECT_EQ(gemv_balance(k)->max_per_block, 24);
    // gate/up (EPI 2): one output row per group pass over ROWS0 = 14336 rows, 7 passes; the
    // seventh's 1664 sets: 104 full blocks block-major (112), 12-13 per block group-major (109)
    k.variant = Variant("cuda/gemv.cu", "");
    k.variant.set("N_MAT", 2).set("ROWS0", 14336).set("ROWS1", 14336).set("BLOCK", 512).set("ROWS_PER_BLOCK", 16)
        .set("REDUCE", 1).set("EPI", 2);
    b = gemv_balance(k);
    EXPECT_EQ(b->passes, 7);
    EXPECT_EQ(b->max_per_block, 112);
    k.variant.set("WARP_MAJOR", 1);
    EXPECT_EQ(gemv_balance(k)->max_per_block, 109);
    // not a gemv: nothing
    k.variant = Variant("cuda/attention_decode.cu", "");
    EXPECT_FALSE(gemv_balance(k).has_value());
}

// The norm weight of a normed Q4_0 / Q8_0 gemv before the PDL wait (gemv.cu NW_EARLY): by default the lanes
// gemvs under gemv.early=load (H200 1B Q4_0 +5.4 %), not the bulk ones (8B Q4_0 -1.1 %); gemv.norm_early
// takes every normed one, gemv.norm_early=off none; never a gemv without a norm or of another type
TEST(ScheduleGates, NormWeightBeforeThePdlWaitOnTheLanesGemvs) {
    auto m = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false, 512, 768);
    const Plan p = plan_build(*m, PlanOptions{256, 16, 1});
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    auto count = [&](const ScheduleOptions& o) {
        int n = 0, normed = 0;
        for (const KernelStep& k : schedule_build(p, h200, o).decode) {
            if (k.variant.source != "cuda/gemv.cu") continue;
            const bool nw = has_define(k.variant, "NW_EARLY", "1");
            EXPECT_TRUE(!nw || has_define(k.variant, "NORM_IN", "1")) << k.symbol;
            n += nw;
            normed += has_define(k.variant, "NORM_IN", "1");
        }
        return std::pair<int, int>{n, normed};
    };
    ScheduleOptions o;
    const auto lanes = count(o);
    EXPECT_GT(lanes.second, 0);
    EXPECT_EQ(lanes.first, lanes.second);  // every normed gemv (lanes: 512 columns)
    ScheduleOptions bulk = o;
    bulk.force["gemv.load"] = "bulk";
    EXPECT_EQ(count(bulk).first, 1);  // only the 64-row output head, which keeps the lanes loop
    bulk.gemv_norm_early = 1;
    EXPECT_EQ(count(bulk).first, count(bulk).second);
    ScheduleOptions none = o;
    none.gemv_norm_early = 0;
    EXPECT_EQ(count(none).first, 0);
    ScheduleOptions wait = o;
    wait.force["gemv.early"] = "wait";
    EXPECT_EQ(count(wait).first, 0);
    auto f16 = tiny(GgmlType::F16, GgmlType::F16, false, 512, 768);
    const Plan pf = plan_build(*f16, PlanOptions{256, 16, 1});
    for (const KernelStep& k : schedule_build(pf, h200, o).decode) EXPECT_FALSE(k.variant.has("NW_EARLY")) << k.symbol;
}

}  // namespace
