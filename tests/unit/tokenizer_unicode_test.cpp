// Unicode helpers behind the tokenizers (lenient UTF-8, GPT-2 byte alphabet, classes, NFD and
// lowercase maps) and the WordPiece encoder on a tiny hand-made BERT vocab.
#include <gtest/gtest.h>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace jitllm {
namespace {

using Ids = std::vector<int32_t>;
using tok::CptClass;

TEST(TokenizerUnicode, decodes_utf8_leniently) {
    EXPECT_EQ(tok::utf8_decode("a\xC3\xA9\xE6\x97\xA5\xF0\x9F\x99\x82"),
              (std::vector<uint32_t>{'a', 0xE9, 0x65E5, 0x1F642}));
    // A truncated sequence and a stray continuation byte each become U+FFFD.
    EXPECT_EQ(tok::utf8_decode("\xC3" "a\x80"), (std::vector<uint32_t>{0xFFFD, 'a', 0xFFFD}));
    EXPECT_EQ(tok::utf8_encode(0x1F642), "\xF0\x9F\x99\x82");
    EXPECT_EQ(tok::utf8_seq_len(0xE6), 3u);
    EXPECT_EQ(tok::utf8_seq_len(0x80), 1u);
}

TEST(TokenizerUnicode, maps_bytes_to_the_gpt2_alphabet) {
    EXPECT_EQ(tok::byte_to_unicode(' '), "\xC4\xA0");   // U+0120 'Ġ'
    EXPECT_EQ(tok::byte_to_unicode('\n'), "\xC4\x8A");  // U+010A 'Ċ'
    EXPECT_EQ(tok::byte_to_unicode('A'), "A");
    EXPECT_EQ(tok::byte_to_unicode(0xAD), "\xC5\x83");  // the 68th and last remapped byte
    for (int b = 0; b < 256; ++b) {
        const auto cpts = tok::utf8_decode(tok::byte_to_unicode(uint8_t(b)));
        ASSERT_EQ(cpts.size(), 1u);
        EXPECT_EQ(tok::unicode_to_byte(cpts[0]), b);
    }
    EXPECT_EQ(tok::unicode_to_byte(0x20), -1);  // a raw space is not in the alphabet
}

TEST(TokenizerUnicode, classifies_code_points) {
    EXPECT_EQ(tok::cpt_class('A'), CptClass::Letter);
    EXPECT_EQ(tok::cpt_class(0x65E5), CptClass::Letter);
    EXPECT_EQ(tok::cpt_class('7'), CptClass::Number);
    EXPECT_EQ(tok::cpt_class(0xBD), CptClass::Number);  // ½
    EXPECT_EQ(tok::cpt_class('!'), CptClass::Punctuation);
    EXPECT_EQ(tok::cpt_class('$'), CptClass::Symbol);
    EXPECT_EQ(tok::cpt_class(0x301), CptClass::Mark);
    EXPECT_EQ(tok::cpt_class(0x200D), CptClass::Control);  // ZWJ is Cf
    EXPECT_EQ(tok::cpt_class(0x3000), CptClass::Separator);
    EXPECT_EQ(tok::cpt_class(0x378), CptClass::Undefined);  // unassigned
    EXPECT_TRUE(tok::cpt_is_whitespace(0x85));
    EXPECT_TRUE(tok::cpt_is_whitespace(0x3000));
    EXPECT_FALSE(tok::cpt_is_whitespace(0x180E));  // no longer White_Space
    EXPECT_FALSE(tok::cpt_is_whitespace(0x1F));
}

TEST(TokenizerUnicode, maps_nfd_first_and_lowercase) {
    EXPECT_EQ(tok::cpt_nfd_first(0xE9), uint32_t('e'));     // é
    EXPECT_EQ(tok::cpt_nfd_first(0x1EC7), uint32_t('e'));   // ệ (two marks)
    EXPECT_EQ(tok::cpt_nfd_first(0xAC00), 0x1100u);         // 가 -> ᄀ
    EXPECT_EQ(tok::cpt_nfd_first('x'), uint32_t('x'));
    EXPECT_EQ(tok::cpt_to_lower('A'), uint32_t('a'));
    EXPECT_EQ(tok::cpt_to_lower(0xC4), 0xE4u);    // Ä
    EXPECT_EQ(tok::cpt_to_lower(0x100), 0x101u);  // Ā (a step-2 run)
    EXPECT_EQ(tok::cpt_to_lower(0x101), 0x101u);
    EXPECT_EQ(tok::cpt_to_lower(0x410), 0x430u);  // Cyrillic А
    EXPECT_EQ(tok::cpt_to_lower(0x130), uint32_t('i'));  // İ lowercases to "i̇"; first is i
}

// --- WordPiece on a tiny vocab ---

std::unique_ptr<Tokenizer> tiny_bert() {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "bert");
    // ids: 0        1        2        3        4            5            6       7
    w.set_string_array("tokenizer.ggml.tokens",
                       {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "\xE2\x96\x81hello",
                        "\xE2\x96\x81world", "\xE2\x96\x81!", "\xE2\x96\x81un",
                        // 8     9       10
                        "aff", "able", "\xE2\x96\x81\xE4\xBD\xA0"});
    w.set_i32_array("tokenizer.ggml.token_type", {3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1});
    w.set_u32("tokenizer.ggml.unknown_token_id", 1);
    w.set_u32("tokenizer.ggml.bos_token_id", 2);  // BERT's [CLS]
    w.set_u32("tokenizer.ggml.seperator_token_id", 3);
    auto g = GgufReader::from_bytes(w.to_bytes(), "bert.gguf");
    return Tokenizer::from_gguf(*g);
}

TEST(TokenizerWpm, normalises_and_splits_words) {
    auto t = tiny_bert();
    EXPECT_EQ(t->model_name(), "bert");
    // Accents stripped, lowercased, '!' a word of its own.
    EXPECT_EQ(t->encode("H\xC3\xA9llo  WORLD!", false, false), (Ids{4, 5, 6}));
    EXPECT_EQ(t->encode("hello", true, false), (Ids{2, 4, 3}));  // [CLS] ... [SEP]
}

TEST(TokenizerWpm, matches_longest_pieces_and_falls_back_to_unk) {
    auto t = tiny_bert();
    EXPECT_EQ(t->encode("unaffable", false, false), (Ids{7, 8, 9}));
    EXPECT_EQ(t->encode("unaffablex hello", false, false), (Ids{1, 4}));  // whole word unknown
    // CJK characters are words of their own: 你 is known, 好 is not.
    EXPECT_EQ(t->encode("\xE4\xBD\xA0\xE5\xA5\xBD", false, false), (Ids{10, 1}));
}

}  // namespace
}  // namespace jitllm
