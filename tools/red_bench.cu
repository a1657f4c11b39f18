// What a split-K accumulation costs on the GPU: the question behind a fused FFN for decode (gate/up
// rows and the down matrix's matching columns in one kernel, every block adding its partial down
// output to the residual instead of a kernel boundary between the two gemvs; measured 2026-12-03, de45f66).
// Shape: the Llama-3.1-8B down projection's output, 4096 floats, and 132 blocks of 512 threads
// (one an SM), each adding one partial vector of 4096 to the same accumulator per round, 8
// consecutive elements a thread, ROUNDS rounds a launch so the launch cost is amortised:
//   store      each block writes its partial to its own row of a scratch (no accumulation;
//              the bytes an owner-reduced split-K would write)
//   red.f32    red.global.add.f32 per element (order-dependent sums: not bitwise reproducible)
//   red.v4.f32 red.global.add.v4.f32 (sm_90), four elements an instruction
//   red.u64    red.global.add.u64 of the partial in 2^-32 fixed point (integer sums: the same bits
//              in any order, i.e. a deterministic split-K)
//   clusterN+v4 the partials of N blocks (a thread-block cluster) summed through distributed shared
//              memory first, each block then adding its 1/N slice with red.v4.f32
// Prints microseconds per round (all 132 blocks' 4096 adds) and element adds per second.
// Build: nvcc -O3 -arch=sm_90 -o red_bench tools/red_bench.cu (scripts/gpu-prepare.sh)
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

constexpr int N = 4096, BLOCKS = 132, BLOCK = 512, PER = N / BLOCK, ROUNDS = 64;
static_assert(PER == 8, "two float4 a thread");

// the thread's partial for round r: cheap, different per block and round, never folded away
__device__ __forceinline__ float part(int r, int i) { return 1e-3f * float((blockIdx.x * 7 + r * 13 + i) & 255); }

__global__ void __launch_bounds__(BLOCK) k_store(float* scratch) {
    const int i0 = threadIdx.x * PER;
    for (int r = 0; r < ROUNDS; ++r) {
        float4* d = reinterpret_cast<float4*>(scratch + ((size_t)(r % 4) * BLOCKS + blockIdx.x) * N + i0);
        d[0] = make_float4(part(r, i0), part(r, i0 + 1), part(r, i0 + 2), part(r, i0 + 3));
        d[1] = make_float4(part(r, i0 + 4), part(r, i0 + 5), part(r, i0 + 6), part(r, i0 + 7));
    }
}

__global__ void __launch_bounds__(BLOCK) k_red_f32(float* acc) {
    const int i0 = threadIdx.x * PER;
    for (int r = 0; r < ROUNDS; ++r)
#pragma unroll
        for (int j = 0; j < PER; ++j)
            asm volatile("red.global.add.f32 [%0], %1;" ::"l"(acc + i0 + j), "f"(part(r, i0 + j)) : "memory");
}

__global__ void __launch_bounds__(BLOCK) k_red_v4(float* acc) {
    const int i0 = threadIdx.x * PER;
    for (int r = 0; r < ROUNDS; ++r)
#pragma unroll
        for (int j = 0; j < PER; j += 4)
            asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(acc + i0 + j), "f"(part(r, i0 + j)),
                         "f"(part(r, i0 + j + 1)), "f"(part(r, i0 + j + 2)), "f"(part(r, i0 + j + 3))
                         : "memory");
}

__global__ void __launch_bounds__(BLOCK) k_red_u64(unsigned long long* acc) {
    const int i0 = threadIdx.x * PER;
    for (int r = 0; r < ROUNDS; ++r)
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const long long fx = __float2ll_rn(part(r, i0 + j) * 4294967296.0f);  // 2^-32 fixed point
            asm volatile("red.global.add.u64 [%0], %1;" ::"l"(acc + i0 + j), "l"(fx) : "memory");
        }
}

// the same partials pre-reduced in a thread-block cluster of CS blocks first: each block stores its
// partial in shared memory, the cluster syncs, block rank k sums slice k (N / CS floats) over the CS
// blocks' shared memory (DSMEM) and adds it with red.v4.f32: CS times fewer adds reach L2
template <int CS>
__global__ void __launch_bounds__(BLOCK) k_cluster_red(float* acc) {
    __shared__ __align__(16) float ps[N];
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = int(cluster.block_rank()), i0 = threadIdx.x * PER;
    constexpr int SL = N / CS;  // floats of a block's slice
    for (int r = 0; r < ROUNDS; ++r) {
#pragma unroll
        for (int j = 0; j < PER; j += 4)
            *reinterpret_cast<float4*>(ps + i0 + j) =
                make_float4(part(r, i0 + j), part(r, i0 + j + 1), part(r, i0 + j + 2), part(r, i0 + j + 3));
        cluster.sync();
        for (int e = threadIdx.x * 4; e < SL; e += BLOCK * 4) {
            const int idx = rank * SL + e;
            float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int b = 0; b < CS; ++b) {
                const float4 v = *reinterpret_cast<const float4*>(cluster.map_shared_rank(ps, b) + idx);
                a.x += v.x, a.y += v.y, a.z += v.z, a.w += v.w;
            }
            asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(acc + idx), "f"(a.x), "f"(a.y), "f"(a.z),
                         "f"(a.w)
                         : "memory");
        }
        cluster.sync();  // every block has read ps before the next round rewrites it
    }
}

template <int CS>
static void launch_cluster(float* acc) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(BLOCKS);
    cfg.blockDim = dim3(BLOCK);
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = CS;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    cudaLaunchKernelEx(&cfg, k_cluster_red<CS>, acc);
}

__global__ void k_empty() {}

template <class Launch>
static void timed(const char* name, Launch launch) {
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int w = 0; w < 3; ++w) launch();
    const int reps = 20;
    cudaEventRecord(e0);
    for (int r = 0; r < reps; ++r) launch();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    const double us_round = ms * 1000.0 / reps / ROUNDS;
    std::printf("%-12s %8.3f us per round (132 x 4096 adds)  %8.1f G element adds/s  (%s)\n", name, us_round,
                double(BLOCKS) * N / (us_round * 1e3), cudaGetErrorString(cudaGetLastError()));
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
}

int main() {
    float *scratch = nullptr, *acc = nullptr;
    unsigned long long* acc64 = nullptr;
    cudaMalloc(&scratch, sizeof(float) * 4 * BLOCKS * N);
    cudaMalloc(&acc, sizeof(float) * N);
    cudaMalloc(&acc64, sizeof(unsigned long long) * N);
    cudaMemset(acc, 0, sizeof(float) * N);
    cudaMemset(acc64, 0, sizeof(unsigned long long) * N);
    timed("empty", [] { k_empty<<<BLOCKS, BLOCK>>>(); });
    timed("store", [&] { k_store<<<BLOCKS, BLOCK>>>(scratch); });
    timed("red.f32", [&] { k_red_f32<<<BLOCKS, BLOCK>>>(acc); });
    timed("red.v4.f32", [&] { k_red_v4<<<BLOCKS, BLOCK>>>(acc); });
    timed("red.u64", [&] { k_red_u64<<<BLOCKS, BLOCK>>>(acc64); });
    timed("cluster2+v4", [&] { launch_cluster<2>(acc); });
    timed("cluster4+v4", [&] { launch_cluster<4>(acc); });
    cudaDeviceSynchronize();
    std::printf("status: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
