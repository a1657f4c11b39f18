// Internals of the corpus builder (corpus.h) that its source files share: a GGUF file as raw
// fields able to express invalid files (Raw, with the readers and payload encoders it is built
// from), and the case list's Builder. Valid files are taken apart by Raw's own walker (not
// GgufReader), so the corruption does not depend on the code under test.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "corpus/corpus.h"

namespace jitllm::corpus::detail {

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

[[noreturn]] void bug(const std::string& what);

uint32_t rd32(const Bytes& b, size_t p);
uint64_t rd64(const Bytes& b, size_t p);

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
Bytes p_u32(uint32_t v);
Bytes p_i32(int32_t v);
Bytes p_u64(uint64_t v);
Bytes p_f32(float v);
Bytes p_u8(uint8_t v);
Bytes p_str(std::string_view s);
Bytes p_str_array(const std::vector<std::string>& v);
template <typename T>
Bytes p_array(uint32_t elem, const std::vector<T>& v) {
    Enc e;
    e.put<uint32_t>(elem).put<uint64_t>(v.size());
    for (T x : v) e.put(x);
    return e.b;
}

size_t scalar_size(uint32_t t);

// End of the (valid) value of type t that starts at p.
size_t value_end(const Bytes& b, size_t p, uint32_t t);

std::vector<std::string> decode_str_array(const Bytes& payload);

template <typename T>
std::vector<T> decode_array(const Bytes& payload) {
    if (scalar_size(rd32(payload, 0)) != sizeof(T)) bug("array element size");
    std::vector<T> out(rd64(payload, 4));
    if (!out.empty()) std::memcpy(out.data(), payload.data() + 12, out.size() * sizeof(T));
    return out;
}

uint64_t align_up(uint64_t x, uint64_t a);

struct Cut {
    uint64_t at;
    std::string label;
};

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

    static Raw parse(const Bytes& f);

    // `detail(k)`: record cuts inside tensor info k and its data (all when unset).
    Bytes serialize(std::vector<Cut>* cuts = nullptr,
                    const std::function<bool(size_t)>& detail = {}) const;

    size_t kv_index(std::string_view key) const;
    RawKv& kv(std::string_view key);
    RawTensor& tensor(std::string_view name);
    void erase_kv(std::string_view key);
    void erase_tensor(std::string_view name);
    void set_kv(const std::string& key, uint32_t type, Bytes payload);
    std::vector<std::string> tokens();
    void set_tokens(const std::vector<std::string>& t);
};

using Fixture = std::shared_ptr<const Bytes>;
using Mutation = std::function<void(Raw&)>;
using Patch = std::function<void(Bytes&)>;

// The case list under construction: every name once.
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

// Cases every fixture gets: header, truncation, per-key and per-tensor corruption.
struct GenericOptions {
    bool per_kv = true;
    size_t per_tensor = SIZE_MAX;                 // how many tensors get per-tensor cases
    std::function<bool(size_t)> cut_tensor = {};  // tensors whose info/data get cuts (all)
    std::set<std::string> optional_tensors = {"output.weight"};  // removable without error
};

void generic_cases(Builder& B, const std::string& fx_name, const Fixture& fx,
                   const GenericOptions& o);

// GGUF-level corruption beyond the generic per-item cases (run on the tiny SPM fixture).
void reader_cases(Builder& B, const std::string& fx_name, const Fixture& fx);

}  // namespace jitllm::corpus::detail
