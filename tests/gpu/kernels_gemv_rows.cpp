// gemv.cu over the rows of a batch step (the small-step list, gate batch.small), in the
// kernels_gemm_test binary (GemvRowsVsCpu, GPU, skipped without one): split-layout Q4_0 / Q8_0
// weights, x quantized to Q8_0 blocks as the engine does (cpu::matvec's Engine numerics), every
// epilogue, with and without the fused norm, for XROWS 1 (a block row a step row, grid.y = rows)
// and XROWS 2 / 4 / 8 (batch.xrows: each block reads its weight rows once for up to XROWS step
// rows), against the CPU per row. Errors scaled as GemmVsCpu's (kernels_gemm_test.cpp); limit 1e-4
// (2e-3 with the norm: its sum in another order can move one int8 rounding).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cuda/cuda_device.h"
#include "fixtures/engine_factory.h"  // cuda_available
#include "gpu/kernels_gemm_fixture.h"
#include "gpu/random_weights.h"
#include "jit/jit_compiler.h"
#include "quant/quant.h"

namespace jitllm {
namespace {

using test::count_misses;
using test::Dev;
using test::epi_reference;
using test::g_rng;
using test::random_weights;
using test::row_norms;
using test::urand;

class GemvRowsVsCpu : public ::testing::TestWithParam<GgmlType> {};

TEST_P(GemvRowsVsCpu, matches_cpu_matvec_per_row) {
    std::string why;
    if (!test::cuda_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    const GgmlType t = GetParam();
    CudaContext ctx(0);
    JitCompiler jit(ctx.device().arch, JitOptions{{false, ""}, 0});
    struct GCase {
        int m, cols, rows0, n_mat, epi;
        bool bias, norm;
    };
    const std::vector<GCase> cases = {{1, 256, 1003, 1, 0, false, false}, {3, 512, 515, 3, 0, true, true},
                                      {7, 256, 200, 2, 2, false, true},   {8, 1024, 256, 1, 1, false, false},
                                      {11, 4096, 130, 1, 3, false, true}, {5, 512, 96, 1, 2, true, false}};
    for (const GCase& c : cases) {
        const int cols = c.cols;
        const int rows1 = c.n_mat > 1 ? (c.epi == 2 ? c.rows0 : 256) : 0, rows2 = c.n_mat > 2 ? 136 : 0;
        const int up_off = c.epi == 2 && c.n_mat == 1 ? c.rows0 + 5 : 0;
        std::vector<int> wrows = {c.epi == 2 && c.n_mat == 1 ? up_off + c.rows0 : c.rows0, rows1, rows2};
        std::vector<std::vector<uint8_t>> W(3), WS(3);
        std::vector<std::vector<float>> B(3);
        const size_t rb = row_bytes(t, uint64_t(cols));
        for (int i = 0; i < c.n_mat; ++i) {
            W[size_t(i)] = random_weights(t, wrows[size_t(i)], cols, g_rng);
            WS[size_t(i)].resize(W[size_t(i)].size());
            repack_split_rows(t, W[size_t(i)].data(), WS[size_t(i)].data(), wrows[size_t(i)], cols);
            B[size_t(i)].resize(size_t(wrows[size_t(i)]));
            for (float& f : B[size_t(i)]) f = urand();
        }
        std::vector<float> X(size_t(c.m) * size_t(cols)), NW(static_cast<size_t>(cols)), R(size_t(c.m) * size_t(c.rows0));
        for (float& f : X) f = urand();
        for (float& f : NW) f = 1.0f + 0.2f * urand();
        for (float& f : R) f = urand();
        const float eps = 1e-5f, res_scale = 0.22f, out_scale = 0.125f;
        // CPU: per row, the normed x (as the fused NORM_IN), then each matrix's accumulations
        std::vector<std::vector<float>> acc(3), wn(3);
        std::vector<float> xin(static_cast<size_t>(cols)), xn(static_cast<size_t>(c.m));
        for (int i = 0; i < c.n_mat; ++i) acc[size_t(i)].resize(size_t(c.m) * size_t(wrows[size_t(i)]));
        for (int m = 0; m < c.m; ++m) {
            const float* xm = X.data() + size_t(m) * size_t(cols);
            if (c.norm)
                cpu::rms_norm(xm, NW.data(), xin.data(), cols, eps);
            else
                std::copy(xm, xm + cols, xin.begin());
            double ss = 0;
            for (float f : xin) ss += double(f) * f;
            xn[size_t(m)] = float(std::sqrt(ss) / std::sqrt(double(cols)));
            for (int i = 0; i < c.n_mat; ++i)
                cpu::matvec(t, W[size_t(i)].data(), rb, wrows[size_t(i)], cols, xin.data(),
                            acc[size_t(i)].data() + size_t(m) * size_t(wrows[size_t(i)]), 8, cpu::XNumerics::Engine);
        }
        for (int i = 0; i < c.n_mat; ++i) wn[size_t(i)] = row_norms(t, W[size_t(i)], wrows[size_t(i)], cols);
        Dev dev{ctx, {}};
        CUdeviceptr dw[3] = {0, 0, 0}, db[3] = {0, 0, 0}, dy[3] = {0, 0, 0};
        for (int i = 0; i < c.n_mat; ++i) {
            dw[i] = dev.put(WS[size_t(i)].data(), WS[size_t(i)].size());
            if (c.bias) db[i] = dev.put(B[size_t(i)].data(), B[size_t(i)].size() * 4);
        }
        const int n_out = c.epi == 2 ? 1 : c.n_mat;
        const int out_rows[3] = {c.rows0, rows1, rows2};
        for (int i = 0; i < n_out; ++i) dy[i] = dev.put(nullptr, size_t(c.m) * size_t(out_rows[i]) * 4);
        const CUdeviceptr dx = dev.put(X.data(), X.size() * 4), dnw = dev.put(NW.data(), NW.size() * 4);
        for (int xrows : {1, 2, 4, 8}) {
            SCOPED_TRACE(fmt::format("{} XROWS={} m={} cols={} rows0={} n_mat={} epi={} bias={} norm={}", type_name(t), xrows,
                                     c.m, cols, c.rows0, c.n_mat, c.epi, int(c.bias), int(c.norm)));
            Variant v("cuda/gemv.cu", "gemv_rows_vs_cpu");
            const int rpb = 32;  // 16 warps x 2 rows
            v.set("WTYPE", t == GgmlType::Q4_0 ? "Q4_0" : "Q8_0").set("COLS", cols).set("N_MAT", c.n_mat).set("WSPLIT", 1);
            v.set("ROWS0", c.rows0);
            if (c.n_mat > 1) v.set("ROWS1", rows1);
            if (c.n_mat > 2) v.set("ROWS2", rows2);
            v.set("BLOCK", 512).set("ROWS_PER_BLOCK", rpb).set("REDUCE", 1).set("X_SMEM", 0);
            v.set("NORM_IN", int(c.norm)).set("HAS_BIAS", int(c.bias)).set("EPI", c.epi);
            if (c.epi == 1) v.set("RES_SCALE", "0.22f");
            if (c.epi == 3) v.set("OUT_SCALE", "0.125f");
            if (up_off) v.set("UP_OFFSET_ROWS", up_off);
            if (xrows > 1) v.set("XROWS", xrows).set("WARP_MAJOR", 1);
            const CompiledKernel k = jit.compile(v);
            CUmodule mod = ctx.load_module(k.cubin, v.display_name());
            CUfunction f = ctx.function(mod, v.symbol);
            const unsigned smem = unsigned(xrows) * unsigned(cols + cols / 32 * 8);
            if (smem > 48 * 1024) ctx.set_max_dynamic_shared(f, int(smem));
            const int out_total = c.epi == 2 ? c.rows0 : c.rows0 + rows1 + rows2;
            unsigned gx = unsigned((out_total + rpb - 1) / rpb);
            if (xrows > 1) gx = std::min(gx, unsigned(ctx.device().sm_count));
            const Dim3 grid(gx, unsigned((c.m + xrows - 1) / xrows));
            if (c.epi == 1) ctx.upload(dy[0], R.data(), R.size() * 4);  // the residual aliases y0
            const void *w0 = (void*)dw[0], *w1 = (void*)dw[1], *w2 = (void*)dw[2];
            const float *b0 = (float*)db[0], *b1 = (float*)db[1], *b2 = (float*)db[2];
            float *y0 = (float*)dy[0], *y1 = (float*)dy[1], *y2 = (float*)dy[2];
            const float* xp = (float*)dx;
            const float* nwp = c.norm ? (const float*)dnw : nullptr;
            const float* rp = c.epi == 1 ? (const float*)dy[0] : nullptr;
            const int* pos = nullptr;
            void *kc = nullptr, *vc = nullptr;
            const float* ff = nullptr;
            const float fb = 0.0f;
            if (xrows > 1)
                ctx.launch_with(f, grid, Dim3(512), smem, w0, w1, w2, b0, b1, b2, y0, y1, y2, xp, nwp, rp, eps, pos, kc, vc, ff, fb, c.m);
            else
                ctx.launch_with(f, grid, Dim3(512), smem, w0, w1, w2, b0, b1, b2, y0, y1, y2, xp, nwp, rp, eps, pos, kc, vc, ff, fb);
            ctx.synchronize();
            const double lim = c.norm ? 2e-3 : 1e-4;
            double worst = 0;
            const int64_t bad = count_misses(ctx, dy, n_out, out_rows, c.m, lim, [&](int i, int m, int r, size_t o) {
                return epi_reference(c.epi, c.n_mat, c.bias, i, m, r, up_off, res_scale, out_scale, acc, wn, wrows, B,
                                     c.epi == 1 ? R[o] : 0.0f, xn[size_t(m)]);
            }, &worst);
            std::printf("%-5s gemv rows XROWS=%d m=%-3d K=%-4d rows0=%-4d n_mat=%d epi=%d bias=%d norm=%d  max scaled err %.3g "
                        "(limit %.0e) regs %d%s\n",
                        type_name(t), xrows, c.m, cols, c.rows0, c.n_mat, c.epi, int(c.bias), int(c.norm), worst, lim,
                        k.usage.registers, bad ? "  FAIL" : "");
            EXPECT_EQ(bad, 0);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(SplitTypes, GemvRowsVsCpu, ::testing::Values(GgmlType::Q4_0, GgmlType::Q8_0),
                         [](const auto& info) { return std::string(type_name(info.param)); });

}  // namespace
}  // namespace jitllm
