// rms_norm: y[r,:] = x[r,:] * rsqrt(mean(x[r,:]^2) + eps) * w[:]   (w optional: HAS_WEIGHT)
// Also the per-head q/k norm of Qwen3 (D = head_dim, rows = heads, in place).
//
// params:
//   D           row length; any D (float4 path when D % 4 == 0)
//   BLOCK       threads per block, one block per row (multiple of 32; power of two if REDUCE=0)
//   REDUCE      1: warp-shuffle reduction; 0: shared-memory tree (no shuffles)
//   HAS_WEIGHT  1: multiply by w; 0: w unused (may be null)
//   OUT16       0: y is float; 1: y is f16, 2: y is bf16 (the 16-bit activations of the batch
//               phase's wgmma products, gemm.cu X_F16=1; needs D % 4 == 0). Not in place.
// PDL:     PDL=1 enables griddepcontrol (common.cuh); default 0
// launch:  grid = n_rows, block = BLOCK, smem = 0
// args:    (x, w, y, eps); rows contiguous (row r at x + r * D). y == x allowed (in place, OUT16=0).
//          PRECOND: x, y 16-byte aligned when D % 4 == 0.
// bytes:   n_rows * D * 8 (+ D * 4 for w)
// reference: cpu::rms_norm   test: tests/kernels/rms_norm_test.cpp

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME rms_norm
#define D 4096
#define BLOCK 256
#define REDUCE 1
#define HAS_WEIGHT 1
#endif

#include "common/common.cuh"

#ifndef OUT16
#define OUT16 0
#endif
static_assert(OUT16 == 0 || D % 4 == 0, "OUT16: D multiple of 4");

#if OUT16
#define OUT_T uint16_t
#else
#define OUT_T float
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(const float* x, const float* w, OUT_T* y, float eps) {
    pdl_launch_dependents();  // small grid: let the next kernel get scheduled
    pdl_wait();
    __shared__ float red[REDUCE ? 32 : BLOCK];
    // no __restrict__: y may alias x; every element is read, then written, by the same thread
    const float* xr = x + (unsigned long long)blockIdx.x * D;
    OUT_T* yr = y + (unsigned long long)blockIdx.x * D;
    const int t = threadIdx.x;
    float ss = 0.0f;
    if (D % 4 == 0) {
        for (int k = 4 * t; k < D; k += 4 * BLOCK) {
            const float4 v = *reinterpret_cast<const float4*>(xr + k);
            ss += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
        }
    } else {
        for (int k = t; k < D; k += BLOCK) ss += xr[k] * xr[k];
    }
    // matches cpu::rms_norm: scale = 1 / sqrt(sum / n + eps), y = x * scale * w
    const float scale = 1.0f / sqrtf(block_sum<BLOCK>(ss, red) / float(D) + eps);
    if (D % 4 == 0) {
        for (int k = 4 * t; k < D; k += 4 * BLOCK) {
            float4 v = *reinterpret_cast<const float4*>(xr + k);
#if HAS_WEIGHT
            const float4 g = __ldg(reinterpret_cast<const float4*>(w + k));
            v = make_float4(v.x * scale * g.x, v.y * scale * g.y, v.z * scale * g.z, v.w * scale * g.w);
#else
            v = make_float4(v.x * scale, v.y * scale, v.z * scale, v.w * scale);
#endif
#if OUT16
            *reinterpret_cast<uint2*>(yr + k) = pack_16x4<OUT16 == 2>(v);
#else
            *reinterpret_cast<float4*>(yr + k) = v;
#endif
        }
    } else {
#if !OUT16
        for (int k = t; k < D; k += BLOCK) yr[k] = xr[k] * scale * (HAS_WEIGHT ? __ldg(w + k) : 1.0f);
#endif
    }
}
