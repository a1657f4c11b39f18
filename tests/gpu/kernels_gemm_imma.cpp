// The integer tensor-core GEMM of decode-sized steps (gemm.cu MMA=3, common/gemm_i8.cuh; gate
// batch.imma) and its activation conversion (convert.cu Q8_OUT), in the kernels_gemm_test binary:
//  - GemmImmaCompile (no GPU): Q4_0 / Q8_0 x every epilogue x the tile shapes compile with NVRTC
//    for sm_80 and sm_90 without register spills.
//  - GemmImmaVsCpu (GPU, skipped without one): convert.cu Q8_OUT's rows against quantize_row(Q8_0)
//    in the split layout, byte for byte; then the GEMM on them against cpu::matvec's Engine numerics
//    (the same Q8_0 activation blocks) per row, every epilogue, bias, one to three matrices, rows
//    past the tile (grid.x 2), partial n tiles, every tile width, K shares and ring depth. Errors
//    scaled as GemmVsCpu's (kernels_gemm_test.cpp); limit 1e-4 (the f32 order of the block sums only).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/gemm_variant.h"
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

struct ICase {
    int m, cols, rows0, n_mat, epi;
    bool bias;
    int bm, bn, warps_k, stages;
};
// m past the tile (100 at bm 64), partial n tiles (9, 33, 7), every bn and warps_k, rings of 2 / 3 / 8
const std::vector<ICase> kCases = {
    {1, 256, 1003, 1, 0, false, 8, 64, 2, 0},   {9, 1024, 1003, 1, 1, false, 64, 64, 2, 0},
    {32, 256, 1003, 3, 0, true, 32, 32, 4, 0},  {64, 4096, 515, 2, 2, true, 64, 16, 8, 0},
    {100, 1024, 333, 1, 2, false, 64, 128, 1, 2}, {33, 4096, 200, 1, 3, true, 40, 64, 2, 3},
    {7, 512, 130, 1, 0, true, 8, 16, 1, 8},     {64, 2048, 4096, 1, 1, false, 64, 128, 2, 4},
};

GemmSpec spec_of(GgmlType t, const ICase& c) {
    GemmSpec s = test::case_spec(t, c.cols, c.rows0, c.n_mat, c.epi, c.bias);
    s.mma = 3;
    s.wsplit = true;
    s.bm = c.bm;
    s.bn = c.bn;
    s.warps_k = c.warps_k;
    s.stages = c.stages;
    return s;
}

std::string sym_of(const GemmSpec& s, size_t i) { return fmt::format("test_imma_{}__gemm_imma_{}", i, type_name(s.wtype)); }

Variant q8_convert(int cols) {
    Variant v("cuda/convert.cu", "test__to_q8_rows");
    v.set("N", cols).set("BLOCK", 256).set("Q8_OUT", 1);
    return v;
}

TEST(GemmImmaCompile, q4_0_and_q8_0_every_epilogue_and_tile_compile_without_spills) {
    std::vector<Variant> vs;
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0})
        for (size_t i = 0; i < kCases.size(); ++i) {
            const GemmSpec s = spec_of(t, kCases[i]);
            vs.push_back(gemm_variant(s, sym_of(s, i)));
        }
    vs.push_back(q8_convert(4096));
    for (const char* arch : {"sm_80", "sm_90"}) {
        JitCompiler jit(arch, JitOptions{{false, ""}, 0});
        for (const CompiledKernel& k : jit.compile_all(vs)) {
            SCOPED_TRACE(k.variant.display_name() + " " + k.arch);
            EXPECT_FALSE(k.cubin.empty());
            EXPECT_EQ(k.usage.spill_stores, 0) << k.log;
            EXPECT_EQ(k.usage.spill_loads, 0);
            std::printf("%-6s %-34s regs %3d\n", k.arch.c_str(), k.variant.symbol.c_str(), k.usage.registers);
        }
    }
    // the host's checks of the tile
    GemmSpec s = spec_of(GgmlType::Q4_0, kCases[0]);
    s.bm = 72;
    EXPECT_THROW(gemm_variant(s, "x"), Error);
    s = spec_of(GgmlType::Q4_0, kCases[0]);
    s.wsplit = false;
    EXPECT_THROW(gemm_variant(s, "x"), Error);
    s = spec_of(GgmlType::Q4_K, kCases[0]);
    s.cols = 1024;
    EXPECT_THROW(gemm_variant(s, "x"), Error);
    s = spec_of(GgmlType::Q8_0, kCases[3]);
    EXPECT_EQ(gemm_launch(s, 64).block.x, 256u);  // 1 x 8 warps
    EXPECT_EQ(gemm_launch(s, 100).grid.x, 2u);
    EXPECT_EQ(gemm_launch(s, 100).grid.y, (2u * 515u + 15u) / 16u);
    // stages hold the step's rows: Q8_0, 16 weight rows, bm 64, 4 stages (8 warps sharing the columns)
    EXPECT_EQ(gemm_i8_smem_rows(s, 1), 4u * (16u * 288u + 8u * 288u));
    EXPECT_EQ(gemm_i8_smem_rows(s, 33), 4u * (16u * 288u + 40u * 288u));
    EXPECT_EQ(gemm_i8_smem_rows(s, 100), gemm_launch(s, 100).smem);
    EXPECT_EQ(gemm_launch(s, 1).smem, 4u * (16u * 288u + 64u * 288u));
    std::string why;
    EXPECT_FALSE(gemm_mma_supported(GgmlType::Q4_0, 75, &why, 3));
    EXPECT_NE(why.find("7.5"), std::string::npos) << why;
    EXPECT_FALSE(gemm_mma_supported(GgmlType::F16, 90, &why, 3));
    EXPECT_TRUE(gemm_mma_supported(GgmlType::Q8_0, 80, &why, 3));
}

class GemmImmaVsCpu : public ::testing::TestWithParam<GgmlType> {};

TEST_P(GemmImmaVsCpu, matches_cpu_engine_numerics_per_row) {
    std::string why;
    if (!test::cuda_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    const GgmlType t = GetParam();
    CudaContext ctx(0);
    JitCompiler jit(ctx.device().arch, JitOptions{{false, ""}, 0});
    for (size_t ci = 0; ci < kCases.size(); ++ci) {
        const ICase& c = kCases[ci];
        const GemmSpec s = spec_of(t, c);
        const int cols = c.cols;
        std::vector<int> wrows(size_t(c.n_mat));
        std::vector<std::vector<uint8_t>> W(size_t(c.n_mat));
        std::vector<std::vector<float>> B(size_t(c.n_mat));
        for (int i = 0; i < c.n_mat; ++i) {
            wrows[size_t(i)] = (c.epi == 2 && c.n_mat == 1) ? s.up_offset_rows + c.rows0 : s.rows[i];
            W[size_t(i)] = random_weights(t, wrows[size_t(i)], cols, g_rng);
            B[size_t(i)].resize(size_t(wrows[size_t(i)]));
            for (float& f : B[size_t(i)]) f = urand();
        }
        std::vector<float> X(size_t(c.m) * size_t(cols));
        for (float& f : X) f = urand();
        // a row of zeros and a row with one large value (the scale's two edge cases)
        std::fill(X.begin(), X.begin() + cols, 0.0f);
        if (c.m > 1) X[size_t(cols) + 3] = 50.0f;
        std::vector<float> R(size_t(c.m) * size_t(c.rows0));
        for (float& f : R) f = urand();

        // the CPU: Q8_0 rows in the split layout, and each matrix's products in the Engine numerics
        const uint64_t xr = gemm_xq8_row_bytes(cols);
        std::vector<uint8_t> xq(size_t(c.m) * xr), blocks(row_bytes(GgmlType::Q8_0, uint64_t(cols)));
        for (int m = 0; m < c.m; ++m) {
            quantize_row(GgmlType::Q8_0, X.data() + size_t(m) * size_t(cols), blocks.data(), cols);
            repack_split_rows(GgmlType::Q8_0, blocks.data(), xq.data() + size_t(m) * xr, 1, cols);
        }
        test::CpuProducts cp = test::cpu_products(t, W, wrows, c.n_mat, X, c.m, cols, cpu::XNumerics::Engine);
        for (float& v : cp.xn) v += 1e-3f;  // the zero row: its outputs are the bias alone
        const auto &acc = cp.acc, &wn = cp.wn;
        const auto& xn = cp.xn;

        Dev dev{ctx, {}};
        CUdeviceptr dw[3] = {0, 0, 0}, db[3] = {0, 0, 0}, dy[3] = {0, 0, 0};
        for (int i = 0; i < c.n_mat; ++i) {
            std::vector<uint8_t> sp(W[size_t(i)].size());
            repack_split_rows(t, W[size_t(i)].data(), sp.data(), wrows[size_t(i)], cols);
            dw[i] = dev.put(sp.data(), sp.size());
            if (c.bias) db[i] = dev.put(B[size_t(i)].data(), B[size_t(i)].size() * 4);
        }
        const int n_out = c.epi == 2 ? 1 : c.n_mat;
        for (int i = 0; i < n_out; ++i) dy[i] = dev.put(nullptr, size_t(c.m) * size_t(s.rows[i]) * 4);
        const CUdeviceptr dx = dev.put(X.data(), X.size() * 4);
        const CUdeviceptr dxq = dev.put(nullptr, xq.size());
        if (c.epi == 1) ctx.upload(dy[0], R.data(), R.size() * 4);  // the residual aliases y0

        SCOPED_TRACE(fmt::format("{} case {}: m={} K={} rows0={} n_mat={} epi={} bias={} bm={} bn={} warps_k={} stages={}",
                                 type_name(t), ci, c.m, cols, c.rows0, c.n_mat, c.epi, int(c.bias), c.bm, c.bn,
                                 c.warps_k, c.stages));
        // x -> Q8_0 rows: the CPU's bytes exactly
        const Variant cv = q8_convert(cols);
        const CompiledKernel ck = jit.compile(cv);
        CUfunction cf = ctx.function(ctx.load_module(ck.cubin, cv.display_name()), cv.symbol);
        ctx.launch_with(cf, Dim3(unsigned((cols / 4 + 255) / 256), unsigned(c.m)), Dim3(256), 0, (const float*)dx,
                        (void*)dxq);
        ctx.synchronize();
        std::vector<uint8_t> got(xq.size());
        ctx.download(got.data(), dxq, got.size());
        size_t diff = 0;
        for (size_t i = 0; i < got.size(); ++i) diff += got[i] != xq[i];
        EXPECT_EQ(diff, 0u) << "bytes of the Q8_0 rows differ from quantize_row's";

        const Variant v = gemm_variant(s, sym_of(s, ci));
        const CompiledKernel k = jit.compile(v);
        CUfunction f = ctx.function(ctx.load_module(k.cubin, v.display_name()), v.symbol);
        const GemmLaunch l = gemm_launch(s, c.m);
        if (l.smem > 48 * 1024) ctx.set_max_dynamic_shared(f, int(l.smem));
        // the step's own shared memory, as the backend launches it (stages of the rows it has)
        const unsigned smem = gemm_i8_smem_rows(s, c.m);
        EXPECT_LE(smem, l.smem);
        ctx.launch_with(f, l.grid, l.block, smem, (const void*)dw[0], (const void*)dw[1], (const void*)dw[2],
                        (const float*)db[0], (const float*)db[1], (const float*)db[2], (float*)dy[0], (float*)dy[1],
                        (float*)dy[2], (const float*)dxq, (const float*)(c.epi == 1 ? dy[0] : 0), c.m);
        ctx.synchronize();
        double worst = 0;
        const double lim = 1e-4;
        const int64_t bad = count_misses(ctx, dy, n_out, s.rows, c.m, lim, [&](int i, int m, int r, size_t o) {
            return epi_reference(c.epi, c.n_mat, c.bias, i, m, r, s.up_offset_rows, s.res_scale, s.out_scale, acc, wn,
                                 wrows, B, c.epi == 1 ? R[o] : 0.0f, xn[size_t(m)]);
        }, &worst);
        std::printf("%-5s imma m=%-3d K=%-4d rows0=%-4d n_mat=%d epi=%d bias=%d bm=%-2d bn=%-3d wk=%d  max scaled err "
                    "%.3g (limit %.0e) regs %d%s\n",
                    type_name(t), c.m, cols, c.rows0, c.n_mat, c.epi, int(c.bias), c.bm, c.bn, c.warps_k, worst, lim,
                    k.usage.registers, bad ? "  FAIL" : "");
        EXPECT_EQ(bad, 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Types, GemmImmaVsCpu, ::testing::Values(GgmlType::Q4_0, GgmlType::Q8_0),
                         [](const ::testing::TestParamInfo<GgmlType>& p) { return std::string(type_name(p.param)); });

}  // namespace
}  // namespace jitllm
