// NVRTC wrapper: loads without a GPU, compiles a test-only kernel to an sm_XX CUBIN (ELF holding
// the symbol we chose), reports syntax errors in its log, and ptxas -v usage is parsed.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "core/error.h"
#include "jit/nvrtc.h"
#include "jit/source_registry.h"

namespace jitllm {
namespace {

// Uses nothing from common.cuh (whose helpers evolve) but must compile with it included.
const char* kTinyKernel = R"(// test-only kernel
#include "common/common.cuh"
extern "C" __global__ void KERNEL_NAME(float* y, const float* x, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    float v = tile[255 - threadIdx.x];
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    if (i < n) y[i] = v;
}
)";

std::vector<std::string> options(const std::string& arch, const std::string& symbol) {
    std::vector<std::string> o = {
        "-arch=" + arch, "-default-device",        "-std=c++17", "-lineinfo", "--ptxas-options=-v",
        "-DJITLLM_JIT",  "-DKERNEL_NAME=" + symbol};
    if (!Nvrtc::load().include_dir().empty()) o.push_back("-I" + Nvrtc::load().include_dir());
    return o;
}

bool is_elf_with(const std::vector<uint8_t>& bin, const std::string& symbol) {
    const std::string s(bin.begin(), bin.end());
    return s.size() > 4 &&
           s.compare(0, 4,
                     "\x7f"
                     "ELF") == 0 &&
           s.find(symbol) != std::string::npos;
}

TEST(JitNvrtc, loads_and_reports_a_version) {
    const Nvrtc& n = Nvrtc::load();
    EXPECT_TRUE(std::regex_match(n.version(), std::regex(R"(\d+\.\d+)"))) << n.version();
    EXPECT_FALSE(n.library().empty());
    const std::vector<int> archs = n.supported_archs();
    EXPECT_NE(std::find(archs.begin(), archs.end(), 90), archs.end());
}

TEST(JitNvrtc, finds_the_toolkit_headers_it_lacks_builtin) {
    // NVRTC 13 has no builtin cuda_fp16.h; the toolkit include dir must be found beside it.
    if (!std::filesystem::exists("/usr/local/cuda/include/cuda_fp16.h"))
        GTEST_SKIP() << "no toolkit headers on this machine";
    EXPECT_FALSE(Nvrtc::load().include_dir().empty());
}

TEST(JitNvrtc, compiles_a_cubin_per_exact_arch_with_named_header) {
    const std::vector<NvrtcHeader> headers = {
        {"common/common.cuh", kernel_source("cuda/common/common.cuh")}};
    for (const char* arch : {"sm_80", "sm_90", "sm_90a"}) {
        const std::string sym = "test_tiny__probe";
        NvrtcOutput out = Nvrtc::load().compile(kTinyKernel, "test/tiny.cu", options(arch, sym),
                                                headers, /*want_ptx=*/true);
        ASSERT_TRUE(out.ok) << arch << "\n" << out.log;
        EXPECT_TRUE(is_elf_with(out.cubin, sym)) << arch;
        EXPECT_NE(out.ptx.find(".entry " + sym), std::string::npos) << arch;
    }
}

TEST(JitNvrtc, reports_resource_usage_from_ptxas) {
    const std::vector<NvrtcHeader> headers = {
        {"common/common.cuh", kernel_source("cuda/common/common.cuh")}};
    NvrtcOutput out = Nvrtc::load().compile(kTinyKernel, "test/tiny.cu",
                                            options("sm_90", "usage_probe"), headers);
    ASSERT_TRUE(out.ok) << out.log;
    const ResourceUsage u = parse_ptxas_usage(out.log, "usage_probe");
    EXPECT_GT(u.registers, 0) << out.log;
    EXPECT_EQ(u.shared_bytes, 256 * 4) << out.log;  // float tile[256]
    EXPECT_EQ(u.spill_stores, 0);
    EXPECT_EQ(u.spill_loads, 0);
}

TEST(JitNvrtc, syntax_error_gives_log_not_cubin) {
    NvrtcOutput out = Nvrtc::load().compile("extern \"C\" __global__ void k() { int x = ; }",
                                            "test/broken.cu", options("sm_90", "k"));
    EXPECT_FALSE(out.ok);
    EXPECT_TRUE(out.cubin.empty());
    EXPECT_NE(out.log.find("test/broken.cu(1): error"), std::string::npos) << out.log;
}

TEST(JitNvrtc, parses_hand_written_ptxas_lines) {
    const std::string log =
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
        "ptxas info    : Used 99 registers, used 0 barriers, 8 bytes smem\n"
        "ptxas info    : Compiling entry function 'gemv' for 'sm_90'\n"
        "ptxas info    : Function properties for gemv\n"
        "ptxas         .     24 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads\n"
        "ptxas info    : Used 168 registers, used 1 barriers, 4096 bytes smem\n";
    const ResourceUsage u = parse_ptxas_usage(log, "gemv");
    EXPECT_EQ(u.registers, 168);
    EXPECT_EQ(u.stack_bytes, 24);
    EXPECT_EQ(u.spill_stores, 16);
    EXPECT_EQ(u.spill_loads, 12);
    EXPECT_EQ(u.shared_bytes, 4096);
    EXPECT_EQ(parse_ptxas_usage(log, "missing").registers, -1);
}

}  // namespace
}  // namespace jitllm
