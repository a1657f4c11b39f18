// OpenCL device enumeration and one device's context (cl_device.h).
#include "backends/opencl/cl_device.h"

#include <cstring>
#include <sstream>
#include <vector>

namespace jitllm {

namespace {

// cl_nv_device_attribute_query: CL_DEVICE_WARP_SIZE_NV, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV / _MINOR_NV
constexpr cl_device_info kWarpSizeNv = 0x4003, kCcMajorNv = 0x4000, kCcMinorNv = 0x4001;

// The string `what` of platform or device id by get (clGetPlatformInfo or clGetDeviceInfo, named
// call), trailing NULs and blanks dropped; "" where its size is not answered.
template <class Get, class Id, class Info>
std::string info_str(const ClApi& a, Get get, const char* call, Id id, Info what) {
    size_t n = 0;
    if (get(id, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
    std::string s(n, '\0');
    if (const cl_int r = get(id, what, n, s.data(), nullptr); r != CL_SUCCESS) a.throw_error(call, r);
    while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string platform_str(const ClApi& a, cl_platform_id p, cl_platform_info what) {
    return info_str(a, a.clGetPlatformInfo, "clGetPlatformInfo", p, what);
}

std::string device_str(const ClApi& a, cl_device_id d, cl_device_info what) {
    return info_str(a, a.clGetDeviceInfo, "clGetDeviceInfo", d, what);
}

template <class T>
T device_val(const ClApi& a, cl_device_id d, cl_device_info what) {
    T v{};
    if (a.clGetDeviceInfo(d, what, sizeof(T), &v, nullptr) != CL_SUCCESS) return T{};
    return v;
}

// "OpenCL C 1.2 pocl" -> 12; "" -> 0
int c_version_of(const std::string& s) {
    const size_t at = s.find("OpenCL C ");
    if (at == std::string::npos) return 0;
    int major = 0, minor = 0;
    if (std::sscanf(s.c_str() + at + 9, "%d.%d", &major, &minor) != 2) return 0;
    return 10 * major + minor;
}

// The OpenCL C 3.0 optional features (CL_DEVICE_OPENCL_C_FEATURES) and whether OpenCL C 3.0 is
// among the versions the compiler takes (CL_DEVICE_OPENCL_C_ALL_VERSIONS); nothing before 3.0.
bool read_c3(const ClApi& a, cl_device_id d, std::set<std::string>& ext) {
    size_t n = 0;
    if (a.clGetDeviceInfo(d, CL_DEVICE_OPENCL_C_FEATURES, 0, nullptr, &n) == CL_SUCCESS && n > 0) {
        std::vector<cl_name_version> f(n / sizeof(cl_name_version));
        if (a.clGetDeviceInfo(d, CL_DEVICE_OPENCL_C_FEATURES, n, f.data(), nullptr) == CL_SUCCESS)
            for (const auto& x : f) ext.insert(x.name);
    }
    n = 0;
    if (a.clGetDeviceInfo(d, CL_DEVICE_OPENCL_C_ALL_VERSIONS, 0, nullptr, &n) != CL_SUCCESS || n == 0) return false;
    std::vector<cl_name_version> v(n / sizeof(cl_name_version));
    if (a.clGetDeviceInfo(d, CL_DEVICE_OPENCL_C_ALL_VERSIONS, n, v.data(), nullptr) != CL_SUCCESS) return false;
    for (const auto& x : v)
        if (CL_VERSION_MAJOR(x.version) >= 3) return true;
    return false;
}

ClDeviceInfo describe_device(const ClApi& a, cl_platform_id p, cl_device_id d, int index) {
    ClDeviceInfo i;
    i.index = index;
    i.platform = platform_str(a, p, CL_PLATFORM_NAME);
    i.platform_version = platform_str(a, p, CL_PLATFORM_VERSION);
    i.name = device_str(a, d, CL_DEVICE_NAME);
    i.vendor = device_str(a, d, CL_DEVICE_VENDOR);
    i.version = device_str(a, d, CL_DEVICE_VERSION);
    i.driver = device_str(a, d, CL_DRIVER_VERSION);
    const auto type = device_val<cl_device_type>(a, d, CL_DEVICE_TYPE);
    i.gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
    i.cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    i.accelerator = (type & CL_DEVICE_TYPE_ACCELERATOR) != 0;
    std::istringstream ext(device_str(a, d, CL_DEVICE_EXTENSIONS));
    for (std::string e; ext >> e;) i.extensions.insert(e);
    const bool c3 = i.version.rfind("OpenCL 3.", 0) == 0 && read_c3(a, d, i.extensions);
    const int cv = c_version_of(device_str(a, d, CL_DEVICE_OPENCL_C_VERSION));
    i.c_std = c3 ? "CL3.0" : cv >= 20 ? "CL2.0" : cv >= 12 ? "CL1.2" : "CL1.1";
    i.compute_units = device_val<cl_uint>(a, d, CL_DEVICE_MAX_COMPUTE_UNITS);
    i.max_work_group = device_val<size_t>(a, d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
    i.local_mem = device_val<cl_ulong>(a, d, CL_DEVICE_LOCAL_MEM_SIZE);
    i.global_mem = device_val<cl_ulong>(a, d, CL_DEVICE_GLOBAL_MEM_SIZE);
    i.max_alloc = device_val<cl_ulong>(a, d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    i.pref_vector_float = device_val<cl_uint>(a, d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT);
    i.fp32_correct_div_sqrt =
        (device_val<cl_device_fp_config>(a, d, CL_DEVICE_SINGLE_FP_CONFIG) & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    if (i.has("cl_nv_device_attribute_query")) {
        i.nv_warp = device_val<cl_uint>(a, d, kWarpSizeNv);
        i.nv_cc = 10 * device_val<cl_uint>(a, d, kCcMajorNv) + device_val<cl_uint>(a, d, kCcMinorNv);
    }
    return i;
}

// Every (platform, device) pair in --opencl-device order.
std::vector<std::pair<cl_platform_id, cl_device_id>> all_devices(const ClApi& a) {
    cl_uint np = 0;
    const cl_int r = a.clGetPlatformIDs(0, nullptr, &np);
    if (r == -1001 || (r == CL_SUCCESS && np == 0))
        fail_device("no OpenCL platform: the ICD loader found no driver; hint: install one (Debian: pocl-opencl-icd "
                    "for the CPU) or point OCL_ICD_VENDORS at a folder of .icd files");
    if (r != CL_SUCCESS) a.throw_error("clGetPlatformIDs", r);
    std::vector<cl_platform_id> ps(np);
    JITLLM_CL_TRY(a, clGetPlatformIDs(np, ps.data(), nullptr));
    std::vector<std::pair<cl_platform_id, cl_device_id>> out;
    for (cl_platform_id p : ps) {
        cl_uint nd = 0;
        if (a.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
        std::vector<cl_device_id> ds(nd);
        JITLLM_CL_TRY(a, clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr));
        for (cl_device_id d : ds) out.emplace_back(p, d);
    }
    if (out.empty()) fail_device("no OpenCL device: {} platform(s), none with a device", np);
    return out;
}

}  // namespace

std::string ClDeviceInfo::summary() const {
    return fmt::format("{} ({}, {}, {}, {} compute units, {:.1f} GiB)", name, platform, version, driver, compute_units,
                       double(global_mem) / double(1ull << 30));
}

std::string ClDeviceInfo::slug() const {
    std::string s = name + "-" + driver;
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
    if (s.size() > 80) s.resize(80);
    return s;
}

std::vector<ClDeviceInfo> cl_list_devices() {
    const ClApi& a = ClApi::load();
    std::vector<ClDeviceInfo> v;
    int i = 0;
    for (const auto& [p, d] : all_devices(a)) v.push_back(describe_device(a, p, d, i++));
    return v;
}

int cl_default_device(const std::vector<ClDeviceInfo>& devs, std::string* why) {
    JITLLM_CHECK(!devs.empty(), "no OpenCL device to choose from");
    const size_t n = devs.size();
    const auto say = [&](size_t i, const char* rule) {
        if (why) *why = fmt::format("{} of {} device{}", rule, n, n == 1 ? "" : "s");
        return int(i);
    };
    for (size_t i = 0; i < n; ++i)
        if (devs[i].gpu) return say(i, "the first GPU");
    for (size_t i = 0; i < n; ++i)
        if (devs[i].accelerator) return say(i, "the first accelerator (no GPU)");
    return say(0, "the first device (no GPU or accelerator)");
}

ClContext::ClContext(int device_index, bool profiling) : api_(ClApi::load()) {
    const auto devs = all_devices(api_);
    if (device_index < 0) {
        std::vector<ClDeviceInfo> all;
        for (size_t i = 0; i < devs.size(); ++i) all.push_back(describe_device(api_, devs[i].first, devs[i].second, int(i)));
        device_index = cl_default_device(all, &why_);
    } else {
        why_ = fmt::format("--opencl-device {}", device_index);
    }
    if (size_t(device_index) >= devs.size())
        fail_usage("--opencl-device {}: expected 0..{} (jitllm --list-devices lists them), found {}", device_index,
                   devs.size() - 1, device_index);
    const auto [p, d] = devs[size_t(device_index)];
    dev_ = d;
    info_ = describe_device(api_, p, d, device_index);
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, cl_context_properties(p), 0};
    cl_int r = CL_SUCCESS;
    ctx_ = api_.clCreateContext(props, 1, &dev_, nullptr, nullptr, &r);
    if (r != CL_SUCCESS) api_.throw_error("clCreateContext", r);
    queue_ = api_.clCreateCommandQueue(ctx_, dev_, profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &r);
    if (r != CL_SUCCESS) api_.throw_error("clCreateCommandQueue", r);
}

ClContext::~ClContext() {
    if (queue_) {
        for (auto& [m, p] : host_) api_.clEnqueueUnmapMemObject(queue_, m, p, 0, nullptr, nullptr);
        api_.clFinish(queue_);
        for (auto& [m, p] : host_) api_.clReleaseMemObject(m);
        api_.clReleaseCommandQueue(queue_);
    }
    if (ctx_) api_.clReleaseContext(ctx_);
}

cl_mem ClContext::alloc(size_t bytes, const std::string& what) {
    bytes = std::max<size_t>(bytes, 4);
    if (bytes > info_.max_alloc)
        fail_device("{}: a buffer of {} bytes exceeds the device's largest allocation, {} bytes ({})", what, bytes,
                    info_.max_alloc, info_.name);
    cl_int r = CL_SUCCESS;
    cl_mem m = api_.clCreateBuffer(ctx_, CL_MEM_READ_WRITE, bytes, nullptr, &r);
    if (r != CL_SUCCESS) fail_device("{}: clCreateBuffer of {} bytes: {}", what, bytes, cl_error_name(r));
    const cl_uchar zero = 0;
    JITLLM_CL_TRY(api_, clEnqueueFillBuffer(queue_, m, &zero, 1, 0, bytes, 0, nullptr, nullptr));
    allocated_ += bytes;
    sizes_[m] = bytes;
    return m;
}

void* ClContext::alloc_host(size_t bytes, const std::string& what) {
    cl_int r = CL_SUCCESS;
    cl_mem m = api_.clCreateBuffer(ctx_, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &r);
    if (r != CL_SUCCESS) fail_device("{}: clCreateBuffer of {} bytes of host memory: {}", what, bytes, cl_error_name(r));
    void* p = api_.clEnqueueMapBuffer(queue_, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr, nullptr, &r);
    if (r != CL_SUCCESS) {
        api_.clReleaseMemObject(m);
        fail_device("{}: clEnqueueMapBuffer of {} bytes: {}", what, bytes, cl_error_name(r));
    }
    std::memset(p, 0, bytes);
    host_.emplace_back(m, p);
    return p;
}

void ClContext::release(cl_mem m) {
    if (!m) return;
    if (auto it = sizes_.find(m); it != sizes_.end()) {
        allocated_ -= it->second;
        sizes_.erase(it);
    }
    api_.clReleaseMemObject(m);
}

void ClContext::upload(cl_mem dst, size_t offset, const void* src, size_t bytes) {
    if (bytes == 0) return;
    JITLLM_CL_TRY(api_, clEnqueueWriteBuffer(queue_, dst, CL_TRUE, offset, bytes, src, 0, nullptr, nullptr));
}

void ClContext::download(void* dst, cl_mem src, size_t offset, size_t bytes) {
    if (bytes == 0) return;
    JITLLM_CL_TRY(api_, clEnqueueReadBuffer(queue_, src, CL_TRUE, offset, bytes, dst, 0, nullptr, nullptr));
}

void ClContext::copy(cl_mem dst, size_t dst_off, cl_mem src, size_t src_off, size_t bytes) {
    if (bytes == 0) return;
    JITLLM_CL_TRY(api_, clEnqueueCopyBuffer(queue_, src, dst, src_off, dst_off, bytes, 0, nullptr, nullptr));
}

void ClContext::finish() { JITLLM_CL_TRY(api_, clFinish(queue_)); }

}  // namespace jitllm
