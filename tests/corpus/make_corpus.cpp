// Writes the malformed-file corpus (corpus.h) to a directory: NAME.gguf per case plus cases.tsv
// (name TAB expected message substring; an empty substring means the file must load), and the
// valid fixtures. Seeds the fuzzers (scripts/fuzz-smoke.sh) and lets a person look at the files.
// usage: make_corpus OUT_DIR [--stories FILE|--no-stories] [--max-bytes N]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "corpus/corpus.h"
#include "fixtures/test_support.h"

namespace {

bool write(const std::string& path, const jitllm::corpus::Bytes& b) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    return bool(f);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr,
                     "usage: make_corpus OUT_DIR [--stories FILE|--no-stories] "
                     "[--max-bytes N]\n");
        return 2;
    }
    const std::string out = argv[1];
    std::string stories_path = jitllm::test::source_dir() + "/models/stories260K.gguf";
    size_t max_bytes = SIZE_MAX;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--stories" && i + 1 < argc)
            stories_path = argv[++i];
        else if (a == "--no-stories")
            stories_path.clear();
        else if (a == "--max-bytes" && i + 1 < argc)
            max_bytes = std::strtoull(argv[++i], nullptr, 10);
        else {
            std::fprintf(stderr, "make_corpus: unknown argument '%s'\n", a.c_str());
            return 2;
        }
    }
    if (std::system(("mkdir -p '" + out + "'").c_str()) != 0) return 1;
    auto stories = std::make_shared<jitllm::corpus::Bytes>();
    if (!stories_path.empty()) {
        const std::string s = jitllm::test::read_file(stories_path);
        stories->assign(s.begin(), s.end());
    }
    using namespace jitllm::corpus;
    const std::pair<const char*, Bytes> fixtures[] = {
        {"fixture-tiny-spm", tiny_llama_spm()},        {"fixture-tiny-bpe", tiny_llama_bpe()},
        {"fixture-micro-spm", micro_llama_spm()},      {"fixture-micro-bpe", micro_llama_bpe()},
        {"fixture-all-types", micro_gguf_all_types()},
    };
    size_t written = 0;
    for (const auto& [name, bytes] : fixtures)
        if (bytes.size() <= max_bytes && write(out + "/" + name + ".gguf", bytes)) ++written;
    std::ofstream index(out + "/cases.tsv");
    for (const Case& c : all_cases(stories)) {
        const Bytes b = c.bytes();
        if (b.size() > max_bytes) continue;
        if (!write(out + "/" + c.name + ".gguf", b)) {
            std::fprintf(stderr, "make_corpus: cannot write %s/%s.gguf\n", out.c_str(),
                         c.name.c_str());
            return 1;
        }
        index << c.name << '\t' << c.expect << '\n';
        ++written;
    }
    std::printf("make_corpus: %zu files in %s\n", written, out.c_str());
    return 0;
}
