// The OpenCL lowering without a device: the gates decided from what a device reports (and forced
// sides it lacks refused) and the kernel names (the CUDA backend's naming rule).
#include <gtest/gtest.h>

#include "backends/opencl/cl_gates.h"
#include "core/error.h"
#include "opencl/cl_test_plans.h"

namespace jitllm {
namespace {

using test::device;
using test::gate;
using test::Loaded;
using test::stories;

TEST(ClGates, DecidedFromTheDeviceExtensions) {
    Loaded m(stories());
    const ClSchedule bare = cl_schedule_build(m.plan, device({}), {});
    EXPECT_EQ(gate(bare, "reduce"), "local");
    EXPECT_EQ(gate(bare, "fp16"), "float");
    EXPECT_EQ(gate(bare, "kv.type"), "half");
    EXPECT_EQ(gate(bare, "rope.angles"), "table");
    for (const Variant& v : cl_schedule_variants(bare)) EXPECT_FALSE(v.has("REDUCE") || v.has("FP16")) << v.display_name();

    const ClSchedule khr = cl_schedule_build(m.plan, device({"cl_khr_subgroups", "cl_khr_fp16"}), {});
    EXPECT_EQ(gate(khr, "reduce"), "subgroup");
    EXPECT_EQ(gate(khr, "fp16"), "half");
    int reducing = 0;
    for (const Variant& v : cl_schedule_variants(khr)) {
        EXPECT_TRUE(v.has("FP16")) << v.display_name();
        if (v.has("WG")) {  // every kernel with a work-group reduction takes the sub-group side
            ++reducing;
            EXPECT_TRUE(v.has("REDUCE") && v.has("SUBGROUP_EXT")) << v.display_name();
        }
    }
    EXPECT_GT(reducing, 3);
    const ClSchedule intel = cl_schedule_build(m.plan, device({"cl_intel_subgroups"}), {});
    EXPECT_EQ(gate(intel, "reduce"), "subgroup");
    const ClSchedule c3 = cl_schedule_build(m.plan, device({"__opencl_c_subgroups"}, "CL3.0"), {});
    EXPECT_EQ(gate(c3, "reduce"), "subgroup");
    const ClSchedule c3_12 = cl_schedule_build(m.plan, device({"__opencl_c_subgroups"}, "CL1.2"), {});
    EXPECT_EQ(gate(c3_12, "reduce"), "local") << "the OpenCL C 3.0 feature needs -cl-std=CL3.0";
}

// NVIDIA's driver reports neither sub-groups nor integer dot products: its warps and dp4a through
// inline PTX are the gated sides there (compute capability 6.1 for dp4a)
TEST(ClGates, NvidiasWarpsAndDp4aThroughInlinePtx) {
    Loaded m(test::data_path("golden/synthetic/llama-q8_0.gguf"));
    const ClSchedule nv = cl_schedule_build(m.plan, test::nv_device(), {});
    EXPECT_EQ(gate(nv, "reduce"), "subgroup");
    EXPECT_EQ(gate(nv, "gemv.idot"), "dot4");
    EXPECT_EQ(gate(nv, "fp16"), "float");
    int dots = 0;
    for (const Variant& v : cl_schedule_variants(nv)) {
        if (v.has("WG")) {
            EXPECT_EQ(test::define_of(v, "SUBGROUP_EXT"), "4") << v.display_name();
        }
        if (v.has("IDOT")) {
            ++dots;
            EXPECT_EQ(test::define_of(v, "IDOT_EXT"), "2") << v.display_name();
            EXPECT_EQ(test::define_of(v, "WTYPE"), "Q8_0") << v.display_name();
        }
    }
    EXPECT_GT(dots, 3);
    EXPECT_EQ(gate(cl_schedule_build(m.plan, test::nv_device(52), {}), "gemv.idot"), "int") << "no dp4a before sm_61";
    const ClSchedule khr = cl_schedule_build(m.plan, device({"cl_khr_integer_dot_product"}, "CL3.0"), {});
    EXPECT_EQ(gate(khr, "gemv.idot"), "dot4");
    EXPECT_EQ(gate(khr, "reduce"), "local");
    ClScheduleOptions o;
    o.force = {{"reduce", "local"}, {"gemv.idot", "int"}};
    for (const Variant& v : cl_schedule_variants(cl_schedule_build(m.plan, test::nv_device(), o)))
        EXPECT_FALSE(v.has("REDUCE") || v.has("IDOT")) << v.display_name();
}

TEST(ClGates, ForcingASideTheDeviceLacksIsRefused) {
    Loaded m(stories());
    auto forced = [&](const std::string& g, const std::string& v, const ClDeviceInfo& d) {
        ClScheduleOptions o;
        o.force[g] = v;
        return cl_schedule_build(m.plan, d, o);
    };
    try {
        forced("reduce", "subgroup", device({}));
        FAIL() << "reduce=subgroup forced on a device without sub-groups";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Usage);
        EXPECT_NE(std::string(e.what()).find("lacks cl_khr_subgroups"), std::string::npos) << e.what();
    }
    EXPECT_THROW(forced("fp16", "half", device({})), Error);
    EXPECT_THROW(forced("gemv.idot", "dot4", device({})), Error);
    EXPECT_THROW(forced("gemv.idot", "dot4", device({"cl_khr_integer_dot_product"}, "CL1.2")), Error);
    EXPECT_THROW(forced("rope.angles", "computed", device({})), Error);  // no fp64
    EXPECT_EQ(gate(forced("rope.angles", "computed", device({"cl_khr_fp64"})), "rope.angles"), "computed");
    EXPECT_EQ(gate(forced("reduce", "local", device({"cl_khr_subgroups"})), "reduce"), "local");
    EXPECT_EQ(gate(forced("kv.type", "float", device({})), "kv.type"), "float");
    EXPECT_EQ(gate(forced("gemv.vec", "scalar", device({})), "gemv.vec"), "scalar");
}

// --opencl without --opencl-device: the first GPU (a host where PoCL's CPU device is listed before
// NVIDIA's runs on the GPU), else the first accelerator, else device 0 (CI: PoCL alone)
TEST(ClDevices, TheDefaultIsTheFirstGpuThenAcceleratorThenDeviceZero) {
    auto dev = [](int index, const char* kind) {
        ClDeviceInfo d = device({});
        d.index = index;
        d.cpu = std::string(kind) == "cpu";
        d.gpu = std::string(kind) == "gpu";
        d.accelerator = std::string(kind) == "acc";
        return d;
    };
    std::string why;
    EXPECT_EQ(cl_default_device({dev(0, "cpu"), dev(1, "gpu")}, &why), 1);
    EXPECT_EQ(why, "the first GPU of 2 devices");
    EXPECT_EQ(cl_default_device({dev(0, "cpu"), dev(1, "acc"), dev(2, "gpu"), dev(3, "gpu")}, &why), 2);
    EXPECT_EQ(cl_default_device({dev(0, "cpu"), dev(1, "acc"), dev(2, "cpu")}, &why), 1);
    EXPECT_EQ(why, "the first accelerator (no GPU) of 3 devices");
    EXPECT_EQ(cl_default_device({dev(0, "cpu")}, &why), 0);
    EXPECT_EQ(why, "the first device (no GPU or accelerator) of 1 device");
    EXPECT_EQ(cl_default_device({dev(0, "cpu"), dev(1, "cpu")}, nullptr), 0);
}

TEST(ClSchedule, KernelNamesFollowTheTaskGroups) {
    Loaded m(stories());
    const ClSchedule s = cl_schedule_build(m.plan, device({}), {});
    std::vector<std::string> names;
    for (const ClStep& k : s.decode)
        if (k.layer <= 0) names.push_back(k.symbol);
    const std::vector<std::string> want = {
        "token_embd__embed_f32", "attn_norm_qkv__gemv_f32", "attn_rope_kv_store__rope", "attn__attention",
        "attn_output_residual__gemv_f32", "ffn_norm_gate_up_act__gemv_f32", "ffn_down_residual__gemv_f32",
        "output_norm_output__gemv_f32", "sample__argmax"};
    EXPECT_EQ(names, want);
    // unfused: one kernel per task, each named by its task kind
    ClScheduleOptions o;
    o.fuse = false;
    const ClSchedule u = cl_schedule_build(m.plan, device({}), o);
    for (const ClStep& k : u.decode) {
        ASSERT_EQ(k.tasks.size(), 1u) << k.symbol;
        EXPECT_EQ(k.group, task_kind_name(m.plan.decode[size_t(k.tasks[0])].kind)) << k.symbol;
    }
    EXPECT_EQ(u.decode.size(), m.plan.decode.size());
}

// gate gemv.align: 16-byte loads only in products whose every row starts 16-byte aligned (a Q4_K_M
// file's Q4_K rows of 144 bytes, not its Q6_K rows of 210); the sibling none
TEST(ClSchedule, WideLoadsWhereEveryRowIs16ByteAligned) {
    Loaded m(test::data_path("golden/synthetic/llama-q4_k_m.gguf"));
    const ClSchedule s = cl_schedule_build(m.plan, device({}), {});
    EXPECT_EQ(gate(s, "gemv.align"), "wide");
    int wide = 0, narrow = 0;
    for (const ClStep& k : s.decode) {
        if (k.symbol.find("__gemv_") == std::string::npos) continue;
        const bool q6k = k.symbol.size() > 4 && k.symbol.compare(k.symbol.size() - 4, 4, "q6_k") == 0;
        EXPECT_EQ(k.variant.has("ALIGN16"), !q6k) << k.symbol;
        ++(q6k ? narrow : wide);
    }
    EXPECT_GT(wide, 0);
    EXPECT_GT(narrow, 0);
    ClScheduleOptions o;
    o.force = {{"gemv.align", "narrow"}};
    const ClSchedule n = cl_schedule_build(m.plan, device({}), o);
    EXPECT_EQ(gate(n, "gemv.align"), "narrow");
    for (const Variant& v : cl_schedule_variants(n)) EXPECT_FALSE(v.has("ALIGN16")) << v.display_name();
}

// gate gemv.sum: with sub-group sums every gemv but the experts' weighted sum (EPI 5) takes its
// row blocks a sub-group at a time (SGSUM), spread over the capped grid's sub-groups; forced to
// group, or without sub-groups, none does, and forcing subgroup there is refused
TEST(ClSchedule, SubGroupsSumRowBlocksOfTheirOwn) {
    Loaded m(test::data_path("golden/synthetic/qwen2moe-q4_0.gguf"));
    ClDeviceInfo nv = test::nv_device();
    nv.compute_units = 2;
    const ClSchedule s = cl_schedule_build(m.plan, nv, {});
    EXPECT_EQ(gate(s, "gemv.sum"), "subgroup");
    int own = 0, weighted = 0;
    for (const ClStep& k : s.decode) {
        if (k.symbol.find("__gemv_") == std::string::npos) continue;
        const bool epi5 = test::define_of(k.variant, "EPI") == "5";
        EXPECT_EQ(k.variant.has("SGSUM"), !epi5) << k.symbol;
        ++(epi5 ? weighted : own);
        if (epi5) continue;
        // the grid capped at 4 work-groups a compute unit, their sub-groups' blocks of 1+ rows
        const int wg = std::stoi(test::define_of(k.variant, "WG"));
        EXPECT_EQ(k.local[0], size_t(wg)) << k.symbol;
        EXPECT_GE(std::stoi(test::define_of(k.variant, "RPB")), 1) << k.symbol;
        EXPECT_LE(k.global[0] / size_t(wg), size_t(4 * nv.compute_units)) << k.symbol;
    }
    EXPECT_GT(own, 3);
    EXPECT_GT(weighted, 0);
    ClScheduleOptions o;
    o.force = {{"gemv.sum", "group"}};
    for (const Variant& v : cl_schedule_variants(cl_schedule_build(m.plan, nv, o))) EXPECT_FALSE(v.has("SGSUM")) << v.display_name();
    const ClSchedule bare = cl_schedule_build(m.plan, device({}), {});
    EXPECT_EQ(gate(bare, "gemv.sum"), "group");
    for (const Variant& v : cl_schedule_variants(bare)) EXPECT_FALSE(v.has("SGSUM")) << v.display_name();
    o.force = {{"gemv.sum", "subgroup"}};
    EXPECT_THROW(cl_schedule_build(m.plan, device({}), o), Error);
}

// gate gemv.sum's rule: a residual stream wider than kClSgsumMaxDim keeps the work-group's sums
// (the gate says why) and their grid of kClGemvGroups work-groups a compute unit; forcing
// subgroup there is allowed (the device has the sums)
TEST(ClSchedule, WideModelsKeepTheWorkGroupsSums) {
    Loaded m(test::data_path("golden/synthetic/llama-q8_0.gguf"));
    ASSERT_NE(m.plan.config, nullptr);
    ModelConfig wide = *m.plan.config;
    ASSERT_LE(wide.dim, kClSgsumMaxDim);
    wide.dim = 2 * kClSgsumMaxDim;
    m.plan.config = &wide;
    ClDeviceInfo nv = test::nv_device();
    nv.compute_units = 2;
    const ClSchedule s = cl_schedule_build(m.plan, nv, {});
    EXPECT_EQ(gate(s, "gemv.sum"), "group");
    int gemvs = 0;
    for (const ClStep& k : s.decode) {
        if (k.symbol.find("__gemv_") == std::string::npos) continue;
        ++gemvs;
        EXPECT_FALSE(k.variant.has("SGSUM")) << k.symbol;
        EXPECT_LE(k.global[0] / k.local[0], size_t(kClGemvGroups * nv.compute_units)) << k.symbol;
    }
    EXPECT_GT(gemvs, 3);
    ClScheduleOptions o;
    o.force = {{"gemv.sum", "subgroup"}};
    const ClSchedule f = cl_schedule_build(m.plan, nv, o);
    EXPECT_EQ(gate(f, "gemv.sum"), "subgroup");
}

}  // namespace
}  // namespace jitllm
