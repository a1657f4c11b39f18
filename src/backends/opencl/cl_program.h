// OpenCL programs: a variant's unit text (its defines, then the embedded source with its includes
// inlined) built with clBuildProgram for one device, and the program binaries kept on disk under
// the JIT cache's content-hash scheme (jit/disk_cache.h):
//   KEY = XXH3-128 over, each as its byte length (uint64, little-endian) then its bytes:
//     1. "jitllm-opencl-v<kClCacheVersion>"   2. the unit text (unit_text() below)
//     3. the build options                    4. "opencl " + platform version + " / " + driver version
//     5. the device name
//   LAYOUT: <dir>/opencl/<device slug>/<flat name>.<first 16 hex digits of the key>/
//     source.cl (the unit text), options.txt (key, binary size and hash, options), program.bin
//     (clGetProgramInfo's CL_PROGRAM_BINARIES), build_log.txt
// A binary the driver refuses (clCreateProgramWithBinary / clBuildProgram) is rebuilt from source
// and stored again.
#pragma once

#include <map>
#include <string>

#include "backends/opencl/cl_device.h"
#include "jit/disk_cache.h"
#include "jit/variant.h"

namespace jitllm {

inline constexpr int kClCacheVersion = 1;

struct ClProgramStats {
    double wall_ms = 0;
    int built = 0, cached = 0;
};

class ClPrograms {
public:
    ClPrograms(ClContext& ctx, const CacheOptions& cache, std::string options);
    ~ClPrograms();
    ClPrograms(const ClPrograms&) = delete;
    ClPrograms& operator=(const ClPrograms&) = delete;

    // What clBuildProgram builds for v, the form --print-kernel shows: a comment line with the
    // build options, one `#define K V` line each for JITLLM_JIT, KERNEL_NAME (the symbol) and the
    // variant's defines, then expand_source(v).
    static std::string unit_text(const Variant& v, const std::string& options);
    // The built program of v (memory, then disk, then clBuildProgram). Throws Error(Device) with
    // the build log when the driver refuses the source.
    cl_program get(const Variant& v);
    const ClProgramStats& stats() const { return stats_; }
    const std::string& options() const { return options_; }

private:
    cl_program from_binary(const std::vector<uint8_t>& bin);
    // nullptr (and *err) when the driver refuses it; *log: the build log either way
    cl_program from_source(const std::string& text, std::string* log, cl_int* err);
    std::vector<uint8_t> binary_of(cl_program p);

    ClContext& ctx_;
    DiskCache disk_;
    std::string options_;
    std::map<std::pair<uint64_t, uint64_t>, cl_program> programs_;
    ClProgramStats stats_;
};

}  // namespace jitllm
