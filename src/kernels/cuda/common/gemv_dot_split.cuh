// gemv_dot.cuh's split-layout family (WSPLIT Q4_0 / Q8_0): a step's loads (SplitSet,
// split_load), a 16-byte unit's dp4a product (split_unit), the bulk-ring products (bulk_dot; XREG:
// XRegs, bulk_dot_xr), the EARLY_LOAD names, the step loop (split_walk, rows_dot) and the XROWS
// products (rows_dot_x). Included by gemv_dot.cuh inside its weight-type chain, where these
// stood; device code only.
#pragma once

// Split device layout (gate weights.layout=split, quant.h): a row is its quants (COLS / 2 or
// COLS bytes, 16 per Q4_0 block / 32 per Q8_0 block) then its COLS / 32 f16 scales, both runs
// 16-byte aligned. A lane takes 16-byte units of quants (Q4_0: a whole block, 32 elements;
// Q8_0: half a block, 16 elements) with the unit's scale (a warp's scales are one contiguous
// run), GEMV_SPLIT_U units per row and step; x read once per unit for all R rows.
#define GEMV_STAGED 0
static_assert(COLS % 256 == 0, "WSPLIT: COLS % 256 == 0");
#ifndef GEMV_SPLIT_PIPE
#define GEMV_SPLIT_PIPE 0
#endif
#ifndef GEMV_SPLIT_U  // units per lane per row and step
#define GEMV_SPLIT_U (GEMV_SPLIT_PIPE && WTYPE == Q4_0 ? 1 : 2)
#endif
#define GEMV_QBYTES (WTYPE == Q4_0 ? COLS / 2 : COLS)


// One step's raw units: R rows x GEMV_SPLIT_U units per lane.
template <int R>
struct SplitSet {
    uint4 w[R][GEMV_SPLIT_U];
    uint32_t d[R][GEMV_SPLIT_U];
};

template <int R>
__device__ __forceinline__ void split_load(SplitSet<R>& s, const uint8_t* const* rows, int v0, int gt) {
    constexpr int NV = GEMV_QBYTES / 16, EPU = WTYPE == Q4_0 ? 32 : 16;
#pragma unroll
    for (int u = 0; u < GEMV_SPLIT_U; ++u) {
        const int v = v0 + gt + GROUP * u;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            s.w[r][u] = v < NV ? ldg_stream16(rows[r] + 16 * (unsigned long long)v) : make_uint4(0, 0, 0, 0);
            s.d[r][u] = v < NV ? ldg_stream_u16(rows[r] + GEMV_QBYTES + 2 * ((v * EPU) >> 5)) : 0u;
        }
    }
}

// One 16-byte unit's integer dot product (split_unit and bulk_dot_xr).
#if WTYPE == Q4_0
// Q4_0: word i holds elements 4i..4i+3 (low nibbles, x plane A word i) and 16+4i.. (high nibbles,
// x plane B word i); nibbles 0..15, the -8 via the block's 8 * sum
__device__ __forceinline__ int split_unit_int(uint4 w, uint4 xa, uint4 xb) {
#if GEMV_Q4_SHIFT  // gemv.q4_shift: the form before 2026-12-05 (58df4f9), one chain, each high nibble shifted down
    int t = __dp4a(int(w.x & 0x0F0F0F0Fu), int(xa.x), 0);
    t = __dp4a(int((w.x >> 4) & 0x0F0F0F0Fu), int(xb.x), t);
    t = __dp4a(int(w.y & 0x0F0F0F0Fu), int(xa.y), t);
    t = __dp4a(int((w.y >> 4) & 0x0F0F0F0Fu), int(xb.y), t);
    t = __dp4a(int(w.z & 0x0F0F0F0Fu), int(xa.z), t);
    t = __dp4a(int((w.z >> 4) & 0x0F0F0F0Fu), int(xb.z), t);
    t = __dp4a(int(w.w & 0x0F0F0F0Fu), int(xa.w), t);
    t = __dp4a(int((w.w >> 4) & 0x0F0F0F0Fu), int(xb.w), t);
    return t;
#else
    // two independent chains: the low nibbles, and the high nibbles left in place (16 x the
    // value, unsigned bytes times signed x: dp4a.u32.s32) with one shift at the end; integer
    // sums, so t is the same integer as the one-chain form
    int lo = __dp4a(int(w.x & 0x0F0F0F0Fu), int(xa.x), 0);
    int hi = dp4a_us(w.x & 0xF0F0F0F0u, int(xb.x), 0);
    lo = __dp4a(int(w.y & 0x0F0F0F0Fu), int(xa.y), lo);
    hi = dp4a_us(w.y & 0xF0F0F0F0u, int(xb.y), hi);
    lo = __dp4a(int(w.z & 0x0F0F0F0Fu), int(xa.z), lo);
    hi = dp4a_us(w.z & 0xF0F0F0F0u, int(xb.z), hi);
    lo = __dp4a(int(w.w & 0x0F0F0F0Fu), int(xa.w), lo);
    hi = dp4a_us(w.w & 0xF0F0F0F0u, int(xb.w), hi);
    return lo + (hi >> 4);  // hi is a multiple of 16: the shift is exact
#endif
}
#else
// Q8_0: elements 16v..16v+15, int8 x int8
__device__ __forceinline__ int split_unit_int(uint4 w, uint4 xv) {
    int t = __dp4a(int(w.x), int(xv.x), 0);
    t = __dp4a(int(w.y), int(xv.y), t);
    t = __dp4a(int(w.z), int(xv.z), t);
    return __dp4a(int(w.w), int(xv.w), t);
}
#endif

// 16-byte unit v (Q4_0: block v; Q8_0: half block v) of R rows, w[r] with its f16 scale d[r],
// times x: acc[r] += the unit's dot product (C: the length of x)
template <int R, int C = COLS>
__device__ __forceinline__ void split_unit(const uint4* w, const uint32_t* d, const XSrc& xs, int v, float* acc) {
#if WTYPE == Q4_0
    const uint4 xa = xs.q16(16 * v), xb = xs.q16(C / 2 + 16 * v);
    const float2 xd = xs.qd[v];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int t = split_unit_int(w[r], xa, xb);
        acc[r] += (f16_to_f32(uint16_t(d[r])) * xd.x) * (float(t) - xd.y);
    }
#else
    const uint4 xv = xs.q16(16 * v);
    const float xd = xs.qd[v >> 1].x;
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] += (f16_to_f32(uint16_t(d[r])) * xd) * float(split_unit_int(w[r], xv));
#endif
}

template <int R>
__device__ __forceinline__ void split_dot(const SplitSet<R>& s, const XSrc& xs, int v0, int gt, float* acc) {
    constexpr int NV = GEMV_QBYTES / 16;
#pragma unroll
    for (int u = 0; u < GEMV_SPLIT_U; ++u) {
        const int v = v0 + gt + GROUP * u;
        if (v >= NV) continue;
        uint4 w[R];
        uint32_t d[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            w[r] = s.w[r][u];
            d[r] = s.d[r][u];
        }
        split_unit<R>(w, d, xs, v, acc);
    }
}

#if BULK
// gemv.cu BULK: a warp's item is the BULK_CH-column chunk `c` of its R rows, bulk-copied into the
// shared-memory slot `sm` (row r at r * BULK_RB: the chunk's quants, then its f16 scales); lane
// t takes the chunk's units t, t + 32, ... QB, RB: a row chunk's quant bytes and its bytes with
// the scales; C: the length of x (layer_tail.cu passes its phase's)
template <int R, int QB = BULK_QB, int RB = BULK_RB, int C = COLS>
__device__ __forceinline__ void bulk_dot(const uint8_t* sm, const XSrc& xs, int c, int lane, float* acc) {
    constexpr int NU = QB / 16, EPU = WTYPE == Q4_0 ? 32 : 16;  // units per row chunk, elements per unit
#pragma unroll
    for (int j = 0; j < (NU + 31) / 32; ++j) {
        const int u = lane + 32 * j;
        if (NU % 32 != 0 && u >= NU) break;
        uint4 w[R];
        uint32_t d[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            w[r] = *reinterpret_cast<const uint4*>(sm + r * RB + 16 * u);
            d[r] = *reinterpret_cast<const uint16_t*>(sm + r * RB + QB + 2 * ((u * EPU) >> 5));
        }
        split_unit<R, C>(w, d, xs, c * NU + u, acc);
    }
}
#if XREG
// gemv.cu XREG (the schedule's default where it fits; gemv.x_regs=off: off): a lane's x units of
// every chunk in registers, loaded once after the x prologue, so each item reads only its weights
// from shared memory (the x copy's reads were ~40 bytes a unit against the weights' 16-18 a row).
// Lane t's units of chunk c are c * NU + t + 32 j, the same for every pass; XREG_NX of them
// (BULK_NCH chunks x XREG_J units a chunk). Every producer of the copy (xq8_store, xq8_group_store)
// writes (d, 8 * sum) with an integer 8 * sum, which the Q4_0 form's magic offset needs.
#define XREG_NU (BULK_QB / 16)
#define XREG_J ((XREG_NU + 31) / 32)
#define XREG_NX (BULK_NCH * XREG_J)
static_assert(XREG_NX <= 8, "XREG: at most 8 x units a lane in registers");
constexpr int kXregMagicI = 0x4B400000;      // the bits of 2^23 + 2^22 (12582912.0f)
constexpr float kXregMagicF = 12582912.0f;
struct XRegs {
#if WTYPE == Q4_0
    uint4 a[XREG_NX], b[XREG_NX];
    float2 d[XREG_NX];
#else
    uint4 a[XREG_NX];
    float d[XREG_NX];
#endif
    __device__ __forceinline__ void load(const XSrc& xs, int lane) {
#pragma unroll
        for (int i = 0; i < XREG_NX; ++i) {
            const int u = lane + 32 * (i % XREG_J), v = (i / XREG_J) * XREG_NU + u;
            const bool ok = XREG_NU % 32 == 0 || u < XREG_NU;
#if WTYPE == Q4_0
            a[i] = ok ? xs.q16(16 * v) : make_uint4(0, 0, 0, 0);
            b[i] = ok ? xs.q16(COLS / 2 + 16 * v) : make_uint4(0, 0, 0, 0);
            // (d, 2^23 + 2^22 + 8 * sum): the offset as the magic float the dot's integer is read into
            d[i] = ok ? make_float2(xs.qd[v].x, kXregMagicF + xs.qd[v].y) : make_float2(0.0f, kXregMagicF);
#else
            a[i] = ok ? xs.q16(16 * v) : make_uint4(0, 0, 0, 0);
            d[i] = ok ? xs.qd[v >> 1].x : 0.0f;
#endif
        }
    }
};

// bulk_dot with x from registers: chunk c (the caller's chunk loop is unrolled, so the register
// indices are compile-time constants: `kernels` reports a spill otherwise)
template <int R>
__device__ __forceinline__ void bulk_dot_xr(const uint8_t* sm, const XRegs& xr, int c, int lane, float* acc) {
#pragma unroll
    for (int j = 0; j < XREG_J; ++j) {
        const int u = lane + 32 * j;
        if (XREG_NU % 32 != 0 && u >= XREG_NU) break;
        constexpr int EPU = WTYPE == Q4_0 ? 32 : 16;
        const int i = c * XREG_J + j;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const uint4 w = *reinterpret_cast<const uint4*>(sm + r * BULK_RB + 16 * u);
            const uint32_t d = *reinterpret_cast<const uint16_t*>(sm + r * BULK_RB + BULK_QB + 2 * ((u * EPU) >> 5));
#if WTYPE == Q4_0
            // split_unit's integer read as a float by adding it to the magic's bits (|t| < 2^16, so
            // 2^23 + 2^22 + t is exact) and taking the magic and the offset off in one exact
            // subtraction: float(t) - 8 * sum without the int-to-float conversion, the same value
            const int t = split_unit_int(w, xr.a[i], xr.b[i]);
            const float ft = __int_as_float(t + kXregMagicI) - xr.d[i].y;
            acc[r] += (f16_to_f32(uint16_t(d)) * xr.d[i].x) * ft;
#else
            acc[r] += (f16_to_f32(uint16_t(d)) * xr.d[i]) * float(split_unit_int(w, xr.a[i]));
#endif
        }
    }
}
#endif  // XREG
#endif  // BULK

// EARLY_LOAD (gemv.cu rows_dot_pre) through the plain path's names: set, load and dot of a step
#define GEMV_EARLY_OK (!GEMV_SPLIT_PIPE)
#define GEMV_EARLY_STEP (GROUP * GEMV_SPLIT_U)
template <int R>
using PlainSet = SplitSet<R>;
template <int R>
__device__ __forceinline__ void plain_load(SplitSet<R>& s, const uint8_t* const* rows, int v0, int gt) {
    split_load<R>(s, rows, v0, gt);
}
template <int R>
__device__ __forceinline__ void plain_dot(const SplitSet<R>& s, const XSrc& xs, int v0, int gt, float* acc) {
    split_dot<R>(s, xs, v0, gt, acc);
}

// GEMV_SPLIT_PIPE=1: software-pipelined, the next step's loads issued before this step is
// decoded (two register sets). Default 0: load a step, decode it. H200 tg128 (pipelined vs not,
// one build pair, 2026-11-30): 8B Q4_0 308 vs 327.5, 8B Q8_0 290.6 vs 322.1, 1B Q4_0 1444.8 vs 1437.4,
// 1B Q8_0 1334.3 vs 1226.9 tok/s (docs/performance.md).
// The split loop over a row set's 16-byte steps from v_begin: each step's units loaded, then
// dot(set, v0); GEMV_SPLIT_PIPE=1 (from step 0): the next step's loads go out before dot.
template <int R, typename Dot>
__device__ __forceinline__ void split_walk(const uint8_t* const* rows, int gt, int v_begin, Dot dot) {
    constexpr int NV = GEMV_QBYTES / 16;
    constexpr int STEP = GROUP * GEMV_SPLIT_U;
#if GEMV_SPLIT_PIPE
    (void)v_begin;
    SplitSet<R> a, b;
    split_load<R>(a, rows, 0, gt);
#pragma unroll 1
    for (int v0 = 0; v0 < NV; v0 += 2 * STEP) {
        if (v0 + STEP < NV) split_load<R>(b, rows, v0 + STEP, gt);
        dot(a, v0);
        if (v0 + STEP < NV) {
            if (v0 + 2 * STEP < NV) split_load<R>(a, rows, v0 + 2 * STEP, gt);
            dot(b, v0 + STEP);
        }
    }
#else
#pragma unroll 1
    for (int v0 = v_begin; v0 < NV; v0 += STEP) {
        SplitSet<R> a;
        split_load<R>(a, rows, v0, gt);
        dot(a, v0);
    }
#endif
}
template <int R>
__device__ __forceinline__ void rows_dot(const uint8_t* const* rows, const XSrc& xs, int gt,
                                         float* acc, uint8_t* /*stage*/, int v_begin = 0) {
    split_walk<R>(rows, gt, v_begin, [&](const SplitSet<R>& s, int v0) { split_dot<R>(s, xs, v0, gt, acc); });
}

#if XROWS > 1
// gemv.cu XROWS: one step's R weight rows times the block's nx <= XROWS activation rows (row j's
// int8 copy at xs.q + j * XQB), acc[j * R + r]
template <int R, int XQB>
__device__ __forceinline__ void split_dot_x(const SplitSet<R>& a, const XSrc& xs, int nx, int v0, int gt, float* acc) {
#pragma unroll
    for (int j = 0; j < XROWS; ++j) {
        if (j >= nx) break;
        XSrc xj = xs;
        xj.q = xs.q + j * XQB;
        xj.qd = reinterpret_cast<const float2*>(xs.q + j * XQB + COLS);
        split_dot<R>(a, xj, v0, gt, acc + j * R);
    }
}
// the weights are read once for every row (GEMV_SPLIT_PIPE=1: the next step's loads issued before
// this step's XROWS dot products; the same products in the same order)
template <int R, int XQB>
__device__ __forceinline__ void rows_dot_x(const uint8_t* const* rows, const XSrc& xs, int nx, int gt, float* acc) {
    split_walk<R>(rows, gt, 0, [&](const SplitSet<R>& s, int v0) { split_dot_x<R, XQB>(s, xs, nx, v0, gt, acc); });
}
#endif
