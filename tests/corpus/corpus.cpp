// Corpus builder (see corpus.h): fixtures, a raw GGUF model able to express invalid files, and
// the case list. Valid files are taken apart by a small walker of its own (not GgufReader), so
// the corruption does not depend on the code under test. Expected substrings are the sentences
// the loaders are meant to print (src/gguf, src/model, src/tokenizer).
#include "corpus/corpus.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>

#include "core/dtype.h"
#include "core/fp16.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"

namespace jitllm::corpus {
namespace {

// GGUF value type ids (spec numbering).
enum : uint32_t {
    kU8 = 0,
    kI8,
    kU16,
    kI16,
    kU32,
    kI32,
    kF32,
    kBool,
    kString,
    kArray,
    kU64,
    kI64,
    kF64,
};

constexpr uint64_t kHuge63 = uint64_t(1) << 63;
constexpr uint64_t kMax64 = ~uint64_t(0);

[[noreturn]] void bug(const std::string& what) {
    throw std::logic_error("corpus: " + what);
}

uint32_t rd32(const Bytes& b, size_t p) {
    if (p + 4 > b.size()) bug("read past a fixture");
    uint32_t v;
    std::memcpy(&v, b.data() + p, 4);
    return v;
}
uint64_t rd64(const Bytes& b, size_t p) {
    if (p + 8 > b.size()) bug("read past a fixture");
    uint64_t v;
    std::memcpy(&v, b.data() + p, 8);
    return v;
}

// Little-endian encoder.
struct Enc {
    Bytes b;
    template <typename T>
    Enc& put(T v) {
        uint8_t x[sizeof(T)];
        std::memcpy(x, &v, sizeof(T));
        b.insert(b.end(), x, x + sizeof(T));
        return *this;
    }
    Enc& raw(std::string_view s) {
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    Enc& str(std::string_view s) { return put<uint64_t>(s.size()).raw(s); }
};

template <typename T>
Bytes p_scalar(T v) {
    Enc e;
    e.put(v);
    return e.b;
}
Bytes p_u32(uint32_t v) {
    return p_scalar(v);
}
Bytes p_i32(int32_t v) {
    return p_scalar(v);
}
Bytes p_u64(uint64_t v) {
    return p_scalar(v);
}
Bytes p_f32(float v) {
    return p_scalar(v);
}
Bytes p_u8(uint8_t v) {
    return p_scalar(v);
}
Bytes p_str(std::string_view s) {
    Enc e;
    e.str(s);
    return e.b;
}
Bytes p_str_array(const std::vector<std::string>& v) {
    Enc e;
    e.put<uint32_t>(kString).put<uint64_t>(v.size());
    for (const auto& s : v) e.str(s);
    return e.b;
}
template <typename T>
Bytes p_array(uint32_t elem, const std::vector<T>& v) {
    Enc e;
    e.put<uint32_t>(elem).put<uint64_t>(v.size());
    for (T x : v) e.put(x);
    return e.b;
}

size_t scalar_size(uint32_t t) {
    switch (t) {
        case kU8:
        case kI8:
        case kBool:
            return 1;
        case kU16:
        case kI16:
            return 2;
        case kU32:
        case kI32:
        case kF32:
            return 4;
        case kU64:
        case kI64:
        case kF64:
            return 8;
        default:
            return 0;
    }
}

// End of the (valid) value of type t that starts at p.
size_t value_end(const Bytes& b, size_t p, uint32_t t) {
    if (t == kString) return p + 8 + rd64(b, p);
    if (t == kArray) {
        const uint32_t et = rd32(b, p);
        const uint64_t n = rd64(b, p + 4);
        p += 12;
        for (uint64_t i = 0; i < n; ++i) p = value_end(b, p, et);
        return p;
    }
    if (scalar_size(t) == 0) bug("bad value type in a fixture");
    return p + scalar_size(t);
}

std::vector<std::string> decode_str_array(const Bytes& payload) {
    if (rd32(payload, 0) != kString) bug("not a string array");
    std::vector<std::string> out(rd64(payload, 4));
    size_t p = 12;
    for (auto& s : out) {
        const uint64_t n = rd64(payload, p);
        s.assign(reinterpret_cast<const char*>(payload.data() + p + 8), n);
        p += 8 + n;
    }
    return out;
}

template <typename T>
std::vector<T> decode_array(const Bytes& payload) {
    if (scalar_size(rd32(payload, 0)) != sizeof(T)) bug("array element size");
    std::vector<T> out(rd64(payload, 4));
    if (!out.empty()) std::memcpy(out.data(), payload.data() + 12, out.size() * sizeof(T));
    return out;
}

uint64_t align_up(uint64_t x, uint64_t a) {
    return (x + a - 1) / a * a;
}

struct Cut {
    uint64_t at;
    std::string label;
};

// Where a field of `n` bytes at `start` can be cut: inside it (when it has an inside) and after.
void field_cuts(std::vector<Cut>* cuts, size_t start, size_t n, const std::string& label) {
    if (!cuts) return;
    if (n > 1) cuts->push_back({start + n / 2, label + "-mid"});
    cuts->push_back({start + n, label + "-end"});
}

// Cuts inside a value: its length/type/count fields and a few elements of an array.
void value_cuts(const Bytes& b, size_t p, uint32_t t, const std::string& l,
                std::vector<Cut>* cuts) {
    if (t == kString) {
        field_cuts(cuts, p, 8, l + "-len");
        if (uint64_t n = rd64(b, p)) field_cuts(cuts, p + 8, n, l + "-bytes");
        return;
    }
    if (t != kArray) {
        field_cuts(cuts, p, scalar_size(t), l);
        return;
    }
    const uint32_t et = rd32(b, p);
    const uint64_t n = rd64(b, p + 4);
    field_cuts(cuts, p, 4, l + "-elemtype");
    field_cuts(cuts, p + 4, 8, l + "-count");
    std::set<uint64_t> pick;
    if (n > 0) pick = {0, 1, n / 2, n - 1};
    size_t q = p + 12;
    for (uint64_t i = 0; i < n; ++i) {
        if (pick.count(i)) value_cuts(b, q, et, l + "-e" + std::to_string(i), cuts);
        q = value_end(b, q, et);
    }
}

struct RawKv {
    std::string key;
    uint32_t type;
    Bytes payload;                    // the value's bytes after its type id
    std::optional<uint64_t> key_len;  // overrides key.size() in the file
};

struct RawTensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    uint64_t offset;
    std::optional<uint64_t> name_len;  // overrides name.size() in the file
    std::optional<uint32_t> n_dims;    // overrides dims.size() in the file
};

// A GGUF file as fields that may hold anything, serialized verbatim.
struct Raw {
    std::string magic = "GGUF";
    uint32_t version = 3;
    std::optional<uint64_t> n_tensors, n_kv;  // override the real counts
    std::vector<RawKv> kvs;
    std::vector<RawTensor> tensors;
    uint64_t alignment = 32;  // where the data section is placed
    Bytes data;

    static Raw parse(const Bytes& f) {
        Raw r;
        r.magic.assign(reinterpret_cast<const char*>(f.data()), 4);
        r.version = rd32(f, 4);
        const uint64_t nt = rd64(f, 8), nkv = rd64(f, 16);
        size_t p = 24;
        for (uint64_t k = 0; k < nkv; ++k) {
            RawKv kv;
            const uint64_t kl = rd64(f, p);
            kv.key.assign(reinterpret_cast<const char*>(f.data() + p + 8), kl);
            p += 8 + kl;
            kv.type = rd32(f, p);
            p += 4;
            const size_t end = value_end(f, p, kv.type);
            kv.payload.assign(f.begin() + long(p), f.begin() + long(end));
            p = end;
            if (kv.key == "general.alignment" && kv.type == kU32) r.alignment = rd32(kv.payload, 0);
            r.kvs.push_back(std::move(kv));
        }
        for (uint64_t k = 0; k < nt; ++k) {
            RawTensor t;
            const uint64_t nl = rd64(f, p);
            t.name.assign(reinterpret_cast<const char*>(f.data() + p + 8), nl);
            p += 8 + nl;
            const uint32_t nd = rd32(f, p);
            p += 4;
            for (uint32_t d = 0; d < nd; ++d, p += 8) t.dims.push_back(rd64(f, p));
            t.type = rd32(f, p);
            t.offset = rd64(f, p + 4);
            p += 12;
            r.tensors.push_back(std::move(t));
        }
        r.data.assign(f.begin() + long(align_up(p, r.alignment)), f.end());
        return r;
    }

    // `detail(k)`: record cuts inside tensor info k and its data (all when unset).
    Bytes serialize(std::vector<Cut>* cuts = nullptr,
                    const std::function<bool(size_t)>& detail = {}) const {
        Enc e;
        auto fld = [&](size_t start, const std::string& label) {
            field_cuts(cuts, start, e.b.size() - start, label);
        };
        size_t s = 0;
        e.raw(magic);
        fld(s, "magic");
        s = e.b.size();
        e.put(version);
        fld(s, "version");
        s = e.b.size();
        e.put<uint64_t>(n_tensors.value_or(tensors.size()));
        fld(s, "tensor_count");
        s = e.b.size();
        e.put<uint64_t>(n_kv.value_or(kvs.size()));
        fld(s, "kv_count");
        for (size_t k = 0; k < kvs.size(); ++k) {
            const RawKv& kv = kvs[k];
            const std::string l = "kv" + std::to_string(k);
            s = e.b.size();
            e.put<uint64_t>(kv.key_len.value_or(kv.key.size()));
            fld(s, l + "-keylen");
            s = e.b.size();
            e.raw(kv.key);
            if (!kv.key.empty()) fld(s, l + "-key");
            s = e.b.size();
            e.put(kv.type);
            fld(s, l + "-type");
            s = e.b.size();
            e.b.insert(e.b.end(), kv.payload.begin(), kv.payload.end());
            if (cuts) value_cuts(e.b, s, kv.type, l + "-value", cuts);
        }
        for (size_t k = 0; k < tensors.size(); ++k) {
            const RawTensor& t = tensors[k];
            const bool d = !detail || detail(k);
            std::vector<Cut>* c = d ? cuts : nullptr;
            const std::string l = "t" + std::to_string(k);
            s = e.b.size();
            e.put<uint64_t>(t.name_len.value_or(t.name.size())).raw(t.name);
            field_cuts(c, s, 8, l + "-namelen");
            if (!t.name.empty()) field_cuts(c, s + 8, t.name.size(), l + "-name");
            s = e.b.size();
            e.put<uint32_t>(t.n_dims.value_or(uint32_t(t.dims.size())));
            field_cuts(c, s, 4, l + "-ndims");
            for (size_t i = 0; i < t.dims.size(); ++i) {
                s = e.b.size();
                e.put(t.dims[i]);
                field_cuts(c, s, 8, l + "-dim" + std::to_string(i));
            }
            s = e.b.size();
            e.put(t.type);
            field_cuts(c, s, 4, l + "-type");
            s = e.b.size();
            e.put(t.offset);
            field_cuts(c, s, 8, l + "-offset");
        }
        const size_t info_end = e.b.size();
        const size_t data_start = align_up(info_end, alignment);
        e.b.resize(data_start, 0);
        if (cuts && data_start - info_end > 1)
            cuts->push_back({info_end + (data_start - info_end) / 2, "padding-mid"});
        e.b.insert(e.b.end(), data.begin(), data.end());
        for (size_t k = 0; cuts && k < tensors.size(); ++k) {
            if (detail && !detail(k)) continue;
            const RawTensor& t = tensors[k];
            const auto tt = type_traits_find(t.type);
            if (!tt || t.dims.empty()) continue;
            uint64_t rows = 1;
            for (size_t i = 1; i < t.dims.size(); ++i) rows *= t.dims[i];
            const uint64_t n = row_bytes(tt->type, t.dims[0]) * rows;
            const uint64_t begin = data_start + t.offset;
            const std::string l = "t" + std::to_string(k) + "-data";
            cuts->push_back({begin + 1, l + "-first"});
            if (n > 2) cuts->push_back({begin + n / 2, l + "-mid"});
        }
        return e.b;
    }

    size_t kv_index(std::string_view key) const {
        for (size_t i = 0; i < kvs.size(); ++i)
            if (kvs[i].key == key) return i;
        bug("no key " + std::string(key));
    }
    RawKv& kv(std::string_view key) { return kvs[kv_index(key)]; }
    RawTensor& tensor(std::string_view name) {
        for (auto& t : tensors)
            if (t.name == name) return t;
        bug("no tensor " + std::string(name));
    }
    void erase_kv(std::string_view key) { kvs.erase(kvs.begin() + long(kv_index(key))); }
    void erase_tensor(std::string_view name) {
        RawTensor* t = &tensor(name);
        tensors.erase(tensors.begin() + (t - tensors.data()));
    }
    void set_kv(const std::string& key, uint32_t type, Bytes payload) {
        for (auto& kv : kvs)
            if (kv.key == key) {
                kv.type = type;
                kv.payload = std::move(payload);
                return;
            }
        kvs.push_back({key, type, std::move(payload), std::nullopt});
    }
    std::vector<std::string> tokens() {
        return decode_str_array(kv("tokenizer.ggml.tokens").payload);
    }
    void set_tokens(const std::vector<std::string>& t) {
        set_kv("tokenizer.ggml.tokens", kArray, p_str_array(t));
    }
};

// --- fixtures ---

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

// --- case list ---

using Fixture = std::shared_ptr<const Bytes>;
using Mutation = std::function<void(Raw&)>;
using Patch = std::function<void(Bytes&)>;

class Builder {
public:
    std::vector<Case> cases;
    std::set<std::string> names;

    void add(std::string name, std::string expect, std::function<Bytes()> fn) {
        if (!names.insert(name).second) bug("duplicate case " + name);
        cases.push_back({std::move(name), std::move(expect), std::move(fn)});
    }
    void mutate(const Fixture& fx, const std::string& name, std::string expect, Mutation m) {
        add(name, std::move(expect), [fx, m] {
            Raw r = Raw::parse(*fx);
            m(r);
            return r.serialize();
        });
    }
    void patch(const Fixture& fx, const std::string& name, std::string expect, Patch p) {
        add(name, std::move(expect), [fx, p] {
            Bytes b = *fx;
            p(b);
            return b;
        });
    }
};

template <typename T>
void poke(Bytes& b, size_t at, T v) {
    std::memcpy(b.data() + at, &v, sizeof(T));
}

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
}

// Cases every fixture gets: header, truncation, per-key and per-tensor corruption.
struct GenericOptions {
    bool per_kv = true;
    size_t per_tensor = SIZE_MAX;                 // how many tensors get per-tensor cases
    std::function<bool(size_t)> cut_tensor = {};  // tensors whose info/data get cuts (all)
    std::set<std::string> optional_tensors = {"output.weight"};  // removable without error
};

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

// Offset in a string-array payload of element i's length field.
size_t str_elem_offset(const Bytes& payload, uint64_t i) {
    size_t q = 12;
    for (uint64_t k = 0; k < i; ++k) q = value_end(payload, q, kString);
    return q;
}

// GGUF-level corruption beyond the generic per-item cases (run on the tiny SPM fixture).
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

// Model and vocabulary problems in an otherwise valid file (tiny SPM fixture, 48 tokens).
void model_cases(Builder& B, const std::string& fx_name, const Fixture& fx) {
    const std::string p = fx_name + ".";
    auto kv = [&](const std::string& name, const std::string& key, uint32_t type, Bytes payload,
                  const std::string& expect) {
        B.mutate(fx, p + name, expect,
                 [key, type, payload](Raw& r) { r.set_kv(key, type, payload); });
    };
    auto drop = [&](const std::string& key, const std::string& expect) {
        B.mutate(fx, p + "missing-" + key, expect, [key](Raw& r) { r.erase_kv(key); });
    };
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
    GgufValue inner;
    inner.type = GgufValueType::ARRAY;
    inner.elem_type = GgufValueType::U8;
    GgufValue zero;
    zero.type = GgufValueType::U8;
    inner.push_back(zero);
    inner.push_back(zero);
    GgufValue outer;
    outer.type = GgufValueType::ARRAY;
    outer.elem_type = GgufValueType::ARRAY;
    outer.arr = {inner, inner};
    w.set("t.nested", outer);
    w.add_tensor("a", GgmlType::F32, {3}, Bytes(12, 1));
    w.add_tensor("b", GgmlType::F16, {4, 2}, Bytes(16, 2));
    w.add_tensor("c", GgmlType::Q8_0, {32}, Bytes(34, 3));
    return w.to_bytes();
}

}  // namespace jitllm::corpus
