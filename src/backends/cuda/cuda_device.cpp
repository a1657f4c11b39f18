// DeviceInfo (attributes and published per-arch figures) and CudaContext (primary context,
// stream, tracked allocations, modules, launches). Driver calls go through JITLLM_CUDA_TRY.
#include "backends/cuda/cuda_device.h"

namespace jitllm {

std::string format_bytes(uint64_t bytes) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
    return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, units[u]);
}

const char* mem_category_name(MemCategory c) {
    switch (c) {
        case MemCategory::Weights: return "weights";
        case MemCategory::Kv: return "kv";
        case MemCategory::Scratch: return "scratch";
        case MemCategory::Other: return "other";
    }
    return "?";
}

// --- DeviceInfo ---

double DeviceInfo::peak_bw_gb_s() const {
    return 2.0 * mem_clock_khz * 1e3 * (mem_bus_bits / 8.0) / 1e9;
}

std::string DeviceInfo::summary() const {
    std::string bw = mem_clock_khz > 0 ? fmt::format(", {:.0f} GB/s peak", peak_bw_gb_s()) : "";
    return fmt::format("{} ({}, {} SMs, {}, L2 {}{}{})", name, arch, sm_count,
                       format_bytes(total_mem), format_bytes(l2_bytes), bw,
                       measured ? "" : ", published figures");
}

DeviceInfo DeviceInfo::query(const CudaDriver& drv, CUdevice dev) {
    DeviceInfo d;
    char name[256] = {};
    JITLLM_CUDA_TRY(drv, cuDeviceGetName(name, sizeof(name) - 1, dev));
    d.name = name;
    auto attr = [&](CUdevice_attribute a) {
        int v = 0;
        JITLLM_CUDA_TRY(drv, cuDeviceGetAttribute(&v, a, dev));
        return v;
    };
    d.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    d.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    d.arch = fmt::format("sm_{}{}", d.cc_major, d.cc_minor);
    d.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    d.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    d.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    d.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    d.max_regs_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    d.max_shared_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    d.max_shared_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    d.max_shared_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    d.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    d.mem_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    d.mem_bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    size_t total = 0;
    JITLLM_CUDA_TRY(drv, cuDeviceTotalMem(&total, dev));
    d.total_mem = static_cast<int64_t>(total);
    char bus[64] = {};  // NVML (bench's power figures) finds the same board by it
    if (drv.cuDeviceGetPCIBusId(bus, int(sizeof(bus)) - 1, dev) == CUDA_SUCCESS) d.pci_bus_id = bus;
    d.measured = true;
    return d;
}

DeviceInfo DeviceInfo::for_target(const std::string& arch_in) {
    // Published datasheet figures. mem_clock_khz is chosen so that peak_bw_gb_s() gives the
    // datasheet bandwidth (T4 320, A100-80GB 2039, A10 600, L4 300, H200 4800 GB/s).
    struct Row {
        const char* arch;
        const char* part;
        int cc_major, cc_minor, sms, threads_per_sm, smem_optin, smem_per_sm;
        int64_t l2, mem;
        int mem_clock_khz, bus_bits;
    };
    constexpr int64_t KiB = 1024, MiB = KiB * KiB, GiB = MiB * KiB;
    static const Row rows[] = {
        {"sm_75", "Tesla T4", 7, 5, 40, 1024, 64 * KiB, 64 * KiB, 4 * MiB, 16 * GiB, 5001000, 256},
        {"sm_80", "A100-SXM4-80GB", 8, 0, 108, 2048, 163 * KiB, 164 * KiB, 40 * MiB, 80 * GiB,
         1593000, 5120},
        {"sm_86", "A10", 8, 6, 72, 1536, 99 * KiB, 100 * KiB, 6 * MiB, 24 * GiB, 6251000, 384},
        {"sm_89", "L4", 8, 9, 58, 1536, 99 * KiB, 100 * KiB, 48 * MiB, 24 * GiB, 6251000, 192},
        {"sm_90", "H200 SXM", 9, 0, 132, 2048, 227 * KiB, 228 * KiB, 50 * MiB, 141000000000LL,
         3125000, 6144},
    };
    std::string arch = arch_in;
    if (arch.size() > 1 && arch.back() == 'a') arch.pop_back();  // sm_90a plans like sm_90
    std::string known;
    for (const Row& r : rows) {
        known += fmt::format("{}{}", known.empty() ? "" : " ", r.arch);
        if (arch != r.arch) continue;
        DeviceInfo d;
        d.name = fmt::format("{} ({} planning figures)", r.part, r.arch);
        d.cc_major = r.cc_major;
        d.cc_minor = r.cc_minor;
        d.arch = r.arch;
        d.sm_count = r.sms;
        d.max_threads_per_sm = r.threads_per_sm;
        d.max_regs_per_block = 65536;
        d.max_shared_per_block_optin = static_cast<int>(r.smem_optin);
        d.max_shared_per_sm = static_cast<int>(r.smem_per_sm);
        d.l2_bytes = r.l2;
        d.total_mem = r.mem;
        d.mem_clock_khz = r.mem_clock_khz;
        d.mem_bus_bits = r.bus_bits;
        return d;
    }
    fail("cuda target '{}': no published figures; expected one of {}", arch_in, known);
}

// --- CudaContext ---

CudaContext::CudaContext(int ordinal) : drv_(CudaDriver::load()) {
    int count = 0;
    JITLLM_CUDA_TRY(drv_, cuDeviceGetCount(&count));
    if (count == 0) fail_device("no CUDA device: cuDeviceGetCount found 0 devices");
    if (ordinal < 0 || ordinal >= count)
        fail("cuda device {}: out of range; expected 0..{}, found {}", ordinal, count - 1, ordinal);
    JITLLM_CUDA_TRY(drv_, cuDeviceGet(&dev_, ordinal));
    info_ = DeviceInfo::query(drv_, dev_);
    JITLLM_CUDA_TRY(drv_, cuDevicePrimaryCtxRetain(&ctx_, dev_));
    try {
        make_current();
        JITLLM_CUDA_TRY(drv_, cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
    } catch (...) {
        drv_.cuDevicePrimaryCtxRelease(dev_);
        throw;
    }
    if (info_.cc() >= 90) probe_clusters();
}

CudaContext::~CudaContext() {
    // Best effort: a failing call here (e.g. after a sticky launch error) cannot be reported.
    drv_.cuCtxSetCurrent(ctx_);
    if (stream_) drv_.cuStreamSynchronize(stream_);
    for (auto& [p, a] : allocs_) drv_.cuMemFree(p);
    for (CUmodule m : modules_) drv_.cuModuleUnload(m);
    if (stream_) drv_.cuStreamDestroy(stream_);
    drv_.cuDevicePrimaryCtxRelease(dev_);
}

void CudaContext::make_current() const {
    JITLLM_CUDA_TRY(drv_, cuCtxSetCurrent(ctx_));
}

void CudaContext::synchronize() const {
    make_current();
    JITLLM_CUDA_TRY(drv_, cuStreamSynchronize(stream_));
}

CUdeviceptr CudaContext::alloc(size_t bytes, MemCategory cat, const std::string& what) {
    make_current();
    CUdeviceptr p = 0;
    CUresult r = drv_.cuMemAlloc(&p, bytes == 0 ? 1 : bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        size_t free_b = 0, total_b = 0;
        drv_.cuMemGetInfo(&free_b, &total_b);
        fail_device("cuda: out of memory allocating {} ({}): {} of {} free", what,
                    format_bytes(bytes), format_bytes(free_b), format_bytes(total_b));
    }
    if (r != CUDA_SUCCESS)
        drv_.throw_error(fmt::format("cuMemAlloc({}, {})", what, bytes).c_str(), r);
    std::lock_guard<std::mutex> lock(mu_);
    allocs_[p] = {bytes, cat};
    held_[static_cast<int>(cat)] += bytes;
    return p;
}

void CudaContext::free(CUdeviceptr p) {
    if (!p) return;
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = allocs_.find(p);
        JITLLM_CHECK(it != allocs_.end(), "free of a pointer this context did not allocate");
        held_[static_cast<int>(it->second.cat)] -= it->second.bytes;
        allocs_.erase(it);
    }
    make_current();
    JITLLM_CUDA_TRY(drv_, cuMemFree(p));
}

size_t CudaContext::allocated(MemCategory cat) const {
    std::lock_guard<std::mutex> lock(mu_);
    return held_[static_cast<int>(cat)];
}

void CudaContext::mem_info(size_t* free_bytes, size_t* total_bytes) const {
    make_current();
    JITLLM_CUDA_TRY(drv_, cuMemGetInfo(free_bytes, total_bytes));
}

void CudaContext::upload(CUdeviceptr dst, const void* src, size_t bytes) const {
    make_current();
    // On our stream and waited for: a legacy cuMemcpyHtoD from pageable memory returns once the
    // bytes are staged, its DMA possibly still running, and kernels on our non-blocking stream do
    // not wait for it (a test that uploads rows and launches at once read some stale rows, under
    // load on an H100)
    JITLLM_CUDA_TRY(drv_, cuMemcpyHtoDAsync(dst, src, bytes, stream_));
    JITLLM_CUDA_TRY(drv_, cuStreamSynchronize(stream_));
}

void CudaContext::download(void* dst, CUdeviceptr src, size_t bytes) const {
    make_current();
    // The copy must follow kernels queued on our non-blocking stream, which the legacy
    // synchronous copy does not wait for.
    JITLLM_CUDA_TRY(drv_, cuStreamSynchronize(stream_));
    JITLLM_CUDA_TRY(drv_, cuMemcpyDtoH(dst, src, bytes));
}

void CudaContext::upload_async(CUdeviceptr dst, const void* src, size_t bytes) const {
    make_current();
    JITLLM_CUDA_TRY(drv_, cuMemcpyHtoDAsync(dst, src, bytes, stream_));
}

void CudaContext::download_async(void* dst, CUdeviceptr src, size_t bytes) const {
    make_current();
    JITLLM_CUDA_TRY(drv_, cuMemcpyDtoHAsync(dst, src, bytes, stream_));
}

void CudaContext::memset_async(CUdeviceptr dst, uint8_t value, size_t bytes) const {
    make_current();
    JITLLM_CUDA_TRY(drv_, cuMemsetD8Async(dst, value, bytes, stream_));
}

CUmodule CudaContext::load_module(const std::vector<uint8_t>& cubin, const std::string& what) {
    make_current();
    CUmodule m = nullptr;
    CUresult r = drv_.cuModuleLoadData(&m, cubin.data());
    if (r != CUDA_SUCCESS)
        fail_device("cuda: loading module {} ({} cubin bytes) on {} ({}): cuModuleLoadData: {}",
                    what, cubin.size(), info_.name, info_.arch, drv_.describe(r));
    std::lock_guard<std::mutex> lock(mu_);
    modules_.push_back(m);
    return m;
}

CUfunction CudaContext::function(CUmodule m, const std::string& symbol) {
    make_current();
    CUfunction f = nullptr;
    CUresult r = drv_.cuModuleGetFunction(&f, m, symbol.c_str());
    if (r != CUDA_SUCCESS)
        fail_device("cuda: kernel symbol '{}' not found in its module: cuModuleGetFunction: {}",
                    symbol, drv_.describe(r));
    std::lock_guard<std::mutex> lock(mu_);
    names_[f] = symbol;
    return f;
}

FuncAttributes CudaContext::attributes(CUfunction f) const {
    make_current();
    FuncAttributes a;
    JITLLM_CUDA_TRY(drv_, cuFuncGetAttribute(&a.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
    JITLLM_CUDA_TRY(drv_,
                    cuFuncGetAttribute(&a.local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f));
    JITLLM_CUDA_TRY(drv_,
                    cuFuncGetAttribute(&a.static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
    JITLLM_CUDA_TRY(drv_,
                    cuFuncGetAttribute(&a.max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
    return a;
}

void CudaContext::set_max_dynamic_shared(CUfunction f, int bytes) const {
    make_current();
    JITLLM_CUDA_TRY(drv_,
                    cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
}

void CudaContext::allow_non_portable_clusters(CUfunction f) const {
    make_current();
    JITLLM_CUDA_TRY(drv_, cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
}

void CudaContext::set_carveout(CUfunction f, int percent) const {
    make_current();
    JITLLM_CUDA_TRY(drv_, cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent));
}

namespace {
CUlaunchAttribute cluster_attr(Dim3 cluster) {
    CUlaunchAttribute a{};
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = cluster.x;
    a.value.clusterDim.y = cluster.y;
    a.value.clusterDim.z = cluster.z;
    return a;
}
CUlaunchConfig launch_config(Dim3 grid, Dim3 block, unsigned smem, CUstream stream, CUlaunchAttribute* attrs, unsigned n) {
    CUlaunchConfig cfg{};
    cfg.gridDimX = grid.x, cfg.gridDimY = grid.y, cfg.gridDimZ = grid.z;
    cfg.blockDimX = block.x, cfg.blockDimY = block.y, cfg.blockDimZ = block.z;
    cfg.sharedMemBytes = smem;
    cfg.hStream = stream;
    cfg.attrs = attrs;
    cfg.numAttrs = n;
    return cfg;
}
}  // namespace

int CudaContext::max_active_clusters(CUfunction f, Dim3 grid, Dim3 block, unsigned smem, Dim3 cluster) const {
    make_current();
    CUlaunchAttribute attr = cluster_attr(cluster);
    const CUlaunchConfig cfg = launch_config(grid, block, smem, stream_, &attr, 1);
    int n = 0;
    JITLLM_CUDA_TRY(drv_, cuOccupancyMaxActiveClusters(&n, f, &cfg));
    return n;
}

// The GPCs' shape as the scheduler needs it: how many clusters of k whole-SM blocks fit at once. An
// empty kernel in PTX (the driver compiles it: no NVRTC here), its dynamic shared memory at the
// per-block maximum so a block takes an SM, cuOccupancyMaxActiveClusters for k = 1 .. 16 (above 8
// the non-portable sizes). H200: 8 -> 15, 9 -> 9, 10 .. 12 and 16 -> 7. Any failure leaves
// the table at 0 (unknown: the scheduler then merges split-KV states through the ticket).
void CudaContext::probe_clusters() {
    static const char kPtx[] =
        ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry jitllm_cluster_probe()\n{\n\tret;\n}\n";
    CUmodule m = nullptr;
    if (drv_.cuModuleLoadData(&m, kPtx) != CUDA_SUCCESS) return;
    CUfunction f = nullptr;
    const int smem = info_.max_shared_block();
    std::array<int, 17> fit{};
    bool ok = drv_.cuModuleGetFunction(&f, m, "jitllm_cluster_probe") == CUDA_SUCCESS &&
              drv_.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem) == CUDA_SUCCESS &&
              drv_.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1) == CUDA_SUCCESS;
    for (unsigned k = 1; ok && k <= 16; ++k) {
        int n = 0;
        CUlaunchAttribute attr = cluster_attr(Dim3(1, k));
        const CUlaunchConfig cfg = launch_config(Dim3(1, k), Dim3(32), unsigned(smem), stream_, &attr, 1);
        ok = drv_.cuOccupancyMaxActiveClusters(&n, f, &cfg) == CUDA_SUCCESS;
        fit[k] = n;
    }
    drv_.cuModuleUnload(m);
    if (ok) info_.clusters_1pm = fit;
}

void CudaContext::launch(CUfunction f, Dim3 grid, Dim3 block, unsigned smem, void** args, bool pdl, Dim3 cluster) const {
    make_current();
    CUresult r;
    const bool clustered = cluster.x * cluster.y * cluster.z > 1;
    if (pdl || clustered) {
        CUlaunchAttribute attrs[2]{};
        unsigned n = 0;
        if (pdl) {
            attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            attrs[n++].value.programmaticStreamSerializationAllowed = 1;
        }
        if (clustered) attrs[n++] = cluster_attr(cluster);
        const CUlaunchConfig cfg = launch_config(grid, block, smem, stream_, attrs, n);
        r = drv_.cuLaunchKernelEx(&cfg, f, args, nullptr);
    } else {
        r = drv_.cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, smem, stream_, args, nullptr);
    }
    if (r == CUDA_SUCCESS) return;
    std::string name;
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = names_.find(f);
        name = it == names_.end() ? "?" : it->second;
    }
    fail_device("cuLaunchKernel({}, grid [{}, {}, {}], block [{}, {}, {}], cluster [{}, {}, {}], smem {}): {}", name,
                grid.x, grid.y, grid.z, block.x, block.y, block.z, cluster.x, cluster.y, cluster.z, smem,
                drv_.describe(r));
}

}  // namespace jitllm
