// Mixture-of-experts rows grouped by expert for the batch phase's GEMMs (gemm.cu GROUPED; the
// lowering is backends/cuda/lowering/moe_batch.cpp): the group list built from the top-k choices,
// and the weighted combine of the experts' outputs after the GEMMs. One entry point per build, MG:
//
//   MG=0  ffn_exp_gate_up's grouping. The step's m * K entries e = r * K + j (row r's j-th choice,
//         expert ids[e]) sorted by expert, stably (ascending e within an expert): ent[p] = the
//         entry at position p, pos[e] = the position of entry e; and the GEMMs' tile list, each
//         expert's run of positions cut into tiles of at most BM, experts in order: tiles[0] = the
//         tile count, then from tiles + 4 one int4 (expert, first position, count, 0) per tile.
//         One block of WARPS warps: warp w takes a contiguous run of the entries, 32 a round. A
//         histogram per warp over the experts (match.any: the lanes holding one expert add their
//         number once); per expert, the prefix of the warps' counts; over the experts, the prefix
//         of the counts and of their tiles; then the same rounds again place each entry at its
//         expert's first position + the warps' entries before it + the lanes' before it.
//   MG=1  ffn_exp_down (+ ffn_shexp_down) (+ ffn_residual: RESID=1): row r's value
//         sum over j of w[r K + j] * y[pos[r K + j]] in order j = 0 .. K-1 (y: the grouped down
//         GEMM's output, [m K][DIM] in group order), + sigmoid(router[r NR + NE]) * sh[r] where
//         SHARED (sh: the shared expert's down product, [m][DIM]); into out (tmp), or out (x) +=
//         RES_SCALE * that. sh may be out (both tmp): each thread reads its 4 values before it writes
//         them. Products and sums rounded one by one (no FMA contraction), in the CPU's order.
//
// params:  MG, NE (experts), K (experts a row), BM (tile rows), WARPS (MG=0); DIM, NR (router
//          logits a row: NE + shared), SHARED, RESID, RES_SCALE (MG=1). MG=1 PRECOND: DIM % 4 == 0.
// launch:  MG=0  grid 1, block 32 * WARPS, smem 4 * ((WARPS + 3) * NE + 65)
//          MG=1  grid (ceil(DIM / 1024), m), block 256, smem 0
// args:    MG=0 (ids, tiles, ent, pos, m): tiles sized 16 + 16 * (ceil(mK / BM) + min(NE, mK)) bytes
//          MG=1 (y, pos, w, router, sh, out)
// bytes:   MG=0 12 * m * K (+ 16 a tile); MG=1 per row 4 * DIM * (K + SHARED + 1 + RESID) + 8 * K
// reference: CpuBackend::run_moe (cpu_moe.cpp)   test: tests/gpu/kernels_moe_group_test.cpp

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME ffn_exp_gate_up__moe_group
#define MG 0
#define NE 128
#define K 8
#define BM 64
#define WARPS 32
#define DIM 2048
#define NR 128
#endif

#include "common/common.cuh"

#ifndef SHARED
#define SHARED 0
#endif
#ifndef RESID
#define RESID 0
#endif
#ifndef RES_SCALE
#define RES_SCALE 1.0f
#endif

#if MG == 0
// ----- the group list -----
#define MG_NT (WARPS * 32)
#define MG_CH ((NE + MG_NT - 1) / MG_NT)  // experts a thread takes in the prefix over experts

#ifndef JITLLM_EMU
// the lanes of the warp whose v equals this lane's (sm_70+)
__device__ __forceinline__ unsigned match_any(int v) {
    unsigned m;
    asm volatile("match.any.sync.b32 %0, %1, 0xffffffff;" : "=r"(m) : "r"(v));
    return m;
}
#endif

extern "C" __global__ void __launch_bounds__(MG_NT)
KERNEL_NAME(const int* ids, int* tiles, int* ent, int* pos, int m) {
    JITLLM_DYN_SMEM(int, sm);
    int* hist = sm;               // [WARPS][NE]: a warp's entries of each expert, then the warps' before
    int* cnt = hist + WARPS * NE;  // [NE] entries of each expert
    int* off = cnt + NE;          // [NE] its first position
    int* tb = off + NE;           // [NE] its first tile
    int* wsum = tb + NE;          // [32] the warps' entries, [32] their tiles (then their prefixes), the tile count
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int n = m * K;
    for (int i = tid; i < WARPS * NE; i += MG_NT) hist[i] = 0;
    __syncthreads();
    // this warp's run of the entries [lo, hi), a multiple of 32 long but the last
    const int per = (n + MG_NT - 1) / MG_NT * 32;
    const int lo = min(n, warp * per), hi = min(n, lo + per);
    for (int b = lo; b < hi; b += 32) {
        const int e = b + lane < hi ? ids[b + lane] : -1;
        const unsigned same = match_any(e);
        if (e >= 0 && lane == __ffs(same) - 1) hist[warp * NE + e] += __popc(same);
    }
    __syncthreads();
    for (int e = tid; e < NE; e += MG_NT) {  // per expert: the warps' counts -> their prefix
        int s = 0;
        for (int w = 0; w < WARPS; ++w) {
            const int c = hist[w * NE + e];
            hist[w * NE + e] = s;
            s += c;
        }
        cnt[e] = s;
    }
    __syncthreads();
    // over the experts, MG_CH consecutive ones a thread: prefix sums of the counts and of the tiles
    int se = 0, st = 0;
    for (int c = 0; c < MG_CH; ++c) {
        const int e = tid * MG_CH + c;
        if (e < NE) {
            se += cnt[e];
            st += (cnt[e] + BM - 1) / BM;
        }
    }
    int ie = se, it = st;  // inclusive over the warp's lanes
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int a = __shfl_up_sync(0xffffffffu, ie, o), b = __shfl_up_sync(0xffffffffu, it, o);
        if (lane >= o) ie += a, it += b;
    }
    if (lane == 31) wsum[warp] = ie, wsum[32 + warp] = it;
    __syncthreads();
    if (warp == 0) {  // the warps' sums -> their exclusive prefix; the tile count
        const int xe = lane < WARPS ? wsum[lane] : 0, xt = lane < WARPS ? wsum[32 + lane] : 0;
        int ve = xe, vt = xt;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int a = __shfl_up_sync(0xffffffffu, ve, o), b = __shfl_up_sync(0xffffffffu, vt, o);
            if (lane >= o) ve += a, vt += b;
        }
        wsum[lane] = ve - xe;
        wsum[32 + lane] = vt - xt;
        if (lane == 31) wsum[64] = vt;
    }
    __syncthreads();
    int be = ie - se + wsum[warp], bt = it - st + wsum[32 + warp];
    for (int c = 0; c < MG_CH; ++c) {
        const int e = tid * MG_CH + c;
        if (e < NE) {
            off[e] = be;
            tb[e] = bt;
            be += cnt[e];
            bt += (cnt[e] + BM - 1) / BM;
        }
    }
    __syncthreads();
    // each entry at its expert's first position + the warps' entries before + the lanes' before
    for (int b = lo; b < hi; b += 32) {
        const int i = b + lane;
        const int e = i < hi ? ids[i] : -1;
        const unsigned same = match_any(e);
        if (e >= 0) {
            const int p = off[e] + hist[warp * NE + e] + __popc(same & ((1u << lane) - 1u));
            ent[p] = i;
            pos[i] = p;
        }
        __syncwarp();
        if (e >= 0 && lane == __ffs(same) - 1) hist[warp * NE + e] += __popc(same);
        __syncwarp();
    }
    int4* tl = reinterpret_cast<int4*>(tiles + 4);
    for (int e = tid; e < NE; e += MG_NT)
        for (int t = 0; t * BM < cnt[e]; ++t) tl[tb[e] + t] = make_int4(e, off[e] + t * BM, min(BM, cnt[e] - t * BM), 0);
    if (tid == 0) tiles[0] = wsum[64];
}

#elif MG == 1
// ----- the weighted combine (+ the shared expert) (+ the residual) -----
#define MG_CB 256  // threads a block, 4 values each

// a + b * s per lane, each product and sum rounded (no contraction: cpu_moe.cpp's arithmetic)
__device__ __forceinline__ float4 add_mul4(float4 a, float4 b, float s) {
    return make_float4(__fadd_rn(a.x, __fmul_rn(b.x, s)), __fadd_rn(a.y, __fmul_rn(b.y, s)),
                       __fadd_rn(a.z, __fmul_rn(b.z, s)), __fadd_rn(a.w, __fmul_rn(b.w, s)));
}

extern "C" __global__ void __launch_bounds__(MG_CB)
KERNEL_NAME(const float* y, const int* pos, const float* w, const float* router, const float* sh, float* out) {
    const int r = blockIdx.y, i = 4 * (blockIdx.x * MG_CB + threadIdx.x);
    if (i >= DIM) return;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int j = 0; j < K; ++j) {
        const float wj = w[r * K + j];
        const float4 v = ld_act4(y + (unsigned long long)pos[r * K + j] * DIM + i);
        acc = j == 0 ? make_float4(__fmul_rn(v.x, wj), __fmul_rn(v.y, wj), __fmul_rn(v.z, wj), __fmul_rn(v.w, wj))
                     : add_mul4(acc, v, wj);
    }
    const unsigned long long o = (unsigned long long)r * DIM + i;
#if SHARED
    const float g = 1.0f / (1.0f + expf(-router[(unsigned long long)r * NR + NE]));
    acc = add_mul4(acc, ld_act4(sh + o), g);
#endif
#if RESID
    *reinterpret_cast<float4*>(out + o) = add_mul4(ld_act4(out + o), acc, RES_SCALE);
#else
    *reinterpret_cast<float4*>(out + o) = acc;
#endif
    (void)router;
    (void)sh;
}
#endif
