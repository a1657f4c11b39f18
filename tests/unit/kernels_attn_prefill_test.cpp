// Batch-phase attention on tensor cores (attention_prefill.cu, gate attn.prefill), without a GPU:
// the gate's choice and fallbacks, the launch geometry the schedule gives it, and NVRTC
// compilation for sm_80 and sm_90 of the shapes it serves (head_dim 64/80/96/128, GQA 1/2/4/7/8,
// sliding window, several sequences) with no register spills. Its numerics are checked on the GPU
// by prefill_modes_test (JITLLM_TEST_BACKEND=cuda: every chunk size against single-token decode).
#include <gtest/gtest.h>

#include "backends/cuda/schedule.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "jit/jit_compiler.h"
#include "unit/tiny_arch_model.h"

namespace {

using namespace jitllm;
using namespace jitllm::test;

std::unique_ptr<Model> tiny(int heads, int kv, int hd, int window = 0) {
    TinySpec s;
    s.arch = "llama";
    s.n_heads = heads;
    s.n_kv_heads = kv;
    s.head_dim = hd;
    s.dim = 64;
    s.ff = 64;
    s.n_vocab = 64;
    GgufWriter w = tiny_model(s, [](TinyTensor& t) {
        if (t.dims.size() == 2) t.type = GgmlType::F16;
        return true;
    });
    if (window > 0) w.set_u32("llama.attention.sliding_window", uint32_t(window));
    return load_model(GgufReader::from_bytes(w.to_bytes(), "tiny.gguf"));
}

const KernelStep* attn_step(const Schedule& s) {
    for (const auto& k : s.batch)
        if (k.group == "attn") return &k;
    return nullptr;
}

std::string define(const Variant& v, const std::string& name) {
    for (const auto& [k, val] : v.defines)
        if (k == name) return val;
    return "";
}

std::string gate(const Schedule& s, const std::string& name) {
    for (const auto& g : s.gates)
        if (g.gate == name) return g.chosen;
    return "";
}

TEST(AttnPrefill, GateAndGeometry) {
    auto m = tiny(8, 2, 64);  // 4 query heads per kv head: 16 rows per block
    const Plan p = plan_build(*m, PlanOptions{256, 100, 1});
    const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), {});
    EXPECT_EQ(gate(s, "attn.prefill"), "mma");
    const KernelStep* k = attn_step(s);
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->symbol, "attn__flash_mma_f16");
    EXPECT_EQ(k->variant.source, "cuda/attention_prefill.cu");
    EXPECT_EQ(define(k->variant, "SEQ_SPLIT"), "1");
    EXPECT_EQ(define(k->variant, "N_CTX"), "256");
    EXPECT_EQ(k->block.x, 128u);
    EXPECT_EQ(k->smem, 4u * 64u * (2u * 64u + 16u));
    const Dim3 g100 = k->grid_for_rows(100), g1 = k->grid_for_rows(1), g16 = k->grid_for_rows(16);
    EXPECT_EQ(g100.x, 2u);
    EXPECT_EQ(g100.y, 7u);  // ceil(100 / 16)
    EXPECT_EQ(g100.z, 1u);
    EXPECT_EQ(g1.y, 1u);
    EXPECT_EQ(g16.y, 1u);
    EXPECT_GT(k->flops_per_pos, 0u);
    EXPECT_EQ(k->args.back().kind, KArg::Kind::Rows);

    // several sequences (server): the distinct sequences of a tile spread over grid.z
    const Plan p4 = plan_build(*m, PlanOptions{256, 100, 6});
    const Schedule s4 = schedule_build(p4, DeviceInfo::for_target("sm_80"), {});
    const KernelStep* k4 = attn_step(s4);
    ASSERT_NE(k4, nullptr);
    EXPECT_EQ(k4->symbol, "attn__flash_mma_f16");
    EXPECT_EQ(define(k4->variant, "SEQ_SPLIT"), "6");
    EXPECT_EQ(k4->grid_for_rows(6).z, 6u);
}

TEST(AttnPrefill, SiblingWhereMmaDoesNotApply) {
    auto m = tiny(8, 2, 64);
    const Plan p = plan_build(*m, PlanOptions{256, 64, 1});
    {  // no mma.sync f16 / cp.async
        const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_75"), {});
        EXPECT_EQ(gate(s, "attn.prefill"), "rows");
        EXPECT_EQ(attn_step(s)->symbol, "attn__causal_rows_f16");
    }
    {  // float cache
        ScheduleOptions o;
        o.kv_f32 = true;
        const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), o);
        EXPECT_EQ(gate(s, "attn.prefill"), "rows");
        EXPECT_EQ(attn_step(s)->symbol, "attn__causal_rows_f32");
    }
    {  // forced sibling
        ScheduleOptions o;
        o.force = {{"attn.prefill", "rows"}};
        const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), o);
        EXPECT_EQ(attn_step(s)->symbol, "attn__causal_rows_f16");
    }
    {  // forcing mma where it cannot run is a usage error, as is an unknown value
        ScheduleOptions o;
        o.force = {{"attn.prefill", "mma"}};
        EXPECT_THROW(schedule_build(p, DeviceInfo::for_target("sm_75"), o), Error);
        o.force = {{"attn.prefill", "tiles"}};
        EXPECT_THROW(schedule_build(p, DeviceInfo::for_target("sm_90"), o), Error);
    }
    auto odd = tiny(4, 2, 72);  // head_dim not a multiple of 16
    const Plan po = plan_build(*odd, PlanOptions{256, 64, 1});
    EXPECT_EQ(gate(schedule_build(po, DeviceInfo::for_target("sm_90"), {}), "attn.prefill"), "rows");
}

TEST(AttnPrefill, CompilesWithoutSpillsForEveryShape) {
    struct Shape { int heads, kv, hd, window, n_seq; };
    const Shape shapes[] = {{4, 4, 64, 0, 1},  {8, 4, 64, 0, 1},   {8, 2, 128, 0, 1}, {8, 1, 128, 0, 1},
                            {14, 2, 64, 0, 1}, {4, 2, 80, 0, 1},   {4, 1, 96, 0, 1},  {4, 4, 64, 32, 1},
                            {8, 2, 128, 0, 8}};
    std::vector<Variant> vs;
    for (const Shape& sh : shapes) {
        auto m = tiny(sh.heads, sh.kv, sh.hd, sh.window);
        const Plan p = plan_build(*m, PlanOptions{256, 64, sh.n_seq});
        const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), {});
        const KernelStep* k = attn_step(s);
        ASSERT_NE(k, nullptr);
        ASSERT_EQ(k->symbol, "attn__flash_mma_f16") << sh.heads << "/" << sh.kv << " hd " << sh.hd;
        if (sh.window > 0) {
            EXPECT_EQ(define(k->variant, "WINDOW"), std::to_string(sh.window));
        }
        vs.push_back(k->variant);
    }
    for (const char* arch : {"sm_80", "sm_90"}) {
        std::unique_ptr<JitCompiler> jit;
        try {
            JitOptions jo;
            jo.cache.disk = false;
            jit = std::make_unique<JitCompiler>(arch, jo);
        } catch (const Error& e) {
            GTEST_SKIP() << "no NVRTC: " << e.what();
        }
        const auto done = jit->compile_all(vs);
        ASSERT_EQ(done.size(), vs.size());
        for (const auto& ck : done) {
            EXPECT_EQ(std::max(0, ck.usage.spill_stores) + std::max(0, ck.usage.spill_loads), 0)
                << arch << " " << ck.variant.display_name();
            EXPECT_LE(ck.usage.registers, 255) << arch << " " << ck.variant.display_name();
        }
    }
}

}  // namespace
