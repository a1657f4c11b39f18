// GEMV inner loops, one per weight type: a group of GROUP threads (a warp, or the whole block)
// adds its partial dot products of R weight rows with x into per-thread accumulators. Included
// by gemv.cu only, after its defines (WTYPE, COLS, GROUP, X_SMEM, NORM_IN). Not an entry point.
//
// Weight reads are 16-byte coalesced loads that bypass L1:
//   F32/F16/BF16  one 16-byte unit (4 or 8 elements) per lane, U units in flight per row
//   Q4_K/Q5_K     8 lanes per 144/176-byte block, lane = one 16-byte qs chunk (32 elements)
//                 plus the block header (broadcast load); 4 blocks per warp per step
//   Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/Q6_K  blocks are only 2-aligned: the group stages a span of
//                 whole blocks into shared memory with aligned 16-byte loads (the next span's
//                 loads are issued before this span is decoded), lanes decode from there
// x is read as float4 (from shared memory when X_SMEM, else through L1 with the norm applied
// on the fly), once per step for all R rows.
#pragma once

#include "common/quant_blocks.cuh"

// GEMV_XQ8 (gemv.cu): Q4_0 / Q8_0 weights multiply x quantized to Q8_0 blocks (the engine's
// numerics, quant.h act_q8_type): shared memory holds the int8 values (Q4_0: two planes, the
// elements 0..15 of every block at 16 * b, elements 16..31 at COLS / 2 + 16 * b, so a lane's
// 16-byte reads of consecutive blocks are conflict-free; Q8_0: in order) and per block (d, 8 *
// sum of the block's values) as a float2 after them. dp4a integer sums, one float product per
// block and row.
#define GEMV_XQ8 (WTYPE == Q4_0 || WTYPE == Q8_0)

#ifndef GEMV_Q4_SHIFT  // gemv.q4_shift: the Q4_0 unit's high nibbles shifted before one dp4a chain
#define GEMV_Q4_SHIFT 0
#endif

// dp4a with unsigned bytes in a and signed bytes in b (PTX dp4a.u32.s32): sum of a_i * b_i + c
__device__ __forceinline__ int dp4a_us(uint32_t a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

#ifndef XREG  // the bulk split-layout loop's x units in registers (bulk_dot_xr; gemv.x_regs=off: 0)
#define XREG 0
#endif

#include "common/xq8_prologue.cuh"  // xq8_store, xq8_prologue, xq8_prologue_rows

// The activation vector x as the inner loops see it (already RMS-normalised when NORM_IN).
struct XSrc {
    const float* p;  // X_SMEM: the normalised copy in shared memory; else x in global memory
    const float* nw; // norm weight (NORM_IN && !X_SMEM)
    float inv;       // 1 / rms (NORM_IN && !X_SMEM)
    const uint8_t* q;   // GEMV_XQ8: the int8 copy in shared memory (layout above)
    const float2* qd;   // GEMV_XQ8: per block (d, 8 * sum q)

    __device__ __forceinline__ uint4 q16(int off) const { return *reinterpret_cast<const uint4*>(q + off); }
    __device__ __forceinline__ int q4(int off) const { return *reinterpret_cast<const int*>(q + off); }

    __device__ __forceinline__ float4 load4(int k) const {
#if X_SMEM
        return *reinterpret_cast<const float4*>(p + k);  // PRECOND: k % 4 == 0
#else
        float4 v = ld_act4(p + k);
#if NORM_IN
        const float4 w = __ldg(reinterpret_cast<const float4*>(nw + k));
        v.x = v.x * inv * w.x;  // same order as rms_norm: x * scale * w
        v.y = v.y * inv * w.y;
        v.z = v.z * inv * w.z;
        v.w = v.w * inv * w.w;
#endif
        return v;
#endif
    }
    __device__ __forceinline__ float load1(int k) const {
#if X_SMEM
        return p[k];
#elif NORM_IN
        return ld_act(p + k) * inv * __ldg(nw + k);
#else
        return ld_act(p + k);
#endif
    }
};

#define GEMV_NSLOT (GROUP / 32)  // warps per group
#define GEMV_STAGE_BYTES 0       // staged types redefine it

// ------------------------------------------------------------------------------------------
#if QK_PLAIN(WTYPE)
#define GEMV_STAGED 0
#define GEMV_VEC (WTYPE == F32 ? 4 : 8)  // elements per 16-byte unit

__device__ __forceinline__ float plain_elem(const uint8_t* row, int k) {
#if WTYPE == F32
    return __ldg(reinterpret_cast<const float*>(row) + k);
#elif WTYPE == F16
    return f16_to_f32(__ldg(reinterpret_cast<const unsigned short*>(row) + k));
#else
    return bf16_to_f32(__ldg(reinterpret_cast<const unsigned short*>(row) + k));
#endif
}

// Sum over the unit's elements of w * x; x0 = elements 0..3, x1 = 4..7 (16-bit types).
__device__ __forceinline__ float plain_unit_dot(uint4 w, float4 x0, float4 x1) {
#if WTYPE == F32
    return dot4(make_float4(__uint_as_float(w.x), __uint_as_float(w.y), __uint_as_float(w.z),
                            __uint_as_float(w.w)), x0);
#elif WTYPE == F16
    return f16_lo(w.x) * x0.x + f16_hi(w.x) * x0.y + f16_lo(w.y) * x0.z + f16_hi(w.y) * x0.w +
           f16_lo(w.z) * x1.x + f16_hi(w.z) * x1.y + f16_lo(w.w) * x1.z + f16_hi(w.w) * x1.w;
#else
    return bf16_lo(w.x) * x0.x + bf16_hi(w.x) * x0.y + bf16_lo(w.y) * x0.z + bf16_hi(w.y) * x0.w +
           bf16_lo(w.z) * x1.x + bf16_hi(w.z) * x1.y + bf16_lo(w.w) * x1.z + bf16_hi(w.w) * x1.w;
#endif
}

#define GEMV_PLAIN_U 4  // 16-byte units per lane, row and step
// EARLY_LOAD on plain types: only when the early set is at most 8 units (GEMV_DR <= 2 rows): the
// gate/up kernel's 4 rows x 4 units (64 registers held across the x prologue) spilled at the
// 2-blocks-per-SM register cap (456 bytes, 1B F16), so it waits
#define GEMV_EARLY_OK (COLS % GEMV_VEC == 0 && GEMV_DR * GEMV_PLAIN_U <= 8)
#define GEMV_EARLY_STEP (GROUP * GEMV_PLAIN_U)  // units of one step (EARLY_LOAD: rows_dot_pre)

// One step's raw units: R rows x GEMV_PLAIN_U per lane (also the EARLY_LOAD set).
template <int R>
struct PlainSet {
    uint4 w[R][GEMV_PLAIN_U];
};

template <int R>
__device__ __forceinline__ void plain_load(PlainSet<R>& s, const uint8_t* const* rows, int v0, int gt) {
    constexpr int NV = COLS / GEMV_VEC;
#pragma unroll
    for (int u = 0; u < GEMV_PLAIN_U; ++u) {
        const int v = v0 + gt + GROUP * u;
#pragma unroll
        for (int r = 0; r < R; ++r)
            s.w[r][u] = v < NV ? ldg_stream16(rows[r] + 16 * (unsigned long long)v) : make_uint4(0, 0, 0, 0);
    }
}

template <int R>
__device__ __forceinline__ void plain_dot(const PlainSet<R>& s, const XSrc& xs, int v0, int gt, float* acc) {
    constexpr int NV = COLS / GEMV_VEC;
#pragma unroll
    for (int u = 0; u < GEMV_PLAIN_U; ++u) {
        const int v = v0 + gt + GROUP * u;
        if (v < NV) {
            const float4 x0 = xs.load4(GEMV_VEC * v);
            const float4 x1 = GEMV_VEC == 8 ? xs.load4(GEMV_VEC * v + 4) : x0;
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r] += plain_unit_dot(s.w[r][u], x0, x1);
        }
    }
}

#if BULK
// gemv.cu BULK: R rows of the BULK_CH-column chunk `c` in the slot `sm` (row r at r * BULK_RB);
// lane t takes the chunk's 16-byte units t, t + 32, ...; x from the float copy in shared memory
template <int R>
__device__ __forceinline__ void bulk_dot(const uint8_t* sm, const XSrc& xs, int c, int lane, float* acc) {
    constexpr int NU = BULK_QB / 16;
#pragma unroll
    for (int j = 0; j < (NU + 31) / 32; ++j) {
        const int u = lane + 32 * j;
        if (NU % 32 != 0 && u >= NU) break;
        const int v = c * NU + u;
        const float4 x0 = xs.load4(GEMV_VEC * v);
        const float4 x1 = GEMV_VEC == 8 ? xs.load4(GEMV_VEC * v + 4) : x0;
#pragma unroll
        for (int r = 0; r < R; ++r)
            acc[r] += plain_unit_dot(*reinterpret_cast<const uint4*>(sm + r * BULK_RB + 16 * u), x0, x1);
    }
}
#endif

template <int R>
__device__ __forceinline__ void rows_dot(const uint8_t* const* rows, const XSrc& xs, int gt,
                                         float* acc, uint8_t* /*stage*/, int v_begin = 0) {
#if COLS % GEMV_VEC == 0
    // rows are 16-byte aligned (PRECOND: W is): whole units
    constexpr int NV = COLS / GEMV_VEC;
#pragma unroll 1  // no hoisting across steps: registers, not ILP, bound occupancy
    for (int v0 = v_begin; v0 < NV; v0 += GROUP * GEMV_PLAIN_U) {
        PlainSet<R> w;
        plain_load<R>(w, rows, v0, gt);
        plain_dot<R>(w, xs, v0, gt, acc);
    }
#else
    // odd row length: rows are not 16-byte aligned; one element per thread per step
    (void)v_begin;
    for (int k = gt; k < COLS; k += GROUP) {
        const float xv = xs.load1(k);
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] += plain_elem(rows[r], k) * xv;
    }
#endif
}

// ------------------------------------------------------------------------------------------
#elif WSPLIT && (WTYPE == Q4_0 || WTYPE == Q8_0)
#include "common/gemv_dot_split.cuh"  // split layout: loads, unit products, bulk and step loops

// ------------------------------------------------------------------------------------------
#elif WTYPE == Q4_K || WTYPE == Q5_K
#define GEMV_STAGED 0
static_assert(COLS % 256 == 0, "K-quant rows are whole 256-element blocks");

template <int R>
__device__ __forceinline__ void rows_dot(const uint8_t* const* rows, const XSrc& xs, int gt,
                                         float* acc, uint8_t* /*stage*/) {
    constexpr int BB = QK_BYTES(WTYPE);
    constexpr int QS = WTYPE == Q4_K ? 16 : 48;  // byte offset of qs in the block
    constexpr int NB = COLS / 256;
    constexpr int BPS = GEMV_NSLOT * 4;  // blocks per group step
    constexpr int U = 1;                 // steps in flight per row (more: register-bound)
    const int lane = gt & 31, slot = gt >> 5;
    const int c8 = lane & 7;         // 16-byte chunk of the block's qs
    const int j = c8 >> 1, h = c8 & 1;  // chunk covers l = 16h..16h+15 of 64-element chunk j
    const int bl = slot * 4 + (lane >> 3);
    for (int b0 = 0; b0 < NB; b0 += BPS * U) {
        uint4 q[R][U], hd[R][U];
#if WTYPE == Q5_K
        uint4 qh[R][U];
#endif
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int b = b0 + BPS * u + bl;
#pragma unroll
            for (int r = 0; r < R; ++r) {
                if (b < NB) {
                    const uint8_t* blk = rows[r] + (unsigned long long)b * BB;
                    hd[r][u] = ldg_stream16(blk);
                    q[r][u] = ldg_stream16(blk + QS + 16 * c8);
#if WTYPE == Q5_K
                    qh[r][u] = ldg_stream16(blk + 16 + 16 * h);
#endif
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int b = b0 + BPS * u + bl;
            if (b >= NB) continue;
            // low-nibble elements e0 + [0,16) (sub-block 2j), high-nibble e0 + 32 + [0,16)
            const int e0 = b * 256 + 64 * j + 16 * h;
            float dl[R], dh[R];
#pragma unroll
            for (int r = 0; r < R; ++r) {
                dl[r] = dh[r] = 0.0f;
                q[r][u] = rot4(q[r][u], j);
#if WTYPE == Q5_K
                qh[r][u] = rot4(qh[r][u], j);
#endif
            }
            float sxl = 0.0f, sxh = 0.0f;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int wi = (i + j) & 3;  // original word index of rotated word i
                const float4 xl = xs.load4(e0 + 4 * wi);
                const float4 xh = xs.load4(e0 + 32 + 4 * wi);
                sxl += (xl.x + xl.y) + (xl.z + xl.w);
                sxh += (xh.x + xh.y) + (xh.z + xh.w);
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const uint32_t w = word4(q[r][u], i);
#if WTYPE == Q4_K
                    dl[r] += nib4_dot<false>(w, xl, 0.0f);
                    dh[r] += nib4_dot<true>(w, xh, 0.0f);
#else
                    // fifth bit of element l: bit 2j (low nibbles) / 2j+1 (high) of qh[l]
                    const uint32_t hb = word4(qh[r][u], i) >> (2 * j);
                    const uint32_t lo5 = (w & 0x0F0F0F0Fu) | ((hb & 0x01010101u) << 4);
                    const uint32_t hi5 = ((w >> 4) & 0x0F0F0F0Fu) | ((hb & 0x02020202u) << 3);
                    dl[r] += byte4_dot(lo5, xl, 0.0f);
                    dh[r] += byte4_dot(hi5, xh, 0.0f);
#endif
                }
            }
#pragma unroll
            for (int r = 0; r < R; ++r) {
                // x = d * sc * q - dmin * m per sub-block
                const float d = f16_lo(hd[r][u].x), dmin = f16_hi(hd[r][u].x);
                uint32_t sc, mn;
                k4_scale_min_pair(j, hd[r][u].y, hd[r][u].z, hd[r][u].w, sc, mn);
                acc[r] += (d * byte_as_float(sc, 0, 0.0f)) * dl[r] - (dmin * byte_as_float(mn, 0, 0.0f)) * sxl;
                acc[r] += (d * byte_as_float(sc, 1, 0.0f)) * dh[r] - (dmin * byte_as_float(mn, 1, 0.0f)) * sxh;
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
#else  // staged types
#define GEMV_STAGED 1
static_assert(COLS % QK_ELEMS(WTYPE) == 0, "quantized rows are whole blocks");

// Lanes per block and sub-steps per staged span (span = 32 / LPB * SUB blocks per warp).
#if WTYPE == Q6_K
#define GEMV_LPB 32
#define GEMV_SUB (GROUP == 32 ? 4 : 1)
#elif WTYPE == Q8_0
#define GEMV_LPB 8
#define GEMV_SUB (GROUP == 32 ? 8 : 2)
#else  // Q4_0, Q4_1, Q5_0, Q5_1
#define GEMV_LPB 4
#define GEMV_SUB (GROUP == 32 ? 4 : 1)
#endif
#define GEMV_BB QK_BYTES(WTYPE)
#define GEMV_SPAN_BLOCKS (GEMV_NSLOT * (32 / GEMV_LPB) * GEMV_SUB)  // blocks per group span
#define GEMV_N16 ((GEMV_SPAN_BLOCKS * GEMV_BB) / 16 + 2)          // 16-byte loads per row, max
#undef GEMV_STAGE_BYTES
#define GEMV_STAGE_BYTES (GEMV_N16 * 16 + 16)                      // per row, with read slack

// Adds the R rows' dot products over quant block `qb` (global index in the row), whose bytes
// start at byte `p` of each row's stage buffer (stage + r * GEMV_STAGE_BYTES).
template <int R>
__device__ __forceinline__ void staged_block(const uint8_t* stage, const int* p, int qb, int lane,
                                             const XSrc& xs, float* acc) {
#if WTYPE == Q8_0
    // lane t of 8: qs bytes 4t..4t+3 = elements 4t..4t+3, int8 x int8 (GEMV_XQ8)
    const int t = lane & 7;
    const int xv = xs.q4(qb * 32 + 4 * t);
    const float xd = xs.qd[qb].x;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const uint8_t* sb = stage + r * GEMV_STAGE_BYTES;
        const float d = f16_to_f32(smem_u16(sb, p[r]));
        const int w = int(smem_u32(sb, p[r] + 2 + 4 * t));
        acc[r] += (d * xd) * float(__dp4a(w, xv, 0));
    }
#elif WTYPE == Q6_K
    // lane = (n, s, t): ql word 4*lane holds elements 128n + 32s + 4t + [0,4) (low nibbles)
    // and +64 (high); their bits 4-5 are in qh word 128 + 32n + 4t, bit pairs 2s and 2s+4
    const int n = lane >> 4, s = (lane >> 3) & 1, t = lane & 7;
    const int e = qb * 256 + 128 * n + 32 * s + 4 * t;
    const float4 xl = xs.load4(e), xh = xs.load4(e + 64);
    const int isc = 192 + 8 * n + (t >> 2) + 2 * s;  // scale of the low quarter; high is +4
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const uint8_t* sb = stage + r * GEMV_STAGE_BYTES;
        const uint32_t ql = smem_u32(sb, p[r] + 4 * lane);
        const uint32_t qh = smem_u32(sb, p[r] + 128 + 32 * n + 4 * t) >> (2 * s);
        const uint32_t lo6 = (ql & 0x0F0F0F0Fu) | ((qh & 0x03030303u) << 4);
        const uint32_t hi6 = ((ql >> 4) & 0x0F0F0F0Fu) | ((qh & 0x30303030u));
        const float d = f16_to_f32(smem_u16(sb, p[r] + 208));
        const float scl = float(int8_t(sb[p[r] + isc])), sch = float(int8_t(sb[p[r] + isc + 4]));
        acc[r] += (d * scl) * byte4_dot(lo6, xl, 32.0f) + (d * sch) * byte4_dot(hi6, xh, 32.0f);
    }
#else
    // Q4_0/Q4_1/Q5_0/Q5_1, lane t of 4: qs bytes 4t..4t+3 hold elements 4t.. (low nibbles)
    // and 16 + 4t.. (high nibbles)
    constexpr int QS = WTYPE == Q4_0 ? 2 : WTYPE == Q4_1 ? 4 : WTYPE == Q5_0 ? 6 : 8;
    const int t = lane & 3;
#if WTYPE == Q4_0
    // int8 x (GEMV_XQ8): nibbles 0..15 times x, minus 8 * the lane's x sum
    const int xl = xs.q4(16 * qb + 4 * t), xh = xs.q4(COLS / 2 + 16 * qb + 4 * t);
    const float xd = xs.qd[qb].x;
    const int x8 = __dp4a(0x08080808, xl, __dp4a(0x08080808, xh, 0));
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const uint8_t* sb = stage + r * GEMV_STAGE_BYTES;
        const float d = f16_to_f32(smem_u16(sb, p[r]));
        const uint32_t w = smem_u32(sb, p[r] + QS + 4 * t);
        const int isum = __dp4a(int((w >> 4) & 0x0F0F0F0Fu), xh, __dp4a(int(w & 0x0F0F0F0Fu), xl, 0));
        acc[r] += (d * xd) * float(isum - x8);
    }
#else
    const float4 xl = xs.load4(qb * 32 + 4 * t), xh = xs.load4(qb * 32 + 16 + 4 * t);
#if WTYPE == Q4_1 || WTYPE == Q5_1
    const float sx = ((xl.x + xl.y) + (xl.z + xl.w)) + ((xh.x + xh.y) + (xh.z + xh.w));
#endif
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const uint8_t* sb = stage + r * GEMV_STAGE_BYTES;
        const float d = f16_to_f32(smem_u16(sb, p[r]));
        const uint32_t w = smem_u32(sb, p[r] + QS + 4 * t);
#if WTYPE == Q4_1
        const float m = f16_to_f32(smem_u16(sb, p[r] + 2));
        acc[r] += d * (nib4_dot<false>(w, xl, 0.0f) + nib4_dot<true>(w, xh, 0.0f)) + m * sx;
#else
        // bit 4 of element i is bit i of the qh word: spread bits 4t..4t+3 (low nibbles) and
        // 16+4t.. (high) to bit 4 of each byte
        const uint32_t qh = smem_u32(sb, p[r] + QS - 4);
        const uint32_t hl = (((qh >> (4 * t)) & 0xFu) * 0x00204081u) & 0x01010101u;
        const uint32_t hh = (((qh >> (16 + 4 * t)) & 0xFu) * 0x00204081u) & 0x01010101u;
        const uint32_t lo5 = (w & 0x0F0F0F0Fu) | (hl << 4);
        const uint32_t hi5 = ((w >> 4) & 0x0F0F0F0Fu) | (hh << 4);
#if WTYPE == Q5_0
        acc[r] += d * (byte4_dot(lo5, xl, 16.0f) + byte4_dot(hi5, xh, 16.0f));
#else
        const float m = f16_to_f32(smem_u16(sb, p[r] + 2));
        acc[r] += d * (byte4_dot(lo5, xl, 0.0f) + byte4_dot(hi5, xh, 0.0f)) + m * sx;
#endif
#endif
    }
#endif  // WTYPE == Q4_0
#endif
}

// group barrier: the group is one warp (REDUCE=1) or the whole block (REDUCE=0)
__device__ __forceinline__ void group_sync() {
#if GROUP == 32
    __syncwarp();
#else
    __syncthreads();
#endif
}

template <int R>
__device__ __forceinline__ void rows_dot(const uint8_t* const* rows, const XSrc& xs, int gt,
                                         float* acc, uint8_t* stage) {
    constexpr int NB = COLS / QK_ELEMS(WTYPE);
    constexpr int SPAN = GEMV_SPAN_BLOCKS;
    constexpr int NSPAN = (NB + SPAN - 1) / SPAN;
    constexpr int VL = (GEMV_N16 + GROUP - 1) / GROUP;  // 16-byte loads per thread per row
    const int lane = gt & 31, slot = gt >> 5;
    uint4 pre[R][VL];  // the next span's bytes, in flight while the current one is decoded
    int p[R];          // offset of the span's first block in the row's stage buffer

    // span s of row r covers bytes [a, a + nblk*BB) of the row: load the aligned 16-byte
    // words that cover it (they never leave the 16-byte granules of the row's bytes)
    auto load_span = [&](int s) {
        const int nblk = min(SPAN, NB - s * SPAN);
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const unsigned long long a = (unsigned long long)(rows[r]) + (unsigned long long)s * SPAN * GEMV_BB;
            const unsigned long long a0 = a & ~15ull;
            const int n16 = int((a + nblk * GEMV_BB - a0 + 15) >> 4);
#pragma unroll
            for (int v = 0; v < VL; ++v) {
                const int i = gt + GROUP * v;
                pre[r][v] = i < n16 ? ldg_stream16(reinterpret_cast<const void*>(a0 + 16ull * i))
                                    : make_uint4(0, 0, 0, 0);
            }
        }
    };
    load_span(0);
    for (int s = 0; s < NSPAN; ++s) {
        group_sync();  // everyone is done reading the previous span
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const unsigned long long a = (unsigned long long)(rows[r]) + (unsigned long long)s * SPAN * GEMV_BB;
            p[r] = int(a & 15ull);
#pragma unroll
            for (int v = 0; v < VL; ++v) {
                const int i = gt + GROUP * v;
                if (i < GEMV_N16)
                    *reinterpret_cast<uint4*>(stage + r * GEMV_STAGE_BYTES + 16 * i) = pre[r][v];
            }
        }
        group_sync();
        if (s + 1 < NSPAN) load_span(s + 1);
        // this warp's blocks of the span: slot * (32 / LPB) * SUB + sub-step * (32 / LPB) + ...
#pragma unroll
        for (int k = 0; k < GEMV_SUB; ++k) {
            const int qs = (slot * GEMV_SUB + k) * (32 / GEMV_LPB) + lane / GEMV_LPB;  // in span
            const int qb = s * SPAN + qs;
            if (qb < NB) {
                int pb[R];
#pragma unroll
                for (int r = 0; r < R; ++r) pb[r] = p[r] + qs * GEMV_BB;
                staged_block<R>(stage, pb, qb, lane, xs, acc);
            }
        }
    }
}
#endif
