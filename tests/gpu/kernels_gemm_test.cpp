// The matrix-matrix kernel (src/kernels/cuda/gemm.cu, host side backends/cuda/gemm_variant.h):
//  - GemmCompile (no GPU): every weight type x MMA 0/1 compiles with NVRTC for sm_80 and sm_90
//    (plus the EPI / N_MAT / bias combinations for a few types) without register spills.
//  - GemmVsCpu (GPU, skipped without one): every weight type, MMA 0, 1 and 2 (sm_90; quantized
//    weights with 16-bit x only), M in {1, 7, 32, 100,
//    512}, odd row counts, K 256 / 1024 / 4096, every EPI, against cpu::matvec per row of X
//    (+ bias and the epilogue). Errors are measured relative to ||w_r|| * ||x_m|| / sqrt(K),
//    the size of a typical output: MMA <= 1e-2 (f16 rounding of x and of dequantized weights,
//    ~2^-11 per product; bf16 2.5e-2), SIMT <= 1e-4.
//  - GemmBench (GPU, only with JITLLM_GEMM_BENCH=1): TFLOP/s of F16, Q8_0, Q4_0 at M = 512 for
//    Llama-3.1-8B and 3.2-1B shapes, MMA and SIMT. Knobs: JITLLM_GEMM_BENCH_M (512),
//    JITLLM_GEMM_BENCH_TYPE (f16 | q8_0 | q4_0, or a comma list), JITLLM_GEMM_BENCH_NO_SIMT=1, and MMA tiles
//    JITLLM_GEMM_BENCH_BM / _BN / _STAGES.
//  - GemvRowsVsCpu, in the same binary: kernels_gemv_rows.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "backends/cpu/cpu_ops.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/gemm_variant.h"
#include "core/error.h"
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
using test::f16_bits;
using test::g_rng;
using test::random_weights;
using test::row_norms;
using test::urand;

const GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                           GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                           GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

bool is_kquant(GgmlType t) { return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K; }

std::string sym(const GemmSpec& s, const char* what) {
    return fmt::format("test_{}__gemm_{}_{}", what, s.mma == 2 ? (s.x_f16 ? "wgmma_x16" : "wgmma") : s.mma ? "mma" : "simt",
                       type_name(s.wtype));
}

// ------------------------------------------------------------------------------ compile only
TEST(GemmCompile, every_type_and_epilogue_compiles_for_sm80_and_sm90_without_spills) {
    std::vector<std::pair<std::string, Variant>> vs;  // (arch, variant)
    for (const char* arch : {"sm_80", "sm_90"})
        for (GgmlType t : kTypes)
            for (int mma : {1, 0}) {
                GemmSpec s;
                s.wtype = t;
                s.cols = is_kquant(t) ? 1024 : 992;
                s.rows[0] = 1003;
                s.mma = mma;
                vs.emplace_back(arch, gemm_variant(s, sym(s, "plain")));
            }
    // MMA=2 (wgmma, sm_90a): F16/BF16, f32 or 16-bit x, the BN choices; cols 992 = 15.5 K steps
    for (GgmlType t : {GgmlType::F16, GgmlType::BF16})
        for (int x16 : {0, 1})
            for (int bn : {64, 128, 256}) {
                GemmSpec s;
                s.wtype = t;
                s.cols = 992;
                s.rows[0] = 1003;
                s.mma = 2;
                s.x_f16 = x16 != 0;
                s.bn = bn;
                vs.emplace_back("sm_90", gemm_variant(s, sym(s, "plain") + fmt::format("_bn{}", bn)));
            }
    // MMA=2 with quantized weights (16-bit x only), bn 64 / 128 (256 spills a few bytes: the
    // producer's raw registers beside 128 accumulators); cols 992 = 15.5 K steps
    for (GgmlType t : kTypes) {
        if (t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16) continue;
        for (int bn : {64, 128}) {
            GemmSpec s;
            s.wtype = t;
            s.cols = is_kquant(t) ? 1024 : 992;
            s.rows[0] = 1003;
            s.mma = 2;
            s.x_f16 = true;
            s.bn = bn;
            vs.emplace_back("sm_90", gemm_variant(s, sym(s, "plain") + fmt::format("_bn{}", bn)));
        }
    }
    // the split device layout (weights.layout=split) of Q4_0 / Q8_0: MMA 0/1 on both archs, 2 on sm_90
    for (const char* arch : {"sm_80", "sm_90"})
        for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0})
            for (int mma : {2, 1, 0}) {
                if (mma == 2 && std::string(arch) != "sm_90") continue;
                GemmSpec s;
                s.wtype = t;
                s.cols = 1024;
                s.rows[0] = 1003;
                s.mma = mma;
                s.x_f16 = mma == 2;
                s.wsplit = true;
                vs.emplace_back(arch, gemm_variant(s, sym(s, "plain") + "_split"));
                if (mma == 2) {  // one producer warpgroup (the auto choice here is two)
                    s.producers = 1;
                    vs.emplace_back(arch, gemm_variant(s, sym(s, "plain") + "_split_pw1"));
                }
            }
    // split-K (gate gemm.split_k) on the wgmma kernels the 8B shapes take: F16 (bn 128 and 256),
    // Q8_0 / Q4_0 in the split layout (the residual and SwiGLU epilogues too), a raw-ring Q4_0, a K-quant
    for (const auto& [t, bn, wsplit, epi] : std::vector<std::tuple<GgmlType, int, bool, int>>{
             {GgmlType::F16, 128, false, 0}, {GgmlType::F16, 256, false, 1}, {GgmlType::Q8_0, 128, true, 1},
             {GgmlType::Q4_0, 128, true, 2}, {GgmlType::Q4_0, 64, false, 0}, {GgmlType::Q4_K, 128, false, 0}}) {
        GemmSpec s;
        s.wtype = t;
        s.cols = 1024;
        s.rows[0] = 1003;
        s.n_mat = epi == 2 ? 2 : 1;
        s.rows[1] = epi == 2 ? 1003 : 0;
        s.epi = epi;
        s.mma = 2;
        s.x_f16 = true;
        s.bn = bn;
        s.wsplit = wsplit;
        s.split_k = true;
        vs.emplace_back("sm_90", gemm_variant(s, sym(s, "splitk") + fmt::format("_bn{}_epi{}", bn, epi)));
    }
    // fusions on sm_90 for a cp.async type, a register-staged type and a K-quant (+ wgmma)
    for (GgmlType t : {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_K})
        for (int mma : {2, 1, 0}) {
            GemmSpec s;
            s.wtype = t;
            s.cols = 1024;
            s.mma = mma;
            s.x_f16 = mma == 2 && t != GgmlType::F16;
            s.rows[0] = 1003;
            GemmSpec qkv = s;
            qkv.n_mat = 3, qkv.rows[1] = 256, qkv.rows[2] = 136, qkv.has_bias = true;
            GemmSpec res = s;
            res.epi = 1, res.res_scale = 0.22f;
            GemmSpec glu2 = s;
            glu2.epi = 2, glu2.n_mat = 2, glu2.rows[1] = 1003;
            GemmSpec glu1 = s;
            glu1.epi = 2, glu1.up_offset_rows = 1003, glu1.has_bias = true;
            GemmSpec scl = s;
            scl.epi = 3, scl.out_scale = 0.125f;
            vs.emplace_back("sm_90", gemm_variant(qkv, sym(s, "qkv")));
            vs.emplace_back("sm_90", gemm_variant(res, sym(s, "res")));
            vs.emplace_back("sm_90", gemm_variant(glu2, sym(s, "glu2")));
            vs.emplace_back("sm_90", gemm_variant(glu1, sym(s, "glu1")));
            vs.emplace_back("sm_90", gemm_variant(scl, sym(s, "scale")));
        }
    const auto t0 = std::chrono::steady_clock::now();
    int n = 0;
    for (const char* arch : {"sm_80", "sm_90"}) {
        std::vector<Variant> list;
        for (auto& [a, v] : vs)
            if (a == arch) list.push_back(v);
        JitCompiler jit(arch, JitOptions{{false, ""}, 0});
        const auto out = jit.compile_all(list);
        for (const CompiledKernel& k : out) {
            ++n;
            SCOPED_TRACE(k.variant.display_name() + " " + k.arch);
            EXPECT_FALSE(k.cubin.empty());
            if (k.variant.requires_arch_suffix_a) {
                EXPECT_EQ(k.arch, "sm_90a");
            }
            EXPECT_EQ(k.usage.spill_stores, 0) << k.log;
            EXPECT_EQ(k.usage.spill_loads, 0);
            if (k.variant.symbol.rfind("test_plain", 0) == 0 || k.variant.symbol.rfind("test_splitk", 0) == 0)
                std::printf("%-6s %-34s regs %3d\n", k.arch.c_str(), k.variant.symbol.c_str(), k.usage.registers);
        }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%d variants compiled in %.1f s\n", n, s);
}

TEST(GemmVariant, geometry_bytes_flops_and_gate) {
    GemmSpec s;
    s.wtype = GgmlType::F16;
    s.cols = 4096;
    s.rows[0] = 14336;
    s.rows[1] = 14336;
    s.n_mat = 2;
    s.epi = 2;
    const GemmLaunch l = gemm_launch(s, 512);
    EXPECT_EQ(l.grid.x, 4u);
    EXPECT_EQ(l.grid.y, 224u);  // 28672 weight rows / 128
    EXPECT_EQ(l.block.x, 256u);
    EXPECT_EQ(l.smem, 112u * 1024u);
    EXPECT_EQ(gemm_flops(s, 512), 2ull * 512 * 4096 * 28672);
    EXPECT_EQ(gemm_bytes(s, 512), 28672ull * 8192 + 4ull * 512 * 4096 + 4ull * 512 * 14336);
    s.wtype = GgmlType::Q8_0;
    EXPECT_EQ(gemm_launch(s, 1).smem, 96u * 1024u);
    s.mma = 0;
    EXPECT_EQ(gemm_launch(s, 100).grid.x, 2u);
    EXPECT_EQ(gemm_launch(s, 100).grid.y, 448u);
    std::string why;
    EXPECT_TRUE(gemm_mma_supported(GgmlType::Q4_K, 90, &why));
    EXPECT_FALSE(gemm_mma_supported(GgmlType::F16, 75, &why));
    EXPECT_NE(why.find("7.5"), std::string::npos) << why;
    EXPECT_FALSE(gemm_mma_supported(GgmlType::Q2_K, 90, &why));
    EXPECT_EQ(gemm_mma_level(GgmlType::F16, 90), 2);
    EXPECT_EQ(gemm_mma_level(GgmlType::BF16, 90), 2);
    EXPECT_EQ(gemm_mma_level(GgmlType::Q8_0, 90), 2);
    EXPECT_EQ(gemm_mma_level(GgmlType::Q4_0, 90), 2);
    EXPECT_EQ(gemm_mma_level(GgmlType::Q4_K, 90), 1);  // compiles and passes on wgmma, not faster yet
    EXPECT_TRUE(gemm_mma_supported(GgmlType::Q6_K, 90, nullptr, 2));
    EXPECT_EQ(gemm_mma_level(GgmlType::Q8_0, 80), 1);
    EXPECT_EQ(gemm_mma_level(GgmlType::F32, 90), 1);
    EXPECT_EQ(gemm_mma_level(GgmlType::F16, 80), 1);
    EXPECT_EQ(gemm_mma_level(GgmlType::F16, 100), 1);
    EXPECT_EQ(gemm_mma_level(GgmlType::F16, 75), 0);
    EXPECT_FALSE(gemm_mma_supported(GgmlType::F32, 90, &why, 2));
    EXPECT_NE(why.find("mma 1"), std::string::npos) << why;
    {
        GemmSpec w = s;
        w.wtype = GgmlType::BF16;
        w.mma = 2;
        const GemmLaunch lw = gemm_launch(w, 512);
        EXPECT_EQ(lw.block.x, 384u);
        EXPECT_EQ(lw.grid.x, 4u);
        EXPECT_EQ(lw.grid.y, 224u);
        EXPECT_EQ(lw.smem, 1024u + 4u * 256u * 128u + 64u);
        w.x_f16 = true;
        w.bn = 256;
        EXPECT_EQ(gemm_launch(w, 512).grid.y, 112u);
        EXPECT_EQ(gemm_bytes(w, 512), 28672ull * 8192 + 2ull * 512 * 4096 + 4ull * 512 * 14336);
        const Variant vw = gemm_variant(w, "x");
        EXPECT_TRUE(vw.requires_arch_suffix_a);
        EXPECT_EQ(vw.target_arch("sm_90"), "sm_90a");
        w.wtype = GgmlType::Q8_0;
        EXPECT_TRUE(gemm_variant(w, "x").requires_arch_suffix_a);
        w.x_f16 = false;  // quantized weights on wgmma need 16-bit activations
        EXPECT_THROW(gemm_variant(w, "x"), Error);
        w.wtype = GgmlType::F32;
        w.x_f16 = true;
        EXPECT_THROW(gemm_variant(w, "x"), Error);
    }
    const Variant v = gemm_variant(s, "blk_0_ffn__gemm_simt_q8_0");
    EXPECT_EQ(v.display_name(),
              "blk_0_ffn__gemm_simt_q8_0<WTYPE=Q8_0,COLS=4096,N_MAT=2,ROWS0=14336,ROWS1=14336,HAS_BIAS=0,EPI=2,MMA=0>");
    s.cols = 100;
    EXPECT_THROW(gemm_variant(s, "x"), Error);
}

// ------------------------------------------------------------------------------ GPU
uint16_t bf16_bits(float f) {  // round to nearest even (finite values)
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

struct Case {
    int m, cols, rows0, n_mat, epi;
    bool bias;
};

class GemmVsCpu : public ::testing::TestWithParam<GgmlType> {};

TEST_P(GemmVsCpu, matches_cpu_matvec_per_row) {
    std::string why;
    if (!test::cuda_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    const GgmlType t = GetParam();
    CudaContext ctx(0);
    JitCompiler jit(ctx.device().arch, JitOptions{{false, ""}, 0});
    const int cc = ctx.device().cc_major * 10 + ctx.device().cc_minor;
    const int kq = is_kquant(t) ? 256 : 1;
    std::vector<Case> cases = {
        {1, 256, 1003, 1, 0, false},  {7, 1024, 1003, 1, 1, false}, {32, 256, 1003, 3, 0, true},
        {100, 1024, 515, 2, 2, true}, {100, 256, 333, 1, 2, false}, {512, 4096, 259, 1, 3, false},
        {33, 4096, 200, 1, 0, true},
    };
    if (!is_kquant(t)) cases.push_back({7, 992, 130, 1, 0, true});  // COLS % 64 == 32: half a wgmma K step
    for (const Case& c : cases) {
        const int cols = std::max(c.cols, kq);
        GemmSpec s = test::case_spec(t, cols, c.rows0, c.n_mat, c.epi, c.bias);
        // weights per matrix (EPI=2 with one matrix: up rows at up_offset_rows)
        std::vector<std::vector<uint8_t>> W(size_t(c.n_mat));
        std::vector<int> wrows(size_t(c.n_mat));
        for (int i = 0; i < c.n_mat; ++i) {
            wrows[size_t(i)] = (c.epi == 2 && c.n_mat == 1) ? s.up_offset_rows + c.rows0 : s.rows[i];
            W[size_t(i)] = random_weights(t, wrows[size_t(i)], cols, g_rng);
        }
        std::vector<std::vector<float>> B(size_t(c.n_mat));
        for (int i = 0; i < c.n_mat; ++i) {
            B[size_t(i)].resize(size_t(wrows[size_t(i)]));
            for (float& f : B[size_t(i)]) f = urand();
        }
        std::vector<float> X(size_t(c.m) * size_t(cols));
        for (float& f : X) f = urand();
        const int out_rows0 = s.rows[0];
        std::vector<float> R(size_t(c.m) * size_t(out_rows0));
        for (float& f : R) f = urand();

        // CPU reference: raw accumulations per matrix and row, plus scale ||w_r|| * ||x_m|| / sqrt(K)
        const test::CpuProducts cp = test::cpu_products(t, W, wrows, c.n_mat, X, c.m, cols, cpu::XNumerics::Float);
        const auto &acc = cp.acc, &wn = cp.wn;
        const auto& xn = cp.xn;

        Dev dev{ctx, {}};
        CUdeviceptr dw[3] = {0, 0, 0}, db[3] = {0, 0, 0}, dy[3] = {0, 0, 0}, dws[3] = {0, 0, 0};
        // the split device layout of the same weights (weights.layout=split, quant.h)
        const bool can_split = split_layout_type(t) && cols % 256 == 0;
        for (int i = 0; i < c.n_mat; ++i) {
            dw[i] = dev.put(W[size_t(i)].data(), W[size_t(i)].size());
            if (can_split) {
                std::vector<uint8_t> sp(W[size_t(i)].size());
                repack_split_rows(t, W[size_t(i)].data(), sp.data(), wrows[size_t(i)], cols);
                dws[i] = dev.put(sp.data(), sp.size());
            }
            if (c.bias) db[i] = dev.put(B[size_t(i)].data(), B[size_t(i)].size() * 4);
        }
        const int n_out = c.epi == 2 ? 1 : c.n_mat;
        for (int i = 0; i < n_out; ++i) dy[i] = dev.put(nullptr, size_t(c.m) * size_t(s.rows[i]) * 4);
        const CUdeviceptr dx = dev.put(X.data(), X.size() * 4);
        // X_F16 input of MMA=2: x rounded to the weights' 16-bit type on the host
        std::vector<uint16_t> X16(X.size());
        for (size_t i = 0; i < X.size(); ++i) X16[i] = t == GgmlType::BF16 ? bf16_bits(X[i]) : f16_bits(X[i]);
        const CUdeviceptr dx16 = dev.put(X16.data(), X16.size() * 2);
        CUdeviceptr dres = 0;
        if (c.epi == 1) {  // residual aliases y0, as in the decoder
            ctx.upload(dy[0], R.data(), R.size() * 4);
            dres = dy[0];
        }
        // mma 2 (bn 128; x16 for quantized weights), mma 2 x16 (bn 256), mma 2 x16 (bn 64), 1, 0;
        // JITLLM_GEMM_TEST_MMA=n runs level n only
        const int only_mma = std::getenv("JITLLM_GEMM_TEST_MMA") ? std::atoi(std::getenv("JITLLM_GEMM_TEST_MMA")) : -1;
        // runs 5..9: the same with the split layout (Q4_0 / Q8_0, cols % 256 == 0); the wgmma runs
        // again with split-K (SPLIT_K, 3 splits of the K steps where there are 3, uneven): one tile
        // row launched twice (the second launch reuses the counters the first reset and gives the
        // same bits), more rows with grid.z 1 and split
        for (int run_all = 0; run_all < 20; ++run_all) {
            const bool split = run_all % 10 >= 5;
            const bool ksplit = run_all >= 10;
            const int run = run_all % 5;
            if (split && !can_split) continue;
            const int mma = run < 3 ? 2 : run == 3 ? 1 : 0;
            if (mma && !gemm_mma_supported(t, cc, nullptr, mma)) continue;
            if (only_mma >= 0 && mma != only_mma) continue;
            if (ksplit && mma != 2) continue;
            s.mma = mma;
            s.wsplit = split;
            s.split_k = ksplit;
            s.x_f16 = run == 1 || run == 2 || (mma == 2 && t != GgmlType::F16 && t != GgmlType::BF16);  // quantized: 16-bit x only
            s.bn = run == 1 ? 256 : run == 2 ? 64 : 0;
            SCOPED_TRACE(fmt::format("{} mma={} x16={} bn={} split={} split_k={} m={} cols={} rows0={} n_mat={} epi={} bias={}",
                                     type_name(t), mma, int(s.x_f16), s.bn, int(split), int(ksplit), c.m, cols, c.rows0,
                                     c.n_mat, c.epi, c.bias));
            if (gemm_smem_bytes(s) > 227u * 1024u) continue;  // e.g. bn 256 with a raw weight ring
            if (c.epi == 1) ctx.upload(dy[0], R.data(), R.size() * 4);
            const Variant v = gemm_variant(s, sym(s, ksplit ? "vs_cpu_splitk" : "vs_cpu"));
            const CompiledKernel k = jit.compile(v);
            CUmodule mod = ctx.load_module(k.cubin, v.display_name());
            CUfunction f = ctx.function(mod, v.symbol);
            GemmLaunch l = gemm_launch(s, c.m);
            if (l.smem > 48 * 1024) ctx.set_max_dynamic_shared(f, int(l.smem));
            const CUdeviceptr* wp = split ? dws : dw;
            const void *w0 = (void*)wp[0], *w1 = (void*)wp[1], *w2 = (void*)wp[2];
            const float *b0 = (float*)db[0], *b1 = (float*)db[1], *b2 = (float*)db[2];
            float *y0 = (float*)dy[0], *y1 = (float*)dy[1], *y2 = (float*)dy[2];
            const float* xp = (float*)(s.x_f16 ? dx16 : dx);
            const float* rp = (float*)dres;
            const double lim = mma ? (t == GgmlType::BF16 ? 2.5e-2 : 1e-2) : 1e-4;
            auto check = [&](int z) {
                ctx.synchronize();
                double worst = 0;
                const int64_t bad = count_misses(ctx, dy, n_out, s.rows, c.m, lim, [&](int i, int m, int r, size_t o) {
                    return epi_reference(c.epi, c.n_mat, c.bias, i, m, r, s.up_offset_rows, s.res_scale, s.out_scale,
                                         acc, wn, wrows, B, c.epi == 1 ? R[o] : 0.0f, xn[size_t(m)]);
                }, &worst);
                std::printf("%-5s %s%s m=%-3d K=%-4d rows0=%-4d n_mat=%d epi=%d bias=%d z=%d  max scaled err %.3g (limit %.0e) regs %d%s\n",
                            type_name(t), mma == 2 ? (s.x_f16 ? "wg16" : "wgmm") : mma ? "mma " : "simt",
                            split ? (ksplit ? " split splitk" : " split") : ksplit ? " splitk" : "", c.m, cols,
                            c.rows0, c.n_mat, c.epi, int(c.bias), z, worst, lim, k.usage.registers, bad ? "  FAIL" : "");
                EXPECT_EQ(bad, 0) << "grid.z " << z;
            };
            if (!ksplit) {
                ctx.launch_with(f, l.grid, l.block, l.smem, w0, w1, w2, b0, b1, b2, y0, y1, y2, xp, rp, c.m);
                check(1);
                continue;
            }
            // one tile row: the split twice (the second launch reuses the counters the first reset:
            // the same bits); more rows: grid.z 1 (the whole-K code) and the split over every tile row
            const int nk = (cols + 63) / 64, per = (nk + 2) / 3;
            const int zs = (nk + per - 1) / per;
            float* ws = (float*)dev.put(nullptr, gemm_split_ws_floats(s, c.m, zs) * 4);
            int* ctr = (int*)dev.put(nullptr, size_t(gemm_split_counters(s, c.m)) * 4);
            ctx.memset_async(CUdeviceptr(ctr), 0, size_t(gemm_split_counters(s, c.m)) * 4);
            std::vector<float> first;
            const std::vector<int> zlist = c.m > 128 ? std::vector<int>{1, zs} : std::vector<int>{zs, zs};
            for (size_t li = 0; li < zlist.size(); ++li) {
                l.grid.z = unsigned(zlist[li]);
                if (c.epi == 1) ctx.upload(dy[0], R.data(), R.size() * 4);
                ctx.launch_with(f, l.grid, l.block, l.smem, w0, w1, w2, b0, b1, b2, y0, y1, y2, xp, rp, c.m, ws, ctr);
                check(zlist[li]);
                std::vector<float> y(size_t(c.m) * size_t(s.rows[0]));
                ctx.download(y.data(), dy[0], y.size() * 4);
                if (c.m <= 128 && li == 0) first = y;
                if (c.m <= 128 && li == 1) {
                    EXPECT_EQ(0, std::memcmp(first.data(), y.data(), y.size() * 4)) << "split-K twice: different bits";
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GemmVsCpu, ::testing::ValuesIn(kTypes),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// ------------------------------------------------------------------------------ bench
TEST(GemmBench, tflops_at_m512) {
    const char* on = std::getenv("JITLLM_GEMM_BENCH");
    if (!on || std::string(on) != "1") GTEST_SKIP() << "set JITLLM_GEMM_BENCH=1";
    std::string why;
    if (!test::cuda_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    CudaContext ctx(0);
    JitCompiler jit(ctx.device().arch, JitOptions{{false, ""}, 0});
    const int M = std::getenv("JITLLM_GEMM_BENCH_M") ? std::atoi(std::getenv("JITLLM_GEMM_BENCH_M")) : 512;
    struct Shape { const char* name; int n, k; };
    const Shape shapes[] = {{"8B qkv-ish", 4096, 4096}, {"8B gate+up", 28672, 4096}, {"8B down", 4096, 14336},
                            {"1B q/o", 2048, 2048},      {"1B gate+up", 16384, 2048}, {"1B down", 2048, 8192}};
    const bool simt = !std::getenv("JITLLM_GEMM_BENCH_NO_SIMT");
    for (GgmlType t : {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
        for (const Shape& sh : shapes) {
            GemmSpec s;
            s.wtype = t;
            s.cols = sh.k;
            s.rows[0] = sh.n;
            // tuning knobs (MMA only): JITLLM_GEMM_BENCH_BM / _BN / _STAGES
            auto knob = [](const char* n) { const char* v = std::getenv(n); return v ? std::atoi(v) : 0; };
            const int kbm = knob("JITLLM_GEMM_BENCH_BM"), kbn = knob("JITLLM_GEMM_BENCH_BN"), kst = knob("JITLLM_GEMM_BENCH_STAGES");
            const char* only = std::getenv("JITLLM_GEMM_BENCH_TYPE");
            if (only && ("," + std::string(only) + ",").find("," + std::string(type_name(t)) + ",") == std::string::npos) continue;
            const size_t wb = row_bytes(t, uint64_t(sh.k)) * size_t(sh.n);
            Dev dev{ctx, {}};
            std::vector<uint8_t> w(wb);
            for (size_t i = 0; i < wb; ++i) w[i] = uint8_t((i * 7 + 3) & 0x3F);  // small finite values
            const CUdeviceptr dw = dev.put(w.data(), wb);
            std::vector<float> x(size_t(M) * size_t(sh.k), 0.01f);
            const CUdeviceptr dx = dev.put(x.data(), x.size() * 4);
            const std::vector<uint16_t> x16(x.size(), f16_bits(0.01f));
            const CUdeviceptr dx16 = dev.put(x16.data(), x16.size() * 2);
            const CUdeviceptr dy = dev.put(nullptr, size_t(M) * size_t(sh.n) * 4);
            // MMA=2 runs: (x16, bn) = (1, BN2 or 128), (1, 256), (0, BN2 or 128); stages _STAGES2
            const int kbn2 = knob("JITLLM_GEMM_BENCH_BN2"), kst2 = knob("JITLLM_GEMM_BENCH_STAGES2");
            const bool mma2 = gemm_mma_supported(t, ctx.device().cc_major * 10 + ctx.device().cc_minor, nullptr, 2);
            for (int run = 0; run < 5; ++run) {
                const int mma = run < 3 ? 2 : run == 3 ? 1 : 0;
                if (!mma && !simt) continue;
                if (mma == 2 && !mma2) continue;
                if (run == 1 && kbn2 == 256) continue;
                if (run == 2 && t != GgmlType::F16) continue;  // quantized wgmma: 16-bit x only
                s.mma = mma;
                s.x_f16 = run == 0 || run == 1;
                s.bm = mma == 1 ? kbm : 0;
                s.bn = mma == 1 ? kbn : mma == 2 ? (run == 1 ? 256 : kbn2) : 0;
                s.stages = mma == 1 ? kst : mma == 2 ? kst2 : 0;
                // JITLLM_GEMM_BENCH_SPLIT=1: Q4_0/Q8_0 in the split layout (timing only: the bytes are arbitrary)
                s.wsplit = knob("JITLLM_GEMM_BENCH_SPLIT") == 1 && split_layout_type(t) && sh.k % 256 == 0;
                s.producers = mma == 2 && s.bn != 256 ? knob("JITLLM_GEMM_BENCH_PW") : 0;  // 0 auto
                if (gemm_smem_bytes(s) > 227u * 1024u) continue;  // e.g. bn 256 with _STAGES2 >= 5
                const Variant v = gemm_variant(s, sym(s, "bench"));
                const CompiledKernel k = jit.compile(v);
                CUmodule mod = ctx.load_module(k.cubin, v.display_name());
                CUfunction f = ctx.function(mod, v.symbol);
                const GemmLaunch l = gemm_launch(s, M);
                if (l.smem > 48 * 1024) ctx.set_max_dynamic_shared(f, int(l.smem));
                const void *w0 = (void*)dw, *nul = nullptr;
                const float* nf = nullptr;
                float* y0 = (float*)dy;
                float* ny = nullptr;
                const float* xp = (float*)(s.x_f16 ? dx16 : dx);
                auto launch = [&] { ctx.launch_with(f, l.grid, l.block, l.smem, w0, nul, nul, nf, nf, nf, y0, ny, ny, xp, nf, M); };
                for (int i = 0; i < 3; ++i) launch();
                ctx.synchronize();
                const int reps = mma ? 20 : 5;
                const auto t0 = std::chrono::steady_clock::now();
                for (int i = 0; i < reps; ++i) launch();
                ctx.synchronize();
                const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
                const double tf = double(gemm_flops(s, M)) / sec / 1e12;
                const std::string kind = (mma == 2 ? fmt::format("wgmma{} bn{} pw{}", s.x_f16 ? " x16" : "", s.bn ? s.bn : 128, gemm_producers(s))
                                                   : mma ? "mma" : "simt") + std::string(s.wsplit ? " split" : "");
                std::printf("%-5s %-17s M=%d N=%-5d K=%-5d %-11s %8.1f us  %6.1f TFLOP/s  %6.0f GB/s  regs %d\n",
                            type_name(t), kind.c_str(), M, sh.n, sh.k, sh.name, sec * 1e6, tf,
                            double(gemm_bytes(s, M)) / sec / 1e9, k.usage.registers);
                std::fflush(stdout);
            }
        }
    }
}

}  // namespace
}  // namespace jitllm
