// ARM NEON forms of the packed Q4_0 / Q8_0 / F16 / BF16 / F32 products (packed.h, fast_kernels.h),
// for AArch64 CPUs with the dot-product extension (SDOT: Armv8.2 and later), built where the
// compiler targets AArch64. The packed layout is read as four quarters of 4 rows (of a 64-byte run,
// rows 4q .. 4q + 3 are bytes 16q .. 16q + 15), a vector lane one row. Q4_0 / Q8_0: per 32-value
// block, each run's four bytes a row times the activation block's same four bytes broadcast (SDOT,
// signed by signed: Q4_0's nibbles with the activation's correction of their offset of 8, Q8_0's
// bytes read back signed, off 0); one FMA a block with the rows' scales times the activation's.
// F16 / BF16 / F32: a column of the quarter widened in registers, one FMA chain a (row, activation
// row) in value order. The same integer sums and float steps as the x86 forms'.
#include "backends/cpu/fast/fast_kernels.h"

#if defined(__aarch64__)
#include <sys/auxv.h>

#include "backends/cpu/fast/neon_util.h"
#include "core/fp16.h"

namespace jitllm::cpu::fast::detail {
namespace {

// Quarter qt (rows 4 qt .. 4 qt + 3) of a packed Q4_0 / Q8_0 group times C activation rows
template <bool Q4, int C>
JITLLM_NEON_DOT void qp_tile(const uint8_t* g, int qt, int64_t nb, const XBlock* x, float* y, size_t y_stride,
                             int n_valid) {
    constexpr size_t kValues = Q4 ? 256 : 512;
    const uint8x16_t m4 = vdupq_n_u8(0x0F), flip = vdupq_n_u8(0x80);
    const uint8_t* scales = g + size_t(nb) * kValues + 8 * size_t(qt);
    float32x4_t acc[C];
    for (int c = 0; c < C; ++c) acc[c] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p = g + size_t(b) * kValues + 16 * size_t(qt);
        const XBlock* xb[C];
        int32x4_t sum[C];
        for (int c = 0; c < C; ++c) {
            xb[c] = x + size_t(c) * size_t(nb) + size_t(b);
            sum[c] = vdupq_n_s32(xb[c]->cc_all);
        }
        for (int t = 0; t < 8; ++t) {
            int8x16_t w;
            if constexpr (Q4) {  // run t % 4: low nibbles values 4t .., high ones 16 + 4 (t - 4) ..
                const uint8x16_t v = vld1q_u8(p + 64 * (t & 3));
                w = vreinterpretq_s8_u8(t < 4 ? vandq_u8(v, m4) : vshrq_n_u8(v, 4));
            } else {
                w = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(p + 64 * t), flip));
            }
            for (int c = 0; c < C; ++c) sum[c] = vdotq_s32(sum[c], w, bcast4(xb[c]->q + 4 * t));
        }
        const float32x4_t dw = halves(scales + 32 * b);
        for (int c = 0; c < C; ++c)
            acc[c] = vfmaq_f32(acc[c], vcvtq_f32_s32(sum[c]), vmulq_n_f32(dw, xb[c]->d));
    }
    for (int c = 0; c < C; ++c) store_rows(y + size_t(c) * y_stride, acc[c], n_valid);
}

// Four values of a packed float column's quarter (F32, F16 or BF16) as floats
template <GgmlType T>
inline float32x4_t fp_load4(const uint8_t* p) {
    if constexpr (T == GgmlType::F32) return vld1q_f32(reinterpret_cast<const float*>(p));
    else if constexpr (T == GgmlType::F16) return halves(p);
    else return vreinterpretq_f32_u32(vshll_n_u16(vreinterpret_u16_u8(vld1_u8(p)), 16));
}

// U quarters (quarter u at h[u]: value k of its 4 rows at + k * column bytes) times C activation
// rows (row c at X + c * x_stride): one FMA chain a (row, activation row) in value order
template <GgmlType T, int U, int C>
void fp_tile(const uint8_t* const* h, int64_t n, const float* X, size_t x_stride, float* const* y, size_t y_stride,
             const int* n_valid) {
    constexpr size_t kCol = T == GgmlType::F32 ? 64 : 32;
    float32x4_t acc[U][C];
    for (int u = 0; u < U; ++u)
        for (int c = 0; c < C; ++c) acc[u][c] = vdupq_n_f32(0.0f);
    for (int64_t k = 0; k < n; ++k) {
        float32x4_t w[U];
        for (int u = 0; u < U; ++u) w[u] = fp_load4<T>(h[u] + size_t(k) * kCol);
        for (int c = 0; c < C; ++c) {
            const float xv = X[size_t(c) * x_stride + size_t(k)];
            for (int u = 0; u < U; ++u) acc[u][c] = vfmaq_n_f32(acc[u][c], w[u], xv);
        }
    }
    for (int c = 0; c < C; ++c)
        for (int u = 0; u < U; ++u) store_rows(y[u] + size_t(c) * y_stride, acc[u][c], n_valid[u]);
}

// Up to eight quarters of the groups a pass (eight FMA chains even for one activation row)
template <GgmlType T>
void fp_groups(const uint8_t* P, size_t group_bytes, int n_groups, int64_t n, const float* X, size_t x_stride,
               int n_x, float* Y, size_t y_stride, int n_rows) {
    constexpr size_t kQuarter = T == GgmlType::F32 ? 16 : 8;
    auto tile = [&](const uint8_t* const* h, int nu, const int* valid, const float* xj, float* const* yj, auto c) {
        constexpr int kC = decltype(c)::value;
        if (nu == 8) return fp_tile<T, 8, kC>(h, n, xj, x_stride, yj, y_stride, valid);
        if (nu == 4) return fp_tile<T, 4, kC>(h, n, xj, x_stride, yj, y_stride, valid);
        for (int u = 0; u < nu; ++u)
            fp_tile<T, 1, kC>(h + u, n, xj, x_stride, yj + u, y_stride, valid + u);
    };
    fp_part_passes<4, 8>(P, group_bytes, kQuarter, n_groups, n_rows, X, x_stride, n_x, Y, y_stride, tile);
}

}  // namespace

bool cpu_has_neon_dotprod() { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

void quantize_x_neon(const float* x, int64_t nb, int off, XBlock* out) {
    for (int64_t i = 0; i < nb; ++i) {
        float32x4_t v[8], amax = vdupq_n_f32(0.0f);
        for (int k = 0; k < 8; ++k) {
            v[k] = vld1q_f32(x + 32 * i + 4 * k);
            amax = vmaxq_f32(amax, vabsq_f32(v[k]));
        }
        const float am = vmaxvq_f32(amax);
        const float id = am != 0.0f ? 127.0f / am : 0.0f;
        XBlock& o = out[i];
        int32_t q[32];
        // rounded to the nearest, ties to even
        for (int k = 0; k < 8; ++k) vst1q_s32(q + 4 * k, vcvtnq_s32_f32(vmulq_n_f32(v[k], id)));
        for (int k = 0; k < 32; ++k) o.q[k] = int8_t(q[k]);
        block_corrections(q, off, o);
        o.d = fp16_to_fp32(fp32_to_fp16(am / 127.0f));
    }
}

void qp_groups_neon(bool q4, const uint8_t* P, size_t group_bytes, int n_groups, int64_t nb, const XBlock* x,
                    int n_x, float* Y, size_t y_stride, int n_rows) {
    tile_passes<4, 4>(P, group_bytes, n_groups, n_rows, x, nb, n_x, Y, y_stride,
                      [&](const uint8_t* g, int qt, const XBlock* xj, float* yj, int left, auto c) {
                          if (q4) qp_tile<true, decltype(c)::value>(g, qt, nb, xj, yj, y_stride, left);
                          else qp_tile<false, decltype(c)::value>(g, qt, nb, xj, yj, y_stride, left);
                      });
}

void fp_groups_neon(GgmlType t, const uint8_t* P, size_t group_bytes, int n_groups, int64_t n, const float* X,
                    size_t x_stride, int n_x, float* Y, size_t y_stride, int n_rows) {
    auto* f = t == GgmlType::F16    ? fp_groups<GgmlType::F16>
              : t == GgmlType::BF16 ? fp_groups<GgmlType::BF16>
                                    : fp_groups<GgmlType::F32>;
    f(P, group_bytes, n_groups, n, X, x_stride, n_x, Y, y_stride, n_rows);
}

}  // namespace jitllm::cpu::fast::detail

#else  // not AArch64: no NEON forms

namespace jitllm::cpu::fast::detail {
bool cpu_has_neon_dotprod() { return false; }
void quantize_x_neon(const float*, int64_t, int, XBlock*) {}
void qp_groups_neon(bool, const uint8_t*, size_t, int, int64_t, const XBlock*, int, float*, size_t, int) {}
void fp_groups_neon(GgmlType, const uint8_t*, size_t, int, int64_t, const float*, size_t, int, float*, size_t, int) {}
}  // namespace jitllm::cpu::fast::detail

#endif
