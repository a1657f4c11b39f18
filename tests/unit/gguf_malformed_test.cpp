// GGUF reader on hand-crafted bad input: every malformation gets one sentence naming the file and
// the problem, and truncation at every offset of a small file is refused without a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "fixtures/gguf_values.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace jitllm {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Little-endian byte buffer builder for hand-written GGUF files.
struct Bytes {
    std::vector<uint8_t> b;
    Bytes& raw(const void* p, size_t n) {
        auto* c = static_cast<const uint8_t*>(p);
        b.insert(b.end(), c, c + n);
        return *this;
    }
    Bytes& u8(uint8_t v) { return raw(&v, 1); }
    Bytes& u32(uint32_t v) { return raw(&v, 4); }
    Bytes& u64(uint64_t v) { return raw(&v, 8); }
    Bytes& str(const std::string& s) { return u64(s.size()).raw(s.data(), s.size()); }
    Bytes& pad_to(size_t a) {
        b.resize((b.size() + a - 1) / a * a, 0);
        return *this;
    }
    Bytes& zeros(size_t n) {
        b.resize(b.size() + n, 0);
        return *this;
    }
    // "GGUF", version, tensor_count, kv_count.
    static Bytes header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
        Bytes x;
        x.raw("GGUF", 4).u32(version).u64(n_tensors).u64(n_kv);
        return x;
    }
    Bytes& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
    Bytes& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type,
                  uint64_t offset) {
        str(name).u32(uint32_t(dims.size()));
        for (uint64_t d : dims) u64(d);
        return u32(type).u64(offset);
    }
};

constexpr uint32_t kF32 = 0, kQ8_0 = 8;

// The message of the Error that parsing `b` throws ("" if none: the test then fails on it).
std::string error_of(const Bytes& b) {
    try {
        GgufReader::from_bytes(b.b, "bad.gguf");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(GgufMalformed, rejects_bad_magic) {
    Bytes b;
    b.raw("GGML", 4).u32(3).u64(0).u64(0);
    EXPECT_EQ(error_of(b), "bad.gguf: not a GGUF file: expected magic \"GGUF\", found \"GGML\"");
    Bytes z;
    z.zeros(24);
    EXPECT_THAT(error_of(z), HasSubstr("found \"\\x00\\x00\\x00\\x00\""));
}

TEST(GgufMalformed, rejects_short_and_empty_input) {
    EXPECT_THAT(error_of(Bytes{}), HasSubstr("bad.gguf: not a GGUF file"));
    Bytes b;
    b.raw("GG", 2);
    EXPECT_THAT(error_of(b), HasSubstr("not a GGUF file"));
}

TEST(GgufMalformed, rejects_version_1_with_hint) {
    EXPECT_EQ(error_of(Bytes::header(1, 0, 0)),
              "bad.gguf: GGUF version 1 is not supported: expected version 2 or 3, found 1; "
              "hint: re-convert the file with a current converter");
}

TEST(GgufMalformed, rejects_unknown_versions) {
    std::string m = error_of(Bytes::header(4, 0, 0));
    EXPECT_THAT(m, StartsWith("bad.gguf: "));
    EXPECT_THAT(m, HasSubstr("unsupported GGUF version: expected version 2 or 3, found 4"));
    EXPECT_THAT(error_of(Bytes::header(0, 0, 0)), HasSubstr("found 0"));
    // A big-endian version 3 reads as 0x03000000 on a little-endian host.
    EXPECT_THAT(error_of(Bytes::header(0x03000000u, 0, 0)), HasSubstr("big-endian"));
}

TEST(GgufMalformed, accepts_minimal_v2_and_v3_headers) {
    for (uint32_t v : {2u, 3u}) {
        auto r = GgufReader::from_bytes(Bytes::header(v, 0, 0).b, "ok.gguf");
        EXPECT_EQ(r->version(), v);
        EXPECT_TRUE(r->kvs().empty());
        EXPECT_TRUE(r->tensors().empty());
        EXPECT_EQ(r->alignment(), 32u);
    }
}

TEST(GgufMalformed, rejects_huge_kv_count_before_allocating) {
    std::string m = error_of(Bytes::header(3, 0, uint64_t(1) << 60));
    EXPECT_THAT(m, HasSubstr("bad.gguf: truncated or corrupt: kv_count is 1152921504606846976"));
    EXPECT_THAT(m, HasSubstr("the 0 remaining bytes hold at most 0"));
}

TEST(GgufMalformed, rejects_huge_tensor_count) {
    Bytes b = Bytes::header(3, uint64_t(1) << 62, 0);
    b.zeros(100);
    // 100 bytes hold at most 4 tensor infos of 24 bytes.
    EXPECT_THAT(error_of(b), HasSubstr("tensor_count is 4611686018427387904, but the 100 "
                                       "remaining bytes hold at most 4"));
}

TEST(GgufMalformed, rejects_huge_key_length) {
    Bytes b = Bytes::header(3, 0, 1);
    b.u64(uint64_t(1) << 62).u32(4).u32(0);
    EXPECT_THAT(error_of(b), HasSubstr("KV #0: key length is 4611686018427387904, but only 8 "
                                       "bytes remain"));
}

TEST(GgufMalformed, rejects_huge_string_value_length) {
    Bytes b = Bytes::header(3, 0, 1);
    b.str("general.name").u32(8).u64(~uint64_t(0));
    EXPECT_THAT(error_of(b), HasSubstr("key 'general.name': string value length is "
                                       "18446744073709551615, but only 0 bytes remain"));
}

TEST(GgufMalformed, rejects_key_longer_than_65535_bytes) {
    Bytes b = Bytes::header(3, 0, 1);
    b.kv_u32(std::string(65536, 'k'), 1);
    EXPECT_THAT(error_of(b), HasSubstr("KV #0: key is too long: expected at most 65535 bytes, "
                                       "found 65536"));
}

TEST(GgufMalformed, rejects_huge_array_length) {
    Bytes b = Bytes::header(3, 0, 1);
    b.str("a").u32(9).u32(4).u64(uint64_t(1) << 40).u32(1).u32(2);
    EXPECT_THAT(error_of(b), HasSubstr("key 'a': array length (u32 elements) is 1099511627776, "
                                       "but the 8 remaining bytes hold at most 2"));
    Bytes s = Bytes::header(3, 0, 1);
    s.str("s").u32(9).u32(8).u64(3).str("x");  // 3 strings, room for 1
    EXPECT_THAT(error_of(s), HasSubstr("array length (string elements) is 3"));
}

TEST(GgufMalformed, rejects_invalid_value_types) {
    Bytes b = Bytes::header(3, 0, 1);
    b.str("k").u32(13).u32(0);
    EXPECT_THAT(error_of(b), HasSubstr("bad.gguf: key 'k': invalid value type 13: expected 0..12"));
    Bytes a = Bytes::header(3, 0, 1);
    a.str("k").u32(9).u32(77).u64(0);
    EXPECT_THAT(error_of(a), HasSubstr("key 'k': invalid array element type 77"));
}

TEST(GgufMalformed, rejects_bool_other_than_0_or_1) {
    Bytes b = Bytes::header(3, 0, 1);
    b.str("flag").u32(7).u8(2);
    EXPECT_THAT(error_of(b), HasSubstr("key 'flag': invalid bool value: expected 0 or 1, found 2"));
}

TEST(GgufMalformed, bounds_array_nesting_depth) {
    // depth levels of array-of-array, innermost an empty u8 array.
    auto nested = [](int depth) {
        Bytes b = Bytes::header(3, 0, 1);
        b.str("n").u32(9);
        for (int d = 1; d < depth; ++d) b.u32(9).u64(1);
        b.u32(0).u64(0);
        return b;
    };
    auto r = GgufReader::from_bytes(nested(8).b, "ok.gguf");
    const GgufValue* v = &r->kvs()[0].value;
    for (int d = 1; d < 8; ++d) {
        ASSERT_EQ(v->type, GgufValueType::ARRAY);
        ASSERT_EQ(v->size(), 1u);
        v = &v->arr[0];
    }
    EXPECT_EQ(v->elem_type, GgufValueType::U8);
    EXPECT_EQ(v->size(), 0u);
    EXPECT_THAT(error_of(nested(9)), HasSubstr("key 'n': arrays nested too deeply: expected at "
                                               "most 8 levels"));
}

TEST(GgufMalformed, rejects_duplicate_key) {
    Bytes b = Bytes::header(3, 0, 2);
    b.kv_u32("x.y", 1).kv_u32("x.y", 2);
    EXPECT_THAT(error_of(b), HasSubstr("bad.gguf: duplicate key 'x.y'"));
}

TEST(GgufMalformed, rejects_bad_alignment_key) {
    Bytes b = Bytes::header(3, 0, 1);
    b.kv_u32("general.alignment", 48);
    EXPECT_THAT(error_of(b), HasSubstr("key 'general.alignment': expected a nonzero power of two, "
                                       "found 48"));
    Bytes z = Bytes::header(3, 0, 1);
    z.kv_u32("general.alignment", 0);
    EXPECT_THAT(error_of(z), HasSubstr("found 0"));
    Bytes t = Bytes::header(3, 0, 1);
    t.str("general.alignment").u32(10).u64(64);
    EXPECT_THAT(error_of(t), HasSubstr("key 'general.alignment': expected u32, found u64"));
}

// One tensor `w` with the given fields, data section of `data_bytes` zero bytes.
Bytes one_tensor(std::vector<uint64_t> dims, uint32_t type, uint64_t offset, size_t data_bytes) {
    Bytes b = Bytes::header(3, 1, 0);
    b.tensor("w", dims, type, offset).pad_to(32).zeros(data_bytes);
    return b;
}

TEST(GgufMalformed, accepts_a_well_formed_tensor) {
    Bytes b = one_tensor({4, 2}, kF32, 0, 0);
    for (int k = 0; k < 32; ++k) b.u8(uint8_t(k + 1));
    auto r = GgufReader::from_bytes(b.b, "ok.gguf");
    ASSERT_EQ(r->tensors().size(), 1u);
    const GgufTensorInfo& t = r->tensors()[0];
    // header 24 + name 9 + n_dims 4 + dims 16 + type 4 + offset 8 = 65 -> data at 96.
    EXPECT_EQ(r->data_offset(), 96u);
    EXPECT_EQ(t.n_elements, 8u);
    EXPECT_EQ(t.n_bytes, 32u);
    EXPECT_EQ(t.rows(), 2u);
    ASSERT_NE(t.data, nullptr);
    EXPECT_EQ(t.data[0], 1);
    EXPECT_EQ(t.data[31], 32);
    EXPECT_EQ(t.type, GgmlType::F32);
    EXPECT_EQ(t.dims, (std::vector<uint64_t>{4, 2}));
}

TEST(GgufMalformed, rejects_unknown_tensor_type) {
    EXPECT_THAT(error_of(one_tensor({4}, 99, 0, 32)),
                HasSubstr("bad.gguf: tensor 'w': unknown ggml type id 99"));
}

TEST(GgufMalformed, rejects_n_dims_0_and_5) {
    EXPECT_THAT(error_of(one_tensor({}, kF32, 0, 32)),
                HasSubstr("tensor 'w': invalid n_dims: expected 1..4, found 0"));
    EXPECT_THAT(error_of(one_tensor({1, 1, 1, 1, 1}, kF32, 0, 32)),
                HasSubstr("tensor 'w': invalid n_dims: expected 1..4, found 5"));
}

TEST(GgufMalformed, rejects_zero_dim) {
    EXPECT_THAT(error_of(one_tensor({4, 0}, kF32, 0, 32)),
                HasSubstr("tensor 'w': invalid dims[1]: expected at least 1, found 0"));
}

TEST(GgufMalformed, rejects_overflowing_dims) {
    uint64_t big = uint64_t(1) << 32;
    EXPECT_THAT(error_of(one_tensor({big, big}, kF32, 0, 32)),
                HasSubstr("tensor 'w': element count overflows 64 bits"));
    // 2^62 elements fit in u64, 2^62 * 4 bytes do not.
    EXPECT_THAT(error_of(one_tensor({uint64_t(1) << 62}, kF32, 0, 32)),
                HasSubstr("tensor 'w': byte size overflows 64 bits"));
}

TEST(GgufMalformed, rejects_row_not_multiple_of_block) {
    EXPECT_THAT(error_of(one_tensor({33, 2}, kQ8_0, 0, 128)),
                HasSubstr("tensor 'w': dims[0] = 33 is not a multiple of the q8_0 block size: "
                          "expected a multiple of 32"));
}

TEST(GgufMalformed, rejects_misaligned_offset) {
    EXPECT_THAT(error_of(one_tensor({4}, kF32, 4, 64)),
                HasSubstr("tensor 'w': offset 4 is misaligned: expected a multiple of 32"));
}

TEST(GgufMalformed, rejects_offset_past_eof) {
    // header 24 + info 33 = 57 -> data at 64; file 64 + 32 = 96; offset 64 -> [128, 144).
    EXPECT_EQ(error_of(one_tensor({4}, kF32, 64, 32)),
              "bad.gguf: truncated: tensor 'w' needs bytes [128, 144), file is 96 bytes");
    EXPECT_THAT(error_of(one_tensor({4}, kF32, uint64_t(1) << 63, 32)),
                HasSubstr("truncated: tensor 'w'"));
    EXPECT_THAT(error_of(one_tensor({4}, kF32, ~uint64_t(31), 32)),
                HasSubstr("truncated: tensor 'w'"));
}

TEST(GgufMalformed, rejects_duplicate_tensor_name) {
    Bytes b = Bytes::header(3, 2, 0);
    b.tensor("w", {8}, kF32, 0).tensor("w", {8}, kF32, 32).pad_to(32).zeros(64);
    EXPECT_THAT(error_of(b), HasSubstr("bad.gguf: duplicate tensor 'w'"));
}

TEST(GgufMalformed, rejects_overlapping_tensors) {
    Bytes b = Bytes::header(3, 2, 0);
    // a: [0, 64), b: [32, 64)
    b.tensor("a", {16}, kF32, 0).tensor("b", {8}, kF32, 32).pad_to(32).zeros(64);
    EXPECT_THAT(error_of(b), HasSubstr("bad.gguf: tensors 'a' and 'b' overlap: 'a' has data "
                                       "bytes [0, 64), 'b' starts at 32"));
    Bytes same = Bytes::header(3, 2, 0);
    same.tensor("a", {8}, kF32, 0).tensor("b", {8}, kF32, 0).pad_to(32).zeros(32);
    EXPECT_THAT(error_of(same), HasSubstr("overlap"));
}

TEST(GgufMalformed, honours_alignment_key_for_data_and_offsets) {
    Bytes b = Bytes::header(3, 1, 1);
    b.kv_u32("general.alignment", 64).tensor("w", {4}, kF32, 0).pad_to(64).zeros(16);
    auto r = GgufReader::from_bytes(b.b, "ok.gguf");
    EXPECT_EQ(r->alignment(), 64u);
    EXPECT_EQ(r->data_offset(), 128u);  // 24 + 33 (kv) + 33 (tensor info) = 90 -> 128
    Bytes m = Bytes::header(3, 1, 1);
    m.kv_u32("general.alignment", 64).tensor("w", {4}, kF32, 32).pad_to(64).zeros(64);
    EXPECT_THAT(error_of(m), HasSubstr("offset 32 is misaligned: expected a multiple of 64"));
}

// A small writer-made file with every kind of section: metadata of several types (a string
// array, a nested array), two tensors; the last tensor's data fills its padding exactly, so
// every proper prefix is a truncated file.
std::vector<uint8_t> small_file(uint64_t alignment) {
    GgufWriter w(alignment);
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", 2);
    w.set_f32("llama.rope.freq_base", 10000.0f);
    w.set_bool("flag", true);
    w.set_string_array("tokenizer.ggml.tokens", {"a", "bb", "ccc"});
    const GgufValue zero = test::gguf_value(GgufValueType::I32);
    const GgufValue inner = test::gguf_array(GgufValueType::I32, {zero, zero});
    w.set("nested", test::gguf_array(GgufValueType::ARRAY, {inner, inner}));
    w.add_tensor("a", GgmlType::F32, {3}, std::vector<uint8_t>(12, 1));
    w.add_tensor("b", GgmlType::F32, {alignment / 4}, std::vector<uint8_t>(alignment, 2));
    return w.to_bytes();
}

TEST(GgufMalformed, refuses_every_truncation_of_a_small_file) {
    for (uint64_t alignment : {32u, 64u}) {
        std::vector<uint8_t> full = small_file(alignment);
        auto ok = GgufReader::from_bytes(full, "full.gguf");
        ASSERT_EQ(ok->tensors().size(), 2u);
        uint64_t table_end = ok->data_offset();
        for (size_t n = 0; n < full.size(); ++n) {
            std::vector<uint8_t> cut(full.begin(), full.begin() + n);
            std::string m;
            try {
                GgufReader::from_bytes(cut, "cut.gguf");
            } catch (const Error& e) {
                m = e.what();
            }
            ASSERT_FALSE(m.empty()) << "prefix of " << n << " bytes was accepted";
            EXPECT_THAT(m, StartsWith("cut.gguf: "));
            bool says = m.find("truncated") != std::string::npos ||
                        m.find("not a GGUF file") != std::string::npos;
            EXPECT_TRUE(says) << "prefix " << n << " (table ends at " << table_end << "): " << m;
        }
    }
}

TEST(GgufMalformed, refuses_every_truncation_of_a_metadata_only_file) {
    GgufWriter w;
    w.set_string_array("tokenizer.ggml.tokens", {"x", "yy"});
    w.set_u64("n", 5);
    std::vector<uint8_t> full = w.to_bytes();
    ASSERT_NO_THROW(GgufReader::from_bytes(full, "full.gguf"));
    for (size_t n = 0; n < full.size(); ++n) {
        std::vector<uint8_t> cut(full.begin(), full.begin() + n);
        try {
            GgufReader::from_bytes(cut, "cut.gguf");
            ADD_FAILURE() << "prefix of " << n << " bytes was accepted";
        } catch (const Error& e) {
            std::string m = e.what();
            EXPECT_TRUE(m.find("truncated") != std::string::npos ||
                        m.find("not a GGUF file") != std::string::npos)
                << m;
        }
    }
}

TEST(GgufMalformed, survives_single_byte_corruption) {
    // Flipping any one byte must give either a valid reader or an Error, never a crash.
    std::vector<uint8_t> full = small_file(32);
    int errors = 0;
    for (size_t k = 0; k < full.size(); ++k) {
        for (uint8_t x : {uint8_t(0xff), uint8_t(0x80), uint8_t(0x01)}) {
            std::vector<uint8_t> bad = full;
            bad[k] ^= x;
            try {
                GgufReader::from_bytes(bad, "flip.gguf");
            } catch (const Error& e) {
                EXPECT_THAT(std::string(e.what()), StartsWith("flip.gguf: "));
                ++errors;
            }
        }
    }
    EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace jitllm
