// Loading the OpenCL ICD loader at run time (cl_api.h).
#include "backends/opencl/cl_api.h"

#include <dlfcn.h>

#include "core/load_once.h"

namespace jitllm {

namespace {

std::unique_ptr<ClApi> open_api(const std::string& library) {
    void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* e = dlerror();
        fail_device("opencl backend unavailable: {} not found (dlopen: {}); hint: install an OpenCL ICD loader "
                    "and a driver (Debian: ocl-icd-libopencl1 and pocl-opencl-icd for the CPU)",
                    library, e ? e : "unknown error");
    }
    // never closed: drivers keep threads and handlers that outlive any unload
    auto a = std::make_unique<ClApi>();
    a->library = library;
    std::string missing;
#define JITLLM_CL_RESOLVE(name)                                             \
    a->name = reinterpret_cast<decltype(a->name)>(dlsym(h, #name));         \
    if (!a->name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
    JITLLM_CL_FUNCS(JITLLM_CL_RESOLVE)
#undef JITLLM_CL_RESOLVE
    if (!missing.empty())
        fail_device("opencl backend unavailable: {} lacks the OpenCL 1.2 functions {}", library, missing);
    return a;
}

}  // namespace

const ClApi* ClApi::try_load(std::string* why) {
    return load_once<ClApi>(why, [] { return open_api("libOpenCL.so.1"); });
}

const ClApi& ClApi::load() { return load_or_throw(&ClApi::try_load); }

void ClApi::throw_error(const char* call, cl_int r) const {
    throw Error(Error::Kind::Device, fmt::format("{}: {}", call, cl_error_name(r)));
}

std::string cl_error_name(cl_int r) {
    switch (r) {
#define JITLLM_CL_ERR(e) \
    case e: return #e;
        JITLLM_CL_ERR(CL_DEVICE_NOT_FOUND) JITLLM_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
        JITLLM_CL_ERR(CL_COMPILER_NOT_AVAILABLE) JITLLM_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        JITLLM_CL_ERR(CL_OUT_OF_RESOURCES) JITLLM_CL_ERR(CL_OUT_OF_HOST_MEMORY)
        JITLLM_CL_ERR(CL_PROFILING_INFO_NOT_AVAILABLE) JITLLM_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
        JITLLM_CL_ERR(CL_MEM_COPY_OVERLAP) JITLLM_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET) JITLLM_CL_ERR(CL_INVALID_VALUE)
        JITLLM_CL_ERR(CL_INVALID_DEVICE_TYPE) JITLLM_CL_ERR(CL_INVALID_PLATFORM) JITLLM_CL_ERR(CL_INVALID_DEVICE)
        JITLLM_CL_ERR(CL_INVALID_CONTEXT) JITLLM_CL_ERR(CL_INVALID_QUEUE_PROPERTIES)
        JITLLM_CL_ERR(CL_INVALID_COMMAND_QUEUE) JITLLM_CL_ERR(CL_INVALID_HOST_PTR)
        JITLLM_CL_ERR(CL_INVALID_MEM_OBJECT) JITLLM_CL_ERR(CL_INVALID_BINARY) JITLLM_CL_ERR(CL_INVALID_BUILD_OPTIONS)
        JITLLM_CL_ERR(CL_INVALID_PROGRAM) JITLLM_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE)
        JITLLM_CL_ERR(CL_INVALID_KERNEL_NAME) JITLLM_CL_ERR(CL_INVALID_KERNEL)
        JITLLM_CL_ERR(CL_INVALID_ARG_INDEX) JITLLM_CL_ERR(CL_INVALID_ARG_VALUE) JITLLM_CL_ERR(CL_INVALID_ARG_SIZE)
        JITLLM_CL_ERR(CL_INVALID_KERNEL_ARGS) JITLLM_CL_ERR(CL_INVALID_WORK_DIMENSION)
        JITLLM_CL_ERR(CL_INVALID_WORK_GROUP_SIZE) JITLLM_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
        JITLLM_CL_ERR(CL_INVALID_GLOBAL_OFFSET) JITLLM_CL_ERR(CL_INVALID_EVENT_WAIT_LIST)
        JITLLM_CL_ERR(CL_INVALID_EVENT) JITLLM_CL_ERR(CL_INVALID_OPERATION) JITLLM_CL_ERR(CL_INVALID_BUFFER_SIZE)
        JITLLM_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
#undef JITLLM_CL_ERR
        case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";  // cl_khr_icd: the loader found no driver
        default: return fmt::format("OpenCL error {}", r);
    }
}

}  // namespace jitllm
