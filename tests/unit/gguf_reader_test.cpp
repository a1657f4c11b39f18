// GGUF reader on real third-party files from tests/data/testdata (see its README for provenance)
// and on hand-written bytes: header fields, metadata, tensor table, typed getters, open() errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "fixtures/test_support.h"
#include "gguf/gguf_reader.h"

namespace jitllm {
namespace {

using ::testing::HasSubstr;

std::string testdata(const std::string& rel) { return test::data_path("testdata/" + rel); }
std::unique_ptr<GgufReader> open_testdata(const std::string& rel) { return test::open_data_gguf("testdata/" + rel); }
const std::string kStories = test::source_dir() + "/models/stories260K.gguf";

template <typename F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(GgufReader, reads_stories260k_header_and_metadata) {
    auto g = GgufReader::open(kStories);
    EXPECT_EQ(g->version(), 3u);
    EXPECT_EQ(g->alignment(), 32u);
    EXPECT_EQ(g->file_size(), 1185376u);
    EXPECT_EQ(g->kvs().size(), 19u);
    EXPECT_EQ(g->tensors().size(), 48u);
    // The metadata starts with the tokenizer arrays (README).
    EXPECT_EQ(g->kvs()[0].key, "tokenizer.ggml.tokens");
    EXPECT_EQ(g->get_string("general.architecture"), "llama");
    EXPECT_EQ(g->get_string("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(g->get_int("llama.embedding_length"), 64);
    EXPECT_EQ(g->get_int("llama.feed_forward_length"), 172);
    EXPECT_EQ(g->get_int("llama.block_count"), 5);
    EXPECT_EQ(g->get_int("llama.attention.head_count"), 8);
    EXPECT_EQ(g->get_int("llama.attention.head_count_kv"), 4);
    EXPECT_EQ(g->get_int("llama.rope.dimension_count"), 8);
    EXPECT_EQ(g->get_int("llama.context_length"), 2048);
    EXPECT_EQ(g->get_int("tokenizer.ggml.bos_token_id"), 1);
    EXPECT_EQ(g->get_int("tokenizer.ggml.eos_token_id"), 2);
    EXPECT_EQ(g->get_int("tokenizer.ggml.padding_token_id"), 0xFFFFFFFFll);
    EXPECT_NEAR(g->get_float("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-12);
    EXPECT_EQ(g->find_kv("llama.rope.freq_base"), nullptr);

    auto tokens = g->get_string_array_opt("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens);
    ASSERT_EQ(tokens->size(), 512u);
    EXPECT_EQ((*tokens)[0], "<unk>");
    EXPECT_EQ((*tokens)[1], "<s>");
    EXPECT_EQ((*tokens)[2], "</s>");
    auto scores = g->get_float_array_opt("tokenizer.ggml.scores");
    ASSERT_TRUE(scores);
    EXPECT_EQ(scores->size(), 512u);
    auto types = g->get_int_array_opt("tokenizer.ggml.token_type");
    ASSERT_TRUE(types);
    ASSERT_EQ(types->size(), 512u);
    EXPECT_EQ((*types)[0], 2);  // unknown
    EXPECT_EQ((*types)[1], 3);  // control
}

// copy_out (the GPU upload's reads): pread from an opened file, memcpy from bytes in memory; the
// same bytes as the mapping; a file cut short after opening is an Error, not a fault.
TEST(GgufReader, copy_out_gives_the_mapped_bytes) {
    const std::string path = test::source_dir() + "/models/stories260K.gguf";
    auto g = GgufReader::open(path);
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto m = GgufReader::from_bytes(bytes, "in memory");
    for (const GgufReader* r : {g.get(), m.get()}) {
        for (const auto& t : r->tensors()) {
            std::vector<uint8_t> got(t.n_bytes, 0xAB);
            r->copy_out(t.data, t.n_bytes, got.data());
            EXPECT_EQ(std::memcmp(got.data(), t.data, t.n_bytes), 0) << t.name;
        }
        const GgufTensorInfo* e = r->find_tensor("token_embd.weight");
        ASSERT_NE(e, nullptr);
        std::vector<uint8_t> part(1001);
        r->copy_out(e->data + 3, part.size(), part.data());  // unaligned, inside a tensor
        EXPECT_EQ(std::memcmp(part.data(), e->data + 3, part.size()), 0);
        EXPECT_TRUE(r->holds(e->data, e->n_bytes));
        EXPECT_FALSE(r->holds(e->data, size_t(r->file_size()) + 1));
        EXPECT_FALSE(r->holds(part.data(), 4));
    }
    // a copy of the file, opened, then cut to half: the reads past the cut fail with a sentence
    const std::string cut = ::testing::TempDir() + "copy_out_cut.gguf";
    std::ofstream(cut, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    auto c = GgufReader::open(cut);
    ASSERT_EQ(::truncate(cut.c_str(), off_t(bytes.size() / 2)), 0);
    const GgufTensorInfo& last = c->tensors().back();
    std::vector<uint8_t> got(last.n_bytes);
    EXPECT_THAT(error_of([&] { c->copy_out(last.data, last.n_bytes, got.data()); }),
                HasSubstr("the file is shorter than when it was opened"));
    ::unlink(cut.c_str());
}

TEST(GgufReader, reads_stories260k_tensor_table) {
    auto g = GgufReader::open(kStories);
    // Tensor order: token_embd, output_norm, output, then blk.N.* (README).
    EXPECT_EQ(g->tensors()[0].name, "token_embd.weight");
    EXPECT_EQ(g->tensors()[1].name, "output_norm.weight");
    EXPECT_EQ(g->tensors()[2].name, "output.weight");
    const GgufTensorInfo* t = g->find_tensor("token_embd.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->type, GgmlType::F32);
    EXPECT_EQ(t->dims, (std::vector<uint64_t>{64, 512}));
    EXPECT_EQ(t->n_elements, 64u * 512u);
    EXPECT_EQ(t->n_bytes, 64u * 512u * 4u);
    EXPECT_EQ(t->rows(), 512u);
    EXPECT_EQ(t->offset, 0u);
    EXPECT_EQ(g->data_offset() % 32, 0u);
    EXPECT_NE(t->data, nullptr);
    const GgufTensorInfo* down = g->find_tensor("blk.4.ffn_down.weight");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->dims, (std::vector<uint64_t>{172, 64}));
    EXPECT_EQ(g->find_tensor("blk.5.ffn_down.weight"), nullptr);
    uint64_t total = 0;
    for (const auto& ti : g->tensors()) total += ti.n_elements;
    // dim 64, hidden 172, 5 layers, 8 heads x 8, 4 kv heads, vocab 512, output copied:
    // 2*512*64 + 64 + 5*(64*64*2 + 64*32*2 + 3*64*172 + 2*64).
    EXPECT_EQ(total, 2u * 512 * 64 + 64 + 5u * (64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 172 + 2 * 64));
}

TEST(GgufReader, stories260k_token_embd_matches_llama2c_checkpoint) {
    // README: every tensor is byte-identical to the llama2.c .bin; the token embedding follows
    // the 7 int32 config fields.
    auto g = GgufReader::open(kStories);
    std::string bin = test::read_data("testdata/llama2c/stories260K.bin");
    const GgufTensorInfo* t = g->find_tensor("token_embd.weight");
    ASSERT_NE(t, nullptr);
    ASSERT_GE(bin.size(), 28 + t->n_bytes);
    EXPECT_EQ(std::memcmp(t->data, bin.data() + 28, t->n_bytes), 0);
}

TEST(GgufReader, reads_v2_vocab_only_falcon) {
    auto g = open_testdata("legacy/ggml-vocab-falcon-v2.gguf");
    EXPECT_EQ(g->version(), 2u);
    EXPECT_EQ(g->kvs().size(), 17u);
    EXPECT_TRUE(g->tensors().empty());
    EXPECT_EQ(g->get_string("general.architecture"), "falcon");
    EXPECT_EQ(g->get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(g->get_string_array_opt("tokenizer.ggml.tokens")->size(), 65024u);
    EXPECT_EQ(g->get_string_array_opt("tokenizer.ggml.merges")->size(), 64784u);
    EXPECT_FALSE(g->get_string_opt("tokenizer.ggml.pre"));
}

TEST(GgufReader, refuses_v1_files_with_the_version_sentence) {
    for (const char* f : {"legacy/ggml-vocab-llama-v1.gguf",
                          "legacy/tinyllamas-stories-260k-f32.gguf"}) {
        std::string path = testdata(f);
        EXPECT_EQ(error_of([&] { open_testdata(f); }),
                  path + ": GGUF version 1 is not supported: expected version 2 or 3, found 1; "
                         "hint: re-convert the file with a current converter");
    }
}

TEST(GgufReader, refuses_malformed_q8_0_v2_file) {
    // README: the ffn_down tensors have ne0 = 172, not a multiple of the Q8_0 block (32);
    // the loader must reject the file cleanly.
    std::string path = testdata("legacy/tinyllamas-stories-260k-q8_0.gguf");
    std::string m = error_of([&] { open_testdata("legacy/tinyllamas-stories-260k-q8_0.gguf"); });
    EXPECT_THAT(m, HasSubstr(path + ": tensor 'blk.0.ffn_down.weight': dims[0] = 172 is not a "
                                    "multiple of the q8_0 block size"));
}

TEST(GgufReader, reads_every_v3_vocab_and_the_tiny_random_model) {
    auto g = open_testdata("models/llama-2-tiny-random.gguf");
    EXPECT_EQ(g->tensors().size(), 12u);
    EXPECT_EQ(g->get_int("general.file_type"), 1);
    EXPECT_EQ(g->get_string_array_opt("tokenizer.ggml.tokens")->size(), 32000u);
    for (const char* f : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf",
                          "vocab/ggml-vocab-qwen3-npm.gguf", "vocab/ggml-vocab-bert-bge.gguf"}) {
        auto v = open_testdata(f);
        EXPECT_EQ(v->version(), 3u) << f;
        EXPECT_TRUE(v->tensors().empty()) << f;
        EXPECT_TRUE(v->get_string_array_opt("tokenizer.ggml.tokens")) << f;
    }
}

// --- open() errors ---

class GgufOpen : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/gguf_reader_test_XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override {
        for (const auto& f : files_) ::unlink(f.c_str());
        ::rmdir(dir_.c_str());
    }
    std::string make_file(const std::string& name, const std::string& content) {
        std::string p = dir_ + "/" + name;
        std::ofstream(p, std::ios::binary) << content;
        files_.push_back(p);
        return p;
    }
    std::string dir_;
    std::vector<std::string> files_;
};

TEST_F(GgufOpen, missing_file) {
    std::string p = dir_ + "/nope.gguf";
    EXPECT_EQ(error_of([&] { GgufReader::open(p); }),
              p + ": cannot open: No such file or directory");
}

TEST_F(GgufOpen, directory) {
    EXPECT_THAT(error_of([&] { GgufReader::open(dir_); }),
                HasSubstr(dir_ + ": cannot open: expected a GGUF file, found a directory"));
}

TEST_F(GgufOpen, empty_file) {
    std::string p = make_file("empty.gguf", "");
    EXPECT_THAT(error_of([&] { GgufReader::open(p); }), HasSubstr(p + ": not a GGUF file"));
}

TEST_F(GgufOpen, text_file) {
    std::string p = make_file("notes.txt", "hello world, this is not a model\n");
    EXPECT_EQ(error_of([&] { GgufReader::open(p); }),
              p + ": not a GGUF file: expected magic \"GGUF\", found \"hell\"");
}

TEST_F(GgufOpen, mapped_file_matches_from_bytes) {
    std::string bytes = test::read_file(kStories);
    std::string p = make_file("copy.gguf", bytes);
    auto a = GgufReader::open(p);
    auto b = GgufReader::from_bytes(std::vector<uint8_t>(bytes.begin(), bytes.end()), "mem");
    EXPECT_EQ(b->path(), "mem");
    ASSERT_EQ(a->tensors().size(), b->tensors().size());
    for (size_t k = 0; k < a->tensors().size(); ++k) {
        const auto& x = a->tensors()[k];
        const auto& y = b->tensors()[k];
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.offset, y.offset);
        EXPECT_EQ(std::memcmp(x.data, y.data, x.n_bytes), 0);
    }
}

// --- typed getters, on hand-written metadata ---

// Metadata-only GGUF v3 with the given raw KV bytes.
std::unique_ptr<GgufReader> with_kvs(uint64_t n_kv, const std::vector<uint8_t>& kv_bytes) {
    std::vector<uint8_t> b = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
    auto u64 = [&](uint64_t v) {
        for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> (8 * i)));
    };
    u64(0);
    u64(n_kv);
    b.insert(b.end(), kv_bytes.begin(), kv_bytes.end());
    return GgufReader::from_bytes(b, "m.gguf");
}

struct Kv {
    std::vector<uint8_t> b;
    Kv& key(const std::string& k, uint32_t type) {
        u64(k.size());
        b.insert(b.end(), k.begin(), k.end());
        return u32(type);
    }
    Kv& u8(uint8_t v) { return raw(&v, 1); }
    Kv& u32(uint32_t v) { return raw(&v, 4); }
    Kv& u64(uint64_t v) { return raw(&v, 8); }
    Kv& raw(const void* p, size_t n) {
        auto* c = static_cast<const uint8_t*>(p);
        b.insert(b.end(), c, c + n);
        return *this;
    }
};

TEST(GgufGetters, integers_floats_bools_strings) {
    Kv k;
    k.key("u8", 0).u8(200);
    k.key("i8", 1).u8(0x80);  // -128
    k.key("u64max", 10).u64(~uint64_t(0));
    k.key("i64", 11).u64(uint64_t(-5));
    float f = 2.5f;
    k.key("f32", 6).raw(&f, 4);
    k.key("flag", 7).u8(1);
    k.key("s", 8).u64(2).raw("hi", 2);
    auto g = with_kvs(7, k.b);
    EXPECT_EQ(g->get_int("u8"), 200);
    EXPECT_EQ(g->get_int("i8"), -128);
    EXPECT_EQ(g->get_int("i64"), -5);
    EXPECT_EQ(g->get_float("u8"), 200.0);
    EXPECT_EQ(g->get_float("f32"), 2.5);
    EXPECT_EQ(g->get_bool_opt("flag"), std::optional<bool>(true));
    EXPECT_EQ(g->get_string("s"), "hi");
    EXPECT_FALSE(g->get_int_opt("absent"));
    EXPECT_FALSE(g->get_float_opt("absent"));
    EXPECT_FALSE(g->get_bool_opt("absent"));
    EXPECT_FALSE(g->get_string_opt("absent"));

    EXPECT_EQ(error_of([&] { g->get_int("u64max"); }),
              "m.gguf: key 'u64max': value 18446744073709551615 is out of range: expected at "
              "most 9223372036854775807");
    EXPECT_EQ(error_of([&] { g->get_int("flag"); }),
              "m.gguf: key 'flag': expected an integer, found bool");
    EXPECT_EQ(error_of([&] { g->get_int("f32"); }),
              "m.gguf: key 'f32': expected an integer, found f32");
    EXPECT_EQ(error_of([&] { g->get_string("u8"); }),
              "m.gguf: key 'u8': expected string, found u8");
    EXPECT_EQ(error_of([&] { g->get_bool_opt("u8"); }),
              "m.gguf: key 'u8': expected bool, found u8");
    EXPECT_EQ(error_of([&] { g->get_float("s"); }),
              "m.gguf: key 's': expected a number, found string");
    EXPECT_EQ(error_of([&] { g->get_string("absent"); }), "m.gguf: missing key 'absent'");
    EXPECT_EQ(error_of([&] { g->get_int("absent"); }), "m.gguf: missing key 'absent'");
    EXPECT_EQ(error_of([&] { g->get_float("absent"); }), "m.gguf: missing key 'absent'");
}

TEST(GgufGetters, arrays) {
    Kv k;
    k.key("ints", 9).u32(5).u64(3).u32(uint32_t(-1)).u32(0).u32(7);  // i32
    k.key("strs", 9).u32(8).u64(2).u64(1).raw("a", 1).u64(0);
    k.key("u64s", 9).u32(10).u64(1).u64(~uint64_t(0));
    k.key("scalar", 4).u32(3);
    auto g = with_kvs(4, k.b);
    EXPECT_EQ(*g->get_int_array_opt("ints"), (std::vector<int64_t>{-1, 0, 7}));
    EXPECT_EQ(*g->get_float_array_opt("ints"), (std::vector<float>{-1.0f, 0.0f, 7.0f}));
    EXPECT_EQ(*g->get_string_array_opt("strs"), (std::vector<std::string>{"a", ""}));
    EXPECT_FALSE(g->get_string_array_opt("absent"));
    EXPECT_EQ(error_of([&] { g->get_string_array_opt("ints"); }),
              "m.gguf: key 'ints': expected array of string, found array of i32");
    EXPECT_EQ(error_of([&] { g->get_int_array_opt("strs"); }),
              "m.gguf: key 'strs': expected array of integers, found array of string");
    EXPECT_EQ(error_of([&] { g->get_float_array_opt("scalar"); }),
              "m.gguf: key 'scalar': expected array of numbers, found u32");
    EXPECT_THAT(error_of([&] { g->get_int_array_opt("u64s"); }), HasSubstr("out of range"));
}

TEST(GgufGetters, value_type_names) {
    EXPECT_STREQ(gguf_value_type_name(GgufValueType::U32), "u32");
    EXPECT_STREQ(gguf_value_type_name(GgufValueType::STRING), "string");
    EXPECT_STREQ(gguf_value_type_name(GgufValueType::ARRAY), "array");
    EXPECT_STREQ(gguf_value_type_name(GgufValueType::F64), "f64");
    EXPECT_STREQ(gguf_value_type_name(GgufValueType::BOOL), "bool");
}

}  // namespace
}  // namespace jitllm
