// Vocabularies the tokenizer and chat-format fuzzers share, loaded once per process: the bundled
// stories260K (SentencePiece) and llama.cpp's vocab files from tests/data of several kinds (SentencePiece with byte tokens, byte-level BPE with different pre-tokenizers, WordPiece).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/test_data.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/tokenizer.h"

namespace jitllm::fuzz {

struct Vocab {
    std::string name;
    std::unique_ptr<GgufReader> file;
    std::unique_ptr<Tokenizer> tok;
    std::string arch;  // general.architecture ("" when absent)
};

inline std::string env_or(const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return v && *v ? v : fallback;
}

inline const std::vector<Vocab>& vocabs() {
    static const std::vector<Vocab> all = [] {
        std::vector<Vocab> v;
        const std::string source = env_or("JITLLM_SOURCE_DIR", JITLLM_SOURCE_DIR);
        std::vector<std::string> paths = {source + "/models/stories260K.gguf"};
        for (const char* n : {"llama-spm", "gpt-2", "llama3-npm", "qwen2-npm", "phi-3",
                              "deepseek-llm", "tekken-npm", "bert-bge"})
            paths.push_back(std::string("testdata/vocab/ggml-vocab-") + n + ".gguf");  // in tests/data
        for (const std::string& p : paths) {
            try {
                Vocab x;
                x.name = p.substr(p.rfind('/') + 1);
                x.file = p == paths[0] ? GgufReader::open(p) : test::open_data_gguf(p);
                x.tok = Tokenizer::from_gguf(*x.file);
                x.arch = x.file->get_string_opt("general.architecture").value_or("");
                v.push_back(std::move(x));
            } catch (const std::exception& e) {
                std::fprintf(stderr, "fuzz: skipping vocab %s: %s\n", p.c_str(), e.what());
            }
        }
        if (v.empty()) std::abort();  // nothing to fuzz: the paths are wrong
        std::fprintf(stderr, "fuzz: %zu vocabularies loaded\n", v.size());
        return v;
    }();
    return all;
}

}  // namespace jitllm::fuzz
