// attention_decode.cu's defines: what each one means, its default and the combinations it
// allows (the schedule sets the ones it uses). Included by attention_decode.cu after its common
// headers; device code only.
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
#pragma once

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
