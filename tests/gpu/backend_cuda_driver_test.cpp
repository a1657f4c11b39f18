// CUDA driver layer: missing or stub libcuda gives a sentence (not a crash), JITLLM_CUDA_TRY's
// message shape, published per-arch figures, and (only where a GPU exists) a JIT-compiled
// kernel round trip through CudaContext.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_driver.h"
#include "jit/jit_compiler.h"

namespace jitllm {
namespace {

bool driver_present() {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return h != nullptr;  // left open: the process may use it
}

TEST(CudaDriver, missing_driver_is_a_sentence) {
    if (driver_present()) GTEST_SKIP() << "libcuda.so.1 is installed on this machine";
    std::string why;
    EXPECT_EQ(CudaDriver::try_load(&why), nullptr);
    EXPECT_EQ(why.rfind("cuda backend unavailable: libcuda.so.1 not found (dlopen: ", 0), 0u)
        << why;
    try {
        CudaDriver::load();
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Device);
        EXPECT_EQ(std::string(e.what()), why);
    }
}

TEST(CudaDriver, stub_library_fails_at_cuinit_with_a_sentence) {
    const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
    if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no toolkit stub libcuda at " << stub;
    try {
        CudaDriver::open(stub);
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        const std::string msg = e.what();
        // The stub resolves every symbol but its cuInit reports CUDA_ERROR_STUB_LIBRARY.
        EXPECT_EQ(msg.rfind("cuda backend unavailable: cuInit: CUDA_ERROR_STUB_LIBRARY: ", 0), 0u)
            << msg;
        EXPECT_NE(msg.find(stub), std::string::npos) << msg;
    }
}

TEST(CudaDriver, try_macro_reports_call_text_error_name_and_string) {
    CudaDriver fake;
    fake.cuMemAlloc = [](CUdeviceptr*, size_t) { return CUDA_ERROR_OUT_OF_MEMORY; };
    fake.cuGetErrorName = [](CUresult, const char** s) {
        *s = "CUDA_ERROR_OUT_OF_MEMORY";
        return CUDA_SUCCESS;
    };
    fake.cuGetErrorString = [](CUresult, const char** s) {
        *s = "out of memory";
        return CUDA_SUCCESS;
    };
    CUdeviceptr p = 0;
    try {
        JITLLM_CUDA_TRY(fake, cuMemAlloc(&p, 16));
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Device);
        EXPECT_STREQ(e.what(), "cuMemAlloc(&p, 16): CUDA_ERROR_OUT_OF_MEMORY: out of memory");
    }
    fake.cuGetErrorName = nullptr;
    EXPECT_EQ(fake.describe(CUDA_ERROR_OUT_OF_MEMORY), "CUresult 2");
}

TEST(CudaDevice, published_figures_per_target) {
    const DeviceInfo h = DeviceInfo::for_target("sm_90");
    EXPECT_EQ(h.arch, "sm_90");
    EXPECT_EQ(h.sm_count, 132);
    EXPECT_EQ(h.warp_size, 32);
    EXPECT_EQ(h.max_shared_per_block_optin, 227 * 1024);
    EXPECT_FALSE(h.measured);
    EXPECT_NEAR(h.peak_bw_gb_s(), 4800, 1);
    EXPECT_EQ(DeviceInfo::for_target("sm_90a").sm_count, 132);
    EXPECT_EQ(DeviceInfo::for_target("sm_80").max_shared_per_block_optin, 163 * 1024);
    EXPECT_NEAR(DeviceInfo::for_target("sm_80").peak_bw_gb_s(), 2039, 1);
    EXPECT_EQ(DeviceInfo::for_target("sm_75").max_shared_per_block_optin, 64 * 1024);
    EXPECT_EQ(DeviceInfo::for_target("sm_86").sm_count, 72);
    EXPECT_EQ(DeviceInfo::for_target("sm_89").sm_count, 58);
    try {
        DeviceInfo::for_target("sm_70");
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(),
                     "cuda target 'sm_70': no published figures; expected one of "
                     "sm_75 sm_80 sm_86 sm_89 sm_90");
    }
}

TEST(CudaDevice, format_bytes_uses_binary_units) {
    EXPECT_EQ(format_bytes(512), "512 B");
    EXPECT_EQ(format_bytes(1536), "1.50 KiB");
    EXPECT_EQ(format_bytes(3ull << 30), "3.00 GiB");
}

// A test kernel's source compiled with the JIT for the context's device and loaded
CUfunction jit_function(CudaContext& ctx, const Variant& v) {
    JitCompiler jit(ctx.device().arch, {{/*disk=*/false, ""}, 0});
    const CompiledKernel k = jit.compile(v);
    return ctx.function(ctx.load_module(k.cubin, v.display_name()), v.symbol);
}

// GPU only: compile with the JIT, load, launch, read back. y[i] = 2 * x[i] + i.
TEST(CudaDevice, jit_kernel_round_trip_on_gpu) {
    std::string why;
    if (!CudaDriver::try_load(&why)) GTEST_SKIP() << why;
    CudaContext ctx(0);
    Variant v("cuda/test_axpy.cu", "test_axpy__gpu_probe");
    v.source_text =
        "#include \"common/common.cuh\"\n"
        "extern \"C\" __global__ void KERNEL_NAME(float* y, const float* x, int n) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) y[i] = SCALE * x[i] + i;\n}\n";
    v.set("SCALE", "2.0f");
    CUfunction f = jit_function(ctx, v);
    EXPECT_GT(ctx.attributes(f).registers, 0);

    const int n = 1000;
    std::vector<float> x(n), y(n, -1.0f);
    for (int i = 0; i < n; ++i) x[i] = 0.5f * i;
    CUdeviceptr dx = ctx.alloc(n * 4, MemCategory::Scratch, "x");
    CUdeviceptr dy = ctx.alloc(n * 4, MemCategory::Scratch, "y");
    EXPECT_EQ(ctx.allocated(MemCategory::Scratch), 2u * n * 4);
    ctx.upload(dx, x.data(), n * 4);
    ctx.launch_with(f, Dim3((n + 255) / 256), Dim3(256), 0, dy, dx, n);
    ctx.download(y.data(), dy, n * 4);
    for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], 2.0f * (0.5f * i) + i) << i;
    ctx.free(dx);
    ctx.free(dy);
    EXPECT_EQ(ctx.allocated(MemCategory::Scratch), 0u);

    const std::string msg = [&] {
        try {
            ctx.alloc(size_t(1) << 50, MemCategory::Kv, "kv cache");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    }();
    EXPECT_EQ(msg.rfind("cuda: out of memory allocating kv cache (1024.00 TiB): ", 0), 0u) << msg;
}

// GPU only: an upload from pageable memory is complete for the next kernel on our stream. Each round
// uploads 64 MiB of one value and at once launches a kernel that counts the elements of another,
// walking from the end (a legacy cuMemcpyHtoD returns once the bytes are staged; a kernel on a
// non-blocking stream then read the previous round's values in its last rows).
TEST(CudaDevice, upload_is_complete_for_the_next_kernel) {
    std::string why;
    if (!CudaDriver::try_load(&why)) GTEST_SKIP() << why;
    CudaContext ctx(0);
    Variant v("cuda/test_count.cu", "test_count__upload_probe");
    v.source_text =
        "#include \"common/common.cuh\"\n"
        "extern \"C\" __global__ void KERNEL_NAME(const float* x, float want, unsigned long long n, unsigned* bad) {\n"
        "    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
        "        if (x[n - 1 - i] != want) atomicAdd(bad, 1u);\n}\n";
    CUfunction f = jit_function(ctx, v);
    const size_t n = size_t(16) << 20;
    std::vector<float> x(n);
    CUdeviceptr dx = ctx.alloc(n * 4, MemCategory::Scratch, "x");
    CUdeviceptr dbad = ctx.alloc(4, MemCategory::Scratch, "bad");
    for (int round = 0; round < 8; ++round) {
        std::fill(x.begin(), x.end(), float(round + 1));
        ctx.memset_async(dbad, 0, 4);
        ctx.upload(dx, x.data(), n * 4);
        ctx.launch_with(f, Dim3(4 * unsigned(ctx.device().sm_count)), Dim3(256), 0, (const float*)dx,
                        float(round + 1), (unsigned long long)n, (unsigned*)dbad);
        unsigned bad = 0;
        ctx.download(&bad, dbad, 4);
        EXPECT_EQ(bad, 0u) << "round " << round << ": elements the kernel read before the upload ended";
    }
    ctx.free(dx);
    ctx.free(dbad);
}

}  // namespace
}  // namespace jitllm
