// GGUF writer (version 3, little-endian): serializes metadata, the tensor table and the aligned
// tensor data; write() goes through a temp file and rename. Misuse (wrong data size, bad dims,
// duplicate tensor) is our own bug and trips JITLLM_CHECK; I/O failures throw Error.
#include "gguf/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace jitllm {

static_assert(std::endian::native == std::endian::little, "the GGUF writer assumes a LE host");

namespace {

constexpr uint64_t kDefaultAlignment = 32;
const char* const kAlignmentKey = "general.alignment";

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
}

// An integer value in the narrower T of its type, which must hold it (else our bug)
template <typename T, typename V>
void put_int(std::vector<uint8_t>& out, V v) {
    JITLLM_CHECK(std::in_range<T>(v), "{} does not fit the GGUF value's {} bytes", v, sizeof(T));
    put<T>(out, T(v));
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

// Writes the value's payload (the type id is written by the caller).
void put_value(std::vector<uint8_t>& out, const GgufValue& v) {
    switch (v.type) {
        case GgufValueType::U8: put_int<uint8_t>(out, v.u); break;
        case GgufValueType::I8: put_int<int8_t>(out, v.i); break;
        case GgufValueType::U16: put_int<uint16_t>(out, v.u); break;
        case GgufValueType::I16: put_int<int16_t>(out, v.i); break;
        case GgufValueType::U32: put_int<uint32_t>(out, v.u); break;
        case GgufValueType::I32: put_int<int32_t>(out, v.i); break;
        case GgufValueType::U64: put<uint64_t>(out, v.u); break;
        case GgufValueType::I64: put<int64_t>(out, v.i); break;
        case GgufValueType::F32: put<float>(out, float(v.f)); break;
        case GgufValueType::F64: put<double>(out, v.f); break;
        case GgufValueType::BOOL: put<uint8_t>(out, v.b ? 1 : 0); break;
        case GgufValueType::STRING: put_string(out, v.str); break;
        case GgufValueType::ARRAY:
            put<uint32_t>(out, uint32_t(v.elem_type));
            put<uint64_t>(out, v.size());
            if (v.elem_type == GgufValueType::ARRAY) {
                for (const GgufValue& e : v.arr) {
                    JITLLM_CHECK(e.type == v.elem_type, "array element of type {} in an array of {}",
                                 gguf_value_type_name(e.type), gguf_value_type_name(v.elem_type));
                    put_value(out, e);
                }
            } else if (v.elem_type == GgufValueType::STRING) {
                for (size_t k = 0; k < v.size(); ++k) put_string(out, v.string_at(k));
            } else {  // packed as the file stores them
                out.insert(out.end(), v.packed.begin(), v.packed.end());
            }
            break;
        default: JITLLM_CHECK(false, "invalid GgufValueType {}", uint32_t(v.type));
    }
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

GgufValue scalar(GgufValueType t) {
    GgufValue v;
    v.type = t;
    return v;
}

// a scalar of type t holding v in `field`
template <class M, class V>
GgufValue scalar(GgufValueType t, M GgufValue::* field, const V& v) {
    GgufValue x = scalar(t);
    x.*field = M(v);
    return x;
}

GgufValue array_of(GgufValueType elem) {
    GgufValue v;
    v.type = GgufValueType::ARRAY;
    v.elem_type = elem;
    return v;
}

// Writes all of [p, p+n) to fd; false with errno set on failure.
bool write_all(int fd, const uint8_t* p, size_t n) {
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += w;
        n -= size_t(w);
    }
    return true;
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue v) {
    for (GgufKv& kv : kvs_) {
        if (kv.key == key) {
            kv.value = std::move(v);
            return;
        }
    }
    kvs_.push_back(GgufKv{key, std::move(v)});
}

void GgufWriter::set_u32(const std::string& key, uint32_t v) { set(key, scalar(GgufValueType::U32, &GgufValue::u, v)); }
void GgufWriter::set_i32(const std::string& key, int32_t v) { set(key, scalar(GgufValueType::I32, &GgufValue::i, v)); }
void GgufWriter::set_u64(const std::string& key, uint64_t v) { set(key, scalar(GgufValueType::U64, &GgufValue::u, v)); }
void GgufWriter::set_f32(const std::string& key, float v) { set(key, scalar(GgufValueType::F32, &GgufValue::f, v)); }
void GgufWriter::set_bool(const std::string& key, bool v) { set(key, scalar(GgufValueType::BOOL, &GgufValue::b, v)); }
void GgufWriter::set_string(const std::string& key, const std::string& v) {
    set(key, scalar(GgufValueType::STRING, &GgufValue::str, v));
}

void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
    GgufValue a = array_of(GgufValueType::STRING);
    a.str_end.reserve(v.size());
    for (const std::string& s : v) a.push_string(s);
    set(key, std::move(a));
}

void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
    GgufValue a = array_of(GgufValueType::F32);
    a.packed.resize(v.size() * 4);
    if (!v.empty()) std::memcpy(a.packed.data(), v.data(), a.packed.size());
    set(key, std::move(a));
}

void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
    GgufValue a = array_of(GgufValueType::I32);
    a.packed.resize(v.size() * 4);
    if (!v.empty()) std::memcpy(a.packed.data(), v.data(), a.packed.size());
    set(key, std::move(a));
}

void GgufWriter::add(Tensor t) {
    const std::string& name = t.name;
    JITLLM_CHECK(!t.dims.empty() && t.dims.size() <= 4, "tensor '{}': {} dims", name, t.dims.size());
    uint64_t rows = 1;
    for (size_t d = 0; d < t.dims.size(); ++d) {
        JITLLM_CHECK(t.dims[d] >= 1, "tensor '{}': dims[{}] = 0", name, d);
        if (d > 0) rows *= t.dims[d];
    }
    const TypeTraits& tt = type_traits(t.type);
    JITLLM_CHECK(t.dims[0] % tt.block_size == 0, "tensor '{}': dims[0] = {} not a multiple of {}",
                 name, t.dims[0], tt.block_size);
    const uint64_t n_bytes = row_bytes(t.type, t.dims[0]) * rows;
    JITLLM_CHECK(t.fill || t.data.size() == n_bytes, "tensor '{}': {} data bytes, expected {}", name,
                 t.data.size(), n_bytes);
    for (const Tensor& o : tensors_)
        JITLLM_CHECK(o.name != name, "tensor '{}' added twice", name);
    t.n_bytes = n_bytes;
    tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type,
                            const std::vector<uint64_t>& dims, std::vector<uint8_t> data) {
    add(Tensor{name, type, dims, std::move(data), {}, 0});
}

void GgufWriter::add_tensor_rows(const std::string& name, GgmlType type, const std::vector<uint64_t>& dims,
                                 FillRows fill) {
    JITLLM_CHECK(bool(fill), "tensor '{}': no fill function", name);
    add(Tensor{name, type, dims, {}, std::move(fill), 0});
}

// Header, metadata and tensor table, padded to the alignment: everything before the data.
// Tensor data follows, each tensor padded to the alignment.
namespace {

struct TensorRef {
    const std::string& name;
    GgmlType type;
    const std::vector<uint64_t>& dims;
    uint64_t n_bytes;
};

std::vector<uint8_t> make_head(uint64_t alignment, const std::vector<GgufKv>& kvs_in,
                               const std::vector<TensorRef>& tensors) {
    JITLLM_CHECK(alignment != 0 && (alignment & (alignment - 1)) == 0 && alignment <= UINT32_MAX,
                 "alignment {}", alignment);
    // The writer's alignment wins over a general.alignment key copied from another file.
    std::vector<GgufKv> kvs = kvs_in;
    const GgufValue av = scalar(GgufValueType::U32, &GgufValue::u, alignment);
    bool found = false;
    for (GgufKv& kv : kvs) {
        if (kv.key == kAlignmentKey) {
            kv.value = av;
            found = true;
        }
    }
    if (!found && alignment != kDefaultAlignment) kvs.push_back(GgufKv{kAlignmentKey, av});

    std::vector<uint8_t> out;
    put<uint32_t>(out, 0x46554747u);  // "GGUF" read as a little-endian u32
    put<uint32_t>(out, 3);
    put<uint64_t>(out, tensors.size());
    put<uint64_t>(out, kvs.size());
    for (const GgufKv& kv : kvs) {
        put_string(out, kv.key);
        put<uint32_t>(out, uint32_t(kv.value.type));
        put_value(out, kv.value);
    }
    uint64_t offset = 0;
    for (const TensorRef& t : tensors) {
        put_string(out, t.name);
        put<uint32_t>(out, uint32_t(t.dims.size()));
        for (uint64_t d : t.dims) put<uint64_t>(out, d);
        put<uint32_t>(out, uint32_t(t.type));
        put<uint64_t>(out, offset);
        offset = align_up(offset + t.n_bytes, alignment);
    }
    // A file without tensors ends right after its metadata, like llama.cpp's vocab-only files.
    if (!tensors.empty()) out.resize(align_up(out.size(), alignment), 0);
    return out;
}

// Calls sink(bytes, n) with t's data in order: its vector, or runs of rows from its fill function
// (at most ~64 MiB a run, at least one row), then the zero padding to the alignment.
template <class Sink>
bool stream_tensor(const GgufWriter::FillRows& fill, const std::vector<uint8_t>& data, GgmlType type,
                   const std::vector<uint64_t>& dims, uint64_t n_bytes, uint64_t alignment, Sink&& sink) {
    if (!fill) {
        if (!sink(data.data(), data.size())) return false;
    } else {
        const uint64_t rb = row_bytes(type, dims[0]), rows = n_bytes / rb;
        const uint64_t run = std::max<uint64_t>(1, (uint64_t(64) << 20) / rb);
        std::vector<uint8_t> buf(size_t(std::min(rows, run) * rb));
        for (uint64_t r0 = 0; r0 < rows; r0 += run) {
            const uint64_t r1 = std::min(rows, r0 + run);
            fill(r0, r1, buf.data());
            if (!sink(buf.data(), size_t((r1 - r0) * rb))) return false;
        }
    }
    const std::vector<uint8_t> zeros(size_t(align_up(n_bytes, alignment) - n_bytes), 0);
    return sink(zeros.data(), zeros.size());
}

std::vector<TensorRef> tensor_refs(const auto& tensors) {
    std::vector<TensorRef> refs;
    for (const auto& t : tensors) refs.push_back(TensorRef{t.name, t.type, t.dims, t.n_bytes});
    return refs;
}

}  // namespace

std::vector<uint8_t> GgufWriter::to_bytes() const {
    std::vector<uint8_t> out = make_head(alignment_, kvs_, tensor_refs(tensors_));
    for (const Tensor& t : tensors_)
        stream_tensor(t.fill, t.data, t.type, t.dims, t.n_bytes, alignment_, [&](const uint8_t* p, size_t n) {
            out.insert(out.end(), p, p + n);
            return true;
        });
    return out;
}

void GgufWriter::write(const std::string& path) const {
    std::vector<uint8_t> head = make_head(alignment_, kvs_, tensor_refs(tensors_));

    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail("{}: cannot write: {}", path, std::strerror(errno));
    // Streams the data instead of building a second in-memory copy of the whole file.
    bool ok = write_all(fd, head.data(), head.size());
    for (size_t k = 0; ok && k < tensors_.size(); ++k) {
        const Tensor& t = tensors_[k];
        ok = stream_tensor(t.fill, t.data, t.type, t.dims, t.n_bytes, alignment_,
                           [&](const uint8_t* p, size_t n) { return write_all(fd, p, n); });
    }
    int e = errno;
    if (::close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        ::unlink(tmp.c_str());
        fail("{}: cannot write: {}", path, std::strerror(e));
    }
}

}  // namespace jitllm
