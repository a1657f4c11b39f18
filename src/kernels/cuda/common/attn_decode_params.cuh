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
//   N_CTX (cache rows; ALGO 2 without WINDOW: block 0 then loads chunk 0 together with the
//   position and q instead of one round trip after the position),
//   HPB (query heads per block, a divisor of N_HEADS/N_KV_HEADS; default all of them): block x
//   serves kv head x / (QPG / HPB), query heads HPB * (x % (QPG / HPB)) .. of its group
//   KV_STAGES (0 default; N >= 2, ALGO 2, KV_LOAD 16, sm_80+; tune attn.kv_stages): K/V chunks
//   through an N-deep ring in dynamic shared memory (smem = N * 2 * TILE * BLOCK * 16 bytes) filled
//   by per-thread 16-byte cp.async, N - 1 chunks in flight; no chunk-0 preload
//   VH2 (0 default; 1: gate attn.vsum=half2, REDUCE=1, half cache, KV_LOAD 16, transposed
//   reduction): each lane sums a tile's p_t v_t in f16 pairs (fma.rn.f16x2; p_t rounded to f16,
//   at most TILE terms, each p_t <= 1) and adds the pairs to its f32 output once per tile: 4
//   f16x2 FMAs per position instead of 8 conversions and 8 FMAs (HEAD_DIM 128)
//   MERGE1 (0 default; 1: the schedule's default for N_SPLITS <= 16): the last block of a ticketed
//   split-KV launch loads every split's (o, m, l) at once (one L2 round trip) instead of (m, l)
//   first and o after (two); the same operations in the same order
//   PIPE (0 default; the schedule passes 2 for the split kernel unless attn.pipe says otherwise;
//   1: a block's next chunk (c + N_SPLITS) is loaded into a second register set before chunk c is
//   used, so blocks with several chunks (long contexts) keep loads in flight during their dot
//   products; 2 x TILE x KV_LOAD x 2 bytes of registers more per thread; 2: no second set: the next
//   chunk's K rows are loaded into K's registers as soon as this chunk's dot products have used
//   them, its V rows into V's after the V sum, so each load is in flight during the other half's
//   work)
//   EARLY_KV (0 default; 1: gate attn.early=kv; below)
//   XQ_OUT (0 default; 1: gate gemv.xq=producer, ALGO 2, not BATCH): every output is also written
//   quantized to Q8_0 blocks at xq, in the layout the next gemv's x prologue builds
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
#define CH (NG * TILE)                          // positions per chunk (one loop trip)
#define RED_FLOATS (REDUCE ? 1 : HPB * TILE * BLOCK)
#define NGM NG                                  // group states merged through shared memory
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
#ifndef PIPE  // 1: a block's next chunk is loaded before its current one is used (attn.pipe)
#define PIPE 0
#endif
#ifndef BATCH  // 1: query row blockIdx.z of a batch step, at pos_ptr[row] in sequence seq_ptr[row]
#define BATCH 0
#endif
#ifndef KV_STAGES  // > 0 (ALGO 2, KV_LOAD 16, sm_80+): K/V chunks through a KV_STAGES-deep cp.async ring
#define KV_STAGES 0
#endif
#ifndef VH2  // 1 (gate attn.vsum=half2): a tile's weighted V rows summed in f16 pairs (XRED path)
#define VH2 0
#endif
#if VH2 && !REDUCE
#error "VH2: the transposed reduction (REDUCE=1)"
#endif
#ifndef MERGE1  // 1 (the schedule's default up to 16 splits): the last block reads the splits' states in one round trip
#define MERGE1 0
#endif
// XRED (REDUCE=1, TILE a power of two in 2..GS): the transposed reduction below (one position per
// lane after it); otherwise every lane of a group reduces every position (TILE x log2(GS) shuffles)
#define XR (GS / TILE)
#define XRED (REDUCE && TILE >= 2 && TILE <= GS && (TILE & (TILE - 1)) == 0)  // for if constexpr (GS: sizeof)
#if KV_STAGES && (ALGO != 2 || PIPE)
#error "KV_STAGES: split-KV (ALGO 2) only, and instead of PIPE"
#endif
// ALGO 2 without a window: block 0 loads chunk 0 before reading the position (N_CTX bounds it)
// EARLY_KV=1 (gate attn.early=kv; the split kernel, PIPE 2, no window, not BATCH): every block reads
// the position and loads its first chunk's K/V rows before the PDL wait, while the q/k/v kernel
// still runs; only the current position's row (that kernel's store) is read after the wait.
// PRECOND (the host's step order): *pos_ptr and the cache rows before it are final before the
// kernel starts (the position arrives by a copy before the step's launches or graph, every earlier
// step has completed); replaces PRELOAD.
#ifndef EARLY_KV
#define EARLY_KV 0
#endif
#if XQ_OUT && (ALGO != 2 || BATCH || HEAD_DIM % 32 != 0 || BLOCK % 32 != 0)
#error "XQ_OUT: the split kernel of one query row (warps write whole groups of 32 outputs)"
#endif
#if EARLY_KV && (ALGO != 2 || WINDOW != 0 || BATCH || KV_STAGES || PIPE != 2)
#error "EARLY_KV: the split kernel with PIPE 2; no window, no batch, no KV_STAGES ring"
#endif
#if ALGO == 2 && WINDOW == 0 && defined(N_CTX) && !KV_STAGES && !EARLY_KV
#define PRELOAD 1
#else
#define PRELOAD 0
#endif
#if BATCH && (ALGO != 1 || !defined(N_CTX) || !defined(KV_BLOCK) || !defined(KV_BPS))
#error "BATCH needs ALGO 1 (one pass), N_CTX, KV_BLOCK and KV_BPS (the paged pool's block size and table length)"
#endif
#if BATCH && PIPE == 2
#error "BATCH: positions through the block table (PIPE 2 reads a chunk's rows as consecutive)"
#endif

static_assert(N_HEADS % N_KV_HEADS == 0, "GQA: whole groups");
static_assert(HPB >= 1 && QPG % HPB == 0, "HPB: a divisor of the query heads per kv head");
static_assert(HEAD_DIM % VEC == 0 && GS <= 32 && (GS & (GS - 1)) == 0, "HEAD_DIM / VEC: power of two <= 32");
static_assert((KV_LOAD == 16 || KV_LOAD == 8) && VEC % 4 == 0, "KV_LOAD: 16 or 8 bytes, >= 4 dims");
static_assert(BLOCK % GS == 0 && BLOCK % 32 == 0, "BLOCK: whole position groups and warps");
static_assert(!VH2 || (KV_LOAD == 16 && sizeof(KV_T) == 2), "VH2: a half cache read 16 bytes at a time");  // (sizeof: not in #if)
