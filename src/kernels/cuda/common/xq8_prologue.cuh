// The gemv x prologue (GEMV_XQ8, gemv_dot.cuh's layout): x, RMS-normalised first when asked,
// quantized to Q8_0 blocks in shared memory by every thread of the block, for one activation row
// (xq8_prologue; layer_tail.cu's phases too) or up to XROWS of them (xq8_prologue_rows, batch
// steps). Included by gemv_dot.cuh where these stood; device code only.
#pragma once

// Quantizes the float4 x[k..k+3] of this lane into the shared copy. All 32 lanes of the warp
// call it (k out of range: v = 0, nothing stored); the 8 lanes of each aligned 32-element block
// share its max |x|. Same rule as quantize_row(Q8_0): d = amax / 127, q = roundf(x / d) with
// 1 / d, the scale kept rounded to f16. C: the length of x (layer_tail.cu: per phase).
template <int C = COLS>
__device__ __forceinline__ void xq8_store(float4 v, int k, uint8_t* q, float2* qd) {
    float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 4));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const int q0 = int(roundf(v.x * id)), q1 = int(roundf(v.y * id));
    const int q2 = int(roundf(v.z * id)), q3 = int(roundf(v.w * id));
    int sum = (q0 + q1) + (q2 + q3);
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    sum += __shfl_xor_sync(0xffffffffu, sum, 4);
    if (k >= C) return;
    const uint32_t word = (uint32_t(q0) & 0xFFu) | ((uint32_t(q1) & 0xFFu) << 8) |
                          ((uint32_t(q2) & 0xFFu) << 16) | (uint32_t(q3) << 24);
    const int b = k >> 5, e = k & 31;
#if WTYPE == Q4_0
    const int off = e < 16 ? 16 * b + e : C / 2 + 16 * b + (e - 16);
#else
    const int off = k;
#endif
    *reinterpret_cast<uint32_t*>(q + off) = word;
    if (e == 0) qd[b] = make_float2(f16_to_f32(f32_to_f16(d)), 8.0f * float(sum));
}

// x (C floats, written by an earlier kernel) quantized into the shared copy above (xq: C int8
// values, then C / 32 float2), RMS-normalised first with NORM (norm weight nw, eps; as
// cpu::rms_norm: x * (1 / sqrt(sum x^2 / C + eps)) * w). Every one of the block's NT threads
// calls it; it ends with __syncthreads. x is read from L2 in chunks of up to 8 float4 per thread,
// all loads of a chunk issued before any is used; when x fits one chunk and NORM, x and the norm
// weight are read once and kept through the block's sum of squares. CG: loads through L2 only (x written by other blocks of this kernel:
// layer_tail.cu). red: NT / 32 floats of scratch. gemv.cu's prologue and layer_tail.cu's phases.
// after_loads() runs once the first chunk's loads are issued, before any is used (gemv.cu
// BULK_FILL_AT_LOADS: the ring's late slots go out behind x's loads, not ahead of them).
struct NoHook {
    __device__ void operator()() const {}
};
// The norm weight's float4 of this thread in the one-chunk NORM path (k = j * 4 * NT + 4 * tid), loaded
// ahead (gemv.cu NW_EARLY: before the PDL wait, a weight does not depend on the previous kernel)
template <int C, int NT>
struct NwPre {
    static constexpr int XT = (C + 4 * NT - 1) / (4 * NT);
    static constexpr bool ok = XT <= 8;  // (the prologue's one-chunk path)
    float4 w[XT];
    __device__ __forceinline__ void load(const float* nw) {
#pragma unroll
        for (int j = 0; j < XT; ++j) {
            const int k = j * 4 * NT + 4 * int(threadIdx.x);
            w[j] = k < C ? __ldg(reinterpret_cast<const float4*>(nw + k)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    }
};
template <int C, int NT, bool NORM, bool CG = false, typename Hook = NoHook>
__device__ __forceinline__ void xq8_prologue(const float* x, const float* nw, float eps, uint8_t* xq, float* red,
                                             Hook after_loads = Hook(), const NwPre<C, NT>* wpre = nullptr) {
    constexpr int XT = (C + 4 * NT - 1) / (4 * NT), XC = XT < 8 ? XT : 8;  // float4 per thread, per chunk
    const int tid = threadIdx.x;
    float2* qd = reinterpret_cast<float2*>(xq + C);
    auto load = [](const float* p) { return CG ? __ldcg(reinterpret_cast<const float4*>(p)) : ld_act4(p); };
    float inv = 1.0f;
    if (NORM && XT <= XC) {
        float4 v[XC], w[XC];
        float ss = 0.0f;
#pragma unroll
        for (int j = 0; j < XC; ++j) {
            const int k = j * 4 * NT + 4 * tid;
            v[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            w[j] = v[j];
            if (k < C) {
                v[j] = load(x + k);
                w[j] = wpre ? wpre->w[j] : __ldg(reinterpret_cast<const float4*>(nw + k));
            }
        }
        after_loads();
#pragma unroll
        for (int j = 0; j < XC; ++j) ss += (v[j].x * v[j].x + v[j].y * v[j].y) + (v[j].z * v[j].z + v[j].w * v[j].w);
        inv = 1.0f / sqrtf(block_sum<NT>(ss, red) / float(C) + eps);
#pragma unroll
        for (int j = 0; j < XC; ++j) {
            const int k = j * 4 * NT + 4 * tid;
            if (k < C) {
                v[j].x = v[j].x * inv * w[j].x;
                v[j].y = v[j].y * inv * w[j].y;
                v[j].z = v[j].z * inv * w[j].z;
                v[j].w = v[j].w * inv * w[j].w;
            }
            xq8_store<C>(v[j], k, xq, qd);
        }
    } else {
        if (NORM) {
            float ss = 0.0f;
            for (int c0 = 0; c0 < XT; c0 += XC) {
                float4 v[XC];
#pragma unroll
                for (int j = 0; j < XC; ++j) {
                    const int k = (c0 + j) * 4 * NT + 4 * tid;
                    v[j] = c0 + j < XT && k < C ? load(x + k) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                }
                if (c0 == 0) after_loads();
#pragma unroll
                for (int j = 0; j < XC; ++j) ss += (v[j].x * v[j].x + v[j].y * v[j].y) + (v[j].z * v[j].z + v[j].w * v[j].w);
            }
            inv = 1.0f / sqrtf(block_sum<NT>(ss, red) / float(C) + eps);
        }
        for (int c0 = 0; c0 < XT; c0 += XC) {  // uniform trip counts: whole warps
            float4 v[XC];
#pragma unroll
            for (int j = 0; j < XC; ++j) {
                const int k = (c0 + j) * 4 * NT + 4 * tid;
                v[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (c0 + j < XT && k < C) {
                    v[j] = load(x + k);
                    if (NORM) {
                        const float4 w = __ldg(reinterpret_cast<const float4*>(nw + k));
                        v[j].x = v[j].x * inv * w.x;
                        v[j].y = v[j].y * inv * w.y;
                        v[j].z = v[j].z * inv * w.z;
                        v[j].w = v[j].w * inv * w.w;
                    }
                }
            }
            if (!NORM && c0 == 0) after_loads();
#pragma unroll
            for (int j = 0; j < XC; ++j)
                if (c0 + j < XT) xq8_store<C>(v[j], (c0 + j) * 4 * NT + 4 * tid, xq, qd);
        }
    }
    __syncthreads();
}

#ifndef XROWS  // gemv.cu: activation rows a block multiplies with each weight row it reads (batch steps)
#define XROWS 1
#endif
#if XROWS > 1
// The xq8_prologue of nx <= XROWS consecutive rows of x (row j at x + j * C, its copy at xq + j *
// XQB): each thread's loads of every row go out together (one L2 round trip a chunk of 4 * NT
// columns for all rows), the rows' sums of squares reduced in one pass. Same quantization as
// xq8_prologue. red: XROWS * 33 floats. Ends with __syncthreads.
template <int C, int NT, bool NORM, int XQB>
__device__ __forceinline__ void xq8_prologue_rows(const float* x, const float* nw, float eps, uint8_t* xq, float* red,
                                                  int nx) {
    constexpr int XT = (C + 4 * NT - 1) / (4 * NT);  // chunks of one float4 a thread
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    float inv[XROWS];
#pragma unroll
    for (int j = 0; j < XROWS; ++j) inv[j] = 1.0f;
    if (NORM) {
        float ss[XROWS];
#pragma unroll
        for (int j = 0; j < XROWS; ++j) ss[j] = 0.0f;
        for (int c = 0; c < XT; ++c) {
            const int k = c * 4 * NT + 4 * tid;
            float4 v[XROWS];
#pragma unroll
            for (int j = 0; j < XROWS; ++j)
                v[j] = j < nx && k < C ? ld_act4(x + (unsigned long long)j * C + k) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int j = 0; j < XROWS; ++j) ss[j] += (v[j].x * v[j].x + v[j].y * v[j].y) + (v[j].z * v[j].z + v[j].w * v[j].w);
        }
#pragma unroll
        for (int j = 0; j < XROWS; ++j) {
            ss[j] = warp_sum(ss[j]);
            if (lane == 0) red[j * 32 + warp] = ss[j];
        }
        __syncthreads();
        if (warp < XROWS) {
            float t = lane < NT / 32 ? red[warp * 32 + lane] : 0.0f;
            t = warp_sum(t);
            if (lane == 0) red[XROWS * 32 + warp] = t;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < XROWS; ++j) inv[j] = 1.0f / sqrtf(red[XROWS * 32 + j] / float(C) + eps);
    }
    for (int c = 0; c < XT; ++c) {  // uniform trip counts: whole warps
        const int k = c * 4 * NT + 4 * tid;
        float4 v[XROWS];
#pragma unroll
        for (int j = 0; j < XROWS; ++j)
            v[j] = j < nx && k < C ? ld_act4(x + (unsigned long long)j * C + k) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (NORM && k < C) {
            const float4 w = __ldg(reinterpret_cast<const float4*>(nw + k));
#pragma unroll
            for (int j = 0; j < XROWS; ++j) {
                v[j].x = v[j].x * inv[j] * w.x;
                v[j].y = v[j].y * inv[j] * w.y;
                v[j].z = v[j].z * inv[j] * w.z;
                v[j].w = v[j].w * inv[j] * w.w;
            }
        }
#pragma unroll
        for (int j = 0; j < XROWS; ++j)
            if (j < nx) xq8_store<C>(v[j], k, xq + j * XQB, reinterpret_cast<float2*>(xq + j * XQB + C));
    }
    __syncthreads();
}
#endif
