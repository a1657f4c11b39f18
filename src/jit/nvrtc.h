// NVRTC loaded at run time (dlopen; nothing from the toolkit is linked): version, compile CUDA C++
// to a CUBIN for one exact arch, optional PTX, and the ptxas resource report parsed from the log.
// Knows nothing about variants or caching: see jit_compiler.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jitllm {

struct NvrtcHeader {
    std::string name;  // as written in #include "..."
    std::string text;
};

struct NvrtcOutput {
    bool ok = false;
    std::vector<uint8_t> cubin;  // ELF; empty when !ok
    std::string ptx;             // only when asked for
    std::string log;             // compiler log (errors, warnings, ptxas -v lines)
};

// Per-kernel figures reported by ptxas (-v) in the compile log; -1 when absent.
struct ResourceUsage {
    int registers = -1;
    int spill_stores = -1;  // bytes
    int spill_loads = -1;   // bytes
    int stack_bytes = -1;
    int shared_bytes = -1;  // static shared memory
};

class Nvrtc {
public:
    // The process-wide library, loaded once. Tries $JITLLM_NVRTC_PATH, then libnvrtc.so.13,
    // libnvrtc.so, /usr/local/cuda/lib64/libnvrtc.so.13, /usr/local/cuda/lib64/libnvrtc.so.
    // Throws Error(Kind::Device): "cuda backend unavailable: libnvrtc not found (tried: ...)".
    static const Nvrtc& load();

    const std::string& version() const { return version_; }  // "13.0"
    // Version plus the library's file size, "13.0 (109338064 bytes)": nvrtcVersion has no patch
    // level, and a patch release may generate different code. Part of every cache key.
    const std::string& fingerprint() const { return fingerprint_; }
    const std::string& library() const { return library_; }  // path of the loaded file
    // Toolkit include dir holding cuda_fp16.h (NVRTC 13 has no builtin copy), found next to the
    // loaded library (<lib>/../include), else /usr/local/cuda/include, $CUDA_HOME/include,
    // $CUDA_PATH/include; empty when none has it.
    const std::string& include_dir() const { return include_dir_; }
    std::vector<int> supported_archs() const;  // e.g. 75 80 86 ... 120

    // Compiles `source` (named `file` in diagnostics and line info). `options` are passed as
    // given; `headers` are served to #include "name" without touching the disk. Thread-safe:
    // each call uses its own program.
    NvrtcOutput compile(const std::string& source, const std::string& file,
                        const std::vector<std::string>& options,
                        const std::vector<NvrtcHeader>& headers = {}, bool want_ptx = false) const;

private:
    Nvrtc() = default;
    struct Api;
    const Api* api_ = nullptr;
    std::string version_, fingerprint_, library_, include_dir_;
};

// Reads the "ptxas info" lines for `symbol` from a log compiled with --ptxas-options=-v.
ResourceUsage parse_ptxas_usage(const std::string& log, const std::string& symbol);

}  // namespace jitllm
