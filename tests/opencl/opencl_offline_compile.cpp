// Every OpenCL program variant of both sides of every gate compiled offline by clang's OpenCL
// front end (-fsyntax-only for spir64) for a device that reports sub-groups, fp16 and fp64, and
// for the other spellings of sub-group support (label offline, as the NVRTC compile checks): the
// PoCL device of CI reports none of those, so this is where the reduce=subgroup and fp16=half
// sources are checked. Skips where no clang is found.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "backends/opencl/cl_program.h"
#include "opencl/cl_test_plans.h"

namespace jitllm {
namespace {

using test::device;
using test::Loaded;
using test::stories;

// clang's OpenCL front end, for the offline compile (empty where there is none)
std::string clang() {
    for (const char* c : {"clang", "clang-15", "clang-14"})
        if (test::run_command(std::string("command -v ") + c, nullptr, nullptr) == 0) return c;
    return "";
}

// Every distinct unit text of `s` through `clang -fsyntax-only` for spir64 with the device's
// extensions (one clang process for them all); returns the number checked
int compile_offline(const ClSchedule& s, const std::string& cl_std, const std::string& ext, std::set<std::string>& seen) {
    std::string files, legend;
    int n = 0;
    for (const Variant& v : cl_schedule_variants(s)) {
        const std::string text = ClPrograms::unit_text(v, s.build_options);
        if (!seen.insert(cl_std + ext + text).second) continue;
        const std::string path = testing::TempDir() + "/jitllm_cl_unit" + std::to_string(n++) + ".cl";
        std::ofstream(path) << text;
        files += " '" + path + "'";
        legend += path + ": " + v.display_name() + "\n";
    }
    if (n == 0) return 0;
    std::string out, err;
    const int rc = test::run_command(clang() + " -x cl -cl-std=" + cl_std + " -target spir64 -Xclang -finclude-default-header"
                                     " -Xclang -fdeclare-opencl-builtins -Xclang -cl-ext=" + ext + " -fsyntax-only -Werror" + files,
                                     &out, &err);
    EXPECT_EQ(rc, 0) << "(" << cl_std << ", " << ext << "):\n" << err << "\n" << legend;
    return n;
}

TEST(ClProgramsOffline, EveryVariantOfBothSidesOfEveryGateCompiles) {
    if (clang().empty()) GTEST_SKIP() << "no clang here for the offline OpenCL compile";
    const std::string syn = test::data_path("golden/synthetic/");
    const std::vector<std::string> files = {stories(), syn + "llama-q4_k_m.gguf", syn + "qwen2-q8_0.gguf",
                                            syn + "phi3-q4_0.gguf", syn + "qwen3-q5_k_s.gguf", syn + "granite-f16.gguf",
                                            syn + "mistral3-q8_0.gguf", syn + "qwen2moe-q4_0.gguf"};
    const ClDeviceInfo all = device({"cl_khr_subgroups", "cl_khr_fp16", "cl_khr_fp64"}, "CL2.0");
    const std::string ext = "+cl_khr_subgroups,+cl_khr_fp16,+cl_khr_fp64";
    std::set<std::string> seen;
    int n = 0;
    for (const std::string& f : files) {
        Loaded m(f, 8);
        for (int variant = 0; variant < 2; ++variant) {
            ClScheduleOptions o;
            o.fuse = variant == 0;
            if (variant == 1)  // every gate's sibling
                o.force = {{"reduce", "local"},        {"fp16", "float"},        {"kv.type", "float"},
                           {"gemv.vec", "scalar"},     {"gemv.grid", "full"},    {"weights.layout", "blocks"},
                           {"batch.xrows", "per-row"}, {"rope.angles", "computed"}};
            n += compile_offline(cl_schedule_build(m.plan, all, o), "CL2.0", ext, seen);
        }
        if (f != stories() && f.find("moe") == std::string::npos) continue;
        // the other spellings of sub-group support (Intel's drivers take OpenCL C 2.0 and later)
        n += compile_offline(cl_schedule_build(m.plan, device({"cl_intel_subgroups"}, "CL2.0"), {}), "CL2.0",
                             "+cl_intel_subgroups", seen);
        n += compile_offline(cl_schedule_build(m.plan, device({"__opencl_c_subgroups"}, "CL3.0"), {}), "CL3.0",
                             "+__opencl_c_subgroups,+__opencl_c_fp64", seen);
    }
    std::printf("[opencl] %d program units compiled offline\n", n);
    EXPECT_GT(n, 40);
}

}  // namespace
}  // namespace jitllm
