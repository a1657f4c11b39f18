// Every OpenCL program variant of both sides of every gate compiled offline by clang's OpenCL
// front end (-fsyntax-only for spir64) for a device that reports sub-groups, fp16 and fp64, and
// for the other spellings of sub-group support and integer dot products (label offline, as the
// NVRTC compile checks): the PoCL device of CI reports none of those, so this is where the
// reduce=subgroup, fp16=half and gemv.idot=dot4 sources are checked. NVIDIA's spellings (warp
// shuffles and dp4a in inline PTX) are compiled for nvptx64 and their PTX assembled by ptxas
// (/usr/local/cuda). Skips where no clang is found.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "backends/opencl/cl_program.h"
#include "opencl/cl_test_plans.h"

namespace jitllm {
namespace {

using test::device;
using test::Loaded;
using test::stories;

// clang's OpenCL front end, for the offline compile, the newest first (clang 14 declares no
// vload_half for nvptx64 at OpenCL C 3.0; Debian's PoCL brings clang-15); empty where there is none
std::string clang() {
    for (const char* c : {"clang-17", "clang-16", "clang-15", "clang", "clang-14"})
        if (test::run_command(std::string("command -v ") + c, nullptr, nullptr) == 0) return c;
    return "";
}

std::string ptxas() {
    const std::string p = "/usr/local/cuda/bin/ptxas";
    return test::run_command("test -x " + p, nullptr, nullptr) == 0 ? p : "";
}

// A scratch file name of this process (two test runs on one machine share the temporary folder)
std::string scratch(const char* kind, int n) {
    return testing::TempDir() + "/jitllm_cl_" + std::to_string(getpid()) + "_" + kind + std::to_string(n);
}

// Every distinct unit text of `s` through `clang -fsyntax-only` for spir64 with the device's
// extensions (one clang process for them all); returns the number checked
int compile_offline(const ClSchedule& s, const std::string& cl_std, const std::string& ext, std::set<std::string>& seen) {
    std::string files, legend;
    int n = 0;
    for (const Variant& v : cl_schedule_variants(s)) {
        const std::string text = ClPrograms::unit_text(v, s.build_options);
        if (!seen.insert(cl_std + ext + text).second) continue;
        const std::string path = scratch("unit", n++) + ".cl";
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

// The builtins clang leaves undefined without a device library (get_local_id, barrier, ...)
// declared .extern, so that ptxas assembles the PTX as a relocatable object
std::string extern_builtins(const std::string& ptx) {
    std::string out;
    size_t at = 0;
    while (at < ptx.size()) {
        size_t eol = ptx.find('\n', at);
        if (eol == std::string::npos) eol = ptx.size();
        const std::string line = ptx.substr(at, eol - at);
        if (line.rfind(".func ", 0) == 0) {  // a declaration: ";" comes before any "{"
            const size_t semi = ptx.find("\n;", at), brace = ptx.find("\n{", at);
            if (semi < brace) out += ".extern ";
        }
        out += line + "\n";
        at = eol + 1;
    }
    return out;
}

// NVIDIA's spellings: every distinct unit of `s` compiled for nvptx64 (clang, OpenCL C 3.0; the
// `asm` NVIDIA's compiler takes is clang's __asm__), then its PTX, inline PTX included, assembled
// for sm_90 by ptxas where there is one
int compile_nvptx(const ClSchedule& s, std::set<std::string>& seen) {
    int n = 0;
    for (const Variant& v : cl_schedule_variants(s)) {
        const std::string text = ClPrograms::unit_text(v, s.build_options);
        if (!seen.insert("nvptx" + text).second) continue;
        const std::string path = scratch("nv", n++);
        std::ofstream(path + ".cl") << text;
        std::string out, err;
        int rc = test::run_command(clang() + " -x cl -cl-std=CL3.0 -target nvptx64-nvidia-nvcl -march=sm_80 -O2"
                                   " -Xclang -finclude-default-header -Xclang -fdeclare-opencl-builtins -Dasm=__asm__"
                                   " -Werror -S -o '" + path + ".ptx' '" + path + ".cl'",
                                   &out, &err);
        EXPECT_EQ(rc, 0) << v.display_name() << ":\n" << err;
        if (rc != 0 || ptxas().empty()) continue;
        std::ofstream(path + ".o.ptx") << extern_builtins(test::read_file(path + ".ptx"));
        rc = test::run_command(ptxas() + " -arch=sm_90 -c '" + path + ".o.ptx' -o '" + path + ".o'", &out, &err);
        EXPECT_EQ(rc, 0) << v.display_name() << " (ptxas):\n" << err;
    }
    return n;
}

TEST(ClProgramsOffline, EveryVariantOfBothSidesOfEveryGateCompiles) {
    if (clang().empty()) GTEST_SKIP() << "no clang here for the offline OpenCL compile";
    const std::string syn = test::data_path("golden/synthetic/");
    const std::vector<std::string> files = {stories(), syn + "llama-q4_k_m.gguf", syn + "qwen2-q8_0.gguf",
                                            syn + "phi3-q4_0.gguf", syn + "qwen3-q5_k_s.gguf", syn + "granite-f16.gguf",
                                            syn + "mistral3-q4_0.gguf", syn + "qwen2moe-q4_0.gguf"};
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
                           {"gemv.align", "narrow"},
                           {"batch.xrows", "per-row"}, {"rope.angles", "computed"}, {"gemv.x", "tiles"}};
            n += compile_offline(cl_schedule_build(m.plan, all, o), "CL2.0", ext, seen);
        }
        if (f != stories() && f.find("moe") == std::string::npos) continue;
        // the other spellings of sub-group support (Intel's drivers take OpenCL C 2.0 and later)
        n += compile_offline(cl_schedule_build(m.plan, device({"cl_intel_subgroups"}, "CL2.0"), {}), "CL2.0",
                             "+cl_intel_subgroups", seen);
        n += compile_offline(cl_schedule_build(m.plan, device({"__opencl_c_subgroups"}, "CL3.0"), {}), "CL3.0",
                             "+__opencl_c_subgroups,+__opencl_c_fp64", seen);
    }
    // packed integer dot products (Q4_0 / Q8_0 products), and NVIDIA's inline PTX
    for (const char* f : {"qwen2-q8_0.gguf", "phi3-q4_0.gguf", "qwen2moe-q4_0.gguf"}) {
        Loaded m(syn + f, 8);
        n += compile_offline(cl_schedule_build(m.plan, device({"cl_khr_integer_dot_product"}, "CL3.0"), {}), "CL3.0",
                             "+cl_khr_integer_dot_product,+__opencl_c_integer_dot_product_input_4x8bit_packed", seen);
    }
    for (const std::string& f : {syn + "llama-q8_0.gguf", syn + "phi3-q4_0.gguf", syn + "qwen3moe-q8_0.gguf"}) {
        Loaded m(f, 8);
        n += compile_nvptx(cl_schedule_build(m.plan, test::nv_device(), {}), seen);
        ClScheduleOptions tiles;  // x in tiles of columns (gate gemv.x) with warp sums and dp4a
        tiles.force["gemv.x"] = "tiles";
        n += compile_nvptx(cl_schedule_build(m.plan, test::nv_device(), tiles), seen);
    }
    std::printf("[opencl] %d program units compiled offline\n", n);
    EXPECT_GT(n, 40);
}

}  // namespace
}  // namespace jitllm
