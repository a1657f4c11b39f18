// ARM NEON forms of the packed K-quant products (packed.h, fast_kernels.h), for AArch64 CPUs with
// the dot-product extension: kernels_kquant_avx512.cpp's steps on a quarter of a group (4 rows,
// bytes 16q .. 16q + 15 of each 64-byte run; a lane one row). The weights' values (Q4_K's nibbles,
// Q6_K's six bits) times the activation's bytes through SDOT, the sub-block sums times the rows'
// scales, Q4_K's mins times the activation's sub-block sums through widening 16-bit products:
// the same integer sums and float steps as the x86 forms'.
#include "backends/cpu/fast/fast_kernels.h"

#if defined(__aarch64__)
#include "backends/cpu/fast/neon_util.h"

namespace jitllm::cpu::fast::detail {
namespace {

// 4 bytes (one a row) widened to 32-bit lanes, unsigned / signed
inline int32x4_t bytes_u32(const uint8_t* p) {
    return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vld1_u8(p)))));
}
inline int32x4_t bytes_i32(const uint8_t* p) {
    return vmovl_s16(vget_low_s16(vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(p)))));
}

// Quarter qt of a packed Q4_K group times C activation rows
template <int C>
JITLLM_NEON_DOT void q4k_tile(const uint8_t* g, int qt, int64_t nb, const XBlockK* x, float* y, size_t y_stride,
                              int n_valid) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    const size_t q4 = 4 * size_t(qt), q16 = 16 * size_t(qt);
    float32x4_t acc[C];
    for (int c = 0; c < C; ++c) acc[c] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p = g + size_t(b) * kQ4kGroupBlock;
        const float32x4_t dw = halves(p + 2304 + 2 * q4), dmin = halves(p + 2336 + 2 * q4);
        const XBlockK* xb[C];
        int32x4_t isum[C];
        for (int c = 0; c < C; ++c) {
            xb[c] = x + size_t(c) * size_t(nb) + size_t(b);
            // the mins (a pair a row) times the activation's sub-block sums (a pair of 16-bit values)
            int32x4_t im = vdupq_n_s32(0);
            for (int i = 0; i < 4; ++i) {
                const int16x8_t mp = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(p + 2176 + 32 * i + 2 * q4)));
                const int16x4_t s = vreinterpret_s16_s32(vdup_n_s32(xb[c]->off[i]));
                im = vaddq_s32(im, vpaddq_s32(vmull_s16(vget_low_s16(mp), s), vmull_s16(vget_high_s16(mp), s)));
            }
            acc[c] = vfmsq_f32(acc[c], vcvtq_f32_s32(im), vmulq_n_f32(dmin, xb[c]->d));
            isum[c] = vdupq_n_s32(0);
        }
        for (int h = 0; h < 4; ++h) {
            const int32x4_t sa = bytes_u32(p + 2048 + 16 * (2 * h) + q4);
            const int32x4_t sb = bytes_u32(p + 2048 + 16 * (2 * h + 1) + q4);
            for (int c = 0; c < C; ++c) {
                const int8_t* q = xb[c]->q + 64 * h;
                int32x4_t ia = vdupq_n_s32(0), ib = ia;
                for (int j = 0; j < 8; ++j) {
                    const uint8x16_t v = vld1q_u8(p + 64 * (8 * h + j) + q16);
                    ia = vdotq_s32(ia, vreinterpretq_s8_u8(vandq_u8(v, m4)), bcast4(q + 4 * j));
                    ib = vdotq_s32(ib, vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), bcast4(q + 32 + 4 * j));
                }
                isum[c] = vmlaq_s32(vmlaq_s32(isum[c], ia, sa), ib, sb);
            }
        }
        for (int c = 0; c < C; ++c)
            acc[c] = vfmaq_f32(acc[c], vcvtq_f32_s32(isum[c]), vmulq_n_f32(dw, xb[c]->d));
    }
    for (int c = 0; c < C; ++c) store_rows(y + size_t(c) * y_stride, acc[c], n_valid);
}

// Quarter qt of a packed Q6_K group times C activation rows
template <int C>
JITLLM_NEON_DOT void q6k_tile(const uint8_t* g, int qt, int64_t nb, const XBlockK* x, float* y, size_t y_stride,
                              int n_valid) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m2 = vdupq_n_u8(0x30);
    const size_t q4 = 4 * size_t(qt), q16 = 16 * size_t(qt);
    float32x4_t acc[C];
    for (int c = 0; c < C; ++c) acc[c] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p = g + size_t(b) * kQ6kGroupBlock;
        const XBlockK* xb[C];
        int32x4_t isum[C];
        for (int c = 0; c < C; ++c) xb[c] = x + size_t(c) * size_t(nb) + size_t(b), isum[c] = vdupq_n_s32(0);
        // as the AVX-512 form: half n, j = 4 jj + t; e[part][t] the values 128n + 32 part + 4j ..
        for (int n = 0; n < 2; ++n)
            for (int jj = 0; jj < 2; ++jj) {
                int8x16_t e[4][4];
                for (int t = 0; t < 4; ++t) {
                    const int j = 4 * jj + t;
                    const uint8x16_t la = vld1q_u8(p + 64 * (16 * n + j) + q16);
                    const uint8x16_t lb = vld1q_u8(p + 64 * (16 * n + 8 + j) + q16);
                    const uint8x16_t qh = vld1q_u8(p + 2048 + 64 * (8 * n + j) + q16);
                    e[0][t] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(la, m4), vandq_u8(vshlq_n_u8(qh, 4), m2)));
                    e[1][t] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(lb, m4), vandq_u8(vshlq_n_u8(qh, 2), m2)));
                    e[2][t] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(la, 4), vandq_u8(qh, m2)));
                    e[3][t] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(lb, 4), vandq_u8(vshrq_n_u8(qh, 2), m2)));
                }
                for (int part = 0; part < 4; ++part) {
                    const int s = 8 * n + 2 * part + jj;
                    const int32x4_t sv = bytes_i32(p + 3072 + 16 * s + q4);
                    for (int c = 0; c < C; ++c) {
                        const int8_t* q = xb[c]->q + 128 * n + 32 * part + 16 * jj;
                        int32x4_t is = vdupq_n_s32(xb[c]->off[s]);
                        for (int t = 0; t < 4; ++t) is = vdotq_s32(is, e[part][t], bcast4(q + 4 * t));
                        isum[c] = vmlaq_s32(isum[c], is, sv);
                    }
                }
            }
        const float32x4_t dw = halves(p + 3328 + 2 * q4);
        for (int c = 0; c < C; ++c)
            acc[c] = vfmaq_f32(acc[c], vcvtq_f32_s32(isum[c]), vmulq_n_f32(dw, xb[c]->d));
    }
    for (int c = 0; c < C; ++c) store_rows(y + size_t(c) * y_stride, acc[c], n_valid);
}

float amax256(const float* xb) {
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int k = 0; k < 64; ++k) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(xb + 4 * k)));
    return vmaxvq_f32(m);
}

// (q saturated to int8 as the AVX-512 form's narrowing; the sum of the values before it)
int32_t q16(const float* x, float iscale, int8_t* q) {
    int32x4_t v[4];
    for (int k = 0; k < 4; ++k) v[k] = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + 4 * k), iscale));
    const int16x8_t a = vcombine_s16(vqmovn_s32(v[0]), vqmovn_s32(v[1]));
    const int16x8_t b = vcombine_s16(vqmovn_s32(v[2]), vqmovn_s32(v[3]));
    vst1q_s8(q, vcombine_s8(vqmovn_s16(a), vqmovn_s16(b)));
    return vaddvq_s32(vaddq_s32(vaddq_s32(v[0], v[1]), vaddq_s32(v[2], v[3])));
}

}  // namespace

void quantize_xk_neon(const float* x, int64_t nb, bool q4k, XBlockK* out) {
    quantize_xk_with(x, nb, q4k, out, amax256, q16);
}

void kp_groups_neon(bool q4k, const uint8_t* P, size_t group_bytes, int n_groups, int64_t nb, const XBlockK* x,
                    int n_x, float* Y, size_t y_stride, int n_rows) {
    tile_passes<4, 4>(P, group_bytes, n_groups, n_rows, x, nb, n_x, Y, y_stride,
                      [&](const uint8_t* g, int qt, const XBlockK* xj, float* yj, int left, auto c) {
                          if (q4k) q4k_tile<decltype(c)::value>(g, qt, nb, xj, yj, y_stride, left);
                          else q6k_tile<decltype(c)::value>(g, qt, nb, xj, yj, y_stride, left);
                      });
}

}  // namespace jitllm::cpu::fast::detail

#else  // not AArch64: no NEON forms

namespace jitllm::cpu::fast::detail {
void quantize_xk_neon(const float*, int64_t, bool, XBlockK*) {}
void kp_groups_neon(bool, const uint8_t*, size_t, int, int64_t, const XBlockK*, int, float*, size_t, int) {}
}  // namespace jitllm::cpu::fast::detail

#endif
