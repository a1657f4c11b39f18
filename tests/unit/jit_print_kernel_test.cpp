// `jitllm plan --print-kernel` prints each kernel as the unit NVRTC compiles: every printed unit of
// the bundled model's sm_90 schedule, compiled alone with NVRTC (no GPU needed) under the options
// its first line names and no -D option at all, gives a module whose entry point is the symbol the
// plan, the profiler and ncu name (token_embd__embed_f32, not the source file's default `embed`).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "jit/nvrtc.h"
#include "fixtures/test_support.h"

namespace jitllm {
namespace {

struct PrintedUnit {
    std::string symbol;  // from the "// ==== kernel <symbol>" line
    std::string text;    // everything after that line, up to the next one
};

std::vector<PrintedUnit> printed_units(const std::string& plan_args) {
    std::string out, err;
    const std::string cmd = "'" + test::binary_path() + "' plan -m '" + test::source_dir() +
                            "/models/stories260K.gguf' --target sm_90 --print-kernel " + plan_args;
    EXPECT_EQ(test::run_command(cmd, &out, &err), 0) << err;
    const std::string mark = "// ==== kernel ";
    std::vector<PrintedUnit> units;
    for (size_t at = out.find(mark); at != std::string::npos;) {
        const size_t eol = out.find('\n', at);
        const size_t next = out.find(mark, eol);
        units.push_back({out.substr(at + mark.size(), eol - at - mark.size()),
                         out.substr(eol + 1, next == std::string::npos ? std::string::npos : next - eol - 1)});
        at = next;
    }
    return units;
}

// The words after "// nvrtc options:" in the unit.
std::vector<std::string> unit_options(const std::string& text) {
    const std::string key = "// nvrtc options:";
    const size_t at = text.find(key);
    if (at == std::string::npos) return {};
    std::istringstream line(text.substr(at + key.size(), text.find('\n', at) - at - key.size()));
    std::vector<std::string> o;
    for (std::string w; line >> w;) o.push_back(w);
    return o;
}

void expect_compiles_to_its_symbol(const PrintedUnit& u) {
    const std::vector<std::string> options = unit_options(u.text);
    ASSERT_FALSE(options.empty()) << u.symbol << ": no options line";
    for (const std::string& o : options) EXPECT_NE(o.compare(0, 2, "-D"), 0) << u.symbol << ": " << o;
    EXPECT_NE(u.text.find("#define KERNEL_NAME " + u.symbol + "\n"), std::string::npos) << u.symbol;
    const NvrtcOutput r = Nvrtc::load().compile(u.text, u.symbol + ".cu", options, {}, true);
    ASSERT_TRUE(r.ok) << u.symbol << ":\n" << r.log;
    EXPECT_NE(r.ptx.find(".entry " + u.symbol + "("), std::string::npos) << u.symbol;
    const std::string cubin(r.cubin.begin(), r.cubin.end());
    EXPECT_EQ(cubin.compare(0, 4, "\x7f" "ELF"), 0) << u.symbol;
    EXPECT_NE(cubin.find(u.symbol), std::string::npos) << u.symbol;
}

TEST(JitPrintKernel, every_decode_unit_compiles_alone_to_its_symbol) {
    const std::vector<PrintedUnit> units = printed_units("");
    ASSERT_GE(units.size(), 5u);
    bool embed = false;
    for (const PrintedUnit& u : units) {
        expect_compiles_to_its_symbol(u);
        embed = embed || u.symbol == "token_embd__embed_f32";
    }
    EXPECT_TRUE(embed) << "the bundled model's embedding kernel was not printed";
}

TEST(JitPrintKernel, a_batch_gemm_unit_compiles_alone_to_its_symbol) {
    for (const PrintedUnit& u : printed_units("--batch-prefill-size 64"))
        if (u.symbol == "attn_qkv__gemm_simt_f32") return expect_compiles_to_its_symbol(u);
    FAIL() << "no attn_qkv__gemm_simt_f32 unit in the batch plan";
}

}  // namespace
}  // namespace jitllm
