// gemm: the batch phase's products as tiled matrix products (gate batch.gemm=tiled, for steps of
// many rows; gemv.cl takes the others): y[r, o] = sum_k W[o, k] x[r, k]. A work-group of 256
// work-items computes a tile of 64 weight rows x 64 activation rows, k in steps of 32 (a unit of
// the plain types and K-quants, a block of the others) through local memory, each work-item 4
// weight rows x 4 activation rows. Weights are dequantized to floats (quant_blocks.h unit8) and
// multiplied with x's floats; Q4_0 / Q8_0 keep their quants as int8 beside x quantized to Q8_0
// blocks (products.h q8_scale) and sum each block in integers, then (weight scale * x's scale) *
// sum in k order, as quant.cpp's block terms. SwiGLU (EPI 2) takes the gate's and the up's rows
// of 32 outputs in one tile. The epilogues are gemv.cl's (products.h store_row).
//
// params: as gemv.cl: WTYPE, COLS, N_MAT, ROWS0/1/2, W_OFF0/1/2, HAS_BIAS, EPI 0-3, RES_SCALE,
//         OUT_SCALE, UP_OFFSET_ROWS, X_STRIDE, Y_STRIDE0/1/2, Y_OFF0/1/2, AUX_STRIDE, WSPLIT, IDOT,
//         ALIGN16 (unit8's 16-byte loads of the same rows: gate gemv.align);
//         no NORM_IN (the lowering normalises x first), no experts
// launch: global (ceil(out rows / (64 / NW)) * 256, ceil(rows / 64)), local (256, 1)
// args:   gemv.cl's (w0, w1, w2, b0, b1, b2, y0, y1, y2, x, nw, aux, ids, ew, eps, n_rows)
// bytes:  the rows' weight bytes once per 64 activation rows, x once per 64 / NW output rows
// reference: cpu::matvec of each row (+ add_bias, cpu::swiglu, cpu::add_scaled after)

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME gemm
#define WTYPE 1
#define COLS 4096
#define N_MAT 1
#define ROWS0 4096
#endif

#include "common/products.h"

#define TM 64              // weight rows a tile
#define TN 64              // activation rows a tile
#define TO (TM / NW)       // output rows a tile
#define KS ((COLS + 31) / 32)  // k steps of 32

#if EPI > 3
#error "gemm takes epilogues 0 to 3 (the experts' products are gemv.cl's)"
#endif

// tile weight row i (0..63) of the tile at output row o0 as a byte pointer: rows o0 .., or for
// SwiGLU the gate rows of outputs o0 .. o0 + 31, then their up rows (out-of-range rows: the last)
inline const global uchar* tile_row(const global uchar* w0, const global uchar* w1, const global uchar* w2, int o0,
                                    int i) {
#if EPI == 2
    const int o = min(o0 + i % TO, OUT_ROWS - 1);
    return weight_row(w0, w1, w2, i < TO ? o : N_MAT == 1 ? o + UP_OFFSET_ROWS : o + ROWS0, 0);
#else
    return weight_row(w0, w1, w2, min(o0 + i, OUT_ROWS - 1), 0);
#endif
}

#if XQ
// k step u: the weight rows' quants (wq[i * 32 + e], int8) and scales, x's rows quantized to
// Q8_0 (xq[j * 32 + e]) and their scales; work-item t loads elements 8p .. 8p + 7 of row t / 4
inline void load_step(int u, const global uchar* wrow, const global float* xrow, bool xin, local char* wq,
                      local float* wd, local char* xq, local float* xd, local float* amax4) {
    const int t = (int)get_local_id(0), i = t / 4, p = t % 4;
    vstore8(q8_part(WTYPE, wrow, NU, u, p, WSPLIT), 0, wq + 32 * i + 8 * p);
    if (p == 0) wd[i] = q8_dw(WTYPE, wrow, NU, u, WSPLIT);
    const float8 v = xin ? vload8(4 * u + p, xrow) : (float8)0.0f;
    const float8 a = fabs(v);
    amax4[t] = fmax(fmax(fmax(a.s0, a.s1), fmax(a.s2, a.s3)), fmax(fmax(a.s4, a.s5), fmax(a.s6, a.s7)));
    barrier(CLK_LOCAL_MEM_FENCE);
    const float amax = fmax(fmax(amax4[4 * i], amax4[4 * i + 1]), fmax(amax4[4 * i + 2], amax4[4 * i + 3]));
    float d;
    const float id = q8_scale(amax, &d);
    char8 q;
    q.s0 = q8_of(v.s0, id); q.s1 = q8_of(v.s1, id); q.s2 = q8_of(v.s2, id); q.s3 = q8_of(v.s3, id);
    q.s4 = q8_of(v.s4, id); q.s5 = q8_of(v.s5, id); q.s6 = q8_of(v.s6, id); q.s7 = q8_of(v.s7, id);
    vstore8(q, 0, xq + 32 * i + 8 * p);
    if (p == 0) xd[i] = d;
    barrier(CLK_LOCAL_MEM_FENCE);
}
#else
// 8 floats of a row from element k on (zeros past COLS)
inline float8 w8_at(const global uchar* row, int u, int p) {
    if (32 * u + 8 * p + 8 <= COLS) return unit8(WTYPE, row, u, p);
    float e[8];
    for (int i = 0; i < 8; ++i) e[i] = 32 * u + 8 * p + i < COLS ? dequant_elem(WTYPE, row, 32 * u + 8 * p + i) : 0.0f;
    return vload8(0, e);
}
inline float8 x8_at(const global float* x, int u, int p) {
    if (32 * u + 8 * p + 8 <= COLS) return vload8(4 * u + p, x);
    float e[8];
    for (int i = 0; i < 8; ++i) e[i] = 32 * u + 8 * p + i < COLS ? x[32 * u + 8 * p + i] : 0.0f;
    return vload8(0, e);
}

// k step u: the weight rows' floats and x's, k-major (wt[k * TM + i], xt[k * TN + j]); work-item t
// loads elements 8p .. 8p + 7 of row t / 4 of each
inline void load_step(int u, const global uchar* wrow, const global float* xrow, bool xin, local float* wt,
                      local float* xt) {
    const int t = (int)get_local_id(0), i = t / 4, p = t % 4;
    const float8 w = w8_at(wrow, u, p), x = xin ? x8_at(xrow, u, p) : (float8)0.0f;
    const float wv[8] = {w.s0, w.s1, w.s2, w.s3, w.s4, w.s5, w.s6, w.s7};
    const float xv[8] = {x.s0, x.s1, x.s2, x.s3, x.s4, x.s5, x.s6, x.s7};
    for (int e = 0; e < 8; ++e) {
        wt[(8 * p + e) * TM + i] = wv[e];
        xt[(8 * p + e) * TN + i] = xv[e];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#endif

kernel void KERNEL_NAME(const global uchar* w0, const global uchar* w1, const global uchar* w2,
                        const global float* b0, const global float* b1, const global float* b2,
                        global float* y0, global float* y1, global float* y2,
                        const global float* x, const global float* nw, const global float* aux,
                        const global int* ids, const global float* ew, float eps, int n_rows) {
#if XQ
    local uint wq4[TM * 8], xq4[TN * 8];  // int8 quants, 4-byte aligned (q8_isum's IDOT loads)
    local float wd[TM], xd[TN], amax4[256];
    local char* wq = (local char*)wq4;
    local char* xq = (local char*)xq4;
#else
    local float wt[32 * TM], xt[32 * TN];
#endif
    const int t = (int)get_local_id(0), tw = t % 16, tx = t / 16;
    const int o0 = (int)get_group_id(0) * TO, r0 = (int)get_group_id(1) * TN;
    const global uchar* wrow = tile_row(w0, w1, w2, o0, t / 4);
    const bool xin = r0 + t / 4 < n_rows;
    const global float* xrow = x + (ulong)(xin ? r0 + t / 4 : 0) * X_STRIDE;
    float acc[4][4];
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) acc[a][b] = 0.0f;
    for (int u = 0; u < KS; ++u) {
#if XQ
        load_step(u, wrow, xrow, xin, wq, wd, xq, xd, amax4);
        for (int a = 0; a < 4; ++a) {
            const int i = 4 * tw + a;
            const uchar16 q0 = vload16(0, (const local uchar*)wq + 32 * i), q1 = vload16(1, (const local uchar*)wq + 32 * i);
            for (int b = 0; b < 4; ++b) {
                const int j = 4 * tx + b;
                acc[a][b] += (wd[i] * xd[j]) * (float)q8_isum(Q8_0, q0, q1, xq + 32 * j);
            }
        }
#else
        load_step(u, wrow, xrow, xin, wt, xt);
        for (int k = 0; k < 32; ++k) {
            const float4 w = vload4(tw, wt + k * TM), v = vload4(tx, xt + k * TN);
            const float wa[4] = {w.x, w.y, w.z, w.w}, xb[4] = {v.x, v.y, v.z, v.w};
            for (int a = 0; a < 4; ++a)
                for (int b = 0; b < 4; ++b) acc[a][b] += wa[a] * xb[b];
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);  // the tiles are rewritten by the next step
    }
#if EPI == 2
    // the gate's sums (tile rows 0 .. 31) and the up's (32 .. 63) of an output meet in local memory
    local float res[TM * TN];
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) res[(4 * tw + a) * TN + 4 * tx + b] = acc[a][b];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int idx = t; idx < TO * TN; idx += 256) {
        const int oi = idx % TO, j = idx / TO, o = o0 + oi, r = r0 + j;
        const float s[2] = {res[oi * TN + j], res[(TO + oi) * TN + j]};
        if (o < OUT_ROWS && r < n_rows) store_row(o, r, r, s, b0, b1, b2, y0, y1, y2, aux);
    }
#else
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) {
            const int o = o0 + 4 * tw + a, r = r0 + 4 * tx + b;
            const float s[2] = {acc[a][b], 0.0f};
            if (o < OUT_ROWS && r < n_rows) store_row(o, r, r, s, b0, b1, b2, y0, y1, y2, aux);
        }
#endif
    (void)nw; (void)ids; (void)ew; (void)eps;
}
