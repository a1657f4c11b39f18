// The malformed-file corpus (tests/corpus) through the jitllm binary: each file is refused with
// exit code 1, exactly one `error:` line holding the case's expected sentence, no signal, no
// sanitizer report, within a CPU-time limit and (without ASan) an address-space limit; the valid
// controls generate text. Also checks the corpus itself: size, and fixtures that load.
#include "corpus/corpus.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "fixtures/test_support.h"
#include "gguf/gguf_reader.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

#if defined(__SANITIZE_ADDRESS__)
#define JITLLM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JITLLM_TEST_ASAN 1
#endif
#endif

namespace jitllm {
namespace {

using corpus::Bytes;

std::shared_ptr<const Bytes> stories() {
    static auto s = [] {
        const std::string f = test::read_file(test::source_dir() + "/models/stories260K.gguf");
        return std::make_shared<const Bytes>(f.begin(), f.end());
    }();
    return s;
}

std::vector<std::string> lines_of(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

TEST(Corpus, fixtures_are_valid_models) {
    for (const Bytes& b : {corpus::tiny_llama_spm(), corpus::tiny_llama_bpe(),
                           corpus::micro_llama_spm(), corpus::micro_llama_bpe()}) {
        auto g = GgufReader::from_bytes(b, "fixture.gguf");
        auto tok = Tokenizer::from_gguf(*g);
        auto m = load_model(std::move(g));
        EXPECT_EQ(tok->n_vocab(), m->config.n_vocab);
        EXPECT_TRUE(m->unused_tensors.empty());
    }
    EXPECT_NO_THROW(GgufReader::from_bytes(corpus::micro_gguf_all_types(), "types.gguf"));
}

TEST(Corpus, has_hundreds_of_uniquely_named_cases) {
    const auto cases = corpus::all_cases(stories());
    size_t bad = 0;
    for (const auto& c : cases) bad += !c.expect.empty();
    EXPECT_GE(bad, 500u);
    std::set<std::string> names;
    for (const auto& c : cases) EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

// Runs the binary on `model` (fork + exec, no shell: a thousand runs stay fast) with 60 s of
// CPU time and, without ASan (which reserves terabytes of address space), 4 GiB of address
// space, so a hang or a huge allocation ends the child. Returns the exit code (128 + signal when
// killed) and fills `err` with its stderr.
int run_jitllm(const std::string& model, std::string* err) {
    int fds[2];
    if (::pipe(fds) != 0) return -1;
    const std::string bin = test::binary_path();
    const pid_t pid = ::fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        const rlimit cpu{60, 60};
        ::setrlimit(RLIMIT_CPU, &cpu);
#ifndef JITLLM_TEST_ASAN
        const rlimit as{rlim_t(4) << 30, rlim_t(4) << 30};
        ::setrlimit(RLIMIT_AS, &as);
#endif
        const int null = ::open("/dev/null", O_RDWR);
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::dup2(fds[1], 2);
        ::close(fds[0]);
        ::close(fds[1]);
        const char* argv[] = {bin.c_str(), "-m",     model.c_str(), "-p",          "the cat", "-n",
                              "2",         "--seed", "1",           "--no-stream", nullptr};
        ::execv(bin.c_str(), const_cast<char* const*>(argv));
        ::_exit(127);
    }
    ::close(fds[1]);
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) err->append(buf, size_t(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// One case through the binary; "" when it behaved, else what went wrong.
std::string run_case(const std::string& dir, const corpus::Case& c) {
    const std::string path = dir + "/" + c.name + ".gguf";
    {
        const Bytes b = c.bytes();
        std::ofstream f(path, std::ios::binary);
        f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    }
    std::string err;
    const int rc = run_jitllm(path, &err);
    ::unlink(path.c_str());

    std::vector<std::string> errors;
    for (const auto& l : lines_of(err))
        if (l.rfind("error:", 0) == 0) errors.push_back(l);
    for (const char* bad :
         {"AddressSanitizer", "runtime error:", "internal error", "LeakSanitizer"})
        if (err.find(bad) != std::string::npos)
            return "sanitizer/check report (rc " + std::to_string(rc) + "): " + err.substr(0, 2000);
    if (rc < 0 || rc >= 124)
        return "crashed, killed or not started: exit code " + std::to_string(rc) + ": " + err;
    if (c.expect.empty()) {
        if (rc != 0) return "valid control refused (rc " + std::to_string(rc) + "): " + err;
        if (!errors.empty()) return "valid control printed an error line: " + errors[0];
        return "";
    }
    if (rc != 1) return "expected exit code 1, found " + std::to_string(rc) + ": " + err;
    if (errors.size() != 1)
        return "expected exactly one error: line, found " + std::to_string(errors.size()) + ": " +
               err;
    if (errors[0].find(c.expect) == std::string::npos)
        return "expected the message to contain \"" + c.expect + "\", found: " + errors[0];
    return "";
}

TEST(Corpus, every_file_is_refused_with_its_sentence_and_controls_run) {
    ASSERT_TRUE(test::file_exists(test::binary_path())) << test::binary_path();
    char tmpl[] = "/tmp/jitllm_corpusXXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    const std::string dir = tmpl;
    const auto cases = corpus::all_cases(stories());
    size_t passed = 0, refused = 0;
    std::vector<std::string> failures;
    for (const auto& c : cases) {
        const std::string why = run_case(dir, c);
        if (why.empty()) {
            ++passed;
            refused += !c.expect.empty();
        } else {
            failures.push_back(c.name + ": " + why);
        }
    }
    ::rmdir(dir.c_str());
    std::printf("corpus: %zu cases, %zu passed (%zu malformed files refused)\n", cases.size(),
                passed, refused);
    for (size_t i = 0; i < failures.size() && i < 60; ++i) ADD_FAILURE() << failures[i];
    EXPECT_EQ(failures.size(), 0u);
}

}  // namespace
}  // namespace jitllm
