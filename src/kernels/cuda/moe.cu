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
// block formats are only 2-aligned), then each lane decodes whole blocks from there. A staged row
// takes ROW_BYTES + 35 bytes rounded down to 16 (its offset in the first unit, and smem_u32's
// slack): STAGE is two of them (MOE=1, gate and up) or K + 1 (MOE=2; the last for the shared
// expert's row, which the host sizes by its own type and width). x is float
// (global memory, cached in L1: every warp of a block reads the same x).
//
// params:  MOE, WARPS, DIM, NE (experts), NR (router rows: NE + shared), K (used), FF (an expert's
//          width), SFF (the shared expert's, 0: none), WTYPE (the experts' type), SWTYPE (the shared
//          expert's), STAGE (bytes of a warp's staging buffer), NORM, RENORM, RESID, RES_SCALE.
// PDL:     PDL=1 enables griddepcontrol (common.cuh)
// launch:  block = WARPS * 32, smem = WARPS * STAGE (MOE 1, 2); MOE 0: smem = DIM * 4
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

// Copies the `bytes` bytes at src into stage with 16-byte loads of the aligned units that cover
// them; returns where src's first byte landed. Reads up to 15 bytes past either end, inside the
// same 16-byte units (never another page). The caller __syncwarp()s before reading stage.
__device__ __forceinline__ int stage_row(const uint8_t* src, int bytes, uint8_t* stage, int lane) {
    const unsigned long long a = reinterpret_cast<unsigned long long>(src);
    const uint8_t* base = reinterpret_cast<const uint8_t*>(a & ~15ull);
    const int head = int(a & 15);
    const int n = (head + bytes + 15) >> 4;
    for (int u = lane; u < n; u += 32) *reinterpret_cast<uint4*>(stage + 16 * u) = ldg_stream16(base + 16 * u);
    return head;
}

// This lane's part of (row . x) for a row of type T with `cols` elements staged at byte `off` of
// the 16-aligned buffer st; the caller sums over the warp. Q4_0 / Q8_0: a lane per block of 32;
// every other type a lane per element.
template <int T>
__device__ __forceinline__ float row_dot_part(const uint8_t* st, int off, const float* x, int cols, int lane) {
    float acc = 0.0f;
    if (T == Q4_0 || T == Q8_0) {
        for (int b = lane; b < cols / 32; b += 32) {
            const int blk = off + QK_BYTES(T) * b;
            const float d = f16_to_f32(smem_u16(st, blk));
            const float4* xb = reinterpret_cast<const float4*>(x + 32 * b);
            float s = 0.0f;
            if (T == Q4_0) {
#pragma unroll
                for (int i = 0; i < 16; i += 4) {
                    const uint32_t q = smem_u32(st, blk + 2 + i);  // bytes i..i+3: elements i..i+3 low, i+16.. high
                    const float4 lo = ld_act4(reinterpret_cast<const float*>(xb) + i);
                    const float4 hi = ld_act4(reinterpret_cast<const float*>(xb) + 16 + i);
                    s += float(int(q & 15) - 8) * lo.x + float(int((q >> 8) & 15) - 8) * lo.y +
                         float(int((q >> 16) & 15) - 8) * lo.z + float(int((q >> 24) & 15) - 8) * lo.w;
                    s += float(int((q >> 4) & 15) - 8) * hi.x + float(int((q >> 12) & 15) - 8) * hi.y +
                         float(int((q >> 20) & 15) - 8) * hi.z + float(int(q >> 28) - 8) * hi.w;
                }
            } else {
#pragma unroll
                for (int i = 0; i < 32; i += 4) {
                    const uint32_t q = smem_u32(st, blk + 2 + i);
                    const float4 xv = ld_act4(reinterpret_cast<const float*>(xb) + i);
                    s += float(int8_t(q & 255)) * xv.x + float(int8_t((q >> 8) & 255)) * xv.y +
                         float(int8_t((q >> 16) & 255)) * xv.z + float(int8_t(q >> 24)) * xv.w;
                }
            }
            acc += d * s;
        }
    } else {
        for (int e = lane; e < cols; e += 32) acc += dequant_elem<T>(st + off, e) * ld_act(x + e);
    }
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
        for (int k = 4 * lane; k < DIM; k += 128) acc += dot4(*reinterpret_cast<const float4*>(wr + k),
                                                              *reinterpret_cast<const float4*>(xs + k));
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

extern "C" __global__ void __launch_bounds__(WARPS * 32)
KERNEL_NAME(const float* xb, const int* ids, const uint8_t* gate_exps, const uint8_t* up_exps, float* exp_hb,
            const uint8_t* gate_shexp, const uint8_t* up_shexp, float* hb) {
    JITLLM_DYN_SMEM(uint8_t, smem);
    pdl_wait();
    const int row = blockIdx.z, j = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int r = blockIdx.x * WARPS + warp;
    uint8_t* stage = smem + warp * STAGE;
    const float* x = xb + (unsigned long long)row * DIM;
    if (j < K) {
        if (r >= FF) return;
        const unsigned long long e = (unsigned long long)ids[row * K + j];
        const unsigned long long off = (e * FF + r) * RB;
        const int hg = stage_row(gate_exps + off, RB, stage, lane);
        const int hu = stage_row(up_exps + off, RB, stage + STAGE / 2, lane);
        __syncwarp();
        const float g = warp_sum(row_dot_part<WTYPE>(stage, hg, x, DIM, lane));
        const float u = warp_sum(row_dot_part<WTYPE>(stage, STAGE / 2 + hu, x, DIM, lane));
        if (lane == 0) exp_hb[((unsigned long long)row * K + j) * FF + r] = g / (1.0f + expf(-g)) * u;
    } else {
#if SFF > 0
        if (r >= SFF) return;
        const unsigned long long off = (unsigned long long)r * RBS;
        const int hg = stage_row(gate_shexp + off, RBS, stage, lane);
        const int hu = stage_row(up_shexp + off, RBS, stage + STAGE / 2, lane);
        __syncwarp();
        const float g = warp_sum(row_dot_part<SWTYPE>(stage, hg, x, DIM, lane));
        const float u = warp_sum(row_dot_part<SWTYPE>(stage, STAGE / 2 + hu, x, DIM, lane));
        if (lane == 0) hb[(unsigned long long)row * SFF + r] = g / (1.0f + expf(-g)) * u;
#endif
    }
}

#elif MOE == 2
// ----- chosen experts' down, weighted (+ the shared expert's, gated) (+ residual) -----
#define RB ROW_BYTES(WTYPE, FF)
#define RBS (SFF > 0 ? ROW_BYTES(SWTYPE, SFF) : 0)
#define SLOT ((RB + 35) / 16 * 16)  // a staged expert row: its head offset (< 16) and 4 bytes of slack

extern "C" __global__ void __launch_bounds__(WARPS * 32)
KERNEL_NAME(const float* exp_hb, const int* ids, const float* w, const uint8_t* down_exps, const float* hb,
            const float* router, const uint8_t* down_shexp, float* y) {
    JITLLM_DYN_SMEM(uint8_t, smem);
    pdl_wait();
    const int row = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int r = blockIdx.x * WARPS + warp;
    if (r >= DIM) return;
    uint8_t* stage = smem + warp * STAGE;
    int head[K];
#pragma unroll
    for (int j = 0; j < K; ++j) {
        const unsigned long long e = (unsigned long long)ids[row * K + j];
        head[j] = stage_row(down_exps + (e * DIM + r) * RB, RB, stage + j * SLOT, lane);
    }
#if SFF > 0
    const int hs = stage_row(down_shexp + (unsigned long long)r * RBS, RBS, stage + K * SLOT, lane);
#endif
    __syncwarp();
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < K; ++j) {
        const float d = warp_sum(row_dot_part<WTYPE>(stage, j * SLOT + head[j],
                                                     exp_hb + ((unsigned long long)row * K + j) * FF, FF, lane));
        const float wj = w[row * K + j];
        acc = j == 0 ? d * wj : acc + d * wj;
    }
#if SFF > 0
    const float d = warp_sum(row_dot_part<SWTYPE>(stage, K * SLOT + hs, hb + (unsigned long long)row * SFF, SFF, lane));
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
