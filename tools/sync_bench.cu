// What a kernel boundary costs in a decode-like chain, and whether a counter in global memory hands
// over faster than programmatic dependent launch's grid completion (the question behind replacing
// `griddepcontrol.wait` by a per-kernel arrival counter: 0.4-0.8 µs slower than PDL, 2f2c35d).
// A chain of K kernels (captured once as a CUDA graph, replayed), each 132 blocks (one an SM; the
// dynamic shared memory keeps a dependent block off an SM until the block before it there exits, as
// the bulk gemvs' rings do), every block streaming BYTES of a large buffer (ld.global.cs, like the
// weights) and then reading the previous kernel's 132 outputs and writing its own. Hand-overs:
//   serial  no PDL attribute: each kernel starts after the previous one completes
//   pdl     PDL attribute, launch_dependents at the start, griddepcontrol.wait before reading the
//           previous outputs (the weight stream is issued before the wait, as the gemvs' early slots)
//   flag    the same launch, but the wait is thread 0 spinning on an acquire load of the previous
//           kernel's arrival counter until all its blocks arrived; each block arrives after its
//           output store (bar.sync, fence.acq_rel.gpu, relaxed add). Kernel k+2 clears k's counter.
//   none    PDL launch and no wait at all (a floor: wrong results allowed, timing only)
// Prints microseconds per kernel for each hand-over at several stream sizes and checks the chain's
// last value (serial, pdl and flag must give the same).
// Build: nvcc -O3 -arch=sm_90 -o sync_bench tools/sync_bench.cu (scripts/gpu-prepare.sh)
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

constexpr int BLOCKS = 132, THREADS = 256, K = 160, SMEM = 150 * 1024;

enum Mode { SERIAL = 0, PDL = 1, FLAG = 2, NONE = 3 };

__device__ __forceinline__ void wait_prev(int mode, unsigned* counters, int k) {
    if (mode == PDL) asm volatile("griddepcontrol.wait;" ::: "memory");
    if (mode == FLAG && k > 0) {
        if (threadIdx.x == 0) {
            unsigned v;
            for (;;) {
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(counters + k - 1) : "memory");
                if (v >= BLOCKS) break;
            }
        }
        __syncthreads();
    }
}

__global__ void __launch_bounds__(THREADS) k_step(int mode, int k, const uint4* stream, size_t words_per_block,
                                                  float* outs, unsigned* counters) {
    extern __shared__ uint4 sm[];
    if (mode != SERIAL) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    // the weights: independent of the previous kernel, streamed before the wait
    const uint4* w = stream + blockIdx.x * words_per_block;
    unsigned acc = 0;
    for (size_t i = threadIdx.x; i < words_per_block; i += THREADS) {
        uint4 v;
        asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(w + i));
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    wait_prev(mode, counters, k);
    // kernel k+2 clears kernel k's counter: every reader of it (kernel k+1's blocks) has passed
    if (mode == FLAG && k >= 2 && blockIdx.x == 0 && threadIdx.x == 0) counters[k - 2] = 0;
    // the previous outputs (a dependency every block has on every block before it)
    float s = 0.0f;
    if (k > 0)
        for (int b = threadIdx.x; b < BLOCKS; b += THREADS) s += __ldcg(outs + (k - 1) * BLOCKS + b);
    sm[threadIdx.x] = make_uint4(acc, __float_as_uint(s), 0, 0);
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        unsigned a = 0;
        for (int i = 0; i < THREADS; ++i) t += __uint_as_float(sm[i].y), a ^= sm[i].x;
        outs[k * BLOCKS + blockIdx.x] = 1.0f + 0.5f * t / BLOCKS + (a == 0x12345678u ? 1.0f : 0.0f);
    }
    if (mode == FLAG) {
        __syncthreads();
        if (threadIdx.x == 0) {
            asm volatile("fence.acq_rel.gpu;" ::: "memory");
            atomicAdd(counters + k, 1u);
        }
    }
}

static void launch(int mode, int k, cudaStream_t st, const uint4* stream, size_t wpb, float* outs, unsigned* ctr) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(BLOCKS);
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = SMEM;
    cfg.stream = st;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = mode == SERIAL ? 0 : 1;
    cudaLaunchKernelEx(&cfg, k_step, mode, k, stream, wpb, outs, ctr);
}

int main() {
    cudaFuncSetAttribute(k_step, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    const size_t max_block_bytes = 256 * 1024;  // ~33.8 MB a kernel at most
    uint4* stream = nullptr;
    float* outs = nullptr;
    unsigned* ctr = nullptr;
    // the kernels stream disjoint ranges: 4 x the L2 (50-60 MB) at the largest size
    const size_t total = max_block_bytes * BLOCKS * 8;
    cudaMalloc(&stream, total);
    cudaMemset(stream, 1, total);
    cudaMalloc(&outs, sizeof(float) * BLOCKS * K);
    cudaMalloc(&ctr, sizeof(unsigned) * K);
    cudaMemset(ctr, 0, sizeof(unsigned) * K);
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    const char* names[] = {"serial", "pdl", "flag", "none"};
    std::printf("%d kernels a graph, %d blocks x %d threads, %d KiB dynamic shared memory a block\n", K, BLOCKS,
                THREADS, SMEM / 1024);
    for (size_t block_bytes : {size_t(0), size_t(16 * 1024), size_t(64 * 1024), size_t(208 * 1024)}) {
        const size_t wpb = block_bytes / 16;
        for (int round = 0; round < 2; ++round)
            for (int mode = 0; mode < 4; ++mode) {
                cudaGraph_t g;
                cudaGraphExec_t ge;
                cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
                for (int k = 0; k < K; ++k) {
                    const uint4* s = stream + (size_t(k) % 8) * (max_block_bytes / 16) * BLOCKS;
                    launch(mode, k, st, s, wpb, outs, ctr);
                }
                cudaStreamEndCapture(st, &g);
                if (cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) {
                    std::printf("instantiate failed: %s\n", cudaGetErrorString(cudaGetLastError()));
                    return 1;
                }
                // the last two counters are cleared between replays (no kernel k+2 for them)
                auto replay = [&] {
                    cudaMemsetAsync(ctr + K - 2, 0, 2 * sizeof(unsigned), st);
                    cudaGraphLaunch(ge, st);
                };
                for (int w = 0; w < 3; ++w) replay();
                cudaStreamSynchronize(st);
                cudaEvent_t e0, e1;
                cudaEventCreate(&e0);
                cudaEventCreate(&e1);
                const int reps = 20;
                cudaEventRecord(e0, st);
                for (int r = 0; r < reps; ++r) replay();
                cudaEventRecord(e1, st);
                cudaEventSynchronize(e1);
                float ms = 0;
                cudaEventElapsedTime(&ms, e0, e1);
                float last = 0;
                cudaMemcpy(&last, outs + (K - 1) * BLOCKS, sizeof(float), cudaMemcpyDeviceToHost);
                const double us = ms * 1000.0 / reps / K;
                const double bytes = double(block_bytes) * BLOCKS;
                std::printf("%7zu KiB/block %-6s round %d: %7.3f us a kernel (%6.1f GB/s)  last %.6f  %s\n",
                            block_bytes / 1024, names[mode], round, us, bytes / (us * 1e3), last,
                            cudaGetErrorString(cudaGetLastError()));
                cudaEventDestroy(e0);
                cudaEventDestroy(e1);
                cudaGraphExecDestroy(ge);
                cudaGraphDestroy(g);
            }
    }
    return 0;
}
