// gemv.cu's defines: what each one means and its default (the schedule sets the ones it uses;
// gemm.cu shares the fusion parameters through matmul_defines.cuh). Included by gemv.cu after
// matmul_defines.cuh; device code only.
//
// params:
//   WTYPE           F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K (quant_blocks.cuh)
//   COLS            K, the length of x. PRECOND: multiple of the block size (32 / 256)
//   ROWS0..2, N_MAT rows per matrix (ROWS1/ROWS2 only for N_MAT >= 2/3); ROWS = ROWS0 alias
//   BLOCK           threads per block (multiple of 32; power of two when REDUCE=0)
//   ROWS_PER_BLOCK  output rows a block handles per pass: (BLOCK/32) warps x R rows each
//                   (REDUCE=1; R = ROWS_PER_BLOCK / (BLOCK/32)), or all R by the whole block
//                   (REDUCE=0). A warp reads R (2R for EPI=2) rows at once, sharing x loads.
//   REDUCE          1: a warp per R rows, shuffle reduction. 0: the block per R rows, shared-
//                   memory tree (no shuffles). Both correct for any shape.
//   X_SMEM          1: x (normalised) staged in dynamic shared memory (COLS * 4 bytes).
//                   0: x read through L1 (ld_act), normalised on the fly. Any COLS.
//                   Q4_0 / Q8_0 (GEMV_XQ8, gemv_dot.cuh): ignored; x (normalised) is quantized
//                   to Q8_0 blocks in dynamic shared memory (COLS * 1.25 bytes) and the
//                   products are dp4a integer sums, as quant.h dot_rows_act_q8
//   NORM_IN, HAS_BIAS, EPI, RES_SCALE, OUT_SCALE, UP_OFFSET_ROWS   as above (0 when unused)
//   WSPLIT          1: Q4_0/Q8_0 rows in the split device layout (quant.h: quants, then f16
//                   scales; COLS % 256 == 0): one 16-byte quant load per lane, no staging;
//                   GEMV_SPLIT_PIPE=1 pipelines the loads one step ahead, GEMV_SPLIT_U units
//                   per lane and step (gemv_dot_split.cuh)
//   EARLY_LOAD      1: each group's first weight step (plain types with COLS % 8 == 0, the
//                   unpipelined split layout) is loaded before the PDL wait and the x prologue,
//                   so with PDL the weight stream starts while the previous kernel drains;
//                   other types ignore it. Default 0
//   BULK            1 (sm_90, gate gemv.load=bulk; split-layout Q4_0/Q8_0, or plain types with
//                   X_SMEM=1; REDUCE=1, decode): the
//                   weights do not pass through registers: each warp streams its items (a pass's
//                   GEMV_DR rows, BULK_CH columns at a time: quants, then scales) into its own ring
//                   of BULK_S shared-memory slots with cp.async.bulk copies completing on one
//                   mbarrier per slot; the first BULK_PRE items go out before the PDL wait and the x
//                   prologue, the ring's other BULK_S - BULK_PRE after the prologue.
//                   Dynamic smem: BULK_XBYTES (x) + BLOCK / 32 * BULK_S * BULK_SLOT
//   BULK_PRE        BULK: ring slots each warp fills before the PDL wait (default BULK_S; the
//                   schedule's 4 of 5 for Q4_0, gemv.early_slots): fewer copies queued ahead of
//                   the prologue's x loads in the memory system
//   BULK_PRE_B      BULK: blocks 0 .. BULK_PRE_B - 1 fill their whole ring before the PDL wait, the others
//                   BULK_PRE slots (gemv.early_blocks.KIND). Blocks land in index order: the first ones
//                   on the SMs that the kernel before leaves first (8B Q4_0 gate/up: the 56 SMs beside
//                   attn_output's 76), microseconds before its end, when their x prologue does not wait
//                   behind those copies; the late ones keep x close to the front of their SM's queue.
//                   0 = off (default)
//   NW_EARLY        1 (gemv.norm_early; NORM_IN, Q4_0 / Q8_0, x in one chunk of the prologue): the norm
//                   weight's loads before the PDL wait (a weight), only x's after it. Default 0
//   KV_PF           EPI=4, BULK, decode (kv.l2_prefetch): the K and V cache rows 0..*pos_ptr-1
//                   (earlier steps' rows, read by the attention kernel that follows) are prefetched
//                   into L2 in one cp.async.bulk.prefetch per warp and cache (each warp an equal
//                   share), so attention at depth reads them from L2. 1: at the kernel's start
//                   (before the PDL wait: PRECOND the position is final before the step's first
//                   kernel, as attention_decode.cu EARLY_KV); 2: once the warp's last weight copy is
//                   out (the stream's tail, when DRAM has room). 0 = off (default)
//   XREG            BULK, split-layout Q4_0 / Q8_0, one activation row: each lane keeps its x units of
//                   every chunk in registers (loaded once after the x prologue; gemv_dot_split.cuh
//                   bulk_dot_xr), so an item reads only its weights from shared memory. The same
//                   bits. Set by the schedule where a lane's units take <= ~40 registers
//                   (gemv.x_regs=off: never); 0 = off
//   PREFETCH        bytes of each row of the block's first pass to prefetch into L2 before the
//                   x prologue (and before the PDL wait); 0 = off (default)
//   PDL             1: griddepcontrol wait/launch_dependents (sm_90, common.cuh); default 0
//   TRIGGER_EARLY   PDL: launch_dependents at the kernel's start (default: when each warp's last
//                   weight load is out), so the next kernel's blocks take the room this one's leave
//                   on each SM (with rings small enough for two blocks: gemv.bulk_kb) and start
//                   their weight copies while this one streams; the next kernel's pdl_wait still
//                   waits for this one's completion
//   WARP_MAJOR      1: row sets of a pass assigned group-major (group g of block b takes set g * blocks
//                   + b), so a last, partial pass spreads over every block; 0: block-major (default)
//   ARGMAX          1 (gate sample.fuse=gemv; N_MAT 1, EPI 0 or 3, REDUCE 1, decode): the greedy pick
//                   too: each thread keeps the best (value, row) it wrote as one 64-bit key (the
//                   value's order-preserving bits, then ~row: the lowest row on ties; NaN never,
//                   -0 as +0: as cpu::argmax), the block's best goes to a grid-wide atomicMax, and
//                   the last block (atomic ticket) writes the row as the token and zeroes the key and
//                   the ticket for the next replay. y1: 16 bytes of scratch (u64 key, u32 ticket;
//                   zeroed when allocated), y2: the int token out. No pick (all NaN): token 0.
//                   ARGMAX_ADVANCE (gate step.advance=device): that block also writes the token to
//                   the token slot (the k_cache argument) and to the host's pinned ring at *pos_ptr % 4
//                   (the v_cache argument), and adds one to *pos_ptr (the position slot)
//   XROWS           batch steps (gate batch.small, batch.xrows; split-layout Q4_0/Q8_0, REDUCE=1, no
//                   BULK / ROWS_INNER / EPI 4 / ARGMAX / early load): each block multiplies the
//                   weight rows it reads with up to XROWS activation rows, rows GEMV_BY * XROWS + j for
//                   j < min(XROWS, n_rows - GEMV_BY * XROWS) (n_rows: an extra int argument, the step's
//                   rows), their int8 copies side by side in dynamic shared memory (XROWS * COLS * 5 / 4
//                   bytes), so the step's rows read each weight once instead of once a row. Default 1
//   MIN_BLOCKS      __launch_bounds__ minimum resident blocks per SM (caps registers); unset
//                   by default (setting it, even to 1, changes ptxas's register heuristics)
#pragma once

#ifndef ROWS_INNER  // batch steps: blocks per row group (grid.x = ROWS_INNER x rows, rows innermost); 0: grid.y = rows
#define ROWS_INNER 0
#endif
#ifndef WARP_MAJOR  // 1: a pass's row sets go to group 0 of every block first (GEMV_O_FIRST)
#define WARP_MAJOR 0
#endif
#ifndef EARLY_LOAD  // 1: the first weight step before the PDL wait (plain types, split layout)
#define EARLY_LOAD 0
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif
#ifndef ARGMAX  // 1: the greedy pick over the written rows (gate sample.fuse=gemv)
#define ARGMAX 0
#endif
#ifndef ARGMAX_ADVANCE
#define ARGMAX_ADVANCE 0
#endif
#if ARGMAX_ADVANCE && !ARGMAX
#error "ARGMAX_ADVANCE: with ARGMAX"
#endif
#if ARGMAX && (N_MAT != 1 || (EPI != 0 && EPI != 3) || !REDUCE || ROWS_INNER)
#error "ARGMAX: one matrix, EPI 0 or 3, REDUCE=1, decode (one activation row)"
#endif
#if ARGMAX
#include "common/pick_key.cuh"  // (value, row) as one key ordered as cpu::argmax's "better"
#endif
#ifdef MIN_BLOCKS  // only when asked: a minimum changes ptxas's register heuristics
#define GEMV_LAUNCH_BOUNDS __launch_bounds__(BLOCK, MIN_BLOCKS)
#else
#define GEMV_LAUNCH_BOUNDS __launch_bounds__(BLOCK)
#endif

#ifndef BULK
#define BULK 0
#endif
#ifndef TRIGGER_EARLY
#define TRIGGER_EARLY 0
#endif
#ifndef BULK_PRE  // BULK: ring slots each warp fills before the PDL wait (gemv.early_slots); the rest
#define BULK_PRE BULK_S  // after the x prologue
#endif
#ifndef BULK_PRE_B  // BULK: blocks below this fill every ring slot before the PDL wait (gemv.early_blocks.KIND)
#define BULK_PRE_B 0
#endif
#ifndef BULK_FILL_AT_LOADS  // 1 (gemv.fill_at_loads): the late slots as soon as the x prologue's loads are
#define BULK_FILL_AT_LOADS 0  // issued (split-layout Q4_0 / Q8_0, one activation row), not after the prologue
#endif
#ifndef KV_PF  // EPI=4 + BULK: earlier K/V cache rows into L2 (1: at the start, 2: after the last weight copy)
#define KV_PF 0
#endif
#if KV_PF && !(EPI == 4 && BULK)
#error "KV_PF: the q/k/v gemv with RoPE and the KV store (EPI=4), bulk rings"
#endif
#ifndef XQ_OUT  // gate gemv.xq=producer, EPI=2: the output also quantized to Q8_0 blocks for the next gemv
#define XQ_OUT 0    // (y1, in its XQ_IN layout), each group of 32 rows completed across a cluster of XQ_CL blocks
#endif
#ifndef XQ_NORM  // XQ_OUT with EPI=1 (gemv.xq_norm): the next gemv RMS-normalises its x (the residual stream this
#define XQ_NORM 0   // one writes) first: each output times norm_w (that gemv's norm weight; NORM_IN is 0 here) is
#endif              // quantized with d unrounded, and each group's sum of squares stored (xq8_group_store_norm)
#ifndef XQ_CL  // XQ_OUT: blocks a cluster whose rows of a pass are a group of 32 (1: a block's own)
#define XQ_CL 1
#endif
#ifndef XQ_LAG  // XQ_OUT: unit u quantized after the leader's unit u + XQ_LAG (gemv.xq_lag)
#define XQ_LAG 1
#endif
#ifndef XQ_IN   // gate gemv.xq=producer: x arrives quantized by the previous gemv (XQ_OUT); one bulk copy
#define XQ_IN 0
#endif
#ifndef NW_EARLY  // gemv.norm_early: NORM_IN's norm weight loaded before the PDL wait (the x prologue's one-chunk path)
#define NW_EARLY 0
#endif
