// The shared pieces of kernels_gemm_test's files (kernels_gemm_test.cpp: the matrix-matrix
// kernel; kernels_gemv_rows.cpp: gemv.cu over a batch step's rows): the test data's random
// generator, device buffers freed with the test, and the CPU reference of an epilogue's outputs
// with the check of the device's outputs against it, each error scaled by its output's size.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <ostream>
#include <random>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/gemm_variant.h"
#include "core/dtype.h"
#include "quant/quant.h"

namespace jitllm {
// gtest prints a GgmlType parameter by name (ctest's test list shows "q4_0", not its bytes)
inline void PrintTo(GgmlType t, std::ostream* os) { *os << type_name(t); }
}  // namespace jitllm

namespace jitllm::test {

// one generator for every test of the binary: a test's data follow from the draws before it
inline std::mt19937 g_rng(12345);
inline float urand() { return std::uniform_real_distribution<float>(-1.0f, 1.0f)(g_rng); }

// device buffers of a test case, freed with it
struct Dev {
    CudaContext& ctx;
    std::vector<CUdeviceptr> held;
    CUdeviceptr put(const void* p, size_t n) {
        CUdeviceptr d = ctx.alloc(std::max<size_t>(n, 16), MemCategory::Scratch, "gemm test");
        if (p) ctx.upload(d, p, n);
        held.push_back(d);
        return d;
    }
    ~Dev() {
        for (auto d : held) ctx.free(d);
    }
};

// The CPU reference of output (m, r) of matrix i after the epilogue, and the size its error is
// measured against: ||w_r|| * ||x_m|| / sqrt(K) (xnm: ||x_m|| / sqrt(K)), combined for SwiGLU.
// acc[i]: matrix i's raw accumulations, [m][wrows[i]]; wn[i]: its row norms; B[i]: its bias;
// resid: the residual's value at (m, r) (EPI=1); up_off: UP_OFFSET_ROWS (EPI=2 with one matrix).
struct RefOut {
    double ref, scale;
};
inline RefOut epi_reference(int epi, int n_mat, bool bias, int i, int m, int r, int up_off, float res_scale,
                     float out_scale, const std::vector<std::vector<float>>& acc,
                     const std::vector<std::vector<float>>& wn, const std::vector<int>& wrows,
                     const std::vector<std::vector<float>>& B, float resid, float xnm) {
    if (epi == 2) {
        const int ur = n_mat == 2 ? r : r + up_off;
        const size_t ui = n_mat == 2 ? 1 : 0;
        double g = acc[0][size_t(m) * size_t(wrows[0]) + size_t(r)];
        double u = acc[ui][size_t(m) * size_t(wrows[ui]) + size_t(ur)];
        if (bias) {
            g += B[0][size_t(r)];
            u += B[ui][size_t(ur)];
        }
        float gf = float(g), gate_out[1], up[1] = {float(u)};
        cpu::swiglu(&gf, up, gate_out, 1);
        const double sg = wn[0][size_t(r)] * xnm, su = wn[ui][size_t(ur)] * xnm;
        return {gate_out[0], 1.2 * (sg * (std::fabs(u) + su) + su * (std::fabs(g) + sg))};
    }
    double a = acc[size_t(i)][size_t(m) * size_t(wrows[size_t(i)]) + size_t(r)];
    if (bias) a += B[size_t(i)][size_t(r)];
    const double scale = wn[size_t(i)][size_t(r)] * xnm;
    if (epi == 1) {
        float yy = resid;
        const float af = float(a);
        cpu::add_scaled(&yy, &af, res_scale, 1);
        return {yy, scale * res_scale};
    }
    if (epi == 3) return {a * out_scale, scale * out_scale};
    return {a, scale};
}

// A test case's product: type t, `cols` columns, n_mat matrices (the second 256 rows, the third
// 136, both rows0 for EPI=2), the epilogue's constants (residual 0.22, scale 0.125, EPI=2 with
// one matrix: the up rows 5 past the gate rows)
inline GemmSpec case_spec(GgmlType t, int cols, int rows0, int n_mat, int epi, bool bias) {
    GemmSpec s;
    s.wtype = t;
    s.cols = cols;
    s.n_mat = n_mat;
    s.epi = epi;
    s.has_bias = bias;
    s.rows[0] = rows0;
    if (n_mat > 1) s.rows[1] = epi == 2 ? rows0 : 256;
    if (n_mat > 2) s.rows[2] = 136;
    if (epi == 1) s.res_scale = 0.22f;
    if (epi == 3) s.out_scale = 0.125f;
    if (epi == 2 && n_mat == 1) s.up_offset_rows = rows0 + 5;
    return s;
}

// ||row r|| of each of the rows of W (the error scale's weight part)
inline std::vector<float> row_norms(GgmlType t, const std::vector<uint8_t>& W, int rows, int cols) {
    const size_t rb = row_bytes(t, uint64_t(cols));
    std::vector<float> deq(static_cast<size_t>(cols)), wn(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r) {
        dequantize_row(t, W.data() + size_t(r) * rb, deq.data(), cols);
        double ss = 0;
        for (float f : deq) ss += double(f) * f;
        wn[size_t(r)] = float(std::sqrt(ss));
    }
    return wn;
}

// The CPU side of a case: each of the n_mat matrices' raw accumulations per activation row
// (acc[i]: [m][wrows[i]], cpu::matvec with `numerics`), its row norms, and ||x_m|| / sqrt(K) of
// each of the m rows of X (the error scale's activation part)
struct CpuProducts {
    std::vector<std::vector<float>> acc, wn;
    std::vector<float> xn;
};
inline CpuProducts cpu_products(GgmlType t, const std::vector<std::vector<uint8_t>>& W, const std::vector<int>& wrows,
                                int n_mat, const std::vector<float>& X, int m, int cols, cpu::XNumerics numerics) {
    CpuProducts p;
    const size_t rb = row_bytes(t, uint64_t(cols));
    p.acc.resize(size_t(n_mat));
    p.wn.resize(size_t(n_mat));
    for (int i = 0; i < n_mat; ++i) {
        const int nr = wrows[size_t(i)];
        p.acc[size_t(i)].resize(size_t(m) * size_t(nr));
        for (int r = 0; r < m; ++r)
            cpu::matvec(t, W[size_t(i)].data(), rb, nr, cols, X.data() + size_t(r) * size_t(cols),
                        p.acc[size_t(i)].data() + size_t(r) * size_t(nr), 8, numerics);
        p.wn[size_t(i)] = row_norms(t, W[size_t(i)], nr, cols);
    }
    p.xn.resize(size_t(m));
    for (int r = 0; r < m; ++r) {
        double ss = 0;
        for (int k = 0; k < cols; ++k) ss += double(X[size_t(r) * cols + k]) * X[size_t(r) * cols + k];
        p.xn[size_t(r)] = float(std::sqrt(ss) / std::sqrt(double(cols)));
    }
    return p;
}

// The device outputs y_i (n_out matrices, out_rows[i] values a row, m rows, at dy[i]) against the
// CPU's reference(i, row, r, o) (o: the index of (row, r) in y_i), each error scaled by its size;
// reports the first five misses over `lim`, keeps the largest scaled error in *worst and returns
// the misses
inline int64_t count_misses(CudaContext& ctx, const CUdeviceptr* dy, int n_out, const int* out_rows, int m, double lim,
                     const std::function<RefOut(int, int, int, size_t)>& reference, double* worst) {
    int64_t bad = 0;
    for (int i = 0; i < n_out; ++i) {
        std::vector<float> y(size_t(m) * size_t(out_rows[i]));
        ctx.download(y.data(), dy[i], y.size() * 4);
        for (int row = 0; row < m; ++row)
            for (int r = 0; r < out_rows[i]; ++r) {
                const size_t o = size_t(row) * size_t(out_rows[i]) + size_t(r);
                const auto [ref, scale] = reference(i, row, r, o);
                const double e = std::fabs(double(y[o]) - ref) / (scale + 1e-30);
                if (!(e <= lim)) {
                    if (bad < 5)
                        ADD_FAILURE() << "y" << i << "[" << row << "," << r << "] = " << y[o] << ", cpu " << ref
                                      << " (scaled error " << e << ")";
                    ++bad;
                }
                if (e > *worst || std::isnan(e)) *worst = std::isnan(e) ? 1e30 : e;
            }
    }
    return bad;
}

}  // namespace jitllm::test
