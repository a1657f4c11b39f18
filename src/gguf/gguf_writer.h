// GGUF writer (version 3): metadata and tensors in memory, or tensors whose rows a function
// produces while write() streams them (a file larger than memory); written atomically (temp file
// + rename, so a failure leaves no partial file). Used by fixtures, tests and `jitllm synth`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "gguf/gguf_reader.h"

namespace jitllm {

class GgufWriter {
public:
    explicit GgufWriter(uint64_t alignment = 32) : alignment_(alignment) {}

    // Metadata; setting a key twice replaces the value (keeps the first position).
    void set(const std::string& key, GgufValue v);
    void set_u32(const std::string& key, uint32_t v);
    void set_i32(const std::string& key, int32_t v);
    void set_u64(const std::string& key, uint64_t v);
    void set_f32(const std::string& key, float v);
    void set_bool(const std::string& key, bool v);
    void set_string(const std::string& key, const std::string& v);
    void set_string_array(const std::string& key, const std::vector<std::string>& v);
    void set_f32_array(const std::string& key, const std::vector<float>& v);
    void set_i32_array(const std::string& key, const std::vector<int32_t>& v);

    // Tensor with ggml-order dims; `data` holds exactly row_bytes(type, dims[0]) * rows bytes.
    void add_tensor(const std::string& name, GgmlType type, const std::vector<uint64_t>& dims,
                    std::vector<uint8_t> data);

    // Tensor whose bytes fill(r0, r1, out) writes when the file is written: rows [r0, r1) of the
    // rows = dims[1] * dims[2] * ... (row_bytes(type, dims[0]) each) into out, a bounded run of
    // rows at a time (about 64 MiB), in order.
    using FillRows = std::function<void(uint64_t r0, uint64_t r1, uint8_t* out)>;
    void add_tensor_rows(const std::string& name, GgmlType type, const std::vector<uint64_t>& dims,
                         FillRows fill);

    std::vector<uint8_t> to_bytes() const;
    void write(const std::string& path) const;  // throws Error on I/O failure

private:
    struct Tensor {
        std::string name;
        GgmlType type;
        std::vector<uint64_t> dims;
        std::vector<uint8_t> data;  // or, with fill, produced at write time
        FillRows fill;
        uint64_t n_bytes = 0;
    };
    void add(Tensor t);
    uint64_t alignment_;
    std::vector<GgufKv> kvs_;
    std::vector<Tensor> tensors_;
};

}  // namespace jitllm
