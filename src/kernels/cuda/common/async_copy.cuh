// Shared-memory addresses, cp.async (16-byte global -> shared copies, zero-filled past
// src_bytes), commit / wait groups and ldmatrix: the tensor-core kernels' copy helpers
// (gemm.cu MMA=1, common/gemm_wgmma.cuh, attention_prefill.cu), sm_80+; mbarriers and bulk copies
// (common/gemm_wgmma.cuh, gemv.cu BULK).
#pragma once

#include "common/common.cuh"

#ifndef JITLLM_EMU
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    uint32_t r;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
__device__ __forceinline__ void ldsm_x4(uint32_t* r, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t* r, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// mbarrier (sm_80+ arrive/wait; the tx-count forms below are sm_90): shared-memory barriers of
// the ring pipelines (gemm_wgmma.cuh, gemv.cu BULK)
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// after mbar_init, before the barriers are used by other threads or by the async proxy
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// One arrival on `bar` once all of this thread's earlier cp.async copies have landed.
__device__ __forceinline__ void mbar_arrive_cp_async(uint32_t bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
// generic-proxy shared writes (st.shared, cp.async) <-> async proxy (wgmma operand reads)
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// (declared in an nvcc host pass too, where __CUDA_ARCH__ is undefined: tools/kv_stage_bench.cu's
// sm_90 kernels name them; NVRTC compiles device code only)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// One arrival on `bar` that also expects `bytes` of async-proxy transactions in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// `bytes` more async-proxy transactions expected in `bar`'s current phase, without an arrival.
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// Bulk copy (TMA, no tensor map) of `bytes` from global to shared memory, completing `bytes`
// transactions on `bar`. PRECOND: dst, src 16-byte aligned, bytes a multiple of 16.
__device__ __forceinline__ void bulk_g2s(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
// Bulk prefetch of `bytes` from global memory into L2 (no completion to wait for: a later copy
// of the same bytes finds them in L2). PRECOND: src 16-byte aligned, bytes a multiple of 16.
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, uint32_t bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}
// Part `part` of `parts` equal 16-byte-granular shares of [base, base + bytes) into L2 (nothing for
// an empty share). PRECOND: base 16-byte aligned, bytes a multiple of 16, a share < 4 GiB.
__device__ __forceinline__ void bulk_prefetch_l2_share(const void* base, unsigned long long bytes,
                                                       unsigned long long part, unsigned long long parts) {
    const unsigned long long units = bytes / 16, u0 = units * part / parts, u1 = units * (part + 1) / parts;
    if (u1 > u0) bulk_prefetch_l2(static_cast<const uint8_t*>(base) + 16 * u0, uint32_t(16 * (u1 - u0)));
}
#endif
#endif
