// Device-to-device copy bandwidth (see cuda_backend.h): the figure the roofline report and
// `jitllm bench` divide bytes by.
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace jitllm {

double cuda_copy_bandwidth_gb_s(CudaContext& ctx, size_t bytes, int reps) {
    size_t free_b = 0, total_b = 0;
    ctx.mem_info(&free_b, &total_b);
    bytes = std::min(bytes, free_b / 4) & ~((size_t(1) << 20) - 1);  // two buffers, room to spare
    if (bytes == 0)
        fail_device("copy bandwidth: no room for the two copy buffers: {} of {} free",
                    format_bytes(free_b), format_bytes(total_b));
    // buffers and events released on every path (a failed launch throws)
    struct Buffers {
        CudaContext& ctx;
        CUdeviceptr a = 0, b = 0;
        CUevent ev[2] = {nullptr, nullptr};
        ~Buffers() {
            for (CUevent e : ev)
                if (e) ctx.driver().cuEventDestroy(e);
            try {
                ctx.free(a);
                ctx.free(b);
            } catch (const Error&) {
            }
        }
    } buf{ctx};
    const CudaDriver& d = ctx.driver();
    buf.a = ctx.alloc(bytes, MemCategory::Other, "copy bandwidth source");
    buf.b = ctx.alloc(bytes, MemCategory::Other, "copy bandwidth destination");
    ctx.memset_async(buf.a, 1, bytes);
    ctx.memset_async(buf.b, 0, bytes);
    ctx.make_current();
    for (auto& e : buf.ev) JITLLM_CUDA_TRY(d, cuEventCreate(&e, CU_EVENT_DEFAULT));
    std::vector<double> gb_s;
    for (int i = 0; i <= reps; ++i) {  // i == 0: warm-up
        JITLLM_CUDA_TRY(d, cuEventRecord(buf.ev[0], ctx.stream()));
        JITLLM_CUDA_TRY(d, cuMemcpyDtoDAsync(buf.b, buf.a, bytes, ctx.stream()));
        JITLLM_CUDA_TRY(d, cuEventRecord(buf.ev[1], ctx.stream()));
        JITLLM_CUDA_TRY(d, cuEventSynchronize(buf.ev[1]));
        float ms = 0;
        JITLLM_CUDA_TRY(d, cuEventElapsedTime(&ms, buf.ev[0], buf.ev[1]));
        if (i > 0 && ms > 0) gb_s.push_back(2.0 * double(bytes) / (double(ms) * 1e6));
    }
    if (gb_s.empty()) fail_device("copy bandwidth: the copies reported no elapsed time");
    std::sort(gb_s.begin(), gb_s.end());
    const size_t n = gb_s.size();
    return n % 2 ? gb_s[n / 2] : 0.5 * (gb_s[n / 2 - 1] + gb_s[n / 2]);
}

double measure_copy_bandwidth_gb_s(CudaContext& ctx, const std::string& cache_dir) {
    std::string name = ctx.device().name;
    for (auto& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    const std::string path = cache_dir + "/copy_bw_" + name + ".txt";
    {
        std::ifstream f(path);
        double v = 0;
        if (f >> v && v > 0) return v;
    }
    const double v = cuda_copy_bandwidth_gb_s(ctx, size_t(1) << 30, 5);
    ::mkdir(cache_dir.c_str(), 0755);
    std::ofstream(path) << v << "\n";
    return v;
}

}  // namespace jitllm
