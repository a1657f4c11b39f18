// JitCompiler end to end without a GPU: CUBINs per arch, memory and disk cache hits, misses on a
// changed define, the documented cache layout, corrupt entries rebuilt, compile errors naming
// the variant, parallel batches, JITLLM_ASSERT_NO_COMPILE and the disabled cache.
#include "jit/jit_compiler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"

namespace jitllm {
namespace {

namespace fs = std::filesystem;

const char* kTinyKernel = R"(// test-only kernel
#ifndef JITLLM_JIT
#define SCALE 1
#endif
#include "common/common.cuh"
extern "C" __global__ void KERNEL_NAME(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * SCALE;
}
)";

Variant tiny(int scale, const std::string& symbol = "test_tiny__scale") {
    Variant v("cuda/test_tiny.cu", symbol);
    v.source_text = kTinyKernel;
    return v.set("SCALE", scale);
}

class JitCompilerTest : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() /
               fmt::format("jitllm-jit-test-{}-{}", getpid(), info->name());
        fs::remove_all(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    JitOptions opts(bool disk = true) const { return {{disk, dir_.string()}, 0}; }
    fs::path dir_;
};

bool is_elf_with(const std::vector<uint8_t>& bin, const std::string& symbol) {
    const std::string s(bin.begin(), bin.end());
    return s.size() > 4 &&
           s.compare(0, 4,
                     "\x7f"
                     "ELF") == 0 &&
           s.find(symbol) != std::string::npos;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST_F(JitCompilerTest, compiles_elf_cubins_for_each_arch) {
    for (const char* arch : {"sm_80", "sm_90"}) {
        JitCompiler jit(arch, opts());
        const CompiledKernel k = jit.compile(tiny(2));
        EXPECT_EQ(k.arch, arch);
        EXPECT_TRUE(is_elf_with(k.cubin, "test_tiny__scale")) << arch;
        EXPECT_FALSE(k.from_cache);
        EXPECT_GT(k.usage.registers, 0) << k.log;
    }
    JitCompiler jit("sm_90", opts());
    Variant a = tiny(2);
    a.requires_arch_suffix_a = true;
    const CompiledKernel k = jit.compile(a);
    EXPECT_EQ(k.arch, "sm_90a");
    EXPECT_TRUE(is_elf_with(k.cubin, "test_tiny__scale"));
    EXPECT_TRUE(fs::exists(dir_ / "cuda/sm_90a"));
}

TEST_F(JitCompilerTest, second_compile_hits_memory_then_disk_and_new_define_misses) {
    std::vector<uint8_t> first;
    {
        JitCompiler jit("sm_90", opts());
        first = jit.compile(tiny(2)).cubin;
        const CompiledKernel again = jit.compile(tiny(2));
        EXPECT_TRUE(again.from_cache);
        EXPECT_EQ(again.cubin, first);
        EXPECT_EQ(jit.stats().compiles, 1);
        EXPECT_EQ(jit.stats().memory_hits, 1);
    }
    JitCompiler fresh("sm_90", opts());  // empty memory: must come from disk
    const CompiledKernel k = fresh.compile(tiny(2));
    EXPECT_TRUE(k.from_cache);
    EXPECT_EQ(k.cubin, first);
    EXPECT_GT(k.usage.registers, 0);  // the log is kept in the entry
    EXPECT_EQ(fresh.stats().disk_hits, 1);
    EXPECT_EQ(fresh.stats().compiles, 0);

    const CompiledKernel other = fresh.compile(tiny(3));
    EXPECT_FALSE(other.from_cache);
    EXPECT_EQ(fresh.stats().compiles, 1);
    EXPECT_NE(other.key.hex(), k.key.hex());
}

TEST_F(JitCompilerTest, cache_entry_has_the_documented_layout) {
    JitCompiler jit("sm_90", opts());
    const CompiledKernel k = jit.compile(tiny(2));
    const fs::path entry = dir_ / "cuda/sm_90" / ("test_tiny__scale.SCALE-2." + k.key.hex16());
    EXPECT_EQ(jit.entry_dir(tiny(2)), entry.string());
    EXPECT_EQ(k.source_path, (entry / "source.cu").string());
    for (const char* f : {"source.cu", "options.txt", "kernel.cubin", "compile_log.txt"})
        EXPECT_TRUE(fs::exists(entry / f)) << f;
    std::ifstream opt(entry / "options.txt");
    const std::string text((std::istreambuf_iterator<char>(opt)), {});
    EXPECT_NE(text.find("# key: " + k.key.hex() + "\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\n-DSCALE=2\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\n-DKERNEL_NAME=test_tiny__scale\n"), std::string::npos) << text;
    EXPECT_EQ(fs::file_size(entry / "kernel.cubin"), k.cubin.size());
    // Nothing left behind in the staging area.
    EXPECT_TRUE(fs::is_empty(dir_ / "tmp"));
}

TEST_F(JitCompilerTest, corrupt_entry_is_ignored_and_rebuilt) {
    fs::path cubin;
    std::vector<uint8_t> good;
    {
        JitCompiler jit("sm_90", opts());
        const CompiledKernel k = jit.compile(tiny(2));
        good = k.cubin;
        cubin = fs::path(k.source_path).parent_path() / "kernel.cubin";
    }
    fs::resize_file(cubin, good.size() / 2);  // a torn write
    JitCompiler jit("sm_90", opts());
    const CompiledKernel k = jit.compile(tiny(2));
    EXPECT_FALSE(k.from_cache);
    EXPECT_EQ(jit.stats().compiles, 1);
    EXPECT_EQ(fs::file_size(cubin), good.size());
    JitCompiler again("sm_90", opts());
    EXPECT_TRUE(again.compile(tiny(2)).from_cache);
}

TEST_F(JitCompilerTest, compile_error_names_variant_source_and_log) {
    Variant bad("cuda/test_bad.cu", "attn_qkv__broken");
    bad.source_text = "extern \"C\" __global__ void KERNEL_NAME(float* y) {\n    y[0] = ;\n}\n";
    bad.set("D", 64);
    JitCompiler jit("sm_90", opts());
    const std::string msg = error_of([&] { jit.compile(bad); });
    EXPECT_EQ(msg.rfind("cuda: compiling attn_qkv__broken<D=64> failed (nvrtc ", 0), 0u) << msg;
    EXPECT_NE(msg.find(", sm_90)\n  source: "), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda/test_bad.cu(2): error"), std::string::npos) << msg;
    const fs::path src = fs::path(jit.entry_dir(bad)) / "source.cu";
    EXPECT_NE(msg.find(src.string()), std::string::npos) << msg;
    EXPECT_TRUE(fs::exists(src));
    EXPECT_FALSE(fs::exists(src.parent_path() / "kernel.cubin"));
    // The failed entry is not a hit: fixing nothing and retrying compiles (and fails) again.
    EXPECT_FALSE(error_of([&] { JitCompiler("sm_90", opts()).compile(bad); }).empty());
}

TEST_F(JitCompilerTest, parallel_batch_of_eight_keeps_order_and_dedups) {
    JitCompiler jit("sm_90", opts());
    std::vector<Variant> vs;
    for (int i = 0; i < 8; ++i) vs.push_back(tiny(i + 1, "test_tiny__p" + std::to_string(i)));
    vs.push_back(tiny(1, "test_tiny__p0"));  // duplicate of the first
    const std::vector<CompiledKernel> ks = jit.compile_all(vs);
    ASSERT_EQ(ks.size(), 9u);
    std::set<std::string> keys;
    for (int i = 0; i < 8; ++i) {
        EXPECT_TRUE(is_elf_with(ks[i].cubin, "test_tiny__p" + std::to_string(i))) << i;
        EXPECT_EQ(ks[i].variant.symbol, vs[i].symbol);
        keys.insert(ks[i].key.hex());
    }
    EXPECT_EQ(keys.size(), 8u);
    EXPECT_EQ(ks[8].cubin, ks[0].cubin);
    EXPECT_EQ(jit.stats().compiles, 8);
}

TEST_F(JitCompilerTest, assert_no_compile_rejects_misses_but_allows_hits) {
    JitCompiler(std::string("sm_90"), opts()).compile(tiny(2));
    setenv("JITLLM_ASSERT_NO_COMPILE", "1", 1);
    JitCompiler jit("sm_90", opts());
    unsetenv("JITLLM_ASSERT_NO_COMPILE");
    EXPECT_TRUE(jit.compile(tiny(2)).from_cache);
    const std::string msg = error_of([&] { jit.compile(tiny(5)); });
    EXPECT_NE(msg.find("test_tiny__scale<SCALE=5> (sm_90) is not in the kernel cache"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("JITLLM_ASSERT_NO_COMPILE=1"), std::string::npos) << msg;
}

TEST_F(JitCompilerTest, disabled_cache_writes_nothing) {
    JitCompiler jit("sm_90", opts(/*disk=*/false));
    const CompiledKernel k = jit.compile(tiny(2));
    EXPECT_FALSE(k.cubin.empty());
    EXPECT_TRUE(k.source_path.empty());
    EXPECT_FALSE(fs::exists(dir_));
    JitCompiler fresh("sm_90", opts(false));
    EXPECT_FALSE(fresh.compile(tiny(2)).from_cache);

    // A failure still leaves its source where the message says, outside the cache dir.
    Variant bad("cuda/test_bad.cu", "test_bad__disabled");
    bad.source_text = "extern \"C\" __global__ void KERNEL_NAME() { int x = ; }\n";
    const std::string msg = error_of([&] { fresh.compile(bad); });
    const size_t at = msg.find("source: ");
    ASSERT_NE(at, std::string::npos) << msg;
    const fs::path src = msg.substr(at + 8, msg.find('\n', at) - at - 8);
    EXPECT_TRUE(fs::exists(src)) << src;
    EXPECT_FALSE(fs::exists(dir_));
    fs::remove_all(fs::temp_directory_path() / fmt::format("jitllm-{}", getpid()));
}

}  // namespace
}  // namespace jitllm
