// Thread-block cluster helpers (sm_90): the cluster barrier, this block's rank, and another
// block's shared memory through distributed shared memory (loads, stores, asynchronous stores,
// an atomic add, mbarrier arrivals). Used by
// the split-KV decode attention kernels' cluster merge (common/attn_split.cuh) and gemv.cu XQ_OUT.
#pragma once

#include "common/common.cuh"

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// every thread of every block of the cluster: this block's shared-memory writes are visible to the
// cluster after it (release), the others' to this block (acquire); not .aligned: callers come out
// of per-thread loops (no warp-convergence requirement). sm_90
__device__ __forceinline__ void cluster_barrier() {
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
// cluster_barrier's two halves, for work between them (every thread calls both, in this order)
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }
// the float at shared address a (this block's layout) in the block of cluster rank `rank`. sm_90
__device__ __forceinline__ float ld_cluster_f32(uint32_t a, int rank) {
    uint32_t ra;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
    return v;
}
// the float v to shared address a (this block's layout) in the block of cluster rank `rank`. sm_90
__device__ __forceinline__ void st_cluster_f32(uint32_t a, int rank, float v) {
    uint32_t ra;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(ra), "f"(v) : "memory");
}
// atomically adds n to the unsigned at shared address a in the block of cluster rank `rank` and
// returns the value before; acquire and release at cluster scope (the stores before it are seen
// by whoever reads the sum after it, and this thread sees theirs). sm_90
__device__ __forceinline__ unsigned atom_add_cluster(uint32_t a, int rank, unsigned n) {
    uint32_t ra;
    unsigned old;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("atom.acq_rel.cluster.shared::cluster.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(ra), "r"(n) : "memory");
    return old;
}
__device__ __forceinline__ void fence_acq_rel_cluster() { asm volatile("fence.acq_rel.cluster;" ::: "memory"); }
// one arrival (release at cluster scope: this thread's earlier writes, shared::cluster ones included,
// are seen by whoever completes a wait on the phase) on the mbarrier at shared address a (this
// block's layout) in the block of cluster rank `rank`; nothing returned, nothing waited for. sm_90
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t a, int rank) {
    uint32_t ra;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(ra) : "memory");
}
// an asynchronous store of v to shared address a (this block's layout) in the block of cluster rank
// `rank` that completes 4 bytes of transactions on that block's mbarrier at bar (this block's
// layout) when it lands: the storing thread does not wait for it. sm_90
__device__ __forceinline__ void st_async_cluster_f32(uint32_t a, uint32_t bar, int rank, float v) {
    uint32_t ra, rb;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(bar), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];"
                 ::"r"(ra), "r"(__float_as_uint(v)), "r"(rb) : "memory");
}
// waits for the phase of parity `parity` of this block's mbarrier at shared address bar to complete,
// acquiring at cluster scope (the arrivals' writes from other blocks of the cluster are seen). sm_90
__device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
// this block's rank in its cluster. sm_90
__device__ __forceinline__ int cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return int(r);
}
#endif
