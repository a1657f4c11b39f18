// RoPE angle of pair i at position pos, as cpu::rope computes it: the exponent and the product
// in float, pow, sin and cos correctly rounded via double (what glibc's powf/sinf/cosf return in
// all but rare cases), the frequency factor divided in float. Shared by rope.cu and gemv.cu's
// EPI=4. Needs N_ROT, HAS_FREQ_FACTORS; also store_kv for the cache element type. ROPE_TABLE=1:
// read (cos, sin) from a table the host filled instead (no double pow / sincos per pair).
#pragma once

#include "common/common.cuh"

#ifndef ROPE_TABLE  // 1: freq_factors is the (cos, sin) table [n_ctx][N_ROT / 2] (--rope-table)
#define ROPE_TABLE 0
#endif

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
