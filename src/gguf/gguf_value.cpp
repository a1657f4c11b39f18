// GGUF metadata values (gguf_reader.h GgufValue): type names, scalar sizes, and arrays kept packed
// (scalars and strings as bytes, nested arrays as values).
#include <cstring>

#include "core/error.h"
#include "gguf/gguf_reader.h"

namespace jitllm {

const char* gguf_value_type_name(GgufValueType t) {
    switch (t) {
        case GgufValueType::U8: return "u8";
        case GgufValueType::I8: return "i8";
        case GgufValueType::U16: return "u16";
        case GgufValueType::I16: return "i16";
        case GgufValueType::U32: return "u32";
        case GgufValueType::I32: return "i32";
        case GgufValueType::F32: return "f32";
        case GgufValueType::BOOL: return "bool";
        case GgufValueType::STRING: return "string";
        case GgufValueType::ARRAY: return "array";
        case GgufValueType::U64: return "u64";
        case GgufValueType::I64: return "i64";
        case GgufValueType::F64: return "f64";
    }
    return "unknown";
}

size_t gguf_scalar_bytes(GgufValueType t) {
    switch (t) {
        case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::BOOL: return 1;
        case GgufValueType::U16: case GgufValueType::I16: return 2;
        case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
        case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
        case GgufValueType::STRING: case GgufValueType::ARRAY: return 0;
    }
    return 0;
}

size_t GgufValue::size() const {
    JITLLM_CHECK(type == GgufValueType::ARRAY, "size() of a {}", gguf_value_type_name(type));
    if (elem_type == GgufValueType::ARRAY) return arr.size();
    if (elem_type == GgufValueType::STRING) return str_end.size();
    return packed.size() / gguf_scalar_bytes(elem_type);
}

std::string_view GgufValue::string_at(size_t k) const {
    JITLLM_CHECK(type == GgufValueType::ARRAY && elem_type == GgufValueType::STRING && k < str_end.size(),
                 "string_at({}) of {} elements", k, str_end.size());
    const uint64_t b = k ? str_end[k - 1] : 0;
    return {reinterpret_cast<const char*>(packed.data()) + b, size_t(str_end[k] - b)};
}

GgufValue GgufValue::element(size_t k) const {
    JITLLM_CHECK(k < size(), "element {} of {}", k, size());
    if (elem_type == GgufValueType::ARRAY) return arr[k];
    GgufValue e;
    e.type = elem_type;
    if (elem_type == GgufValueType::STRING) {
        e.str = std::string(string_at(k));
        return e;
    }
    const size_t n = gguf_scalar_bytes(elem_type);
    const uint8_t* p = packed.data() + k * n;
    auto get = [&](auto v) {
        std::memcpy(&v, p, sizeof(v));
        return v;
    };
    switch (elem_type) {
        case GgufValueType::U8: e.u = get(uint8_t()); break;
        case GgufValueType::I8: e.i = get(int8_t()); break;
        case GgufValueType::U16: e.u = get(uint16_t()); break;
        case GgufValueType::I16: e.i = get(int16_t()); break;
        case GgufValueType::U32: e.u = get(uint32_t()); break;
        case GgufValueType::I32: e.i = get(int32_t()); break;
        case GgufValueType::U64: e.u = get(uint64_t()); break;
        case GgufValueType::I64: e.i = get(int64_t()); break;
        case GgufValueType::F32: e.f = get(float()); break;
        case GgufValueType::F64: e.f = get(double()); break;
        case GgufValueType::BOOL: e.b = get(uint8_t()) != 0; break;
        case GgufValueType::STRING: case GgufValueType::ARRAY: break;
    }
    return e;
}

void GgufValue::push_string(std::string_view s) {
    JITLLM_CHECK(type == GgufValueType::ARRAY && elem_type == GgufValueType::STRING, "a string into an array of {}",
                 gguf_value_type_name(elem_type));
    packed.insert(packed.end(), s.begin(), s.end());
    str_end.push_back(packed.size());
}

void GgufValue::push_back(const GgufValue& e) {
    JITLLM_CHECK(type == GgufValueType::ARRAY && e.type == elem_type, "a {} into an array of {}",
                 gguf_value_type_name(e.type), gguf_value_type_name(elem_type));
    if (elem_type == GgufValueType::ARRAY) {
        arr.push_back(e);
        return;
    }
    if (elem_type == GgufValueType::STRING) return push_string(e.str);
    auto put = [&](auto v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        packed.insert(packed.end(), p, p + sizeof(v));
    };
    switch (elem_type) {
        case GgufValueType::U8: put(uint8_t(e.u)); break;
        case GgufValueType::I8: put(int8_t(e.i)); break;
        case GgufValueType::U16: put(uint16_t(e.u)); break;
        case GgufValueType::I16: put(int16_t(e.i)); break;
        case GgufValueType::U32: put(uint32_t(e.u)); break;
        case GgufValueType::I32: put(int32_t(e.i)); break;
        case GgufValueType::U64: put(uint64_t(e.u)); break;
        case GgufValueType::I64: put(int64_t(e.i)); break;
        case GgufValueType::F32: put(float(e.f)); break;
        case GgufValueType::F64: put(double(e.f)); break;
        case GgufValueType::BOOL: put(uint8_t(e.b ? 1 : 0)); break;
        case GgufValueType::STRING: case GgufValueType::ARRAY: break;
    }
}

}  // namespace jitllm
