// The schedule's gate gemv.xq=producer, without a GPU: a kernel quantizes its output for the gemv
// after it (gemv.cu XQ_OUT / XQ_IN): the SwiGLU gate/up gemv for ffn_down, decode attention for
// attn_output, and with gemv.xq_norm the embedding or a residual gemv for the normed gemvs.
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

// gemv.xq=producer (sm_90 with the bulk gemvs): the SwiGLU gate/up gemv quantizes its output for the
// split-layout ffn_down after it (XQ_OUT on gate/up: the consumer's columns, Q4_0 planes; XQ_IN on
// ffn_down), both on the "gemv_xq" scratch buffer. Gate/up's blocks of 16 rows a pass complete each
// group of 32 in clusters of 2 (XQ_NP passes, an even grid, the device's pairs all resident). The
// sibling, and shapes it cannot take, keep each block's prologue.
TEST(ScheduleGates, GemvXqGateUpQuantizesForFfnDown) {
    auto m = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false, 512, 768);  // 24 groups of 32 rows
    const Plan p = plan_build(*m, PlanOptions{256, 16, 1});
    ScheduleOptions o;
    o.force["gemv.load"] = "bulk";
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    const Schedule s = schedule_build(p, h200, o);
    const KernelStep& gu = at(s.decode, "ffn_norm_gate_up_act");
    const KernelStep& down = at(s.decode, "ffn_down_residual");
    EXPECT_TRUE(has_define(gu.variant, "XQ_OUT", "1"));
    EXPECT_TRUE(has_define(gu.variant, "XQ_C", "768"));
    EXPECT_TRUE(has_define(gu.variant, "XQ_PLANES", "1"));
    EXPECT_TRUE(has_define(gu.variant, "XQ_CL", "2"));
    EXPECT_TRUE(has_define(gu.variant, "XQ_NP", "1"));  // 768 rows on 48 blocks of 16
    EXPECT_EQ(gu.grid.x, 48u);
    EXPECT_EQ(gu.cluster.x, 2u);
    EXPECT_EQ(gu.args[7].kind, KArg::Kind::Scratch);
    EXPECT_EQ(gu.args[7].scratch, "gemv_xq");
    EXPECT_TRUE(has_define(down.variant, "XQ_IN", "1"));
    EXPECT_EQ(down.args[9].scratch, "gemv_xq");
    EXPECT_EQ(s.scratch.at("gemv_xq"), 768u + 768u / 32u * 8u);
    EXPECT_EQ(at(s.decode, "attn_output_residual").args[9].scratch, "attn_xq");  // its x: attention's (below)
    // the gemv before the pairs (16 blocks here) in clusters of 2 too, unless gemv.cluster.KIND names it
    EXPECT_EQ(at(s.decode, "attn_output_residual").cluster.x, 2u);
    ScheduleOptions none = o;
    none.gemv_cluster_for = {{"attn_output", 1}};
    EXPECT_EQ(at(schedule_build(p, h200, none).decode, "attn_output_residual").cluster.x, 1u);
    auto gate_up = [&](const DeviceInfo& d, const ScheduleOptions& so) { return at(schedule_build(p, d, so).decode, "ffn_norm_gate_up_act"); };
    ScheduleOptions g8 = o;
    g8.gemv_grid_for = {{"ffn_norm", 8}};  // 6 passes of 128 rows
    EXPECT_TRUE(has_define(gate_up(h200, g8).variant, "XQ_NP", "6"));
    ScheduleOptions g3 = o;
    g3.gemv_grid_for = {{"ffn_norm", 3}};  // an odd grid: no pairs
    EXPECT_FALSE(at(schedule_build(p, h200, g3).decode, "ffn_down_residual").variant.has("XQ_IN"));
    ScheduleOptions g4 = o;
    g4.gemv_grid_for = {{"ffn_norm", 4}};  // 12 passes: more than the leader's 8 slots
    EXPECT_FALSE(gate_up(h200, g4).variant.has("XQ_OUT"));
    DeviceInfo few = h200;  // a device whose GPCs hold fewer pairs than half its SMs: the sibling
    for (int k = 1; k <= 16; ++k) few.clusters_1pm[size_t(k)] = k == 1 ? 132 : 60;
    EXPECT_FALSE(gate_up(few, o).variant.has("XQ_OUT"));
    ScheduleOptions sib = o;
    sib.force["gemv.xq"] = "block";
    const Schedule sb = schedule_build(p, h200, sib);
    EXPECT_FALSE(at(sb.decode, "ffn_norm_gate_up_act").variant.has("XQ_OUT"));
    EXPECT_EQ(at(sb.decode, "ffn_norm_gate_up_act").cluster.x, 1u);
    EXPECT_EQ(at(sb.decode, "attn_output_residual").cluster.x, 1u);
    EXPECT_FALSE(at(sb.decode, "ffn_down_residual").variant.has("XQ_IN"));
    ScheduleOptions cf = sib;
    cf.gemv_cluster_for = {{"attn_output", 2}};  // gemv.cluster.KIND: clusters the kernel does not use
    EXPECT_EQ(at(schedule_build(p, h200, cf).decode, "attn_output_residual").cluster.x, 2u);
    ScheduleOptions lanes;  // gemv.load=lanes (these shapes' default): no bulk gemvs, no producer
    EXPECT_FALSE(gate_up(h200, lanes).variant.has("XQ_OUT"));
    o.force["gemv.load"] = "lanes";
    o.force["gemv.xq"] = "producer";
    EXPECT_THROW(schedule_build(p, h200, o), std::exception);
}

// gemv.xq=producer, the other producer: the decode attention quantizes its output for attn_output
// (attention_decode.cu / attention_decode_tma.cu XQ_OUT, the xq argument last), which copies it
// (XQ_IN); not with gemv.xq=block, not where attn_output is no bulk Q4_0 gemv
TEST(ScheduleGates, GemvXqAttentionQuantizesForAttnOutput) {
    auto m = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false, 512, 768);  // 8 heads of 64: 16 groups
    const Plan p = plan_build(*m, PlanOptions{256, 16, 1});
    ScheduleOptions o;
    o.force["gemv.load"] = "bulk";
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    auto check = [&](const ScheduleOptions& so, const char* source, size_t n_args) {
        SCOPED_TRACE(source);
        const Schedule s = schedule_build(p, h200, so);
        const KernelStep& a = at(s.decode, "attn");
        const KernelStep& out = at(s.decode, "attn_output_residual");
        EXPECT_EQ(a.variant.source, source);
        EXPECT_TRUE(has_define(a.variant, "XQ_OUT", "1"));
        EXPECT_TRUE(has_define(a.variant, "XQ_PLANES", "1"));
        ASSERT_EQ(a.args.size(), n_args);
        EXPECT_EQ(a.args.back().kind, KArg::Kind::Scratch);
        EXPECT_EQ(a.args.back().scratch, "attn_xq");
        EXPECT_TRUE(has_define(out.variant, "XQ_IN", "1"));
        EXPECT_EQ(out.args[9].scratch, "attn_xq");
        EXPECT_EQ(s.scratch.at("attn_xq"), 512u + 512u / 32u * 8u);
        EXPECT_EQ(at(s.decode, "ffn_down_residual").args[9].scratch, "gemv_xq");
    EXPECT_TRUE(has_define(at(s.decode, "ffn_down_residual").variant, "BULK_PRE", "4"));  // its x: one bulk copy  // its own producer's buffer
    };
    check(o, "cuda/attention_decode.cu", 10);
    ScheduleOptions tma = o;
    tma.force["attn.kv"] = "tma";
    check(tma, "cuda/attention_decode_tma.cu", 9);
    auto none = [&](const ScheduleOptions& so) {
        const Schedule s = schedule_build(p, h200, so);
        EXPECT_FALSE(at(s.decode, "attn").variant.has("XQ_OUT"));
        EXPECT_FALSE(at(s.decode, "attn_output_residual").variant.has("XQ_IN"));
        EXPECT_EQ(at(s.decode, "attn").args.back().kind, KArg::Kind::Null);  // xq unused
    };
    ScheduleOptions sib = o;
    sib.force["gemv.xq"] = "block";
    none(sib);
    ScheduleOptions off = o;
    off.attn_xq = false;  // tune attn.xq=off: gate/up's producer only
    none(off);
    EXPECT_TRUE(at(schedule_build(p, h200, off).decode, "ffn_down_residual").variant.has("XQ_IN"));
    none(ScheduleOptions{});  // gemv.load=lanes (these shapes' default): attn_output prologue as before
    auto q8 = tiny(GgmlType::Q8_0, GgmlType::Q8_0, false, 512, 768);
    const Plan p8 = plan_build(*q8, PlanOptions{256, 16, 1});
    EXPECT_FALSE(at(schedule_build(p8, h200, o).decode, "attn").variant.has("XQ_OUT"));  // Q8_0: only forced
    ScheduleOptions all = o;
    all.force["gemv.xq"] = "producer";
    const Schedule s8 = schedule_build(p8, h200, all);
    EXPECT_TRUE(has_define(at(s8.decode, "attn").variant, "XQ_PLANES", "0"));
    EXPECT_TRUE(has_define(at(s8.decode, "attn_output_residual").variant, "XQ_IN", "1"));
}

// gemv.xq_norm: every normed bulk gemv of the decode list (q/k/v, gate/up, the output head) takes its
// x quantized by the kernel before it: the embedding or a residual gemv (a block pass of 32 rows: one
// group), which gets the consumer's norm weight and writes the scratch buffer the consumer reads
TEST(ScheduleGates, GemvXqNormQuantizesTheResidualStream) {
    auto m = tiny(GgmlType::Q4_0, GgmlType::Q4_0, false, 512, 768);
    const Plan p = plan_build(*m, PlanOptions{256, 16, 1});
    ScheduleOptions o;
    o.force["gemv.load"] = "bulk";
    o.gemv_xq_norm = true;
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    const Schedule s = schedule_build(p, h200, o);
    int consumers = 0, from_embed = 0;
    for (size_t i = 0; i < s.decode.size(); ++i) {
        const KernelStep& c = s.decode[i];
        if (c.variant.source != "cuda/gemv.cu" || !has_define(c.variant, "NORM_IN", "1")) continue;
        SCOPED_TRACE(c.symbol + " of layer " + std::to_string(c.layer));
        if (!has_define(c.variant, "BULK", "1")) {  // (the 64-row output head: lanes)
            EXPECT_FALSE(c.variant.has("XQ_IN"));
            continue;
        }
        ++consumers;
        EXPECT_TRUE(has_define(c.variant, "XQ_IN", "1"));
        EXPECT_EQ(c.args[9].kind, KArg::Kind::Scratch);
        EXPECT_EQ(c.args[9].scratch, "norm_xq");
        EXPECT_FALSE(c.variant.has("XQ_NORM"));
        ASSERT_GT(i, 0u);
        const KernelStep& pr = s.decode[i - 1];
        if (pr.variant.source == "cuda/embed.cu") {
            ++from_embed;
            EXPECT_TRUE(has_define(pr.variant, "XQ_OUT", "1"));
            EXPECT_TRUE(has_define(pr.variant, "XQ_PLANES", "1"));
            ASSERT_EQ(pr.args.size(), 5u);
            EXPECT_EQ(pr.args[3].kind, KArg::Kind::Weight);
            EXPECT_EQ(pr.args[3].w, c.args[10].w);  // the consumer's norm weight
            EXPECT_EQ(pr.args[4].scratch, "norm_xq");
            continue;
        }
        EXPECT_TRUE(has_define(pr.variant, "XQ_OUT", "1"));
        EXPECT_TRUE(has_define(pr.variant, "XQ_NORM", "1"));
        EXPECT_TRUE(has_define(pr.variant, "XQ_CL", "1"));
        EXPECT_TRUE(has_define(pr.variant, "XQ_NP", "1"));  // 512 rows on 16 blocks of 32
        EXPECT_TRUE(has_define(pr.variant, "XQ_C", "512"));
        EXPECT_TRUE(has_define(pr.variant, "EPI", "1"));
        EXPECT_EQ(pr.args[7].scratch, "norm_xq");  // y1
        ASSERT_EQ(pr.args[10].kind, KArg::Kind::Weight);
        EXPECT_EQ(pr.args[10].w, c.args[10].w);
        ASSERT_NE(c.args[10].w, nullptr);
    }
    EXPECT_EQ(consumers, 2 * p.config->n_layers);  // q/k/v and gate/up each layer
    EXPECT_EQ(from_embed, 1);
    EXPECT_EQ(s.scratch.at("norm_xq"), 512u + 512u / 32u * 12u);  // the groups' sums after (d, 8 sum)
    // gate/up is a consumer and still gate/up's own producer for ffn_down; its normed early slots as they were
    ScheduleOptions off = o;  // the default: gemv.xq_norm not given
    off.gemv_xq_norm = false;
    ScheduleOptions sib = o;
    sib.force["gemv.xq"] = "block";
    const KernelStep& gu = at(s.decode, "ffn_norm_gate_up_act");
    EXPECT_TRUE(has_define(gu.variant, "XQ_OUT", "1"));
    EXPECT_TRUE(has_define(gu.variant, "XQ_CL", "2"));
    EXPECT_TRUE(has_define(gu.variant, "BULK_PRE",
                           define_value(at(schedule_build(p, h200, off).decode, "ffn_norm_gate_up_act").variant, "BULK_PRE")));
    auto none = [&](const ScheduleOptions& so) {
        const Schedule n = schedule_build(p, h200, so);
        for (const KernelStep& k : n.decode) {
            EXPECT_FALSE(k.variant.has("XQ_NORM")) << k.symbol;
            if (k.variant.source == "cuda/embed.cu") {
                EXPECT_FALSE(k.variant.has("XQ_OUT"));
                ASSERT_EQ(k.args.size(), 5u);
                EXPECT_EQ(k.args[4].kind, KArg::Kind::Null);
            }
            if (has_define(k.variant, "NORM_IN", "1")) {
                EXPECT_FALSE(k.variant.has("XQ_IN")) << k.symbol;
            }
        }
        EXPECT_FALSE(n.scratch.count("norm_xq"));
    };
    none(off);
    none(sib);
    auto q8 = tiny(GgmlType::Q8_0, GgmlType::Q8_0, false, 512, 768);
    const Plan p8 = plan_build(*q8, PlanOptions{256, 16, 1});
    const Schedule s8 = schedule_build(p8, h200, o);  // Q8_0: only with gemv.xq forced
    for (const KernelStep& k : s8.decode) EXPECT_FALSE(k.variant.has("XQ_NORM")) << k.symbol;
    ScheduleOptions all = o;
    all.force["gemv.xq"] = "producer";
    EXPECT_TRUE(has_define(at(schedule_build(p8, h200, all).decode, "ffn_down_residual").variant, "XQ_PLANES", "0"));
    // the batch list's embedding: no producer, the same five arguments
    for (const KernelStep& k : s.batch)
        if (k.variant.source == "cuda/embed.cu") {
            EXPECT_FALSE(k.variant.has("XQ_OUT"));
            EXPECT_EQ(k.args.size(), 5u);
        }
}

}  // namespace
