// Human-readable dump of an opened GGUF (for `jitllm inspect`): header, metadata with long arrays
// abbreviated, tensor table and totals. Formatting only; the reader has validated everything.
#include <algorithm>

#include "core/error.h"
#include "core/utf8.h"
#include "gguf/gguf_reader.h"

namespace jitllm {
namespace {

// Quoted, with quotes, backslashes and control bytes escaped; other bytes (UTF-8) kept.
std::string quote(const std::string& s) {
    static constexpr CharEscape kEscapes[] = {{'"', "\\\""}, {'\\', "\\\\"}, {'\n', "\\n"}, {'\r', "\\r"}, {'\t', "\\t"}};
    std::string out = "\"";
    for (unsigned char ch : s) {
        if (const char* e = escape_of(ch, kEscapes)) out += e;
        else if (ch < 0x20 || ch == 0x7f) out += fmt::format("\\x{:02x}", ch);
        else out += char(ch);
    }
    return out + "\"";
}

std::string value_text(const GgufValue& v, size_t max_array) {
    switch (v.type) {
        case GgufValueType::U8: case GgufValueType::U16: case GgufValueType::U32:
        case GgufValueType::U64: return fmt::format("{}", v.u);
        case GgufValueType::I8: case GgufValueType::I16: case GgufValueType::I32:
        case GgufValueType::I64: return fmt::format("{}", v.i);
        // Shortest text that reads back to the stored f32 (1e-05, not 9.99999974737875e-06).
        case GgufValueType::F32: return fmt::format("{}", float(v.f));
        case GgufValueType::F64: return fmt::format("{}", v.f);
        case GgufValueType::BOOL: return v.b ? "true" : "false";
        case GgufValueType::STRING: return quote(v.str);
        case GgufValueType::ARRAY: {
            std::string s = "[";
            size_t shown = std::min(v.size(), max_array);
            for (size_t k = 0; k < shown; ++k) {
                if (k) s += ", ";
                s += value_text(v.element(k), max_array);
            }
            if (shown < v.size())
                s += fmt::format("{}... ({} elements)", shown ? ", " : "", v.size());
            return s + "]";
        }
    }
    return "?";
}

std::string type_text(const GgufValue& v) {
    if (v.type != GgufValueType::ARRAY) return gguf_value_type_name(v.type);
    return fmt::format("array of {}", gguf_value_type_name(v.elem_type));
}

std::string dims_text(const std::vector<uint64_t>& dims) {
    std::string s = "[";
    for (size_t d = 0; d < dims.size(); ++d) s += fmt::format("{}{}", d ? ", " : "", dims[d]);
    return s + "]";
}

std::string size_text(uint64_t bytes) {
    if (bytes < 1024) return fmt::format("{} B", bytes);
    if (bytes < (uint64_t(1) << 20)) return fmt::format("{:.2f} KiB", bytes / 1024.0);
    if (bytes < (uint64_t(1) << 30)) return fmt::format("{:.2f} MiB", bytes / 1048576.0);
    return fmt::format("{:.2f} GiB", bytes / 1073741824.0);
}

}  // namespace

std::string gguf_describe(const GgufReader& g, size_t max_array) {
    std::string s;
    s += fmt::format("file: {}\n", g.path());
    s += fmt::format("version: {}\n", g.version());
    s += fmt::format("alignment: {}\n", g.alignment());
    s += fmt::format("size: {} bytes, data section at {}\n", g.file_size(), g.data_offset());
    s += fmt::format("kv_count: {}\n", g.kvs().size());
    s += fmt::format("tensor_count: {}\n", g.tensors().size());
    s += "metadata:\n";
    for (const GgufKv& kv : g.kvs())
        s += fmt::format("  {} = {} ({})\n", kv.key, value_text(kv.value, max_array),
                         type_text(kv.value));

    s += "tensors:\n";
    const auto& ts = g.tensors();
    size_t w_name = 4, w_type = 4, w_dims = 4;
    for (const GgufTensorInfo& t : ts) {
        w_name = std::max(w_name, t.name.size());
        w_type = std::max(w_type, std::string(type_name(t.type)).size());
        w_dims = std::max(w_dims, dims_text(t.dims).size());
    }
    size_t w_idx = std::max<size_t>(1, fmt::format("{}", ts.empty() ? 0 : ts.size() - 1).size());
    s += fmt::format("  {:>{}}  {:<{}}  {:<{}}  {:<{}}  {:>12}  {:>12}\n", "#", w_idx, "name",
                     w_name, "type", w_type, "dims", w_dims, "offset", "bytes");
    uint64_t n_params = 0, n_bytes = 0;
    for (size_t k = 0; k < ts.size(); ++k) {
        const GgufTensorInfo& t = ts[k];
        s += fmt::format("  {:>{}}  {:<{}}  {:<{}}  {:<{}}  {:>12}  {:>12}\n", k, w_idx, t.name,
                         w_name, type_name(t.type), w_type, dims_text(t.dims), w_dims, t.offset,
                         t.n_bytes);
        n_params += t.n_elements;
        n_bytes += t.n_bytes;
    }
    s += fmt::format("total: {} tensors, {} parameters, {} bytes ({})\n", ts.size(), n_params,
                     n_bytes, size_text(n_bytes));
    return s;
}

}  // namespace jitllm
