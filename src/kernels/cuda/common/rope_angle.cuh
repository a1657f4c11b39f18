// RoPE angle of pair i at position pos, as cpu::rope computes it: the exponent and the product
// in float, pow, sin and cos correctly rounded via double (what glibc's powf/sinf/cosf return in
// all but rare cases), the frequency factor divided in float, YaRN's ramp in float (YARN=1; the
// same steps as core/rope_theta.h rope_yarn_mix, no FMA contraction). Shared by rope.cu and
// gemv.cu's EPI=4. Needs N_ROT, HAS_FREQ_FACTORS; also store_kv for the cache element type.
// ROPE_TABLE=1: read (cos, sin) from a table the host filled instead (no double pow / sincos per
// pair; YaRN is in the table). ATTN_TEMP: q's temperature factor (attn_temperature below).
#pragma once

#include "common/common.cuh"

#ifndef ROPE_TABLE  // 1: freq_factors is the (cos, sin) table [n_ctx][N_ROT / 2] (gate rope.angles=table)
#define ROPE_TABLE 0
#endif
#ifndef YARN  // 1: YaRN's ramp, YARN_FREQ_SCALE (1 / factor), YARN_LOW, YARN_HIGH (correction dims)
#define YARN 0
#endif
#if YARN && (!defined(YARN_FREQ_SCALE) || !defined(YARN_LOW) || !defined(YARN_HIGH))
#error "YARN needs YARN_FREQ_SCALE, YARN_LOW and YARN_HIGH"
#endif
#ifndef ATTN_TEMP  // q times 1 + ATTN_TEMP * ln(floor(pos / ATTN_TEMP_FLOOR) + 1); 0: none
#define ATTN_TEMP 0.0f
#endif
#ifndef ATTN_TEMP_FLOOR
#define ATTN_TEMP_FLOOR 1
#endif

// core/rope_theta.h attn_temperature: the quotient and floor in float, the logarithm in double
__device__ __forceinline__ float attn_temperature(int pos) {
    if (ATTN_TEMP == 0.0f) return 1.0f;
    const float steps = floorf(__fdiv_rn(float(pos), float(ATTN_TEMP_FLOOR)));
    return float(__dadd_rn(__dmul_rn(log(__dadd_rn(double(steps), 1.0)), double(ATTN_TEMP)), 1.0));
}

__device__ __forceinline__ void rope_angle(int pos, int i, const float* freq_factors, float freq_base,
                                           float* c, float* s) {
#if ROPE_TABLE
    // computed on the host with cpu::rope's own float steps (core/rope_theta.h, std::cos/sin)
    const float2 cs = reinterpret_cast<const float2*>(freq_factors)[pos * (N_ROT / 2) + i];
    *c = cs.x;
    *s = cs.y;
    (void)freq_base;
#else
    const float e = -2.0f * float(i) / float(N_ROT);
    float theta = float(pos) * float(pow(double(freq_base), double(e)));
#if HAS_FREQ_FACTORS
    theta = theta / freq_factors[i];
#endif
#if YARN
    {
        const float interp = __fmul_rn(YARN_FREQ_SCALE, theta);
        const float t = __fdiv_rn(__fsub_rn(float(i), YARN_LOW), fmaxf(0.001f, __fsub_rn(YARN_HIGH, YARN_LOW)));
        const float r = __fsub_rn(1.0f, fminf(1.0f, fmaxf(0.0f, t)));
        theta = __fadd_rn(__fmul_rn(interp, __fsub_rn(1.0f, r)), __fmul_rn(theta, r));
    }
#endif
    (void)freq_factors;
    double sd, cd;
    sincos(double(theta), &sd, &cd);
    *c = float(cd);
    *s = float(sd);
#endif
}

__device__ __forceinline__ void store_kv(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_kv(half* p, float v) {
    *reinterpret_cast<uint16_t*>(p) = f32_to_f16(v);
}
