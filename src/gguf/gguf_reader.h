// GGUF reader: mmap a file (or take bytes), validate everything at open, typed metadata getters,
// tensor table. Does not dequantize (see src/quant/). Versions 2 and 3; version 1 is refused.
// Every error is a jitllm::Error whose message starts with the file name.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.h"

namespace jitllm {

enum class GgufValueType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
    STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
const char* gguf_value_type_name(GgufValueType t);  // "u32", "string", "array", ...

// One metadata value. Scalars use the member matching `type`:
// unsigned ints -> u, signed ints -> i, F32/F64 -> f, BOOL -> b, STRING -> str.
// ARRAY: `elem_type` elements, packed (one GgufValue is ~100 bytes: a 128K-token vocabulary's
// three arrays and its 280K merges took ~70 MB one value each): scalars in `packed` as the file
// stores them (little-endian, bools 0 / 1), strings' bytes back to back in `packed` with
// str_end[k] the end of element k, nested arrays one GgufValue each in `arr`. size(), element()
// and string_at() read every form; push_back() appends in it.
struct GgufValue {
    GgufValueType type = GgufValueType::U8;
    uint64_t u = 0;
    int64_t i = 0;
    double f = 0.0;
    bool b = false;
    std::string str;
    GgufValueType elem_type = GgufValueType::U8;  // ARRAY only
    std::vector<uint8_t> packed;                   // ARRAY of scalars or strings
    std::vector<uint64_t> str_end;                 // ARRAY of strings
    std::vector<GgufValue> arr;                    // ARRAY of arrays

    size_t size() const;                       // ARRAY: elements
    GgufValue element(size_t k) const;         // ARRAY: element k as a value of its own
    std::string_view string_at(size_t k) const;  // ARRAY of STRING: element k
    void push_back(const GgufValue& e);        // ARRAY: appends e (of type elem_type)
    void push_string(std::string_view s);      // ARRAY of STRING: appends s
};
// Bytes a scalar of type t takes in a file (0 for STRING and ARRAY).
size_t gguf_scalar_bytes(GgufValueType t);

struct GgufKv {
    std::string key;
    GgufValue value;
};

struct GgufTensorInfo {
    std::string name;
    std::vector<uint64_t> dims;  // ggml order: dims[0] is the contiguous (row) length
    GgmlType type = GgmlType::F32;
    uint64_t offset = 0;         // relative to the start of the data section
    uint64_t n_elements = 0;
    uint64_t n_bytes = 0;
    const uint8_t* data = nullptr;  // into the mapping; valid while the reader lives
    uint64_t rows() const { uint64_t r = 1; for (size_t d = 1; d < dims.size(); ++d) r *= dims[d]; return r; }
};

// Files linked into the binary as data (the bundled model): open(name) of a registered name reads
// these bytes in place, with no file. The bytes must live as long as the process.
void register_embedded_gguf(std::string name, const uint8_t* data, size_t size);
// The registered bytes of `name` (nullptr, 0 when none).
std::pair<const uint8_t*, size_t> embedded_gguf(const std::string& name);

class GgufReader {
public:
    // mmap + full validation (or the registered embedded bytes of that name); throws Error naming
    // the file and the problem.
    static std::unique_ptr<GgufReader> open(const std::string& path);
    // Same validation over bytes in memory (tests, fuzzing). `name` is used in messages.
    static std::unique_ptr<GgufReader> from_bytes(std::vector<uint8_t> bytes, std::string name);
    ~GgufReader();
    GgufReader(const GgufReader&) = delete;
    GgufReader& operator=(const GgufReader&) = delete;

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t file_size() const { return size_; }
    uint64_t data_offset() const { return data_offset_; }

    const std::vector<GgufKv>& kvs() const { return kvs_; }
    const GgufKv* find_kv(std::string_view key) const;

    // Typed getters. The plain form throws "<file>: missing key 'k'"; every form throws
    // "<file>: key 'k': expected <type>, found <type>" on a type mismatch.
    std::optional<std::string> get_string_opt(std::string_view key) const;
    std::string get_string(std::string_view key) const;
    // Any integer type (u8..i64, and bool as 0/1 is NOT accepted); range-checked into int64.
    std::optional<int64_t> get_int_opt(std::string_view key) const;
    int64_t get_int(std::string_view key) const;
    // F32/F64 (integers are accepted and converted).
    std::optional<double> get_float_opt(std::string_view key) const;
    double get_float(std::string_view key) const;
    std::optional<bool> get_bool_opt(std::string_view key) const;
    // Arrays; nullopt when the key is absent, Error when it is not an array of that kind.
    std::optional<std::vector<std::string>> get_string_array_opt(std::string_view key) const;
    std::optional<std::vector<float>> get_float_array_opt(std::string_view key) const;
    std::optional<std::vector<int64_t>> get_int_array_opt(std::string_view key) const;

    // Copies the n bytes at p (a pointer into this reader's bytes, e.g. a tensor's data) to dst:
    // for an opened file by pread from the file, which never faults pages of the mapping in
    // (bulk copies out of a fresh mapping run at page-fault speed: 1.5 against 3.9 GB/s on this
    // project's 2-core dev machine), else by memcpy. Thread-safe. Throws Error when the file
    // cannot be read.
    void copy_out(const uint8_t* p, size_t n, uint8_t* dst) const;
    // Whether the n bytes at p are this reader's bytes.
    bool holds(const uint8_t* p, size_t n) const {
        return p >= base_ && n <= size_ && size_t(p - base_) <= size_ - n;
    }

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* find_tensor(std::string_view name) const;

private:
    GgufReader() = default;
    void parse();  // throws Error

    std::string path_;
    std::vector<uint8_t> owned_;     // from_bytes
    void* map_ = nullptr;            // mmap base (open of a file)
    int fd_ = -1;                    // the opened file (open), for copy_out
    const uint8_t* base_ = nullptr;
    uint64_t size_ = 0;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<GgufKv> kvs_;
    std::vector<GgufTensorInfo> tensors_;
};

// Human-readable dump for `jitllm inspect`: header, metadata (arrays longer than
// `max_array` elements abbreviated), tensor table (name, type, dims, offset, bytes).
std::string gguf_describe(const GgufReader& g, size_t max_array = 8);

}  // namespace jitllm
