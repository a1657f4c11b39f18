// A kernel variant: one source file + the symbol name we give its entry point + its defines.
// Names it for logs (display), for the cache directory (flat) and hashes it (the key; defined
// exactly in disk_cache.h). Does not compile anything: see jit_compiler.h.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace jitllm {

struct Variant {
    std::string source;  // path under src/kernels, e.g. "cuda/gemv.cu"
    std::string symbol;  // entry point name, passed as -DKERNEL_NAME=<symbol>
    std::vector<std::pair<std::string, std::string>> defines;  // in display order
    std::string arch;                        // "" = the compiler's device arch; else e.g. "sm_80"
    std::vector<std::string> extra_options;  // added after the standard options
    bool requires_arch_suffix_a = false;     // needs sm_90a-style arch-specific features
    std::string source_text;  // when non-empty, used instead of the embedded `source` (tests)

    Variant() = default;
    Variant(std::string source_, std::string symbol_)
        : source(std::move(source_)), symbol(std::move(symbol_)) {}

    // Sets (or replaces) a define; the name is the kernel's own macro name.
    Variant& set(const std::string& name, const std::string& value);
    Variant& set(const std::string& name, const char* value) {
        return set(name, std::string(value));
    }
    template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
    Variant& set(const std::string& name, T value) {
        if constexpr (std::is_same_v<T, bool>)
            return set(name, std::string(value ? "1" : "0"));
        else
            return set(name, std::to_string(value));
    }

    // Whether a define of that name is set.
    bool has(const std::string& name) const;

    // `symbol<K=V,...>` in define order, e.g. "attn_qkv__gemv_warp_q8_0<D=4096,BLOCK=256>".
    std::string display_name() const;
    // `symbol.K-V.K-V` with characters outside [A-Za-z0-9_.-] replaced by '_', at most 120
    // characters (the hash that follows in the cache path keeps truncated names unique).
    std::string flat_name() const;
    // The arch actually compiled for: `arch` or `device_arch`, plus "a" when required.
    std::string target_arch(const std::string& device_arch) const;
};

struct VariantKey {
    uint64_t hi = 0, lo = 0;
    std::string hex() const;    // 32 hex digits
    std::string hex16() const;  // first 16 of them (the cache directory suffix)
    bool operator==(const VariantKey& o) const { return hi == o.hi && lo == o.lo; }
};

// The source with every `#include "X"` replaced, recursively, by the text of the embedded file
// <backend>/X (backend = first path component of `v.source`, e.g. "cuda"), each file once
// (#pragma once semantics; those lines are dropped), with #line markers so diagnostics name the
// original files. Angle includes (<cuda_fp16.h>) are left to the compiler.
std::string expand_source(const Variant& v);

// NVRTC options for `v` on `arch` (already target_arch), without defines and include dirs:
// -arch=<arch> -default-device -std=c++17 -fmad=true -lineinfo --ptxas-options=-v
// -DJITLLM_JIT -DKERNEL_NAME=<symbol> then v.extra_options.
std::vector<std::string> base_options(const Variant& v, const std::string& arch);
// "-DK=V" for each define, sorted by name.
std::vector<std::string> define_options(const Variant& v);

// The unit NVRTC compiles for `v` on `arch` (already target_arch) as one self-contained text, the
// form --print-kernel shows: a comment line with the options that are not defines, then one
// `#define K V` per -D option in the order the compiler reads them (JITLLM_JIT, KERNEL_NAME = the
// symbol, the variant's defines), then expand_source(v). Compiled alone with the options of that
// comment it gives the module the JIT builds, whose entry point is v.symbol. (The JIT adds
// -I<toolkit include> where NVRTC finds one; the kernels include no toolkit header.)
std::string unit_source(const Variant& v, const std::string& arch);

// The cache key (see disk_cache.h for the exact definition).
VariantKey variant_key(const std::string& expanded_source, const Variant& v,
                       const std::string& arch, const std::string& compiler_id);

}  // namespace jitllm
