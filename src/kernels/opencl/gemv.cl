// gemv: y[r] = sum_k W[r, k] x[k] for the rows of up to three matrices, with the fusions of the
// lowering (backends/opencl/cl_lowering.cpp): the RMS norm of x before (NORM_IN), biases, and one
// epilogue (EPI). A work-group of WG work-items computes RPB output rows: work-item t takes the
// 32-element units t, t + WG, ... of x once and multiplies them with every row of the group
// (coalesced: neighbouring work-items read neighbouring units of a row), then the work-group sums
// (common.h wg_sum_n). Q4_0 / Q8_0 weights take x quantized to Q8_0 blocks in local memory
// (quant.h quantize_act_q8's rule) and integer sums per block, as the CPU does.
//
// params:
//   WTYPE        weight type of every matrix (quant_blocks.h ids)
//   COLS         x's length (a multiple of 32 for block types; plain types any, a scalar tail)
//   N_MAT, ROWS0/1/2, W_OFF0/1/2   matrices, their output rows, byte offsets into w0/w1/w2
//   WG, RPB      work-items (a power of 2) and output rows per work-group
//   NORM_IN      x first normalised: x * (1 / sqrt(sum x^2 / COLS + eps)) * nw (cpu::rms_norm)
//   HAS_BIAS     b_m[r] added to each output (after the sum, as the CPU's add_bias)
//   EPI          0 y_m[r] = sum; 1 y0[r] = aux[r] + RES_SCALE * sum (the residual add);
//                2 SwiGLU: y0[r] = silu(gate) * up, gate row r of matrix 0, up row r of matrix 1
//                  (or of matrix 0 at UP_OFFSET_ROWS with N_MAT 1); 3 y0[r] = sum * OUT_SCALE;
//                5 the experts' weighted sum: y0[r] = sum_j ew[j] * (row r of expert ids[j] times
//                  x's j-th COLS), in j order as CpuBackend::run_moe; 6 y0[r] += sum * sigmoid(aux[AUX_OFF])
//   EXPERTS      K > 0: matrices are stacks of experts of EXPERT_BYTES each, expert ids[j]'s taken;
//                EPI 0/2: dimension 1 of the NDRange is row * K + j (slot j of the row's choice)
//   X_STRIDE, Y_STRIDE0/1/2, Y_OFF0/1/2, AUX_STRIDE, AUX_OFF   floats between batch rows, offsets
//   VEC          1: 8-wide loads of plain-type weights and x (gate gemv.vec); 0: one element at a time
//   WSPLIT       1: Q4_0 / Q8_0 rows in the split layout, quants then scales (gate weights.layout)
//   ALIGN16      1: every weight row and x row 16-byte aligned: 16-byte loads (gate gemv.align, common.h)
//   IDOT, IDOT_EXT  Q4_0 / Q8_0 block sums 4 int8 products an instruction (gate gemv.idot, common.h)
//   AHEAD        F16 / BF16 (VEC): the raw 16-byte words of AHEAD chunks of every row a work-item
//                takes loaded before the first is converted and multiplied (tunable gemv.ahead; the
//                same products in the same order); 0: each row's chunk loaded and used in turn
//   XTILE        Q4_0 / Q8_0: x quantized XTILE units at a time into local memory, each tile's sums
//                before the next (gate gemv.x=tiles: x too wide for the device's local memory);
//                0: all of x at once. A multiple of WG keeps every work-item's units and their order
// launch: global (G * WG, batch rows [* K]), local (WG, 1): work-group g takes the row blocks g,
//         g + G, ... (G = ceil(out rows / RPB), or fewer: gate gemv.grid); EPI 5: G = ceil(out rows / RPB)
//   XROWS        activation rows a work-group multiplies each weight row it reads with (gate batch.xrows:
//                the batch phase; dimension 1 of the NDRange is then a chunk of XROWS rows)
//   SGSUM        1 (gate gemv.sum=subgroup, REDUCE 1): each sub-group takes row blocks of its own, RPB
//                rows each: sub-group s of work-group g the blocks g * S + s, + G * S, ... (S sub-groups
//                a work-group), its lanes the units (chunks) lane, lane + its size, ..., its sums
//                through sg_sum: no work-group barrier between row blocks. Not with EPI 5 or XTILE
// args:   (w0, w1, w2, b0, b1, b2, y0, y1, y2, x, nw, aux, ids, ew, eps, n_rows); unused pointers may be
//         null; n_rows: the step's batch rows (1 in decode)
// bytes:  the rows' weight bytes + 4 * COLS (+ 4 * COLS norm weight) + 4 * out rows (+ aux)
// reference: cpu::matvec (+ cpu::rms_norm before, add_bias, cpu::swiglu, cpu::add_scaled after;
//            CpuBackend::run_moe for EPI 5 / 6)

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME gemv
#define WTYPE 8
#define COLS 4096
#define N_MAT 1
#define ROWS0 4096
#define WG 128
#define RPB 4
#endif

#include "common/products.h"

#ifndef NORM_IN
#define NORM_IN 0
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef XROWS  // activation rows a work-group multiplies each weight row with (gate batch.xrows)
#define XROWS 1
#endif

#ifndef XTILE
#define XTILE 0
#endif
#ifndef SGSUM
#define SGSUM 0
#endif
#if SGSUM && (!REDUCE || EPI == 5 || XTILE)
#error "SGSUM takes sub-group sums (REDUCE 1), not the experts' weighted sum (EPI 5) nor x in tiles"
#endif
// who takes which units of a row: the work-group's work-items, or (SGSUM) the sub-group's lanes
#if SGSUM
#define PT SG_LANE()
#define PN SG_SIZE()
#else
#define PT ((int)get_local_id(0))
#define PN WG
#endif
#ifndef AHEAD
#define AHEAD 0
#endif
#if AHEAD && !(VEC && (WTYPE == F16 || WTYPE == BF16))
#error "AHEAD takes F16 / BF16 weights with VEC"
#endif

#define XR XROWS
#define XT (XTILE ? XTILE : NU)         // x's units in local memory at a time
#define NACC (RPB * NW)                 // weight rows per work-group and row block
#define NSUM (NACC * XR)                // sums per work-item: acc[i * XR + j], weight row i, activation row j

#if XR > 1 && (EXPERTS || EPI == 5)
#error "XROWS with the experts' products"
#endif

// x's floats 8q .. 8q + 7, normalised with NORM_IN
inline float8 x8(const global float* x, const global float* nw, float inv, int q) {
#if ALIGN16
    const global float4* x4 = (const global float4*)x + 2 * q;
    float8 v = (float8)(x4[0], x4[1]);
#else
    float8 v = vload8(q, x);
#endif
#if NORM_IN
    v = (v * inv) * vload8(q, nw);
#endif
    return v;
}

// x's unit u (32 floats), normalised with NORM_IN
inline void load_unit(const global float* x, const global float* nw, float inv, int u, float* xv) {
#if VEC
    for (int i = 0; i < 4; ++i) vstore8(x8(x, nw, inv, 4 * u + i), i, xv);
#else
    for (int i = 0; i < 32; ++i) {
        float v = x[32 * u + i];
#if NORM_IN
        v = (v * inv) * nw[32 * u + i];
#endif
        xv[i] = v;
    }
#endif
}

// 1 / rms of x (NORM_IN), on every work-item
inline float norm_inv(const global float* x, float eps, local float* red) {
    float ss = 0.0f;
    for (int k = (int)get_local_id(0); k < COLS; k += WG) ss += x[k] * x[k];
    ss = wg_sum(ss, red);
    return 1.0f / sqrt(ss / (float)COLS + eps);
}

#if XQ
// x's units [u0, u1) (normalised with NORM_IN) quantized into local memory: xq[32 * (u - u0)] int8,
// xd[u - u0] scales, quantize_row(Q8_0)'s rule: d = max |x| / 127, q = round(x / d) through 1 / d,
// d kept as f16
inline void quantize_x(const global float* x, const global float* nw, float inv, int u0, int u1, local char* xq,
                       local float* xd) {
    for (int u = u0 + (int)get_local_id(0); u < u1; u += WG) {
        float xv[32];
        load_unit(x, nw, inv, u, xv);
        float amax = 0.0f, d;
        for (int i = 0; i < 32; ++i) amax = fmax(amax, fabs(xv[i]));
        const float id = q8_scale(amax, &d);
        for (int i = 0; i < 32; ++i) xq[32 * (u - u0) + i] = q8_of(xv[i], id);
        xd[u - u0] = d;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#endif

// The work-item's partial sums over x's units [u0, u1) of the NACC weight rows `rows` times the nx
// (<= XR) activation rows of x (row j at x + j * X_STRIDE with its 1 / rms inv[j]; xq / xd: the
// quantized units from u0, row j at xq + j * 32 * XT, xd + j * XT) added to acc[i * XR + j]: each
// weight unit is read once for them all. Block types: work-item t takes the 32-element units
// u0 + t, u0 + t + WG, ...; plain types (VEC) the 8-element chunks 4 * u0 + t, ...
inline void partial_sums(const global uchar* const* rows, const global float* x, const global float* nw,
                         const float* inv, int nx, const local char* xq, const local float* xd, int u0, int u1,
                         float* acc) {
    const int t = PT;
#if AHEAD
    // AHEAD chunks c0, c0 + WG, ... of every row: their raw words first (past the last chunk, the last
    // one again: an address in the row, not used), then each chunk's products in the order below
    for (int c0 = 4 * u0 + t; c0 < u1 * 4; c0 += AHEAD * PN) {
        ushort8 wr[AHEAD][NACC];
        for (int a = 0; a < AHEAD; ++a) {
            const int c = min(c0 + a * PN, u1 * 4 - 1);
            for (int i = 0; i < NACC; ++i) wr[a][i] = raw16x8(rows[i] + 16 * c);
        }
        for (int a = 0; a < AHEAD; ++a) {
            const int c = c0 + a * PN;
            if (c >= u1 * 4) break;
            float8 xk[XR];
            for (int j = 0; j < XR; ++j) xk[j] = j < nx ? x8(x + j * X_STRIDE, nw, inv[j], c) : (float8)0.0f;
            for (int i = 0; i < NACC; ++i) {
                const float8 wv = WTYPE == F16 ? half8_of(as_uint4(wr[a][i])) : bf16x8_of(wr[a][i]);
                for (int j = 0; j < XR; ++j) acc[i * XR + j] += dot8(wv, xk[j]);
            }
        }
    }
#elif VEC && QK_PLAIN(WTYPE)
    // plain types: 8-element chunks, neighbouring work-items read neighbouring 16 (F16, BF16) or 32
    // (F32) bytes of a row
    for (int c = 4 * u0 + t; c < u1 * 4; c += PN) {
        float8 xk[XR];
        for (int j = 0; j < XR; ++j) xk[j] = j < nx ? x8(x + j * X_STRIDE, nw, inv[j], c) : (float8)0.0f;
        for (int i = 0; i < NACC; ++i) {
            const float8 wv = unit8(WTYPE, rows[i], c / 4, c % 4);
            for (int j = 0; j < XR; ++j) acc[i * XR + j] += dot8(wv, xk[j]);
        }
    }
#else
    for (int u = u0 + t; u < u1; u += PN) {
#if XQ
        for (int i = 0; i < NACC; ++i) {
            uchar16 q0, q1;
            const float dw = q8_block(WTYPE, rows[i], NU, u, WSPLIT, &q0, &q1);
            for (int j = 0; j < nx; ++j)
                acc[i * XR + j] += (dw * xd[j * XT + u - u0]) *
                                   (float)q8_isum(WTYPE, q0, q1, xq + j * 32 * XT + 32 * (u - u0));
        }
#elif VEC
        for (int k = 0; k < 4; ++k) {
            float8 xk[XR];
            for (int j = 0; j < XR; ++j) xk[j] = j < nx ? x8(x + j * X_STRIDE, nw, inv[j], 4 * u + k) : (float8)0.0f;
            for (int i = 0; i < NACC; ++i) {
                const float8 wv = unit8(WTYPE, rows[i], u, k);
                for (int j = 0; j < XR; ++j) acc[i * XR + j] += dot8(wv, xk[j]);
            }
        }
#else
        for (int j = 0; j < nx; ++j) {  // one element at a time (gate gemv.vec=scalar)
            float xv[32];
            load_unit(x + j * X_STRIDE, nw, inv[j], u, xv);
            for (int i = 0; i < NACC; ++i) {
                float s = 0.0f;
                for (int e = 0; e < 32; ++e) s += dequant_elem(WTYPE, rows[i], 32 * u + e) * xv[e];
                acc[i * XR + j] += s;
            }
        }
#endif
    }
#endif
#if TAIL
    for (int k = NU * 32 + t; k < COLS; k += PN)
        for (int j = 0; j < nx; ++j) {
            float xk = x[j * X_STRIDE + k];
#if NORM_IN
            xk = (xk * inv[j]) * nw[k];
#endif
            for (int i = 0; i < NACC; ++i) acc[i * XR + j] += dequant_elem(WTYPE, rows[i], k) * xk;
        }
#endif
}

// This work-item's partial sums of output rows o0 .. o0 + RPB - 1 (NW weight rows each, of expert
// e) with x's nx activation rows into acc[i * XR + j]; XTILE: x's tiles quantized into xq / xd here
inline void block_acc(int o0, int e, const global uchar* w0, const global uchar* w1, const global uchar* w2,
                      const global float* x, const global float* nw, const float* inv, int nx, local char* xq,
                      local float* xd, float* acc) {
    const global uchar* rows[NACC];
    for (int i = 0; i < RPB; ++i) {
        const int o = min(o0 + i, OUT_ROWS - 1);
        rows[i * NW] = weight_row(w0, w1, w2, o, e);
#if EPI == 2
        rows[i * NW + 1] = weight_row(w0, w1, w2, N_MAT == 1 ? o + UP_OFFSET_ROWS : o + ROWS0, e);
#endif
    }
    for (int i = 0; i < NSUM; ++i) acc[i] = 0.0f;
#if XQ && XTILE
    // x in tiles of XTILE units: each quantized into local memory, then its sums
    for (int u0 = 0; u0 < NU; u0 += XTILE) {
        const int u1 = min(NU, u0 + XTILE);
        barrier(CLK_LOCAL_MEM_FENCE);  // the previous tile read by every work-item
        for (int j = 0; j < nx; ++j) quantize_x(x + j * X_STRIDE, nw, inv[j], u0, u1, xq + j * 32 * XT, xd + j * XT);
        partial_sums(rows, x, nw, inv, nx, xq, xd, u0, u1, acc);
    }
#else
    partial_sums(rows, x, nw, inv, nx, xq, xd, 0, NU, acc);
#endif
}

// The block's sums over the work-group: sum i * XR + j left in red[(i * XR + j) * WG] past a
// barrier (common.h wg_sum_n)
inline void block_sums(int o0, int e, const global uchar* w0, const global uchar* w1, const global uchar* w2,
                       const global float* x, const global float* nw, const float* inv, int nx, local char* xq,
                       local float* xd, local float* red) {
    float acc[NSUM];
    block_acc(o0, e, w0, w1, w2, x, nw, inv, nx, xq, xd, acc);
    wg_sum_n(acc, NSUM, red);
}

kernel void KERNEL_NAME(const global uchar* w0, const global uchar* w1, const global uchar* w2,
                        const global float* b0, const global float* b1, const global float* b2,
                        global float* y0, global float* y1, global float* y2,
                        const global float* x, const global float* nw, const global float* aux,
                        const global int* ids, const global float* ew, float eps, int n_rows) {
    local float red[(SGSUM ? 1 : NSUM) * WG];  // SGSUM: the norm's sum only
#if XQ
    local uint xq4[XR * XT * 8];  // x's int8 values, 4-byte aligned (q8_isum's IDOT loads)
    local char* xq = (local char*)xq4;
    local float xd[XR * XT];
#else
    local char* xq = 0;
    local float* xd = 0;
#endif
    const int t = (int)get_local_id(0);
#if EXPERTS && EPI != 5
    const int slot = (int)get_group_id(1), row = slot / EXPERTS, yrow = slot, nx = 1;
    const int expert = ids[slot];
#else
    const int row = (int)get_group_id(1) * XR, yrow = row, nx = min(XR, n_rows - row);
    const int expert = 0;
#endif
    x += (ulong)row * X_STRIDE;
    float inv[XR];
    for (int j = 0; j < XR; ++j) inv[j] = 1.0f;
#if NORM_IN
    for (int j = 0; j < nx; ++j) inv[j] = norm_inv(x + j * X_STRIDE, eps, red);
#endif
#if EPI == 5
    // the experts' weighted sum: each expert j's rows with x's j-th COLS, in j order
    const int o0 = (int)get_group_id(0) * RPB;
    float outv = 0.0f;
    for (int j = 0; j < EXPERTS; ++j) {
        const global float* xj = x + j * COLS;
#if XQ && !XTILE
        quantize_x(xj, nw, inv[0], 0, NU, xq, xd);
#endif
        block_sums(o0, ids[row * EXPERTS + j], w0, w1, w2, xj, nw, inv, 1, xq, xd, red);
        if (t < RPB) outv = j == 0 ? red[t * WG] * ew[row * EXPERTS] : outv + red[t * WG] * ew[row * EXPERTS + j];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t < RPB && o0 + t < OUT_ROWS) y0[(ulong)yrow * Y_STRIDE0 + Y_OFF0 + o0 + t] = outv;
    (void)expert;
#else
#if XQ && !XTILE
    for (int j = 0; j < nx; ++j) quantize_x(x + j * X_STRIDE, nw, inv[j], 0, NU, xq + j * COLS, xd + j * NU);
#endif
#if SGSUM
    // sub-group s of work-group g: the row blocks g * S + s, + G * S, ..., each summed by the
    // sub-group alone; lane i * XR + j stores output row o0 + i of activation row j
    const int sgs = SG_COUNT(), lane = SG_LANE();
    for (int o0 = ((int)get_group_id(0) * sgs + SG_ID()) * RPB; o0 < OUT_ROWS; o0 += (int)get_num_groups(0) * sgs * RPB) {
        float acc[NSUM];
        block_acc(o0, expert, w0, w1, w2, x, nw, inv, nx, xq, xd, acc);
        float s[2] = {0.0f, 0.0f};
        for (int k = 0; k < NSUM; ++k) {
            const float v = sg_sum(acc[k]);
            const int i = k / (NW * XR), m = k / XR % NW, j = k % XR;  // k = (i * NW + m) * XR + j
            if (lane == i * XR + j) s[m] = v;
        }
        if (lane < RPB * XR) {
            const int i = lane / XR, j = lane % XR;
            if (j < nx && o0 + i < OUT_ROWS) store_row(o0 + i, row + j, yrow + j, s, b0, b1, b2, y0, y1, y2, aux);
        }
    }
    (void)t;
#else
    // row blocks group, group + groups, ...: x's prologue (norm, quantization) once for all of them
    // where the grid is capped (gate gemv.grid)
    for (int o0 = (int)get_group_id(0) * RPB; o0 < OUT_ROWS; o0 += (int)get_num_groups(0) * RPB) {
        block_sums(o0, expert, w0, w1, w2, x, nw, inv, nx, xq, xd, red);
        if (t < RPB * XR) {
            const int i = t / XR, j = t % XR;
            if (j < nx && o0 + i < OUT_ROWS) {
                const float s[2] = {red[(i * NW * XR + j) * WG], NW == 2 ? red[((i * NW + 1) * XR + j) * WG] : 0.0f};
                store_row(o0 + i, row + j, yrow + j, s, b0, b1, b2, y0, y1, y2, aux);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif
#endif
    (void)ids; (void)ew; (void)nw; (void)eps; (void)n_rows;
}
