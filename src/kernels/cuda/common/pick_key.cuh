// Decode's pick as one 64-bit key: the value's bits made orderable in the high word, the inverted
// id in the low word, so a larger key is a larger value, or an equal value and a lower id
// (cpu::argmax's "better", runtime/sampler.cpp's order). NaN is 0 (below every number's key); -0
// is taken as +0 (equal values tie by id). Used by argmax.cu (DRAW) and gemv.cu (ARGMAX).
#pragma once

__device__ __forceinline__ unsigned long long pick_key(float v, int id) {
    if (v != v) return 0ull;
    unsigned u = v == 0.0f ? 0u : __float_as_uint(v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((unsigned long long)u << 32) | (0xffffffffu - unsigned(id));
}
__device__ __forceinline__ float pick_key_value(unsigned long long k) {
    const unsigned u = unsigned(k >> 32);
    return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}
__device__ __forceinline__ int pick_key_id(unsigned long long k) { return int(0xffffffffu - unsigned(k)); }
