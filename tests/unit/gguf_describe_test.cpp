// gguf_describe(): the human-readable dump of header, metadata (escaped strings, abbreviated
// arrays) and the tensor table, checked line by line against hand-written text.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fixtures/test_support.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace jitllm {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::unique_ptr<GgufReader> sample() {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("weird", "a\"b\\c\nd\te\x01\x7f\xc3\xa9");
    w.set_u32("llama.block_count", 2);
    w.set_i32("neg", -3);
    w.set_f32("eps", 1e-5f);
    w.set_bool("flag", true);
    w.set_i32_array("ten", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    w.set_string_array("toks", {"a", "b"});
    GgufValue inner;
    inner.type = GgufValueType::ARRAY;
    inner.elem_type = GgufValueType::U8;
    for (size_t k = 0; k < 5; ++k) {
        GgufValue e;
        e.type = GgufValueType::U8;
        e.u = k;
        inner.push_back(e);
    }
    GgufValue outer;
    outer.type = GgufValueType::ARRAY;
    outer.elem_type = GgufValueType::ARRAY;
    outer.arr = {inner};
    w.set("nested", outer);
    w.add_tensor("token_embd.weight", GgmlType::F32, {8, 2}, std::vector<uint8_t>(64, 0));
    w.add_tensor("blk.0.attn_q.weight", GgmlType::Q8_0, {32, 3}, std::vector<uint8_t>(102, 0));
    return GgufReader::from_bytes(w.to_bytes(), "s.gguf");
}

TEST(GgufDescribe, shows_header_lines) {
    std::string d = gguf_describe(*sample(), 3);
    EXPECT_THAT(d, HasSubstr("file: s.gguf\n"));
    EXPECT_THAT(d, HasSubstr("version: 3\n"));
    EXPECT_THAT(d, HasSubstr("alignment: 32\n"));
    EXPECT_THAT(d, HasSubstr("kv_count: 9\n"));
    EXPECT_THAT(d, HasSubstr("tensor_count: 2\n"));
}

TEST(GgufDescribe, shows_scalars_with_types) {
    std::string d = gguf_describe(*sample(), 3);
    EXPECT_THAT(d, HasSubstr("  general.architecture = \"llama\" (string)\n"));
    EXPECT_THAT(d, HasSubstr("  llama.block_count = 2 (u32)\n"));
    EXPECT_THAT(d, HasSubstr("  neg = -3 (i32)\n"));
    EXPECT_THAT(d, HasSubstr("  eps = 1e-05 (f32)\n"));
    EXPECT_THAT(d, HasSubstr("  flag = true (bool)\n"));
}

TEST(GgufDescribe, escapes_strings) {
    std::string d = gguf_describe(*sample(), 3);
    EXPECT_THAT(d, HasSubstr("  weird = \"a\\\"b\\\\c\\nd\\te\\x01\\x7f\xc3\xa9\" (string)\n"));
}

TEST(GgufDescribe, abbreviates_long_arrays) {
    auto g = sample();
    std::string d = gguf_describe(*g, 3);
    EXPECT_THAT(d, HasSubstr("  ten = [0, 1, 2, ... (10 elements)] (array of i32)\n"));
    EXPECT_THAT(d, HasSubstr("  toks = [\"a\", \"b\"] (array of string)\n"));
    EXPECT_THAT(d, HasSubstr("  nested = [[0, 1, 2, ... (5 elements)]] (array of array)\n"));
    std::string full = gguf_describe(*g, 10);
    EXPECT_THAT(full, HasSubstr("  ten = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] (array of i32)\n"));
    EXPECT_THAT(full, Not(HasSubstr("elements)")));
}

TEST(GgufDescribe, shows_tensor_table_and_totals) {
    std::string d = gguf_describe(*sample(), 3);
    // Columns: index, name, type, dims, offset, bytes (widths follow the longest entry).
    EXPECT_THAT(d, HasSubstr("  0  token_embd.weight    f32   [8, 2]              0            64\n"));
    EXPECT_THAT(d, HasSubstr("  1  blk.0.attn_q.weight  q8_0  [32, 3]            64           102\n"));
    EXPECT_THAT(d, HasSubstr("total: 2 tensors, 112 parameters, 166 bytes (166 B)\n"));
}

TEST(GgufDescribe, describes_stories260k) {
    auto g = GgufReader::open(test::source_dir() + "/models/stories260K.gguf");
    std::string d = gguf_describe(*g);
    EXPECT_THAT(d, HasSubstr("  tokenizer.ggml.tokens = [\"<unk>\", \"<s>\", \"</s>\", "));
    EXPECT_THAT(d, HasSubstr(", ... (512 elements)] (array of string)\n"));
    EXPECT_THAT(d, HasSubstr("  llama.embedding_length = 64 (u32)\n"));
    EXPECT_THAT(d, HasSubstr("token_embd.weight"));
    EXPECT_THAT(d, HasSubstr("[64, 512]"));
    EXPECT_THAT(d, HasSubstr("total: 48 tensors, "));
}

}  // namespace
}  // namespace jitllm
