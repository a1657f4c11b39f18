// cpu::matvec's activation numerics: XNumerics::Engine multiplies Q4_0 / Q8_0 weights by x
// quantized to Q8_0 blocks (quant.h dot_rows_act_q8, llama.cpp's CPU arithmetic) and every other
// type by float x; XNumerics::Float is dot_rows for every type. Threaded and single-threaded runs
// agree bit for bit, and cpu::matmul's rows with their own matvec.
#include <gtest/gtest.h>

#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "quant/quant.h"

namespace jitllm {
namespace {

std::vector<float> random_floats(size_t n, uint64_t seed) {
    std::vector<float> v(n);
    for (float& f : v) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        f = float(double(seed >> 40) / double(1ull << 24)) - 0.5f;
    }
    return v;
}

TEST(CpuMatvec, EngineNumericsPerWeightType) {
    const int n = 256, rows = 130;  // >= 64 rows: the threaded split runs
    const auto x = random_floats(n, 7);
    std::vector<int8_t> q(n);
    std::vector<float> d(n / 32);
    quantize_act_q8(x.data(), n, q.data(), d.data());
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0}) {
        SCOPED_TRACE(type_name(t));
        const size_t rb = row_bytes(t, n);
        const auto wf = random_floats(size_t(n) * rows, 11);
        std::vector<uint8_t> w(rb * rows);
        for (int r = 0; r < rows; ++r) quantize_row(t, wf.data() + size_t(r) * n, w.data() + size_t(r) * rb, n);
        std::vector<float> engine(rows), engine1(rows), flt(rows), want_q(rows), want_f(rows);
        cpu::matvec(t, w.data(), rb, rows, n, x.data(), engine.data(), 2);
        cpu::matvec(t, w.data(), rb, rows, n, x.data(), engine1.data(), 1);
        cpu::matvec(t, w.data(), rb, rows, n, x.data(), flt.data(), 2, cpu::XNumerics::Float);
        dot_rows(t, w.data(), rb, rows, x.data(), n, want_f.data());
        if (act_q8_type(t)) dot_rows_act_q8(t, w.data(), rb, rows, q.data(), d.data(), n, want_q.data());
        for (int r = 0; r < rows; ++r) {
            EXPECT_EQ(engine[size_t(r)], act_q8_type(t) ? want_q[size_t(r)] : want_f[size_t(r)]) << "row " << r;
            EXPECT_EQ(engine1[size_t(r)], engine[size_t(r)]) << "row " << r;
            EXPECT_EQ(flt[size_t(r)], want_f[size_t(r)]) << "row " << r;
        }
    }
}

// cpu::matmul (the batch steps' products) gives every activation row the bits matvec gives it alone:
// 1 to 9 rows (the AVX2 form's passes of 4 and their tails), weight rows beyond several 64 KiB tiles and
// not a multiple of 8, one and two threads, output rows at a stride
TEST(CpuMatmul, EachRowIsItsMatvec) {
    const int n = 512, rows = 300;
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_1}) {
        SCOPED_TRACE(type_name(t));
        const size_t rb = row_bytes(t, n);
        const auto wf = random_floats(size_t(n) * rows, 13);
        std::vector<uint8_t> w(rb * rows);
        for (int r = 0; r < rows; ++r) quantize_row(t, wf.data() + size_t(r) * n, w.data() + size_t(r) * rb, n);
        for (int n_x : {1, 2, 5, 9})
            for (int threads : {1, 2}) {
                const size_t xs = n + 3, ys = rows + 7;
                const auto x = random_floats(xs * size_t(n_x), uint64_t(17 + n_x));
                std::vector<float> y(ys * size_t(n_x), -1.0f), want(rows);
                cpu::matmul(t, w.data(), rb, rows, n, x.data(), xs, n_x, y.data(), ys, threads);
                for (int j = 0; j < n_x; ++j) {
                    cpu::matvec(t, w.data(), rb, rows, n, x.data() + size_t(j) * xs, want.data(), 1);
                    for (int r = 0; r < rows; ++r)
                        ASSERT_EQ(y[size_t(j) * ys + size_t(r)], want[size_t(r)])
                            << n_x << " rows, " << threads << " threads: row " << j << ", output " << r;
                }
            }
    }
}

}  // namespace
}  // namespace jitllm
