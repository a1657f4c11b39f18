// Stages one layer's K and V cache of the Llama-3.1-8B decode shape (8 kv heads x 128 dims, f16,
// token-major [pos][kv_head][dim]: a head's 256-byte row every 2 KiB) at depth 4096 into shared
// memory, 128 positions (64 KiB of K and V) a block, grid (8 kv heads, 32 splits) of 256 threads,
// as attention_decode_staged.cu (attn.stage=smem) does, four ways:
//   cp.async   16-byte cp.async.cg a thread and piece (16 threads a row; the kernel's issue_chunk)
//   ld+st      16-byte loads into registers (all 16 of a thread issued), then st.shared
//   bulk row   one cp.async.bulk of 256 bytes a thread (128 K rows, 128 V rows), an mbarrier
//   tensor map one cp.async.bulk.tensor.2d box of 128 rows x 128 halves for K and one for V,
//              issued by one thread (cuTensorMapEncodeTiled, the map a __grid_constant__)
// and a plain read of the same rows into registers for reference. Question (2026-12-02): the
// staged kernel's copies land at ~1 TB/s (17.8 us a launch under ncu against ~4 us of bytes): is
// that the copy method, and which one keeps 128 KiB an SM in flight at the copy rate?
// Build: nvcc -O3 -arch=sm_90 -I src/kernels/cuda -o kv_stage_bench tools/kv_stage_bench.cu -lcuda (scripts/gpu-prepare.sh)
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "common/async_copy.cuh"  // the kernels' own copy and mbarrier helpers (-I src/kernels/cuda)
#include "layer_timer.h"

constexpr int KVH = 8, HD = 128, ROW = HD * 2;  // kv heads, head dim, bytes of a head's row
constexpr int CH = 128, BLOCK = 256, NP = ROW / 16;
constexpr int SMEM = 2 * CH * ROW + 1024;  // K and V rows (dense), 1 KiB for alignment and barriers

// a word of every row of shared memory, so the copies cannot be dropped
__device__ __forceinline__ void consume(const uint8_t* s, unsigned* sink) {
    unsigned acc = 0;
    for (int r = threadIdx.x; r < 2 * CH; r += BLOCK) acc ^= *reinterpret_cast<const unsigned*>(s + r * ROW);
    if (acc == 0x12345678u) sink[0] = acc;
}

// block (h, s): positions [s * CH, (s + 1) * CH) of head h
__global__ void __launch_bounds__(BLOCK) stage_cp_async(const uint8_t* k, const uint8_t* v, unsigned* sink) {
    extern __shared__ __align__(128) uint8_t sm[];
    const int h = blockIdx.x, p0 = blockIdx.y * CH;
    for (int e = threadIdx.x; e < CH * NP; e += BLOCK) {
        const int r = e / NP, pc = e % NP;
        const size_t off = ((size_t)(p0 + r) * KVH + h) * ROW + pc * 16;
        cp_async16(smem_addr(sm + r * ROW + pc * 16), k + off, 16);
        cp_async16(smem_addr(sm + (CH + r) * ROW + pc * 16), v + off, 16);
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    consume(sm, sink);
}

__global__ void __launch_bounds__(BLOCK) stage_ld_st(const uint8_t* k, const uint8_t* v, unsigned* sink) {
    extern __shared__ __align__(128) uint8_t sm[];
    const int h = blockIdx.x, p0 = blockIdx.y * CH;
    constexpr int N = CH * NP / BLOCK;  // 8 pieces of K and 8 of V a thread
    uint4 a[N], b[N];
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int e = threadIdx.x + i * BLOCK, r = e / NP, pc = e % NP;
        const size_t off = ((size_t)(p0 + r) * KVH + h) * ROW + pc * 16;
        a[i] = __ldcs(reinterpret_cast<const uint4*>(k + off));
        b[i] = __ldcs(reinterpret_cast<const uint4*>(v + off));
    }
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int e = threadIdx.x + i * BLOCK, r = e / NP, pc = e % NP;
        *reinterpret_cast<uint4*>(sm + r * ROW + pc * 16) = a[i];
        *reinterpret_cast<uint4*>(sm + (CH + r) * ROW + pc * 16) = b[i];
    }
    __syncthreads();
    consume(sm, sink);
}

__global__ void __launch_bounds__(BLOCK) stage_bulk_rows(const uint8_t* k, const uint8_t* v, unsigned* sink) {
    extern __shared__ __align__(128) uint8_t sm[];
    const int h = blockIdx.x, p0 = blockIdx.y * CH, t = threadIdx.x;
    const uint32_t bar = smem_addr(sm + 2 * CH * ROW);
    if (t == 0) {
        mbar_init(bar, 1);
        mbar_init_fence();
        mbar_arrive_expect_tx(bar, 2 * CH * ROW);
    }
    __syncthreads();
    const int r = t % CH;
    bulk_g2s(smem_addr(sm + (t < CH ? r : CH + r) * ROW), (t < CH ? k : v) + ((size_t)(p0 + r) * KVH + h) * ROW, ROW, bar);
    mbar_wait(bar, 0);
    consume(sm, sink);
}

__global__ void __launch_bounds__(BLOCK) stage_tensor_map(const __grid_constant__ CUtensorMap km,
                                                          const __grid_constant__ CUtensorMap vm, unsigned* sink) {
    extern __shared__ __align__(128) uint8_t sm[];
    const int h = blockIdx.x, p0 = blockIdx.y * CH;
    const uint32_t bar = smem_addr(sm + 2 * CH * ROW);
    if (threadIdx.x == 0) {
        mbar_init(bar, 1);
        mbar_init_fence();
        mbar_arrive_expect_tx(bar, 2 * CH * ROW);
        // coordinates: (element within the position row, position)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::
                         "r"(smem_addr(sm)), "l"(&km), "r"(h * HD), "r"(p0), "r"(bar) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::
                         "r"(smem_addr(sm + CH * ROW)), "l"(&vm), "r"(h * HD), "r"(p0), "r"(bar) : "memory");
    }
    __syncthreads();
    mbar_wait(bar, 0);
    consume(sm, sink);
}

__global__ void __launch_bounds__(BLOCK) read_regs(const uint8_t* k, const uint8_t* v, unsigned* sink) {
    const int h = blockIdx.x, p0 = blockIdx.y * CH;
    unsigned acc = 0;
#pragma unroll 8
    for (int e = threadIdx.x; e < CH * NP; e += BLOCK) {
        const int r = e / NP, pc = e % NP;
        const size_t off = ((size_t)(p0 + r) * KVH + h) * ROW + pc * 16;
        const uint4 a = __ldcs(reinterpret_cast<const uint4*>(k + off)), b = __ldcs(reinterpret_cast<const uint4*>(v + off));
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
    }
    if (acc == 0x12345678u) sink[0] = acc;
}

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main() {
    const int layers = 32;  // distinct layers so L2 (60 MiB) holds none of them between reads
    const int n = 4096, splits = n / CH;
    const size_t bytes = (size_t)n * KVH * ROW;  // one of K or V of one layer
    uint8_t *kb, *vb;
    unsigned* sink;
    CK(cudaMalloc(&kb, bytes * layers));
    CK(cudaMalloc(&vb, bytes * layers));
    CK(cudaMalloc(&sink, 4));
    CK(cudaMemset(kb, 1, bytes * layers));
    CK(cudaMemset(vb, 2, bytes * layers));
    for (const void* f : {(const void*)stage_cp_async, (const void*)stage_ld_st, (const void*)stage_bulk_rows,
                          (const void*)stage_tensor_map}) {
        CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
        CK(cudaFuncSetAttribute(f, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    }
    // a tensor map per layer for K and for V: 2D (KVH * HD halves a position row, n rows), boxes
    // of HD halves x CH rows, no swizzle (dense rows in shared memory)
    std::vector<CUtensorMap> km(layers), vm(layers);
    bool tmaps = true;  // (without them the other four still run)
    for (int l = 0; l < layers && tmaps; ++l) {
        for (int kv = 0; kv < 2; ++kv) {
            const cuuint64_t dims[2] = {(cuuint64_t)KVH * HD, (cuuint64_t)n};
            const cuuint64_t strides[1] = {(cuuint64_t)KVH * ROW};
            const cuuint32_t box[2] = {HD, CH}, estr[2] = {1, 1};
            CUresult r = cuTensorMapEncodeTiled(kv ? &vm[l] : &km[l], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                                                (kv ? vb : kb) + l * bytes, dims, strides, box, estr,
                                                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
            if (r != CUDA_SUCCESS) {
                printf("cuTensorMapEncodeTiled: error %d (no tensor-map row)\n", (int)r);
                tmaps = false;
                break;
            }
        }
    }
    auto timeit = [&](const char* name, auto launch) { time_per_layer(name, layers, 2.0 * bytes, launch); };
    const dim3 grid(KVH, splits);
    timeit("read into registers (reference)", [&](int l) { read_regs<<<grid, BLOCK>>>(kb + l * bytes, vb + l * bytes, sink); });
    timeit("cp.async 16 B (attention_decode_staged.cu)", [&](int l) {
        stage_cp_async<<<grid, BLOCK, SMEM>>>(kb + l * bytes, vb + l * bytes, sink);
    });
    timeit("ld 16 B + st.shared", [&](int l) { stage_ld_st<<<grid, BLOCK, SMEM>>>(kb + l * bytes, vb + l * bytes, sink); });
    timeit("cp.async.bulk a row a thread", [&](int l) {
        stage_bulk_rows<<<grid, BLOCK, SMEM>>>(kb + l * bytes, vb + l * bytes, sink);
    });
    if (tmaps)
        timeit("tensor map, a 128-row box for K and V", [&](int l) { stage_tensor_map<<<grid, BLOCK, SMEM>>>(km[l], vm[l], sink); });
    cudaError_t err = cudaDeviceSynchronize();
    printf("status: %s\n", cudaGetErrorString(err));
    return err == cudaSuccess ? 0 : 1;
}
