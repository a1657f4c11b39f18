// Fast CPU products (see fast_ops.h): the instruction set picked once, activations prepared once a
// call for every row range, weight rows split over the team's threads (team.h).
#include "backends/cpu/fast/fast_ops.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/fast/packed.h"
#include "backends/cpu/fast/team.h"

namespace jitllm::cpu::fast {

bool cpu_has_fast_isa(FastIsa isa) {
    switch (isa) {
        case FastIsa::Avx512Vnni: return detail::cpu_has_avx512_vnni();
        case FastIsa::Avx2Fma: return detail::cpu_has_avx2_fma();
        case FastIsa::NeonDot: return detail::cpu_has_neon_dotprod();
        case FastIsa::None: return true;
    }
    return false;
}

const char* fast_isa_name(FastIsa isa) {
    switch (isa) {
        case FastIsa::Avx512Vnni: return "avx512-vnni";
        case FastIsa::Avx2Fma: return "avx2-fma";
        case FastIsa::NeonDot: return "neon-dotprod";
        case FastIsa::None: return "none";
    }
    return "none";
}

FastIsa fast_isa() {
    static const FastIsa isa = [] {
        const char* e = std::getenv("JITLLM_CPU_FAST");
        const std::string want = e ? e : "";
        bool named = want.empty() || want == "auto";  // the best set the CPU has from the one named on
        for (FastIsa i : {FastIsa::Avx512Vnni, FastIsa::Avx2Fma, FastIsa::NeonDot, FastIsa::None}) {
            named = named || want == fast_isa_name(i);
            if (named && cpu_has_fast_isa(i)) return i;
        }
        fail_usage("JITLLM_CPU_FAST: expected auto, avx512-vnni, avx2-fma, neon-dotprod or none, found '{}'", want);
    }();
    return isa;
}

bool has_matmul(GgmlType t) {
    switch (fast_isa()) {
        case FastIsa::Avx512Vnni:
        case FastIsa::Avx2Fma: return t == GgmlType::F16 || t == GgmlType::F32;
        case FastIsa::NeonDot:
        case FastIsa::None: return false;
    }
    return false;
}

namespace {

// Multiply-adds a thread must get before a product is split (a hand-over costs about as much as
// a few thousand)
constexpr int64_t kMinWorkPerThread = int64_t(1) << 16;
// Parts a thread of a packed product (the parts go to whichever thread is free first, so a job's
// last part is what a thread may wait for)
constexpr int kPartsPerThread = 4;

// One call's operands, shared by the row ranges (the team's parts capture only its address, so
// handing it over allocates nothing)
struct Job {
    bool f16;
    const uint8_t* W;
    size_t row_stride;
    int rows, cols;
    const float* X;
    size_t x_stride;
    int n_x;
    float* Y;
    size_t y_stride;
    int per;  // rows a part (a multiple of 8)
};

void run_rows(const Job& j, int r0, int r1) {
    detail::f_rows_avx2(j.f16, j.W, j.row_stride, r0, r1, j.cols, j.X, j.x_stride, j.n_x, j.Y, j.y_stride);
}

// The activation rows quantized for the integer products (q(x, out): nb blocks of a row; rows over
// the threads where there are several), in a buffer that grows to the largest call once and is
// reused (no allocation in the decode loop)
template <class B, class Q>
const B* quantized(const float* X, size_t x_stride, int n_x, int64_t nb, int n_threads, const Q& q) {
    thread_local std::vector<B> buf;
    if (buf.size() < size_t(nb) * size_t(n_x)) buf.resize(size_t(nb) * size_t(n_x));
    B* out = buf.data();
    team_for(n_x >= 8 ? n_threads : 1, n_x, [&](int r) { q(X + size_t(r) * x_stride, out + size_t(r) * size_t(nb)); });
    return out;
}

// The activation rows in the blocks of the form isa's products (the AVX-512 ones read Q8_0's bytes
// unsigned, off 128; the AVX2 and NEON ones signed, off 0)
void quantize_x(FastIsa isa, bool q4, const float* x, int64_t nb, detail::XBlock* o) {
    const int off = q4 ? 8 : isa == FastIsa::Avx512Vnni ? 128 : 0;
    if (isa == FastIsa::Avx512Vnni) detail::quantize_x_avx512(x, nb, off, o);
    else if (isa == FastIsa::Avx2Fma) detail::quantize_x_avx2(x, nb, off, o);
    else detail::quantize_x_neon(x, nb, off, o);
}
void quantize_xk(FastIsa isa, bool q4k, const float* x, int64_t nb, detail::XBlockK* o) {
    if (isa == FastIsa::Avx512Vnni) detail::quantize_xk_avx512(x, nb, q4k, o);
    else if (isa == FastIsa::Avx2Fma) detail::quantize_xk_avx2(x, nb, q4k, o);
    else detail::quantize_xk_neon(x, nb, q4k, o);
}

// One part of a packed product: groups [g0, g1) of rows [r0, r0 + n) of p (the activations as
// matmul_packed prepared them for the instruction set)
struct Prepared {
    FastIsa isa;
    const detail::XBlock* xq;
    const detail::XBlockK* xk;
    const float* xp;  // AVX-512: fp_panels' layout; AVX2, NEON: the rows as given
    size_t x_stride;
    int n_x;
};

void packed_part(const Prepared& a, const PackedProduct& pr, int g0, int g1) {
    const PackedMatrix& p = *pr.p;
    const uint8_t* Pg = p.data.get() + size_t(pr.r0 / 16 + g0) * p.group_bytes;
    float* Yg = pr.Y + 16 * g0;
    const size_t gb = p.group_bytes;
    const int left = pr.n - 16 * g0, cols = p.cols, ng = g1 - g0;
    const bool q4 = p.t == GgmlType::Q4_0, q4k = p.t == GgmlType::Q4_K;
    switch (a.isa) {
        case FastIsa::Avx512Vnni:
            if (a.xq) return detail::qp_groups_avx512(q4, Pg, gb, ng, cols / 32, a.xq, a.n_x, Yg, pr.y_stride, left);
            if (a.xk) return detail::kp_groups_avx512(q4k, Pg, gb, ng, cols / 256, a.xk, a.n_x, Yg, pr.y_stride, left);
            return detail::fp_groups_avx512(p.t, Pg, gb, ng, cols, a.xp, a.n_x, Yg, pr.y_stride, left);
        case FastIsa::Avx2Fma:
            if (a.xq) return detail::qp_groups_avx2(q4, Pg, gb, ng, cols / 32, a.xq, a.n_x, Yg, pr.y_stride, left);
            if (a.xk) return detail::kp_groups_avx2(q4k, Pg, gb, ng, cols / 256, a.xk, a.n_x, Yg, pr.y_stride, left);
            return detail::fp_groups_avx2(p.t, Pg, gb, ng, cols, a.xp, a.x_stride, a.n_x, Yg, pr.y_stride, left);
        case FastIsa::NeonDot:
            if (a.xq) return detail::qp_groups_neon(q4, Pg, gb, ng, cols / 32, a.xq, a.n_x, Yg, pr.y_stride, left);
            if (a.xk) return detail::kp_groups_neon(q4k, Pg, gb, ng, cols / 256, a.xk, a.n_x, Yg, pr.y_stride, left);
            return detail::fp_groups_neon(p.t, Pg, gb, ng, cols, a.xp, a.x_stride, a.n_x, Yg, pr.y_stride, left);
        case FastIsa::None: return;
    }
}

}  // namespace

bool matmul(GgmlType t, const void* W, size_t row_stride, int rows, int cols, const float* X, size_t x_stride,
            int n_x, float* Y, size_t y_stride, int n_threads) {
    if (!has_matmul(t)) return false;
    Job j{t == GgmlType::F16, static_cast<const uint8_t*>(W), row_stride, rows, cols, X, x_stride, n_x, Y, y_stride, 0};
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

bool matmul_packed(const PackedMatrix& p, int r0, int n, const float* X, size_t x_stride, int n_x, float* Y,
                   size_t y_stride, int n_threads) {
    const PackedProduct one{&p, r0, n, Y, y_stride};
    return matmul_packed(&one, 1, X, x_stride, n_x, n_threads);
}

bool matmul_packed(const PackedProduct* prods, int count, const float* X, size_t x_stride, int n_x, int n_threads) {
    return matmul_packed(fast_isa(), prods, count, X, x_stride, n_x, n_threads);
}

bool matmul_packed(FastIsa isa, const PackedProduct* prods, int count, const float* X, size_t x_stride, int n_x,
                   int n_threads) {
    if (count < 1 || count > kMaxFused || isa == FastIsa::None) return false;
    JITLLM_CHECK(cpu_has_fast_isa(isa), "the {} products on a CPU without them", fast_isa_name(isa));
    const PackedMatrix& p0 = *prods[0].p;
    for (int i = 0; i < count; ++i)
        if (prods[i].r0 % 16 != 0 || prods[i].p->t != p0.t || prods[i].p->cols != p0.cols) return false;
    const bool q4 = p0.t == GgmlType::Q4_0, q4k = p0.t == GgmlType::Q4_K;
    const bool legacy = q4 || p0.t == GgmlType::Q8_0, kq = q4k || p0.t == GgmlType::Q6_K;
    const int cols = p0.cols;
    // the activations as the type's products take them: quantized blocks, or float panels
    // (AVX-512) or the rows as given (AVX2, NEON)
    Prepared a{isa, nullptr, nullptr, X, x_stride, n_x};
    if (legacy) {
        const int64_t nb = cols / 32;
        a.xq = quantized<detail::XBlock>(X, x_stride, n_x, nb, n_threads,
                                         [&](const float* x, detail::XBlock* o) { quantize_x(isa, q4, x, nb, o); });
    } else if (kq) {
        const int64_t nb = cols / 256;
        a.xk = quantized<detail::XBlockK>(X, x_stride, n_x, nb, n_threads,
                                          [&](const float* x, detail::XBlockK* o) { quantize_xk(isa, q4k, x, nb, o); });
    } else if (isa == FastIsa::Avx512Vnni) {
        thread_local std::vector<float> panels;  // grows to the largest call once
        if (panels.size() < size_t(n_x) * size_t(cols)) panels.resize(size_t(n_x) * size_t(cols));
        detail::fp_panels(X, x_stride, n_x, cols, panels.data());
        a.xp = panels.data();
    }
    int groups = 0, rows = 0;
    for (int i = 0; i < count; ++i) groups += (prods[i].n + 15) / 16, rows += prods[i].n;
    const int64_t work = int64_t(rows) * int64_t(cols) * int64_t(n_x);
    const int nt = std::min(n_threads, int(std::max<int64_t>(1, work / kMinWorkPerThread)));
    // groups over the threads, about kPartsPerThread parts a thread (one part on one thread); a part
    // stays within one product
    const int per = nt <= 1 ? groups : std::max(1, (groups + kPartsPerThread * nt - 1) / (kPartsPerThread * nt));
    int first_part[kMaxFused + 1] = {0};
    for (int i = 0; i < count; ++i) first_part[i + 1] = first_part[i] + ((prods[i].n + 15) / 16 + per - 1) / per;
    auto part = [&](int k) {
        int i = 0;
        while (k >= first_part[i + 1]) ++i;
        const int g0 = (k - first_part[i]) * per;
        packed_part(a, prods[i], g0, std::min((prods[i].n + 15) / 16, g0 + per));
    };
    team_for(nt, first_part[count], part);
    return true;
}

}  // namespace jitllm::cpu::fast
