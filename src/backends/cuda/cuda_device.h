// The CUDA device as the backend sees it: DeviceInfo (attributes, or published figures for
// offline planning) and CudaContext (primary context, one stream, tracked allocations, modules,
// launches). No kernels and no task logic here: see tasks.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <array>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cuda/cuda_driver.h"

namespace jitllm {

struct DeviceInfo {
    std::string name;                // "NVIDIA H200", or the representative part for_target
    int cc_major = 0, cc_minor = 0;  // compute capability
    std::string arch;                // "sm_90"
    int sm_count = 0;                // multiprocessors
    int warp_size = 32;
    int max_threads_per_block = 1024;
    int max_threads_per_sm = 0;
    int max_regs_per_block = 0;          // 32-bit registers
    int max_shared_per_block = 49152;    // bytes without opt-in
    int max_shared_per_block_optin = 0;  // bytes with cuFuncSetAttribute(MAX_DYNAMIC_SHARED...)
    int max_shared_per_sm = 0;           // bytes
    int64_t l2_bytes = 0;
    int64_t total_mem = 0;  // bytes
    int mem_clock_khz = 0;  // peak memory clock; 0 when unknown
    int mem_bus_bits = 0;   // global memory bus width; 0 when unknown
    bool measured = false;  // true: read from a device; false: for_target figures
    std::string pci_bus_id;  // "0000:3b:00.0" (cuDeviceGetPCIBusId); "" for_target or when unknown
    // clusters_1pm[k]: thread-block clusters of k blocks (k = 1 .. 16) resident at once when each block
    // takes a whole SM (cuOccupancyMaxActiveClusters of a probe kernel; a GPC's SMs bound a cluster);
    // all 0 when unknown (for_target, before sm_90, or the probe failed)
    std::array<int, 17> clusters_1pm{};

    // Compute capability as one number: 90 for 9.0.
    int cc() const { return cc_major * 10 + cc_minor; }
    // Shared memory one block may use (the opt-in maximum when there is one).
    int max_shared_block() const { return max_shared_per_block_optin > max_shared_per_block ? max_shared_per_block_optin : max_shared_per_block; }
    // Theoretical DRAM bandwidth in GB/s (2 transfers per clock), 0 when unknown.
    double peak_bw_gb_s() const;
    // One line: "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB, L2 60.0 MiB, 4.8 TB/s peak)".
    std::string summary() const;

    // Attributes of an initialised device.
    static DeviceInfo query(const CudaDriver& drv, CUdevice dev);
    // Published figures of one representative part per arch, for planning without a GPU:
    // sm_75 T4, sm_80 A100-SXM4-80GB, sm_86 A10, sm_89 L4, sm_90 H200 (sm_90a accepted).
    // Throws Error for any other arch.
    static DeviceInfo for_target(const std::string& arch);
};

enum class MemCategory { Weights, Kv, Scratch, Other };
const char* mem_category_name(MemCategory c);  // "weights", "kv", "scratch", "other"

struct Dim3 {
    unsigned x = 1, y = 1, z = 1;
    Dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// Per-function figures after loading (cuFuncGetAttribute).
struct FuncAttributes {
    int registers = 0;      // per thread
    int local_bytes = 0;    // per thread; > 0 usually means spills
    int static_shared = 0;  // bytes
    int max_threads = 0;    // per block for this function
};

// Owns device `ordinal`'s primary context (never cuCtxCreate), one non-blocking stream, every
// allocation (freed on destruction) and every module. All calls make the context current first
// on the calling thread, so any thread may use the object; calls are not otherwise serialised
// except the bookkeeping maps.
class CudaContext {
public:
    explicit CudaContext(int ordinal = 0);
    ~CudaContext();
    CudaContext(const CudaContext&) = delete;
    CudaContext& operator=(const CudaContext&) = delete;

    const CudaDriver& driver() const { return drv_; }
    const DeviceInfo& device() const { return info_; }
    CUstream stream() const { return stream_; }
    void make_current() const;
    void synchronize() const;  // the stream

    // --- memory ---
    // Throws "cuda: out of memory allocating <what> (<size>): <free> of <total> free".
    CUdeviceptr alloc(size_t bytes, MemCategory cat, const std::string& what);
    void free(CUdeviceptr p);
    size_t allocated(MemCategory cat) const;  // bytes currently held
    void mem_info(size_t* free_bytes, size_t* total_bytes) const;
    void upload(CUdeviceptr dst, const void* src, size_t bytes) const;  // after the stream's work, done on return
    void download(void* dst, CUdeviceptr src, size_t bytes) const;      // synchronous
    void upload_async(CUdeviceptr dst, const void* src, size_t bytes) const;
    void download_async(void* dst, CUdeviceptr src, size_t bytes) const;
    void memset_async(CUdeviceptr dst, uint8_t value, size_t bytes) const;

    // --- modules and launches ---
    // Loads a cubin (unloaded on destruction); `what` names it in errors.
    CUmodule load_module(const std::vector<uint8_t>& cubin, const std::string& what);
    CUfunction function(CUmodule m, const std::string& symbol);
    FuncAttributes attributes(CUfunction f) const;
    // Needed before launching with more than 48 KiB of dynamic shared memory.
    void set_max_dynamic_shared(CUfunction f, int bytes) const;
    // CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: clusters of more than 8 blocks (sm_90: up to 16)
    void allow_non_portable_clusters(CUfunction f) const;
    // preferred shared-memory carveout, percent of the unified L1 / shared memory
    void set_carveout(CUfunction f, int percent) const;
    // Thread-block clusters of shape `cluster` that can be resident at once for this launch shape
    // (cuOccupancyMaxActiveClusters).
    int max_active_clusters(CUfunction f, Dim3 grid, Dim3 block, unsigned smem, Dim3 cluster) const;
    // `args` holds one pointer per kernel parameter (cuLaunchKernel's kernelParams).
    // pdl: launch with programmatic stream serialization (sm_90+): the kernel may start before
    // its predecessor in the stream finishes; it must call griddepcontrol.wait (PDL=1 kernels).
    // cluster: thread-block cluster shape ((1, 1, 1): none)
    void launch(CUfunction f, Dim3 grid, Dim3 block, unsigned smem, void** args, bool pdl = false,
                Dim3 cluster = Dim3()) const;
    template <typename... A>
    void launch_with(CUfunction f, Dim3 grid, Dim3 block, unsigned smem, A... args) const {
        void* ptrs[] = {static_cast<void*>(&args)..., nullptr};
        launch(f, grid, block, smem, ptrs);
    }

private:
    void probe_clusters();  // fills info_.clusters_1pm (sm_90+)
    struct Allocation {
        size_t bytes;
        MemCategory cat;
    };
    const CudaDriver& drv_;
    CUdevice dev_ = 0;
    CUcontext ctx_ = nullptr;
    CUstream stream_ = nullptr;
    DeviceInfo info_;
    mutable std::mutex mu_;
    std::unordered_map<CUdeviceptr, Allocation> allocs_;
    size_t held_[4] = {0, 0, 0, 0};
    std::vector<CUmodule> modules_;
    std::unordered_map<CUfunction, std::string> names_;  // for launch errors
};

// "1.50 GiB", "512 B": sizes in errors and memory plans.
std::string format_bytes(uint64_t bytes);

}  // namespace jitllm
