// Corpus case list (corpus.h): the model and vocabulary cases of the tiny fixtures and of
// stories260K, and all_cases, which adds the GGUF-level cases of corpus_reader_cases.cpp.
// Expected substrings are the sentences the loaders are meant to print (src/model,
// src/tokenizer).
#include "corpus/corpus.h"

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "corpus/corpus_internal.h"

namespace jitllm::corpus {

using namespace detail;

namespace {

// Model and vocabulary problems in an otherwise valid file (tiny SPM fixture, 48 tokens).
struct ModelCases {
    Builder& B;
    const Fixture& fx;
    const std::string p;  // "<fixture>."

    // A case that sets `key` to `payload` of `type`.
    void kv(const std::string& name, const std::string& key, uint32_t type, Bytes payload,
            const std::string& expect) {
        B.mutate(fx, p + name, expect,
                 [key, type, payload](Raw& r) { r.set_kv(key, type, payload); });
    }
    // A case that removes `key`.
    void drop(const std::string& key, const std::string& expect) {
        B.mutate(fx, p + "missing-" + key, expect, [key](Raw& r) { r.erase_kv(key); });
    }

    void hyperparameters();  // the architecture and the hyperparameter keys
    void tensors();          // tensor shapes and types
    void vocabulary();       // the tokenizer keys
};

void ModelCases::hyperparameters() {
    // Architecture.
    drop("general.architecture", "missing key 'general.architecture'");
    kv("arch-gptj", "general.architecture", kString, p_str("gptj"),
       "unsupported architecture 'gptj'; supported: llama");
    kv("arch-newline", "general.architecture", kString, p_str("lla\nma"),
       "unsupported architecture 'lla\\x0ama'");
    kv("arch-empty", "general.architecture", kString, p_str(""), "unsupported architecture ''");
    kv("arch-u32", "general.architecture", kU32, p_u32(1),
       "key 'general.architecture': expected string, found u32");
    // Hyperparameters.
    for (const char* k : {"llama.block_count", "llama.embedding_length",
                          "llama.feed_forward_length", "llama.attention.head_count"})
        drop(k, "missing key '" + std::string(k) + "'");
    const std::string bc = "key 'llama.block_count': ";
    kv("block-count-0", "llama.block_count", kU32, p_u32(0),
       bc + "expected an integer in [1, 4096], found 0");
    kv("block-count-neg", "llama.block_count", kI32, p_i32(-1),
       bc + "expected an integer in [1, 4096], found -1");
    kv("block-count-5000", "llama.block_count", kU32, p_u32(5000),
       bc + "expected an integer in [1, 4096], found 5000");
    kv("block-count-2p40", "llama.block_count", kU64, p_u64(1ull << 40),
       bc + "expected an integer in [1, 4096], found 1099511627776");
    kv("block-count-u64max", "llama.block_count", kU64, p_u64(kMax64),
       bc + "value 18446744073709551615 is out of range");
    kv("block-count-string", "llama.block_count", kString, p_str("2"),
       bc + "expected an integer, found string");
    kv("block-count-f32", "llama.block_count", kF32, p_f32(2.0f),
       bc + "expected an integer, found f32");
    kv("block-count-bool", "llama.block_count", kBool, p_u8(1),
       bc + "expected an integer, found bool");
    kv("block-count-array", "llama.block_count", kArray, p_array<uint32_t>(kU32, {2, 3}),
       bc + "per-layer values that differ are not supported");
    kv("block-count-3", "llama.block_count", kU32, p_u32(3),
       "missing tensor 'blk.2.attn_norm.weight'");
    B.mutate(fx, p + "dim-32",
             "tensor 'token_embd.weight': expected shape [32, 48], found [64, 48]", [](Raw& r) {
                 r.set_kv("llama.embedding_length", kU32, p_u32(32));
                 r.set_kv("llama.rope.dimension_count", kU32, p_u32(8));
             });
    kv("dim-2p21", "llama.embedding_length", kU32, p_u32(1u << 21),
       "key 'llama.embedding_length': expected an integer in [1, 1048576], found 2097152");
    kv("heads-6", "llama.attention.head_count", kU32, p_u32(6),
       "'llama.embedding_length' = 64 is not a multiple of head_count 6");
    kv("heads-0", "llama.attention.head_count", kU32, p_u32(0),
       "key 'llama.attention.head_count': expected an integer in [1, 4096], found 0");
    kv("kv-heads-3", "llama.attention.head_count_kv", kU32, p_u32(3),
       "key 'llama.attention.head_count_kv': expected a divisor of head_count 4, found 3");
    kv("kv-heads-1", "llama.attention.head_count_kv", kU32, p_u32(1),
       "tensor 'blk.0.attn_k.weight': expected shape [64, 16], found [64, 32]");
    kv("ff-96", "llama.feed_forward_length", kU32, p_u32(96),
       "tensor 'blk.0.ffn_gate.weight': expected shape [64, 96], found [64, 64]");
    kv("ctx-0", "llama.context_length", kU32, p_u32(0),
       "key 'llama.context_length': expected an integer in [1, 16777216], found 0");
    kv("ctx-2p25", "llama.context_length", kU32, p_u32(1u << 25),
       "key 'llama.context_length': expected an integer in [1, 16777216], found 33554432");
    kv("rot-15", "llama.rope.dimension_count", kU32, p_u32(15),
       "key 'llama.rope.dimension_count': expected an even number <= head dim 16, found 15");
    kv("rot-32", "llama.rope.dimension_count", kU32, p_u32(32),
       "key 'llama.rope.dimension_count': expected an even number <= head dim 16, found 32");
    kv("key-length-0", "llama.attention.key_length", kU32, p_u32(0),
       "key 'llama.attention.key_length': expected an integer in [1, 4096], found 0");
    kv("key-length-8", "llama.attention.key_length", kU32, p_u32(8),
       "key 'llama.rope.dimension_count': expected an even number <= head dim 8, found 16");
    kv("value-length-8", "llama.attention.value_length", kU32, p_u32(8),
       "key 'llama.attention.value_length': expected 16 (equal to key_length), found 8");
    kv("eps-nan", "llama.attention.layer_norm_rms_epsilon", kF32, p_f32(std::nanf("")),
       "key 'llama.attention.layer_norm_rms_epsilon': expected a finite number");
    kv("eps-0", "llama.attention.layer_norm_rms_epsilon", kF32, p_f32(0.0f),
       "key 'llama.attention.layer_norm_rms_epsilon': expected a value in (0, 1), found 0");
    kv("eps-string", "llama.attention.layer_norm_rms_epsilon", kString, p_str("1e-5"),
       "key 'llama.attention.layer_norm_rms_epsilon': expected a number, found string");
    kv("rope-base-half", "llama.rope.freq_base", kF32, p_f32(0.5f),
       "key 'llama.rope.freq_base': expected a value > 1, found 0.5");
    kv("rope-base-inf", "llama.rope.freq_base", kF32, p_f32(INFINITY),
       "key 'llama.rope.freq_base': expected a finite number");
    kv("logit-scale-0", "llama.logit_scale", kF32, p_f32(0.0f),
       "key 'llama.logit_scale': expected a nonzero value, found 0");
    kv("sliding-window-0", "llama.attention.sliding_window", kU32, p_u32(0),
       "key 'llama.attention.sliding_window': expected an integer in [1, 16777216], found 0");
}

void ModelCases::tensors() {
    // Shapes.
    auto dims = [&](const std::string& name, const std::string& t, std::vector<uint64_t> d,
                    const std::string& expect) {
        B.mutate(fx, p + name, expect, [t, d](Raw& r) { r.tensor(t).dims = d; });
    };
    dims("embd-swapped", "token_embd.weight", {48, 64},
         "tensor 'token_embd.weight': expected shape [64, 64], found [48, 64]");
    dims("embd-1d", "token_embd.weight", {64 * 48},
         "tensor 'token_embd.weight': expected shape [64, n_vocab], found [3072]");
    dims("attn-k-swapped", "blk.0.attn_k.weight", {32, 64},
         "tensor 'blk.0.attn_k.weight': expected shape [64, 32], found [32, 64]");
    dims("attn-q-3d", "blk.0.attn_q.weight", {64, 8, 8},
         "tensor 'blk.0.attn_q.weight': expected shape [64, 64], found [64, 8, 8]");
    dims("out-norm-2d", "output_norm.weight", {32, 2},
         "tensor 'output_norm.weight': expected shape [64], found [32, 2]");
    dims("ffn-gate-reshaped", "blk.1.ffn_gate.weight", {32, 128},
         "tensor 'blk.1.ffn_gate.weight': expected shape [64, 64], found [32, 128]");
    dims("output-47-rows", "output.weight", {64, 47},
         "tensor 'output.weight': expected shape [64, 48], found [64, 47]");
    // Types.
    auto ttype = [&](const std::string& name, const std::string& t, uint32_t type,
                     const std::string& expect) {
        B.mutate(fx, p + name, expect, [t, type](Raw& r) { r.tensor(t).type = type; });
    };
    ttype("attn-norm-i32", "blk.0.attn_norm.weight", 26,
          "tensor 'blk.0.attn_norm.weight': type i32 is not supported; supported:");
    ttype("embd-i16", "token_embd.weight", 25,
          "tensor 'token_embd.weight': type i16 is not supported");
    ttype("ffn-up-iq4nl", "blk.0.ffn_up.weight", 20,
          "tensor 'blk.0.ffn_up.weight': type iq4_nl is not supported");
    ttype("ffn-down-mxfp4", "blk.1.ffn_down.weight", 39,
          "tensor 'blk.1.ffn_down.weight': type mxfp4 is not supported");
    ttype("out-norm-f16", "output_norm.weight", 1,
          "tensor 'output_norm.weight': expected type f32, found f16");
    ttype("attn-norm-bf16", "blk.1.attn_norm.weight", 30,
          "tensor 'blk.1.attn_norm.weight': expected type f32, found bf16");
}

void ModelCases::vocabulary() {
    // Vocabulary.
    const std::string tk = "key 'tokenizer.ggml.tokens': ";
    auto tokens = [&](const std::string& name, std::function<void(std::vector<std::string>&)> f,
                      const std::string& expect) {
        B.mutate(fx, p + name, expect, [f](Raw& r) {
            auto t = r.tokens();
            f(t);
            r.set_tokens(t);
        });
    };
    B.mutate(fx, p + "vocab-47", tk + "expected 48 tokens (rows of token_embd.weight), found 47",
             [](Raw& r) {
                 auto t = r.tokens();
                 t.pop_back();
                 r.set_tokens(t);
                 auto s = decode_array<float>(r.kv("tokenizer.ggml.scores").payload);
                 s.pop_back();
                 r.kv("tokenizer.ggml.scores").payload = p_array(kF32, s);
                 auto ty = decode_array<int32_t>(r.kv("tokenizer.ggml.token_type").payload);
                 ty.pop_back();
                 r.kv("tokenizer.ggml.token_type").payload = p_array(kI32, ty);
             });
    tokens(
        "vocab-49", [](auto& t) { t.push_back("zz"); },
        tk + "expected 48 tokens (rows of token_embd.weight), found 49");
    tokens(
        "vocab-0", [](auto& t) { t.clear(); },
        tk + "expected 48 tokens (rows of token_embd.weight), found 0");
    B.mutate(fx, p + "missing-tokens", "missing key 'tokenizer.ggml.tokens'",
             [](Raw& r) { r.erase_kv("tokenizer.ggml.tokens"); });
    drop("tokenizer.ggml.model", "missing key 'tokenizer.ggml.model'");
    kv("tok-model-sp", "tokenizer.ggml.model", kString, p_str("sentencepiece"),
       "key 'tokenizer.ggml.model': unsupported tokenizer 'sentencepiece'");
    kv("tok-model-u32", "tokenizer.ggml.model", kU32, p_u32(1),
       "key 'tokenizer.ggml.model': expected string, found u32");
    kv("tokens-u32", "tokenizer.ggml.tokens", kArray,
       p_array<uint32_t>(kU32, std::vector<uint32_t>(48, 7)),
       tk + "expected array of string, found array of u32");
    kv("tokens-string", "tokenizer.ggml.tokens", kString, p_str("a b c"),
       tk + "expected array of string, found string");
    {
        Enc e;
        e.put<uint32_t>(kArray).put<uint64_t>(48);
        for (int i = 0; i < 48; ++i) e.put<uint32_t>(kU8).put<uint64_t>(0);
        kv("tokens-nested", "tokenizer.ggml.tokens", kArray, e.b,
           tk + "expected array of string, found array of array");
    }
    kv("scores-47", "tokenizer.ggml.scores", kArray,
       p_array<float>(kF32, std::vector<float>(47, -1.0f)),
       "key 'tokenizer.ggml.scores': expected 48 scores, found 47");
    kv("scores-strings", "tokenizer.ggml.scores", kArray,
       p_str_array(std::vector<std::string>(48, "x")),
       "key 'tokenizer.ggml.scores': expected array of numbers, found array of string");
    kv("scores-scalar", "tokenizer.ggml.scores", kF32, p_f32(1.0f),
       "key 'tokenizer.ggml.scores': expected array of numbers, found f32");
    kv("types-47", "tokenizer.ggml.token_type", kArray,
       p_array<int32_t>(kI32, std::vector<int32_t>(47, 1)),
       "key 'tokenizer.ggml.token_type': expected 48 types, found 47");
    kv("types-f32", "tokenizer.ggml.token_type", kArray,
       p_array<float>(kF32, std::vector<float>(48, 1.0f)),
       "key 'tokenizer.ggml.token_type': expected array of integers, found array of f32");
    tokens(
        "token-duplicate", [](auto& t) { t[11] = t[10]; },
        tk + "duplicate token 'g' at ids 10 and 11");
    const std::pair<const char*, const char*> bad_utf8[] = {
        {"ff", "\xff"},
        {"lone-lead", "a\xc3"},
        {"overlong", "\xc0\xaf"},
        {"surrogate", "\xed\xa0\x80"},
        {"above-10ffff", "\xf4\x90\x80\x80"},
        {"lone-cont",
         "\x80"
         "abc"},
        {"truncated-4", "\xf0\x9f\x98"},
    };
    for (auto [name, text] : bad_utf8) {
        std::string t = text;
        tokens(
            std::string("token-utf8-") + name, [t](auto& v) { v[20] = t; }, tk + "token 20 '");
    }
    const std::string ids = "(or -1 for none), found ";
    kv("bos-48", "tokenizer.ggml.bos_token_id", kU32, p_u32(48),
       "key 'tokenizer.ggml.bos_token_id': expected a token id in [0, 48) " + ids + "48");
    kv("bos-1000", "tokenizer.ggml.bos_token_id", kU32, p_u32(1000),
       "key 'tokenizer.ggml.bos_token_id': expected a token id in [0, 48) " + ids + "1000");
    kv("bos-fffffffe", "tokenizer.ggml.bos_token_id", kU32, p_u32(0xFFFFFFFEu),
       "key 'tokenizer.ggml.bos_token_id': expected a token id in [0, 48) " + ids + "4294967294");
    kv("eos-48", "tokenizer.ggml.eos_token_id", kU32, p_u32(48),
       "key 'tokenizer.ggml.eos_token_id': expected a token id in [0, 48) " + ids + "48");
    kv("unk-100", "tokenizer.ggml.unknown_token_id", kU32, p_u32(100),
       "key 'tokenizer.ggml.unknown_token_id': expected a token id in [0, 48) " + ids + "100");
    kv("eot-48", "tokenizer.ggml.eot_token_id", kI32, p_i32(48),
       "key 'tokenizer.ggml.eot_token_id': expected a token id in [0, 48) " + ids + "48");
    kv("eom-77", "tokenizer.ggml.eom_token_id", kU64, p_u64(77),
       "key 'tokenizer.ggml.eom_token_id': expected a token id in [0, 48) " + ids + "77");
    kv("bos-string", "tokenizer.ggml.bos_token_id", kString, p_str("1"),
       "key 'tokenizer.ggml.bos_token_id': expected an integer, found string");
    kv("bos-u64max", "tokenizer.ggml.bos_token_id", kU64, p_u64(kMax64),
       "key 'tokenizer.ggml.bos_token_id': value 18446744073709551615 is out of range");
    kv("bos-none-u32", "tokenizer.ggml.bos_token_id", kU32, p_u32(0xFFFFFFFFu), "");  // keeps <s>
    kv("pad-past-end", "tokenizer.ggml.padding_token_id", kU32, p_u32(48), "");       // ignored
    kv("add-bos-u8", "tokenizer.ggml.add_bos_token", kU8, p_u8(1),
       "key 'tokenizer.ggml.add_bos_token': expected bool, found u8");
}

void model_cases(Builder& B, const std::string& fx_name, const Fixture& fx) {
    ModelCases m{B, fx, fx_name + "."};
    m.hyperparameters();
    m.tensors();
    m.vocabulary();
}

void bpe_cases(Builder& B, const std::string& fx_name, const Fixture& fx) {
    const std::string p = fx_name + ".", mk = "key 'tokenizer.ggml.merges': ";
    auto merges = [&](const std::string& name, std::function<void(std::vector<std::string>&)> f,
                      const std::string& expect) {
        B.mutate(fx, p + name, expect, [f](Raw& r) {
            auto m = decode_str_array(r.kv("tokenizer.ggml.merges").payload);
            f(m);
            r.set_kv("tokenizer.ggml.merges", kArray, p_str_array(m));
        });
    };
    B.mutate(fx, p + "missing-merges", "missing key 'tokenizer.ggml.merges'",
             [](Raw& r) { r.erase_kv("tokenizer.ggml.merges"); });
    B.mutate(fx, p + "merges-u32", mk + "expected array of string, found array of u32", [](Raw& r) {
        r.set_kv("tokenizer.ggml.merges", kArray, p_array<uint32_t>(kU32, {1, 2}));
    });
    merges(
        "merge-unknown-right", [](auto& m) { m[1] = "h zq"; },
        mk + "merge 1 'h zq' names unknown token 'zq'");
    merges(
        "merge-unknown-left", [](auto& m) { m[1] = "qq e"; },
        mk + "merge 1 'qq e' names unknown token 'qq'");
    merges(
        "merge-no-space", [](auto& m) { m[1] = "he"; },
        mk + "merge 1 'he': expected two tokens separated by a space");
    merges(
        "merge-leading-space", [](auto& m) { m[2] = " he"; },
        mk + "merge 2 ' he': expected two tokens");
    merges(
        "merge-empty", [](auto& m) { m[0] = ""; }, mk + "merge 0 '': expected two tokens");
    merges(
        "merge-invalid-utf8", [](auto& m) { m[3] = "i \xff"; },
        mk + "merge 3 'i \\xff' names unknown token '\\xff'");
    merges(
        "merge-newline", [](auto& m) { m[3] = "i \n"; },
        mk + "merge 3 'i \\x0a' names unknown token '\\x0a'");
    B.mutate(fx, p + "merges-count-huge", mk + "array length (string elements) is 4294967296",
             [](Raw& r) { poke<uint64_t>(r.kv("tokenizer.ggml.merges").payload, 4, 1ull << 32); });
    B.mutate(fx, p + "pre-unknown",
             "key 'tokenizer.ggml.pre': unsupported pre-tokenizer 'nonexistent'",
             [](Raw& r) { r.set_kv("tokenizer.ggml.pre", kString, p_str("nonexistent")); });
    B.mutate(fx, p + "pre-u32", "key 'tokenizer.ggml.pre': expected string, found u32",
             [](Raw& r) { r.set_kv("tokenizer.ggml.pre", kU32, p_u32(2)); });
    B.mutate(fx, p + "token-utf8-ff",
             "key 'tokenizer.ggml.tokens': token 5 'd\\xff' is not valid UTF-8", [](Raw& r) {
                 auto t = r.tokens();
                 t[5] += "\xff";
                 r.set_tokens(t);
             });
    B.mutate(fx, p + "bos-34", "key 'tokenizer.ggml.bos_token_id': expected a token id in [0, 34)",
             [](Raw& r) { r.set_kv("tokenizer.ggml.bos_token_id", kU32, p_u32(34)); });
}

void stories_cases(Builder& B, const std::string& fx_name, const Fixture& fx) {
    const std::string p = fx_name + ".";
    B.mutate(fx, p + "tokens-count-huge",
             "key 'tokenizer.ggml.tokens': array length (string elements) is 4611686018427387904",
             [](Raw& r) { poke<uint64_t>(r.kv("tokenizer.ggml.tokens").payload, 4, 1ull << 62); });
    B.mutate(fx, p + "bos-512",
             "key 'tokenizer.ggml.bos_token_id': expected a token id in [0, 512)",
             [](Raw& r) { r.set_kv("tokenizer.ggml.bos_token_id", kU32, p_u32(512)); });
    B.mutate(fx, p + "vocab-511", "expected 512 tokens (rows of token_embd.weight), found 511",
             [](Raw& r) {
                 auto t = r.tokens();
                 t.pop_back();
                 r.set_tokens(t);
             });
    B.mutate(fx, p + "arch-gpt2", "unsupported architecture 'gpt2'",
             [](Raw& r) { r.set_kv("general.architecture", kString, p_str("gpt2")); });
    B.mutate(fx, p + "missing-block-count", "missing key 'llama.block_count'",
             [](Raw& r) { r.erase_kv("llama.block_count"); });
    B.mutate(fx, p + "kv-heads-3", "expected a divisor of head_count 8, found 3",
             [](Raw& r) { r.set_kv("llama.attention.head_count_kv", kU32, p_u32(3)); });
    B.mutate(fx, p + "dim-32",
             "tensor 'token_embd.weight': expected shape [32, 512], found [64, 512]", [](Raw& r) {
                 r.set_kv("llama.embedding_length", kU32, p_u32(32));
                 r.set_kv("llama.rope.dimension_count", kU32, p_u32(4));
             });
    B.mutate(fx, p + "ff-171",
             "tensor 'blk.0.ffn_gate.weight': expected shape [64, 171], found [64, 172]",
             [](Raw& r) { r.set_kv("llama.feed_forward_length", kU32, p_u32(171)); });
    B.mutate(fx, p + "token-utf8", "key 'tokenizer.ggml.tokens': token 100 '", [](Raw& r) {
        auto t = r.tokens();
        t[100] = "\xe2\x96";
        r.set_tokens(t);
    });
    B.mutate(fx, p + "block-count-6", "missing tensor 'blk.5.attn_norm.weight'",
             [](Raw& r) { r.set_kv("llama.block_count", kU32, p_u32(6)); });
}

}  // namespace

std::vector<Case> all_cases(std::shared_ptr<const Bytes> stories) {
    Builder B;
    auto spm = std::make_shared<const Bytes>(tiny_llama_spm());
    generic_cases(B, "spm", spm, {});
    reader_cases(B, "spm", spm);
    model_cases(B, "spm", spm);

    auto bpe = std::make_shared<const Bytes>(tiny_llama_bpe());
    GenericOptions ob;
    ob.per_tensor = 3;
    ob.cut_tensor = [](size_t k) { return k < 1; };
    generic_cases(B, "bpe", bpe, ob);
    bpe_cases(B, "bpe", bpe);

    if (stories && !stories->empty()) {
        GenericOptions os;
        os.per_tensor = 12;
        os.cut_tensor = [](size_t k) { return k < 2 || k == 56; };
        generic_cases(B, "stories", stories, os);
        stories_cases(B, "stories", stories);
    }
    return std::move(B.cases);
}

}  // namespace jitllm::corpus
