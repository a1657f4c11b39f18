// The CUDA driver API, loaded at run time: dlopen("libcuda.so.1") + cuGetProcAddress. Nothing
// from the toolkit is linked, so the binary starts (and runs on the CPU) without a driver.
// Types come from <cuda.h> (headers only). Not a device abstraction: see cuda_device.h.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "core/error.h"

// Every driver entry point we use, by its <cuda.h> name. Several are macros there (cuMemAlloc ->
// cuMemAlloc_v2), so a member declared as `cuMemAlloc` is really `cuMemAlloc_v2` and has the
// signature of the header we build against; the lookup asks cuGetProcAddress for that version.
// clang-format off
#define JITLLM_CUDA_DRIVER_FUNCS(X)                                                          \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                  \
    X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)          \
    X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)           \
    X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree)      \
    X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)              \
    X(cuMemcpyDtoDAsync) X(cuMemsetD8Async) X(cuMemsetD32Async) X(cuMemAllocHost)          \
    X(cuMemFreeHost) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuModuleGetGlobal) \
    X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuStreamCreate)        \
    X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy)           \
    X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuStreamBeginCapture)   \
    X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphDestroy) \
    X(cuGraphExecDestroy) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuEventRecordWithFlags)            \
    X(cuLaunchKernelEx) X(cuOccupancyMaxActiveClusters) X(cuDeviceGetPCIBusId)         \
    X(cuTensorMapEncodeTiled)
// clang-format on

namespace jitllm {

struct CudaDriver {
#define JITLLM_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
    JITLLM_CUDA_DRIVER_FUNCS(JITLLM_CUDA_MEMBER)
#undef JITLLM_CUDA_MEMBER

    std::string library;  // the file dlopen'ed, e.g. "libcuda.so.1"
    int version = 0;      // cuDriverGetVersion: 1000 * major + 10 * minor (13000 = CUDA 13.0)

    // The process-wide driver: dlopen + symbol lookup + cuInit(0), done once. Throws
    // Error(Kind::Device) with a sentence ("cuda backend unavailable: libcuda.so.1 not found
    // (dlopen: ...)", "no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE: ...") on every call when
    // that failed. try_load() returns nullptr and the sentence instead.
    static const CudaDriver& load();
    static const CudaDriver* try_load(std::string* why);
    // Opens a specific library (tests point it at the toolkit's stub); not cached; throws.
    static std::unique_ptr<CudaDriver> open(const std::string& library);

    // "CUDA_ERROR_OUT_OF_MEMORY: out of memory" (numeric when the name is unknown).
    std::string describe(CUresult r) const;
    [[noreturn]] void throw_error(const char* call, CUresult r) const;
};

}  // namespace jitllm

// Runs a driver call through `drv` (a CudaDriver) and throws Error(Kind::Device,
// "<call text>: <error name>: <error string>") when it fails:
//   JITLLM_CUDA_TRY(drv, cuMemcpyHtoD(dst, src, n));
#define JITLLM_CUDA_TRY(drv, call) JITLLM_API_TRY(drv, call, #call, CUDA_SUCCESS)
