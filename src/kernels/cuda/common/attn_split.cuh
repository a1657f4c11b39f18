// Pieces the split-KV decode attention kernels share (attention_decode.cu MMA and CLUSTER,
// attention_decode_staged.cu, attention_decode_tma.cu): the m16n8k16 product with only its first 8
// A rows live, the ticketed merge of the splits' partial states, one output's merge from loaded
// states (the cluster's barrier and distributed shared-memory loads: common/cluster.cuh).
#pragma once

#include "common/common.cuh"
#include "common/async_copy.cuh"
#include "common/cluster.cuh"

// DV outputs of a head (dims sharing the splits' m and l) from the splits' states, every load issued
// before the first use (one round trip): ld(sp, i) = split sp's O at dim i (i < DV), ld(sp, DV) = its
// m (base 2), ld(sp, DV + 1) = its l.
//   out_i = sum_s 2^(m_s - M) O_s,i / sum_s 2^(m_s - M) l_s,  M = max_s m_s, summed in split order
template <int NS, int DV, class Load>
__device__ __forceinline__ void merge_dv(Load ld, int n_active, float (&out)[DV]) {
    float x[NS][DV], ms[NS], ls[NS];
#pragma unroll
    for (int sp = 0; sp < NS; ++sp)
        if (sp < n_active) {
#pragma unroll
            for (int i = 0; i < DV; ++i) x[sp][i] = ld(sp, i);
            ms[sp] = ld(sp, DV);
            ls[sp] = ld(sp, DV + 1);
        }
    float M = -JL_INF;
#pragma unroll
    for (int sp = 0; sp < NS; ++sp)
        if (sp < n_active) M = fmaxf(M, ms[sp]);
    float L = 0.0f, ov[DV];
#pragma unroll
    for (int i = 0; i < DV; ++i) ov[i] = 0.0f;
#pragma unroll
    for (int sp = 0; sp < NS; ++sp)
        if (sp < n_active) {
            const float wg = exp2f(ms[sp] - M);
            L = fmaf(ls[sp], wg, L);
#pragma unroll
            for (int i = 0; i < DV; ++i) ov[i] = fmaf(x[sp][i], wg, ov[i]);
        }
#pragma unroll
    for (int i = 0; i < DV; ++i) out[i] = ov[i] / L;
}

// One output of a head (merge_dv with DV 1: ld(sp, 0) = O, 1 = m, 2 = l)
template <int NS, class Load>
__device__ __forceinline__ float merge_one(Load ld, int n_active) {
    float o[1];
    merge_dv<NS, 1>(ld, n_active, o);
    return o[0];
}

// D = A B + C on an m16n8k16 tile (f16 x f16 -> f32) whose A rows 8..15 are zero: a0 = (row g,
// k 2c..2c+1), a2 = (row g, k 2c+8..2c+9); rows 8..15 of the result are dropped (g = lane / 4,
// c = lane % 4; c0, c1: row g, columns 2c, 2c+1). sm_80+
__device__ __forceinline__ void mma_rows8(float& c0, float& c1, uint32_t a0, uint32_t a2, uint32_t b0, uint32_t b1) {
    float d2, d3;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %5}, {%7, %8}, "
                 "{%0, %1, %9, %9};"
                 : "+f"(c0), "+f"(c1), "=f"(d2), "=f"(d3)
                 : "r"(a0), "r"(0u), "r"(a2), "r"(b0), "r"(b1), "f"(0.0f));
}

// The last active block of a head set combines the splits' states and writes output i = v by
// put(i, v), i = head * HD + dim, a warp's 32 lanes 32 consecutive outputs (called by every
// thread of that block once its ticket says it is the last, after the acquire fence):
//   out_h = sum_s w_s O_s / sum_s w_s l_s,  w_s = 2^(m_s - max m)
// in two L2 round trips: the splits' (m, l) into wsp / lsp (NH x NS floats each), the weights
// and L by a warp a head (lanes over the splits) into wsp and lsum (NH floats), then a dim a thread
// with every split's O loaded at once and summed in split order. scratch: a split's state at
// ((hq0 + h) * NS + s) * (HD + 4) floats: O, m, l.
// The splits' (m_s, l_s) of NH heads into wsp / lsp (NH x NS floats each), the block's NT threads
// sharing the loads: split s of head h at ((hq0 + h) * NS + s) * SROW floats, m and l after its HD
// outputs
template <int NH, int HD, int NS, int NT, int SROW>
__device__ __forceinline__ void load_split_ml(const float* scratch, int hq0, int n_active, float* wsp, float* lsp) {
    for (int idx = threadIdx.x; idx < NH * n_active; idx += NT) {
        const int h = idx / n_active, sp = idx % n_active;
        const float* st = scratch + ((unsigned long long)(hq0 + h) * NS + sp) * SROW;
        wsp[h * NS + sp] = __ldcg(st + HD);  // m_s for now
        lsp[h * NS + sp] = __ldcg(st + HD + 1);
    }
}

template <int NH, int HD, int NS, int NT, class Put>  // heads, head dim, splits, threads a block
__device__ __forceinline__ void merge_split_states(const float* scratch, Put put, int hq0, int n_active, float* wsp,
                                                   float* lsp, float* lsum) {
    constexpr int SROW = HD + 4;
    const int tid = threadIdx.x, lane = tid % 32, wp = tid / 32;
    load_split_ml<NH, HD, NS, NT, SROW>(scratch, hq0, n_active, wsp, lsp);
    __syncthreads();
    for (int h = wp; h < NH; h += NT / 32) {
        float* w = wsp + h * NS;
        float M = -JL_INF;
        for (int sp = lane; sp < n_active; sp += 32) M = fmaxf(M, w[sp]);
        M = warp_max(M);
        float L = 0.0f;
        for (int sp = lane; sp < n_active; sp += 32) {
            const float wg = exp2f(w[sp] - M);
            L += lsp[h * NS + sp] * wg;
            w[sp] = wg;
        }
        L = warp_sum(L);
        if (lane == 0) lsum[h] = L;
    }
    __syncthreads();
    for (int idx = tid; idx < NH * HD; idx += NT) {
        const int h = idx / HD, d = idx % HD, hq = hq0 + h;
        const float* sc = scratch + (unsigned long long)hq * NS * SROW + d;
        float x[NS];
#pragma unroll
        for (int sp = 0; sp < NS; ++sp)
            if (sp < n_active) x[sp] = __ldcg(sc + sp * SROW);
        float o = 0.0f;
#pragma unroll
        for (int sp = 0; sp < NS; ++sp)
            if (sp < n_active) o = fmaf(x[sp], wsp[h * NS + sp], o);
        put(hq * HD + d, o / lsum[h]);
    }
}
