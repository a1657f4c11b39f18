// The premise of a persistent decode kernel for small models (issue: 1B decode at >= 80 % of copy
// bandwidth), measured before the kernel is built: can one launch per token stream a 1B model's
// weights at the copy bandwidth through the ~80 grid-wide barriers a token's dependent phases need,
// when each SM's producer keeps loading the next phases' bytes while its consumers wait at a
// barrier? The probe kernel streams the bytes of a token's phases (a 1B Llama's per-layer matrix
// sizes, 16 layers and the output matrix; Q4_0 bytes by default) through a shared-memory ring per
// SM and sums their words; at each phase's end the consumers pass a grid barrier and read every
// block's sum of that phase (as a phase reads the previous one's outputs).
//   MODE 0: no barrier (streaming alone: the ceiling)
//   MODE 1: barriers, the producer runs ahead across them (only the ring's free slots stop it)
//   MODE 2: barriers, the producer waits at each one too (the stream stops, as at a kernel boundary)
//   MODE 3: as 1 with a lighter barrier: one release-add a block on a counter that only grows, the
//           blocks polling it with acquire loads (no reset, no generation word: two round trips)
//   MODE 4: as 1 with no barrier at all: each block publishes its sum tagged with the launch
//           (a release store of sum and tag in one 64-bit word), each consumer warp polls every
//           block's word of the phase with acquire loads until all carry the tag (the data is
//           the dependency, as per-row-block counters would make it)
// and, for scale, the same phases as one ordinary launch each (MODE 0 kernels back to back).
// Correctness always (on a GPU): every block's fold of the phases' totals equals the host's, which
// fails if a block read a phase's sums before every block had written them. Timing only with
// JITLLM_PERSISTENT_PROBE=1 (printed, never asserted); JITLLM_PERSISTENT_PROBE_BYTES_SCALE scales
// the bytes (1.89: Q8_0, 3.56: F16).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"  // cuda_copy_bandwidth_gb_s
#include "backends/cuda/cuda_device.h"
#include "fixtures/engine_factory.h"  // cuda_available
#include "jit/jit_compiler.h"

namespace jitllm {
namespace {

const char* kProbe = R"(
#include "common/async_copy.cuh"
// data: the phases' bytes; ph: [n_phases][2] (byte offset, byte length; multiples of 16);
// part: [n_phases][gridDim.x] block sums; bar: {arrivals, generation, growing arrivals};
// fold: [gridDim.x]; tagged: [n_phases][gridDim.x] (tag << 32 | sum); epoch: this mode's launches before
__device__ __forceinline__ unsigned ld_acquire(const unsigned* a) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
    return v;
}
__device__ __forceinline__ unsigned long long ld_acquire64(const unsigned long long* a) {
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(a) : "memory");
    return v;
}
extern "C" __global__ void __launch_bounds__(32 * (1 + CW), 1)
KERNEL_NAME(const uint8_t* data, const unsigned long long* ph, int n_phases, unsigned* part, unsigned* bar,
            unsigned* fold, unsigned long long* tagged, unsigned epoch) {
    JITLLM_DYN_SMEM(uint8_t, smem);
    const uint32_t ring = (smem_addr(smem) + 127u) & ~127u;
    const uint32_t full = ring + SLOTS * CHUNK, empty = full + 8 * SLOTS;
    __shared__ unsigned wsum[CW];
    const int tid = threadIdx.x, nb = gridDim.x, b = blockIdx.x;
    if (tid == 0) {
        for (int s = 0; s < SLOTS; ++s) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, CW);
        }
        mbar_init_fence();
    }
    __syncthreads();
    volatile unsigned* gen = bar + 1;
    const unsigned base = *gen;  // (no barrier completes before every block arrived once)
    if (tid < 32) {
        // ---- producer: lane 0 walks this block's chunks (c = b, b + nb, ...) of every phase
        if (tid != 0) return;
        unsigned j = 0;
        for (int p = 0; p < n_phases; ++p) {
            if (MODE == 2 && p > 0)
                while (*gen - base < unsigned(p)) {}
            const unsigned long long off = ph[2 * p], len = ph[2 * p + 1];
            const unsigned long long nc = (len + CHUNK - 1) / CHUNK;
            for (unsigned long long c = b; c < nc; c += nb, ++j) {
                const unsigned slot = j % SLOTS;
                if (j >= SLOTS) mbar_wait(empty + 8 * slot, ((j / SLOTS) + 1) & 1);
                const unsigned bytes = unsigned(min((unsigned long long)CHUNK, len - c * CHUNK));
                mbar_arrive_expect_tx(full + 8 * slot, bytes);
                bulk_g2s(ring + slot * CHUNK, data + off + c * CHUNK, bytes, full + 8 * slot);
            }
        }
        return;
    }
    // ---- consumers: CW warps sum each chunk's words, then each phase's block sum and barrier
    const int ct = tid - 32, warp = ct >> 5, lane = ct & 31;
    unsigned j = 0, f = 0;
    for (int p = 0; p < n_phases; ++p) {
        const unsigned long long len = ph[2 * p + 1];
        const unsigned long long nc = (len + CHUNK - 1) / CHUNK;
        unsigned s = 0;
        for (unsigned long long c = b; c < nc; c += nb, ++j) {
            const unsigned slot = j % SLOTS;
            mbar_wait(full + 8 * slot, (j / SLOTS) & 1);
            const unsigned bytes = unsigned(min((unsigned long long)CHUNK, len - c * CHUNK));
            const uint4* v = reinterpret_cast<const uint4*>(smem + (ring - smem_addr(smem)) + slot * CHUNK);
            for (unsigned i = ct; i < bytes / 16; i += 32 * CW) {
                const uint4 w = v[i];
                s += w.x + w.y + w.z + w.w;
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(empty + 8 * slot);
        }
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) wsum[warp] = s;
        asm volatile("bar.sync 1, %0;" ::"r"(32 * CW) : "memory");
        if (ct == 0) {
            unsigned t = 0;
            for (int w = 0; w < CW; ++w) t += wsum[w];
            part[p * nb + b] = t;
            if (MODE == 3) {
                asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(bar + 2) : "memory");
                const unsigned target = (epoch * unsigned(n_phases) + unsigned(p) + 1u) * unsigned(nb);
                while (int(ld_acquire(bar + 2) - target) < 0) {}
            } else if (MODE == 4) {
                const unsigned long long w = (unsigned long long)(epoch + 1u) << 32 | t;
                asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(tagged + p * nb + b), "l"(w) : "memory");
            } else if (MODE != 0) {
                __threadfence();
                if (atomicAdd(bar, 1u) == unsigned(nb) - 1) {
                    atomicExch(bar, 0u);
                    __threadfence();
                    atomicAdd(bar + 1, 1u);
                } else {
                    while (*gen - base < unsigned(p + 1)) {}
                }
                __threadfence();
            }
        }
        if (MODE == 4) {  // every block's sum, once it carries this launch's tag
            unsigned t = 0;
            for (int i = lane; i < nb; i += 32) {
                unsigned long long w;
                while (unsigned((w = ld_acquire64(tagged + p * nb + i)) >> 32) != epoch + 1u) {}
                t += unsigned(w);
            }
            for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
            f = f * 31u + t;
            continue;
        }
        asm volatile("bar.sync 1, %0;" ::"r"(32 * CW) : "memory");
        if (MODE != 0) {  // the phase's outputs: every block's sum
            unsigned t = 0;
            for (int i = lane; i < nb; i += 32) t += ((volatile unsigned*)part)[p * nb + i];
            for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
            f = f * 31u + t;
        }
    }
    if (ct == 0) fold[b] = f;
}
)";

constexpr int kChunk = 8192, kSlots = 24, kWarps = 8;

struct Probe {
    CudaContext& ctx;
    CUfunction f[5]{};
    unsigned launches[5]{};  // each mode's launches so far (MODE 3's counter and MODE 4's tags)
    unsigned smem = kSlots * kChunk + 16 * kSlots + 128;
};

// A 1B Llama's decode phases in bytes: per layer q/k/v, attention's K/V reads at a short context,
// attn_output, gate/up, down; then the output matrix (Q4_0: 18 bytes a 32-weight block).
std::vector<unsigned long long> phase_bytes(double scale) {
    auto q4 = [&](double params) { return (unsigned long long)(params * 18.0 / 32.0 * scale) / 16 * 16; };
    std::vector<unsigned long long> v;
    for (int l = 0; l < 16; ++l)
        for (double params : {3072.0 * 2048, 131072.0, 2048.0 * 2048, 16384.0 * 2048, 2048.0 * 8192}) v.push_back(q4(params));
    v.push_back(q4(128256.0 * 2048));
    return v;
}

TEST(PersistentProbe, PhasesStreamThroughGridBarriers) {
    std::string why;
    if (!test::cuda_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    CudaContext ctx(0);
    if (ctx.device().cc_major < 9) GTEST_SKIP() << "bulk copies need sm_90";
    JitCompiler jit(ctx.device().arch, JitOptions{{false, ""}, 0});
    const char* s = std::getenv("JITLLM_PERSISTENT_PROBE_BYTES_SCALE");
    const std::vector<unsigned long long> len = phase_bytes(s ? std::atof(s) : 1.0);
    const int np = int(len.size()), nb = ctx.device().sm_count;
    std::vector<unsigned long long> ph;
    unsigned long long total = 0;
    for (unsigned long long l : len) ph.push_back(total), ph.push_back(l), total += l;
    // data: word i of the buffer is a hash of i; the host's per-phase totals and fold
    std::vector<uint32_t> host(size_t(total / 4));
    for (size_t i = 0; i < host.size(); ++i) host[i] = uint32_t(i * 2654435761u) ^ uint32_t(i >> 7);
    std::vector<uint32_t> totals(static_cast<size_t>(np));
    uint32_t want = 0;
    for (int p = 0; p < np; ++p) {
        uint32_t t = 0;
        for (size_t i = ph[2 * p] / 4; i < (ph[2 * p] + ph[2 * p + 1]) / 4; ++i) t += host[i];
        totals[size_t(p)] = t;
        want = want * 31u + t;
    }
    std::vector<CUdeviceptr> held;
    auto put = [&](const void* src, size_t n) {
        CUdeviceptr d = ctx.alloc(std::max<size_t>(n, 16), MemCategory::Scratch, "persistent probe");
        if (src) ctx.upload(d, src, n);
        else ctx.memset_async(d, 0, std::max<size_t>(n, 16));
        held.push_back(d);
        return d;
    };
    const CUdeviceptr data = put(host.data(), total), dph = put(ph.data(), ph.size() * 8);
    const CUdeviceptr part = put(nullptr, size_t(np) * size_t(nb) * 4), bar = put(nullptr, 12),
                      fold = put(nullptr, size_t(nb) * 4), tagged = put(nullptr, size_t(np) * size_t(nb) * 8);
    ctx.synchronize();
    Probe pr{ctx};
    for (int mode = 0; mode < 5; ++mode) {
        Variant v("cuda/persistent_probe.cu", "persistent_probe_m" + std::to_string(mode));
        v.source_text = kProbe;
        v.set("MODE", mode).set("CHUNK", kChunk).set("SLOTS", kSlots).set("CW", kWarps);
        v.arch = "";
        const CompiledKernel k = jit.compile(v);
        pr.f[mode] = ctx.function(ctx.load_module(k.cubin, v.display_name()), v.symbol);
        ctx.set_max_dynamic_shared(pr.f[mode], int(pr.smem));
    }
    const Dim3 block(32 * (1 + kWarps));
    auto launch = [&](int mode, CUdeviceptr ph_at, int n) {
        ctx.launch_with(pr.f[mode], Dim3(unsigned(nb)), block, pr.smem, (const uint8_t*)data,
                        (const unsigned long long*)ph_at, n, (unsigned*)part, (unsigned*)bar, (unsigned*)fold,
                        (unsigned long long*)tagged, pr.launches[mode]++);
    };
    // correctness: the fold of every block (barrier modes) and the block sums (all modes)
    for (int mode = 0; mode < 5; ++mode) {
        SCOPED_TRACE(mode);
        launch(mode, dph, np);
        ctx.synchronize();
        std::vector<uint32_t> got(static_cast<size_t>(np) * size_t(nb)), folds(static_cast<size_t>(nb));
        ctx.download(got.data(), part, got.size() * 4);
        ctx.download(folds.data(), fold, folds.size() * 4);
        for (int p = 0; p < np; ++p) {
            uint32_t t = 0;
            for (int b = 0; b < nb; ++b) t += got[size_t(p) * size_t(nb) + size_t(b)];
            EXPECT_EQ(t, totals[size_t(p)]) << "phase " << p;
        }
        if (mode != 0) {
            for (int b = 0; b < nb; ++b) EXPECT_EQ(folds[size_t(b)], want) << "block " << b;
        }
    }
    const char* on = std::getenv("JITLLM_PERSISTENT_PROBE");
    if (on && std::string(on) == "1") {
        auto time = [&](const std::function<void()>& token) {
            for (int i = 0; i < 3; ++i) token();
            ctx.synchronize();
            const int reps = 50;
            const auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < reps; ++i) token();
            ctx.synchronize();
            return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
        };
        const double copy = cuda_copy_bandwidth_gb_s(ctx, size_t(2) << 30, 9);
        std::printf("copy bandwidth %.1f GB/s (read + write, as bench's %% copy bw)\n", copy);
        const char* names[] = {"one launch, no barriers", "one launch, barriers, producer runs ahead",
                               "one launch, barriers, producer waits", "one launch, growing counter, runs ahead",
                               "one launch, tagged sums, runs ahead"};
        for (int mode = 0; mode < 5; ++mode) {
            const double sec = time([&] { launch(mode, dph, np); });
            std::printf("%-44s %8.1f us a token  %7.1f GB/s  %5.1f %% of copy  (%d phases, %.1f MB)\n", names[mode],
                        sec * 1e6, double(total) / sec / 1e9, 100.0 * double(total) / sec / 1e9 / copy, np,
                        double(total) / 1e6);
        }
        const double sec = time([&] {
            for (int p = 0; p < np; ++p) launch(0, dph + CUdeviceptr(16 * p), 1);
        });
        std::printf("%-44s %8.1f us a token  %7.1f GB/s  %5.1f %% of copy\n", "a launch a phase (stream, no graph)",
                    sec * 1e6, double(total) / sec / 1e9, 100.0 * double(total) / sec / 1e9 / copy);
        std::fflush(stdout);
    }
    for (CUdeviceptr d : held) ctx.free(d);
}

}  // namespace
}  // namespace jitllm
