// `jitllm ncu --print-command` through the binary, planned for sm_90 without a GPU: the launch skip it
// gives ncu for a task, layer and token (or prompt chunk) in each prompt mode equals the count of that
// kernel's earlier launches worked out here by hand from the bundled model's schedule (5 layers, one
// launch of each per-layer kernel a layer), so an off-by-one in the launch walk fails; bad requests
// end with a sentence and a non-zero status.
#include <gtest/gtest.h>

#include <regex>

#include "fixtures/test_support.h"

namespace jitllm {
namespace {

struct Out {
    int rc = 0;
    std::string out, err;
};

Out ncu(const std::string& own, const std::string& run) {
    Out o;
    o.rc = test::run_command("'" + test::binary_path() + "' ncu --print-command --target sm_90 " + own + " -- " + run,
                             &o.out, &o.err);
    return o;
}

// the --launch-skip of the printed command, and the kernel it names
std::pair<long, std::string> skip_of(const Out& o) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(o.out, m, std::regex("--launch-skip ([0-9]+) "))) << o.out << o.err;
    const long skip = m.empty() ? -1 : std::stol(m[1]);
    EXPECT_TRUE(std::regex_search(o.out, m, std::regex("regex:\\^([a-z0-9_]+)\\$"))) << o.out;
    return {skip, m.empty() ? std::string() : std::string(m[1])};
}

constexpr int kLayers = 5;  // stories260K
const std::string kPrompt = "-p 'Once upon a time' --temp 0 --gpu";  // 5 tokens with BOS

TEST(CliNcu, SingleTokenModeDecodeStepsCountEveryEarlierStep) {
    for (int token : {0, 4, 5, 11})
        for (int layer : {0, 3, 4}) {
            const Out o = ncu("--task ffn_down --layer " + std::to_string(layer) + " --token " + std::to_string(token),
                              kPrompt + " -n 8");
            ASSERT_EQ(o.rc, 0) << o.err;
            const auto [skip, kernel] = skip_of(o);
            EXPECT_EQ(skip, long(kLayers * token + layer)) << "token " << token << " layer " << layer;
            EXPECT_NE(kernel.find("ffn_down"), std::string::npos) << kernel;
        }
}

TEST(CliNcu, TaskWithItsLayerOrKernelSymbolPickTheSameLaunch) {
    const Out a = ncu("--task blk.2.ffn_down --token 6", kPrompt + " -n 8");
    const Out b = ncu("--task ffn_down --layer 2 --token 6", kPrompt + " -n 8");
    ASSERT_EQ(a.rc, 0) << a.err;
    ASSERT_EQ(b.rc, 0) << b.err;
    const auto sa = skip_of(a), sb = skip_of(b);
    EXPECT_EQ(sa, sb);
    const Out c = ncu("--kernel " + sa.second + " --layer 2 --token 6", kPrompt + " -n 8");
    ASSERT_EQ(c.rc, 0) << c.err;
    EXPECT_EQ(skip_of(c), sa);
    // the default: the decode step after the prompt and two generated tokens (position 5 + 2)
    const Out d = ncu("--task ffn_down --layer 1", kPrompt + " -n 8");
    ASSERT_EQ(d.rc, 0) << d.err;
    EXPECT_EQ(skip_of(d).first, long(kLayers * 7 + 1));
    // a task without layer: once a step
    const Out e = ncu("--task output --token 9", kPrompt + " -n 8");
    ASSERT_EQ(e.rc, 0) << e.err;
    EXPECT_EQ(skip_of(e).first, 9);
}

TEST(CliNcu, PrefillStepsComeBeforeTheDecodeSteps) {
    // --with-prefill-decode: positions 0 .. 3 are prefill steps, 4 on decode steps; attention is one
    // kernel in both lists here, so its launches count straight through
    for (int token : {0, 2, 3, 4, 9}) {
        const Out o = ncu("--task attn --layer 1 --token " + std::to_string(token), kPrompt + " -n 8 --with-prefill-decode");
        ASSERT_EQ(o.rc, 0) << o.err;
        EXPECT_EQ(skip_of(o).first, long(kLayers * token + 1)) << token;
        EXPECT_NE(o.out.find(token < 4 ? "prefill step at position" : "decode step at position"), std::string::npos) << o.out;
    }
}

TEST(CliNcu, PromptChunksCountTheChunksBefore) {
    // 20 prompt tokens in chunks of 10: the GEMM list (more rows than batch.small's 8) for both
    const std::string run = "-p 'Once upon a time there was a little girl named Lily. She loved to play' --gpu "
                            "--batch-prefill-size 10 -n 4";
    for (int chunk : {0, 1})
        for (int layer : {0, 4}) {
            const Out o = ncu("--task ffn_gate_up --layer " + std::to_string(layer) + " --chunk " + std::to_string(chunk), run);
            ASSERT_EQ(o.rc, 0) << o.err;
            EXPECT_EQ(skip_of(o).first, long(kLayers * chunk + layer)) << chunk << " " << layer;
            EXPECT_NE(o.out.find("prompt chunk " + std::to_string(chunk) + " (10 rows"), std::string::npos) << o.out;
        }
}

TEST(CliNcu, RequestsOutsideTheRunAreRefusedWithASentence) {
    struct Bad {
        std::string own, run, says;
    };
    const Bad bad[] = {
        {"--task ffn_down --token 12", kPrompt + " -n 8", "decode steps run at positions 0 to 11"},
        {"--task ffn_down --chunk 0", kPrompt + " -n 8", "no --batch-prefill-size"},
        {"--task ffn_dwn", kPrompt + " -n 8", "task blk.0.ffn_dwn: no launch of the decode phase"},
        {"--task ffn_down", "-p hi -n 4", "expected --gpu among the run's arguments"},
        {"", kPrompt, "expected --task NAME or --kernel SYMBOL"},
    };
    for (const auto& b : bad) {
        const Out o = ncu(b.own, b.run);
        EXPECT_NE(o.rc, 0) << b.own;
        EXPECT_NE(o.err.find(b.says), std::string::npos) << b.own << ": " << o.err;
        EXPECT_EQ(o.err.find("terminate"), std::string::npos) << o.err;
    }
    Out o;
    o.rc = test::run_command("'" + test::binary_path() + "' ncu --task ffn_down", &o.out, &o.err);
    EXPECT_NE(o.rc, 0);
    EXPECT_NE(o.err.find("expected `--` and the run's arguments"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace jitllm
