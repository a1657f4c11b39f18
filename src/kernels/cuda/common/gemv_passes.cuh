// gemv.cu's pass geometry and variant checks, after gemv_dot.cuh: the XROWS argument, the rules
// the defines must keep (#error, static_assert), groups per block, output and weight rows per pass
// (GEMV_GPB, GEMV_OPG, GEMV_DR, GEMV_OUT_ROWS), and the weight rows of a pass (mat_row, pass_rows;
// rows_dot_pre with EARLY_LOAD). Included by gemv.cu only, where these stood; device code only.
#pragma once

// XROWS > 1 (batch steps, gate batch.xrows): a block multiplies each weight row it reads with up to
// XROWS activation rows (the n_rows argument: the step's rows; grid.y = ceil(n_rows / XROWS))
#define GEMV_XQB (COLS + COLS / 32 * 8)  // one row's int8 copy and its (d, 8 * sum) pairs
#if XROWS > 1
#if !(GEMV_XQ8 && WSPLIT && REDUCE && !BULK && !ROWS_INNER && !ARGMAX && EPI != 4 && !EARLY_LOAD)
#error "XROWS: split-layout Q4_0/Q8_0, a warp per row set, no bulk rings, rows innermost, pick, RoPE or early load"
#endif
#define GEMV_XROWS_PARAM , int n_rows
#else
#define GEMV_XROWS_PARAM
#endif
#if XREG && !(GEMV_XQ8 && WSPLIT && BULK && XROWS == 1)
#error "XREG: a split-layout Q4_0 / Q8_0 bulk gemv of one activation row"
#endif
#if XQ_IN && !(GEMV_XQ8 && BULK && XROWS == 1)
#error "XQ_IN: a split-layout Q4_0 / Q8_0 bulk gemv of one activation row"
#endif
#if XQ_OUT
#if !((EPI == 2 || (EPI == 1 && XQ_NORM && !NORM_IN)) && REDUCE && BULK && XROWS == 1 && !WARP_MAJOR && !ARGMAX)
#error "XQ_OUT: a bulk SwiGLU gemv (or residual gemv, XQ_NORM), a warp per row set, block-major passes"
#endif
#if XQ_NORM && (EPI != 1 || XQ_CL != 1)
#error "XQ_NORM: a residual gemv whose block pass is one group of 32 rows"
#endif
#if !(defined(XQ_NP) && defined(XQ_C) && defined(XQ_PLANES))
#error "XQ_OUT: XQ_NP (passes), XQ_C (the consumer's columns), XQ_PLANES (Q4_0 layout)"
#endif
#if (BLOCK / 32) * (ROWS_PER_BLOCK / (BLOCK / 32)) * XQ_CL != 32
#error "XQ_OUT: a cluster's rows of a pass are one aligned group of 32"
#endif
#if ROWS0 % 32 != 0 || XQ_C != ROWS0
#error "XQ_OUT: the consumer's columns, whole groups of 32"
#endif
#endif
#define GEMV_NACC (GEMV_DR * XROWS)  // accumulators a thread keeps a pass

#define GEMV_GPB (BLOCK / GROUP)                   // groups per block
#define GEMV_OPG (ROWS_PER_BLOCK / GEMV_GPB)       // output rows per group pass
#define XQ_PP (32 / (GEMV_GPB * GEMV_OPG * XQ_CL))  // XQ_OUT: a group's passes of a block
#define GEMV_DR (EPI == 2 ? 2 * GEMV_OPG : GEMV_OPG)  // weight rows per group pass
#define GEMV_OUT_ROWS (EPI == 2 ? ROWS0 : ROWS0 + (N_MAT > 1 ? ROWS1 : 0) + (N_MAT > 2 ? ROWS2 : 0))

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK: whole warps");
static_assert(ROWS_PER_BLOCK % GEMV_GPB == 0 && GEMV_OPG >= 1, "ROWS_PER_BLOCK: R rows per group");
static_assert(N_MAT >= 1 && N_MAT <= 3, "N_MAT: 1..3");
static_assert(XROWS >= 1 && XROWS * GEMV_OPG <= 32, "XROWS: a lane for each (activation row, output row) of a pass");
static_assert(EPI != 1 || N_MAT == 1, "EPI=1 (residual) is for one matrix");
static_assert(EPI != 2 || N_MAT <= 2, "EPI=2 takes gate/up as 2 matrices or 1 matrix + offset");
static_assert(EPI != 2 || N_MAT == 2 || UP_OFFSET_ROWS >= ROWS0, "EPI=2 with N_MAT=1 needs UP_OFFSET_ROWS");
#if GEMV_STAGED
static_assert(GEMV_GPB * GEMV_DR * GEMV_STAGE_BYTES <= 40 * 1024, "staging smem: lower ROWS_PER_BLOCK");
#endif

#define GEMV_ROW_BYTES ((unsigned long long)(COLS / QK_ELEMS(WTYPE)) * QK_BYTES(WTYPE))
#ifndef GEMV_EARLY_OK  // the weight paths with a first-step set (gemv_dot.cuh)
#define GEMV_EARLY_OK 0
#endif
#define GEMV_EARLY (EARLY_LOAD && GEMV_EARLY_OK && !BULK)
#if BULK
#define BULK_SLOT (GEMV_DR * BULK_RB)  // bytes of one item
static_assert(((WSPLIT && GEMV_XQ8) || (QK_PLAIN(WTYPE) && X_SMEM)) && REDUCE,
              "BULK: split-layout Q4_0/Q8_0 or plain rows with x in shared memory, a warp per row set");
#endif

#if GEMV_EARLY
// The group's products when its first step `pre` was loaded before the PDL wait (plain_load at
// 0): that step, then rows_dot from the next one (gemv_dot.cuh: plain types and split layout)
template <int R>
__device__ __forceinline__ void rows_dot_pre(const uint8_t* const* rows, const XSrc& xs, int gt,
                                             float* acc, uint8_t* stage, const PlainSet<R>& pre) {
    plain_dot<R>(pre, xs, 0, gt, acc);
    rows_dot<R>(rows, xs, gt, acc, stage, GEMV_EARLY_STEP);
}
#endif

// Weight row `o` of the stacked matrices [W0; W1; W2] (o < ROWS0 + ROWS1 + ROWS2).
__device__ __forceinline__ const uint8_t* mat_row(const uint8_t* w0, const uint8_t* w1,
                                                  const uint8_t* w2, int o) {
    if (N_MAT == 1 || o < ROWS0) return w0 + (unsigned long long)o * GEMV_ROW_BYTES;
    if (N_MAT == 2 || o < ROWS0 + ROWS1) return w1 + (unsigned long long)(o - ROWS0) * GEMV_ROW_BYTES;
    return w2 + (unsigned long long)(o - ROWS0 - ROWS1) * GEMV_ROW_BYTES;
}

#if EPI == 4
#include "common/rope_angle.cuh"
static_assert(N_MAT == 3 && GEMV_OPG % 2 == 0 && ROWS0 % 2 == 0 && ROWS1 % 2 == 0 && ROWS1 == ROWS2,
              "EPI=4: q, k, v matrices, rotation pairs (2i, 2i+1) within a pass");
static_assert(N_ROT % 2 == 0 && N_ROT <= HEAD_DIM && ROWS1 % HEAD_DIM == 0, "EPI=4: rope dims");
#endif

// The GEMV_DR weight rows of the pass starting at output row o0 (past the end: the last row).
__device__ __forceinline__ void pass_rows(const uint8_t* W0, const uint8_t* W1, const uint8_t* W2, int o0,
                                          const uint8_t** rows) {
#pragma unroll
    for (int i = 0; i < GEMV_OPG; ++i) {
        const int o = min(o0 + i, GEMV_OUT_ROWS - 1);  // past the end: recompute the last row
#if EPI == 2
        rows[2 * i] = W0 + (unsigned long long)o * GEMV_ROW_BYTES;
        rows[2 * i + 1] = N_MAT == 2 ? W1 + (unsigned long long)o * GEMV_ROW_BYTES
                                     : W0 + (unsigned long long)(o + UP_OFFSET_ROWS) * GEMV_ROW_BYTES;
#else
        rows[i] = mat_row(W0, W1, W2, o);
#endif
    }
    (void)W1; (void)W2;
}
