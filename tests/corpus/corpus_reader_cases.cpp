// The corpus's GGUF-level cases (corpus_internal.h): those every fixture gets (header, truncation
// at and inside every field, per-key and per-tensor corruption) and further corruption of keys,
// values, general.alignment and tensor infos in the tiny SPM fixture. Expected substrings are the
// sentences src/gguf is meant to print.
#include "corpus/corpus_internal.h"

#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace jitllm::corpus::detail {
namespace {

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
}

// Offset in a string-array payload of element i's length field.
size_t str_elem_offset(const Bytes& payload, uint64_t i) {
    size_t q = 12;
    for (uint64_t k = 0; k < i; ++k) q = value_end(payload, q, kString);
    return q;
}

}  // namespace

void generic_cases(Builder& B, const std::string& fx_name, const Fixture& fx,
                   const GenericOptions& o) {
    const std::string p = fx_name + ".";
    B.add(p + "valid", "", [fx] { return *fx; });
    B.patch(fx, p + "version-2", "", [](Bytes& b) { poke<uint32_t>(b, 4, 2); });

    // Header.
    for (const char* m : {"GGML", "GGJT", "gguf", "FUGG", "\x00\x00\x00\x00", "GGU\xff"})
        B.patch(fx, p + "magic-" + hex(rd32(Bytes(m, m + 4), 0)), "not a GGUF file: expected magic",
                [m](Bytes& b) { std::memcpy(b.data(), m, 4); });
    for (uint32_t v : {0u, 1u, 4u, 5u, 0x03000000u, 0xFFFFFFFFu})
        B.patch(fx, p + "version-" + std::to_string(v),
                v == 1 ? "GGUF version 1 is not supported" : "unsupported GGUF version",
                [v](Bytes& b) { poke<uint32_t>(b, 4, v); });
    for (uint64_t n : {kMax64, kHuge63, uint64_t(1) << 32, uint64_t(1000000)}) {
        B.patch(fx, p + "tensor-count-" + hex(n), "tensor_count is " + std::to_string(n),
                [n](Bytes& b) { poke<uint64_t>(b, 8, n); });
        B.patch(fx, p + "kv-count-" + hex(n), "kv_count is " + std::to_string(n),
                [n](Bytes& b) { poke<uint64_t>(b, 16, n); });
    }

    // Truncation at every field boundary and inside every field (see Raw::serialize).
    std::vector<Cut> cuts;
    const Raw base = Raw::parse(*fx);
    const Bytes again = base.serialize(&cuts, o.cut_tensor);
    if (again != *fx) bug(fx_name + " does not round-trip through Raw");
    cuts.insert(cuts.begin(), Cut{0, "empty"});
    std::set<uint64_t> seen;
    for (const Cut& c : cuts) {
        if (c.at >= fx->size() || !seen.insert(c.at).second) continue;
        const uint64_t at = c.at;
        B.add(p + "cut-" + std::to_string(at) + "-" + c.label,
              at < 4 ? "not a GGUF file" : "truncated",
              [fx, at] { return Bytes(fx->begin(), fx->begin() + long(at)); });
    }

    // Every key.
    for (size_t k = 0; o.per_kv && k < base.kvs.size(); ++k) {
        const std::string key = base.kvs[k].key, l = p + "kv" + std::to_string(k) + "-";
        B.mutate(fx, l + "type-13", "key '" + key + "': invalid value type 13",
                 [k](Raw& r) { r.kvs[k].type = 13; });
        B.mutate(fx, l + "keylen-huge",
                 "KV #" + std::to_string(k) + ": key length is " + std::to_string(kHuge63),
                 [k](Raw& r) { r.kvs[k].key_len = kHuge63; });
        B.mutate(fx, l + "duplicate", "duplicate key '" + key + "'",
                 [k](Raw& r) { r.kvs.push_back(r.kvs[k]); });
    }

    // Every tensor (or the first few).
    for (size_t k = 0; k < base.tensors.size() && k < o.per_tensor; ++k) {
        const std::string name = base.tensors[k].name, l = p + "t" + std::to_string(k) + "-";
        const std::string subj = "tensor '" + name + "': ";
        B.mutate(fx, l + "type-99", subj + "unknown ggml type id 99",
                 [k](Raw& r) { r.tensors[k].type = 99; });
        B.mutate(fx, l + "ndims-5", subj + "invalid n_dims: expected 1..4, found 5",
                 [k](Raw& r) { r.tensors[k].dims.resize(5, 1); });
        B.mutate(fx, l + "dim0-zero", subj + "invalid dims[0]: expected at least 1, found 0",
                 [k](Raw& r) { r.tensors[k].dims[0] = 0; });
        B.mutate(fx, l + "offset-misaligned",
                 subj + "offset " + std::to_string(base.tensors[k].offset + 1) + " is misaligned",
                 [k](Raw& r) { r.tensors[k].offset += 1; });
        B.mutate(fx, l + "duplicate", "duplicate tensor '" + name + "'",
                 [k](Raw& r) { r.tensors.push_back(r.tensors[k]); });
        B.mutate(fx, l + "missing",
                 o.optional_tensors.count(name) ? "" : "missing tensor '" + name + "'",
                 [k](Raw& r) { r.tensors.erase(r.tensors.begin() + long(k)); });
    }
}

void reader_cases(Builder& B, const std::string& fx_name, const Fixture& fx) {
    const std::string p = fx_name + ".";
    // Keys.
    B.mutate(fx, p + "key-empty", "KV #0: empty key", [](Raw& r) { r.kvs[0].key = ""; });
    B.mutate(fx, p + "key-invalid-utf8",
             "KV #0: key 'gen\\xff' is not printable UTF-8 text: invalid byte 0xff at offset 3",
             [](Raw& r) { r.kvs[0].key = "gen\xff"; });
    B.mutate(fx, p + "key-newline", "is not printable UTF-8 text: invalid byte 0x0a at offset 1",
             [](Raw& r) { r.kvs[0].key = "a\nb"; });
    B.mutate(fx, p + "key-nul", "is not printable UTF-8 text: invalid byte 0x00 at offset 1",
             [](Raw& r) { r.kvs[0].key = std::string("a\0b", 3); });
    B.mutate(fx, p + "key-too-long",
             "KV #0: key is too long: expected at most 65535 bytes, "
             "found 65536",
             [](Raw& r) { r.kvs[0].key = std::string(65536, 'k'); });
    B.mutate(fx, p + "keylen-max", "KV #0: key length is 18446744073709551615",
             [](Raw& r) { r.kvs[0].key_len = kMax64; });
    // Values.
    B.mutate(fx, p + "value-type-max", "invalid value type 4294967295",
             [](Raw& r) { r.kvs[0].type = 0xFFFFFFFFu; });
    B.mutate(fx, p + "arch-strlen-huge",
             "key 'general.architecture': string value length is " + std::to_string(kHuge63),
             [](Raw& r) { poke<uint64_t>(r.kv("general.architecture").payload, 0, kHuge63); });
    for (uint64_t n : {uint64_t(1) << 62, uint64_t(1) << 32, kMax64})
        B.mutate(
            fx, p + "tokens-count-" + hex(n),
            "key 'tokenizer.ggml.tokens': array length (string elements) is " + std::to_string(n),
            [n](Raw& r) { poke<uint64_t>(r.kv("tokenizer.ggml.tokens").payload, 4, n); });
    B.mutate(fx, p + "tokens-elemtype-13",
             "key 'tokenizer.ggml.tokens': invalid array element type 13",
             [](Raw& r) { poke<uint32_t>(r.kv("tokenizer.ggml.tokens").payload, 0, 13); });
    for (uint64_t i : {0, 5, 47}) {
        B.mutate(fx, p + "token" + std::to_string(i) + "-strlen-huge",
                 "key 'tokenizer.ggml.tokens': string value length is " + std::to_string(kHuge63),
                 [i](Raw& r) {
                     Bytes& pl = r.kv("tokenizer.ggml.tokens").payload;
                     poke<uint64_t>(pl, str_elem_offset(pl, i), kHuge63);
                 });
    }
    B.mutate(fx, p + "scores-count-huge",
             "key 'tokenizer.ggml.scores': array length (f32 elements) is 1099511627776",
             [](Raw& r) { poke<uint64_t>(r.kv("tokenizer.ggml.scores").payload, 4, 1ull << 40); });
    B.mutate(fx, p + "token-type-count-huge",
             "key 'tokenizer.ggml.token_type': array length (i32 elements) is",
             [](Raw& r) { poke<uint64_t>(r.kv("tokenizer.ggml.token_type").payload, 4, kHuge63); });
    B.mutate(fx, p + "nested-9-deep", "key 'general.name': arrays nested too deeply", [](Raw& r) {
        Enc e;
        for (int d = 0; d < 8; ++d) e.put<uint32_t>(kArray).put<uint64_t>(1);
        e.put<uint32_t>(kU8).put<uint64_t>(0);
        r.set_kv("general.name", kArray, e.b);
    });
    B.mutate(fx, p + "nested-1000-deep", "key 'general.name': arrays nested too deeply",
             [](Raw& r) {
                 Enc e;
                 for (int d = 0; d < 1000; ++d) e.put<uint32_t>(kArray).put<uint64_t>(1);
                 e.put<uint32_t>(kU8).put<uint64_t>(0);
                 r.set_kv("general.name", kArray, e.b);
             });
    B.mutate(fx, p + "bool-2",
             "key 'tokenizer.ggml.add_bos_token': invalid bool value: "
             "expected 0 or 1, found 2",
             [](Raw& r) { r.kv("tokenizer.ggml.add_bos_token").payload = p_u8(2); });
    // general.alignment.
    for (uint32_t a : {0u, 48u, 3u})
        B.mutate(
            fx, p + "alignment-" + std::to_string(a),
            "key 'general.alignment': expected a nonzero power of two, found " + std::to_string(a),
            [a](Raw& r) { r.set_kv("general.alignment", kU32, p_u32(a)); });
    B.mutate(fx, p + "alignment-2p31",
             "key 'general.alignment': expected at most 1048576, found 2147483648",
             [](Raw& r) { r.set_kv("general.alignment", kU32, p_u32(0x80000000u)); });
    B.mutate(fx, p + "alignment-u64", "key 'general.alignment': expected u32, found u64",
             [](Raw& r) { r.set_kv("general.alignment", kU64, p_u64(32)); });
    B.mutate(fx, p + "alignment-string", "key 'general.alignment': expected u32, found string",
             [](Raw& r) { r.set_kv("general.alignment", kString, p_str("32")); });
    // Tensor infos.
    B.mutate(fx, p + "tname-len-huge", "tensor #0: name length is " + std::to_string(kHuge63),
             [](Raw& r) { r.tensors[0].name_len = kHuge63; });
    B.mutate(fx, p + "tname-empty", "tensor #0: empty name",
             [](Raw& r) { r.tensors[0].name = ""; });
    B.mutate(fx, p + "tname-invalid-utf8", "tensor #0: name 'token_embd\\xc3' is not printable",
             [](Raw& r) { r.tensors[0].name = "token_embd\xc3"; });
    B.mutate(fx, p + "tname-too-long", "tensor #1: name is too long",
             [](Raw& r) { r.tensors[1].name = std::string(70000, 'n'); });
    B.mutate(fx, p + "ndims-0",
             "tensor 'token_embd.weight': invalid n_dims: expected 1..4, "
             "found 0",
             [](Raw& r) { r.tensors[0].dims.clear(); });
    B.mutate(fx, p + "ndims-max",
             "tensor 'token_embd.weight': invalid n_dims: expected 1..4, "
             "found 4294967295",
             [](Raw& r) { r.tensors[0].n_dims = 0xFFFFFFFFu; });
    B.mutate(fx, p + "ndims-5-real",
             "tensor 'output_norm.weight': invalid n_dims: expected "
             "1..4, found 5",
             [](Raw& r) {
                 r.tensors[1].dims = {2, 2, 2, 2, 4};
             });
    B.mutate(fx, p + "dims-overflow-2", "tensor 'blk.0.attn_q.weight': element count overflows",
             [](Raw& r) {
                 r.tensor("blk.0.attn_q.weight").dims = {1ull << 32, 1ull << 32};
             });
    B.mutate(fx, p + "dims-overflow-4", "tensor 'blk.0.attn_q.weight': element count overflows",
             [](Raw& r) {
                 r.tensor("blk.0.attn_q.weight").dims = {32, 1ull << 20, 1ull << 20, 1ull << 20};
             });
    B.mutate(fx, p + "dims-dim1-zero",
             "tensor 'token_embd.weight': invalid dims[1]: expected at "
             "least 1, found 0",
             [](Raw& r) { r.tensors[0].dims[1] = 0; });
    B.mutate(fx, p + "bytes-overflow", "tensor 'output_norm.weight': byte size overflows",
             [](Raw& r) { r.tensor("output_norm.weight").dims = {1ull << 62}; });
    for (uint32_t t : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 1000u, 0xFFFFFFFFu})
        B.mutate(fx, p + "ttype-" + std::to_string(t),
                 "tensor 'output_norm.weight': unknown ggml type id " + std::to_string(t),
                 [t](Raw& r) { r.tensor("output_norm.weight").type = t; });
    B.mutate(fx, p + "block-q4K-64",
             "tensor 'token_embd.weight': dims[0] = 64 is not a multiple "
             "of the q4_K block size",
             [](Raw& r) { r.tensors[0].type = 12; });
    B.mutate(fx, p + "block-q8_0-48",
             "tensor 'blk.0.attn_q.weight': dims[0] = 48 is not a "
             "multiple of the q8_0 block size",
             [](Raw& r) {
                 r.tensor("blk.0.attn_q.weight").dims = {48, 64};
             });
    B.mutate(fx, p + "offset-2p63", "truncated: tensor 'output_norm.weight'",
             [](Raw& r) { r.tensor("output_norm.weight").offset = kHuge63; });
    B.mutate(fx, p + "offset-wraps",
             "truncated: tensor 'output_norm.weight' needs 256 bytes at "
             "data offset",
             [](Raw& r) { r.tensor("output_norm.weight").offset = ~uint64_t(31); });
    B.mutate(fx, p + "offset-past-end", "truncated: tensor 'blk.1.ffn_down.weight' needs bytes",
             [](Raw& r) { r.tensor("blk.1.ffn_down.weight").offset += 1 << 20; });
    B.mutate(fx, p + "offset-misaligned-by-16", "is misaligned: expected a multiple of 32",
             [](Raw& r) { r.tensor("blk.0.attn_k.weight").offset += 16; });
    B.mutate(fx, p + "overlap-same", "overlap", [](Raw& r) {
        r.tensor("blk.0.attn_k.weight").offset = r.tensor("blk.0.attn_q.weight").offset;
    });
    B.mutate(fx, p + "overlap-partial", "overlap", [](Raw& r) {
        r.tensor("blk.0.attn_q.weight").offset += 32;  // runs into attn_k
    });
    B.mutate(fx, p + "overlap-all-zero", "overlap", [](Raw& r) {
        for (auto& t : r.tensors) t.offset = 0;
    });
    B.mutate(fx, p + "dims-past-end", "truncated: tensor 'blk.0.attn_q.weight'", [](Raw& r) {
        r.tensor("blk.0.attn_q.weight").dims = {64, 100000};
    });
    B.mutate(fx, p + "no-data", "truncated: tensor", [](Raw& r) { r.data.clear(); });
}

}  // namespace jitllm::corpus::detail
