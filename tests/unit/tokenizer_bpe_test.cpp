// Byte-level BPE: pre-tokenizer splits for several tokenizer.ggml.pre regex sets, merges and
// special tokens on tiny hand-made vocabs, detokenize's clean-up, and load errors.
#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace jitllm {
namespace {

using Ids = std::vector<int32_t>;
using Strings = std::vector<std::string>;

Strings split(const std::string& pre, const std::string& text) {
    auto spec = tok::pre_tokenizer_spec(pre);
    EXPECT_TRUE(spec.has_value()) << pre;
    if (!spec) return {};
    tok::PreTokenizer p(spec->patterns);
    Strings out;
    for (auto [off, len] : p.split(text)) out.push_back(text.substr(off, len));
    return out;
}

TEST(TokenizerPre, gpt2_splits_words_contractions_and_spaces) {
    EXPECT_EQ(split("gpt-2", "Hello world's  x\n"),
              (Strings{"Hello", " world", "'s", " ", " x", "\n"}));
    EXPECT_EQ(split("gpt-2", "I'M 123!!"), (Strings{"I", "'", "M", " 123", "!!"}));
}

TEST(TokenizerPre, llama3_groups_digits_by_three_and_newlines) {
    EXPECT_EQ(split("llama-bpe", "1234567"), (Strings{"123", "456", "7"}));
    EXPECT_EQ(split("llama-bpe", "I'M"), (Strings{"I", "'M"}));
    EXPECT_EQ(split("llama-bpe", "a\n\n b"), (Strings{"a", "\n\n", " b"}));
}

TEST(TokenizerPre, qwen2_splits_single_digits) {
    EXPECT_EQ(split("qwen2", "x1234"), (Strings{"x", "1", "2", "3", "4"}));
}

TEST(TokenizerPre, tekken_splits_camel_case) {
    EXPECT_EQ(split("tekken", "HelloWorld HTMLParser"),
              (Strings{"Hello", "World", " HTMLParser"}));
}

TEST(TokenizerPre, later_regexes_split_earlier_pieces_and_keep_gaps) {
    // falcon: the GPT-2 regex gives "12345", then [0-9]{3} cuts it, leaving "45" as a gap.
    EXPECT_EQ(split("falcon", "12345"), (Strings{"123", "45"}));
    // deepseek-coder: newlines first, then letters, then single digits.
    EXPECT_EQ(split("deepseek-coder", "ab12\ncd"), (Strings{"ab", "1", "2", "\n", "cd"}));
}

TEST(TokenizerPre, unicode_white_space_is_white_space) {
    // U+3000 IDEOGRAPHIC SPACE counts as \s (llama.cpp's White_Space table).
    EXPECT_EQ(split("gpt-2", "a\xE3\x80\x80\xE3\x80\x80" "b"),
              (Strings{"a", "\xE3\x80\x80", "\xE3\x80\x80", "b"}));
}

TEST(TokenizerPre, rewrites_whitespace_classes) {
    const std::string ws = tok::kWhitespaceClass;
    EXPECT_EQ(tok::pattern_with_whitespace_classes(R"(\s+(?!\S))"),
              "[" + ws + "]+(?![^" + ws + "])");
    EXPECT_EQ(tok::pattern_with_whitespace_classes(R"([^\s\p{L}])"), "[^" + ws + "\\p{L}]");
    EXPECT_EQ(tok::pattern_with_whitespace_classes(R"(\\s)"), R"(\\s)");  // escaped backslash
}

TEST(TokenizerPre, knows_the_names_llama_cpp_uses) {
    for (const char* name : {"default", "", "gpt-2", "llama-bpe", "qwen2", "deepseek-llm",
                             "deepseek-coder", "deepseek-r1-qwen", "falcon", "mpt", "starcoder",
                             "refact", "tekken", "smaug-bpe", "command-r"})
        EXPECT_TRUE(tok::pre_tokenizer_spec(name).has_value()) << name;
    EXPECT_FALSE(tok::pre_tokenizer_spec("no-such-pre").has_value());
    EXPECT_TRUE(tok::pre_tokenizer_spec("llama-bpe")->ignore_merges);
    EXPECT_FALSE(tok::pre_tokenizer_spec("qwen2")->clean_spaces);
}

// --- a tiny byte-level vocab ---

// ids:              0    1    2    3    4     5      6       7          8       9     10
const Strings kTokens{"a", "b", "c", "Ġ", "ab", "Ġab", "Ġc", "<tool>", "<|end|>", "Hello", "Ġ,",
                      ",", "'s", "Ġ'"};
//                    11   12    13

std::unique_ptr<Tokenizer> tiny(const std::string& pre,
                                Strings merges = {"a b", "Ġ ab", "Ġ c"},
                                const std::function<void(GgufWriter&)>& extra = {}) {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", pre);
    w.set_string_array("tokenizer.ggml.tokens", kTokens);
    std::vector<int32_t> types(kTokens.size(), 1);
    types[7] = 4;  // user-defined
    types[8] = 3;  // control
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", merges);
    w.set_u32("tokenizer.ggml.eos_token_id", 8);
    if (extra) extra(w);
    auto g = GgufReader::from_bytes(w.to_bytes(), "tiny.gguf");
    return Tokenizer::from_gguf(*g);
}

TEST(TokenizerBpe, merges_by_rank) {
    auto t = tiny("gpt-2");
    EXPECT_EQ(t->encode("ab", false, false), (Ids{4}));
    EXPECT_EQ(t->encode(" ab c", false, false), (Ids{5, 6}));
    EXPECT_EQ(t->encode("abc", false, false), (Ids{4, 2}));
    EXPECT_EQ(t->encode("ba", false, false), (Ids{1, 0}));
    EXPECT_EQ(t->token_to_piece(5), " ab");
}

TEST(TokenizerBpe, drops_bytes_the_vocab_cannot_spell) {
    EXPECT_EQ(tiny("gpt-2")->encode("axb", false, false), (Ids{0, 1}));
}

TEST(TokenizerBpe, ignore_merges_emits_whole_vocab_words) {
    // Without the "Ġ c" merge, " c" is only reachable whole, which llama-bpe allows.
    EXPECT_EQ(tiny("gpt-2", {"a b", "Ġ ab"})->encode(" c", false, false), (Ids{3, 2}));
    EXPECT_EQ(tiny("llama-bpe", {"a b", "Ġ ab"}, [](GgufWriter& w) {
                  w.set_u32("tokenizer.ggml.bos_token_id", 0);
              })->encode(" c", false, false),
              (Ids{6}));
}

TEST(TokenizerBpe, splits_user_defined_tokens_always_and_control_tokens_on_request) {
    auto t = tiny("gpt-2");
    EXPECT_EQ(t->encode("a<tool>b", false, false), (Ids{0, 7, 1}));
    EXPECT_EQ(t->encode("a<|end|>", false, true), (Ids{0, 8}));
    EXPECT_TRUE(t->is_eog(8));
    EXPECT_EQ(t->token_to_piece(8, false), "");
    EXPECT_EQ(t->token_to_piece(7, false), "<tool>");  // user-defined tokens always render
}

TEST(TokenizerBpe, detokenize_cleans_spaces_only_where_llama_cpp_does) {
    // gpt-2 has clean_spaces: " ," loses its space, and so does " 's"; " ''" keeps it.
    EXPECT_EQ(tiny("gpt-2")->detokenize({9, 10, 3, 12}, false), "Hello,'s");
    EXPECT_EQ(tiny("gpt-2")->detokenize({9, 13, 12}, false), "Hello ''s");
    // qwen2 does not clean.
    EXPECT_EQ(tiny("qwen2")->detokenize({9, 10, 3, 12}, false), "Hello , 's");
}

TEST(TokenizerBpe, defaults_follow_llama_cpp) {
    auto t = tiny("gpt-2");
    EXPECT_EQ(t->bos(), 11);  // gpt2 default BOS id when the file names none
    EXPECT_EQ(t->eos(), 8);
    EXPECT_FALSE(t->add_bos());
    EXPECT_EQ(t->pre_name(), "gpt-2");
    // llama-bpe adds BOS by default.
    auto l = tiny("llama-bpe", {"a b"}, [](GgufWriter& w) {
        w.set_u32("tokenizer.ggml.bos_token_id", 9);
    });
    EXPECT_TRUE(l->add_bos());
    EXPECT_EQ(l->encode("ab", true, false), (Ids{9, 4}));
}

// --- load errors ---

std::string load_error(const std::function<void(GgufWriter&)>& fill) {
    GgufWriter w;
    fill(w);
    try {
        auto g = GgufReader::from_bytes(w.to_bytes(), "bad.gguf");
        Tokenizer::from_gguf(*g);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(TokenizerLoad, rejects_missing_or_unsupported_models) {
    EXPECT_NE(load_error([](GgufWriter&) {}).find("tokenizer.ggml.model"), std::string::npos);
    const std::string t5 = load_error([](GgufWriter& w) {
        w.set_string("tokenizer.ggml.model", "t5");
        w.set_string_array("tokenizer.ggml.tokens", {"a"});
    });
    EXPECT_NE(t5.find("'t5'"), std::string::npos) << t5;
    EXPECT_NE(t5.find("supported: llama"), std::string::npos) << t5;
}

TEST(TokenizerLoad, rejects_bpe_without_merges_or_with_unknown_pre) {
    const std::string merges = load_error([](GgufWriter& w) {
        w.set_string("tokenizer.ggml.model", "gpt2");
        w.set_string_array("tokenizer.ggml.tokens", {"a"});
    });
    EXPECT_NE(merges.find("tokenizer.ggml.merges"), std::string::npos) << merges;
    const std::string pre = load_error([](GgufWriter& w) {
        w.set_string("tokenizer.ggml.model", "gpt2");
        w.set_string("tokenizer.ggml.pre", "no-such-pre");
        w.set_string_array("tokenizer.ggml.tokens", {"a"});
        w.set_string_array("tokenizer.ggml.merges", {});
    });
    EXPECT_NE(pre.find("'no-such-pre'"), std::string::npos) << pre;
    EXPECT_NE(pre.find("llama-bpe"), std::string::npos) << pre;
}

TEST(TokenizerLoad, rejects_duplicates_and_missing_tokens) {
    const std::string dup = load_error([](GgufWriter& w) {
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "x", "x"});
    });
    EXPECT_NE(dup.find("duplicate token 'x'"), std::string::npos) << dup;
    const std::string none = load_error([](GgufWriter& w) {
        w.set_string("tokenizer.ggml.model", "llama");
    });
    EXPECT_NE(none.find("tokenizer.ggml.tokens"), std::string::npos) << none;
    const std::string types = load_error([](GgufWriter& w) {
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
        w.set_i32_array("tokenizer.ggml.token_type", {2, 3});
    });
    EXPECT_NE(types.find("tokenizer.ggml.token_type"), std::string::npos) << types;
}

TEST(TokenizerLoad, rejects_add_bos_without_a_bos_token) {
    // gpt2's default BOS (id 11) is outside this 1-token vocab, so there is none.
    const std::string e = load_error([](GgufWriter& w) {
        w.set_string("tokenizer.ggml.model", "gpt2");
        w.set_string_array("tokenizer.ggml.tokens", {"a"});
        w.set_string_array("tokenizer.ggml.merges", {});
        w.set_bool("tokenizer.ggml.add_bos_token", true);
    });
    EXPECT_NE(e.find("add_bos_token"), std::string::npos) << e;
}

}  // namespace
}  // namespace jitllm
