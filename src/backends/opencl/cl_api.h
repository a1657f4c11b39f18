// The OpenCL API, loaded at run time: dlopen("libOpenCL.so.1") (the ICD loader, which finds the
// vendors' drivers through /etc/OpenCL/vendors or $OCL_ICD_VENDORS). Nothing is linked, so the
// binary starts without OpenCL. Types come from the Khronos headers (Debian opencl-c-headers).
// Not a device abstraction: see cl_device.h.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
// clCreateCommandQueue: the 1.2 entry point every loader and driver has (2.0's WithProperties is not
// in 1.2 drivers)
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>

#include <memory>
#include <string>

#include "core/error.h"

// Every entry point we use, by its <CL/cl.h> name (all OpenCL 1.2 core: every loader exports them).
// clang-format off
#define JITLLM_CL_FUNCS(X)                                                                   \
    X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo)          \
    X(clCreateContext) X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue) \
    X(clCreateBuffer) X(clReleaseMemObject) X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer)  \
    X(clEnqueueCopyBuffer) X(clEnqueueFillBuffer) X(clCreateProgramWithSource)             \
    X(clCreateProgramWithBinary) X(clBuildProgram) X(clGetProgramBuildInfo)                \
    X(clGetProgramInfo) X(clReleaseProgram) X(clCreateKernel) X(clReleaseKernel)           \
    X(clSetKernelArg) X(clGetKernelWorkGroupInfo) X(clEnqueueNDRangeKernel) X(clFinish)    \
    X(clFlush) X(clWaitForEvents) X(clGetEventProfilingInfo) X(clReleaseEvent)             \
    X(clEnqueueMapBuffer) X(clEnqueueUnmapMemObject)
// clang-format on

namespace jitllm {

struct ClApi {
#define JITLLM_CL_MEMBER(name) decltype(&::name) name = nullptr;
    JITLLM_CL_FUNCS(JITLLM_CL_MEMBER)
#undef JITLLM_CL_MEMBER

    std::string library;  // the file dlopen'ed: "libOpenCL.so.1"

    // The process-wide API: dlopen + symbol lookup, done once. Throws Error(Kind::Device) with one
    // sentence when that failed ("opencl backend unavailable: libOpenCL.so.1 not found ...").
    // try_load() returns nullptr and the sentence instead.
    static const ClApi& load();
    static const ClApi* try_load(std::string* why);

    [[noreturn]] void throw_error(const char* call, cl_int r) const;
};

// "CL_OUT_OF_RESOURCES" (the number when the code is not one of OpenCL's).
std::string cl_error_name(cl_int r);

}  // namespace jitllm

// Runs an OpenCL call through `api` (a ClApi) and throws Error(Kind::Device, "<call text>:
// <error name>") when it fails:   JITLLM_CL_TRY(api, clFinish(queue));
#define JITLLM_CL_TRY(api, call) JITLLM_API_TRY(api, call, #call, CL_SUCCESS)
