// Internal to src/backends/cpu/fast: NEON helpers shared by the AArch64 kernel files.
#pragma once

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstring>

#include "backends/cpu/fast/fast_kernels.h"

// The products' target: SDOT (Armv8.2's dot-product extension)
#define JITLLM_NEON_DOT __attribute__((target("arch=armv8.2-a+dotprod")))

namespace jitllm::cpu::fast::detail {

// The four bytes at p in every 32-bit lane
inline int8x16_t bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// Four f16 values at p as floats
inline float32x4_t halves(const uint8_t* p) { return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p))); }

// Lanes [0, n) of v to y (n in 1 .. 4)
inline void store_rows(float* y, float32x4_t v, int n) {
    float out[4];
    vst1q_f32(out, v);
    std::memcpy(y, out, sizeof(float) * size_t(n));
}

// e^x lane by lane (fast_kernels.h's steps on 4 lanes)
inline float32x4_t exp4(float32x4_t x) {
    const float32x4_t lo = vdupq_n_f32(-87.0f);
    const uint32x4_t tiny = vcltq_f32(x, lo);
    x = vminq_f32(vmaxq_f32(x, lo), vdupq_n_f32(88.0f));
    const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, kLog2e));
    float32x4_t f = vfmsq_f32(x, n, vdupq_n_f32(kLn2Hi));
    f = vfmsq_f32(f, n, vdupq_n_f32(kLn2Lo));
    float32x4_t p = vdupq_n_f32(kExpTaylor[0]);
    for (int i = 1; i < 7; ++i) p = vfmaq_f32(vdupq_n_f32(kExpTaylor[i]), p, f);
    // 2^n built in the exponent field (n in [-126, 127] after the clamp above)
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(vmulq_f32(p, vreinterpretq_f32_s32(e))), tiny));
}

// The 4 lanes summed as (l0 + l2) + (l1 + l3) (one fixed order)
inline float hsum4(float32x4_t a) {
    const float32x2_t s = vadd_f32(vget_low_f32(a), vget_high_f32(a));
    return vget_lane_f32(s, 0) + vget_lane_f32(s, 1);
}

}  // namespace jitllm::cpu::fast::detail
#endif
