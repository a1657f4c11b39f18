// GGUF writer: byte-exact output for small hand-computed files, writer -> reader round trip of
// every value type (nested arrays included), alignment, replacing keys, atomic write() errors.
#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <limits>

#include "core/error.h"
#include "fixtures/gguf_values.h"
#include "fixtures/test_support.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace jitllm {
namespace {

using ::testing::HasSubstr;

GgufValue make(GgufValueType t) { return test::gguf_value(t); }
GgufValue array(GgufValueType elem, const std::vector<GgufValue>& items) { return test::gguf_array(elem, items); }
GgufValue str(const std::string& s) { return test::gguf_str(s); }

// a scalar of type t with its unsigned, signed or floating member set
GgufValue make_u(GgufValueType t, uint64_t u) {
    GgufValue v = make(t);
    v.u = u;
    return v;
}
GgufValue make_i(GgufValueType t, int64_t i) {
    GgufValue v = make(t);
    v.i = i;
    return v;
}
GgufValue make_f(GgufValueType t, double f) {
    GgufValue v = make(t);
    v.f = f;
    return v;
}

GgufValue i32(int64_t i) {
    return make_i(GgufValueType::I32, i);
}

std::unique_ptr<GgufReader> reread(const GgufWriter& w) {
    return GgufReader::from_bytes(w.to_bytes(), "w.gguf");
}

TEST(GgufWriter, writes_exact_bytes_for_a_metadata_only_file) {
    GgufWriter w;
    w.set_u32("a", 7);
    std::vector<uint8_t> expected = {
        'G', 'G', 'U', 'F', 3, 0, 0, 0,  // magic, version 3
        0, 0, 0, 0, 0, 0, 0, 0,          // tensor_count 0
        1, 0, 0, 0, 0, 0, 0, 0,          // kv_count 1
        1, 0, 0, 0, 0, 0, 0, 0, 'a',     // key "a"
        4, 0, 0, 0,                      // type u32
        7, 0, 0, 0,                      // value 7 (file ends: no tensors, no padding)
    };
    EXPECT_EQ(w.to_bytes(), expected);
}

TEST(GgufWriter, writes_exact_bytes_for_one_tensor) {
    GgufWriter w;
    w.add_tensor("t", GgmlType::F32, {1}, {0x00, 0x00, 0x80, 0x3f});  // 1.0f
    std::vector<uint8_t> expected = {
        'G', 'G', 'U', 'F', 3, 0, 0, 0,  // magic, version
        1, 0, 0, 0, 0, 0, 0, 0,          // tensor_count 1
        0, 0, 0, 0, 0, 0, 0, 0,          // kv_count 0
        1, 0, 0, 0, 0, 0, 0, 0, 't',     // name "t"
        1, 0, 0, 0,                      // n_dims 1
        1, 0, 0, 0, 0, 0, 0, 0,          // dims[0] = 1
        0, 0, 0, 0,                      // type f32
        0, 0, 0, 0, 0, 0, 0, 0,          // offset 0
    };
    expected.resize(64, 0);  // 57 bytes of header + table, padded to 32
    for (uint8_t b : {0x00, 0x00, 0x80, 0x3f}) expected.push_back(b);
    expected.resize(96, 0);  // tensor data padded to 32
    EXPECT_EQ(w.to_bytes(), expected);
}

TEST(GgufWriter, round_trips_every_value_type) {
    GgufWriter w;
    auto put = [&](const std::string& k, GgufValueType t, uint64_t u, int64_t i, double f) {
        GgufValue v = make(t);
        v.u = u;
        v.i = i;
        v.f = f;
        w.set(k, v);
    };
    put("u8", GgufValueType::U8, 255, 0, 0);
    put("i8", GgufValueType::I8, 0, -128, 0);
    put("u16", GgufValueType::U16, 65535, 0, 0);
    put("i16", GgufValueType::I16, 0, -32768, 0);
    put("u32", GgufValueType::U32, 0xFFFFFFFFu, 0, 0);
    put("i32", GgufValueType::I32, 0, std::numeric_limits<int32_t>::min(), 0);
    put("u64", GgufValueType::U64, ~uint64_t(0), 0, 0);
    put("i64", GgufValueType::I64, 0, std::numeric_limits<int64_t>::min(), 0);
    put("f32", GgufValueType::F32, 0, 0, 0.1);  // stored as float(0.1)
    put("f64", GgufValueType::F64, 0, 0, 0.1);
    w.set_bool("t", true);
    w.set_bool("f", false);
    w.set_string("s", "h\xc3\xa9llo\n\"q\"");
    w.set_string("empty", "");
    w.set_string_array("strs", {"<unk>", "", "\xe2\x96\x81the"});
    w.set_f32_array("floats", {-1.5f, 0.0f, 3.25f});
    w.set_i32_array("ints", {-7, 0, 2147483647});
    w.set("empty_arr", array(GgufValueType::U16, {}));
    w.set("nested", array(GgufValueType::ARRAY,
                          {array(GgufValueType::I32, {i32(1), i32(2)}),
                           array(GgufValueType::STRING, {str("x")}),
                           array(GgufValueType::ARRAY, {array(GgufValueType::I32, {i32(-3)})})}));

    auto g = reread(w);
    ASSERT_EQ(g->kvs().size(), 19u);
    auto val = [&](const char* k) -> const GgufValue& {
        const GgufKv* kv = g->find_kv(k);
        EXPECT_NE(kv, nullptr) << k;
        return kv->value;
    };
    EXPECT_EQ(val("u8").type, GgufValueType::U8);
    EXPECT_EQ(val("u8").u, 255u);
    EXPECT_EQ(val("i8").type, GgufValueType::I8);
    EXPECT_EQ(val("i8").i, -128);
    EXPECT_EQ(val("u16").u, 65535u);
    EXPECT_EQ(val("i16").i, -32768);
    EXPECT_EQ(val("u32").u, 0xFFFFFFFFu);
    EXPECT_EQ(val("i32").i, std::numeric_limits<int32_t>::min());
    EXPECT_EQ(val("u64").type, GgufValueType::U64);
    EXPECT_EQ(val("u64").u, ~uint64_t(0));
    EXPECT_EQ(val("i64").i, std::numeric_limits<int64_t>::min());
    EXPECT_EQ(val("f32").type, GgufValueType::F32);
    EXPECT_EQ(val("f32").f, double(0.1f));
    EXPECT_EQ(val("f64").type, GgufValueType::F64);
    EXPECT_EQ(val("f64").f, 0.1);
    EXPECT_EQ(g->get_bool_opt("t"), std::optional<bool>(true));
    EXPECT_EQ(g->get_bool_opt("f"), std::optional<bool>(false));
    EXPECT_EQ(g->get_string("s"), "h\xc3\xa9llo\n\"q\"");
    EXPECT_EQ(g->get_string("empty"), "");
    EXPECT_EQ(*g->get_string_array_opt("strs"),
              (std::vector<std::string>{"<unk>", "", "\xe2\x96\x81the"}));
    EXPECT_EQ(val("floats").elem_type, GgufValueType::F32);
    EXPECT_EQ(*g->get_float_array_opt("floats"), (std::vector<float>{-1.5f, 0.0f, 3.25f}));
    EXPECT_EQ(val("ints").elem_type, GgufValueType::I32);
    EXPECT_EQ(*g->get_int_array_opt("ints"), (std::vector<int64_t>{-7, 0, 2147483647}));
    EXPECT_EQ(val("empty_arr").elem_type, GgufValueType::U16);
    EXPECT_EQ(val("empty_arr").size(), 0u);

    const GgufValue& n = val("nested");
    ASSERT_EQ(n.elem_type, GgufValueType::ARRAY);
    ASSERT_EQ(n.size(), 3u);
    EXPECT_EQ(n.element(0).elem_type, GgufValueType::I32);
    ASSERT_EQ(n.element(0).size(), 2u);
    EXPECT_EQ(n.element(0).element(1).i, 2);
    EXPECT_EQ(n.element(1).elem_type, GgufValueType::STRING);
    EXPECT_EQ(n.element(1).element(0).str, "x");
    EXPECT_EQ(n.element(1).string_at(0), "x");
    ASSERT_EQ(n.element(2).size(), 1u);
    EXPECT_EQ(n.element(2).element(0).element(0).i, -3);
}

// Arrays of scalars and strings are kept packed as the file stores them: element() reads every type
// back, string_at() the strings without a copy, and a 100K-string array costs its bytes plus 8 a string
TEST(GgufWriter, packed_arrays_read_back_every_element_type) {
    GgufWriter w;
    w.set("u8s", array(GgufValueType::U8, {make_u(GgufValueType::U8, 0), make_u(GgufValueType::U8, 255)}));
    w.set("i16s", array(GgufValueType::I16, {make_i(GgufValueType::I16, -32768), make_i(GgufValueType::I16, 7)}));
    w.set("u64s", array(GgufValueType::U64, {make_u(GgufValueType::U64, ~uint64_t(0))}));
    w.set("f64s", array(GgufValueType::F64, {make_f(GgufValueType::F64, -0.1)}));
    GgufValue t = make(GgufValueType::BOOL), f = make(GgufValueType::BOOL);
    t.b = true;
    w.set("bools", array(GgufValueType::BOOL, {t, f, t}));
    std::vector<std::string> many(100000);
    for (size_t k = 0; k < many.size(); ++k) many[k] = "tok" + std::to_string(k);
    w.set_string_array("many", many);
    auto g = reread(w);
    const GgufValue& u8s = g->find_kv("u8s")->value;
    ASSERT_EQ(u8s.size(), 2u);
    EXPECT_EQ(u8s.element(1).u, 255u);
    EXPECT_EQ(u8s.element(1).type, GgufValueType::U8);
    EXPECT_EQ(g->find_kv("i16s")->value.element(0).i, -32768);
    EXPECT_EQ(*g->get_int_array_opt("i16s"), (std::vector<int64_t>{-32768, 7}));
    EXPECT_EQ(g->find_kv("u64s")->value.element(0).u, ~uint64_t(0));
    EXPECT_EQ(g->find_kv("f64s")->value.element(0).f, -0.1);
    EXPECT_EQ(*g->get_float_array_opt("f64s"), (std::vector<float>{-0.1f}));
    const GgufValue& bools = g->find_kv("bools")->value;
    ASSERT_EQ(bools.size(), 3u);
    EXPECT_TRUE(bools.element(0).b);
    EXPECT_FALSE(bools.element(1).b);
    EXPECT_TRUE(bools.element(2).b);
    const GgufValue& m = g->find_kv("many")->value;
    ASSERT_EQ(m.size(), many.size());
    EXPECT_EQ(m.string_at(0), "tok0");
    EXPECT_EQ(m.string_at(99999), "tok99999");
    EXPECT_EQ(*g->get_string_array_opt("many"), many);
    size_t chars = 0;
    for (const auto& s : many) chars += s.size();
    EXPECT_EQ(m.packed.size(), chars);
    EXPECT_EQ(m.str_end.size(), many.size());
    EXPECT_TRUE(m.arr.empty());
    // a written copy of the read value is the same bytes (synth copies a vocabulary's arrays so)
    GgufWriter w2;
    w2.set("many", m);
    w2.set("bools", bools);
    auto g2 = reread(w2);
    EXPECT_EQ(*g2->get_string_array_opt("many"), many);
    EXPECT_EQ(g2->find_kv("bools")->value.packed, bools.packed);
}

TEST(GgufWriter, setting_a_key_twice_replaces_it_in_place) {
    GgufWriter w;
    w.set_u32("a", 1);
    w.set_string("b", "x");
    w.set_string("a", "now a string");
    auto g = reread(w);
    ASSERT_EQ(g->kvs().size(), 2u);
    EXPECT_EQ(g->kvs()[0].key, "a");
    EXPECT_EQ(g->kvs()[1].key, "b");
    EXPECT_EQ(g->get_string("a"), "now a string");
}

TEST(GgufWriter, aligns_tensor_data_and_records_alignment) {
    for (uint64_t a : {32u, 64u}) {
        GgufWriter w(a);
        w.set_string("general.architecture", "llama");
        w.add_tensor("x", GgmlType::F32, {3}, std::vector<uint8_t>(12, 0xAA));
        w.add_tensor("y", GgmlType::Q8_0, {32, 2}, std::vector<uint8_t>(68, 0xBB));
        w.add_tensor("z", GgmlType::F16, {5}, std::vector<uint8_t>(10, 0xCC));
        auto g = reread(w);
        EXPECT_EQ(g->alignment(), a);
        // The key is written only when it differs from the default.
        EXPECT_EQ(g->find_kv("general.alignment") != nullptr, a != 32);
        if (a != 32) {
            EXPECT_EQ(g->get_int("general.alignment"), int64_t(a));
        }
        EXPECT_EQ(g->data_offset() % a, 0u);
        const auto& ts = g->tensors();
        ASSERT_EQ(ts.size(), 3u);
        EXPECT_EQ(ts[0].offset, 0u);
        EXPECT_EQ(ts[1].offset, a);                       // 12 bytes padded to a
        EXPECT_EQ(ts[2].offset, a == 32 ? 128u : 192u);  // 68 bytes at a, padded to a multiple
        EXPECT_EQ(ts[1].type, GgmlType::Q8_0);
        EXPECT_EQ(ts[1].n_bytes, 68u);
        EXPECT_EQ(ts[1].dims, (std::vector<uint64_t>{32, 2}));
        EXPECT_EQ(ts[0].data[11], 0xAA);
        EXPECT_EQ(ts[1].data[0], 0xBB);
        EXPECT_EQ(ts[1].data[67], 0xBB);
        EXPECT_EQ(ts[2].data[9], 0xCC);
        EXPECT_EQ(g->file_size(), g->data_offset() + ts[2].offset + a);  // last padded to a
    }
}

TEST(GgufWriter, writer_alignment_wins_over_a_copied_alignment_key) {
    GgufWriter w(64);
    w.set_u32("general.alignment", 32);  // e.g. copied from another file
    w.add_tensor("x", GgmlType::F32, {1}, std::vector<uint8_t>(4, 0));
    auto g = reread(w);
    EXPECT_EQ(g->alignment(), 64u);
    EXPECT_EQ(g->kvs().size(), 1u);
}

TEST(GgufWriter, copies_tokenizer_keys_from_a_vocab_file) {
    auto src = GgufReader::open(test::source_dir() + "/models/stories260K.gguf");
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    for (const GgufKv& kv : src->kvs())
        if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);
    auto g = reread(w);
    for (const char* k : {"tokenizer.ggml.tokens", "tokenizer.ggml.merges"}) {
        EXPECT_EQ(g->get_string_array_opt(k), src->get_string_array_opt(k)) << k;
    }
    EXPECT_EQ(g->get_float_array_opt("tokenizer.ggml.scores"),
              src->get_float_array_opt("tokenizer.ggml.scores"));
    EXPECT_EQ(g->get_int_array_opt("tokenizer.ggml.token_type"),
              src->get_int_array_opt("tokenizer.ggml.token_type"));
    EXPECT_EQ(g->get_int("tokenizer.ggml.padding_token_id"), 0xFFFFFFFFll);
}

// --- write() ---

class GgufWrite : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/gguf_writer_test_XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override {
        for (const std::string& f : entries()) {
            std::string p = dir_ + "/" + f;
            if (::rmdir(p.c_str()) != 0) ::unlink(p.c_str());
        }
        ::rmdir(dir_.c_str());
    }
    std::vector<std::string> entries() const {
        std::vector<std::string> out;
        if (DIR* d = opendir(dir_.c_str())) {
            while (dirent* e = readdir(d))
                if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
                    out.push_back(e->d_name);
            closedir(d);
        }
        return out;
    }
    std::string dir_;
};

TEST_F(GgufWrite, writes_the_same_bytes_as_to_bytes_and_leaves_no_temp) {
    GgufWriter w(64);
    w.set_string("general.name", "t");
    w.add_tensor("a", GgmlType::F32, {3}, std::vector<uint8_t>(12, 1));
    w.add_tensor("b", GgmlType::F32, {2}, std::vector<uint8_t>(8, 2));
    std::string p = dir_ + "/m.gguf";
    w.write(p);
    std::vector<uint8_t> bytes = w.to_bytes();
    std::string on_disk = test::read_file(p);
    EXPECT_EQ(std::vector<uint8_t>(on_disk.begin(), on_disk.end()), bytes);
    EXPECT_EQ(entries(), std::vector<std::string>{"m.gguf"});
    auto g = GgufReader::open(p);
    EXPECT_EQ(g->tensors().size(), 2u);
    w.write(p);  // overwriting an existing file works too
    EXPECT_EQ(entries(), std::vector<std::string>{"m.gguf"});
}

// add_tensor_rows: the rows come from the fill function in runs of at most 64 MiB, in order, and
// the file is the one add_tensor would write with the same bytes (row r of "big" holds r).
TEST_F(GgufWrite, rows_filled_at_write_time_stream_in_bounded_runs) {
    constexpr uint64_t kCols = 1024, kRows = 17000;  // 4 KiB rows, 66.4 MiB: two runs
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    auto fill = [&](uint64_t r0, uint64_t r1, uint8_t* out) {
        runs.emplace_back(r0, r1);
        for (uint64_t r = r0; r < r1; ++r)
            for (uint64_t c = 0; c < kCols; ++c) {
                const float v = float(r);
                std::memcpy(out + ((r - r0) * kCols + c) * 4, &v, 4);
            }
    };
    GgufWriter streamed, whole;
    for (GgufWriter* w : {&streamed, &whole}) w->add_tensor("small", GgmlType::F32, {3}, std::vector<uint8_t>(12, 7));
    streamed.add_tensor_rows("big", GgmlType::F32, {kCols, kRows / 10, 10}, fill);
    std::vector<uint8_t> big(kCols * kRows * 4);
    fill(0, kRows, big.data());
    whole.add_tensor("big", GgmlType::F32, {kCols, kRows / 10, 10}, std::move(big));
    runs.clear();
    const std::string p = dir_ + "/s.gguf";
    streamed.write(p);
    const uint64_t per_run = (uint64_t(64) << 20) / (kCols * 4);
    EXPECT_EQ(runs, (std::vector<std::pair<uint64_t, uint64_t>>{{0, per_run}, {per_run, kRows}}));
    const std::string on_disk = test::read_file(p);
    EXPECT_TRUE(std::vector<uint8_t>(on_disk.begin(), on_disk.end()) == whole.to_bytes());
    auto g = GgufReader::open(p);
    const GgufTensorInfo* t = g->find_tensor("big");
    ASSERT_NE(t, nullptr);
    float last = 0;
    std::memcpy(&last, t->data + t->n_bytes - 4, 4);
    EXPECT_EQ(last, float(kRows - 1));
}

TEST_F(GgufWrite, missing_directory_is_an_error) {
    GgufWriter w;
    std::string p = dir_ + "/no/such/dir/m.gguf";
    try {
        w.write(p);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), p + ": cannot write: No such file or directory");
    }
}

TEST_F(GgufWrite, failed_rename_removes_the_temp_file) {
    std::string target = dir_ + "/target";
    ASSERT_EQ(::mkdir(target.c_str(), 0755), 0);
    std::string inner = target + "/x";  // a non-empty directory cannot be replaced by a file
    ASSERT_EQ(::mkdir(inner.c_str(), 0755), 0);
    GgufWriter w;
    w.set_u32("a", 1);
    try {
        w.write(target);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr(target + ": cannot write: "));
    }
    EXPECT_EQ(entries(), std::vector<std::string>{"target"});
    ::rmdir(inner.c_str());
}

}  // namespace
}  // namespace jitllm
