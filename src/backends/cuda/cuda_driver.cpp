// Loading libcuda at run time. Symbols are resolved with cuGetProcAddress (CUDA 12.5+ signature,
// asking for the CUDA_VERSION of our headers so each pointer matches its declared type); drivers
// without it fall back to dlsym of the versioned export names (cuMemAlloc_v2, ...).
#include "backends/cuda/cuda_driver.h"

#include <dlfcn.h>

#include "core/load_once.h"

namespace jitllm {

namespace {

#define JITLLM_CUDA_STR2(x) #x
#define JITLLM_CUDA_STR(x) JITLLM_CUDA_STR2(x)  // expands the <cuda.h> macro: "cuMemAlloc_v2"

std::unique_ptr<CudaDriver> open_driver(const std::string& library) {
    void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* e = dlerror();
        fail_device("cuda backend unavailable: {} not found (dlopen: {})", library,
                    e ? e : "unknown error");
    }
    // The handle is never closed: drivers do not support being unloaded while in use.
    auto d = std::make_unique<CudaDriver>();
    d->library = library;
    auto gpa = reinterpret_cast<decltype(&::cuGetProcAddress)>(dlsym(h, "cuGetProcAddress_v2"));
    auto lookup = [&](const char* base, const char* exported) -> void* {
        if (gpa) {
            void* p = nullptr;
            CUdriverProcAddressQueryResult status{};
            if (gpa(base, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) ==
                    CUDA_SUCCESS &&
                p)
                return p;
        }
        return dlsym(h, exported);
    };
    std::string missing;
#define JITLLM_CUDA_RESOLVE(name)                                                        \
    d->name = reinterpret_cast<decltype(d->name)>(lookup(#name, JITLLM_CUDA_STR(name))); \
    if (!d->name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
    JITLLM_CUDA_DRIVER_FUNCS(JITLLM_CUDA_RESOLVE)
#undef JITLLM_CUDA_RESOLVE
    if (!missing.empty())
        fail_device(
            "cuda backend unavailable: {} lacks driver functions {}; hint: update the "
            "NVIDIA driver (this build needs CUDA {}.{})",
            library, missing, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);

    if (CUresult r = d->cuInit(0); r != CUDA_SUCCESS) {
        if (r == CUDA_ERROR_NO_DEVICE) fail_device("no CUDA device: cuInit: {}", d->describe(r));
        fail_device("cuda backend unavailable: cuInit: {} (driver library {})", d->describe(r),
                    library);
    }
    JITLLM_CUDA_TRY(*d, cuDriverGetVersion(&d->version));
    return d;
}

}  // namespace

std::unique_ptr<CudaDriver> CudaDriver::open(const std::string& library) {
    return open_driver(library);
}

const CudaDriver* CudaDriver::try_load(std::string* why) {
    return load_once<CudaDriver>(why, [] { return open_driver("libcuda.so.1"); });
}

const CudaDriver& CudaDriver::load() { return load_or_throw(&CudaDriver::try_load); }

std::string CudaDriver::describe(CUresult r) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (!cuGetErrorName || cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) {
        // The stub library and broken installs cannot name their own errors; these are the
        // ones cuInit gives there.
        switch (r) {
            case CUDA_ERROR_STUB_LIBRARY:
                return "CUDA_ERROR_STUB_LIBRARY: this libcuda is the toolkit's link stub, not a "
                       "driver";
            case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE: no CUDA-capable device";
            default: return fmt::format("CUresult {}", static_cast<int>(r));
        }
    }
    if (!cuGetErrorString || cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) return name;
    return fmt::format("{}: {}", name, text);
}

void CudaDriver::throw_error(const char* call, CUresult r) const {
    throw Error(Error::Kind::Device, fmt::format("{}: {}", call, describe(r)));
}

}  // namespace jitllm
