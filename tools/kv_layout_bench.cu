// Reads one layer's K and V cache of the Llama-3.1-8B decode shape (8 kv heads x 128 dims, f16) at
// a depth of n positions, the way split-KV decode attention does, in two layouts:
//   token-major [pos][kv_head][dim] (jitllm's and llama.cpp's cache: each kv head's row is 256 B
//   of a 2 KiB position row) and head-major [kv_head][pos][dim] (each head's rows contiguous),
// and a plain contiguous read of the same bytes. Question: is the strided pattern what bounds
// attention at depth 4096 (~1.3 TB/s effective), or does any layout read at the copy rate?
// Build: nvcc -O3 -arch=sm_90 -o kv_layout_bench tools/kv_layout_bench.cu ; run: ./kv_layout_bench
#include <cstdio>
#include <cuda_runtime.h>

#include "layer_timer.h"

constexpr int KVH = 8, HD = 128;  // kv heads, head dim
constexpr int ROW = HD * 2;       // bytes of one head's row

// grid (KVH, splits), block 256: block (h, s) reads positions [s*per, (s+1)*per) of head h, K and V
template <bool HEAD_MAJOR>
__global__ void read_kv(const uint4* k, const uint4* v, int n, int per, unsigned* sink) {
    const int h = blockIdx.x, s = blockIdx.y;
    const int p0 = s * per, p1 = min(n, p0 + per);
    constexpr int U = ROW / 16;  // 16 uint4 per row
    unsigned acc = 0;
#pragma unroll 4
    for (int i = p0 * U + threadIdx.x; i < p1 * U; i += blockDim.x) {
        const int p = i / U, u = i % U;
        const size_t off = HEAD_MAJOR ? ((size_t)h * n + p) * U + u : ((size_t)p * KVH + h) * U + u;
        uint4 a = __ldcs(k + off), b = __ldcs(v + off);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
    }
    if (acc == 0x12345678u) sink[0] = acc;
}

__global__ void read_flat(const uint4* k, const uint4* v, size_t n16, unsigned* sink) {
    unsigned acc = 0;
#pragma unroll 4
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
        uint4 a = __ldcs(k + i), b = __ldcs(v + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
    }
    if (acc == 0x12345678u) sink[0] = acc;
}

int main() {
    const int layers = 32;  // distinct layers so L2 (60 MiB) holds none of them between reads
    const int n = 4096;
    const size_t bytes = (size_t)n * KVH * ROW;  // one of K or V of one layer
    char *kb, *vb;
    unsigned* sink;
    cudaMalloc(&kb, bytes * layers);
    cudaMalloc(&vb, bytes * layers);
    cudaMalloc(&sink, 4);
    cudaMemset(kb, 1, bytes * layers);
    cudaMemset(vb, 2, bytes * layers);
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    auto timeit = [&](const char* name, auto launch) { time_per_layer(name, layers, 2.0 * bytes, launch); };
    timeit("flat contiguous (132x4 blocks)", [&](int l) {
        read_flat<<<sms * 4, 256>>>((const uint4*)(kb + l * bytes), (const uint4*)(vb + l * bytes), bytes / 16, sink);
    });
    for (int splits : {8, 16, 32, 64}) {
        char name[64];
        const int per = (n + splits - 1) / splits;
        snprintf(name, sizeof name, "token-major, %d splits", splits);
        timeit(name, [&](int l) {
            read_kv<false><<<dim3(KVH, splits), 256>>>((const uint4*)(kb + l * bytes), (const uint4*)(vb + l * bytes), n, per, sink);
        });
        snprintf(name, sizeof name, "head-major, %d splits", splits);
        timeit(name, [&](int l) {
            read_kv<true><<<dim3(KVH, splits), 256>>>((const uint4*)(kb + l * bytes), (const uint4*)(vb + l * bytes), n, per, sink);
        });
    }
    cudaError_t err = cudaDeviceSynchronize();
    printf("status: %s\n", cudaGetErrorString(err));
    return err == cudaSuccess ? 0 : 1;
}
