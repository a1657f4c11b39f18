// Runtime inputs through the jitllm binary (issue 8): out-of-range and malformed flags, prompts
// over the context, non-UTF-8 and empty prompts, -n over the context. Each refusal is exit code 2
// (usage) or 1 (a file), with exactly one `error:` line naming the problem; the accepted edge
// cases run to completion with their documented note.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "corpus/corpus.h"
#include "fixtures/test_support.h"

namespace jitllm {
namespace {

using ::testing::HasSubstr;

struct Result {
    int rc = -1;
    std::string out, err;
    std::vector<std::string> errors;  // stderr lines starting with "error:"
};

// `args` is appended to the command line as shell text (so printf can make invalid UTF-8).
Result run(const std::string& args, const std::string& stdin_path = "/dev/null") {
    Result r;
    r.rc = test::run_command("'" + test::binary_path() + "' " + args + " <'" + stdin_path + "'", &r.out,
                             &r.err);
    std::istringstream in(r.err);
    for (std::string l; std::getline(in, l);)
        if (l.rfind("error:", 0) == 0) r.errors.push_back(l);
    return r;
}

struct Refusal {
    const char* args;
    int rc;
    const char* message;
};

// `args` refused with exit code c.rc and one error line containing c.message
void expect_refused(const std::string& args, const Refusal& c) {
    SCOPED_TRACE(args);
    const Result r = run(args);
    EXPECT_EQ(r.rc, c.rc) << r.err;
    ASSERT_EQ(r.errors.size(), 1u) << r.err;
    EXPECT_THAT(r.errors[0], HasSubstr(c.message));
}

TEST(CliInput, bad_flags_exit_2_with_one_error_line) {
    const Refusal cases[] = {
        {"-n -2", 2, "--max-tokens: Value -2 not in range -1 to 16777216"},
        {"-ngl -1", 2, "--n-gpu-layers: Value -1 not in range 0 to"},
        {"-n abc", 2, "--max-tokens: Value abc not in range"},
        {"-n 99999999999", 2, "--max-tokens: Value 99999999999 not in range"},
        {"--top-p 2", 2, "--top-p: expected a value in (0, 1], found 2"},
        {"--top-p 0", 2, "--top-p: expected a value in (0, 1], found 0"},
        {"--temperature -1", 2, "--temperature: expected a value in [0, 100], found -1"},
        {"--temperature nan", 2, "--temperature: expected a value in [0, 100], found nan"},
        {"--top-k -3", 2, "--top-k: expected a value >= 0, found -3"},
        {"--min-p 1.5", 2, "--min-p: expected a value in [0, 1], found 1.5"},
        {"--repeat-penalty 0", 2, "--repeat-penalty: expected a value in (0, 10], found 0"},
        {"--repeat-last-n -1", 2, "--repeat-last-n: expected a value >= 0, found -1"},
        {"--threads 0", 2, "--threads: Value 0 not in range 1 to 1024"},
        {"--threads -4", 2, "--threads: Value -4 not in range 1 to 1024"},
        {"--ctx-size -5", 2, "--ctx-size: Value -5 not in range 0 to 16777216"},
        {"--ctx-size 100000", 2,
         "--ctx-size 100000 exceeds the model's context length 2048 (llama.context_length)"},
        {"--seed x", 2, "--seed"},
        {"--bogus", 2, "--bogus"},
        {"-m /nonexistent/model.gguf", 1, "/nonexistent/model.gguf: cannot open"},
        {"-m /tmp", 1, "/tmp: cannot open: expected a GGUF file, found a directory"},
        // gates are checked on a CPU run too (a misspelt one is not silently ignored)
        {"--force-variant gemv.reduse=tree", 2, "--force-variant gemv.reduse=tree: unknown gate 'gemv.reduse'; gates: "},
        {"--force-variant gemv.reduce=fast", 2,
         "--force-variant gemv.reduce=fast: expected warp|tree for gate 'gemv.reduce', found 'fast'"},
        {"--force-variant gemv.reduce", 2, "--force-variant: expected GATE=VARIANT, found 'gemv.reduce'"},
    };
    for (const Refusal& c : cases) expect_refused(std::string("-p hello -n 2 --seed 1 ") + c.args, c);
}

TEST(CliInput, prompt_over_the_context_is_a_usage_error) {
    std::string longer;
    for (int i = 0; i < 50; ++i) longer += "the cat sat on the mat. ";
    const Result r = run("-p '" + longer + "' --ctx-size 32 -n 2 --seed 1");
    EXPECT_EQ(r.rc, 2) << r.err;
    ASSERT_EQ(r.errors.size(), 1u) << r.err;
    EXPECT_THAT(r.errors[0], HasSubstr("tokens exceeds the context of 32 tokens; hint: raise "
                                       "--ctx-size or shorten the prompt"));
}

TEST(CliInput, non_utf8_prompts_are_refused) {
    Result r = run("-p \"$(printf 'ab\\377cd')\" -n 2 --seed 1");
    EXPECT_EQ(r.rc, 2) << r.err;
    ASSERT_EQ(r.errors.size(), 1u) << r.err;
    EXPECT_THAT(r.errors[0], HasSubstr("--prompt: expected UTF-8 text, found invalid byte 0xff "
                                       "at offset 2"));
    // A lone lead byte at the end, and an overlong '/' in the system prompt.
    r = run("-p \"$(printf 'caf\\303')\" -n 2 --seed 1");
    EXPECT_EQ(r.rc, 2) << r.err;
    ASSERT_EQ(r.errors.size(), 1u) << r.err;
    EXPECT_THAT(r.errors[0], HasSubstr("invalid byte 0xc3 at offset 3"));
    r = run("--instruct --system-prompt \"$(printf '\\300\\257')\" -p hi -n 2 --seed 1");
    EXPECT_EQ(r.rc, 2) << r.err;
    ASSERT_EQ(r.errors.size(), 1u) << r.err;
    EXPECT_THAT(r.errors[0], HasSubstr("--system-prompt: expected UTF-8 text, found invalid "
                                       "byte 0xc0 at offset 0"));
    // Valid multi-byte text is accepted.
    r = run("-p \"$(printf 'caf\\303\\251 \\342\\226\\201')\" -n 2 --seed 1");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(r.errors.empty()) << r.err;
}

// -f/--file: the prompt from a file or standard input, the same tokens and text as -p; refused with
// one error line when it cannot be read, is a directory, is not UTF-8, or comes with -p
TEST(CliInput, prompt_from_a_file_or_stdin) {
    char tmpl[] = "/tmp/jitllm_cli_promptXXXXXX";
    const int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    ::close(fd);
    std::ofstream(tmpl, std::ios::binary) << "the cat sat";
    const std::string path = tmpl;
    const Result by_p = run("-p 'the cat sat' -n 6 --seed 1 --temperature 0 --no-stream");
    ASSERT_EQ(by_p.rc, 0) << by_p.err;
    Result r = run("-f " + path + " -n 6 --seed 1 --temperature 0 --no-stream");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out, by_p.out);
    r = run("-f - -n 6 --seed 1 --temperature 0 --no-stream", path);
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out, by_p.out);
    // llama.cpp's short spellings of the context, threads and seed (as serve's -c / -t)
    r = run("-f " + path + " -n 6 -s 1 -c 64 -t 2 --temperature 0 --no-stream");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out, by_p.out);
    r = run("tokenize --ids -f " + path);
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out, run("tokenize --ids -p 'the cat sat'").out);
    const Refusal cases[] = {
        {"-f /nonexistent/prompt.txt -n 2", 1, "/nonexistent/prompt.txt: cannot read the prompt: No such file or directory"},
        {"-f /tmp -n 2", 1, "/tmp: cannot read the prompt: expected a file, found a directory"},
        {"-p hi -f /tmp/x -n 2", 2, "--prompt excludes --file"},
        {"-f - -i", 2, "-f - and -i/--interactive both read standard input: expected one of them"},
        {"tokenize", 2, "jitllm tokenize: expected -p/--prompt TEXT or -f/--file FILE"},
    };
    for (const Refusal& c : cases) expect_refused(c.args, c);
    std::ofstream(tmpl, std::ios::binary | std::ios::trunc) << "ab\xff" << "cd";
    const std::string bad_utf8 = "--file " + path + ": expected UTF-8 text, found invalid byte 0xff at offset 2";
    expect_refused("-f " + path + " -n 2", {"", 2, bad_utf8.c_str()});
    ::unlink(tmpl);
}

TEST(CliInput, n_over_the_context_generates_up_to_the_context_with_a_note) {
    const Result r = run("-p 'the cat' --ctx-size 16 -n 100 --seed 1 --temperature 0");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(r.errors.empty()) << r.err;
    EXPECT_THAT(r.err, HasSubstr("note: -n 100 exceeds the context; generating at most"));
}

// llama.cpp's spellings people already type: --temp, --n-predict, -n -1, -sys, -ngl, -fa, -np, --version,
// --list-devices; each gives what its jitllm spelling gives
TEST(CliInput, llama_cpp_spellings) {
    const std::string base = "-p 'the cat' --seed 1 --no-stream ";
    const Result ref = run(base + "-n 6 --temperature 0");
    ASSERT_EQ(ref.rc, 0) << ref.err;
    ASSERT_GT(ref.out.size(), 1u);
    EXPECT_EQ(run(base + "-n 6 --temp 0").out, ref.out);
    EXPECT_EQ(run(base + "--n-predict 6 --temp 0").out, ref.out);
    EXPECT_EQ(run(base + "-n 6 --temp 0 -ngl 0").out, ref.out);  // 0 layers on the GPU: the CPU
    EXPECT_EQ(run(base + "-n 6 --temp 0 -fa on").out, ref.out);   // attention is always fused
    EXPECT_EQ(run(base + "-n 6 --temp 0 -fa 1").out, ref.out);
    expect_refused(base + "-n 6 -fa off", {"", 2, "--flash-attn off: expected on or auto, found off"});
    expect_refused(base + "-n 6 -fa maybe", {"", 2, "--flash-attn: maybe not in {"});
    // -n -1: until an end token or the context is full, without -n 100's note
    const Result full = run(base + "-n -1 --ctx-size 16 --temp 0");
    EXPECT_EQ(full.rc, 0) << full.err;
    EXPECT_EQ(full.out, run(base + "-n 100 --ctx-size 16 --temp 0").out);
    EXPECT_THAT(full.err, ::testing::Not(HasSubstr("note:")));
    // -sys: --system-prompt
    const std::string chat = "--instruct -p hi -n 4 --temp 0 --seed 1 --no-stream ";
    EXPECT_EQ(run(chat + "-sys 'Be brief.'").out, run(chat + "--system-prompt 'Be brief.'").out);
    // -ngl 99: --gpu (runs where a GPU is, is refused naming the driver where none is)
    const Result gpu = run(base + "-n 2 -ngl 99 --metrics json");
    if (gpu.rc == 0) {
        EXPECT_THAT(gpu.err, HasSubstr("\"backend\": \"cuda\""));
    } else {
        EXPECT_EQ(gpu.rc, 1) << gpu.err;
        ASSERT_EQ(gpu.errors.size(), 1u) << gpu.err;
        EXPECT_THAT(gpu.errors[0], HasSubstr("cuda"));
    }
    // -np: serve's --parallel
    expect_refused("serve -np 0", {"", 2, "--parallel: Value 0 not in range 1 to 256"});
    // --version and --list-devices (jitllm version / devices): exit 0 with or without a GPU
    const Result v = run("--version");
    EXPECT_EQ(v.rc, 0) << v.err;
    EXPECT_THAT(v.out, HasSubstr("jitllm 0.1.0, build "));
    EXPECT_THAT(v.out, HasSubstr("built with "));
    const Result d = run("--list-devices");
    EXPECT_EQ(d.rc, 0) << d.err;
    EXPECT_THAT(d.out, HasSubstr("NVRTC"));
    EXPECT_THAT(d.out, HasSubstr("CUDA"));
    EXPECT_EQ(run("devices").out, d.out);
}

TEST(CliInput, n_zero_generates_nothing) {
    const Result r = run("-p 'the cat' -n 0 --seed 1");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out, "\n");
}

TEST(CliInput, empty_prompt_starts_from_bos_or_is_refused_without_one) {
    // stories260K adds BOS: the empty prompt is [BOS] and generation starts from it.
    Result r = run("-p '' -n 3 --seed 1");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(r.errors.empty()) << r.err;
    // A byte-level BPE vocab without BOS has no token for it: a usage error.
    char tmpl[] = "/tmp/jitllm_cli_bpeXXXXXX";
    const int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    ::close(fd);
    const corpus::Bytes b = corpus::tiny_llama_bpe();
    std::ofstream(tmpl, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    r = run(std::string("-m ") + tmpl + " -p '' -n 3 --seed 1");
    ::unlink(tmpl);
    EXPECT_EQ(r.rc, 2) << r.err;
    ASSERT_EQ(r.errors.size(), 1u) << r.err;
    EXPECT_THAT(r.errors[0], HasSubstr("--prompt: expected at least one token, found an empty "
                                       "prompt"));
}

}  // namespace
}  // namespace jitllm
