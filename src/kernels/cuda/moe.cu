// Mixture-of-experts FFN kernels (qwen2moe, qwen3moe): the router and top-k, the chosen experts'
// gate/up with SwiGLU, their weighted down products. A token reads only its chosen experts'
// weight rows, so bytes per token are the active parameters. One entry point per build, MOE:
//
//   MOE=0  ffn_norm (NORM=1) + ffn_router + ffn_topk: a warp per router row (F32 weights; with a
//          shared expert its gate logit is row NE), grid (ceil(NR / WARPS), rows). Every block
//          normalises its row of x itself (NORM=1; block 0 of a row also writes xb); the last block
//          of a row (a ticket per row) takes the softmax over the NE logits and the K largest
//          (best first, the lower index on a tie), renormalised when RENORM=1.
//   MOE=1  ffn_exp_gate_up + ffn_exp_act (+ ffn_shexp_gate_up + ffn_shexp_act when SFF > 0): a warp
//          per output row r of expert slot j = blockIdx.y (j == K: the shared expert), gate and up
//          row staged together; out = silu(gate . xb) * (up . xb). grid (ceil(max(FF, SFF) / WARPS),
//          K + (SFF > 0), rows).
//   MOE=2  ffn_exp_down (+ ffn_shexp_down) (+ ffn_residual: RESID=1): a warp per output row r of
//          DIM: sum over j of w[j] * (down[id j] row r . exp_hb[j]) in order j = 0 .. K-1, plus
//          sigmoid(router[NE]) * (down_shexp row r . hb); into tmp, or x += RES_SCALE * that.
//          grid (ceil(DIM / WARPS), rows).
//
// Weight rows are staged into a per-warp shared-memory buffer with 16-byte loads (rows of the
// block formats are only 2-aligned), then each lane decodes whole blocks from there. Q4_0 and Q8_0
// weights multiply x quantized to Q8_0 blocks (dp4a), as the CPU reference does; every other type
// float x. A staged row
// takes ROW_BYTES + 35 bytes rounded down to 16 (its offset in the first unit, and smem_u32's
// slack): STAGE is two of them (MOE=1, gate and up) or K + 1 (MOE=2; the last for the shared
// expert's row, which the host sizes by its own type and width). x is float
// (global memory, cached in L1: every warp of a block reads the same x).
//
// params:  MOE, WARPS, DIM, NE (experts), NR (router rows: NE + shared), K (used), FF (an expert's
//          width), SFF (the shared expert's, 0: none), WTYPE (the experts' type), SWTYPE (the shared
//          expert's), STAGE (bytes of a warp's staging buffer), NORM, RENORM, RESID, RES_SCALE.
// PDL:     PDL=1 enables griddepcontrol (common.cuh)
// launch:  block = WARPS * 32, smem = the quantized x (XQ_AREA; MOE=2: XQ_E + XQ_S) + WARPS * STAGE
//          (MOE 1, 2); MOE 0: smem = DIM * 4
// args:    MOE=0 (x, norm_w, xb, gate_inp, gate_inp_shexp, router, ids, w, tickets, eps)
//          MOE=1 (xb, ids, gate_exps, up_exps, exp_hb, gate_shexp, up_shexp, hb)
//          MOE=2 (exp_hb, ids, w, down_exps, hb, router, down_shexp, tmp_or_x)
// reference: CpuBackend::run_moe (cpu_moe.cpp)   test: tests/gpu/kernels_vs_cpu_test.cpp

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME ffn_exp_gate_up_act__moe_q4_0
#define MOE 1
#define WARPS 8
#define DIM 2048
#define NE 128
#define NR 128
#define K 8
#define FF 768
#define SFF 0
#define WTYPE Q4_0
#define SWTYPE Q4_0
#define STAGE 2400
#endif

#include "common/async_copy.cuh"
#include "common/quant_blocks.cuh"

#ifndef NORM
#define NORM 0
#endif
#ifndef RENORM
#define RENORM 0
#endif
#ifndef RESID
#define RESID 0
#endif
#ifndef RES_SCALE
#define RES_SCALE 1.0f
#endif
#define REDUCE 1

// bytes of a row of `cols` elements of type T
#define ROW_BYTES(T, cols) ((cols) / QK_ELEMS(T) * QK_BYTES(T))

// Starts copying the `bytes` bytes at src into stage (cp.async, 16-byte units: the aligned units
// that cover them); returns where src's first byte will land. Reads up to 15 bytes past either
// end, inside the same 16-byte units (never another page). The caller commits, waits and
// synchronises before reading stage; x is quantized meanwhile.
__device__ __forceinline__ int stage_row(const uint8_t* src, int bytes, uint8_t* stage, int lane) {
    const unsigned long long a = reinterpret_cast<unsigned long long>(src);
    const uint8_t* base = reinterpret_cast<const uint8_t*>(a & ~15ull);
    const int head = int(a & 15);
    const int n = (head + bytes + 15) >> 4;
    for (int u = lane; u < n; u += 32) cp_async16(smem_addr(stage + 16 * u), base + 16 * u, 16);
    return head;
}

// dp4a: the sum of the four byte products of a and b plus c (u: a's bytes unsigned)
__device__ __forceinline__ int dp4a_ss(int a, int b, int c) {
    int d;
    asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
__device__ __forceinline__ int dp4a_us(uint32_t a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// x as Q4_0 / Q8_0 weights multiply it (the engine's numerics, quant.h act_q8_type): Q8_0 blocks
// of 32 values in shared memory, q in order, per block its scale (the f16-rounded d) and the sum
// of its values.
struct XQ {
    const int8_t* q;
    const float* d;
    const int* s;
};

// Quantizes n floats at x (n % 32 == 0) as quantize_act_q8 does into q (n int8), d and s (n / 32
// each); a group of 8 threads per block of 32. Every thread of the block calls it.
__device__ __forceinline__ void quantize_x(const float* x, int n, int8_t* q, float* d, int* s) {
    for (int k0 = 0; k0 < n; k0 += 4 * WARPS * 32) {
        const int k = k0 + 4 * threadIdx.x;
        const float4 v = k < n ? ld_act4(x + k) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
#pragma unroll
        for (int o = 1; o < 8; o <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
        const float dd = amax / 127.0f;
        const float id = dd != 0.0f ? 1.0f / dd : 0.0f;
        const int q0 = int(roundf(v.x * id)), q1 = int(roundf(v.y * id));
        const int q2 = int(roundf(v.z * id)), q3 = int(roundf(v.w * id));
        int sum = (q0 + q1) + (q2 + q3);
#pragma unroll
        for (int o = 1; o < 8; o <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (k >= n) continue;
        *reinterpret_cast<uint32_t*>(q + k) = (uint32_t(q0) & 0xFFu) | ((uint32_t(q1) & 0xFFu) << 8) |
                                              ((uint32_t(q2) & 0xFFu) << 16) | (uint32_t(q3) << 24);
        if ((k & 31) == 0) {
            d[k >> 5] = f16_to_f32(f32_to_f16(dd));
            s[k >> 5] = sum;
        }
    }
}

#define XQ_TYPE(t) ((t) == Q4_0 || (t) == Q8_0)
// shared-memory bytes of n values quantized (q, then d and s)
#define XQ_BYTES(n) ((n) + (n) / 32 * 8)

// This lane's part of (row . x) for a row of type T with `cols` elements staged at byte `off` of
// the 16-aligned buffer st; the caller sums over the warp. Q4_0 / Q8_0: a lane per block of 32,
// with x quantized (xq); every other type a lane per element, with float x.
template <int T>
__device__ __forceinline__ float row_dot_part(const uint8_t* st, int off, const float* x, XQ xq, int cols, int lane) {
    float acc = 0.0f;
    if (XQ_TYPE(T)) {  // integer sums of each block with x's Q8_0 values (quant.cpp block_term)
        for (int b = lane; b < cols / 32; b += 32) {
            const int blk = off + QK_BYTES(T) * b;
            const float dw = f16_to_f32(smem_u16(st, blk));
            const int* xw = reinterpret_cast<const int*>(xq.q + 32 * b);
            int isum = 0;
            if (T == Q4_0) {
#pragma unroll
                for (int i = 0; i < 16; i += 4) {
                    const uint32_t w = smem_u32(st, blk + 2 + i);
                    isum = dp4a_us(w & 0x0F0F0F0Fu, xw[i / 4], isum);
                    isum = dp4a_us((w >> 4) & 0x0F0F0F0Fu, xw[4 + i / 4], isum);
                }
                isum -= 8 * xq.s[b];
            } else {
#pragma unroll
                for (int i = 0; i < 32; i += 4) isum = dp4a_ss(int(smem_u32(st, blk + 2 + i)), xw[i / 4], isum);
            }
            acc += (dw * xq.d[b]) * float(isum);
        }
        return acc;
    }
    for (int e = lane; e < cols; e += 32) acc += dequant_elem<T>(st + off, e) * ld_act(x + e);
    return acc;
}

#if MOE == 0
// ----- router (+ norm) + top-k -----
#define EPL ((NE + 31) / 32)  // router logits a lane holds in the top-k

extern "C" __global__ void __launch_bounds__(WARPS * 32)
KERNEL_NAME(const float* x, const float* norm_w, float* xb, const float* gate_inp, const float* gate_inp_shexp,
            float* router, int* ids, float* w, unsigned* tickets, float eps) {
    JITLLM_DYN_SMEM(float, xs);
    __shared__ float red[32];
    __shared__ unsigned last;
    pdl_wait();
    const int row = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float* xr = (NORM ? x : xb) + (unsigned long long)row * DIM;
#if NORM
    float ss = 0.0f;
#pragma unroll
    for (int k = threadIdx.x; k < DIM; k += WARPS * 32) ss += xr[k] * xr[k];
    const float scale = 1.0f / sqrtf(block_sum<WARPS * 32>(ss, red) / float(DIM) + eps);
    for (int k = threadIdx.x; k < DIM; k += WARPS * 32) {
        const float v = xr[k] * scale * norm_w[k];
        xs[k] = v;
        if (blockIdx.x == 0) xb[(unsigned long long)row * DIM + k] = v;
    }
#else
    for (int k = threadIdx.x; k < DIM; k += WARPS * 32) xs[k] = xr[k];
#endif
    __syncthreads();
    pdl_launch_dependents();
    const int rr = blockIdx.x * WARPS + warp;
    if (rr < NR) {
        const float* wr = rr < NE ? gate_inp + (unsigned long long)rr * DIM : gate_inp_shexp;
        float acc = 0.0f;
#pragma unroll
        for (int k = 4 * lane; k < DIM; k += 128) {
            const uint4 wv = ldg_stream16(wr + k);
            acc += dot4(make_float4(__uint_as_float(wv.x), __uint_as_float(wv.y), __uint_as_float(wv.z),
                                    __uint_as_float(wv.w)),
                        *reinterpret_cast<const float4*>(xs + k));
        }
        acc = warp_sum(acc);
        if (lane == 0) router[(unsigned long long)row * NR + rr] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        fence_acq_rel_gpu();
        last = atomicAdd(tickets + row, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last || warp != 0) return;
    fence_acq_rel_gpu();
    if (lane == 0) tickets[row] = 0;  // ready for the next launch
    const volatile float* lr = router + (unsigned long long)row * NR;
    float v[EPL];
    float mx = -JL_INF;
#pragma unroll
    for (int i = 0; i < EPL; ++i) {
        const int e = lane + 32 * i;
        v[i] = e < NE ? lr[e] : -JL_INF;
        mx = fmaxf(mx, v[i]);
    }
    mx = warp_max(mx);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < EPL; ++i) {
        v[i] = lane + 32 * i < NE ? expf(v[i] - mx) : -1.0f;  // -1: below every probability
        sum += v[i] > 0.0f ? v[i] : 0.0f;
    }
    sum = warp_sum(sum);
    float wsum = 0.0f, wk = 0.0f;
    int idk = 0;
    for (int j = 0; j < K; ++j) {
        float bv = -2.0f;
        int bi = 0x7fffffff;
#pragma unroll
        for (int i = 0; i < EPL; ++i)
            if (v[i] > bv) bv = v[i], bi = lane + 32 * i;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (ov > bv || (ov == bv && oi < bi)) bv = ov, bi = oi;
        }
        if ((bi & 31) == lane) v[bi >> 5] = -2.0f;  // taken
        const float p = bv / sum;
        wsum += p;
        if (lane == j) wk = p, idk = bi;
    }
    if (lane < K) {
        ids[row * K + lane] = idk;
        w[row * K + lane] = RENORM ? wk / wsum : wk;
    }
}

#elif MOE == 1
// ----- chosen experts' gate/up + SwiGLU (+ the shared expert's) -----
#define RB ROW_BYTES(WTYPE, DIM)
#define RBS ROW_BYTES(SWTYPE, DIM)
#define XQ_AREA (XQ_TYPE(WTYPE) || (SFF > 0 && XQ_TYPE(SWTYPE)) ? (XQ_BYTES(DIM) + 15) / 16 * 16 : 0)

extern "C" __global__ void __launch_bounds__(WARPS * 32)
KERNEL_NAME(const float* xb, const int* ids, const uint8_t* gate_exps, const uint8_t* up_exps, float* exp_hb,
            const uint8_t* gate_shexp, const uint8_t* up_shexp, float* hb) {
    JITLLM_DYN_SMEM(uint8_t, smem);
    pdl_wait();
    const int row = blockIdx.z, j = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int r = blockIdx.x * WARPS + warp;
    uint8_t* stage = smem + XQ_AREA + warp * STAGE;
    const float* x = xb + (unsigned long long)row * DIM;
    int8_t* q = reinterpret_cast<int8_t*>(smem);
    const XQ xq{q, reinterpret_cast<const float*>(q + DIM), reinterpret_cast<const int*>(q + DIM + DIM / 8)};
    // this warp's gate and up rows (an expert's, or the shared expert's at j == K) start loading first
    const bool shared = j == K, active = r < (shared ? SFF : FF);
    int hg = 0, hu = 0;
    if (active) {
        const uint8_t* g0 = gate_shexp;
        const uint8_t* u0 = up_shexp;
        unsigned long long off = (unsigned long long)r * (shared ? RBS : RB);
        if (!shared) {
            const unsigned long long e = (unsigned long long)ids[row * K + j];
            off = (e * FF + r) * RB;
            g0 = gate_exps;
            u0 = up_exps;
        }
        hg = stage_row(g0 + off, shared ? RBS : RB, stage, lane);
        hu = stage_row(u0 + off, shared ? RBS : RB, stage + STAGE / 2, lane);
    }
    cp_async_commit();
    if (XQ_AREA > 0) quantize_x(x, DIM, q, reinterpret_cast<float*>(q + DIM), reinterpret_cast<int*>(q + DIM + DIM / 8));
    cp_async_wait<0>();
    __syncthreads();
    if (!active) return;
    float g, u;
    if (!shared) {
        g = warp_sum(row_dot_part<WTYPE>(stage, hg, x, xq, DIM, lane));
        u = warp_sum(row_dot_part<WTYPE>(stage, STAGE / 2 + hu, x, xq, DIM, lane));
    } else {
        g = warp_sum(row_dot_part<SWTYPE>(stage, hg, x, xq, DIM, lane));
        u = warp_sum(row_dot_part<SWTYPE>(stage, STAGE / 2 + hu, x, xq, DIM, lane));
    }
    if (lane == 0) {
        float* y = shared ? hb + (unsigned long long)row * SFF + r : exp_hb + ((unsigned long long)row * K + j) * FF + r;
        *y = g / (1.0f + expf(-g)) * u;
    }
}

#elif MOE == 2
// ----- chosen experts' down, weighted (+ the shared expert's, gated) (+ residual) -----
#define RB ROW_BYTES(WTYPE, FF)
#define RBS (SFF > 0 ? ROW_BYTES(SWTYPE, SFF) : 0)
#define SLOT ((RB + 35) / 16 * 16)  // a staged expert row: its head offset (< 16) and 4 bytes of slack
#define XQ_E (XQ_TYPE(WTYPE) ? (XQ_BYTES(K * FF) + 15) / 16 * 16 : 0)
#define XQ_S (SFF > 0 && XQ_TYPE(SWTYPE) ? (XQ_BYTES(SFF) + 15) / 16 * 16 : 0)

extern "C" __global__ void __launch_bounds__(WARPS * 32)
KERNEL_NAME(const float* exp_hb, const int* ids, const float* w, const uint8_t* down_exps, const float* hb,
            const float* router, const uint8_t* down_shexp, float* y) {
    JITLLM_DYN_SMEM(uint8_t, smem);
    pdl_wait();
    const int row = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int r = blockIdx.x * WARPS + warp;
    const float* xe = exp_hb + (unsigned long long)row * K * FF;  // the K experts' x, in order
    int8_t* qe = reinterpret_cast<int8_t*>(smem);
    int8_t* qs = reinterpret_cast<int8_t*>(smem + XQ_E);
    uint8_t* stage = smem + XQ_E + XQ_S + warp * STAGE;
    // this warp's K expert rows (and the shared expert's) start loading first
    int head[K];
#if SFF > 0
    int hs = 0;
#endif
    if (r < DIM) {
#pragma unroll
        for (int j = 0; j < K; ++j) {
            const unsigned long long e = (unsigned long long)ids[row * K + j];
            head[j] = stage_row(down_exps + (e * DIM + r) * RB, RB, stage + j * SLOT, lane);
        }
#if SFF > 0
        hs = stage_row(down_shexp + (unsigned long long)r * RBS, RBS, stage + K * SLOT, lane);
#endif
    }
    cp_async_commit();
    if (XQ_E > 0) quantize_x(xe, K * FF, qe, reinterpret_cast<float*>(qe + K * FF), reinterpret_cast<int*>(qe + K * FF + K * FF / 8));
#if SFF > 0
    const float* xs = hb + (unsigned long long)row * SFF;
    if (XQ_S > 0) quantize_x(xs, SFF, qs, reinterpret_cast<float*>(qs + SFF), reinterpret_cast<int*>(qs + SFF + SFF / 8));
#endif
    cp_async_wait<0>();
    __syncthreads();
    if (r >= DIM) return;
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < K; ++j) {
        const XQ xq{qe + j * FF, reinterpret_cast<const float*>(qe + K * FF) + j * FF / 32,
                    reinterpret_cast<const int*>(qe + K * FF + K * FF / 8) + j * FF / 32};
        const float d = warp_sum(row_dot_part<WTYPE>(stage, j * SLOT + head[j], xe + j * FF, xq, FF, lane));
        const float wj = w[row * K + j];
        acc = j == 0 ? d * wj : acc + d * wj;
    }
#if SFF > 0
    const XQ xqs{qs, reinterpret_cast<const float*>(qs + SFF), reinterpret_cast<const int*>(qs + SFF + SFF / 8)};
    const float d = warp_sum(row_dot_part<SWTYPE>(stage, K * SLOT + hs, xs, xqs, SFF, lane));
    const float g = 1.0f / (1.0f + expf(-router[(unsigned long long)row * NR + NE]));
    acc += d * g;
#endif
    if (lane == 0) {
        float* yr = y + (unsigned long long)row * DIM + r;
        if (RESID) *yr += RES_SCALE * acc;
        else *yr = acc;
    }
}
#endif
