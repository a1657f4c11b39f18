// Variant naming (display, flat), source expansion and the cache key's sensitivity: what must
// change it (source, included header, define, arch, compiler) and what must not (define order).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "jit/source_registry.h"
#include "jit/variant.h"

namespace jitllm {
namespace {

namespace fs = std::filesystem;

Variant tiny() {
    Variant v("cuda/test_tiny.cu", "attn_qkv__gemv_warp_q8_0");
    v.source_text =
        "#include \"common/common.cuh\"\nextern \"C\" __global__ void KERNEL_NAME() {}\n";
    return v.set("D", 4096).set("BLOCK", 256).set("T", "half");
}

TEST(JitVariant, display_name_keeps_define_order) {
    EXPECT_EQ(tiny().display_name(), "attn_qkv__gemv_warp_q8_0<D=4096,BLOCK=256,T=half>");
    EXPECT_EQ(Variant("cuda/x.cu", "x").display_name(), "x<>");
}

TEST(JitVariant, set_replaces_a_define_in_place) {
    Variant v = tiny().set("D", 2048).set("FLAG", true);
    EXPECT_EQ(v.display_name(), "attn_qkv__gemv_warp_q8_0<D=2048,BLOCK=256,T=half,FLAG=1>");
}

TEST(JitVariant, has_names_set_defines_only) {
    const Variant v = tiny();
    EXPECT_TRUE(v.has("BLOCK"));
    EXPECT_TRUE(v.has("T"));
    EXPECT_FALSE(v.has("MAX_REGS"));
    EXPECT_FALSE(v.has("half"));  // a value, not a name
}

TEST(JitVariant, flat_name_is_sanitised_and_bounded) {
    EXPECT_EQ(tiny().flat_name(), "attn_qkv__gemv_warp_q8_0.D-4096.BLOCK-256.T-half");
    Variant v("cuda/x.cu", "k");
    v.set("T", "__nv_bfloat16").set("S", "a<b>");
    EXPECT_EQ(v.flat_name(), "k.T-__nv_bfloat16.S-a_b_");
    for (int i = 0; i < 40; ++i) v.set("PARAM_" + std::to_string(i), 123456);
    EXPECT_EQ(v.flat_name().size(), 120u);
}

TEST(JitVariant, target_arch_adds_suffix_a_when_required) {
    Variant v = tiny();
    EXPECT_EQ(v.target_arch("sm_90"), "sm_90");
    v.requires_arch_suffix_a = true;
    EXPECT_EQ(v.target_arch("sm_90"), "sm_90a");
    v.arch = "sm_100";
    EXPECT_EQ(v.target_arch("sm_90"), "sm_100a");
}

TEST(JitVariant, expand_inlines_common_headers_once_with_line_markers) {
    Variant v = tiny();
    v.source_text = "#include \"common/common.cuh\"\n#include \"common/common.cuh\"\nint after;\n";
    const std::string out = expand_source(v);
    const std::string header = kernel_source("cuda/common/common.cuh");
    EXPECT_EQ(out.rfind("#line 1 \"cuda/test_tiny.cu\"\n#line 1 \"cuda/common/common.cuh\"\n", 0),
              0u)
        << out;
    EXPECT_EQ(out.find("#include \"common/"), std::string::npos);
    EXPECT_EQ(out.find("#pragma once"), std::string::npos);
    // The second include is dropped; numbering resumes on the line after each include.
    EXPECT_NE(
        out.find("#line 2 \"cuda/test_tiny.cu\"\n#line 3 \"cuda/test_tiny.cu\"\nint after;\n"),
        std::string::npos)
        << out;
    std::string inlined = header;  // the header itself, its "#pragma once" line emptied
    if (size_t p = inlined.find("#pragma once\n"); p != std::string::npos) inlined.erase(p, 12);
    EXPECT_NE(out.find(inlined), std::string::npos);
}

TEST(JitVariant, missing_include_names_file_and_line) {
    Variant v = tiny();
    v.source_text = "// one\n#include \"common/nope.cuh\"\n";
    try {
        expand_source(v);
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("cuda/test_tiny.cu:2: #include \"common/nope.cuh\""),
                  std::string::npos)
            << e.what();
    }
}

TEST(JitVariant, options_are_the_documented_list) {
    const std::vector<std::string> expect = {
        "-arch=sm_90",  "-default-device",
        "-std=c++17",   "-fmad=true",
        "-lineinfo",    "--ptxas-options=-v",
        "-DJITLLM_JIT", "-DKERNEL_NAME=attn_qkv__gemv_warp_q8_0"};
    EXPECT_EQ(base_options(tiny(), "sm_90"), expect);
    const std::vector<std::string> defs = {"-DBLOCK=256", "-DD=4096", "-DT=half"};
    EXPECT_EQ(define_options(tiny()), defs);
}

TEST(JitVariant, key_depends_on_every_input_but_not_define_order) {
    const Variant v = tiny();
    const std::string src = expand_source(v);
    const VariantKey k = variant_key(src, v, "sm_90", "13.0");
    EXPECT_EQ(k.hex().size(), 32u);
    EXPECT_EQ(k.hex16(), k.hex().substr(0, 16));
    EXPECT_TRUE(variant_key(src, v, "sm_90", "13.0") == k);

    Variant reordered("cuda/test_tiny.cu", v.symbol);
    reordered.source_text = v.source_text;
    reordered.set("T", "half").set("BLOCK", 256).set("D", 4096);
    EXPECT_TRUE(variant_key(expand_source(reordered), reordered, "sm_90", "13.0") == k);

    Variant changed = v;
    changed.set("D", 4097);
    EXPECT_FALSE(variant_key(src, changed, "sm_90", "13.0") == k);
    Variant renamed = v;
    renamed.symbol = "attn_qkv__gemv_warp_q4_k";
    EXPECT_FALSE(variant_key(src, renamed, "sm_90", "13.0") == k);
    Variant extra = v;
    extra.extra_options.push_back("-maxrregcount=64");
    EXPECT_FALSE(variant_key(src, extra, "sm_90", "13.0") == k);
    EXPECT_FALSE(variant_key(src, v, "sm_80", "13.0") == k);
    EXPECT_FALSE(variant_key(src, v, "sm_90", "13.1") == k);
    EXPECT_FALSE(variant_key(src + " ", v, "sm_90", "13.0") == k);
}

TEST(JitVariant, key_changes_when_an_included_header_changes) {
    const Variant v = tiny();
    const VariantKey embedded = variant_key(expand_source(v), v, "sm_90", "13.0");
    // The same tree on disk, with one comment added to the shared header.
    const fs::path dir =
        fs::temp_directory_path() / ("jitllm-variant-test-" + std::to_string(getpid()));
    fs::create_directories(dir / "cuda/common");
    std::ofstream(dir / "cuda/common/common.cuh")
        << kernel_source("cuda/common/common.cuh") << "\n// edited\n";
    setenv("JITLLM_KERNEL_DIR", dir.c_str(), 1);
    const std::string edited_src = expand_source(v);
    unsetenv("JITLLM_KERNEL_DIR");
    fs::remove_all(dir);
    EXPECT_NE(edited_src.find("// edited"), std::string::npos);
    EXPECT_FALSE(variant_key(edited_src, v, "sm_90", "13.0") == embedded);
}

}  // namespace
}  // namespace jitllm
