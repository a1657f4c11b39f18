// The one table of ggml tensor types: names, block sizes, bytes per block.
#include "core/dtype.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace jitllm {
namespace {

// Block layouts follow ggml (ggml-common.h): QK4_0 = QK8_0 = 32, QK_K = 256.
const TypeTraits kTypes[] = {
    {GgmlType::F32, "f32", 1, 4, true},
    {GgmlType::F16, "f16", 1, 2, true},
    {GgmlType::Q4_0, "q4_0", 32, 18, true},
    {GgmlType::Q4_1, "q4_1", 32, 20, true},
    {GgmlType::Q5_0, "q5_0", 32, 22, true},
    {GgmlType::Q5_1, "q5_1", 32, 24, true},
    {GgmlType::Q8_0, "q8_0", 32, 34, true},
    {GgmlType::Q8_1, "q8_1", 32, 36, false},
    {GgmlType::Q2_K, "q2_K", 256, 84, false},
    {GgmlType::Q3_K, "q3_K", 256, 110, false},
    {GgmlType::Q4_K, "q4_K", 256, 144, true},
    {GgmlType::Q5_K, "q5_K", 256, 176, true},
    {GgmlType::Q6_K, "q6_K", 256, 210, true},
    {GgmlType::Q8_K, "q8_K", 256, 292, false},
    {GgmlType::IQ2_XXS, "iq2_xxs", 256, 66, false},
    {GgmlType::IQ2_XS, "iq2_xs", 256, 74, false},
    {GgmlType::IQ3_XXS, "iq3_xxs", 256, 98, false},
    {GgmlType::IQ1_S, "iq1_s", 256, 50, false},
    {GgmlType::IQ4_NL, "iq4_nl", 32, 18, false},
    {GgmlType::IQ3_S, "iq3_s", 256, 110, false},
    {GgmlType::IQ2_S, "iq2_s", 256, 82, false},
    {GgmlType::IQ4_XS, "iq4_xs", 256, 136, false},
    {GgmlType::I8, "i8", 1, 1, false},
    {GgmlType::I16, "i16", 1, 2, false},
    {GgmlType::I32, "i32", 1, 4, false},
    {GgmlType::I64, "i64", 1, 8, false},
    {GgmlType::F64, "f64", 1, 8, false},
    {GgmlType::IQ1_M, "iq1_m", 256, 56, false},
    {GgmlType::BF16, "bf16", 1, 2, true},
    {GgmlType::TQ1_0, "tq1_0", 256, 54, false},
    {GgmlType::TQ2_0, "tq2_0", 256, 66, false},
    {GgmlType::MXFP4, "mxfp4", 32, 17, false},
};

}  // namespace

std::optional<TypeTraits> type_traits_find(uint32_t id) {
    for (const auto& t : kTypes)
        if (uint32_t(t.type) == id) return t;
    return std::nullopt;
}

const TypeTraits& type_traits(GgmlType t) {
    for (const auto& tt : kTypes)
        if (tt.type == t) return tt;
    JITLLM_CHECK(false, "unknown GgmlType {}", uint32_t(t));
}

std::optional<GgmlType> type_from_name(std::string_view name) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    for (const auto& t : kTypes) {
        std::string tn = t.name;
        std::transform(tn.begin(), tn.end(), tn.begin(),
                       [](unsigned char c) { return char(std::tolower(c)); });
        if (tn == lower) return t.type;
    }
    return std::nullopt;
}

std::string supported_type_names() {
    std::string s;
    for (const auto& t : kTypes) {
        if (!t.supported) continue;
        if (!s.empty()) s += ' ';
        std::string n = t.name;
        std::transform(n.begin(), n.end(), n.begin(),
                       [](unsigned char c) { return char(std::toupper(c)); });
        s += n;
    }
    return s;
}

size_t row_bytes(GgmlType t, uint64_t n) {
    const auto& tt = type_traits(t);
    JITLLM_CHECK(n % tt.block_size == 0, "{} elements not a multiple of block {}", n,
                 tt.block_size);
    return size_t(n / tt.block_size) * tt.type_size;
}

}  // namespace jitllm
