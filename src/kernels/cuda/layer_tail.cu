// layer_tail: a decode step's attn_output + attn_residual, ffn_norm + ffn_gate_up + ffn_act and
// ffn_down + ffn_residual of one layer in one launch (gate layer.tail=persistent; sm_90,
// split-layout Q4_0 / Q8_0 weights; docs/persistent-decode.md, step 2):
//   phase A  x   += RES_A * Wo . att                      (att: A_COLS floats, x: DIM)
//   phase B  hb   = silu(Wg . n) * (Wu . n),  n = rms_norm(x) * ffn_norm_w   (hb: HID)
//   phase C  x   += RES_C * Wd . hb
// One block per SM, every block resident (grid = SMs, one block's shared memory per SM; see PDL
// below); a grid barrier between phases.
// Each block: NW consumer warps and one producer warp. Producer lane w streams consumer warp
// w's items (A's, then B's, then C's) into w's ring of SLOTS shared-memory slots with cp.async.bulk
// copies, each slot with a "full" mbarrier (transaction bytes) and an "empty" one (the consumer's
// release): weights do not depend on the activations, so the stream runs through the phase
// boundaries and the grid barriers instead of stopping at three kernel boundaries.
// Consumer warps do what gemv.cu's bulk path does per phase: x quantized to Q8_0 blocks in shared
// memory (the engine's numerics for Q4_0 / Q8_0 weights: gemv_dot.cuh), dp4a dots of their
// items, a warp reduction, the epilogue; output rows in passes of OPG = 2 per warp, a pass's row
// sets going round the blocks first (warp w of block b starts at set w * blocks + b, gemv.cu's
// WARP_MAJOR order): the grid barrier waits for the busiest block, and block by block the 8B
// gate/up's last partial pass would leave 52 blocks with 64 row sets and 80 with 48 (warp-major:
// 55 or 54; `jitllm plan --print-threads` shows the figures per phase).
//
// params:
//   WTYPE         Q4_0 | Q8_0 (split device layout: a row's quants, then its f16 scales)
//   DIM           model width: rows of attn_output and ffn_down, columns of gate / up
//   A_COLS        columns of attn_output (n_heads * head_dim)
//   HID           ffn hidden width: rows of gate and of up, columns of ffn_down
//   RES_A, RES_C  residual scales (1.0f but for granite's)
//   EPS           rms_norm epsilon (float literal)
//   NW            consumer warps per block (block = 32 * (NW + 1) threads)
//   CH_A, CH_B, CH_C  columns per item in each phase (multiples of 256 dividing the phase's
//                 columns); an item: OPG rows (B: gate and up of OPG rows) x CH columns
//   SLOTS         ring slots per consumer warp; SLOT: bytes per slot (>= every phase's item)
//   XB            bytes of the x copy in front of the rings (>= HID + HID / 32 * 8, 128-rounded)
//   PDL           1: griddepcontrol (the consumers wait before reading att / x; dependents are
//                 let go only after the last grid barrier: earlier, the next kernel's blocks could
//                 take SMs this grid's blocks still need while the started ones wait at a barrier)
// launch:  grid = number of SMs (one block per SM; all must be resident for the grid barriers),
//          block = 32 * (NW + 1), dynamic smem = XB + NW * SLOTS * SLOT
// args:    (wo, wg, wu, wd, att, x, ffn_norm_w, hb, bar)
//          x: the residual stream, updated in place by phases A and C; hb: HID floats;
//          bar: 3 unsigned counters, zero before the launch and left zero after it.
//          PRECOND: weights 16-byte aligned, rows in the split layout.
// bytes:   the four matrices + (A_COLS + 4 DIM + 2 HID) * 4
// reference: cpu::matvec, cpu::add_scaled, cpu::rms_norm, cpu::swiglu (the tasks it covers)
//            test: tests/unit/kernels_vs_cpu_test.cpp (variant gated+layer-tail)

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME layer_tail
#define WTYPE Q8_0
#define DIM 4096
#define A_COLS 4096
#define HID 14336
#define RES_A 1.0f
#define RES_C 1.0f
#define EPS 1e-5f
#define NW 16
#define CH_A 2048
#define CH_B 1024
#define CH_C 2048
#define SLOTS 3
#define SLOT 4352
#define XB 17920
#endif

// gemv_dot.cuh's split-layout path with the bulk slot reader; its COLS-based defaults are
// phase B's (every call below passes its phase's columns and byte counts)
#define COLS DIM
#define WSPLIT 1
#define GROUP 32
#define X_SMEM 0
#define NORM_IN 0
#define BULK 1
#define OPG 2
#define LT_QB(ch) (WTYPE == Q4_0 ? (ch) / 2 : (ch))  // quant bytes of ch columns of a row
#define LT_SB(ch) ((ch) / 16)                        // their f16 scales (one per 32 columns)
#define LT_RB(ch) (LT_QB(ch) + LT_SB(ch))
#define BULK_QB LT_QB(CH_B)
#define BULK_RB LT_RB(CH_B)
#include "common/common.cuh"
#include "common/async_copy.cuh"
#include "common/quant_blocks.cuh"
#include "common/gemv_dot.cuh"

static_assert(WTYPE == Q4_0 || WTYPE == Q8_0, "layer_tail: split-layout Q4_0 / Q8_0");
static_assert(A_COLS % CH_A == 0 && DIM % CH_B == 0 && HID % CH_C == 0, "items: whole chunks of a row");
static_assert(CH_A % 256 == 0 && CH_B % 256 == 0 && CH_C % 256 == 0, "items: 256-column multiples (16-byte runs)");
static_assert(OPG * LT_RB(CH_A) <= SLOT && 2 * OPG * LT_RB(CH_B) <= SLOT && OPG * LT_RB(CH_C) <= SLOT, "SLOT: every item");
static_assert(SLOT % 16 == 0 && XB % 128 == 0 && XB >= HID + HID / 32 * 8 && XB >= A_COLS + A_COLS / 32 * 8,
              "XB: the largest x copy");
static_assert(DIM % 32 == 0 && A_COLS % 32 == 0 && HID % 32 == 0 && NW >= 1 && NW <= 31, "shapes");

#define NT (32 * NW)  // consumer threads
#define LT_ROW_BYTES(cols) ((unsigned long long)(cols) / 32 * (WTYPE == Q4_0 ? 18 : 34))

// consumer threads only (the producer warp never joins): named barrier 1
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, %0;" ::"n"(NT) : "memory"); }

__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Every consumer of every block has finished the phase before any goes on (the writes of x / hb
// are visible to all blocks after it: bar.sync, then one release / acquire pair per block). The
// activations other blocks wrote are read with ld.global.cg after it (L2, never a stale L1 line:
// this SM may hold x's lines from its own phase-A epilogue).
__device__ __forceinline__ void grid_sync(unsigned* ctr) {
    consumers_sync();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(ctr, 1u);
        while (ld_acquire_gpu(ctr) < gridDim.x) {
        }
        __threadfence();
    }
    consumers_sync();
}

// x (C floats, written by an earlier phase or kernel: L2 loads) quantized to Q8_0 blocks
// in shared memory (gemv_dot.cuh's layout for C columns), optionally rms-normalised first
// (the rms of x from every consumer thread, as gemv.cu's NORM_IN prologue). All consumer threads.
template <int C, bool NORM>
__device__ __forceinline__ void x_quantize(const float* x, const float* nw, uint8_t* xq, float* red) {
    constexpr int STEP = 4 * NT;
    const int t = threadIdx.x;
    float inv = 1.0f;
    if (NORM) {
        float ss = 0.0f;
        for (int b = 0; b < C; b += STEP) {
            const int k = b + 4 * t;
            if (k < C) {
                const float4 v = __ldcg(reinterpret_cast<const float4*>(x + k));
                ss += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
            }
        }
        ss = warp_sum(ss);
        if (t % 32 == 0) red[t / 32] = ss;
        consumers_sync();
        float tot = 0.0f;
#pragma unroll
        for (int w = 0; w < NW; ++w) tot += red[w];
        inv = 1.0f / sqrtf(tot / float(C) + EPS);  // as cpu::rms_norm
    }
    for (int b = 0; b < C; b += STEP) {  // uniform trip count: whole warps reach the shuffles
        const int k = b + 4 * t;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (k < C) {
            v = __ldcg(reinterpret_cast<const float4*>(x + k));
            if (NORM) {
                const float4 w = __ldg(reinterpret_cast<const float4*>(nw + k));
                v.x = v.x * inv * w.x;
                v.y = v.y * inv * w.y;
                v.z = v.z * inv * w.z;
                v.w = v.w * inv * w.w;
            }
        }
        xq8_store<C>(v, k, xq, reinterpret_cast<float2*>(xq + C));
    }
    consumers_sync();  // the copy is complete (and red is free again)
}

// A warp's ring: slot i at ring + i * SLOT (generic: base + i * SLOT), its full / empty mbarriers
// at full0 + 8 i, empty0 + 8 i.
struct Ring {
    const uint8_t* base;
    uint32_t ring, full0, empty0;
    int n;  // items issued (producer) or consumed (consumer) so far
};

// Producer lane: item `n` of its warp (rows[0..R) chunk c) into slot n % SLOTS, after the consumer
// released that slot's previous item.
template <int R, int CH, int COLS_>
__device__ __forceinline__ void produce(Ring& g, const uint8_t* const* rows, int c) {
    constexpr uint32_t QB = LT_QB(CH), SB = LT_SB(CH), RB = QB + SB;
    constexpr unsigned long long QBYTES = LT_QB(COLS_);
    const int slot = g.n % SLOTS;
    if (g.n >= SLOTS) mbar_wait(g.empty0 + 8 * slot, ((g.n / SLOTS) - 1) & 1);
    const uint32_t full = g.full0 + 8 * slot, dst = g.ring + slot * SLOT;
    mbar_arrive_expect_tx(full, R * RB);
#pragma unroll
    for (int r = 0; r < R; ++r) {
        bulk_g2s(dst + r * RB, rows[r] + c * QB, QB, full);
        bulk_g2s(dst + r * RB + QB, rows[r] + QBYTES + c * SB, SB, full);
    }
    ++g.n;
}

// Producer lane w: every item of consumer warp w in one phase. B: rows gate(o), up(o), gate(o+1), ..
template <int ROWS, int COLS_, int CH, bool GATE_UP>
__device__ __forceinline__ void produce_phase(Ring& g, const uint8_t* w0, const uint8_t* w1, int o_first, int o_stride) {
    constexpr int R = GATE_UP ? 2 * OPG : OPG;
    for (int o0 = o_first; o0 < ROWS; o0 += o_stride) {
        const uint8_t* rows[R];
#pragma unroll
        for (int i = 0; i < OPG; ++i) {
            const unsigned long long o = min(o0 + i, ROWS - 1);  // past the end: the last row again
            if (GATE_UP) {
                rows[2 * i] = w0 + o * LT_ROW_BYTES(COLS_);
                rows[2 * i + 1] = w1 + o * LT_ROW_BYTES(COLS_);
            } else {
                rows[i] = w0 + o * LT_ROW_BYTES(COLS_);
            }
        }
        for (int c = 0; c < COLS_ / CH; ++c) produce<R, CH, COLS_>(g, rows, c);
    }
}

// Consumer warp: its items of one phase, in the producer's order; after each pass the lanes
// 0..OPG-1 run the epilogue for output rows o0 + lane. EPI 1: y[o] += scale * acc (residual);
// EPI 2: y[o] = silu(gate) * up.
template <int ROWS, int COLS_, int CH, int EPI_>
__device__ __forceinline__ void consume_phase(Ring& g, const uint8_t* xq, float* y, float scale, int o_first,
                                              int o_stride) {
    constexpr int R = EPI_ == 2 ? 2 * OPG : OPG;
    constexpr int QB = LT_QB(CH), RB = LT_RB(CH);
    const int lane = threadIdx.x % 32;
    XSrc xs;
    xs.q = xq;
    xs.qd = reinterpret_cast<const float2*>(xq + COLS_);
    for (int o0 = o_first; o0 < ROWS; o0 += o_stride) {
        float acc[R];
#pragma unroll
        for (int i = 0; i < R; ++i) acc[i] = 0.0f;
        for (int c = 0; c < COLS_ / CH; ++c) {
            const int slot = g.n % SLOTS;
            mbar_wait(g.full0 + 8 * slot, (g.n / SLOTS) & 1);
            bulk_dot<R, QB, RB, COLS_>(g.base + slot * SLOT, xs, c, lane, acc);
            __syncwarp();
            if (lane == 0) {
                fence_proxy_async();  // this warp's generic reads of the slot before the async refill
                mbar_arrive(g.empty0 + 8 * slot);
            }
            ++g.n;
        }
#pragma unroll
        for (int i = 0; i < R; ++i) acc[i] = warp_sum(acc[i]);
#pragma unroll
        for (int i = 0; i < OPG; ++i) {
            const int o = o0 + i;
            if (lane != i || o >= ROWS) continue;
            if (EPI_ == 2) {
                const float gate = acc[2 * i], up = acc[2 * i + 1];
                y[o] = gate / (1.0f + expf(-gate)) * up;  // as cpu::swiglu
            } else {
                y[o] = __ldcg(y + o) + scale * acc[i];  // as the fused residual epilogue (gemv.cu EPI=1)
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(32 * (NW + 1), 1)
KERNEL_NAME(const void* wo, const void* wg, const void* wu, const void* wd, const float* att, float* x,
            const float* ffn_norm_w, float* hb, unsigned* bar) {
    __shared__ __align__(8) uint64_t bars[2 * NW * SLOTS];  // per warp: SLOTS full, then SLOTS empty
    __shared__ float red[NW];
    extern __shared__ __align__(128) uint8_t dyn[];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    // warp w of block b starts at row set w * blocks + b (output row (w * blocks + b) * OPG)
    const int o_stride = gridDim.x * NW * OPG;
    if (tid < NW) {
        for (int s = 0; s < SLOTS; ++s) {
            mbar_init(smem_addr(bars + (2 * tid) * SLOTS + s), 1);
            mbar_init(smem_addr(bars + (2 * tid + 1) * SLOTS + s), 1);
        }
        mbar_init_fence();
    }
    __syncthreads();  // the only barrier with every warp: the mbarriers are ready
    if (warp == NW) {
        // producer: lane w feeds consumer warp w (the weights do not depend on earlier kernels)
        if (lane < NW) {
            Ring g{dyn + XB + lane * SLOTS * SLOT, smem_addr(dyn + XB + lane * SLOTS * SLOT),
                   smem_addr(bars + 2 * lane * SLOTS), smem_addr(bars + (2 * lane + 1) * SLOTS), 0};
            const int o_first = (lane * gridDim.x + blockIdx.x) * OPG;
            const uint8_t* Wo = static_cast<const uint8_t*>(wo);
            const uint8_t* Wg = static_cast<const uint8_t*>(wg);
            const uint8_t* Wu = static_cast<const uint8_t*>(wu);
            const uint8_t* Wd = static_cast<const uint8_t*>(wd);
            produce_phase<DIM, A_COLS, CH_A, false>(g, Wo, nullptr, o_first, o_stride);
            produce_phase<HID, DIM, CH_B, true>(g, Wg, Wu, o_first, o_stride);
            produce_phase<DIM, HID, CH_C, false>(g, Wd, nullptr, o_first, o_stride);
        }
        return;  // the copies complete into this block's shared memory; the consumers wait on them
    }
    Ring g{dyn + XB + warp * SLOTS * SLOT, smem_addr(dyn + XB + warp * SLOTS * SLOT), smem_addr(bars + 2 * warp * SLOTS),
           smem_addr(bars + (2 * warp + 1) * SLOTS), 0};
    const int o_first = (warp * gridDim.x + blockIdx.x) * OPG;
    pdl_wait();  // att and x come from earlier kernels
    x_quantize<A_COLS, false>(att, nullptr, dyn, red);
    consume_phase<DIM, A_COLS, CH_A, 1>(g, dyn, x, (float)(RES_A), o_first, o_stride);
    grid_sync(bar + 0);
    x_quantize<DIM, true>(x, ffn_norm_w, dyn, red);
    consume_phase<HID, DIM, CH_B, 2>(g, dyn, hb, 1.0f, o_first, o_stride);
    grid_sync(bar + 1);
    pdl_launch_dependents();  // every block is resident (all passed the barriers)
    x_quantize<HID, false>(hb, nullptr, dyn, red);
    consume_phase<DIM, HID, CH_C, 1>(g, dyn, x, (float)(RES_C), o_first, o_stride);
    // the counters back to zero for the next launch: the last block out resets them (every block
    // has left both barriers' spins before it counts itself here)
    if (tid == 0) {
        __threadfence();
        if (atomicAdd(bar + 2, 1u) == gridDim.x - 1) {
            bar[0] = 0u;
            bar[1] = 0u;
            bar[2] = 0u;
            __threadfence();
        }
    }
}
