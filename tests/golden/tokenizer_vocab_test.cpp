// llama.cpp test-tokenizer-0 over every vocab GGUF in tests/data/testdata/vocab that has .inp/.out
// vectors beside it (plus vectors-only/ sets whose GGUF exists, and the 32k Llama-2 model file,
// whose vocab is llama-spm's): encode with add_special=false, parse_special=false and compare ids
// exactly. Also checks that detokenize gives the text back where llama.cpp's decoding is lossless
// (see round_trip_expected) and that big vocabs load fast enough to notice regressions by eye.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "fixtures/test_support.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/tokenizer.h"

namespace jitllm {
namespace {

namespace fs = std::filesystem;

struct VectorSet {
    std::string name;  // test name
    std::string gguf, inp, out;  // relative to test::data_dir()
};
void PrintTo(const VectorSet& v, std::ostream* os) { *os << v.name; }

std::vector<VectorSet> vector_sets() {
    std::vector<VectorSet> sets;
    const std::string dir = "testdata/vocab/";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(test::data_path(dir), ec)) {
        std::string file = e.path().filename().string();  // NAME.gguf, or NAME.gguf.zst
        if (file.size() > 4 && file.compare(file.size() - 4, 4, ".zst") == 0) file.resize(file.size() - 4);
        if (fs::path(file).extension() != ".gguf") continue;
        const std::string gguf = dir + file;
        if (!test::data_exists(gguf + ".inp") || !test::data_exists(gguf + ".out")) continue;
        sets.push_back({fs::path(file).stem().string(), gguf, gguf + ".inp", gguf + ".out"});
    }
    // Vectors whose vocab file is too big to ship: used only if the GGUF is present.
    for (const auto& e : fs::directory_iterator(test::data_path(dir + "vectors-only"), ec)) {
        const fs::path p = e.path();
        if (p.extension() != ".inp") continue;
        const std::string gguf = dir + p.stem().string();  // strip ".inp" -> "<name>.gguf"
        if (test::data_exists(gguf) && !test::data_exists(gguf + ".inp"))
            sets.push_back({fs::path(gguf).stem().string(), gguf, dir + "vectors-only/" + p.filename().string(),
                            dir + "vectors-only/" + p.stem().string() + ".out"});
    }
    // The testdata README: this model's tokens, scores and types equal llama-spm's.
    const std::string tiny = "testdata/models/llama-2-tiny-random.gguf";
    if (test::data_exists(tiny))
        sets.push_back({"llama_2_tiny_random", tiny, dir + "ggml-vocab-llama-spm.gguf.inp",
                        dir + "ggml-vocab-llama-spm.gguf.out"});
    std::sort(sets.begin(), sets.end(),
              [](const VectorSet& a, const VectorSet& b) { return a.name < b.name; });
    for (auto& s : sets)
        for (char& c : s.name)
            if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return sets;
}

// test-tokenizer-0's .inp: strings, each followed by "\n__ggml_vocab_test__\n".
std::vector<std::string> read_inputs(const std::string& rel) {
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::string text = test::read_data(rel);
    std::vector<std::string> out;
    for (size_t pos; (pos = text.find(sep)) != std::string::npos; text.erase(0, pos + sep.size()))
        out.push_back(text.substr(0, pos));
    return out;
}

// .out: one line of space-separated ids per input string.
std::vector<std::vector<int32_t>> read_outputs(const std::string& rel) {
    std::vector<std::vector<int32_t>> out;
    std::istringstream lines(test::read_data(rel));
    for (std::string line; std::getline(lines, line);) {
        std::istringstream ids(line);
        out.emplace_back();
        for (int32_t id; ids >> id;) out.back().push_back(id);
    }
    return out;
}

std::string ids_text(const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
}

// Whether llama.cpp's detokenize gives `text` back. WordPiece normalises (lowercase, accents,
// spacing), so never; vocabs with clean_spaces drop the space in " ," " ." " ?" " !" " 's" etc.
bool round_trip_expected(const Tokenizer& tok, const std::string& text) {
    if (tok.model_name() == "bert") return false;
    static const char* const kCleaning[] = {"gpt-2", "mpt", "falcon", "starcoder", "refact",
                                            "llama-bpe", "default"};
    bool cleans = false;
    if (tok.model_name() == "gpt2")
        for (const char* p : kCleaning) cleans |= tok.pre_name() == p;
    if (!cleans) return true;
    for (const char* pat : {" ?", " !", " .", " ,", " '"})
        if (text.find(pat) != std::string::npos) return false;
    return true;
}

class TokenizerVocab : public testing::TestWithParam<VectorSet> {};

TEST_P(TokenizerVocab, matches_llama_cpp_vectors) {
    const VectorSet& set = GetParam();
    const auto t0 = std::chrono::steady_clock::now();
    auto g = test::open_data_gguf(set.gguf);
    auto tok = Tokenizer::from_gguf(*g);
    const double load_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    const auto inputs = read_inputs(set.inp);
    const auto expected = read_outputs(set.out);
    ASSERT_FALSE(inputs.empty()) << set.inp;
    ASSERT_EQ(inputs.size(), expected.size()) << set.inp << " vs " << set.out;

    size_t pass = 0, round_trips = 0, round_trip_checked = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const auto ids = tok->encode(inputs[i], /*add_special=*/false, /*parse_special=*/false);
        if (ids == expected[i]) ++pass;
        EXPECT_EQ(ids_text(ids), ids_text(expected[i])) << "string " << i << ": '" << inputs[i]
                                                       << "'";
        if (round_trip_expected(*tok, inputs[i])) {
            ++round_trip_checked;
            const std::string back = tok->detokenize(expected[i], false);
            if (back == inputs[i]) ++round_trips;
            EXPECT_EQ(back, inputs[i]) << "detokenize of string " << i;
        }
    }
    std::printf("[ vocab    ] %-28s %s/%s: ids %zu/%zu, round trip %zu/%zu, load %.3f s\n",
                set.name.c_str(), tok->model_name().c_str(), tok->pre_name().c_str(), pass,
                inputs.size(), round_trips, round_trip_checked, load_s);
}

INSTANTIATE_TEST_SUITE_P(Vectors, TokenizerVocab, testing::ValuesIn(vector_sets()),
                         [](const testing::TestParamInfo<VectorSet>& info) {
                             return info.param.name;
                         });

// End-of-generation sets and special ids that the testdata README records from llama.cpp
// (June-2026 build) for the vocab files built from npm packages.
std::vector<int32_t> eog_ids(const Tokenizer& tok) {
    std::vector<int32_t> ids;
    for (int32_t id = 0; id < tok.n_vocab(); ++id)
        if (tok.is_eog(id)) ids.push_back(id);
    return ids;
}

std::unique_ptr<Tokenizer> open_vocab(const std::string& name) {
    auto g = test::open_data_gguf("testdata/vocab/ggml-vocab-" + name + ".gguf");
    return Tokenizer::from_gguf(*g);
}

TEST(TokenizerVocabFiles, llama3_eog_and_bos) {
    auto tok = open_vocab("llama3-npm");
    EXPECT_EQ(eog_ids(*tok), (std::vector<int32_t>{128001, 128009}));
    EXPECT_EQ(tok->bos(), 128000);
    EXPECT_TRUE(tok->add_bos());  // llama-bpe default; the file has no add_bos_token key
}

TEST(TokenizerVocabFiles, qwen_eog_and_bos) {
    for (const char* name : {"qwen2-npm", "qwen2_5-npm", "qwen3-npm"}) {
        auto tok = open_vocab(name);
        std::vector<std::string> texts{"</s>", "<|endoftext|>", "<|im_end|>"};
        if (std::string(name) != "qwen2-npm")
            texts.insert(texts.end(), {"<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"});
        std::vector<int32_t> want;
        for (const auto& t : texts) {
            auto id = tok->find_token(t);
            ASSERT_TRUE(id.has_value()) << name << " " << t;
            want.push_back(*id);
        }
        std::sort(want.begin(), want.end());
        EXPECT_EQ(eog_ids(*tok), want) << name;
        EXPECT_EQ(tok->bos(), 11) << name;  // no BOS key: llama.cpp's gpt2 default
        EXPECT_FALSE(tok->add_bos()) << name;
    }
}

TEST(TokenizerVocabFiles, tekken_specials) {
    auto tok = open_vocab("tekken-npm");
    EXPECT_EQ(tok->bos(), 1);
    EXPECT_EQ(tok->eos(), 2);
    EXPECT_TRUE(tok->add_bos());
    EXPECT_EQ(tok->encode("Hi", true, false).front(), 1);
}

TEST(TokenizerVocabFiles, every_vector_set_is_found) {
    // 15 vocab files ship with .inp/.out (README); fewer means the data moved or the scan broke.
    size_t n = 0;
    for (const auto& s : vector_sets()) n += s.name != "llama_2_tiny_random";
    EXPECT_GE(n, 15u);
}

}  // namespace
}  // namespace jitllm
