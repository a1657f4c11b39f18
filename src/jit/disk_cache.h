// On-disk kernel cache: one directory per compiled variant, written atomically. Does not compile
// and holds nothing in memory (jit_compiler.h does both).
//
// KEY (variant_key() in variant.cpp) = XXH3-128 over six fields, each fed as its byte length
// (uint64, little-endian) followed by its bytes:
//   1. "jitllm-jit-v<kCacheFormatVersion>"
//   2. the expanded source (expand_source(): the .cu text with every #include "common/..."
//      inlined recursively from the embedded sources or $JITLLM_KERNEL_DIR, with #line markers)
//   3. the defines sorted by name, one "-DNAME=VALUE\n" each
//   4. the other NVRTC options, one per line with "\n" after each, in order (base_options():
//      -arch=<arch> ... -DJITLLM_JIT -DKERNEL_NAME=<symbol>, then the variant's extra options);
//      the toolkit include dir (-I) is not hashed (its headers ship with NVRTC: see field 5)
//   5. "nvrtc " + Nvrtc::fingerprint(): "<major>.<minor> (<library file size> bytes)", since
//      nvrtcVersion reports no patch level
//   6. the target arch actually compiled for ("sm_90", "sm_90a")
// Bump kCacheFormatVersion whenever what an entry holds or means changes without any of those
// inputs changing: the layout or options.txt format below, the cubin post-processing, or the
// set of headers resolved from outside the embedded sources.
//
// LAYOUT: <dir>/cuda/<arch>/<flat name>.<first 16 hex digits of the key>/
//   source.cu        the expanded source exactly as compiled (also written when compiling failed)
//   options.txt      "# key: <32 hex>", "# cubin: <n> bytes, xxh3-64 <16 hex>" (or "# cubin:
//                    none"), a few other "# " lines, then every NVRTC option, one per line
//   kernel.cubin     the ELF (absent when compiling failed)
//   compile_log.txt  NVRTC's log (errors, warnings, ptxas -v resource lines)
// An entry is built in <dir>/tmp/<unique>/ and renamed into place; when another process wins
// the race its entry is used. An entry whose key, cubin size or cubin hash does not match
// options.txt is ignored and replaced by the next store.
// <dir> = $JITLLM_CACHE_DIR, else $XDG_CACHE_HOME/jitllm, else $HOME/.cache/jitllm.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jit/variant.h"

namespace jitllm {

inline constexpr int kCacheFormatVersion = 1;

std::string default_cache_dir();

struct CacheOptions {
    bool disk = true;  // false (--no-kernel-cache): nothing is read from or written to <dir>
    std::string dir;   // "" = default_cache_dir()
};

struct CacheEntry {
    std::string source;                // expanded source
    std::vector<std::string> options;  // every NVRTC option, in order
    std::string compiler;              // "nvrtc 13.0"
    std::string log;
    std::vector<uint8_t> cubin;  // empty: the compile failed
};

// What an entry's files are called and how its binary is checked: the CUDA JIT's (above) by
// default; the OpenCL backend keeps its program binaries under opencl/ in the same scheme
// (backends/opencl/cl_program.h).
struct CacheLayout {
    const char* backend = "cuda";           // <dir>/<backend>/<arch>/...
    const char* source_file = "source.cu";
    const char* binary_file = "kernel.cubin";
    const char* log_file = "compile_log.txt";
    const char* magic = "\x7f" "ELF";      // the binary's first bytes ("": not checked)
};

class DiskCache {
public:
    explicit DiskCache(CacheOptions opts = {}, CacheLayout layout = {});
    bool enabled() const { return enabled_; }
    const std::string& dir() const { return dir_; }

    // <dir>/<backend>/<arch>/<flat>.<hash16>
    std::string entry_dir(const std::string& arch, const Variant& v, const VariantKey& key) const;
    // A complete, verified entry (cubin and log; source not read), or nullopt when absent,
    // failed, partial or corrupt. Always nullopt when disabled.
    std::optional<CacheEntry> load(const std::string& arch, const Variant& v,
                                   const VariantKey& key) const;
    // Writes `e` atomically and returns the entry directory (the winner's, on a lost race).
    // Disabled: a successful entry is not written and "" is returned; a failed one is written
    // under the system temp dir so its source.cu can still be shown. Throws Error when the
    // directory cannot be written.
    std::string store(const std::string& arch, const Variant& v, const VariantKey& key,
                      const CacheEntry& e) const;

private:
    bool enabled_;
    std::string dir_;
    CacheLayout layout_;
};

}  // namespace jitllm
