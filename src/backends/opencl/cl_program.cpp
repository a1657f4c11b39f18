// OpenCL program builds and their disk cache (cl_program.h).
#include "backends/opencl/cl_program.h"

#include <xxhash.h>

#include <chrono>

namespace jitllm {

namespace {

constexpr CacheLayout kLayout{"opencl", "source.cl", "program.bin", "build_log.txt", ""};

VariantKey program_key(const std::string& unit, const std::string& options, const ClDeviceInfo& d) {
    XXH3_state_t* st = XXH3_createState();
    JITLLM_CHECK(st != nullptr, "XXH3_createState failed");
    XXH3_128bits_reset(st);
    for (const std::string& f : {fmt::format("jitllm-opencl-v{}", kClCacheVersion), unit, options,
                                 "opencl " + d.platform_version + " / " + d.driver, d.name}) {
        const uint64_t n = f.size();
        XXH3_128bits_update(st, &n, sizeof(n));
        XXH3_128bits_update(st, f.data(), f.size());
    }
    const XXH128_hash_t h = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    return {h.high64, h.low64};
}

std::string build_log(const ClApi& a, cl_program p, cl_device_id d) {
    size_t n = 0;
    if (a.clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
    std::string s(n, '\0');
    if (a.clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, s.data(), nullptr) != CL_SUCCESS) return "";
    while (!s.empty() && (s.back() == '\0' || s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

}  // namespace

ClPrograms::ClPrograms(ClContext& ctx, const CacheOptions& cache, std::string options)
    : ctx_(ctx), disk_(cache, kLayout), options_(std::move(options)) {}

ClPrograms::~ClPrograms() {
    for (auto& [k, p] : programs_) ctx_.api().clReleaseProgram(p);
}

std::string ClPrograms::unit_text(const Variant& v, const std::string& options) {
    std::string s = "// clBuildProgram options: " + options + "\n#define JITLLM_JIT 1\n";
    s += "#define KERNEL_NAME " + v.symbol + "\n";
    for (const auto& [k, val] : v.defines) s += "#define " + k + " " + val + "\n";
    return s + expand_source(v);
}

cl_program ClPrograms::from_binary(const std::vector<uint8_t>& bin) {
    const ClApi& a = ctx_.api();
    cl_device_id dev = ctx_.device();
    const size_t n = bin.size();
    const unsigned char* ptr = bin.data();
    cl_int status = CL_SUCCESS, r = CL_SUCCESS;
    cl_program p = a.clCreateProgramWithBinary(ctx_.context(), 1, &dev, &n, &ptr, &status, &r);
    if (r != CL_SUCCESS || status != CL_SUCCESS) {
        if (p) a.clReleaseProgram(p);
        return nullptr;
    }
    if (a.clBuildProgram(p, 1, &dev, options_.c_str(), nullptr, nullptr) != CL_SUCCESS) {
        a.clReleaseProgram(p);
        return nullptr;
    }
    return p;
}

cl_program ClPrograms::from_source(const std::string& text, std::string* log, cl_int* err) {
    const ClApi& a = ctx_.api();
    cl_device_id dev = ctx_.device();
    const char* src = text.c_str();
    const size_t len = text.size();
    cl_int r = CL_SUCCESS;
    cl_program p = a.clCreateProgramWithSource(ctx_.context(), 1, &src, &len, &r);
    if (r != CL_SUCCESS) a.throw_error("clCreateProgramWithSource", r);
    *err = a.clBuildProgram(p, 1, &dev, options_.c_str(), nullptr, nullptr);
    *log = build_log(a, p, dev);
    if (*err != CL_SUCCESS) {
        a.clReleaseProgram(p);
        return nullptr;
    }
    return p;
}

std::vector<uint8_t> ClPrograms::binary_of(cl_program p) {
    const ClApi& a = ctx_.api();
    size_t n = 0;
    if (a.clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof(n), &n, nullptr) != CL_SUCCESS || n == 0) return {};
    std::vector<uint8_t> bin(n);
    unsigned char* ptr = bin.data();
    if (a.clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) != CL_SUCCESS) return {};
    return bin;
}

cl_program ClPrograms::get(const Variant& v) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string text = unit_text(v, options_);
    const VariantKey key = program_key(text, options_, ctx_.info());
    if (auto it = programs_.find({key.hi, key.lo}); it != programs_.end()) return it->second;
    const std::string arch = ctx_.info().slug();
    cl_program p = nullptr;
    if (auto e = disk_.load(arch, v, key)) p = from_binary(e->cubin);
    if (p) {
        ++stats_.cached;
    } else {
        CacheEntry e;
        e.source = text;
        e.options = {options_};
        e.compiler = "opencl " + ctx_.info().platform_version + " / " + ctx_.info().driver;
        cl_int err = CL_SUCCESS;
        p = from_source(text, &e.log, &err);
        if (!p) {  // the source and the log kept on disk for the message (a temporary folder without the cache)
            const std::string dir = disk_.store(arch, v, key, e);
            fail_device("opencl: building {} failed ({}, {}: {})\n  source: {}/source.cl\n{}", v.display_name(),
                        ctx_.info().name, options_, cl_error_name(err), dir, e.log);
        }
        e.cubin = binary_of(p);
        if (!e.cubin.empty()) disk_.store(arch, v, key, e);
        ++stats_.built;
    }
    programs_[{key.hi, key.lo}] = p;
    stats_.wall_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return p;
}

}  // namespace jitllm
