// The JIT: variants -> CUBINs through two cache levels (in-memory map, then disk_cache.h) and
// NVRTC, compiling misses in parallel. Does not load modules or touch a device (the CUDA
// backend does), so it runs, and is tested, without a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "jit/disk_cache.h"
#include "jit/nvrtc.h"
#include "jit/variant.h"

namespace jitllm {

struct CompiledKernel {
    Variant variant;
    std::string arch;  // target arch compiled for ("sm_90", "sm_90a")
    VariantKey key;
    std::vector<uint8_t> cubin;
    bool from_cache = false;  // memory or disk
    double compile_ms = 0;    // NVRTC time; 0 for a cache hit
    std::string log;          // NVRTC log (from the cache entry on a disk hit)
    std::string source_path;  // <entry>/source.cu; "" when the disk cache is off
    ResourceUsage usage;      // parsed from the ptxas -v lines of `log`
};

struct JitStats {
    int memory_hits = 0;
    int disk_hits = 0;
    int compiles = 0;
    double compile_ms = 0;  // sum over compiles (they overlap when parallel)
    double wall_ms = 0;     // sum over compile_all() calls
};

struct JitOptions {
    CacheOptions cache;  // disk on/off and directory
    int threads = 0;     // 0 = std::thread::hardware_concurrency()
};

class JitCompiler {
public:
    // `arch` is the device's ("sm_90"). Loads NVRTC (its version is part of every key), so
    // throws Error(Kind::Device) when it is missing.
    explicit JitCompiler(std::string arch, JitOptions opts = {});

    // Results in input order; duplicates are compiled once. When any variant fails to compile,
    // the others still finish and are cached, then the first failure is thrown:
    //   cuda: compiling <display> failed (nvrtc 13.0, sm_90)
    //     source: <entry>/source.cu
    //   <log>
    // With JITLLM_ASSERT_NO_COMPILE=1 any needed compile is an error instead.
    std::vector<CompiledKernel> compile_all(const std::vector<Variant>& variants);
    CompiledKernel compile(const Variant& v);

    // Key and cache directory of a variant without compiling it (`kernels show`).
    VariantKey key(const Variant& v) const;
    std::string entry_dir(const Variant& v) const;

    JitStats stats() const;
    const std::string& arch() const { return arch_; }
    const Nvrtc& nvrtc() const { return nvrtc_; }
    const DiskCache& disk_cache() const { return disk_; }

private:
    struct Job;
    void run_job(Job& job);
    std::vector<std::string> all_options(const Variant& v, const std::string& arch) const;

    std::string arch_;
    JitOptions opts_;
    const Nvrtc& nvrtc_;
    DiskCache disk_;
    bool assert_no_compile_;
    mutable std::mutex mu_;  // guards memory_ and stats_
    std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<const CompiledKernel>> memory_;
    JitStats stats_;
};

}  // namespace jitllm
