// Tensor storage types as GGUF/ggml numbers them, and their block layout (one table).
// Does not dequantize: see src/quant/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jitllm {

// Values are the ggml type ids stored in GGUF tensor infos.
enum class GgmlType : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
    IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
    TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

struct TypeTraits {
    GgmlType type;
    const char* name;       // as ggml spells it: "f32", "q8_0", "q4_K"
    uint32_t block_size;    // elements per block (1 for plain types)
    uint32_t type_size;     // bytes per block
    bool supported;         // jitllm can compute with it (dequant + dot on the CPU)
};

// Traits for a type id read from a file; nullopt when the id is unknown to ggml.
std::optional<TypeTraits> type_traits_find(uint32_t id);
// Traits for a known type (our own bug if unknown).
const TypeTraits& type_traits(GgmlType t);
inline const char* type_name(GgmlType t) { return type_traits(t).name; }
// Parse "f16", "q8_0", "Q4_K" ... (case-insensitive); nullopt if unknown.
std::optional<GgmlType> type_from_name(std::string_view name);
// Space-separated list of the types jitllm computes with, for error messages.
std::string supported_type_names();
// Bytes of a row of n elements; PRECOND: n % block_size == 0.
size_t row_bytes(GgmlType t, uint64_t n);

}  // namespace jitllm
