// Decode attention of one kv head's query heads by one whole block, for the end of the q/k/v gemv
// (gate attn.fuse=qkv: gemv.cu ATT_TAIL): the block whose ticket completes a kv head's q, k and v
// rows attends with them at once, instead of a separate attention launch after the gemv's end.
//
//   s_p = (q_h . k_p) * SCALE,  out_h = sum_p softmax(s)_p * v_p  over the cached positions 0 .. n - 1
//
// Three phases, a __syncthreads between each:
//   scores   a position a group of HD / 8 lanes (8 dims a lane, one 16-byte K load), every query
//            head of the group from the same K row; the lanes' sums by xor shuffles
//   softmax  warp h (h < QPG): the max and the exp sum of head h's scores over the positions
//   V sums   thread (dp, pg): dims 2 dp, 2 dp + 1 (one 4-byte V load) of positions pg, pg + NPG, ..
//            for every head, then the NPG partial sums of each output added in order
// The first round of K rows (KU waves) and of V rows (VU positions a thread) is requested before q
// is read, so the block pays one L2 round trip for a context of up to 128 positions (8B shape).
// Scores live in shared memory (n * QPG floats), so any context whose scores fit works; the time
// grows with n on one SM. Off by default: measured slower on the H200 (docs/perf-notes.md session 34:
// the winners' round trips queue behind the next gemvs' ring fills).
// Arithmetic: f32 sums of f32 q times f16 K / V as cpu::attention, in another order; exp as expf.
#pragma once

#include "common/common.cuh"
#include "common/xq8_group.cuh"

// Shared floats attn_tail_group needs for n positions (the caller passes at least this many).
template <int QPG, int HD, int NT>
constexpr int attn_tail_smem_floats(int n) {
    return (NT / (HD / 2)) * QPG * HD + QPG * HD + 4 + n * QPG;
}

// Every thread of the block calls it. g: the kv head; n: positions (the current one included);
// q: the step's queries ([n_heads][HD] floats, this kernel's writes: read through L2); kc / vc: this
// layer's caches ([n_ctx][NKV][HD] halves); out: [n_heads][HD]; XQ: also each group of 32 outputs
// quantized at xq (common/xq8_group.cuh's layout for a consumer of XQC columns); sm: shared memory
// of attn_tail_smem_floats(n) floats, 16-byte aligned, free for the call.
template <int QPG, int HD, int NKV, int NT, bool XQ, bool PLANES, int XQC>
__device__ __forceinline__ void attn_tail_group(int g, int n, float scale, const float* q, const uint16_t* kc,
                                                const uint16_t* vc, float* out, uint8_t* xq, float* sm) {
    static_assert(HD == 64 || HD == 128 || HD == 256, "ATT_TAIL: head dim 64, 128 or 256");
    static_assert(QPG >= 1 && QPG <= 4, "ATT_TAIL: at most 4 query heads a kv head (q in registers)");
    constexpr int NW = NT / 32, LPP = HD / 8, PPW = 32 / LPP, KU = 4, KR = PPW * NW * KU;
    constexpr int DP = HD / 2, NPG = NT / DP, VU = 16, VR = NPG * VU;
    static_assert(NT % 32 == 0 && NT % DP == 0 && (QPG * HD) % 32 == 0, "ATT_TAIL: whole warps");
    constexpr int ROW = NKV * HD;  // halves of a cache row
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    float* part = sm;                // [NPG][QPG][HD]: the V sums' partials
    float* qs = part + NPG * QPG * HD;  // [QPG][HD]
    float* inv = qs + QPG * HD;      // [QPG] (4)
    float* wt = inv + 4;             // [n][QPG]: scores, then exp(s - max)
    const uint16_t* kg = kc + g * HD;
    const uint16_t* vg = vc + g * HD;
    const int j = lane % LPP, sub = lane / LPP;  // K: dims 8 j .. 8 j + 7 of position ... + sub
    const int dp = tid % DP, pg = tid / DP;       // V: dims 2 dp, 2 dp + 1 of positions pg + NPG i

    auto k_pos = [&](int p0, int u) { return p0 + (u * NW + w) * PPW + sub; };
    auto load_k = [&](int p0, uint4* kv) {
#pragma unroll
        for (int u = 0; u < KU; ++u) {
            const int p = k_pos(p0, u);
            kv[u] = p < n ? __ldcg(reinterpret_cast<const uint4*>(kg + (unsigned long long)p * ROW + 8 * j)) : make_uint4(0, 0, 0, 0);
        }
    };
    auto load_v = [&](int p0, uint32_t* vv) {
#pragma unroll
        for (int u = 0; u < VU; ++u) {
            const int p = p0 + pg + NPG * u;
            vv[u] = p < n ? __ldcg(reinterpret_cast<const unsigned*>(vg + (unsigned long long)p * ROW + 2 * dp)) : 0u;
        }
    };
    uint4 kv[KU];
    uint32_t vv[VU];
    load_k(0, kv);
    load_v(0, vv);
    for (int i = tid; i < QPG * HD / 4; i += NT)
        reinterpret_cast<float4*>(qs)[i] = __ldcg(reinterpret_cast<const float4*>(q + (unsigned long long)g * QPG * HD) + i);
    __syncthreads();
    float qr[QPG][8];
#pragma unroll
    for (int h = 0; h < QPG; ++h)
#pragma unroll
        for (int k = 0; k < 8; ++k) qr[h][k] = qs[h * HD + 8 * j + k];

    // --- scores
    for (int p0 = 0; p0 < n; p0 += KR) {
        if (p0 > 0) load_k(p0, kv);
#pragma unroll
        for (int u = 0; u < KU; ++u) {
            const uint32_t kw[4] = {kv[u].x, kv[u].y, kv[u].z, kv[u].w};
            float s[QPG];
#pragma unroll
            for (int h = 0; h < QPG; ++h) {
                float a = 0.0f;
#pragma unroll
                for (int k = 0; k < 4; ++k) a += qr[h][2 * k] * f16_lo(kw[k]) + qr[h][2 * k + 1] * f16_hi(kw[k]);
                s[h] = a;
            }
#pragma unroll
            for (int o = LPP / 2; o > 0; o >>= 1)
#pragma unroll
                for (int h = 0; h < QPG; ++h) s[h] += __shfl_xor_sync(0xffffffffu, s[h], o);
            const int p = k_pos(p0, u);
            if (j == 0 && p < n)
#pragma unroll
                for (int h = 0; h < QPG; ++h) wt[p * QPG + h] = s[h] * scale;
        }
    }
    __syncthreads();

    // --- softmax: warp h, head h
    if (w < QPG) {
        float m = -JL_INF;
        for (int p = lane; p < n; p += 32) m = fmaxf(m, wt[p * QPG + w]);
        m = warp_max(m);
        float sum = 0.0f;
        for (int p = lane; p < n; p += 32) {
            const float e = expf(wt[p * QPG + w] - m);
            wt[p * QPG + w] = e;
            sum += e;
        }
        sum = warp_sum(sum);
        if (lane == 0) inv[w] = 1.0f / sum;
    }
    __syncthreads();

    // --- V sums
    float acc[QPG][2];
#pragma unroll
    for (int h = 0; h < QPG; ++h) acc[h][0] = acc[h][1] = 0.0f;
    for (int p0 = 0; p0 < n; p0 += VR) {
        if (p0 > 0) load_v(p0, vv);
#pragma unroll
        for (int u = 0; u < VU; ++u) {
            const int p = p0 + pg + NPG * u;
            if (p < n) {
                const float v0 = f16_lo(vv[u]), v1 = f16_hi(vv[u]);
#pragma unroll
                for (int h = 0; h < QPG; ++h) {
                    const float e = wt[p * QPG + h];
                    acc[h][0] += e * v0;
                    acc[h][1] += e * v1;
                }
            }
        }
    }
#pragma unroll
    for (int h = 0; h < QPG; ++h)
        *reinterpret_cast<float2*>(part + (pg * QPG + h) * HD + 2 * dp) = make_float2(acc[h][0], acc[h][1]);
    __syncthreads();
    for (int i = tid; i < QPG * HD; i += NT) {  // whole warps: 32 consecutive outputs of one head
        const int h = i / HD, d = i % HD;
        float o = 0.0f;
#pragma unroll
        for (int k = 0; k < NPG; ++k) o += part[(k * QPG + h) * HD + d];
        o *= inv[h];
        const int oi = (g * QPG + h) * HD + d;
        out[oi] = o;
        if constexpr (XQ) xq8_group_store<XQC, PLANES>(o, oi / 32, xq, lane);
    }
    (void)xq;
}
