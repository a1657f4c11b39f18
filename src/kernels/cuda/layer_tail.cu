// layer_tail: a decode step's attn_output + attn_residual, ffn_norm + ffn_gate_up + ffn_act and
// ffn_down + ffn_residual of one layer in one launch (gate layer.tail=persistent; sm_90,
// split-layout Q4_0 / Q8_0 weights; docs/persistent-decode.md, step 2):
//   phase A  x   += RES_A * Wo . att                      (att: A_COLS floats, x: DIM)
//   phase B  hb   = silu(Wg . n) * (Wu . n),  n = rms_norm(x) * ffn_norm_w   (hb: HID)
//   phase C  x   += RES_C * Wd . hb
// One block per SM, every block resident (grid = SMs, one block's shared memory per SM; see PDL
// below); a grid barrier between phases.
// Each block: NW warps, each with its own ring of SLOTS shared-memory slots and one mbarrier per
// slot (transaction bytes). A warp's lane 0 keeps the ring SLOTS items ahead of the warp: the
// first ring-full goes out before the PDL wait, and each consumed slot is refilled at once with
// the warp's next item, A's, then B's, then C's (cp.async.bulk copies of the split layout's
// quants and scales): weights do not depend on the activations, so the stream runs through the
// phase boundaries and the grid barriers instead of stopping at three kernel boundaries.
// (Built first, session 10, with a producer warp whose lane w fed warp w's ring through
// full / empty mbarriers: measured 293.5 / 345.5 tok/s against the kernels' 406.8 / 613.6 for
// 8B Q8_0 / Q4_0; its 16 lanes each spun on their own "empty" waits in one divergent warp.)
// Each warp does what gemv.cu's bulk path does per phase: x quantized to Q8_0 blocks in shared
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
//   NW            warps per block (block = 32 * NW threads)
//   CH_A, CH_B, CH_C  columns per item in each phase (multiples of 256 dividing the phase's
//                 columns); an item: OPG rows (B: gate and up of OPG rows) x CH columns
//   SLOTS         ring slots per warp; SLOT: bytes per slot (>= every phase's item)
//   PF            items each warp keeps prefetched into L2 beyond its ring (cp.async.bulk.prefetch):
//                 the stream goes on while the warp waits at a grid barrier with a full ring; 0 off
//   PFB           items each warp prefetches into L2 beyond its ring when it reaches a grid barrier
//                 or the PDL wait
//                 (its ring full, its next copies waiting for slots): DRAM keeps streaming through
//                 the barrier and the next phase's x prologue, and the refills after it hit L2; 0 off
//   XB            bytes of the x copy in front of the rings (>= HID + HID / 32 * 8, 128-rounded)
//   PDL           1: griddepcontrol (the warps wait before reading att / x; dependents are
//                 let go only after the last grid barrier: earlier, the next kernel's blocks could
//                 take SMs this grid's blocks still need while the started ones wait at a barrier)
// launch:  grid = number of SMs (one block per SM; all must be resident for the grid barriers),
//          block = 32 * NW, dynamic smem = XB + NW * SLOTS * SLOT
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
#ifndef PF
#define PF 0
#endif
#ifndef PFB
#define PFB 0
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

#define NT (32 * NW)  // threads per block
#define LT_ROW_BYTES(cols) ((unsigned long long)(cols) / 32 * (WTYPE == Q4_0 ? 18 : 34))


__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Every thread of every block has finished the phase before any goes on (the writes of x / hb
// are visible to all blocks after it: bar.sync, then one release / acquire pair per block). The
// activations other blocks wrote are read with ld.global.cg after it (L2, never a stale L1 line:
// this SM may hold x's lines from its own phase-A epilogue).
__device__ __forceinline__ void grid_sync(unsigned* ctr) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(ctr, 1u);
        while (ld_acquire_gpu(ctr) < gridDim.x) {
        }
        __threadfence();
    }
    __syncthreads();
}

// A warp's ring: slot i at base + i * SLOT (shared address ring + i * SLOT), its mbarrier at
// full0 + 8 i (transaction bytes of the item in it).
struct Ring {
    const uint8_t* base;
    uint32_t ring, full0;
    int n;  // items consumed so far (the item in flight in slot s: the next with n % SLOTS == s)
};

// A position in the warp's item stream across the three phases: phase ph (0 A, 1 B, 2 C, 3 done),
// pass o0 (the pass's first output row), column chunk c. The order is consume_phase's: passes
// o_first, o_first + o_stride, .. of each phase, its chunks in order.
struct Cursor {
    int ph, o0, c;
};
// The warp's weights and two cursors: `next`, the item that goes into the ring next (SLOTS items
// ahead of the warp), and `pf`, the item that goes into L2 next (PF items ahead of `next`).
struct Feed {
    const uint8_t *wo, *wg, *wu, *wd;
    int o_first, o_stride;
    Cursor next, pf;
};

__device__ __forceinline__ int phase_rows(int ph) { return ph == 1 ? HID : DIM; }

__device__ __forceinline__ void skip_empty(const Feed& f, Cursor& k) {  // phases with no pass for this warp
    while (k.ph < 3 && f.o_first >= phase_rows(k.ph)) ++k.ph;
}

__device__ __forceinline__ void advance(const Feed& f, Cursor& k) {
    const int nch = k.ph == 0 ? A_COLS / CH_A : k.ph == 1 ? DIM / CH_B : HID / CH_C;
    if (++k.c < nch) return;
    k.c = 0;
    k.o0 += f.o_stride;
    if (k.o0 < phase_rows(k.ph)) return;
    k.o0 = f.o_first;
    ++k.ph;
    skip_empty(f, k);
}

// The rows of an item: R rows (B: gate(o), up(o), gate(o+1), ..; rows past the end repeat the
// last, whose sums are never stored), each as its chunk c of quants and of scales:
// fn(offset in the slot, source, bytes) per run.
template <int R, int CH, int COLS_, int ROWS, bool GATE_UP, typename Fn>
__device__ __forceinline__ void item_runs(const uint8_t* w0, const uint8_t* w1, int o0, int c, Fn fn) {
    constexpr uint32_t QB = LT_QB(CH), SB = LT_SB(CH);
    constexpr unsigned long long QBYTES = LT_QB(COLS_);
#pragma unroll
    for (int i = 0; i < OPG; ++i) {
        const unsigned long long o = min(o0 + i, ROWS - 1);
#pragma unroll
        for (int m = 0; m < (GATE_UP ? 2 : 1); ++m) {
            const uint8_t* row = (m ? w1 : w0) + o * LT_ROW_BYTES(COLS_);
            fn(((GATE_UP ? 2 : 1) * i + m) * (QB + SB), row + c * QB, QB);
            fn(((GATE_UP ? 2 : 1) * i + m) * (QB + SB) + QB, row + QBYTES + c * SB, SB);
        }
    }
}

template <typename Fn>
__device__ __forceinline__ void item_at(const Feed& f, const Cursor& k, Fn fn) {
    if (k.ph == 0)
        item_runs<OPG, CH_A, A_COLS, DIM, false>(f.wo, nullptr, k.o0, k.c, fn);
    else if (k.ph == 1)
        item_runs<2 * OPG, CH_B, DIM, HID, true>(f.wg, f.wu, k.o0, k.c, fn);
    else
        item_runs<OPG, CH_C, HID, DIM, false>(f.wd, nullptr, k.o0, k.c, fn);
}

__device__ __forceinline__ uint32_t item_bytes(int ph) {
    return ph == 0 ? OPG * LT_RB(CH_A) : ph == 1 ? 2 * OPG * LT_RB(CH_B) : OPG * LT_RB(CH_C);
}

// Lane 0: the `pf` item into L2 (cp.async.bulk.prefetch: no completion; the ring's copy of it
// later finds it there). Every lane moves the cursor (uniform).
__device__ __forceinline__ void feed_prefetch(Feed& f, int lane) {
    if (f.pf.ph >= 3) return;
    if (lane == 0) item_at(f, f.pf, [](uint32_t, const uint8_t* src, uint32_t bytes) { bulk_prefetch_l2(src, bytes); });
    advance(f, f.pf);
}

// PFB: the PFB items after the ring's newest into L2, before the warp waits at a grid barrier
// (with PF they are prefetched already).
__device__ __forceinline__ void barrier_prefetch(const Feed& f, int lane) {
#if PFB && !PF
    Feed t = f;
    t.pf = f.next;
    for (int i = 0; i < PFB; ++i) feed_prefetch(t, lane);
#else
    (void)f;
    (void)lane;
#endif
}

// Lane 0: the `next` item into slot `slot` (free: the warp has consumed its previous item, or
// never filled it), completing on the slot's mbarrier; with PF (and `pf`), one more item into L2.
__device__ __forceinline__ void feed_issue(Feed& f, const Ring& g, int slot, int lane, bool pf) {
    if (f.next.ph >= 3) return;
    if (lane == 0) {
        const uint32_t dst = g.ring + slot * SLOT, full = g.full0 + 8 * slot;
        mbar_arrive_expect_tx(full, item_bytes(f.next.ph));
        item_at(f, f.next, [&](uint32_t off, const uint8_t* src, uint32_t bytes) { bulk_g2s(dst + off, src, bytes, full); });
    }
    advance(f, f.next);
#if PF
    if (pf) feed_prefetch(f, lane);
#endif
}

// Warp: its items of one phase, in the feed's order; after each pass the lanes
// 0..OPG-1 run the epilogue for output rows o0 + lane. EPI 1: y[o] += scale * acc (residual);
// EPI 2: y[o] = silu(gate) * up.
template <int ROWS, int COLS_, int CH, int EPI_>
__device__ __forceinline__ void consume_phase(Ring& g, Feed& f, const uint8_t* xq, float* y, float scale, int o_first,
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
            __syncwarp();  // every lane's reads of the slot are done before it is refilled
            if (lane == 0) fence_proxy_async();  // the generic-proxy reads before the async-proxy writes
            feed_issue(f, g, slot, lane, true);  // SLOTS items ahead: across the phase ends and grid barriers
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

extern "C" __global__ void __launch_bounds__(32 * NW, 1)
KERNEL_NAME(const void* wo, const void* wg, const void* wu, const void* wd, const float* att, float* x,
            const float* ffn_norm_w, float* hb, unsigned* bar) {
    TRACE_BEGIN();
    __shared__ __align__(8) uint64_t bars[NW * SLOTS];  // per warp: SLOTS "full" mbarriers
    __shared__ float red[NW];
    extern __shared__ __align__(128) uint8_t dyn[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // warp w of block b starts at row set w * blocks + b (output row (w * blocks + b) * OPG)
    const int o_stride = gridDim.x * NW * OPG;
    const int o_first = (warp * gridDim.x + blockIdx.x) * OPG;
    Ring g{dyn + XB + warp * SLOTS * SLOT, smem_addr(dyn + XB + warp * SLOTS * SLOT), smem_addr(bars + warp * SLOTS), 0};
    Feed f{static_cast<const uint8_t*>(wo), static_cast<const uint8_t*>(wg), static_cast<const uint8_t*>(wu),
           static_cast<const uint8_t*>(wd), o_first, o_stride, Cursor{0, o_first, 0}, Cursor{0, o_first, 0}};
    skip_empty(f, f.next);
    if (lane == 0) {
        for (int s = 0; s < SLOTS; ++s) mbar_init(g.full0 + 8 * s, 1);
        mbar_init_fence();
    }
    __syncwarp();
    // the first ring-full, then the PF items beyond it into L2, before waiting for the previous
    // kernel: the weights do not depend on it
    for (int s = 0; s < SLOTS; ++s) feed_issue(f, g, s, lane, false);
#if PF
    f.pf = f.next;
    for (int i = 0; i < PF; ++i) feed_prefetch(f, lane);
#endif
    barrier_prefetch(f, lane);  // PFB: the wait for the previous kernel is a barrier too
    pdl_wait();  // att and x come from earlier kernels
    // x of each phase quantized into shared memory (gemv_dot.cuh's prologue; L2 loads: other
    // blocks wrote x / hb in this launch, and this SM may hold stale L1 lines of them)
    xq8_prologue<A_COLS, NT, false, true>(att, nullptr, EPS, dyn, red);
    consume_phase<DIM, A_COLS, CH_A, 1>(g, f, dyn, x, (float)(RES_A), o_first, o_stride);
    barrier_prefetch(f, lane);
    grid_sync(bar + 0);
    xq8_prologue<DIM, NT, true, true>(x, ffn_norm_w, EPS, dyn, red);
    consume_phase<HID, DIM, CH_B, 2>(g, f, dyn, hb, 1.0f, o_first, o_stride);
    barrier_prefetch(f, lane);
    grid_sync(bar + 1);
    pdl_launch_dependents();  // every block is resident (all passed the barriers)
    xq8_prologue<HID, NT, false, true>(hb, nullptr, EPS, dyn, red);
    consume_phase<DIM, HID, CH_C, 1>(g, f, dyn, x, (float)(RES_C), o_first, o_stride);
    // the counters back to zero for the next launch: the last block out resets them (every block
    // has left both barriers' spins before it counts itself here)
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(bar + 2, 1u) == gridDim.x - 1) {
            bar[0] = 0u;
            bar[1] = 0u;
            bar[2] = 0u;
            __threadfence();
        }
    }
}
