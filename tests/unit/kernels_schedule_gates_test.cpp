// The schedule's layout and launch gates, without a GPU: weights.layout (which matrices are stored
// in the split Q4_0/Q8_0 layout, which kernels read it, and that the embedding table never is),
// launch.pdl (programmatic launches on sm_90, never on sm_80, never in the batch phase),
// batch.small (the gemv list of the batch phase's small steps), rope.angles / rope.fuse (the
// host-filled RoPE table and RoPE in the q/k/v gemv) and gemv.early / gemv.grid. Their
// numerics and speed are checked on the GPU (kernels_vs_cpu_test, engine_golden_test,
// prefill_modes_test, docs/performance.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "backends/cuda/schedule.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "quant/quant.h"
#include "unit/tiny_arch_model.h"

namespace {

using namespace jitllm;
using namespace jitllm::test;

// dim 512 (q/k/v, attn_output, gate/up read rows of 512: split), ff 352 (ffn_down rows of 352:
// blocks; or ff), token_embd of type `emb`, every matrix of type `t`
std::unique_ptr<Model> tiny(GgmlType t, GgmlType emb, bool tied, int dim = 512, int ff = 352, int head_dim = 64) {
    TinySpec s;
    s.arch = "llama";
    s.dim = dim;
    s.ff = ff;
    s.n_heads = dim / head_dim;
    s.n_kv_heads = 2;
    s.head_dim = head_dim;
    s.n_vocab = 64;
    GgufWriter w = tiny_model(s, [](TinyTensor&) { return false; });  // keys only
    for (const TinyTensor& x : tiny_tensors(s)) {
        if (tied && x.name == "output.weight") continue;
        const GgmlType ty = x.dims.size() != 2 ? GgmlType::F32 : x.name == "token_embd.weight" ? emb : t;
        uint64_t n = 1;
        for (auto d : x.dims) n *= d;
        std::vector<float> v(n, x.is_norm ? 1.0f : 0.01f);
        std::vector<uint8_t> bytes(row_bytes(ty, x.dims[0]) * (n / x.dims[0]));
        for (uint64_t r = 0; r < n / x.dims[0]; ++r)
            quantize_row(ty, v.data() + r * x.dims[0], bytes.data() + r * row_bytes(ty, x.dims[0]), int64_t(x.dims[0]));
        w.add_tensor(x.name, ty, x.dims, std::move(bytes));
    }
    return load_model(GgufReader::from_bytes(w.to_bytes(), "tiny.gguf"));
}

std::string gate(const Schedule& s, const std::string& name) {
    for (const auto& g : s.gates)
        if (g.gate == name) return g.chosen;
    return "";
}

bool has_define(const Variant& v, const std::string& name, const std::string& val) {
    for (const auto& [k, x] : v.defines)
        if (k == name && x == val) return true;
    return false;
}

std::string define_value(const Variant& v, const std::string& name) {
    for (const auto& [k, x] : v.defines)
        if (k == name) return x;
    return "";
}

bool defines(const Variant& v, const std::string& name) {
    for (const auto& [k, x] : v.defines)
        if (k == name) return true;
    return false;
}

// the task kind of a decode kernel's first task (the key of the --gemv-*-for options)
std::string_view first_kind(const Plan& p, const KernelStep& k) { return task_kind_name(p.decode[size_t(k.tasks[0])].kind); }

const KernelStep* step(const std::vector<KernelStep>& ks, const std::string& group) {
    for (const auto& k : ks)
        if (k.group == group) return &k;
    return nullptr;
}

// the step of a group that must exist (gtest reports the exception as a failure)
const KernelStep& at(const std::vector<KernelStep>& ks, const std::string& group) {
    if (const KernelStep* k = step(ks, group)) return *k;
    throw std::runtime_error("no kernel for task group " + group);
}

// Decode attention's step (a copy: the schedule is a temporary) with split-KV forced unless o says
// otherwise, on the tiny F16 model (8 query heads over 2 kv heads, head dim 64) with n_ctx positions.
// (the register kernel unless the options force attn.kv: the tensor-map kernel is the sm_90 default
// beyond 256 positions of context)
KernelStep split_attn(int n_ctx, ScheduleOptions o, const char* target = "sm_90", GgmlType w = GgmlType::F16) {
    auto m = tiny(w, GgmlType::F16, false);
    const Plan p = plan_build(*m, PlanOptions{n_ctx, 16, 1});
    o.force.emplace("attn.algo", "split");
    o.force.emplace("attn.kv", "ld");
    return at(schedule_build(p, DeviceInfo::for_target(target), o).decode, "attn");
}

// Split-KV at every context when the kv heads leave SMs idle: n_ctx 128 (bench's -p 0 -n 128)
// once took onepass, 5 % slower on the H200; with 64 kv heads on 132 SMs, onepass.
TEST(ScheduleGates, SplitKvAtShortContextsWhenKvHeadsLeaveSmsIdle) {
    auto m = tiny(GgmlType::F16, GgmlType::F16, false);
    for (int n_ctx : {16, 128, 255, 256, 4096}) {
        SCOPED_TRACE(n_ctx);
        const Plan p = plan_build(*m, PlanOptions{n_ctx, 16, 1});
        const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), ScheduleOptions{});
        EXPECT_EQ(gate(s, "attn.algo"), "split");
        // one block per query head: 2 kv heads x 4 (head dim 64: the register kernel at every context)
        EXPECT_EQ(at(s.decode, "attn").grid.x, 8u);
    }
    DeviceInfo few = DeviceInfo::for_target("sm_90");
    few.sm_count = 8;  // 2 kv heads x 4 >= 8 SMs: one block per kv head fills the device
    const Plan p = plan_build(*m, PlanOptions{128, 16, 1});
    EXPECT_EQ(gate(schedule_build(p, few, ScheduleOptions{}), "attn.algo"), "onepass");
}

// attn.early=kv (default): EARLY_KV on the split SIMT kernel with --attn-pipe 2 (the default),
// not on the tensor-core one, the cluster merge or another pipe depth; `wait` turns it off
TEST(ScheduleGates, EarlyKvOnlyOnTheSplitSimtKernelWithPipe2) {
    ScheduleOptions o;
    EXPECT_TRUE(has_define(split_attn(4096, o).variant, "EARLY_KV", "1"));
    EXPECT_TRUE(has_define(split_attn(128, o).variant, "EARLY_KV", "1"));
    ScheduleOptions wait = o;
    wait.force = {{"attn.early", "wait"}};
    EXPECT_FALSE(defines(split_attn(4096, wait).variant, "EARLY_KV"));
    ScheduleOptions pipe1 = o;
    pipe1.attn_pipe = 1;
    EXPECT_FALSE(defines(split_attn(4096, pipe1).variant, "EARLY_KV"));
    ScheduleOptions ring = o;
    ring.attn_kv_stages = 2;
    EXPECT_FALSE(defines(split_attn(4096, ring).variant, "EARLY_KV"));
}

// --kv-l2-prefetch: KV_PF on the q/k/v gemv with the RoPE / KV-store epilogue and bulk rings only
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
// columns (at least 8 units a lane whatever its chunk) reads its x copy; --no-gemv-x-regs: none; the
// lanes gemvs and `--gemv-ablate math` never
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

// --gemv-rows-for KIND=N: only the gemv whose first task is KIND takes N rows a warp and pass (bulk
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

// --gemv-early-blocks-for KIND=B: only that bulk gemv gets BULK_PRE_B (its first B blocks fill the whole
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
// that one leaves free (its first blocks land there early); --no-gemv-early-blocks: none
TEST(ScheduleGates, EarlyBlocksByDefaultAfterAGemvOnFewerBlocks) {
    auto m = tiny(GgmlType::Q4_0, GgmlType::Q4_0, /*tied=*/false, 512, 512);
    const Plan p = plan_build(*m, PlanOptions{512, 16, 1});
    const DeviceInfo d = DeviceInfo::for_target("sm_90");
    for (const bool on : {true, false}) {
        SCOPED_TRACE(on ? "default" : "--no-gemv-early-blocks");
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
// the --gemv-bulk-kb budget.
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
        EXPECT_FALSE(defines(k.variant, "BULK_PF")) << k.symbol;  // --l2-prefetch: off by default
        // Q4_0: 2 of the 5 slots before the PDL wait, the rest once the x prologue's loads are out
        // (sessions 24-25); attn_output, whose x the attention quantizes (gemv.xq=producer): 3
        EXPECT_TRUE(has_define(k.variant, "BULK_PRE", k.variant.has("XQ_IN") ? "3" : "2")) << k.symbol;
        EXPECT_EQ(k.variant.has("XQ_IN"), k.group == "attn_output_residual") << k.symbol;
        EXPECT_TRUE(has_define(k.variant, "BULK_FILL_AT_LOADS", "1")) << k.symbol;
    }
    EXPECT_EQ(bulk, 4);  // 2 layers
    // --gemv-early-slots N sets it (N >= the slots: all before the wait, no define);
    // --no-gemv-fill-at-loads: no hook, and all slots early unless N is given
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
    // --gemv-early-slots-for attn_output=4 attn_norm=5: each of the two bulk kernels its own count
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
    // gemv.bulk_min_slots 6: the bulk gemvs' items shrink until 6 slots fit their 200 KiB
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
    // --gemv-grid-for attn_output=66: that kernel on 66 blocks, the others on every SM
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
    // the batch phase keeps its kernels
    for (const KernelStep& k : s.batch) EXPECT_FALSE(has_define(k.variant, "BULK", "1")) << k.symbol;
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
    // a 1 KiB budget: the smallest items (256 columns), 2 slots
    ScheduleOptions small;
    small.gemv_bulk_kb = 1;
    for (const KernelStep& k : schedule_build(p, h200, small).decode)
        if (has_define(k.variant, "BULK", "1")) {
            EXPECT_TRUE(has_define(k.variant, "BULK_CH", "256")) << k.symbol;
            EXPECT_TRUE(has_define(k.variant, "BULK_S", "2")) << k.symbol;
        }
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
        // --batch-bulk: the gemv list's products through the bulk rings where decode's are
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

// Gate batch.xrows (default shared, --batch-xrows 4): a third batch list, for steps of 2 ..
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
    // row, so the down projection takes 4 of --batch-xrows 8 (its grid.y follows), the others 8
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

// --attn-heads-per-block: decode attention blocks serve fewer query heads of a kv head (grid.x and
// the ticket counters grow by the factor, the kernel gets HPB); a non-divisor is refused. Split
// attention takes one head per block by default, one-pass all of a kv head's heads.
TEST(ScheduleGates, AttentionHeadsPerBlock) {
    auto m = tiny(GgmlType::F16, GgmlType::F16, false);  // 8 query heads over 2 kv heads
    const Plan p = plan_build(*m, PlanOptions{1024, 16, 1});
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    ScheduleOptions o;
    o.force = {{"attn.algo", "split"}, {"attn.kv", "ld"}};
    o.attn_heads_per_block = 4;  // all of a kv head's heads: one block per kv head and split
    const Schedule d = schedule_build(p, h200, o);
    const KernelStep& a = at(d.decode, "attn");
    EXPECT_EQ(a.grid.x, 2u);
    for (const auto& [name, val] : a.variant.defines) EXPECT_NE(name, "HPB");
    EXPECT_EQ(d.scratch.at("attn_tickets"), 2u * 4u);
    o.attn_heads_per_block = 0;  // the default
    const Schedule s = schedule_build(p, h200, o);
    const KernelStep& b = at(s.decode, "attn");
    EXPECT_EQ(b.grid.x, 8u);
    EXPECT_EQ(b.grid.y, a.grid.y);
    EXPECT_TRUE(has_define(b.variant, "HPB", "1"));
    EXPECT_EQ(s.scratch.at("attn_tickets"), 8u * 4u);
    o.force = {{"attn.algo", "onepass"}};
    EXPECT_EQ(at(schedule_build(p, h200, o).decode, "attn").grid.x, 2u);
    o.attn_heads_per_block = 0;
    o.attn_pipe = 1;  // --attn-pipe: split only
    EXPECT_FALSE(has_define(at(schedule_build(p, h200, o).decode, "attn").variant, "PIPE", "1"));
    o.force = {{"attn.algo", "split"}};
    EXPECT_TRUE(has_define(at(schedule_build(p, h200, o).decode, "attn").variant, "PIPE", "1"));
    o.attn_pipe = 0;
    o.attn_heads_per_block = 3;
    EXPECT_THROW(schedule_build(p, h200, o), std::exception);
}

// Split-KV attention's split count (grid.y): three quarters of about two resident blocks per SM for
// 1-2 query heads per block, one for more (132 SMs: 198 or 99 blocks over grid.x), at most one per
// chunk of the context; --attn-splits overrides. (Earlier: SMs / kv heads whatever the heads
// per block; later the whole fill, 264 or 132 blocks.) Now the three
// quarters only before an attn_output of 8 bits a weight or more; narrower ones take the whole fill.
TEST(ScheduleGates, AttentionSplitsFillTheSms) {
    ASSERT_EQ(DeviceInfo::for_target("sm_90").sm_count, 132);
    ScheduleOptions o;  // 16384 positions: 128 chunks of 128
    for (const auto& [hpb, grid_x, splits] : {std::tuple{1, 8u, 24u}, {2, 4u, 49u}, {4, 2u, 49u}}) {
        o.attn_heads_per_block = hpb;
        const KernelStep a = split_attn(16384, o);
        EXPECT_EQ(a.grid.x, grid_x) << hpb;
        EXPECT_EQ(a.grid.y, splits) << hpb;
        EXPECT_TRUE(has_define(a.variant, "N_SPLITS", std::to_string(splits))) << hpb;
    }
    o.attn_heads_per_block = 0;  // default: one head per block
    EXPECT_EQ(split_attn(16384, o).grid.y, 24u);
    o.attn_splits = 5;
    EXPECT_EQ(split_attn(16384, o).grid.y, 5u);
    o.attn_splits = 0;
    EXPECT_EQ(split_attn(1024, o).grid.y, 8u);  // 8 chunks: at most 8 splits
    // narrower than 8 bits a weight after attention (attn_output in Q4_0): the whole fill,
    // 2 x 132 / 8 blocks; Q8_0 (8.5 bits) keeps three quarters
    EXPECT_EQ(split_attn(16384, o, "sm_90", GgmlType::Q4_0).grid.y, 33u);
    EXPECT_EQ(split_attn(16384, o, "sm_90", GgmlType::Q8_0).grid.y, 24u);
}

// attn.vsum=half2 (the default from sm_80): the SIMT decode kernel's V sums
// in f16 pairs per tile (VH2) where its transposed reduction runs; float below sm_80 (forcing half2
// there is refused), with a float cache and with the tensor-core kernel.
TEST(ScheduleGates, AttentionVSumInHalfPairs) {
    ScheduleOptions o;
    EXPECT_TRUE(has_define(split_attn(16384, o).variant, "VH2", "1"));
    EXPECT_TRUE(has_define(split_attn(16384, o, "sm_80").variant, "VH2", "1"));
    EXPECT_FALSE(has_define(split_attn(16384, o, "sm_75").variant, "VH2", "1"));
    ScheduleOptions f = o;
    f.force["attn.vsum"] = "float";
    EXPECT_FALSE(has_define(split_attn(16384, f).variant, "VH2", "1"));
    f = o;
    f.kv_f32 = true;  // the default steps aside
    EXPECT_FALSE(has_define(split_attn(16384, f).variant, "VH2", "1"));
    o.force["attn.vsum"] = "half2";
    EXPECT_TRUE(has_define(split_attn(16384, o).variant, "VH2", "1"));
    o.attn_chunk = 48;  // TILE 3: the plain reduction, no VH2
    EXPECT_FALSE(has_define(split_attn(16384, o).variant, "VH2", "1"));
    o.attn_chunk = 0;
    EXPECT_THROW(split_attn(16384, o, "sm_75"), std::exception);
    f = o;
    f.kv_f32 = true;
    EXPECT_THROW(split_attn(16384, f), std::exception);
}

// The split-KV kernel's defaults: the next chunk loaded during this one's work (PIPE 2) and the
// ticketed merge in one round trip (MERGE1, at most 16 splits); attn.pipe 0 turns the first off; no
// PIPE beside the cp.async ring.
TEST(ScheduleGates, SplitAttentionPipelinesAndMergesInOneTripByDefault) {
    ScheduleOptions o;
    o.attn_splits = 8;  // (this small model's own count is above 16)
    KernelStep a = split_attn(16384, o);
    EXPECT_TRUE(has_define(a.variant, "PIPE", "2"));
    EXPECT_TRUE(has_define(a.variant, "MERGE1", "1"));
    ScheduleOptions f = o;
    f.attn_pipe = 0;
    a = split_attn(16384, f);
    EXPECT_FALSE(has_define(a.variant, "PIPE", "2"));
    EXPECT_TRUE(has_define(a.variant, "MERGE1", "1"));
    f = o;
    f.attn_kv_stages = 3;
    a = split_attn(16384, f);
    EXPECT_FALSE(has_define(a.variant, "PIPE", "2"));
    EXPECT_TRUE(has_define(a.variant, "KV_STAGES", "3"));
    f = o;
    f.attn_splits = 17;  // more splits than one round trip's loads hold
    EXPECT_FALSE(has_define(split_attn(16384, f).variant, "MERGE1", "1"));
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

// rope.angles=table (default): every rope kernel (decode, batch, and the q/k/v gemv with
// rope.fuse=gemv) reads the host-filled (cos, sin) table instead of computing the angles; one table
// of n_ctx x n_rot/2 pairs. The sibling (rope.angles=computed) has no table.
// --attn-kv-stages N: the split-KV kernel gets KV_STAGES and N x 2 (K, V) x TILE x BLOCK x 16 bytes
// of dynamic shared memory; refused below sm_80, together with --attn-pipe, and with 8-byte loads
TEST(ScheduleGates, AttentionKvStagesRing) {
    ScheduleOptions o;
    o.attn_kv_stages = 3;
    const KernelStep a = split_attn(1024, o);  // (once a reference into a temporary)
    EXPECT_TRUE(has_define(a.variant, "KV_STAGES", "3"));
    EXPECT_TRUE(has_define(a.variant, "TILE", "4"));  // 128-position chunks over 32 groups
    EXPECT_EQ(a.smem, 3u * 2 * 4 * 256 * 16);
    EXPECT_THROW(split_attn(1024, o, "sm_75"), std::exception);
    ScheduleOptions both = o;
    both.attn_pipe = 1;
    EXPECT_THROW(split_attn(1024, both), std::exception);
    ScheduleOptions big = o;
    big.attn_heads_per_block = 8;  // 8 heads per block: 8-byte K/V loads
    EXPECT_THROW(split_attn(1024, big), std::exception);
    o.force = {{"attn.algo", "onepass"}};  // one-pass: no ring
    EXPECT_EQ(split_attn(1024, o).smem, 0u);
}

// attn.kv=tma (the default on sm_90 for contexts beyond 256 positions): the tensor-map kernel, a block per (kv head, split)
// of --attn-chunk / 16 warps over tiles of that many positions through a ring of --attn-kv-stages
// slots (each K and V of the tile: 2 x head_dim x chunk halves), the splits filling the SMs with the
// blocks shared memory allows (at most one a tile); the layer's caches and their tensor maps (256
// bytes a layer in scratch, boxes of the chunk's rows); refused below sm_90, with a f32 cache,
// beside the other attention kernels and with the register kernel's knobs.
TEST(ScheduleGates, TmaAttentionCopiesTilesByTensorMaps) {
    ScheduleOptions o;
    o.force["attn.kv"] = "tma";
    auto m = tiny(GgmlType::F16, GgmlType::F16, false);
    const Plan p = plan_build(*m, PlanOptions{4096, 16, 1});
    o.force.emplace("attn.algo", "split");
    const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), o);
    const KernelStep& a = at(s.decode, "attn");  // 8 query heads, 2 kv heads, head dim 64
    EXPECT_EQ(gate(s, "attn.kv"), "tma");
    EXPECT_EQ(a.variant.source, "cuda/attention_decode_tma.cu");
    EXPECT_EQ(a.symbol, "attn__split_kv_tma_f16");
    EXPECT_EQ(a.block.x, 256u);  // 128-position tiles: 8 warps
    EXPECT_EQ(a.grid.x, 2u);
    EXPECT_EQ(a.smem, 1024u + 2 * 2 * 64 * 128 * 2);  // alignment slack, 2 slots
    // 3 blocks an SM (228 KiB), three quarters of 132 SMs before the F16 attn_output, 2 kv heads:
    // min(148, 4096 / 128)
    EXPECT_EQ(a.grid.y, 32u);
    EXPECT_TRUE(has_define(a.variant, "WARPS", "8"));
    EXPECT_TRUE(has_define(a.variant, "STAGES", "2"));
    EXPECT_EQ(a.carveout, 100);
    ASSERT_EQ(a.args.size(), 9u);  // ..., tickets, xq
    EXPECT_EQ(a.args[1].kind, KArg::Kind::KCache);
    EXPECT_EQ(a.args[2].kind, KArg::Kind::VCache);
    EXPECT_EQ(a.args[3].kind, KArg::Kind::KvMaps);
    EXPECT_EQ(a.args[3].layer, 0);
    EXPECT_EQ(s.kv_map_rows, 128);
    EXPECT_FALSE(a.variant.has("MERGE1"));
    EXPECT_EQ(a.cluster.y, 1u);  // no cluster by default
    ScheduleOptions cl = o;
    cl.attn_tma_cluster = 1;  // --attn-tma-cluster 1: a kv head's splits as one cluster
    cl.attn_splits = 12;
    const KernelStep ac = split_attn(4096, cl);
    EXPECT_TRUE(has_define(ac.variant, "CLUSTER", "1"));
    EXPECT_EQ(ac.grid.y, 12u);
    EXPECT_EQ(ac.cluster.x, 1u);
    EXPECT_EQ(ac.cluster.y, 12u);
    EXPECT_FALSE(split_attn(100, cl).variant.has("CLUSTER"));  // one tile: one split, nothing to merge
    cl.attn_splits = 17;
    EXPECT_THROW(split_attn(4096, cl), std::exception);  // at most 16 blocks a cluster
    EXPECT_EQ(s.scratch.at("attn_kv_maps"), size_t(m->config.n_layers) * 256);
    ScheduleOptions small = o;
    small.attn_chunk = 64;
    small.attn_kv_stages = 4;
    const KernelStep b = split_attn(4096, small);
    EXPECT_EQ(b.block.x, 128u);
    EXPECT_EQ(b.smem, 1024u + 4 * 2 * 64 * 64 * 2);
    EXPECT_EQ(split_attn(300, small).grid.y, 5u);  // a split a tile
    EXPECT_EQ(split_attn(300, o).grid.y, 3u);
    for (int bad_chunk : {32, 96}) {
        ScheduleOptions bad = o;
        bad.attn_chunk = bad_chunk;
        EXPECT_THROW(split_attn(4096, bad), std::exception) << bad_chunk;
    }
    ScheduleOptions deep = o;
    deep.attn_kv_stages = 9;
    EXPECT_THROW(split_attn(4096, deep), std::exception);
    ScheduleOptions own = o;
    own.attn_kv_stages = 3;  // the register kernel's
    own.attn_tma_stages = 1;  // --attn-tma-stages: this kernel's own
    EXPECT_TRUE(has_define(split_attn(4096, own).variant, "STAGES", "1"));
    EXPECT_EQ(split_attn(4096, own).smem, 1024u + 1 * 2 * 64 * 128 * 2);
    own.attn_tma_stages = 0;
    EXPECT_TRUE(has_define(split_attn(4096, own).variant, "STAGES", "3"));
    EXPECT_THROW(split_attn(4096, o, "sm_80"), std::exception);
    ScheduleOptions f32 = o;
    f32.kv_f32 = true;
    EXPECT_THROW(split_attn(4096, f32), std::exception);
    ScheduleOptions pipe = o;
    pipe.attn_pipe = 2;
    EXPECT_THROW(split_attn(4096, pipe), std::exception);
    // the default on sm_90 beyond 256 positions of context at head dim 128; within them, at head dim
    // 64 and below sm_90, the register kernel, no maps; one ring slot is the tensor-map kernel's alone
    auto m128 = tiny(GgmlType::F16, GgmlType::F16, false, 512, 352, 128);  // 4 query heads, 2 kv heads
    const Plan p128 = plan_build(*m128, PlanOptions{4096, 16, 1});
    EXPECT_EQ(gate(schedule_build(p128, DeviceInfo::for_target("sm_90"), ScheduleOptions{}), "attn.kv"), "tma");
    EXPECT_EQ(at(schedule_build(plan_build(*m128, PlanOptions{257, 16, 1}), DeviceInfo::for_target("sm_90"), ScheduleOptions{})
                     .decode, "attn").variant.source, "cuda/attention_decode_tma.cu");
    EXPECT_EQ(gate(schedule_build(p, DeviceInfo::for_target("sm_90"), ScheduleOptions{}), "attn.kv"), "ld");  // head dim 64
    for (const char* target : {"sm_90", "sm_80"}) {
        const Plan ps = plan_build(*m128, PlanOptions{target == std::string("sm_90") ? 256 : 4096, 16, 1});
        const Schedule d = schedule_build(ps, DeviceInfo::for_target(target), ScheduleOptions{});
        EXPECT_EQ(gate(d, "attn.kv"), "ld") << target;
        EXPECT_EQ(d.kv_map_rows, 0);
        EXPECT_EQ(d.scratch.count("attn_kv_maps"), 0u);
        EXPECT_EQ(at(d.decode, "attn").variant.source, "cuda/attention_decode.cu");
    }
    // a chunk or a ring it cannot take: the register kernel by default, refused when forced (above)
    for (int chunk : {32, 256}) {
        ScheduleOptions c;
        c.attn_chunk = chunk;
        c.attn_kv_stages = chunk == 256 ? 4 : 0;  // 4 x 256 positions at head dim 128: 525312 bytes
        EXPECT_EQ(gate(schedule_build(p128, DeviceInfo::for_target("sm_90"), c), "attn.kv"), "ld") << chunk;
    }
    ScheduleOptions one;
    one.attn_kv_stages = 1;
    one.force["attn.kv"] = "ld";
    EXPECT_THROW(split_attn(4096, one), std::exception);
}

// --attn-tma-from N: with attn.kv=tma, a second decode list for the positions below N, the same
// kernels in the same order (PDL as decode's) except the register kernel's attention; none without
// the tensor-map kernel; refused with --block-trace (one traced list).
// --attn-tma-cluster -1 (default): a kv head's splits as one thread-block cluster where the device's
// probed GPCs hold every kv head's cluster at once (DeviceInfo::clusters_1pm), the largest such size
// up to the splits wanted if at least half of them; unknown (offline targets) or too small: the ticket.
TEST(ScheduleGates, AttnTmaClusterWhereTheDevicesClustersFit) {
    auto m = tiny(GgmlType::F16, GgmlType::F16, false);  // 2 kv heads; 32 splits wanted at n_ctx 4096
    const Plan p = plan_build(*m, PlanOptions{4096, 16, 1});
    ScheduleOptions o;
    o.force["attn.kv"] = "tma";
    o.force.emplace("attn.algo", "split");
    auto attn = [&](const DeviceInfo& d, const ScheduleOptions& so) { return at(schedule_build(p, d, so).decode, "attn"); };
    DeviceInfo d = DeviceInfo::for_target("sm_90");
    EXPECT_FALSE(attn(d, o).variant.has("CLUSTER"));  // unknown: the ticket
    for (int k = 1; k <= 16; ++k) d.clusters_1pm[size_t(k)] = k <= 12 ? 3 : 1;  // 2 kv heads: clusters of up to 12 fit
    EXPECT_FALSE(attn(d, o).variant.has("CLUSTER"));  // 12 of 32 wanted: fewer than half, the ticket
    EXPECT_EQ(attn(d, o).grid.y, 32u);
    ScheduleOptions s16 = o;
    s16.attn_splits = 16;
    const KernelStep a16 = attn(d, s16);  // --attn-splits 16: that size does not fit, the ticket
    EXPECT_FALSE(a16.variant.has("CLUSTER"));
    EXPECT_EQ(a16.grid.y, 16u);
    s16.attn_splits = 12;
    EXPECT_TRUE(has_define(attn(d, s16).variant, "CLUSTER", "1"));  // it fits: a cluster
    EXPECT_EQ(attn(d, s16).cluster.y, 12u);
    ScheduleOptions s20 = o;
    s20.attn_splits = 20;  // a split count given: a cluster of that size or the ticket
    EXPECT_FALSE(attn(d, s20).variant.has("CLUSTER"));
    EXPECT_EQ(attn(d, s20).grid.y, 20u);
    DeviceInfo d16 = d;
    for (int k = 1; k <= 16; ++k) d16.clusters_1pm[size_t(k)] = 2;  // clusters of up to 16 fit both kv heads
    EXPECT_TRUE(has_define(attn(d16, o).variant, "CLUSTER", "1"));  // 16 of 32 wanted: a cluster of 16
    EXPECT_EQ(attn(d16, o).grid.y, 16u);
    EXPECT_EQ(attn(d16, o).cluster.y, 16u);
    ScheduleOptions off = o;
    off.attn_tma_cluster = 0;  // --attn-tma-cluster 0: the ticket, the splits as wanted
    EXPECT_FALSE(attn(d16, off).variant.has("CLUSTER"));
    EXPECT_EQ(attn(d16, off).grid.y, 32u);
}

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
    // beside the short-context list (--attn-tma-from's automatic 768): its greedy twin, with the
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

TEST(ScheduleGates, AttnTmaFromAddsADecodeListWithTheRegisterKernel) {
    auto m = tiny(GgmlType::F16, GgmlType::F16, false, 512, 352, 128);  // head dim 128: attn.kv=tma by default
    const Plan p = plan_build(*m, PlanOptions{4096, 16, 1});
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    ScheduleOptions o;
    o.attn_tma_from = 512;
    const Schedule s = schedule_build(p, h200, o);
    EXPECT_EQ(s.decode_short_below, 512);
    ASSERT_EQ(s.decode_short.size(), s.decode.size());
    int differ = 0;
    for (size_t i = 0; i < s.decode.size(); ++i) {
        EXPECT_EQ(s.decode_short[i].tasks, s.decode[i].tasks);
        EXPECT_EQ(s.decode_short[i].pdl, s.decode[i].pdl);
        if (s.decode_short[i].symbol != s.decode[i].symbol) {
            ++differ;
            EXPECT_EQ(s.decode[i].variant.source, "cuda/attention_decode_tma.cu");
            EXPECT_EQ(s.decode_short[i].variant.source, "cuda/attention_decode.cu");
        }
    }
    EXPECT_EQ(differ, m->config.n_layers);  // one attention a layer
    // the plan's description names the second list and its replaced kernel
    const std::string described = schedule_describe(p, s, false);
    EXPECT_NE(described.find("positions below 512 (--attn-tma-from)"), std::string::npos) << described;
    EXPECT_NE(described.find("attn__split_kv_f16                           instead of attn__split_kv_tma_f16"),
              std::string::npos) << described;
    // both attention variants compile (the JIT list holds them)
    int tma = 0, regs = 0;
    for (const auto& v : schedule_variants(s)) {
        tma += v.source == "cuda/attention_decode_tma.cu";
        regs += v.source == "cuda/attention_decode.cu";
    }
    EXPECT_EQ(tma, 1);
    EXPECT_EQ(regs, 1);
    o.attn_tma_from = 100000;
    EXPECT_EQ(schedule_build(p, h200, o).decode_short_below, 4096);  // at most the context
    // by default (attn.kv=tma not forced) the positions below 768; forced: one list unless asked;
    // --attn-tma-from 0: one list
    EXPECT_EQ(schedule_build(p, h200, ScheduleOptions{}).decode_short_below, 768);
    EXPECT_EQ(schedule_build(p, h200, ScheduleOptions{}).decode_short.size(), s.decode.size());
    ScheduleOptions forced;
    forced.force["attn.kv"] = "tma";
    EXPECT_TRUE(schedule_build(p, h200, forced).decode_short.empty());
    forced.attn_tma_from = 100;
    EXPECT_EQ(schedule_build(p, h200, forced).decode_short_below, 100);
    ScheduleOptions off;
    off.attn_tma_from = 0;
    EXPECT_TRUE(schedule_build(p, h200, off).decode_short.empty());
    ScheduleOptions ld = o;
    ld.force["attn.kv"] = "ld";
    const Schedule l = schedule_build(p, h200, ld);
    EXPECT_TRUE(l.decode_short.empty());
    EXPECT_EQ(l.decode_short_below, 0);
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

}  // namespace

// gemv.xq=producer (sm_90 with the bulk gemvs): the SwiGLU gate/up gemv quantizes its output for the
// split-layout ffn_down after it (XQ_OUT on gate/up: the consumer's columns, Q4_0 planes; XQ_IN on
// ffn_down), both on the "gemv_xq" scratch buffer. Gate/up's blocks of 16 rows a pass complete each
// group of 32 in clusters of 2 (XQ_NP passes, an even grid, the device's pairs all resident). The
// sibling, and shapes it cannot take, keep each block's prologue.
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

// --gemv-xq-norm: every normed bulk gemv of the decode list (q/k/v, gate/up, the output head) takes its
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
    ScheduleOptions off = o;  // the default: --gemv-xq-norm not given
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
    // the gemv before the pairs (16 blocks here) in clusters of 2 too, unless --gemv-cluster-for names it
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
    cf.gemv_cluster_for = {{"attn_output", 2}};  // --gemv-cluster-for: clusters the kernel does not use
    EXPECT_EQ(at(schedule_build(p, h200, cf).decode, "attn_output_residual").cluster.x, 2u);
    ScheduleOptions lanes;  // gemv.load=lanes (these shapes' default): no bulk gemvs, no producer
    EXPECT_FALSE(gate_up(h200, lanes).variant.has("XQ_OUT"));
    o.force["gemv.load"] = "lanes";
    o.force["gemv.xq"] = "producer";
    EXPECT_THROW(schedule_build(p, h200, o), std::exception);
}

// The norm weight of a normed Q4_0 / Q8_0 gemv before the PDL wait (gemv.cu NW_EARLY): by default the lanes
// gemvs under gemv.early=load (H200 1B Q4_0 +5.4 %), not the bulk ones (8B Q4_0 -1.1 %); --gemv-norm-early
// takes every normed one, --no-gemv-norm-early none; never a gemv without a norm or of another type
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
