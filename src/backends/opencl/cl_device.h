// OpenCL devices: what each one reports (the facts the gates read), the numbering --opencl-device
// and `jitllm --list-devices` share, and ClContext: one device's context, in-order queue, buffers
// and program builds. Weights, slots and kernels are the backend's (opencl_backend.h).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/opencl/cl_api.h"

namespace jitllm {

struct ClDeviceInfo {
    int index = 0;  // --opencl-device N: every platform's devices in order, numbered from 0
    std::string platform, platform_version;
    std::string name, vendor, version, driver;
    std::string c_std;  // the -cl-std the programs are built with: "CL3.0", "CL2.0", "CL1.2"
    bool gpu = false, cpu = false, accelerator = false;  // CL_DEVICE_TYPE_GPU / _CPU / _ACCELERATOR
    // cl_khr_* / cl_intel_* / cl_nv_* extensions and, on OpenCL 3.0, the OpenCL C features (__opencl_c_*)
    std::set<std::string> extensions;
    uint32_t compute_units = 0;
    uint64_t max_work_group = 0;
    uint64_t local_mem = 0, global_mem = 0, max_alloc = 0;
    uint32_t pref_vector_float = 0;  // CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT
    bool fp32_correct_div_sqrt = false;  // CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT: -cl-fp32-correctly-rounded-divide-sqrt
    uint32_t nv_warp = 0;  // cl_nv_device_attribute_query's warp size (0: not NVIDIA's driver)
    uint32_t nv_cc = 0;    // ... and its compute capability, major * 10 + minor (90: sm_90)

    bool has(const std::string& ext) const { return extensions.count(ext) > 0; }
    // one line: "NVIDIA H100 80GB HBM3 (NVIDIA CUDA, OpenCL 3.0 CUDA 12.8, 132 compute units, 79.1 GiB)"
    std::string summary() const;
    // the device's name in the cache path: name, driver version, [A-Za-z0-9_.-] only
    std::string slug() const;
};

// Every device of every platform, in --opencl-device order. Throws Error(Device) with a sentence
// when the loader is missing or finds no platform or device.
std::vector<ClDeviceInfo> cl_list_devices();

// The device --opencl takes without --opencl-device: the first GPU, else the first accelerator,
// else the first device (a host with PoCL's CPU device beside a GPU's driver runs on the GPU).
// *why (when given): the rule that chose it, e.g. "the first GPU of 2 devices". devs: not empty.
int cl_default_device(const std::vector<ClDeviceInfo>& devs, std::string* why);

// One device's context and in-order queue (profiling: events carry start and end times).
class ClContext {
public:
    // device_index < 0: cl_default_device's choice
    ClContext(int device_index, bool profiling);
    ~ClContext();
    ClContext(const ClContext&) = delete;
    ClContext& operator=(const ClContext&) = delete;

    const ClApi& api() const { return api_; }
    const ClDeviceInfo& info() const { return info_; }
    cl_context context() const { return ctx_; }
    cl_command_queue queue() const { return queue_; }
    cl_device_id device() const { return dev_; }
    // why this device: "--opencl-device 1" or cl_default_device's rule
    const std::string& chosen_because() const { return why_; }

    // A device buffer of `bytes` (at least 4), zero-filled; `what` names it in the error.
    cl_mem alloc(size_t bytes, const std::string& what);
    void release(cl_mem m);
    void upload(cl_mem dst, size_t offset, const void* src, size_t bytes);    // blocking
    void download(void* dst, cl_mem src, size_t offset, size_t bytes);       // blocking
    void copy(cl_mem dst, size_t dst_off, cl_mem src, size_t src_off, size_t bytes);
    // Pinned host memory of `bytes`, zero-filled, alive with the context: a buffer of
    // CL_MEM_ALLOC_HOST_PTR mapped once. Reads and writes without CL_TRUE from it are asynchronous
    // (a GPU's driver copies pageable memory synchronously: a read into it waits for the queue).
    void* alloc_host(size_t bytes, const std::string& what);
    void finish();
    uint64_t allocated() const { return allocated_; }  // bytes of the buffers alive

private:
    const ClApi& api_;
    ClDeviceInfo info_;
    std::string why_;
    cl_device_id dev_ = nullptr;
    cl_context ctx_ = nullptr;
    cl_command_queue queue_ = nullptr;
    uint64_t allocated_ = 0;
    std::map<cl_mem, size_t> sizes_;
    std::vector<std::pair<cl_mem, void*>> host_;  // alloc_host's buffers and their mappings
};

}  // namespace jitllm
