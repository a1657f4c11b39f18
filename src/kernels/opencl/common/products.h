// The products' shared parts (gemv.cl, gemm.cl): the defines' defaults, the matrices' rows, the
// epilogues that store an output row, and Q8_0's rule for x's blocks. Parameters as gemv.cl's.
#pragma once

#include "common/quant_blocks.h"

#ifndef ROWS1
#define ROWS1 0
#endif
#ifndef ROWS2
#define ROWS2 0
#endif
#ifndef W_OFF0
#define W_OFF0 0
#endif
#ifndef W_OFF1
#define W_OFF1 0
#endif
#ifndef W_OFF2
#define W_OFF2 0
#endif
#ifndef HAS_BIAS
#define HAS_BIAS 0
#endif
#ifndef EPI
#define EPI 0
#endif
#ifndef RES_SCALE
#define RES_SCALE 1.0f
#endif
#ifndef OUT_SCALE
#define OUT_SCALE 1.0f
#endif
#ifndef UP_OFFSET_ROWS
#define UP_OFFSET_ROWS 0
#endif
#ifndef EXPERTS
#define EXPERTS 0
#endif
#ifndef EXPERT_BYTES
#define EXPERT_BYTES 0
#endif
#ifndef X_STRIDE
#define X_STRIDE COLS
#endif
#ifndef Y_STRIDE0
#define Y_STRIDE0 0
#endif
#ifndef Y_STRIDE1
#define Y_STRIDE1 0
#endif
#ifndef Y_STRIDE2
#define Y_STRIDE2 0
#endif
#ifndef Y_OFF0
#define Y_OFF0 0
#endif
#ifndef Y_OFF1
#define Y_OFF1 0
#endif
#ifndef Y_OFF2
#define Y_OFF2 0
#endif
#ifndef AUX_STRIDE
#define AUX_STRIDE 0
#endif
#ifndef AUX_OFF
#define AUX_OFF 0
#endif
#ifndef WSPLIT  // 1: Q4_0 / Q8_0 rows in the split layout (gate weights.layout)
#define WSPLIT 0
#endif

#define XQ XQ8_TYPE(WTYPE)
#define NW (EPI == 2 ? 2 : 1)  // weight rows per output row
#define NU (COLS / 32)         // whole 32-element units of a row
#define TAIL (COLS % 32)       // plain types: elements after them
#define RB ROW_BYTES(WTYPE, COLS)
#define OUT_ROWS (EPI == 2 || EPI >= 5 ? ROWS0 : ROWS0 + ROWS1 + ROWS2)

#if XQ && (COLS % 32 != 0)
#error "Q4_0 / Q8_0 products need COLS a multiple of 32"
#endif
#if !QK_PLAIN(WTYPE) && TAIL != 0
#error "block types need COLS a multiple of their block"
#endif

// weight row `wr` (of the concatenated matrices, or of matrix 0 for SwiGLU's up at UP_OFFSET_ROWS)
// as a byte pointer; expert e's stack member
inline const global uchar* weight_row(const global uchar* w0, const global uchar* w1, const global uchar* w2,
                                      int wr, int e) {
    const ulong ex = (ulong)e * EXPERT_BYTES;
    if (wr < ROWS0) return w0 + W_OFF0 + ex + (ulong)wr * RB;
    if (wr < ROWS0 + ROWS1) return w1 + W_OFF1 + ex + (ulong)(wr - ROWS0) * RB;
    return w2 + W_OFF2 + ex + (ulong)(wr - ROWS0 - ROWS1) * RB;
}

// Output row o of batch row `row` (its y row `yrow`: the expert slot for EPI 0 / 2 with EXPERTS)
// from its sums s (SwiGLU: the gate's, then the up row's), through the epilogue
inline void store_row(int o, int row, int yrow, const float* s, const global float* b0, const global float* b1,
                      const global float* b2, global float* y0, global float* y1, global float* y2,
                      const global float* aux) {
#if EPI == 2
    const float g = s[0];
    y0[(ulong)yrow * Y_STRIDE0 + Y_OFF0 + o] = g / (1.0f + exp(-g)) * s[1];
#else
    float v = s[0];
    int r = o, m = 0;
    if (r >= ROWS0) { r -= ROWS0; m = 1; }
    if (m == 1 && r >= ROWS1) { r -= ROWS1; m = 2; }
#if HAS_BIAS
    v += (m == 0 ? b0 : m == 1 ? b1 : b2)[r];
#endif
#if EPI == 1
    v = aux[(ulong)row * AUX_STRIDE + r] + RES_SCALE * v;
#elif EPI == 3
    v = v * OUT_SCALE;
#elif EPI == 6
    const float gl = aux[(ulong)row * AUX_STRIDE + AUX_OFF];
    v = y0[(ulong)yrow * Y_STRIDE0 + Y_OFF0 + r] + v * (1.0f / (1.0f + exp(-gl)));
#endif
    if (m == 0) y0[(ulong)yrow * Y_STRIDE0 + Y_OFF0 + r] = v;
    else if (m == 1) y1[(ulong)yrow * Y_STRIDE1 + Y_OFF1 + r] = v;
    else y2[(ulong)yrow * Y_STRIDE2 + Y_OFF2 + r] = v;
#endif
    (void)b0; (void)b1; (void)b2; (void)aux; (void)y1; (void)y2;
}

// Q8_0's scale of a 32-element unit of x whose largest magnitude is amax (quantize_row(Q8_0),
// quant.h quantize_act_q8): d = amax / 127, kept as f16 in *d; returns 1 / d (0 for d 0), by which
// each element is quantized: q8_of(x, id)
inline float q8_scale(float amax, float* d) {
    const float dd = amax / 127.0f;
    *d = round_f16(dd);
    return dd != 0.0f ? 1.0f / dd : 0.0f;
}
inline char q8_of(float x, float id) { return (char)(int)round(x * id); }
