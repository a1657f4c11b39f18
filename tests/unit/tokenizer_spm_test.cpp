// SentencePiece-style tokenizer on the bundled stories260K model (512-token Llama-2 style vocab).
// Expected ids were read off the file's token list by hand (e.g. "▁Once" is token 403, "<0x00>"
// is token 3 so byte b is token 3 + b).
#include <gtest/gtest.h>

#include "core/error.h"
#include "fixtures/test_support.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/tokenizer.h"

namespace jitllm {
namespace {

using Ids = std::vector<int32_t>;

class StoriesTokenizer : public testing::Test {
protected:
    static void SetUpTestSuite() {
        auto g = GgufReader::open(test::source_dir() + "/models/stories260K.gguf");
        tok_ = Tokenizer::from_gguf(*g).release();
    }
    static void TearDownTestSuite() { delete tok_; }
    static Tokenizer* tok_;
};
Tokenizer* StoriesTokenizer::tok_ = nullptr;

TEST_F(StoriesTokenizer, reports_vocab_and_special_ids) {
    EXPECT_EQ(tok_->n_vocab(), 512);
    EXPECT_EQ(tok_->model_name(), "llama");
    EXPECT_EQ(tok_->bos(), 1);
    EXPECT_EQ(tok_->eos(), 2);
    EXPECT_EQ(tok_->unk(), 0);
    EXPECT_EQ(tok_->pad(), -1);  // the file says 0xFFFFFFFF: out of range keeps "none"
    EXPECT_TRUE(tok_->add_bos());
    EXPECT_FALSE(tok_->add_eos());
    EXPECT_TRUE(tok_->is_eog(2));
    EXPECT_FALSE(tok_->is_eog(1));
    EXPECT_EQ(tok_->token_type(1), TokenType::Control);
    EXPECT_EQ(tok_->token_type(3), TokenType::Byte);
    EXPECT_EQ(tok_->token_text(403), "\xE2\x96\x81Once");
    EXPECT_EQ(tok_->find_token("\xE2\x96\x81upon"), 407);
    EXPECT_FALSE(tok_->find_token("nope").has_value());
}

TEST_F(StoriesTokenizer, encodes_once_upon_a_time) {
    EXPECT_EQ(tok_->encode("Once upon a time", true, true), (Ids{1, 403, 407, 261, 378}));
    EXPECT_EQ(tok_->encode("Once upon a time", false, false), (Ids{403, 407, 261, 378}));
    EXPECT_EQ(tok_->encode("", true, true), (Ids{1}));
    EXPECT_EQ(tok_->encode("", false, false), Ids{});
}

TEST_F(StoriesTokenizer, parses_special_tokens_only_when_asked) {
    // After a special token the dummy space prefix is added again: "▁Tim" = 326.
    EXPECT_EQ(tok_->encode("<s>Tim</s>", false, true), (Ids{1, 326, 2}));
    EXPECT_EQ(tok_->encode("<s>Tim", true, true), (Ids{1, 1, 326}));
    // As text: "▁" 410, "<" 504, "s" 419, ">" 505 (no pair of them is a token).
    EXPECT_EQ(tok_->encode("<s>", false, false), (Ids{410, 504, 419, 505}));
}

TEST_F(StoriesTokenizer, falls_back_to_byte_tokens) {
    // "日" is not in the vocab: its UTF-8 bytes E6 97 A5 become <0xE6> <0x97> <0xA5>.
    EXPECT_EQ(tok_->encode("日", false, false), (Ids{410, 3 + 0xE6, 3 + 0x97, 3 + 0xA5}));
    EXPECT_EQ(tok_->token_to_piece(3 + 0xE6), "\xE6");
    EXPECT_EQ(tok_->detokenize({410, 3 + 0xE6, 3 + 0x97, 3 + 0xA5}, false), "日");
}

TEST_F(StoriesTokenizer, renders_pieces) {
    EXPECT_EQ(tok_->token_to_piece(403), " Once");
    EXPECT_EQ(tok_->token_to_piece(1, true), "<s>");
    EXPECT_EQ(tok_->token_to_piece(1, false), "");
    EXPECT_EQ(tok_->token_to_piece(0, false), "");  // <unk> is hidden like control tokens
    EXPECT_THROW(tok_->token_to_piece(512), Error);
    EXPECT_THROW(tok_->token_to_piece(-1), Error);
}

TEST_F(StoriesTokenizer, detokenize_strips_the_dummy_prefix_only_at_the_start) {
    // llama.cpp's llama_detokenize: the first piece loses one leading space, unless a BOS was
    // dropped by remove_special (then the space stays), and a rendered or hidden BOS is the
    // first piece itself.
    const Ids ids{1, 403, 407, 261, 378};
    EXPECT_EQ(tok_->detokenize({403, 407}, false), "Once upon");
    EXPECT_EQ(tok_->detokenize(ids, true), " Once upon a time");
    EXPECT_EQ(tok_->detokenize(ids, false, true), "<s> Once upon a time");
    EXPECT_EQ(tok_->detokenize(ids, false, false), " Once upon a time");
    EXPECT_EQ(tok_->detokenize({403, 2}, true), "Once</s>");  // add_eos is off: EOS stays
}

TEST_F(StoriesTokenizer, round_trips_text) {
    for (const char* s : {"Lily and Tom went to the park.", "  two leading spaces", "a\nb\tc",
                          "naïve café 日本 🙂", "</s> is literal here"}) {
        EXPECT_EQ(tok_->detokenize(tok_->encode(s, false, false), false), s) << s;
    }
}

}  // namespace
}  // namespace jitllm
