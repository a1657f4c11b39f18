// The schedule's layout, launch and list gates, without a GPU: weights.layout (which matrices are
// stored in the split Q4_0/Q8_0 layout, which kernels read it, and that the embedding table never
// is), launch.pdl (programmatic launches on sm_90, never on sm_80, never in the batch phase), every
// gate listed for --force-variant, batch.small and batch.xrows (the batch phase's gemv lists), and
// rope.angles / rope.fuse (the host-filled RoPE table and RoPE in the q/k/v gemv). Their numerics
// and speed are checked on the GPU (kernels_vs_cpu_test, engine_golden_test, prefill_modes_test,
// docs/performance.md).
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

TEST(ScheduleGates, SplitLayoutTakesWholeRowsOf256AndNeverTheEmbedding) {
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0}) {
        SCOPED_TRACE(type_name(t));
        auto m = tiny(t, t, /*tied=*/true);
        const Plan p = plan_build(*m, PlanOptions{128, 16, 1});
        const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), {});
        EXPECT_EQ(gate(s, "weights.layout"), "split");
        std::set<std::string> split;
        for (const WeightTensor* w : s.split_weights) split.insert(w->name);
        EXPECT_TRUE(split.count("blk.0.attn_q.weight"));
        EXPECT_TRUE(split.count("blk.1.ffn_up.weight"));
        EXPECT_TRUE(split.count("blk.0.attn_output.weight"));
        EXPECT_FALSE(split.count("blk.0.ffn_down.weight"));  // rows of 352
        EXPECT_FALSE(split.count("token_embd.weight"));      // embed rows; also the tied output
        // the kernels that read split matrices say so (define and symbol), the others do not
        const KernelStep* qkv = step(s.decode, "attn_norm_qkv_rope_kv_store");
        ASSERT_NE(qkv, nullptr);
        EXPECT_TRUE(has_define(qkv->variant, "WSPLIT", "1"));
        EXPECT_NE(qkv->symbol.find("_split"), std::string::npos) << qkv->symbol;
        const KernelStep* down = step(s.decode, "ffn_down_residual");
        ASSERT_NE(down, nullptr);
        EXPECT_FALSE(has_define(down->variant, "WSPLIT", "1"));
        const KernelStep* out = step(s.decode, "output_norm_output");
        ASSERT_NE(out, nullptr);
        EXPECT_EQ(out->symbol.find("_split"), std::string::npos) << out->symbol;
        const KernelStep* gu = step(s.batch, "ffn_gate_up_act");
        ASSERT_NE(gu, nullptr);
        EXPECT_TRUE(has_define(gu->variant, "WSPLIT", "1")) << gu->symbol;
        // the sibling keeps every matrix in GGUF blocks
        ScheduleOptions o;
        o.force = {{"weights.layout", "blocks"}};
        const Schedule b = schedule_build(p, DeviceInfo::for_target("sm_90"), o);
        EXPECT_EQ(gate(b, "weights.layout"), "blocks");
        EXPECT_TRUE(b.split_weights.empty());
        EXPECT_FALSE(has_define(at(b.decode, "attn_norm_qkv_rope_kv_store").variant, "WSPLIT", "1"));
    }
    // other types have no split layout
    auto m = tiny(GgmlType::Q4_1, GgmlType::Q4_1, false);
    const Plan p = plan_build(*m, PlanOptions{128, 16, 1});
    const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), {});
    EXPECT_EQ(gate(s, "weights.layout"), "blocks");
    EXPECT_TRUE(s.split_weights.empty());
}

TEST(ScheduleGates, ProgrammaticLaunchOnSm90) {
    auto f16 = tiny(GgmlType::F16, GgmlType::F16, false);
    const Plan p = plan_build(*f16, PlanOptions{128, 16, 1});
    const Schedule s90 = schedule_build(p, DeviceInfo::for_target("sm_90"), {});
    EXPECT_EQ(gate(s90, "launch.pdl"), "pdl");
    for (const auto* ph : {&s90.decode, &s90.prefill})
        for (const KernelStep& k : *ph) {
            EXPECT_TRUE(k.pdl) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "PDL", "1")) << k.symbol;
        }
    for (const KernelStep& k : s90.batch) EXPECT_FALSE(k.pdl) << k.symbol;  // gemm.cu has no PDL hooks
    const Schedule s80 = schedule_build(p, DeviceInfo::for_target("sm_80"), {});
    EXPECT_EQ(gate(s80, "launch.pdl"), "serial");
    for (const KernelStep& k : s80.decode) EXPECT_FALSE(k.pdl) << k.symbol;
    ScheduleOptions o;
    o.force = {{"launch.pdl", "pdl"}};
    EXPECT_THROW(schedule_build(p, DeviceInfo::for_target("sm_80"), o), Error);
    // split-layout quantized matrices too (measured faster with PDL since the int8-x gemv), and
    // the serial sibling when forced
    auto q4 = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false);
    const Plan pq = plan_build(*q4, PlanOptions{128, 16, 1});
    const Schedule sq = schedule_build(pq, DeviceInfo::for_target("sm_90"), {});
    EXPECT_FALSE(sq.split_weights.empty());
    EXPECT_EQ(gate(sq, "launch.pdl"), "pdl");
    ScheduleOptions serial;
    serial.force = {{"launch.pdl", "serial"}};
    EXPECT_EQ(gate(schedule_build(pq, DeviceInfo::for_target("sm_90"), serial), "launch.pdl"), "serial");
}

// --force-variant's help and its unknown-gate message list schedule_gate_choices(): every gate a
// schedule records must be there as "gate=chosen|sibling" or "gate=sibling|chosen", on several targets
// and types (a gate added to the schedule but not to the list fails here)
TEST(ScheduleGates, EveryRecordedGateIsListedWithItsTwoVariants) {
    const std::vector<std::string> choices = schedule_gate_choices();
    std::set<std::string> seen;
    for (GgmlType t : {GgmlType::F16, GgmlType::Q4_0, GgmlType::Q8_0}) {
        auto m = tiny(t, t, false);
        const Plan p = plan_build(*m, PlanOptions{1024, 16, 1});
        for (const char* target : {"sm_75", "sm_80", "sm_90"}) {
            const Schedule s = schedule_build(p, DeviceInfo::for_target(target), {});
            for (const GateDecision& g : s.gates) {
                seen.insert(g.gate);
                const std::string a = g.gate + "=" + g.chosen + "|" + g.sibling, b = g.gate + "=" + g.sibling + "|" + g.chosen;
                EXPECT_TRUE(std::find(choices.begin(), choices.end(), a) != choices.end() ||
                            std::find(choices.begin(), choices.end(), b) != choices.end())
                    << a << " (" << target << ")";
            }
        }
    }
    EXPECT_GE(seen.size(), 25u);  // the schedule records most gates on every build
    const std::vector<std::string> names = schedule_gate_names();
    EXPECT_EQ(names.size(), choices.size());
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size()) << "a gate listed twice";
    auto m = tiny(GgmlType::F16, GgmlType::F16, false);
    const Plan p = plan_build(*m, PlanOptions{128, 16, 1});
    const DeviceInfo d = DeviceInfo::for_target("sm_90");
    ScheduleOptions o;
    o.force = {{"gemv.nonsense", "x"}};
    EXPECT_THROW(schedule_build(p, d, o), Error);
    // kv.type is forced like the others (the same as --kv-f32)
    o.force = {{"kv.type", "float"}};
    EXPECT_EQ(schedule_build(p, d, o).kv_type, "float");
    EXPECT_EQ(gate(schedule_build(p, d, o), "kv.type"), "float");
    o.force = {{"kv.type", "bf16"}};
    EXPECT_THROW(schedule_build(p, d, o), Error);
    o.force = {{"kv.type", "half"}};
    o.kv_f32 = true;
    EXPECT_THROW(schedule_build(p, d, o), Error);
}

// rope.fuse=gemv (default with rope.angles=table): RoPE and the KV store ride in the q/k/v gemv
TEST(ScheduleFusion, FuseRopeTakesRopeAndKvStoreIntoTheQkvGemv) {
    auto m = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false);  // llama: adjacent-pair (norm) RoPE
    const Plan p = plan_build(*m, PlanOptions{128, 16, 1});
    const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), {});
    EXPECT_EQ(gate(s, "rope.fuse"), "gemv");
    const KernelStep* qkv = step(s.decode, "attn_norm_qkv_rope_kv_store");
    ASSERT_NE(qkv, nullptr);
    EXPECT_TRUE(has_define(qkv->variant, "EPI", "4"));
    EXPECT_TRUE(has_define(qkv->variant, "N_ROT", "64"));
    EXPECT_EQ(qkv->tasks.size(), 4u);  // attn_norm, attn_qkv, attn_rope, attn_kv_store
    for (const KernelStep& k : s.decode) EXPECT_EQ(k.symbol.find("rope_norm"), std::string::npos) << k.symbol;
    EXPECT_NE(step(s.prefill, "attn_norm_qkv_rope_kv_store"), nullptr);
    EXPECT_EQ(step(s.batch, "attn_norm_qkv_rope_kv_store"), nullptr);  // batch rows keep rope.cu
    // the sibling (rope.cu after the gemv): forced, with computed angles (its default then), and with --no-fuse
    for (const auto& force : std::vector<std::map<std::string, std::string>>{{{"rope.fuse", "kernel"}},
                                                                             {{"rope.angles", "computed"}}}) {
        ScheduleOptions o;
        o.force = force;
        const Schedule d = schedule_build(p, DeviceInfo::for_target("sm_90"), o);
        EXPECT_EQ(gate(d, "rope.fuse"), "kernel");
        EXPECT_EQ(step(d.decode, "attn_norm_qkv_rope_kv_store"), nullptr);
        EXPECT_NE(step(d.decode, "attn_norm_qkv"), nullptr);
    }
    ScheduleOptions u;
    u.fuse = false;
    EXPECT_EQ(step(schedule_build(p, DeviceInfo::for_target("sm_90"), u).decode, "attn_qkv_rope_kv_store"), nullptr);
    // forced with computed angles: the epilogue computes them (no table)
    ScheduleOptions c;
    c.force = {{"rope.angles", "computed"}, {"rope.fuse", "gemv"}};
    const Schedule sc = schedule_build(p, DeviceInfo::for_target("sm_90"), c);
    ASSERT_NE(step(sc.decode, "attn_norm_qkv_rope_kv_store"), nullptr);
    EXPECT_FALSE(has_define(at(sc.decode, "attn_norm_qkv_rope_kv_store").variant, "ROPE_TABLE", "1"));
}

TEST(ScheduleFusion, RopeTableFeedsEveryRopeKernel) {
    auto m = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false);
    const Plan p = plan_build(*m, PlanOptions{128, 16, 1});
    for (const char* fuse : {"kernel", "gemv"}) {
        ScheduleOptions o;
        o.force = {{"rope.fuse", fuse}};
        const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), o);
        EXPECT_EQ(gate(s, "rope.angles"), "table");
        EXPECT_EQ(s.rope_table.n_pos, 128);
        EXPECT_EQ(s.rope_table.n_rot, m->config.n_rot);
        ASSERT_TRUE(s.scratch.count("rope_table"));
        EXPECT_EQ(s.scratch.at("rope_table"), size_t(128) * size_t(m->config.n_rot / 2) * 8);
        int users = 0;
        for (const auto* ph : {&s.decode, &s.prefill, &s.batch})
            for (const KernelStep& k : *ph) {
                const bool rope = k.symbol.find("rope") != std::string::npos;
                EXPECT_EQ(has_define(k.variant, "ROPE_TABLE", "1"), rope) << k.symbol;
                if (rope) ++users;
            }
        EXPECT_GT(users, 0);
    }
    ScheduleOptions c;
    c.force = {{"rope.angles", "computed"}};
    const Schedule off = schedule_build(p, DeviceInfo::for_target("sm_90"), c);
    EXPECT_EQ(off.rope_table.n_pos, 0);
    EXPECT_FALSE(off.scratch.count("rope_table"));
}

TEST(ScheduleGates, OneRowBatchListIsGemvOnlyAndCoversTheSameTasks) {
    for (GgmlType t : {GgmlType::F16, GgmlType::Q4_0, GgmlType::Q8_0}) {
        SCOPED_TRACE(type_name(t));
        auto m = tiny(t, t, false);
        const Plan p = plan_build(*m, PlanOptions{128, 16, 1});
        ASSERT_FALSE(p.batch.empty());
        ScheduleOptions gemm;
        gemm.force = {{"batch.small", "gemm"}};
        const Schedule off = schedule_build(p, DeviceInfo::for_target("sm_90"), gemm);
        EXPECT_EQ(gate(off, "batch.small"), "gemm");
        EXPECT_TRUE(off.batch_small.empty());
        EXPECT_EQ(gate(off, "batch.pdl"), "serial");
        EXPECT_EQ(off.batch_small_rows, 0);
        ScheduleOptions o;  // the default: steps of up to 8 rows through the gemv list
        const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), o);
        EXPECT_EQ(gate(s, "batch.small"), "gemv");
        ASSERT_FALSE(s.batch_small.empty());
        EXPECT_EQ(s.batch_small_rows, 8);
        o.batch_small_rows = 1;
        EXPECT_EQ(schedule_build(p, DeviceInfo::for_target("sm_90"), o).batch_small_rows, 1);
        // gate batch.pdl (default pdl on sm_90): the gemv list with PDL, the GEMM list without
        EXPECT_EQ(gate(s, "batch.pdl"), "pdl");
        for (const auto& k : s.batch_small) {
            EXPECT_TRUE(k.pdl) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "PDL", "1")) << k.symbol;
        }
        for (const auto& k : s.batch) EXPECT_FALSE(k.pdl) << k.symbol;
        const Schedule s80 = schedule_build(p, DeviceInfo::for_target("sm_80"), o);
        EXPECT_EQ(gate(s80, "batch.pdl"), "serial");  // launch.pdl needs sm_90
        for (const auto& k : s80.batch_small) EXPECT_FALSE(k.pdl) << k.symbol;
        ScheduleOptions serial;
        serial.force = {{"batch.pdl", "serial"}};
        const Schedule ss = schedule_build(p, DeviceInfo::for_target("sm_90"), serial);
        EXPECT_EQ(gate(ss, "batch.pdl"), "serial");
        for (const auto& k : ss.batch_small) EXPECT_FALSE(k.pdl) << k.symbol;
        ScheduleOptions force80;
        force80.force = {{"batch.pdl", "pdl"}};
        EXPECT_THROW(schedule_build(p, DeviceInfo::for_target("sm_80"), force80), Error);
        // batch.bulk: the gemv list's products through the bulk rings where decode's are
        ScheduleOptions bulk;
        bulk.batch_bulk = true;
        const Schedule sb = schedule_build(p, DeviceInfo::for_target("sm_90"), bulk);
        auto bulk_count = [](const std::vector<KernelStep>& ks) {
            int n = 0;
            for (const auto& k : ks) n += has_define(k.variant, "BULK", "1") ? 1 : 0;
            return n;
        };
        EXPECT_EQ(bulk_count(s.batch_small), 0);
        EXPECT_EQ(bulk_count(sb.batch_small), bulk_count(sb.decode)) << "the same products as decode's";
        for (const auto& k : sb.batch_small)
            if (has_define(k.variant, "BULK", "1")) {  // at most one block an SM for each of the step's rows
                int nb = 0;
                for (const auto& [name, value] : k.variant.defines)
                    if (name == "ROWS_INNER") nb = std::stoi(value);
                EXPECT_GT(nb, 0) << k.symbol;
                EXPECT_LE(nb, DeviceInfo::for_target("sm_90").sm_count) << k.symbol;
                EXPECT_EQ(k.grid.x, unsigned(nb * p.batch_rows)) << k.symbol;
            }
        // ... and not the x-rows list (steps of 2+ rows): its gemvs keep reading each weight row once for
        // several rows (gemv.load=bulk forced: every split-layout gemv of decode streams through rings)
        ScheduleOptions bulk_all = bulk;
        bulk_all.force = {{"gemv.load", "bulk"}};
        const Schedule sa = schedule_build(p, DeviceInfo::for_target("sm_90"), bulk_all);
        EXPECT_EQ(bulk_count(sa.batch_small), bulk_count(sa.decode));
        if (t != GgmlType::F16) {
            EXPECT_GT(bulk_count(sa.batch_small), 0);
        }
        EXPECT_EQ(bulk_count(sa.batch_xrows), 0);
        ASSERT_EQ(sa.batch_xrows.size(), s.batch_xrows.size());
        for (size_t i = 0; i < s.batch_xrows.size(); ++i) EXPECT_EQ(sa.batch_xrows[i].symbol, s.batch_xrows[i].symbol);
        EXPECT_EQ(s.batch_xrows.empty(), t == GgmlType::F16) << "the x-rows gemvs are Q4_0 / Q8_0 ones";
        bool any_gemm = false;
        for (const auto& k : s.batch) any_gemm = any_gemm || k.symbol.find("__gemm_") != std::string::npos;
        EXPECT_TRUE(any_gemm) << "the GEMM list keeps its tiles";
        auto covered = [&](const std::vector<KernelStep>& ks, size_t from, size_t to) {
            std::set<int> tasks;
            for (size_t i = from; i < to; ++i) tasks.insert(ks[i].tasks.begin(), ks[i].tasks.end());
            return tasks;
        };
        EXPECT_EQ(covered(s.batch_small, 0, s.batch_small_body), covered(s.batch, 0, s.batch_body));
        EXPECT_EQ(covered(s.batch_small, s.batch_small_body, s.batch_small.size()),
                  covered(s.batch, s.batch_body, s.batch.size()));
        int gemv = 0, norms = 0;
        for (const auto& k : s.batch_small) {
            EXPECT_EQ(k.symbol.find("__gemm_"), std::string::npos) << k.symbol;
            EXPECT_EQ(k.symbol.find("_to_f16"), std::string::npos) << k.symbol;  // no 16-bit activations
            EXPECT_TRUE(k.pdl) << k.symbol;  // gate batch.pdl=pdl on sm_90
            if (k.symbol.find("__gemv_") != std::string::npos) {
                ++gemv;
                // rows innermost: grid.x = blocks per row group x the step's rows
                EXPECT_EQ(k.rows_dim, 0) << k.symbol;
                EXPECT_TRUE(has_define(k.variant, "ROWS_INNER", std::to_string(k.rows_mul))) << k.symbol;
                EXPECT_EQ(k.grid_for_rows(3).x, 3u * unsigned(k.rows_mul)) << k.symbol;
                EXPECT_EQ(k.grid_for_rows(3).y, 1u) << k.symbol;
            }
            if (k.symbol.find("rms_norm") != std::string::npos) ++norms;
        }
        // per layer: q/k/v, attn_output, gate/up, down; plus the output projection
        EXPECT_EQ(gemv, 4 * m->config.n_layers + 1);
        EXPECT_EQ(norms, 0) << "attn_norm, ffn_norm and output_norm ride in the gemv (NORM_IN)";
        const KernelStep* qkv = step(s.batch_small, "attn_norm_qkv");
        ASSERT_NE(qkv, nullptr);
        EXPECT_TRUE(has_define(qkv->variant, "NORM_IN", "1"));
        // the kernels tool compiles both lists: every variant is in schedule_variants
        std::set<std::string> vs;
        for (const auto& v : schedule_variants(s)) vs.insert(v.display_name());
        for (const auto& k : s.batch_small) EXPECT_TRUE(vs.count(k.variant.display_name())) << k.symbol;
    }
}

// Gate batch.xrows (default shared, batch.xrows=4): a third batch list, for steps of 2 ..
// batch_small_rows rows, whose split-layout Q4_0/Q8_0 gemvs read each weight row once for up to N
// of the step's rows (gemv.cu XROWS): grid.y = ceil(rows / N), one block an SM, a copy of every
// row's int8 x in shared memory (fewer rows where they do not fit), the step's row count as the
// last argument; the small-step list (one-row steps) and decode keep their kernels; no list
// without split-layout weights (F16)
TEST(ScheduleGates, BatchXrowsReadsEachSplitWeightOnceForTheStepsRows) {
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::F16}) {
        SCOPED_TRACE(type_name(t));
        auto m = tiny(t, t, false, 512, 768);  // ff 768: the down projection's rows split too
        const Plan p = plan_build(*m, PlanOptions{128, 16, 1});
        const Schedule s = schedule_build(p, h200, {});  // default: 4 rows a block
        EXPECT_EQ(gate(s, "batch.xrows"), "shared");
        ScheduleOptions off;
        off.batch_xrows = 0;
        const Schedule base = schedule_build(p, h200, off);
        EXPECT_EQ(gate(base, "batch.xrows"), "per-row");
        EXPECT_TRUE(base.batch_xrows.empty());
        ScheduleOptions forced;
        forced.force = {{"batch.xrows", "per-row"}};
        EXPECT_TRUE(schedule_build(p, h200, forced).batch_xrows.empty());
        ASSERT_EQ(s.batch_small.size(), base.batch_small.size());
        for (size_t i = 0; i < s.batch_small.size(); ++i)  // one-row steps: unchanged
            EXPECT_EQ(s.batch_small[i].variant.display_name(), base.batch_small[i].variant.display_name());
        for (size_t i = 0; i < s.decode.size(); ++i)  // decode unchanged
            EXPECT_EQ(s.decode[i].variant.display_name(), base.decode[i].variant.display_name());
        if (t == GgmlType::F16) {
            EXPECT_TRUE(s.batch_xrows.empty()) << "no split-layout products";
            continue;
        }
        ASSERT_EQ(s.batch_xrows.size(), s.batch_small.size());
        EXPECT_EQ(s.batch_xrows_body, s.batch_small_body);
        std::set<std::string> vs;
        for (const auto& v : schedule_variants(s)) vs.insert(v.display_name());
        int xr = 0;
        for (size_t i = 0; i < s.batch_xrows.size(); ++i) {
            const KernelStep& k = s.batch_xrows[i];
            EXPECT_EQ(k.tasks, s.batch_small[i].tasks) << k.symbol;
            EXPECT_TRUE(vs.count(k.variant.display_name())) << k.symbol;
            EXPECT_TRUE(k.pdl) << k.symbol;  // gate batch.pdl
            if (!k.variant.has("XROWS")) {
                EXPECT_EQ(k.variant.display_name(), s.batch_small[i].variant.display_name());
                continue;
            }
            ++xr;
            EXPECT_NE(k.symbol.find("_xrows"), std::string::npos) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "XROWS", "4")) << k.symbol;
            EXPECT_FALSE(k.variant.has("ROWS_INNER")) << k.symbol;
            EXPECT_FALSE(k.variant.has("EARLY_LOAD")) << k.symbol;
            EXPECT_EQ(k.rows_dim, 1) << k.symbol;
            EXPECT_EQ(k.grid_for_rows(2).y, 1u) << k.symbol;
            EXPECT_EQ(k.grid_for_rows(4).y, 1u) << k.symbol;
            EXPECT_EQ(k.grid_for_rows(7).y, 2u) << k.symbol;
            EXPECT_LE(k.grid_for_rows(7).x, unsigned(h200.sm_count)) << k.symbol;
            EXPECT_EQ(k.grid_for_rows(7).x, k.grid_for_rows(2).x) << k.symbol;
            ASSERT_FALSE(k.args.empty());
            EXPECT_EQ(k.args.back().kind, KArg::Kind::Rows) << k.symbol;
            const unsigned cols = k.symbol.find("ffn_down") != std::string::npos ? 768u : 512u;
            EXPECT_EQ(k.smem, 4u * (cols + cols / 32 * 8)) << k.symbol;
        }
        // q/k/v, attn_output, gate/up, down (this model's output projection: GGUF blocks)
        EXPECT_EQ(xr, 4 * m->config.n_layers);
    }
    // rows a block halved until their x copies fit shared memory: ff 28672 is 35 KiB of int8 x a
    // row, so the down projection takes 4 of batch.xrows=8 (its grid.y follows), the others 8
    ScheduleOptions big;
    big.batch_xrows = 8;
    auto wide = tiny(GgmlType::Q8_0, GgmlType::Q8_0, false, 512, 28672);
    const Schedule sw = schedule_build(plan_build(*wide, PlanOptions{128, 16, 1}), h200, big);
    int down = 0;
    for (const KernelStep& k : sw.batch_xrows) {
        if (!k.variant.has("XROWS")) continue;
        const bool is_down = k.symbol.find("ffn_down") != std::string::npos;
        down += is_down ? 1 : 0;
        EXPECT_TRUE(has_define(k.variant, "XROWS", is_down ? "4" : "8")) << k.symbol;
        EXPECT_EQ(k.grid_for_rows(8).y, is_down ? 2u : 1u) << k.symbol;
        EXPECT_LE(k.smem + 2048, unsigned(h200.max_shared_block())) << k.symbol;
    }
    EXPECT_EQ(down, wide->config.n_layers);
}

}  // namespace
