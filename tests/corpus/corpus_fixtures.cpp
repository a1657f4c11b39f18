// Corpus fixtures (corpus.h): small valid Llama models built with GgufWriter from deterministic
// weights, with a SentencePiece or a byte-level BPE vocabulary, and a file of every value type.
#include "corpus/corpus.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "corpus/corpus_internal.h"
#include "fixtures/gguf_values.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"

namespace jitllm::corpus {

using detail::kMax64;

namespace {

struct Shape {
    int dim, heads, kv_heads, hidden, layers, ctx;
    GgmlType embd, attn, ffn, out;
};

struct VocabSpec {
    std::string model, pre;
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    std::vector<std::string> merges;
    int32_t bos, eos, unk;
    bool add_bos;
};

// Deterministic small weights (xorshift), stored as `type`.
Bytes weights(GgmlType type, uint64_t cols, uint64_t rows, uint32_t& state) {
    std::vector<float> f(cols * rows);
    for (float& x : f) {
        state ^= state << 13, state ^= state >> 17, state ^= state << 5;
        x = (float(state % 2001) / 1000.0f - 1.0f) * 0.3f;
    }
    Bytes out(row_bytes(type, cols) * rows);
    quantize_row(type, f.data(), out.data(), int64_t(f.size()));
    return out;
}

Bytes build_llama(const std::string& name, const Shape& s, const VocabSpec& v) {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", name);
    w.set_u32("llama.context_length", uint32_t(s.ctx));
    w.set_u32("llama.embedding_length", uint32_t(s.dim));
    w.set_u32("llama.feed_forward_length", uint32_t(s.hidden));
    w.set_u32("llama.attention.head_count", uint32_t(s.heads));
    w.set_u32("llama.attention.head_count_kv", uint32_t(s.kv_heads));
    w.set_u32("llama.block_count", uint32_t(s.layers));
    w.set_u32("llama.rope.dimension_count", uint32_t(s.dim / s.heads));
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_f32("llama.rope.freq_base", 10000.0f);
    w.set_string("tokenizer.ggml.model", v.model);
    if (!v.pre.empty()) w.set_string("tokenizer.ggml.pre", v.pre);
    w.set_string_array("tokenizer.ggml.tokens", v.tokens);
    std::vector<float> scores(v.tokens.size());
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = -float(i);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", v.types);
    if (!v.merges.empty()) w.set_string_array("tokenizer.ggml.merges", v.merges);
    w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(v.bos));
    w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(v.eos));
    if (v.unk >= 0) w.set_u32("tokenizer.ggml.unknown_token_id", uint32_t(v.unk));
    w.set_bool("tokenizer.ggml.add_bos_token", v.add_bos);
    w.set_bool("tokenizer.ggml.add_eos_token", false);

    uint32_t st = 0x2545F491u ^ uint32_t(s.dim * 131 + s.layers);
    const uint64_t dim = uint64_t(s.dim), nv = v.tokens.size();
    const uint64_t q = dim, kv = dim / uint64_t(s.heads) * uint64_t(s.kv_heads);
    const uint64_t ff = uint64_t(s.hidden);
    auto add = [&](const std::string& n, GgmlType t, uint64_t cols, uint64_t rows) {
        std::vector<uint64_t> dims = {cols};
        if (rows > 1) dims.push_back(rows);
        w.add_tensor(n, t, dims, weights(t, cols, rows, st));
    };
    add("token_embd.weight", s.embd, dim, nv);
    add("output_norm.weight", GgmlType::F32, dim, 1);
    add("output.weight", s.out, dim, nv);
    for (int i = 0; i < s.layers; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        add(b + "attn_norm.weight", GgmlType::F32, dim, 1);
        add(b + "attn_q.weight", s.attn, dim, q);
        add(b + "attn_k.weight", s.attn, dim, kv);
        add(b + "attn_v.weight", s.attn, dim, kv);
        add(b + "attn_output.weight", s.attn, q, dim);
        add(b + "ffn_norm.weight", GgmlType::F32, dim, 1);
        add(b + "ffn_gate.weight", s.ffn, dim, ff);
        add(b + "ffn_up.weight", s.ffn, dim, ff);
        add(b + "ffn_down.weight", s.ffn, ff, dim);
    }
    return w.to_bytes();
}

const char* const kSp = "\xE2\x96\x81";  // SentencePiece's space

VocabSpec spm_vocab() {
    VocabSpec v{"llama", "", {"<unk>", "<s>", "</s>", kSp}, {2, 3, 3, 1}, {}, 1, 2, 0, true};
    for (char c = 'a'; c <= 'z'; ++c) v.tokens.push_back(std::string(1, c));
    for (const char* t : {"th", "he", "in", "er", "an", "on", "at", "en", "nd", "ti", "es", "or"})
        v.tokens.push_back(t);
    for (const char* t : {"the", "and", "ing", "ion"}) v.tokens.push_back(t);
    for (const char* t : {"t", "a"}) v.tokens.push_back(kSp + std::string(t));
    v.types.resize(v.tokens.size(), 1);
    return v;  // 48 tokens
}

VocabSpec bpe_vocab() {
    const std::string g = "\xC4\xA0";  // GPT-2's byte 0x20
    VocabSpec v{"gpt2", "gpt-2", {"<|endoftext|>", g}, {3, 1}, {}, 0, 0, -1, false};
    for (char c = 'a'; c <= 'z'; ++c) v.tokens.push_back(std::string(1, c));
    for (const std::string& t :
         {g + "t", std::string("he"), g + "the", std::string("in"), std::string("er"), g + "a"})
        v.tokens.push_back(t);
    v.types.resize(v.tokens.size(), 1);
    v.types[0] = 3;
    v.merges = {g + " t", "h e", g + "t he", "i n", "e r", g + " a"};
    return v;  // 34 tokens
}

}  // namespace

Bytes tiny_llama_spm() {
    return build_llama(
        "tiny-spm",
        {64, 4, 2, 64, 2, 64, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q8_0},
        spm_vocab());
}

Bytes tiny_llama_bpe() {
    return build_llama(
        "tiny-bpe",
        {64, 4, 2, 64, 2, 64, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q8_0},
        bpe_vocab());
}

Bytes micro_llama_spm() {
    VocabSpec v{"llama",
                "",
                {"<unk>", "<s>", "</s>", kSp, "a", "b", kSp + std::string("a"), "ab"},
                {2, 3, 3, 1, 1, 1, 1, 1},
                {},
                1,
                2,
                0,
                true};
    return build_llama(
        "micro-spm",
        {8, 2, 1, 8, 1, 16, GgmlType::F32, GgmlType::F32, GgmlType::F32, GgmlType::F32}, v);
}

Bytes micro_llama_bpe() {
    const std::string g = "\xC4\xA0";
    VocabSpec v{"gpt2",
                "llama-bpe",
                {"<|endoftext|>", g, "a", "b", g + "a", "ab", "ba", g + "ab"},
                {3, 1, 1, 1, 1, 1, 1, 1},
                {g + " a", "a b", "b a", g + "a b"},
                0,
                0,
                -1,
                false};
    return build_llama(
        "micro-bpe",
        {8, 2, 1, 8, 1, 16, GgmlType::F32, GgmlType::F32, GgmlType::F32, GgmlType::F32}, v);
}

Bytes micro_gguf_all_types() {
    GgufWriter w;
    auto scalar = [&](const std::string& k, GgufValueType t, uint64_t u, int64_t i, double f) {
        GgufValue v;
        v.type = t;
        v.u = u, v.i = i, v.f = f;
        w.set(k, v);
    };
    scalar("t.u8", GgufValueType::U8, 200, 0, 0);
    scalar("t.i8", GgufValueType::I8, 0, -100, 0);
    scalar("t.u16", GgufValueType::U16, 60000, 0, 0);
    scalar("t.i16", GgufValueType::I16, 0, -30000, 0);
    scalar("t.u32", GgufValueType::U32, 4000000000u, 0, 0);
    scalar("t.i32", GgufValueType::I32, 0, -2000000000, 0);
    scalar("t.u64", GgufValueType::U64, kMax64, 0, 0);
    scalar("t.i64", GgufValueType::I64, 0, std::numeric_limits<int64_t>::min(), 0);
    scalar("t.f32", GgufValueType::F32, 0, 0, 1.5);
    scalar("t.f64", GgufValueType::F64, 0, 0, -2.25);
    w.set_bool("t.bool", true);
    w.set_string("t.str", "h\xC3\xA9llo");
    w.set_string_array("t.strs", {"", "a", "bc"});
    w.set_f32_array("t.f32s", {1.0f, -1.0f});
    w.set_i32_array("t.i32s", {1, -1, 7});
    const GgufValue zero = test::gguf_value(GgufValueType::U8);
    const GgufValue inner = test::gguf_array(GgufValueType::U8, {zero, zero});
    w.set("t.nested", test::gguf_array(GgufValueType::ARRAY, {inner, inner}));
    w.add_tensor("a", GgmlType::F32, {3}, Bytes(12, 1));
    w.add_tensor("b", GgmlType::F16, {4, 2}, Bytes(16, 2));
    w.add_tensor("c", GgmlType::Q8_0, {32}, Bytes(34, 3));
    return w.to_bytes();
}

}  // namespace jitllm::corpus
