// attention_decode: one query position against cached positions 0..*pos_ptr (inclusive).
//   s_p = (q_h . k_p) * SCALE,  out_h = sum_p softmax(s)_p * v_p,  kv head = h / (N_HEADS/N_KV_HEADS)
// One block serves all query heads of one kv head, so K/V are read once per group (HPB < QPG:
// QPG / HPB blocks per kv head, HPB query heads each, reading the same K/V).
// Online softmax over chunks of CH = NG * TILE positions (no shared memory sized by the
// context): a thread group of HEAD_DIM/VEC threads handles TILE positions of a chunk, each
// thread VEC dims (KV_LOAD-byte K and V loads, all TILE of them issued before any is used);
// the groups' (max, sum, output) states merge at the end.
//
// ALGO (history, llm.c style):
//   1  one block per kv head over the whole context; writes out.       grid = (N_KV_HEADS, 1)
//   2  split-KV (flash-decoding): the context is cut into chunks of CH positions; block
//      (kvh, y) takes chunks c_lo + y, c_lo + y + N_SPLITS, ... (c_lo: the first chunk in range).
//      Blocks with no chunk return at once. When one block is active (n_pos <= CH, or the
//      window fits one chunk) it writes out itself: one memory round trip after the position.
//      Otherwise each active block writes its partial state to scratch and the last to finish
//      (atomic ticket) combines them. grid = (N_KV_HEADS, N_SPLITS)
//      (until 2026-12-01 the context was cut into N_SPLITS equal parts at run time, so every
//      block was active from n_pos >= N_SPLITS and every token paid the scratch + ticket +
//      combine round trips: ~5 us per layer at short context; before that the combine was a
//      second kernel, <name>_reduce)
//
// params:
//   WINDOW (optional) attend to the last WINDOW cached positions only (sliding window; 0 = all)
//   N_HEADS, N_KV_HEADS, HEAD_DIM (64 | 128; any multiple of VEC with HEAD_DIM/VEC a power of two
//   <= 32), KV_T (half | float), SCALE (float, e.g. 0.08838835f), ALGO, N_SPLITS (ALGO=2),
//   KV_LOAD (bytes per thread and position: 16, or 8 = default for half with > 4 heads/group),
//   BLOCK (multiple of HEAD_DIM/VEC and of 32; power of two if REDUCE=0), REDUCE, TILE
//   (positions per group per chunk, default 4, or 2 when N_HEADS/N_KV_HEADS > 2), PDL (default 0),
//   MERGE_WARP (0 default; 1 with REDUCE=1: the groups of a warp merge by shuffles first, and
//   only BLOCK/32 states go through shared memory),
//   N_CTX (cache rows; ALGO 2 without WINDOW: block 0 then loads chunk 0 together with the
//   position and q instead of one round trip after the position),
//   HPB (query heads per block, a divisor of N_HEADS/N_KV_HEADS; default all of them): block x
//   serves kv head x / (QPG / HPB), query heads HPB * (x % (QPG / HPB)) .. of its group
//   KV_STAGES (0 default; N >= 2, ALGO 2, KV_LOAD 16, sm_80+): K/V chunks through an N-deep ring in
//   dynamic shared memory (smem = N * 2 * TILE * BLOCK * 16 bytes) filled by per-thread 16-byte
//   cp.async, N - 1 chunks in flight; no chunk-0 preload
//   (with MMA: each lane's fragment pieces, (2 * HEAD_DIM / 16) x 16 bytes a slot; with EARLY_KV the
//   first N - 1 chunks' copies go out before the PDL wait, the current row's after it)
//   KV_ROWS (0 default; MMA with KV_STAGES; --attn-kv-rows): the ring holds whole rows, slot = CH K
//   rows then CH V rows of HEAD_DIM * sizeof(KV_T) + 16 bytes (smem = 16 * ceil(N / 2) + N * 2 * CH *
//   (row + 16) bytes), completed on the slot's mbarrier (sm_90); 1 (bulk): one cp.async.bulk per row
//   by warp 0; 2 (cp-async): every thread's 16-byte cp.async, a warp instruction covering two
//   whole rows, each thread's arrival when its copies land (cp.async.mbarrier.arrive.noinc)
//   MMA (0 default; 1: gate attn.decode=mma, ALGO 2, half cache, HPB = QPG <= 8, HEAD_DIM 64 or 128,
//   PIPE 0 or 2):
//   the dot products on mma.sync m16n8k16 tiles, 16 positions per warp (CH = 16 * BLOCK / 32);
//   q and the softmax weights rounded to f16 (see "MMA" in the loop); sm_80+
//   VH2 (0 default; 1: gate attn.vsum=half2, REDUCE=1, half cache, KV_LOAD 16, transposed
//   reduction): each lane sums a tile's p_t v_t in f16 pairs (fma.rn.f16x2; p_t rounded to f16,
//   at most TILE terms, each p_t <= 1) and adds the pairs to its f32 output once per tile: 4
//   f16x2 FMAs per position instead of 8 conversions and 8 FMAs (HEAD_DIM 128)
//   MERGE1 (0 default; 1: the schedule's default for N_SPLITS <= 16, off with --attn-merge-two-trips): the last block of a ticketed
//   split-KV launch loads every split's (o, m, l) at once (one L2 round trip) instead of (m, l)
//   first and o after (two); the same operations in the same order
//   CLUSTER (0 default; 1: gate attn.merge=cluster, ALGO 2, N_SPLITS <= 8, sm_90): launched as
//   clusters of 1 x N_SPLITS blocks; the partial states stay in each block's shared memory and
//   are combined through distributed shared memory after a cluster barrier (no scratch, no
//   ticket, no fence); with several active blocks the inactive ones take part in the barriers
//   PIPE (0 default; the schedule passes 2 for the SIMT split kernel unless --attn-pipe says otherwise; 1: a block's next chunk (c + N_SPLITS) is loaded into a second register set
//   before chunk c is used, so blocks with several chunks (long contexts) keep loads in flight
//   during their dot products; 2 x TILE x KV_LOAD x 2 bytes of registers more per thread;
//   2: no second set: the next chunk's K rows are loaded into K's registers as soon as this
//   chunk's dot products have used them, its V rows into V's after the V sum, so each load is in
//   flight during the other half's work)
//   MAX_REGS (unset by default; --attn-overlap): registers per thread (__maxnreg__ instead of
//   __launch_bounds__(BLOCK)), so that two blocks of this kernel and one block of the gemv after it
//   fit one SM's register file together: that gemv's first ring fill then streams while this
//   kernel runs (it triggers its dependents at its start)
//   KV_PF (0 default; 1: --attn-kv-prefetch, the SIMT kernel with EARLY_KV, sm_90): before the PDL
//   wait each block also asks L2 for the K and V rows of its later chunks (c0 + N_SPLITS, ..; rows
//   before the position), one cp.async.bulk.prefetch.L2 a row and cache, so the chunk loop's loads,
//   issued one chunk ahead (PIPE 2), find them in L2 instead of paying DRAM latency each trip
//   NEXT_PF (0 default; sm_90, not BATCH; --attn-prefetch-next): bytes of the next kernel's matrix
//   (next_w, attn_output) that the blocks prefetch into L2 at their start, each block an equal
//   share in one cp.async.bulk.prefetch, so that gemv streams from L2 while attention, which
//   leaves DRAM mostly idle at long contexts, reads K/V; NEXT_PF_MIN (default 0): only when the
//   context holds at least that many positions (read before the PDL wait: EARLY_KV's PRECOND)
//   XQ_OUT (0 default; 1: gate gemv.xq=producer, ALGO 2, not MMA / BATCH): every output is
//   also written quantized to Q8_0 blocks at xq, in the layout the next gemv's x prologue builds
//   (common/xq8_group.cuh; XQ_PLANES 1: Q4_0's two planes), so that gemv (gemv.cu XQ_IN) copies it
//   instead of quantizing out itself: the same bits. The warp that writes 32 outputs of a group (each
//   write loop below covers whole warps) quantizes them from its registers
// launch:  grid (N_KV_HEADS * QPG / HPB, ALGO == 2 ? N_SPLITS : 1), block BLOCK, smem 0 (KV_STAGES: above)
// args:    (q, k_cache, v_cache, pos_ptr, out, scratch, seq_ptr, tickets, next_w, xq)   q, out: (N_HEADS, HEAD_DIM)
//          tickets (ALGO=2): grid.x zeroed unsigned counters (left zeroed after each launch)
//          BATCH=1 (ALGO 1, N_CTX): grid.z = rows; row r attends positions 0..pos_ptr[r] of the
//          cache of sequence seq_ptr[r] (causal within a prompt chunk)
//                  floats; caches: [n_ctx][N_KV_HEADS * HEAD_DIM] KV_T (this layer's base);
//                  scratch (ALGO=2): N_HEADS * N_SPLITS * (HEAD_DIM + 4) floats (rows of + 2 without MMA); scratch and
//                  tickets unused (ALGO=1)
//          PRECOND: 16-byte aligned pointers; 0 <= *pos_ptr < n_ctx.
// bytes:   n_pos * N_KV_HEADS * HEAD_DIM * 2 * sizeof(KV_T) + 2 * N_HEADS * HEAD_DIM * 4
//          (+ 2 * N_HEADS * min(N_SPLITS, chunks) * (HEAD_DIM + 4) * 4 for ALGO=2, > 1 chunk)
// reference: cpu::attention   test: tests/gpu/kernels_vs_cpu_test.cpp (one and several active
//            blocks, windows), tests/golden/prefill_modes_test.cpp (600-position prompts)

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME attention_decode
#define N_HEADS 32
#define N_KV_HEADS 8
#define HEAD_DIM 128
#define KV_T half
#define SCALE 0.08838834764831845f
#define ALGO 2
#define N_SPLITS 16
#define BLOCK 128
#define REDUCE 1
#endif

#include "common/common.cuh"
#include "common/async_copy.cuh"  // KV_STAGES (unconditional: the include expansion takes each file once)
#include "common/attn_split.cuh"  // mma_rows8 (MMA), cluster_barrier / ld_cluster_f32 (CLUSTER)
#include "common/xq8_group.cuh"   // XQ_OUT

#define QPG (N_HEADS / N_KV_HEADS)             // query heads per kv head
#ifndef HPB  // query heads per block
#define HPB QPG
#endif
#define HSPLIT (QPG / HPB)                      // blocks per kv head along x
#ifndef KV_LOAD  // bytes of K (and of V) per thread and position: 8 halves registers for big groups
                 // (the schedule always passes it; this default is for standalone checks)
#define KV_LOAD (HPB > 4 && sizeof(KV_T) == 2 ? 8 : 16)
#endif
#define VEC (KV_LOAD / (int)sizeof(KV_T))       // dims per thread
#define GS (HEAD_DIM / VEC)                     // threads per position
#define NG (BLOCK / GS)                         // position groups per block
#define CH (MMA ? 16 * (BLOCK / 32) : NG * TILE)  // positions per chunk (one loop trip; MMA: 16 per warp)
#define RED_FLOATS (REDUCE ? 1 : HPB * TILE * BLOCK)
// MERGE_WARP=1: the 32/GS groups of a warp first merge by shuffles, then the BLOCK/32 warp
// states through shared memory (NGM of them); 0: all NG group states through shared memory
#ifndef MERGE_WARP
#define MERGE_WARP 0
#endif
#define NGM ((MERGE_WARP || MMA) ? BLOCK / 32 : NG)  // MMA: one state per warp
#if MERGE_WARP && !REDUCE
#error "MERGE_WARP merges by warp shuffles: REDUCE=1 only"
#endif
// query heads merged per round: their group states fit 32 KiB of shared memory
#define MRG_HMAX ((32768 / 4) / (NGM * (HEAD_DIM + 2)))
#define MRG_H (MRG_HMAX < 1 ? 1 : (HPB < MRG_HMAX ? HPB : MRG_HMAX))
#define MRG_FLOATS (MRG_H * NGM * (HEAD_DIM + 2))
#ifndef WINDOW  // sliding window in positions; 0 = attend to the whole cache
#define WINDOW 0
#endif
#ifndef TILE
#define TILE (HPB > 2 ? 2 : 4)
#endif
#if ALGO != 2
#undef N_SPLITS
#define N_SPLITS 1
#endif
#ifndef PIPE  // 1: a block's next chunk is loaded before its current one is used (--attn-pipe)
#define PIPE 0
#endif
#ifndef BATCH  // 1: query row blockIdx.z of a batch step, at pos_ptr[row] in sequence seq_ptr[row]
#define BATCH 0
#endif
#ifndef KV_STAGES  // > 0 (ALGO 2, KV_LOAD 16, sm_80+): K/V chunks through a KV_STAGES-deep cp.async ring
#define KV_STAGES 0
#endif
#ifndef KV_ROWS  // MMA with KV_STAGES: the ring as whole rows, 1 by cp.async.bulk (sm_90), 2 by the block's cp.async
#define KV_ROWS 0
#endif
#ifndef MMA  // 1 (gate attn.decode=mma): the dot products on tensor cores (see "MMA" above the loop)
#define MMA 0
#endif
#if KV_ROWS && (!MMA || !KV_STAGES || KV_ROWS > 2)
#error "KV_ROWS (1 or 2): the MMA kernel's KV_STAGES ring"
#endif
#ifndef VH2  // 1 (gate attn.vsum=half2): a tile's weighted V rows summed in f16 pairs (XRED path)
#define VH2 0
#endif
#if VH2 && (MMA || !REDUCE)
#error "VH2: the SIMT kernel's transposed reduction (REDUCE=1)"
#endif
#ifndef KH2  // 1 (gate attn.kdot=half2): q . k of a thread's VEC dims in f16 pairs (q pre-scaled, one f32 sum)
#define KH2 0
#endif
#if KH2 && MMA
#error "KH2: the SIMT kernel's dot products (MMA: tensor cores)"
#endif
#ifndef MERGE1  // 1 (the schedule's default; 0: --attn-merge-two-trips): the last block reads the splits' states in one round trip
#define MERGE1 0
#endif
#ifndef CLUSTER  // 1 (gate attn.merge=cluster, sm_90): launched as clusters of 1 x N_SPLITS blocks
#define CLUSTER 0
#endif
#if CLUSTER && (ALGO != 2 || N_SPLITS > 8 || BATCH)
#error "CLUSTER: split-KV decode (ALGO 2) with at most 8 splits (one portable cluster)"
#endif
#if MMA
#if ALGO != 2 || PIPE == 1 || (KV_STAGES && PIPE) || MERGE_WARP || !REDUCE || HPB != QPG || QPG > 8 || HEAD_DIM % 64 != 0 || \
    HEAD_DIM > 128 || BLOCK % 32 != 0 || KV_LOAD != 16
#error "MMA: split-KV with every query head of a kv head (<= 8) per block, HEAD_DIM 64 or 128, 16-byte loads, no PIPE 1/MERGE_WARP, KV_STAGES without PIPE"
#endif
#define MKU (HEAD_DIM / 32)  // K: 16-byte loads per position and lane (each serves two k-steps)
#define MVU (HEAD_DIM / 64)  // V: 16-byte loads per row and lane
#define MNT (HEAD_DIM / 8)   // n-tiles of the output; also the dims one lane group owns in V
#define VD(n, t) (64 * ((t) / 8) + 8 * (n) + (t) % 8)  // output tile t, column n <-> this dim
#define MRE (2 * MKU + 4 * MVU)  // KV_STAGES: 16-byte ring entries per lane and chunk (K: 2 x MKU, V: 4 x MVU)
#endif
// XRED (REDUCE=1, TILE a power of two in 2..GS): the transposed reduction below (one position per
// lane after it); otherwise every lane of a group reduces every position (TILE x log2(GS) shuffles)
#define XR (GS / TILE)
#define XRED (REDUCE && TILE >= 2 && TILE <= GS && (TILE & (TILE - 1)) == 0)  // for if constexpr (GS: sizeof)
#if KV_STAGES && (ALGO != 2 || PIPE)
#error "KV_STAGES: split-KV (ALGO 2) only, and instead of PIPE"
#endif
// ALGO 2 without a window: block 0 loads chunk 0 before reading the position (N_CTX bounds it)
// (not with MMA: tried offline, 159 -> 189 registers on the 8B shape, or spills at 3 blocks per SM)
// EARLY_KV=1 (--attn-early-kv; split SIMT kernel, PIPE 2, no window, not BATCH): every block reads
// the position and loads its first chunk's K/V rows before the PDL wait, while the q/k/v kernel
// still runs; only the current position's row (that kernel's store) is read after the wait.
// PRECOND (the host's step order): *pos_ptr and the cache rows before it are final before the
// kernel starts (the position arrives by a copy before the step's launches or graph, every earlier
// step has completed); replaces PRELOAD.
#ifndef EARLY_KV
#define EARLY_KV 0
#endif
#if XQ_OUT && (ALGO != 2 || MMA || BATCH || HEAD_DIM % 32 != 0 || BLOCK % 32 != 0)
#error "XQ_OUT: the split SIMT kernel of one query row (warps write whole groups of 32 outputs)"
#endif
#ifndef KV_PF  // 1 (--attn-kv-prefetch; EARLY_KV SIMT kernel, sm_90): later chunks' rows into L2 at the start
#define KV_PF 0
#endif
#if KV_PF && (!EARLY_KV || MMA)
#error "KV_PF: the split SIMT kernel with EARLY_KV"
#endif
#ifndef NEXT_PF  // bytes of next_w prefetched into L2 at the start (0: off)
#define NEXT_PF 0
#endif
#ifndef NEXT_PF_MIN  // ... when at least this many positions are cached
#define NEXT_PF_MIN 0
#endif
#if NEXT_PF && (BATCH || NEXT_PF % 16 != 0)
#error "NEXT_PF: decode (not BATCH), a multiple of 16 bytes"
#endif
#if EARLY_KV && (ALGO != 2 || WINDOW != 0 || BATCH || CLUSTER || (MMA ? (!KV_STAGES || PIPE != 0) : (KV_STAGES || PIPE != 2)))
#error "EARLY_KV: the split SIMT kernel with PIPE 2, or the MMA kernel with KV_STAGES; no window, no batch, the ticket merge"
#endif
#if ALGO == 2 && WINDOW == 0 && defined(N_CTX) && !KV_STAGES && !MMA && !EARLY_KV
#define PRELOAD 1
#else
#define PRELOAD 0
#endif
#if BATCH && (ALGO != 1 || !defined(N_CTX))
#error "BATCH needs ALGO 1 (one pass) and N_CTX (positions per sequence in the cache)"
#endif

static_assert(N_HEADS % N_KV_HEADS == 0, "GQA: whole groups");
static_assert(HPB >= 1 && QPG % HPB == 0, "HPB: a divisor of the query heads per kv head");
static_assert(HEAD_DIM % VEC == 0 && GS <= 32 && (GS & (GS - 1)) == 0, "HEAD_DIM / VEC: power of two <= 32");
static_assert((KV_LOAD == 16 || KV_LOAD == 8) && VEC % 4 == 0, "KV_LOAD: 16 or 8 bytes, >= 4 dims");
static_assert(BLOCK % GS == 0 && BLOCK % 32 == 0, "BLOCK: whole position groups and warps");
static_assert(!VH2 || (KV_LOAD == 16 && sizeof(KV_T) == 2), "VH2: a half cache read 16 bytes at a time");
static_assert(!KH2 || (KV_LOAD == 16 && sizeof(KV_T) == 2), "KH2: a half cache read 16 bytes at a time");  // (sizeof: not in #if)

// K/V of one position for this thread: KV_LOAD bytes (the upper half of w is unused for 8)
__device__ __forceinline__ uint4 kv_load(const KV_T* p) {
    if (KV_LOAD == 16) return ld_stream16_act(p);  // the previous kernel stored this position
    const uint2 v = ld_stream8_act(p);
    return make_uint4(v.x, v.y, 0u, 0u);
}

__device__ __forceinline__ void kv_to_float(uint4 w, float* f) {  // VEC floats
    if (sizeof(KV_T) == 2) {
        const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int i = 0; i < VEC / 2; ++i) {
            f[2 * i] = f16_lo(u[i]);
            f[2 * i + 1] = f16_hi(u[i]);
        }
    } else {
        f[0] = __uint_as_float(w.x);
        f[1] = __uint_as_float(w.y);
        f[2] = __uint_as_float(w.z);
        f[3] = __uint_as_float(w.w);
    }
}

template <int N> struct IntTag { static constexpr int value = N; };

#if VH2 || KH2
// d = a * b + c on f16 pairs, one rounding (sm_53+; the pair conversions need sm_80)
__device__ __forceinline__ uint32_t hfma2(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
#endif  // a compile-time count for a lambda


#if MMA
__device__ __forceinline__ uint32_t u4_word(const uint4& v, int i) {  // i: a compile-time constant
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
#endif

#ifdef MAX_REGS  // --attn-overlap: a register cap so a following gemv block fits beside two of these
#define ATTN_BOUNDS __maxnreg__(MAX_REGS)
#else
#define ATTN_BOUNDS __launch_bounds__(BLOCK)
#endif
extern "C" __global__ void ATTN_BOUNDS
KERNEL_NAME(const float* q, const KV_T* k_cache, const KV_T* v_cache, const int* pos_ptr,
            float* out, float* scratch, const int* seq_ptr, unsigned* tickets, const void* next_w, uint8_t* xq) {
    constexpr int KV_DIM = N_KV_HEADS * HEAD_DIM;
    // output i = v (i: head * HEAD_DIM + dim); XQ_OUT: also into its group's Q8_0 block, by the warp
    // whose 32 lanes hold the group's 32 outputs in this call
    auto put = [&](int i, float v) { store_out_xq8<N_HEADS * HEAD_DIM, XQ_PLANES, XQ_OUT>(out, xq, i, v); };
    // one shared array: the tree reduction's partial dots inside the loop, the group states
    // of MRG_H query heads at a time in the merge after it
    __shared__ __align__(16) float sm[MRG_FLOATS > RED_FLOATS ? MRG_FLOATS : RED_FLOATS];
    __shared__ float wgt[MRG_H * NGM];  // merge weights 2^(m_g - M) per head and group
    float* red = sm;
    float* mrg = sm;
    (void)red;
    pdl_launch_dependents();  // small grid: let the next kernel get scheduled
    const int tid = threadIdx.x, gi = tid / GS, gl = tid % GS;
#if NEXT_PF
    // the next kernel's matrix into L2 (this block's share) while this one reads K/V
    if (tid == 0 && (NEXT_PF_MIN == 0 || *pos_ptr + 1 >= NEXT_PF_MIN))
        bulk_prefetch_l2_share(next_w, (unsigned long long)(NEXT_PF),
                               (unsigned long long)blockIdx.y * gridDim.x + blockIdx.x,
                               (unsigned long long)gridDim.x * gridDim.y);
#else
    (void)next_w;
#endif
    const int bx = blockIdx.x;
    const int kvh = bx / HSPLIT;
    const int hb = kvh * QPG + (bx % HSPLIT) * HPB;  // this block's first query head
    uint4 kw[TILE], vw[TILE];
#if MMA && KV_STAGES
    // MMA with KV_STAGES: each lane copies exactly the 16-byte pieces its fragments read (mma_load_k/v
    // below: K rows pw + 8 j + mg at dims 32 u + 8 mc, V rows pw + 2 mc + (r & 1) + 8 (r >> 1) at dims
    // 64 x + 8 mg) into entries ((slot * MRE + e) * BLOCK + tid) of a ring in dynamic shared memory, so
    // completion is per thread (cp.async.wait_group) and no register holds a load in flight. Chunk c
    // into slot st: rows in [lo, hi) copied, the others zero-filled; row `skip` untouched; only row
    // `only` when only >= 0.
    extern __shared__ __align__(16) uint4 kv_ring[];
#if KV_ROWS
    // KV_ROWS: the ring holds whole rows instead: slot st = CH K rows, then CH V rows, of RSB bytes
    // each (the head's row + 16 bytes of padding, so the fragments' 16-byte reads of 8 rows spread
    // over the banks), completed on the slot's mbarrier. 1: one cp.async.bulk per row by warp 0 (rows
    // outside [first, end) not copied: their scores are masked, their V pieces read as zero); 2: the
    // block's 16-byte cp.async (rows outside zero-filled), each thread arriving once its copies land.
    constexpr int RSB = HEAD_DIM * (int)sizeof(KV_T) + 16;
    constexpr int BAR_B = 16 * ((KV_STAGES * 8 + 15) / 16);
    const uint32_t ring0 = smem_addr(kv_ring);
    const char* ringp = reinterpret_cast<const char*>(kv_ring);
    auto slot_off = [&](int st) { return BAR_B + st * 2 * CH * RSB; };
    // chunk c's rows in [lo, hi) (only row `only` when only >= 0) into slot st; arrive: the slot's
    // one arrival with its bytes (false: the bytes only, the arrival comes with the current row)
#if KV_ROWS == 2
    // chunk c into slot st: rows in [lo, hi) copied, the others zero-filled, row `skip` untouched, only
    // row `only` when only >= 0; every thread takes pieces tid, tid + BLOCK, .. (16 threads a row:
    // a warp instruction covers two whole rows); arrive: this thread's arrival once its copies land
    // (false: later, after the current row's copy)
    auto bulk_fill = [&](int c, int st, int lo, int hi, int only, bool arrive, int skip = -1) {
        constexpr int PPR = HEAD_DIM * (int)sizeof(KV_T) / 16;  // 16-byte pieces a row
        constexpr int NPC = 2 * CH * PPR;                       // pieces a chunk (K and V)
        static_assert(NPC % BLOCK == 0, "KV_ROWS 2: whole pieces per thread");
        const int p0 = c * CH;
        const unsigned long long hoff = (unsigned long long)(bx / HSPLIT) * HEAD_DIM;
#pragma unroll 4
        for (int k = 0; k < NPC / BLOCK; ++k) {
            const int i = k * BLOCK + (int)threadIdx.x;
            const int kv = i / (CH * PPR), row = (i / PPR) % CH, pc = i % PPR;
            const int p = p0 + row;
            if (p == skip || (only >= 0 && p != only)) continue;
            const bool ok = p >= lo && p < hi;
            const KV_T* src = (kv ? v_cache : k_cache) + (unsigned long long)(ok ? p : 0) * KV_DIM + hoff +
                              pc * (16 / (int)sizeof(KV_T));
            cp_async16(ring0 + slot_off(st) + kv * CH * RSB + row * RSB + pc * 16, src, ok ? 16 : 0);
        }
        if (arrive) mbar_arrive_cp_async(ring0 + 8 * st);
    };
#else
    auto bulk_fill = [&](int c, int st, int lo, int hi, int only, bool arrive, int skip = -1) {
        (void)skip;  // rows past hi are never copied here
        if (threadIdx.x >= 32) return;
        const int p0 = c * CH;
        const int a = only >= 0 ? only : max(lo, p0), b = only >= 0 ? only + 1 : min(hi, p0 + CH);
        const uint32_t bar = ring0 + 8 * st;
        const uint32_t bytes = b > a ? uint32_t(b - a) * 2u * HEAD_DIM * (uint32_t)sizeof(KV_T) : 0u;
        if (threadIdx.x == 0) {
            if (arrive)
                mbar_arrive_expect_tx(bar, bytes);
            else
                mbar_expect_tx(bar, bytes);
        }
        const unsigned long long hoff = (unsigned long long)(bx / HSPLIT) * HEAD_DIM;
        for (int p = a + (int)threadIdx.x; p < b; p += 32) {
            const uint32_t dk = ring0 + slot_off(st) + (p - p0) * RSB;
            bulk_g2s(dk, k_cache + (unsigned long long)p * KV_DIM + hoff, HEAD_DIM * (uint32_t)sizeof(KV_T), bar);
            bulk_g2s(dk + CH * RSB, v_cache + (unsigned long long)p * KV_DIM + hoff, HEAD_DIM * (uint32_t)sizeof(KV_T), bar);
        }
    };
#endif
    if (threadIdx.x == 0) {
        // one arrival a phase (1: warp 0's lane 0 with the bytes), or one per thread (2)
        for (int st = 0; st < KV_STAGES; ++st) mbar_init(ring0 + 8 * st, KV_ROWS == 2 ? BLOCK : 1);
        mbar_init_fence();
    }
    __syncthreads();
#endif
    auto ring_issue_mma = [&](int c, int st, int lo, int hi, int skip, int only) {
        const int ln = threadIdx.x % 32, w = threadIdx.x / 32, g = ln / 4, cq = ln % 4;
        const int pw = c * CH + 16 * w;
        const unsigned long long hoff = (unsigned long long)(bx / HSPLIT) * HEAD_DIM;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int p = pw + 8 * j + g;
            if (p == skip || (only >= 0 && p != only)) continue;
            const bool ok = p >= lo && p < hi;
            const KV_T* kr = k_cache + (unsigned long long)(ok ? p : 0) * KV_DIM + hoff + 8 * cq;
#pragma unroll
            for (int u = 0; u < MKU; ++u)
                cp_async16(smem_addr(kv_ring + (st * MRE + j * MKU + u) * BLOCK + threadIdx.x), kr + 32 * u, ok ? 16 : 0);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int p = pw + 2 * cq + (r & 1) + 8 * (r >> 1);
            if (p == skip || (only >= 0 && p != only)) continue;
            const bool ok = p >= lo && p < hi;
            const KV_T* vr = v_cache + (unsigned long long)(ok ? p : 0) * KV_DIM + hoff + 8 * g;
#pragma unroll
            for (int x = 0; x < MVU; ++x)
                cp_async16(smem_addr(kv_ring + (st * MRE + 2 * MKU + r * MVU + x) * BLOCK + threadIdx.x), vr + 64 * x,
                           ok ? 16 : 0);
        }
    };
    // chunk c into slot st when `issue`: rows in [lo, hi) (the others zero-filled or masked), row
    // `skip` left out, only row `only` when only >= 0. The row ring (KV_ROWS): the copies arrive on
    // the slot's barrier when `arrive` (else the slot's arrival comes with a later copy). The
    // per-lane ring: then one commit group when `commit`, empty when !issue, so every thread
    // counts the same groups (else the copies join the next group).
    auto ring_fill = [&](bool issue, int c, int st, int lo, int hi, int skip, int only, bool arrive, bool commit) {
#if KV_ROWS
        (void)commit;
        if (issue) bulk_fill(c, st, lo, hi, only, arrive, skip);
#else
        (void)arrive;
        if (issue) ring_issue_mma(c, st, lo, hi, skip, only);
        if (commit) cp_async_commit();
#endif
    };
#if EARLY_KV
    // the position (PRECOND below) and the ring's first KV_STAGES - 1 chunks of this block before the
    // PDL wait, rows before the position only (the current row is the q/k/v kernel's store: copied
    // after the wait, below); one commit group per slot, empty past the block's last chunk
    {
        const int cur = *pos_ptr;
        if ((int)blockIdx.y > cur / CH) return;  // no chunk for this block (as n_active below)
#pragma unroll
        for (int i = 0; i < KV_STAGES - 1; ++i) {
            const int c = (int)blockIdx.y + i * N_SPLITS;
            ring_fill(c <= cur / CH, c, i, 0, cur, cur, -1, c != cur / CH, true);
        }
    }
#endif
#elif EARLY_KV
    {
        // the position (PRECOND above) and this block's first chunk, rows before the position
        const int cur = *pos_ptr;
        if ((int)blockIdx.y > cur / CH) return;  // no chunk for this block (as n_active below)
        const KV_T* kb0 = k_cache + kvh * HEAD_DIM + gl * VEC;
        const KV_T* vb0 = v_cache + kvh * HEAD_DIM + gl * VEC;
        if (((int)blockIdx.y + 1) * CH <= cur) {  // every row before the position: constant offsets
            const unsigned long long r = (unsigned long long)((int)blockIdx.y * CH + gi) * KV_DIM;
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                kw[t] = kv_load(kb0 + r + t * NG * KV_DIM);
                vw[t] = kv_load(vb0 + r + t * NG * KV_DIM);
            }
        } else {
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const int p = (int)blockIdx.y * CH + t * NG + gi;
                kw[t] = p < cur ? kv_load(kb0 + (unsigned long long)p * KV_DIM) : make_uint4(0, 0, 0, 0);
                vw[t] = p < cur ? kv_load(vb0 + (unsigned long long)p * KV_DIM) : make_uint4(0, 0, 0, 0);
            }
        }
#if KV_PF
        // the later chunks' rows (K for r < CH, V for the rest), whole HEAD_DIM rows, into L2
        for (int c = (int)blockIdx.y + N_SPLITS; c * CH < cur; c += N_SPLITS)
            for (int r = tid; r < 2 * CH; r += BLOCK) {
                const int p = c * CH + r % CH;
                if (p < cur)
                    bulk_prefetch_l2((r < CH ? k_cache : v_cache) + (unsigned long long)p * KV_DIM + kvh * HEAD_DIM,
                                     HEAD_DIM * (uint32_t)sizeof(KV_T));
            }
#endif
    }
#endif
    pdl_wait();
#if PRELOAD
    // block y = 0 always takes chunk 0 (no window): its K/V loads go out with the position's,
    // not one round trip after it; rows past the position are zeroed below, never used
    if (blockIdx.y == 0) {
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            const int p = t * NG + gi;
            if (p < N_CTX) {
                kw[t] = kv_load(k_cache + (unsigned long long)p * KV_DIM + kvh * HEAD_DIM + gl * VEC);
                vw[t] = kv_load(v_cache + (unsigned long long)p * KV_DIM + kvh * HEAD_DIM + gl * VEC);
            }
        }
    }
#endif
#if BATCH
    // causal: this row sees its sequence's cache up to its own position (the batch's K/V rows
    // were stored before this kernel)
    const int row = blockIdx.z;
    const int n_pos = pos_ptr[row] + 1;
    q += (unsigned long long)row * N_HEADS * HEAD_DIM;
    out += (unsigned long long)row * N_HEADS * HEAD_DIM;
    k_cache += (unsigned long long)seq_ptr[row] * N_CTX * KV_DIM;
    v_cache += (unsigned long long)seq_ptr[row] * N_CTX * KV_DIM;
#else
    const int n_pos = *pos_ptr + 1;
#endif
    const KV_T* kb = k_cache + kvh * HEAD_DIM + gl * VEC;
    const KV_T* vb = v_cache + kvh * HEAD_DIM + gl * VEC;
    // q (written by the previous kernel) goes out with the position load; scaled by SCALE * log2(e)
    // so the scores come out in base 2 (every exponential below is exp2, the maxima m in base 2)
    constexpr float QS = (float)(SCALE) * 1.4426950408889634f;
#if MMA
    // lane = 4 mg + mc of warp wp. The tiles' rows are the group's query heads (mg < QPG; the
    // rest are zero); q is rounded to f16 once, as A fragments in the permuted k order the K
    // loads below use: lane mc, k-steps 2u and 2u + 1 <-> dims 32u + 8mc + 0..3 and + 4..7.
    const int lane = tid % 32, wp = tid / 32, mg = lane / 4, mc = lane % 4;
    uint32_t qa[2 * MKU][2];
#pragma unroll
    for (int u = 0; u < MKU; ++u) {
        float4 x0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), x1 = x0;
        if (mg < QPG) {
            const float* qp = q + (hb + mg) * HEAD_DIM + 32 * u + 8 * mc;
            x0 = *reinterpret_cast<const float4*>(qp);
            x1 = *reinterpret_cast<const float4*>(qp + 4);
        }
        qa[2 * u][0] = pack_16x2<0>(x0.x, x0.y), qa[2 * u][1] = pack_16x2<0>(x0.z, x0.w);
        qa[2 * u + 1][0] = pack_16x2<0>(x1.x, x1.y), qa[2 * u + 1][1] = pack_16x2<0>(x1.z, x1.w);
    }
    // head mg's state in this lane: o[t] = output dims VD(2 mc, t) and VD(2 mc + 1, t) (below);
    // m, l over this lane's positions (l summed over the lane quad after the loop)
    float o[MNT][2], m = -JL_INF, l = 0.0f;
#pragma unroll
    for (int t = 0; t < MNT; ++t) o[t][0] = o[t][1] = 0.0f;
#else
#if KH2
    uint32_t qr[HPB][VEC / 2];  // q * QS as f16 pairs (the scale applied before rounding keeps the products small)
#else
    float qr[HPB][VEC];
#endif
    float o[HPB][VEC], m[HPB], l[HPB];
#pragma unroll
    for (int h = 0; h < HPB; ++h) {
        const float* qh = q + (hb + h) * HEAD_DIM + gl * VEC;
#pragma unroll
        for (int i = 0; i < VEC; i += 4) {
            const float4 v = *reinterpret_cast<const float4*>(qh + i);
#if KH2
            qr[h][i / 2] = pack_16x2<0>(v.x * QS, v.y * QS), qr[h][i / 2 + 1] = pack_16x2<0>(v.z * QS, v.w * QS);
#else
            qr[h][i] = v.x * QS, qr[h][i + 1] = v.y * QS, qr[h][i + 2] = v.z * QS, qr[h][i + 3] = v.w * QS;
#endif
        }
#pragma unroll
        for (int i = 0; i < VEC; ++i) o[h][i] = 0.0f;
        m[h] = -JL_INF;
        l[h] = 0.0f;
    }
#endif

    // sliding window (phi3's attention.sliding_window): only the last WINDOW positions
    const int first = WINDOW > 0 ? max(0, n_pos - WINDOW) : 0;
    const int end = n_pos;
    // chunks c_lo..c_hi hold the positions in range; this block takes c_lo + blockIdx.y, then
    // every N_SPLITS-th (ALGO 1: N_SPLITS = 1, blockIdx.y = 0: all of them)
    const int c_lo = first / CH, c_hi = (n_pos - 1) / CH;
    const int n_active = min(N_SPLITS, c_hi - c_lo + 1);  // blocks with a chunk (block-uniform)
#if CLUSTER
    // with several active blocks the cluster's inactive ones stay for the cluster barriers (no
    // chunk: their loop runs no trip, their state is empty: m = -inf, l = 0, o = 0)
    if ((int)blockIdx.y >= n_active && n_active == 1) return;
#else
    if ((int)blockIdx.y >= n_active) return;
#endif

    // chunk c's K/V rows of this thread (zero outside [first, end)); chunk 0 was loaded before
    // the position was known (PRELOAD): only its rows past the position are zeroed
    auto chunk_load = [&](int c, uint4* kt, uint4* vt) {
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            const int p = c * CH + t * NG + gi;
            if (PRELOAD && c == 0) {
                if (!(p < end)) kt[t] = vt[t] = make_uint4(0, 0, 0, 0);
            } else if (p >= first && p < end) {
                kt[t] = kv_load(kb + (unsigned long long)p * KV_DIM);
                vt[t] = kv_load(vb + (unsigned long long)p * KV_DIM);
            } else {
                kt[t] = vt[t] = make_uint4(0, 0, 0, 0);
            }
        }
    };
    // PIPE 2: one of K or V of a later chunk c (> 0: never the preloaded chunk 0) into rows xt
    // A chunk whose rows are all in range (every one but the last of a block at depth, without a
    // window) is loaded from one row pointer at constant offsets: no per-row bound checks, zero
    // fills or 64-bit address arithmetic (~190 of the loop's ~450 instructions a trip were those,
    // Nsight Compute's SASS page; 118 -> 112 registers). Measured neutral on the H200 (8B Q8_0
    // depth 4096 402.2 against 403.2, noise): the loop is not issue-bound inside the decode graph.
    auto half_load = [&](int c, const KV_T* base, uint4* xt) {
        if (c * CH >= first && c * CH + CH <= end) {  // block-uniform
            const KV_T* r = base + (unsigned long long)(c * CH + gi) * KV_DIM;
#pragma unroll
            for (int t = 0; t < TILE; ++t) xt[t] = kv_load(r + t * NG * KV_DIM);
            return;
        }
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            const int p = c * CH + t * NG + gi;
            xt[t] = p >= first && p < end ? kv_load(base + (unsigned long long)p * KV_DIM) : make_uint4(0, 0, 0, 0);
        }
    };
    (void)half_load;
    (void)chunk_load;  // (EARLY_KV: the first chunk came before the wait, later ones by half_load)
#if MMA
    // warp wp's rows of chunk c: K of positions pw + 8 j + mg (lane mc: dims 32 u + 8 mc .. + 7,
    // the B fragments of k-steps 2u, 2u + 1 as they are); V of rows pw + 2 mc, +1, +8, +9 at dims
    // 64 x + 8 mg .. + 7 (a warp's load: 128 contiguous bytes per row). Rows outside [first, end)
    // are zero (V must be: its products meet zero weights).
    uint4 kq[2][MKU], vq[4][MVU];
    auto mma_load_k = [&](int c) {
        const int pw = c * CH + 16 * wp;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int p = pw + 8 * j + mg;
            const bool ok = p >= first && p < end;
            const KV_T* kr = k_cache + (unsigned long long)(ok ? p : 0) * KV_DIM + kvh * HEAD_DIM + 8 * mc;
#pragma unroll
            for (int u = 0; u < MKU; ++u) kq[j][u] = ok ? kv_load(kr + 32 * u) : make_uint4(0, 0, 0, 0);
        }
    };
    auto mma_load_v = [&](int c) {
        const int pw = c * CH + 16 * wp;
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int p = pw + 2 * mc + (r & 1) + 8 * (r >> 1);
            const bool ok = p >= first && p < end;
            const KV_T* vr = v_cache + (unsigned long long)(ok ? p : 0) * KV_DIM + kvh * HEAD_DIM + 8 * mg;
#pragma unroll
            for (int x = 0; x < MVU; ++x) vq[r][x] = ok ? kv_load(vr + 64 * x) : make_uint4(0, 0, 0, 0);
        }
    };
#if PIPE == 2
    mma_load_k(c_lo + (int)blockIdx.y);
    mma_load_v(c_lo + (int)blockIdx.y);
#endif
#elif EARLY_KV
    // the first chunk's rows came before the PDL wait; the current position's row is the q/k/v
    // kernel's store: read now (c_lo = 0: no window)
#pragma unroll
    for (int t = 0; t < TILE; ++t) {
        const int p = (int)blockIdx.y * CH + t * NG + gi;
        if (p == end - 1) {
            kw[t] = kv_load(kb + (unsigned long long)p * KV_DIM);
            vw[t] = kv_load(vb + (unsigned long long)p * KV_DIM);
        }
    }
#elif PIPE
    chunk_load(c_lo + (int)blockIdx.y, kw, vw);
#endif
#if KV_STAGES && MMA
#if EARLY_KV
    // the current position's row, when its chunk went out before the wait (one of the block's first
    // KV_STAGES - 1): into its slot now, in the next commit group (the loop's last trip waits for all)
    {
        const int i = ((int)c_hi - (int)blockIdx.y) / N_SPLITS;
        if (((int)c_hi - (int)blockIdx.y) % N_SPLITS == 0 && i < KV_STAGES - 1)
            ring_fill(true, c_hi, i, first, end, -1, end - 1, true, false);
    }
#else
#pragma unroll
    for (int i = 0; i < KV_STAGES - 1; ++i) {
        const int c = c_lo + (int)blockIdx.y + i * N_SPLITS;
        ring_fill(c <= c_hi, c, i, first, end, -1, -1, true, true);
    }
#endif
    int it = 0;
#elif KV_STAGES
    // K/V through a ring of KV_STAGES chunks in dynamic shared memory, filled by 16-byte cp.async:
    // each thread copies exactly the rows it reads later (entry ((stage * 2 + kv) * TILE + t) *
    // BLOCK + tid), so completion is per thread (cp.async.wait_group), no block barrier; rows
    // outside [first, end) are zero-filled. KV_STAGES - 1 chunks stay in flight.
    static_assert(KV_LOAD == 16, "KV_STAGES: 16-byte K/V loads");
    extern __shared__ __align__(16) uint4 kv_ring[];
    auto ring_issue = [&](int c, int st) {
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            const int p = c * CH + t * NG + gi;
            const bool ok = p >= first && p < end;
            const unsigned long long off = ok ? (unsigned long long)p * KV_DIM : 0ull;
            cp_async16(smem_addr(kv_ring + ((st * 2 + 0) * TILE + t) * BLOCK + tid), kb + off, ok ? 16 : 0);
            cp_async16(smem_addr(kv_ring + ((st * 2 + 1) * TILE + t) * BLOCK + tid), vb + off, ok ? 16 : 0);
        }
    };
    // one commit group per ring slot, empty past the block's last chunk (uniform group counting)
#pragma unroll
    for (int i = 0; i < KV_STAGES - 1; ++i) {
        const int c = c_lo + (int)blockIdx.y + i * N_SPLITS;
        if (c <= c_hi) ring_issue(c, i);
        cp_async_commit();
    }
    int it = 0;
#endif
    // block-uniform trip count (REDUCE=0 synchronises inside)
    for (int c = c_lo + (int)blockIdx.y; c <= c_hi; c += N_SPLITS) {
        const int p0 = c * CH;
#if MMA
        // MMA: warp wp takes positions pw .. pw + 15 of the chunk (K and V rows: mma_load_k/v).
        // S = Q K^T on two n8 tiles of positions (tile j, column g <-> position pw + 8 j + g),
        // then the online softmax per head (row), then O += P V with P as the A fragment straight
        // from S's accumulators (k <-> positions pw + 0..15) and V as B, its rows paired per dim
        // (byte_perm): column g of output tile t <-> dim VD(g, t) = 64 (t / 8) + 8 g + t % 8.
        // No conversion instructions.
        const int pw = p0 + 16 * wp;
#if PIPE == 2
        // this chunk's K and V are in kq, vq (before the loop or during the last trip)
        const int c_next = c + N_SPLITS;
        const bool more = c_next <= c_hi;  // block-uniform
#elif KV_STAGES && KV_ROWS
        {
            // every warp has read slot (it - 1) % KV_STAGES into registers: the chunk KV_STAGES - 1
            // trips ahead goes into it; then this chunk's slot (its fill number it / KV_STAGES)
            if (it > 0) __syncthreads();
            const int cn = c + (KV_STAGES - 1) * N_SPLITS;
            ring_fill(cn <= c_hi, cn, (it + KV_STAGES - 1) % KV_STAGES, first, end, -1, -1, true, true);
            const int st = it % KV_STAGES;
            mbar_wait(ring0 + 8 * st, (unsigned)(it / KV_STAGES) & 1u);
            const char* ks = ringp + slot_off(st) + 16 * wp * RSB;  // this warp's 16 rows
#pragma unroll
            for (int j = 0; j < 2; ++j)
#pragma unroll
                for (int u = 0; u < MKU; ++u)
                    kq[j][u] = *reinterpret_cast<const uint4*>(ks + (8 * j + mg) * RSB + (32 * u + 8 * mc) * (int)sizeof(KV_T));
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int rr = 2 * mc + (r & 1) + 8 * (r >> 1);
                const bool ok = pw + rr >= first && pw + rr < end;  // V of a row never copied: zero
#pragma unroll
                for (int x = 0; x < MVU; ++x)
                    vq[r][x] = ok ? *reinterpret_cast<const uint4*>(ks + CH * RSB + rr * RSB + (64 * x + 8 * mg) * (int)sizeof(KV_T))
                                  : make_uint4(0, 0, 0, 0);
            }
            ++it;
        }
#elif KV_STAGES
        {
            // the chunk KV_STAGES - 1 trips ahead into the slot read one trip ago; then this chunk's
            // group (the newer ones may stay in flight; the last trip waits for all: its group may
            // hold the current row's copy, EARLY_KV)
            const int cn = c + (KV_STAGES - 1) * N_SPLITS;
            ring_fill(cn <= c_hi, cn, (it + KV_STAGES - 1) % KV_STAGES, first, end, -1, -1, true, true);
            if (c + N_SPLITS > c_hi)
                cp_async_wait<0>();
            else
                cp_async_wait<KV_STAGES - 1>();
            const int st = it % KV_STAGES;
#pragma unroll
            for (int j = 0; j < 2; ++j)
#pragma unroll
                for (int u = 0; u < MKU; ++u) kq[j][u] = kv_ring[(st * MRE + j * MKU + u) * BLOCK + tid];
#pragma unroll
            for (int r = 0; r < 4; ++r)
#pragma unroll
                for (int x = 0; x < MVU; ++x) vq[r][x] = kv_ring[(st * MRE + 2 * MKU + r * MVU + x) * BLOCK + tid];
            ++it;
        }
#else
        mma_load_k(c);
        mma_load_v(c);
#endif
        float sc[2][2];  // head mg, positions pw + 8 j + 2 mc + i
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            sc[j][0] = sc[j][1] = 0.0f;
#pragma unroll
            for (int u = 0; u < MKU; ++u) {
                mma_rows8(sc[j][0], sc[j][1], qa[2 * u][0], qa[2 * u][1], kq[j][u].x, kq[j][u].y);
                mma_rows8(sc[j][0], sc[j][1], qa[2 * u + 1][0], qa[2 * u + 1][1], kq[j][u].z, kq[j][u].w);
            }
        }
#if PIPE == 2
        if (more) mma_load_k(c_next);  // K is used: the next chunk's in flight during softmax and P V
#endif
        float mx = -JL_INF;
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                const int p = pw + 8 * j + 2 * mc + i;
                sc[j][i] = p >= first && p < end ? sc[j][i] * QS : -JL_INF;
                mx = fmaxf(mx, sc[j][i]);
            }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the quad holds one head's 16 positions
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float mn = fmaxf(m, mx);
        const float mr = mn == -JL_INF ? 0.0f : mn;  // nothing valid yet: everything stays 0
        const float corr = exp2f(m - mr);
        float pr[2][2], ps = 0.0f;
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                pr[j][i] = exp2f(sc[j][i] - mr);
                ps += pr[j][i];
            }
        l = l * corr + ps;
        m = mn;
#pragma unroll
        for (int t = 0; t < MNT; ++t) o[t][0] *= corr, o[t][1] *= corr;
        const uint32_t pa0 = pack_16x2<0>(pr[0][0], pr[0][1]), pa2 = pack_16x2<0>(pr[1][0], pr[1][1]);
#pragma unroll
        for (int t = 0; t < MNT; ++t) {
            const int x = t / 8, wi = (t % 8) / 2;
            const unsigned sel = (t & 1) ? 0x7632u : 0x5410u;  // high or low halves of the two rows
            const uint32_t b0 = __byte_perm(u4_word(vq[0][x], wi), u4_word(vq[1][x], wi), sel);
            const uint32_t b1 = __byte_perm(u4_word(vq[2][x], wi), u4_word(vq[3][x], wi), sel);
            mma_rows8(o[t][0], o[t][1], pa0, pa2, b0, b1);
        }
#if PIPE == 2
        if (more) mma_load_v(c_next);  // in flight during the next trip's S = Q K^T
#endif
#else
#if PIPE == 2
        // chunk c's K and V are in kw, vw already (loaded before the loop or during the last trip)
        const int c_next = c + N_SPLITS;
        const bool more = c_next <= c_hi;  // block-uniform
#elif PIPE
        // the block's next chunk goes out before this one is used (a second register set)
        uint4 kn[TILE], vn[TILE];
        const bool more = c + N_SPLITS <= c_hi;
        if (more) chunk_load(c + N_SPLITS, kn, vn);
#elif KV_STAGES
        {
            const int cn = c + (KV_STAGES - 1) * N_SPLITS;  // into the slot read one trip ago
            if (cn <= c_hi) ring_issue(cn, (it + KV_STAGES - 1) % KV_STAGES);
            cp_async_commit();
            cp_async_wait<KV_STAGES - 1>();  // this chunk's group (the newer ones may be in flight)
            const int st = it % KV_STAGES;
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                kw[t] = kv_ring[((st * 2 + 0) * TILE + t) * BLOCK + tid];
                vw[t] = kv_ring[((st * 2 + 1) * TILE + t) * BLOCK + tid];
            }
            ++it;
        }
#else
        chunk_load(c, kw, vw);
#endif
        float s[HPB][TILE];
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
#if KH2
            // four f16-pair FMAs (each lane of the pair sums four products), one f32 add of the pair
            const uint32_t u[4] = {kw[t].x, kw[t].y, kw[t].z, kw[t].w};
#pragma unroll
            for (int h = 0; h < HPB; ++h) {
                uint32_t a2 = hfma2(qr[h][0], u[0], 0u);
#pragma unroll
                for (int i = 1; i < VEC / 2; ++i) a2 = hfma2(qr[h][i], u[i], a2);
                s[h][t] = f16_lo(a2) + f16_hi(a2);
            }
#else
            float kf[VEC];
            kv_to_float(kw[t], kf);
#pragma unroll
            for (int h = 0; h < HPB; ++h) {
                float a = 0.0f;
#pragma unroll
                for (int i = 0; i < VEC; ++i) a += qr[h][i] * kf[i];
                s[h][t] = a;
            }
#endif
        }
#if PIPE == 2
        // K is used: the next chunk's K goes into its registers now, in flight during the
        // reduction, the softmax and the V sum (V's next rows follow the V sum)
        if (more) half_load(c_next, kb, kw);
#endif
        // sum the partial dots over the GS threads of each position group
        // XRED: transposed reduction: each halving exchange (lane distance GS/2, GS/4, ..) sends half of
        // a lane's remaining partial dots and adds the partner's other half, so after log2(TILE)
        // of them a lane holds one position (t_own = gl / XR) summed over GS / XR lanes; the
        // log2(XR) plain exchanges after that finish it. TILE - 1 + log2(XR) shuffles per head
        // instead of TILE * log2(GS); the softmax below then runs once per position, not per lane.
        float so[HPB];  // XRED: this lane's position's dot per head
#if REDUCE
        if constexpr (XRED) {
#pragma unroll
        for (int h = 0; h < HPB; ++h) {
            float a[TILE];
#pragma unroll
            for (int t = 0; t < TILE; ++t) a[t] = s[h][t];
#pragma unroll
            for (int n = TILE, off = GS / 2; n > 1; n >>= 1, off >>= 1) {
                const bool up = (gl & off) != 0;  // keeps the upper half
#pragma unroll
                for (int j = 0; j < n / 2; ++j) {
                    const float send = up ? a[j] : a[j + n / 2];
                    const float keep = up ? a[j + n / 2] : a[j];
                    a[j] = keep + __shfl_xor_sync(0xffffffffu, send, off);
                }
            }
#pragma unroll
            for (int off = XR / 2; off > 0; off >>= 1) a[0] += __shfl_xor_sync(0xffffffffu, a[0], off);
            so[h] = a[0];
        }
        } else {
#pragma unroll
        for (int h = 0; h < HPB; ++h)
#pragma unroll
            for (int t = 0; t < TILE; ++t)
#pragma unroll
                for (int off = GS / 2; off > 0; off >>= 1)
                    s[h][t] += __shfl_xor_sync(0xffffffffu, s[h][t], off);
        }
#else
#pragma unroll
        for (int h = 0; h < HPB; ++h)
#pragma unroll
            for (int t = 0; t < TILE; ++t) red[(h * TILE + t) * BLOCK + tid] = s[h][t];
        __syncthreads();
#pragma unroll
        for (int h = 0; h < HPB; ++h)
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const float* r = red + (h * TILE + t) * BLOCK + gi * GS;
                float a = 0.0f;
#pragma unroll 8
                for (int j = 0; j < GS; ++j) a += r[j];  // same order in every thread
                s[h][t] = a;
            }
        __syncthreads();
#endif
        if constexpr (XRED) {
        // online softmax update, one position per lane: the tile maximum over the group's lanes,
        // this lane's weight, the weights broadcast for the V sum. No branch on "nothing valid
        // yet" (every lane of the warp must reach the shuffles): mr = 0 then, and all stays 0.
        // l holds this lane's own positions' weights (summed over the group after the loop).
        {
            const int t_own = gl / XR;
            const int p = p0 + t_own * NG + gi;
            const bool valid = p >= first && p < end;
#pragma unroll
            for (int h = 0; h < HPB; ++h) {
                const float sv = valid ? so[h] : -JL_INF;
                float mt = sv;
#pragma unroll
                for (int off = GS / 2; off >= XR; off >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
                const float mn = fmaxf(m[h], mt);
                const float mr = mn == -JL_INF ? 0.0f : mn;
                const float corr = exp2f(m[h] - mr);  // 0 when m was -inf
                const float pw = exp2f(sv - mr);      // 0 for an invalid position
                l[h] = l[h] * corr + pw;
#pragma unroll
                for (int i = 0; i < VEC; ++i) o[h][i] *= corr;
#if VH2
                // the tile's weighted V rows summed in f16 pairs (the weights rounded to f16), then
                // added to the f32 output once per tile: no per-position f16 -> f32 conversion
                uint32_t va[VEC / 2];
#pragma unroll
                for (int i = 0; i < VEC / 2; ++i) va[i] = 0u;
                const uint32_t pw2 = pack_16x2<0>(pw, pw);  // this lane's weight as an f16 pair, once
#pragma unroll
                for (int t = 0; t < TILE; ++t) {
                    const uint32_t p2 = __shfl_sync(0xffffffffu, pw2, t * XR, GS);  // (the same bits as packing the broadcast)
                    const uint32_t u[4] = {vw[t].x, vw[t].y, vw[t].z, vw[t].w};
#pragma unroll
                    for (int i = 0; i < VEC / 2; ++i) va[i] = hfma2(p2, u[i], va[i]);
                }
#pragma unroll
                for (int i = 0; i < VEC / 2; ++i) {
                    o[h][2 * i] += f16_lo(va[i]);
                    o[h][2 * i + 1] += f16_hi(va[i]);
                }
#else
#pragma unroll
                for (int t = 0; t < TILE; ++t) {
                    const float pt = __shfl_sync(0xffffffffu, pw, t * XR, GS);
                    float vf[VEC];
                    kv_to_float(vw[t], vf);
#pragma unroll
                    for (int i = 0; i < VEC; ++i) o[h][i] += pt * vf[i];
                }
#endif
                m[h] = mn;
            }
        }
        } else {
        // online softmax update: all GS threads of a group hold identical s, m, l
#pragma unroll
        for (int h = 0; h < HPB; ++h) {
            float mt = -JL_INF;
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const int p = p0 + t * NG + gi;
                const bool valid = p >= first && p < end;
                s[h][t] = valid ? s[h][t] : -JL_INF;
                mt = fmaxf(mt, s[h][t]);
            }
            const float mn = fmaxf(m[h], mt);
            if (mn == -JL_INF) continue;  // nothing valid yet
            const float corr = exp2f(m[h] - mn);  // 0 when m was -inf
            l[h] *= corr;
#pragma unroll
            for (int i = 0; i < VEC; ++i) o[h][i] *= corr;
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const float pw = exp2f(s[h][t] - mn);  // 0 for invalid positions
                float vf[VEC];
                kv_to_float(vw[t], vf);
                l[h] += pw;
#pragma unroll
                for (int i = 0; i < VEC; ++i) o[h][i] += pw * vf[i];
            }
            m[h] = mn;
        }
        }
#if PIPE == 2
        if (more) half_load(c_next, vb, vw);  // in flight during the next trip's dot products
#elif PIPE
        if (more) {
#pragma unroll
            for (int t = 0; t < TILE; ++t) kw[t] = kn[t], vw[t] = vn[t];
        }
#endif
#endif  // MMA
    }

#if MMA
    l += __shfl_xor_sync(0xffffffffu, l, 1);  // the quad's positions
    l += __shfl_xor_sync(0xffffffffu, l, 2);
#else
    if constexpr (XRED) {
    // each lane's l holds its own positions' weights: the group's sum (lanes at distance < XR
    // hold the same positions, so only distances >= XR are added)
#pragma unroll
    for (int h = 0; h < HPB; ++h)
#pragma unroll
        for (int off = GS / 2; off >= XR; off >>= 1) l[h] += __shfl_xor_sync(0xffffffffu, l[h], off);
    }
#endif

    // merge the NG group states, MRG_H query heads per round: every group's (o, m, l) into
    // shared memory, one thread per (head, group) for its weight 2^(m_g - M), then every
    // output dim of the round's heads in parallel (groups in order)
    constexpr int ROW = HEAD_DIM + 2;
    // a partial state in scratch; MMA: 16-byte rows for the float4 merge below (the SIMT kernel keeps
    // HEAD_DIM + 2 and the scalar merge: with the float4 one, H200 8B Q8_0 tg128 at depth 4096 fell
    // 379.1 -> 369.2, session 9; MMA at 16 splits rose 362.9 -> 368.3)
    constexpr int SROW = MMA ? HEAD_DIM + 4 : HEAD_DIM + 2;
    __shared__ __align__(16) float cst[CLUSTER ? HPB * SROW : 1];  // CLUSTER: this block's state
    (void)cst;
#if MERGE_WARP
    // groups gi ^ (off / GS) of a warp hold the same dims: merge pairwise at lane distance
    // GS, 2 GS, .. 16 (every lane ends with its warp's state), then one writer group per warp
#pragma unroll
    for (int off = GS; off < 32; off *= 2) {
#pragma unroll
        for (int h = 0; h < HPB; ++h) {
            const float mo = __shfl_xor_sync(0xffffffffu, m[h], off);
            const float lo = __shfl_xor_sync(0xffffffffu, l[h], off);
            const float mm = fmaxf(m[h], mo);
            const float a = m[h] == -JL_INF ? 0.0f : exp2f(m[h] - mm);
            const float b = mo == -JL_INF ? 0.0f : exp2f(mo - mm);
            l[h] = l[h] * a + lo * b;
#pragma unroll
            for (int i = 0; i < VEC; ++i) {
                const float oo = __shfl_xor_sync(0xffffffffu, o[h][i], off);
                o[h][i] = o[h][i] * a + oo * b;
            }
            m[h] = mm;
        }
    }
    const int gm = tid / 32;                 // this thread's state slot: its warp
    const bool writer = (tid % 32) < GS;     // the warp's first group writes it
#else
    const int gm = gi;
    const bool writer = true;
#endif
#pragma unroll
    for (int h0 = 0; h0 < HPB; h0 += MRG_H) {
#pragma unroll
        for (int hh = 0; hh < MRG_H; ++hh) {
            if (h0 + hh >= HPB) break;
#if MMA
            // the lanes of head h0 + hh write their warp's state (state slot: the warp)
            if (mg != h0 + hh) continue;
            float* st = mrg + (hh * NGM + wp) * ROW;
#pragma unroll
            for (int t = 0; t < MNT; ++t) {
                st[VD(2 * mc, t)] = o[t][0];
                st[VD(2 * mc + 1, t)] = o[t][1];
            }
            if (mc == 0) {
                st[HEAD_DIM] = m;
                st[HEAD_DIM + 1] = l;
            }
#else
            if (!writer) continue;
            float* st = mrg + (hh * NGM + gm) * ROW;
#pragma unroll
            for (int i = 0; i < VEC; ++i) st[gl * VEC + i] = o[h0 + hh][i];
            if (gl == 0) {
                st[HEAD_DIM] = m[h0 + hh];
                st[HEAD_DIM + 1] = l[h0 + hh];
            }
#endif
        }
        __syncthreads();
        const int nh = min(MRG_H, HPB - h0);
        for (int idx = tid; idx < nh * NGM; idx += BLOCK) {
            const int hh = idx / NGM;
            float M = -JL_INF;
            for (int g = 0; g < NGM; ++g) M = fmaxf(M, mrg[(hh * NGM + g) * ROW + HEAD_DIM]);
            const float m_g = mrg[idx * ROW + HEAD_DIM];
            wgt[idx] = m_g == -JL_INF ? 0.0f : exp2f(m_g - M);  // 0 for empty groups
        }
        __syncthreads();
        for (int idx = tid; idx < nh * HEAD_DIM; idx += BLOCK) {
            const int hh = idx / HEAD_DIM, d = idx % HEAD_DIM;
            float M = -JL_INF, L = 0.0f, O = 0.0f;
            for (int g = 0; g < NGM; ++g) {
                const float* st = mrg + (hh * NGM + g) * ROW;
                M = fmaxf(M, st[HEAD_DIM]);
                L += st[HEAD_DIM + 1] * wgt[hh * NGM + g];
                O += st[d] * wgt[hh * NGM + g];
            }
            const int hq = hb + h0 + hh;
            if (ALGO == 2 && n_active > 1) {
                // the block's state: scratch in global memory, or (CLUSTER) its own shared memory
                float* sc = CLUSTER ? cst + (h0 + hh) * SROW : scratch + ((unsigned long long)hq * N_SPLITS + blockIdx.y) * SROW;
                sc[d] = O;
                if (d == 0) {
                    sc[HEAD_DIM] = M;
                    sc[HEAD_DIM + 1] = L;
                }
            } else {
                put(hq * HEAD_DIM + d, O / L);  // L > 0: an active block has a position in range
            }
        }
        __syncthreads();  // mrg is rewritten by the next round
    }
#if ALGO == 2
    // More than one active block: the last of this kv head's (and head set's) blocks to finish (a
    // ticket from an atomic counter per block x) combines the n_active partial states of its HPB
    // query heads: out = sum_s w_s o_s / sum_s w_s l_s, w_s = 2^(m_s - max m); it then resets the
    // counter for the next launch.
    if (n_active == 1) return;
    // out = sum_s w_s o_s / sum_s w_s l_s over the active splits for DV dims (common/attn_split.cuh
    // merge_dv: get(sp, i) reads split sp's value i, i < DV the dims, DV its m_s, DV + 1 its l_s) into
    // outputs o .. o + DV - 1
    auto combine = [&](auto get, int o, auto dv_tag) {
        constexpr int DV = decltype(dv_tag)::value;
        float O[DV];
        merge_dv<N_SPLITS, DV>(get, n_active, O);
#pragma unroll
        for (int i = 0; i < DV; ++i) put(o + i, O[i]);
    };
    (void)combine;
#if CLUSTER
    // the cluster (1 x N_SPLITS blocks: rank = blockIdx.y) combines through distributed shared
    // memory: every state is in its block's cst after the barrier; block r writes items
    // [r * PER, (r + 1) * PER) of the HPB x HEAD_DIM outputs (XQ_OUT: whole groups of 32); the second
    // barrier keeps every block (and its shared memory) until the last read
    cluster_barrier();
    {
        constexpr int ITEMS = HPB * HEAD_DIM;
        constexpr int PER = XQ_OUT ? (ITEMS / 32 + N_SPLITS - 1) / N_SPLITS * 32 : (ITEMS + N_SPLITS - 1) / N_SPLITS;
        for (int j = tid; j < PER; j += BLOCK) {
            const int idx = (int)blockIdx.y * PER + j;
            if (idx < ITEMS) {
                const int h = idx / HEAD_DIM, d = idx % HEAD_DIM;
                const unsigned a_o = smem_addr(cst + h * SROW + d), a_m = smem_addr(cst + h * SROW + HEAD_DIM);
                combine([&](int sp, int i) { return ld_cluster_f32(i == 0 ? a_o : i == 1 ? a_m : a_m + 4, sp); },
                        (hb + h) * HEAD_DIM + d, IntTag<1>());
            }
        }
    }
    cluster_barrier();
    return;
#endif
    __shared__ bool last;
    // the block's scratch writes (ordered before thread 0's fence by the barrier, the fence being
    // cumulative) are visible before its ticket: one release fence a block, not a sequentially
    // consistent fence in every thread (Nsight Compute: 3 % of the kernel's stall samples there)
    __syncthreads();
    if (tid == 0) {
        fence_acq_rel_gpu();
        last = atomicAdd(tickets + bx, 1u) == (unsigned)n_active - 1u;
        if (last) fence_acq_rel_gpu();  // acquire: the other blocks' states, read after the barrier
    }
    __syncthreads();
    if (!last) return;
    if constexpr (MERGE1 && N_SPLITS <= 16) {
    // MERGE1, one round trip: each thread loads its dims' partial outputs of every active split together
    // with the splits' (m_s, l_s) (the same addresses across a warp: broadcast)
    constexpr int DV = MMA ? 4 : 1;  // dims per thread (MMA: float4 loads of its 16-byte rows)
    for (int idx = tid; idx < HPB * HEAD_DIM / DV; idx += BLOCK) {
        const int h = idx / (HEAD_DIM / DV), d = DV * (idx % (HEAD_DIM / DV));
        const float* sc = scratch + (unsigned long long)(hb + h) * N_SPLITS * SROW;
        if constexpr (DV == 4) {
            float4 xo[N_SPLITS];
#pragma unroll
            for (int sp = 0; sp < N_SPLITS; ++sp)
                if (sp < n_active) xo[sp] = __ldcg(reinterpret_cast<const float4*>(sc + sp * SROW + d));
            combine([&](int sp, int i) {
                        return i == 0 ? xo[sp].x : i == 1 ? xo[sp].y : i == 2 ? xo[sp].z : i == 3 ? xo[sp].w
                               : __ldcg(sc + sp * SROW + HEAD_DIM + i - DV);
                    },
                    (hb + h) * HEAD_DIM + d, IntTag<DV>());
        } else {
            combine([&](int sp, int i) { return __ldcg(sc + sp * SROW + (i == 0 ? d : HEAD_DIM + i - 1)); },
                    (hb + h) * HEAD_DIM + d, IntTag<1>());
        }
    }
    } else {
        // (m_s, l_s) of every split read once, in parallel; the per-head loop below touches only
        // shared memory (it used to re-read l_s from L2 split by split, one latency per split)
        __shared__ float wsm[HPB * N_SPLITS], lss[HPB * N_SPLITS], lsm[HPB];
        for (int idx = tid; idx < HPB * n_active; idx += BLOCK) {
            const int h = idx / n_active, sp = idx % n_active;
            const float* st = scratch + ((unsigned long long)(hb + h) * N_SPLITS + sp) * SROW;
            wsm[h * N_SPLITS + sp] = __ldcg(st + HEAD_DIM);  // m_s for now
            lss[h * N_SPLITS + sp] = __ldcg(st + HEAD_DIM + 1);
        }
        __syncthreads();
        if (tid < HPB) {
            float* w = wsm + tid * N_SPLITS;
            float M = -JL_INF;
            for (int sp = 0; sp < n_active; ++sp) M = fmaxf(M, w[sp]);
            float L = 0.0f;
            for (int sp = 0; sp < n_active; ++sp) {
                const float wgt = exp2f(w[sp] - M);
                L += lss[tid * N_SPLITS + sp] * wgt;
                w[sp] = wgt;
            }
            lsm[tid] = L;
        }
        __syncthreads();
        if constexpr (!MMA) {
        for (int idx = tid; idx < HPB * HEAD_DIM; idx += BLOCK) {
            const int h = idx / HEAD_DIM, d = idx % HEAD_DIM;
            const float* sc = scratch + (unsigned long long)(hb + h) * N_SPLITS * SROW + d;
            float O = 0.0f;
#pragma unroll 8
            for (int sp = 0; sp < n_active; ++sp) O += __ldcg(sc + sp * SROW) * wsm[h * N_SPLITS + sp];
            put((hb + h) * HEAD_DIM + d, O / lsm[h]);
        }
        } else {
        // MMA: four dims per thread (16-byte loads, up to 16 splits' in flight at once)
        for (int idx = tid; idx < HPB * HEAD_DIM / 4; idx += BLOCK) {
            const int h = idx / (HEAD_DIM / 4), d = 4 * (idx % (HEAD_DIM / 4));
            const float* sc = scratch + (unsigned long long)(hb + h) * N_SPLITS * SROW + d;
            float4 O = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 16
            for (int sp = 0; sp < n_active; ++sp) {
                const float4 x = __ldcg(reinterpret_cast<const float4*>(sc + sp * SROW));
                const float w = wsm[h * N_SPLITS + sp];
                O.x += x.x * w, O.y += x.y * w, O.z += x.z * w, O.w += x.w * w;
            }
            const float L = lsm[h];
            *reinterpret_cast<float4*>(out + (hb + h) * HEAD_DIM + d) = make_float4(O.x / L, O.y / L, O.z / L, O.w / L);
        }
        }
    }
    if (tid == 0) tickets[bx] = 0u;
#endif
    (void)out;
    (void)scratch;
    (void)seq_ptr;
    (void)tickets;
}
