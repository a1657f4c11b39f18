// GGUF reader (gguf_reader.h): lookups by key and tensor name, and the typed metadata getters,
// which convert between integer widths and refuse a value of another type with a sentence.
#include <cstring>
#include <limits>

#include "core/error.h"
#include "gguf/gguf_reader.h"

namespace jitllm {

const GgufKv* GgufReader::find_kv(std::string_view key) const {
    for (const GgufKv& kv : kvs_)
        if (kv.key == key) return &kv;
    return nullptr;
}

const GgufTensorInfo* GgufReader::find_tensor(std::string_view name) const {
    for (const GgufTensorInfo& t : tensors_)
        if (t.name == name) return &t;
    return nullptr;
}

namespace {

bool is_int_type(GgufValueType t) {
    switch (t) {
        case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::U16:
        case GgufValueType::I16: case GgufValueType::U32: case GgufValueType::I32:
        case GgufValueType::U64: case GgufValueType::I64: return true;
        default: return false;
    }
}

bool is_unsigned_type(GgufValueType t) {
    return t == GgufValueType::U8 || t == GgufValueType::U16 || t == GgufValueType::U32 ||
           t == GgufValueType::U64;
}

[[noreturn]] void type_mismatch(const std::string& file, std::string_view key,
                                std::string_view expected, const GgufValue& v) {
    std::string found = gguf_value_type_name(v.type);
    if (v.type == GgufValueType::ARRAY)
        found = fmt::format("array of {}", gguf_value_type_name(v.elem_type));
    fail("{}: key '{}': expected {}, found {}", file, key, expected, found);
}

int64_t int_of(const std::string& file, std::string_view key, const GgufValue& v,
               std::string_view expected) {
    if (!is_int_type(v.type)) type_mismatch(file, key, expected, v);
    if (!is_unsigned_type(v.type)) return v.i;
    if (v.u > uint64_t(std::numeric_limits<int64_t>::max()))
        fail("{}: key '{}': value {} is out of range: expected at most {}", file, key, v.u,
             std::numeric_limits<int64_t>::max());
    return int64_t(v.u);
}

double float_of(const std::string& file, std::string_view key, const GgufValue& v,
                std::string_view expected) {
    if (v.type == GgufValueType::F32 || v.type == GgufValueType::F64) return v.f;
    if (!is_int_type(v.type)) type_mismatch(file, key, expected, v);
    return is_unsigned_type(v.type) ? double(v.u) : double(v.i);
}

// an optional getter's value, or "missing key" where the file lacks it
template <class T>
T required(const std::string& file, std::string_view key, std::optional<T> v) {
    if (!v) fail("{}: missing key '{}'", file, key);
    return *std::move(v);
}

}  // namespace

std::optional<std::string> GgufReader::get_string_opt(std::string_view key) const {
    const GgufKv* kv = find_kv(key);
    if (!kv) return std::nullopt;
    if (kv->value.type != GgufValueType::STRING) type_mismatch(path_, key, "string", kv->value);
    return kv->value.str;
}

std::string GgufReader::get_string(std::string_view key) const { return required(path_, key, get_string_opt(key)); }

std::optional<int64_t> GgufReader::get_int_opt(std::string_view key) const {
    const GgufKv* kv = find_kv(key);
    if (!kv) return std::nullopt;
    return int_of(path_, key, kv->value, "an integer");
}

int64_t GgufReader::get_int(std::string_view key) const { return required(path_, key, get_int_opt(key)); }

std::optional<double> GgufReader::get_float_opt(std::string_view key) const {
    const GgufKv* kv = find_kv(key);
    if (!kv) return std::nullopt;
    return float_of(path_, key, kv->value, "a number");
}

double GgufReader::get_float(std::string_view key) const { return required(path_, key, get_float_opt(key)); }

std::optional<bool> GgufReader::get_bool_opt(std::string_view key) const {
    const GgufKv* kv = find_kv(key);
    if (!kv) return std::nullopt;
    if (kv->value.type != GgufValueType::BOOL) type_mismatch(path_, key, "bool", kv->value);
    return kv->value.b;
}

std::optional<std::vector<std::string>> GgufReader::get_string_array_opt(
    std::string_view key) const {
    const GgufKv* kv = find_kv(key);
    if (!kv) return std::nullopt;
    const GgufValue& v = kv->value;
    if (v.type != GgufValueType::ARRAY || v.elem_type != GgufValueType::STRING)
        type_mismatch(path_, key, "array of string", v);
    std::vector<std::string> out;
    out.reserve(v.size());
    for (size_t k = 0; k < v.size(); ++k) out.emplace_back(v.string_at(k));
    return out;
}

std::optional<std::vector<float>> GgufReader::get_float_array_opt(std::string_view key) const {
    const GgufKv* kv = find_kv(key);
    if (!kv) return std::nullopt;
    const GgufValue& v = kv->value;
    if (v.type != GgufValueType::ARRAY ||
        !(v.elem_type == GgufValueType::F32 || v.elem_type == GgufValueType::F64 ||
          is_int_type(v.elem_type)))
        type_mismatch(path_, key, "array of numbers", v);
    std::vector<float> out;
    out.reserve(v.size());
    if (v.elem_type == GgufValueType::F32) {  // (the common case: scores, as stored)
        out.resize(v.size());
        std::memcpy(out.data(), v.packed.data(), v.packed.size());
        return out;
    }
    for (size_t k = 0; k < v.size(); ++k) out.push_back(float(float_of(path_, key, v.element(k), "a number")));
    return out;
}

std::optional<std::vector<int64_t>> GgufReader::get_int_array_opt(std::string_view key) const {
    const GgufKv* kv = find_kv(key);
    if (!kv) return std::nullopt;
    const GgufValue& v = kv->value;
    if (v.type != GgufValueType::ARRAY || !is_int_type(v.elem_type))
        type_mismatch(path_, key, "array of integers", v);
    std::vector<int64_t> out;
    out.reserve(v.size());
    for (size_t k = 0; k < v.size(); ++k) out.push_back(int_of(path_, key, v.element(k), "an integer"));
    return out;
}

}  // namespace jitllm
