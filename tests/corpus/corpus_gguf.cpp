// The raw GGUF model of corpus_internal.h: little-endian readers, payload encoders and decoders,
// the walker that takes a valid file apart into Raw's fields, and serialization that records
// where each field of the file can be cut.
#include "corpus/corpus_internal.h"

#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace jitllm::corpus::detail {

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

uint64_t align_up(uint64_t x, uint64_t a) {
    return (x + a - 1) / a * a;
}

namespace {

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

}  // namespace

Raw Raw::parse(const Bytes& f) {
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

Bytes Raw::serialize(std::vector<Cut>* cuts, const std::function<bool(size_t)>& detail) const {
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

size_t Raw::kv_index(std::string_view key) const {
    for (size_t i = 0; i < kvs.size(); ++i)
        if (kvs[i].key == key) return i;
    bug("no key " + std::string(key));
}

RawKv& Raw::kv(std::string_view key) {
    return kvs[kv_index(key)];
}

RawTensor& Raw::tensor(std::string_view name) {
    for (auto& t : tensors)
        if (t.name == name) return t;
    bug("no tensor " + std::string(name));
}

void Raw::erase_kv(std::string_view key) {
    kvs.erase(kvs.begin() + long(kv_index(key)));
}

void Raw::erase_tensor(std::string_view name) {
    RawTensor* t = &tensor(name);
    tensors.erase(tensors.begin() + (t - tensors.data()));
}

void Raw::set_kv(const std::string& key, uint32_t type, Bytes payload) {
    for (auto& kv : kvs)
        if (kv.key == key) {
            kv.type = type;
            kv.payload = std::move(payload);
            return;
        }
    kvs.push_back({key, type, std::move(payload), std::nullopt});
}

std::vector<std::string> Raw::tokens() {
    return decode_str_array(kv("tokenizer.ggml.tokens").payload);
}

void Raw::set_tokens(const std::vector<std::string>& t) {
    set_kv("tokenizer.ggml.tokens", kArray, p_str_array(t));
}

}  // namespace jitllm::corpus::detail
