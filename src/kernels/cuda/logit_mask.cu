// logit_mask (constrained output, runtime/token_constraint.h): logits[i] = -inf where bit i % 32
// of mask[i / 32] is 0, before decode's pick kernel (argmax, or the draw) reads them. The host
// writes the mask while the device runs the step (CudaBackend::decode_masked).
//
// params:  N (vocab), BLOCK
// launch:  grid = ceil(N / BLOCK), block = BLOCK (a multiple of 32), smem = 0: one thread a
//          logit, a warp's 32 reading one mask word
// args:    (logits, mask)   mask: ceil(N / 32) words
// bytes:   N * 4 + N / 8 (read) and the masked logits (written)
// reference: JsonConstraint::mask   test: tests/gpu/kernels_mask_test.cpp

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME logit_mask
#define N 128256
#define BLOCK 256
#endif

#include "common/common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(float* __restrict__ logits, const unsigned* __restrict__ mask) {
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N && !(mask[i >> 5] >> (i & 31) & 1u)) logits[i] = -JL_INF;
}
