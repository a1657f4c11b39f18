// Fast CPU products (see fast_ops.h): the instruction set picked once, activations prepared once a
// call for every row range, weight rows split over the team's threads (team.h).
#include "backends/cpu/fast/fast_ops.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/fast/team.h"

namespace jitllm::cpu::fast {

bool cpu_has_fast_isa(FastIsa isa) {
    switch (isa) {
        case FastIsa::Avx512Vnni: return detail::cpu_has_avx512_vnni();
        case FastIsa::Avx2Fma: return detail::cpu_has_avx2_fma();
        case FastIsa::None: return true;
    }
    return false;
}

const char* fast_isa_name(FastIsa isa) {
    switch (isa) {
        case FastIsa::Avx512Vnni: return "avx512-vnni";
        case FastIsa::Avx2Fma: return "avx2-fma";
        case FastIsa::None: return "none";
    }
    return "none";
}

FastIsa fast_isa() {
    static const FastIsa isa = [] {
        const char* e = std::getenv("JITLLM_CPU_FAST");
        const std::string want = e ? e : "";
        for (FastIsa i : {FastIsa::Avx512Vnni, FastIsa::Avx2Fma, FastIsa::None})
            if ((want.empty() || want == "auto" || want == fast_isa_name(i)) && cpu_has_fast_isa(i)) return i;
        fail_usage("JITLLM_CPU_FAST: expected auto, avx512-vnni, avx2-fma or none (one this CPU has), found '{}'",
                   want);
    }();
    return isa;
}

bool has_matmul(GgmlType t) {
    switch (fast_isa()) {
        case FastIsa::Avx512Vnni:
            return t == GgmlType::Q4_0 || t == GgmlType::Q8_0 || t == GgmlType::F16 || t == GgmlType::F32;
        case FastIsa::Avx2Fma: return t == GgmlType::F16 || t == GgmlType::F32;
        case FastIsa::None: return false;
    }
    return false;
}

namespace {

// Multiply-adds a thread must get before a product is split (a hand-over costs about as much as
// a few thousand)
constexpr int64_t kMinWorkPerThread = int64_t(1) << 16;

// One call's operands, shared by the row ranges (the pool's task captures only its address, so
// handing it over allocates nothing)
struct Job {
    GgmlType t;
    const uint8_t* W;
    size_t row_stride;
    int rows, cols;
    const float* X;
    size_t x_stride;
    int n_x;
    float* Y;
    size_t y_stride;
    const detail::XBlock* xq;  // the integer products' activations (n_x rows of cols / 32 blocks)
    int per;                   // rows a part (a multiple of 8)
};

void run_rows(const Job& j, int r0, int r1) {
    const bool avx512 = fast_isa() == FastIsa::Avx512Vnni;
    if (j.xq) {
        detail::q_rows_avx512(j.t == GgmlType::Q4_0, j.W, j.row_stride, r0, r1, j.cols / 32, j.xq, j.n_x, j.Y,
                              j.y_stride);
        return;
    }
    const bool f16 = j.t == GgmlType::F16;
    if (avx512)
        detail::f_rows_avx512(f16, j.W, j.row_stride, r0, r1, j.cols, j.X, j.x_stride, j.n_x, j.Y, j.y_stride);
    else
        detail::f_rows_avx2(f16, j.W, j.row_stride, r0, r1, j.cols, j.X, j.x_stride, j.n_x, j.Y, j.y_stride);
}

}  // namespace

bool matmul(GgmlType t, const void* W, size_t row_stride, int rows, int cols, const float* X, size_t x_stride,
            int n_x, float* Y, size_t y_stride, int n_threads) {
    if (!has_matmul(t)) return false;
    Job j{t, static_cast<const uint8_t*>(W), row_stride, rows, cols, X, x_stride, n_x, Y, y_stride, nullptr, 0};
    if (t == GgmlType::Q4_0 || t == GgmlType::Q8_0) {
        JITLLM_CHECK(cols % 32 == 0, "{} product over {} columns", type_name(t), cols);
        // grows to the largest call once, then reused: no allocation in the decode loop
        thread_local std::vector<detail::XBlock> xq;
        const size_t nb = size_t(cols) / 32;
        if (xq.size() < nb * size_t(n_x)) xq.resize(nb * size_t(n_x));
        for (int r = 0; r < n_x; ++r)
            detail::quantize_x_avx512(X + size_t(r) * x_stride, int64_t(nb), t == GgmlType::Q4_0 ? 8 : 128,
                                      xq.data() + size_t(r) * nb);
        j.xq = xq.data();
    }
    // rows over the threads once each gets enough work to outweigh the hand-over, in parts of a
    // multiple of 8 rows, about four a thread (the parts go to whichever thread is free first)
    const int64_t work = int64_t(rows) * int64_t(cols) * int64_t(n_x);
    const int n = std::min(n_threads, int(std::max<int64_t>(1, work / kMinWorkPerThread)));
    if (n <= 1 || rows < 16) {
        run_rows(j, 0, rows);
        return true;
    }
    j.per = ((rows + 4 * n - 1) / (4 * n) + 7) & ~7;
    team_for(n, (rows + j.per - 1) / j.per, [&j](int i) { run_rows(j, i * j.per, std::min(j.rows, (i + 1) * j.per)); });
    return true;
}

}  // namespace jitllm::cpu::fast
