// The variants kernels_vs_cpu_test runs every case under: the defaults, each gate's sibling, the
// tuning knobs at values that exercise their loops.
#pragma once

#include <map>
#include <string>

#include "backends/cuda/schedule.h"

namespace jitllm::test {

// A variant: the schedule options of a backend (designated initializers: only what differs from
// the defaults); attn_heads_per_block = kAllHeads: all of a case's query heads per kv head.
constexpr int kAllHeads = -1;
struct OptionSet {
    const char* name;
    ScheduleOptions s;
    // gates whose chosen side needs sm_90 (cp.async.bulk, tensor maps): not built for older targets
    bool sm90() const {
        auto it = s.force.find("gemv.load");
        auto kv = s.force.find("attn.kv");
        return (it != s.force.end() && it->second == "bulk") || (kv != s.force.end() && kv->second == "tma");
    }
};

using Force = std::map<std::string, std::string>;
// the non-gated side of every gate (and the measured defaults' siblings)
const Force kSiblings = {{"gemv.reduce", "tree"}, {"norm.reduce", "tree"}, {"attn.algo", "onepass"},
                         {"sample.reduce", "tree"}, {"weights.layout", "blocks"}, {"launch.pdl", "serial"},
                         {"rope.angles", "computed"}, {"rope.fuse", "kernel"}, {"gemv.early", "wait"},
                         {"gemv.grid", "full"}, {"gemv.load", "lanes"}, {"attn.early", "wait"}, {"attn.kv", "ld"},
                         {"gemv.xq", "block"}};
// (the register kernel unless a variant forces attn.kv: the `attn-tma` variants take the tensor-map
// kernel, the sm_90 default beyond 256 positions of context, which the ungated variants run there)
// every decode gemv on at most n blocks (several passes a block)
std::map<std::string, int> grid_cap(int n) {
    return {{"attn_norm", n}, {"attn_output", n}, {"ffn_norm", n}, {"ffn_down", n}, {"output_norm", n}};
}
const std::map<std::string, int> kGrid2 = grid_cap(2), kGrid3 = grid_cap(3), kGrid8 = grid_cap(8);
Force gated(Force more) {
    more.emplace("attn.algo", "split");
    more.emplace("attn.kv", "ld");
    return more;
}

// The defaults (rope table + RoPE in the q/k/v gemv, early first load and grid cap where their
// gates pick them, one query head per split-attention block; gemv.load=bulk only from 4096
// columns, so forced here) and each gate's sibling; the tuning knobs at values that exercise
// their loops.
const OptionSet kVariants[] = {
    {"gated+fused", {.force = gated({})}},
    {"gated+fused+rope-kernel", {.force = gated({{"rope.fuse", "kernel"}})}},
    {"gated+fused+computed-angles", {.force = gated({{"rope.angles", "computed"}, {"rope.fuse", "kernel"}})}},
    {"gated+fused+rope-gemv+computed-angles", {.force = gated({{"rope.angles", "computed"}, {"rope.fuse", "gemv"}})}},
    {"gated+fused+early-load-all", {.force = gated({{"gemv.early", "load"}})}},
    {"unfused+early-load-all+serial", {.fuse = false, .force = {{"launch.pdl", "serial"}, {"gemv.early", "load"}}}},
    {"gated+block512+grid3+early-load-all", {.force = gated({{"gemv.early", "load"}}), .gemv_block = 512, .gemv_grid_for = kGrid3}},
    {"gated+block128+grid2+wait", {.force = gated({{"gemv.early", "wait"}}), .gemv_block = 128, .gemv_grid_for = kGrid2}},
    {"gated+attn-chunk32+splits3", {.force = gated({}), .attn_chunk = 32, .attn_splits = 3}},
    // attention's reduction: the transposed one needs TILE a power of two in 2..GS; chunk 48 gives
    // TILE 3 (head dim 128) and 1 (64): every lane reduces every position; chunk 256 with head dim
    // 64 gives TILE = GS = 8 (one lane per position after the exchanges)
    {"gated+attn-chunk48", {.force = gated({}), .attn_chunk = 48}},
    {"gated+attn-chunk256", {.force = gated({}), .attn_chunk = 256}},
    {"gated+attn-all-heads-per-block", {.force = gated({}), .attn_heads_per_block = kAllHeads}},
    {"gated+attn-2-heads-per-block+chunk32+splits3",
     {.force = gated({}), .attn_chunk = 32, .attn_splits = 3, .attn_heads_per_block = 2}},
    {"onepass+attn-1-head-per-block", {.force = {{"attn.algo", "onepass"}}, .attn_heads_per_block = 1}},
    {"gated+fused+kv-f32", {.force = gated({}), .kv_f32 = true}},
    // attn.pipe: blocks with several chunks (hist2500: 20 chunks on 16 blocks, forced; chunk 32 over 3
    // blocks: many), all heads per block and one
    {"gated+attn-pipe", {.force = gated({}), .attn_splits = 16, .attn_pipe = 1}},
    {"gated+attn-pipe+all-heads+chunk32+splits3",
     {.force = gated({}), .attn_chunk = 32, .attn_splits = 3, .attn_heads_per_block = kAllHeads, .attn_pipe = 1}},
    // attn.vsum=half2 (the default): V sums in f16 pairs per tile (2-position tiles over 3 splits);
    // its sibling, f32 sums; and f32 sums without a pipeline and with the two-trip merge
    {"gated+attn-vsum-float", {.force = gated({{"attn.vsum", "float"}})}},
    {"gated+attn-vh2+chunk32+splits3", {.force = gated({{"attn.vsum", "half2"}}), .attn_chunk = 32, .attn_splits = 3}},
    // the ticketed merge reads every split's state at once up to 16 splits (MERGE1: the 16-split cases
    // here), in two trips beyond (20 splits on hist2500's 20 chunks of 128)
    {"gated+attn-splits20", {.force = gated({}), .attn_splits = 20, .attn_pipe = 2}},
    // attn.pipe 2 (the SIMT default): the next chunk's K and V into the current chunk's registers
    // after each half's use; attn.pipe 0: each chunk loaded at the top of its trip
    {"gated+attn-pipe2", {.force = gated({}), .attn_splits = 16, .attn_pipe = 2}},
    // attn.early=kv: first chunks before the PDL wait (several splits, chunks of 32 positions:
    // the current row in a later chunk too), with PDL and serial
    {"gated+attn-early-kv+chunk32+splits3",
     {.force = gated({{"attn.early", "kv"}}), .attn_chunk = 32, .attn_splits = 3, .attn_pipe = 2}},
    {"gated+attn-early-kv+serial",
     {.force = gated({{"launch.pdl", "serial"}, {"attn.early", "kv"}}), .attn_splits = 16, .attn_pipe = 2}},
    // attn.early=wait: every K/V load after the PDL wait (the sibling of the default)
    {"gated+attn-early-wait+chunk32+splits3",
     {.force = gated({{"attn.early", "wait"}}), .attn_chunk = 32, .attn_splits = 3, .attn_pipe = 2}},
    {"gated+attn-pipe0+splits16", {.force = gated({}), .attn_splits = 16, .attn_pipe = 0}},
    {"gated+attn-pipe2+2-heads+chunk32+splits3",
     {.force = gated({}), .attn_chunk = 32, .attn_splits = 3, .attn_heads_per_block = 2, .attn_pipe = 2}},
    // attn.kv_stages: the cp.async ring (3 deep; 2 deep with many chunks per block)
    {"gated+attn-kv-stages3", {.force = gated({}), .attn_kv_stages = 3}},
    {"gated+attn-kv-stages2+chunk32+splits3", {.force = gated({}), .attn_chunk = 32, .attn_splits = 3, .attn_kv_stages = 2}},
    // ... shared by 2 query heads a block (the K/V ring read by both)
    {"gated+attn-kv-stages3+2-heads+chunk32+splits3",
     {.force = gated({}), .attn_chunk = 32, .attn_splits = 3, .attn_heads_per_block = 2, .attn_kv_stages = 3}},
    // attn.kv=tma (sm_90): K/V tiles by tensor-map copies into a ring, mma from there; the defaults
    // (4 slots, 64-position tiles: one tile a block at these contexts), 3 splits through 2 slots
    // (several tiles a block: the ring refilled), 128- and 256-position tiles through one slot
    {"gated+attn-tma", {.force = gated({{"attn.kv", "tma"}})}},
    {"gated+attn-tma+stages2+splits3", {.force = gated({{"attn.kv", "tma"}}), .attn_splits = 3, .attn_kv_stages = 2, .attn_tma_cluster = 0}},
    {"gated+attn-tma+chunk128+stages1+splits2",
     {.force = gated({{"attn.kv", "tma"}}), .attn_chunk = 128, .attn_splits = 2, .attn_kv_stages = 1, .attn_tma_cluster = 0}},
    // (the ticket merge pinned above: on a GPU the default takes a cluster where the device's fit)
    // attn.tma_cluster: the splits merged through distributed shared memory (3 splits: a tile each
    // at the short contexts, inactive blocks at the first positions; 12: the non-portable size)
    {"gated+attn-tma+cluster+stages2+splits3",
     {.force = gated({{"attn.kv", "tma"}}), .attn_splits = 3, .attn_kv_stages = 2, .attn_tma_cluster = 1}},
    {"gated+attn-tma+cluster+chunk64+splits12",
     {.force = gated({{"attn.kv", "tma"}}), .attn_chunk = 64, .attn_splits = 12, .attn_kv_stages = 1, .attn_tma_cluster = 1}},
    {"gated+attn-tma+chunk256+stages1+splits3",
     {.force = gated({{"attn.kv", "tma"}}), .attn_chunk = 256, .attn_splits = 3, .attn_kv_stages = 1, .attn_tma_cluster = 0}},
    // sample.fuse=gemv: the greedy pick inside the output gemv (the lanes loop, and the bulk ring)
    {"gated+fused+sample-fuse", {.force = gated({{"sample.fuse", "gemv"}})}},
    {"gated+fused+bulk+sample-fuse", {.force = gated({{"gemv.load", "bulk"}, {"sample.fuse", "gemv"}})}},
    // step.advance=device is the default (the pick kernel, argmax or the fused gemv, also advances
    // token and position); its sibling: the host copies both
    {"gated+fused+step-host", {.force = gated({{"step.advance", "host"}})}},
    {"gated+fused+bulk+sample-fuse+step-advance",
     {.force = gated({{"gemv.load", "bulk"}, {"sample.fuse", "gemv"}, {"step.advance", "device"}})}},
    // gemv.load=bulk: the defaults' ring (a pass per item on these shapes), and a 1 KiB budget
    // (2 slots of 256-column items: every refill path, several items per pass) with 3 blocks
    {"gated+fused+bulk", {.force = gated({{"gemv.load", "bulk"}})}},
    // (the bulk gemvs' x units in registers by default; gemv.x_regs=off: from the shared-memory copy, with
    // the producers' quantized x (xq-producer) too)
    {"gated+fused+bulk+no-x-regs", {.force = gated({{"gemv.load", "bulk"}}), .gemv_x_regs = false}},
    {"gated+fused+bulk+xq-producer+no-x-regs", {.force = gated({{"gemv.load", "bulk"}, {"gemv.xq", "producer"}}), .gemv_x_regs = false}},
    // gemv.early_blocks.KIND: the first blocks of gate/up, ffn_down and attn_output fill their whole ring
    // before the PDL wait (with the 1 KiB ring: several items a pass, refilled from the slot after the ring)
    {"gated+fused+bulk+early-blocks",
     {.force = gated({{"gemv.load", "bulk"}}), .gemv_early_blocks_for = {{"ffn_norm", 2}, {"ffn_down", 2}, {"attn_output", 1}}}},
    {"gated+fused+bulk+early-blocks+ring1k+grid3",
     {.force = gated({{"gemv.load", "bulk"}}), .gemv_bulk_kb = 1, .gemv_early_blocks_for = {{"ffn_norm", 2}, {"ffn_down", 2}, {"attn_output", 1}}, .gemv_grid_for = kGrid3}},
    {"gated+fused+bulk+ring1k+grid3", {.force = gated({{"gemv.load", "bulk"}}), .gemv_bulk_kb = 1, .gemv_grid_for = kGrid3}},
    // gemv.xq=producer (the bulk default): gate/up quantizes its output for ffn_down, each group of 32
    // rows by a cluster of 2 blocks (6 passes on 8 blocks of the 768-row *_tail_* shapes; with the 1
    // KiB ring 3 items a pass); forced for Q8_0 (by default Q4_0 only); and the sibling (ffn_down
    // quantizes x itself)
    {"gated+fused+bulk+grid8", {.force = gated({{"gemv.load", "bulk"}}), .gemv_grid_for = kGrid8}},
    {"gated+fused+bulk+ring1k+grid8", {.force = gated({{"gemv.load", "bulk"}}), .gemv_bulk_kb = 1, .gemv_grid_for = kGrid8}},
    {"gated+fused+bulk+xq-producer+grid8", {.force = gated({{"gemv.load", "bulk"}, {"gemv.xq", "producer"}}), .gemv_grid_for = kGrid8}},
    {"gated+fused+bulk+xq-block", {.force = gated({{"gemv.load", "bulk"}, {"gemv.xq", "block"}})}},
    // gemv.xq_norm: the embedding and the residual gemvs quantize the residual stream times the next
    // norm weight for the normed gemvs (one pass; 2-3 passes on 8 blocks); forced for Q8_0
    {"gated+fused+bulk+xq-norm", {.force = gated({{"gemv.load", "bulk"}}), .gemv_xq_norm = true}},
    {"gated+fused+bulk+xq-norm+grid8", {.force = gated({{"gemv.load", "bulk"}}), .gemv_xq_norm = true, .gemv_grid_for = kGrid8}},
    {"gated+fused+bulk+xq-norm+xq-producer",
     {.force = gated({{"gemv.load", "bulk"}, {"gemv.xq", "producer"}}), .gemv_xq_norm = true}},
    // ... and the decode attention quantizing its output for attn_output (XQ_OUT) on each of its write
    // paths: one active block (the variants above), the one-trip ticket merge, the two-trip merge; the
    // tensor-map kernel's own merge, one-trip merge
    // and cluster merge; forced for Q8_0 on the cluster paths
    {"gated+fused+bulk+attn-chunk32+splits3", {.force = gated({{"gemv.load", "bulk"}}), .attn_chunk = 32, .attn_splits = 3}},
    {"gated+fused+bulk+attn-tma+stages2+splits3",
     {.force = gated({{"gemv.load", "bulk"}, {"attn.kv", "tma"}}), .attn_splits = 3, .attn_kv_stages = 2, .attn_tma_cluster = 0}},
    {"gated+fused+bulk+attn-tma+cluster+chunk64+splits12",
     {.force = gated({{"gemv.load", "bulk"}, {"attn.kv", "tma"}, {"gemv.xq", "producer"}}), .attn_chunk = 64, .attn_splits = 12,
      .attn_kv_stages = 1, .attn_tma_cluster = 1}},
    // gemv.early_slots 1: one slot a warp before the PDL wait, the ring's other slots after the x prologue
    {"gated+fused+bulk+ring1k+grid3+early1",
     {.force = gated({{"gemv.load", "bulk"}}), .gemv_bulk_kb = 1, .gemv_early_slots = 1, .gemv_grid_for = kGrid3, .gemv_fill_at_loads = false}},
    // ... with the late slots issued behind the x prologue's loads (gemv.fill_at_loads)
    {"gated+fused+bulk+ring1k+grid3+early1+at-loads",
     {.force = gated({{"gemv.load", "bulk"}}), .gemv_bulk_kb = 1, .gemv_early_slots = 1, .gemv_grid_for = kGrid3, .gemv_fill_at_loads = true}},
    // one weight row per warp item (gemv.rows 1; gate/up keep their pair): for row counts that
    // 2-row sets spread unevenly over the warps (8B q/k/v: 3072 sets on 2112 warps)
    {"gated+fused+bulk+rows1", {.force = gated({{"gemv.load", "bulk"}}), .gemv_rows = 1}},
    {"gated+fused+bulk+rows4-down", {.force = gated({{"gemv.load", "bulk"}}), .gemv_rows_for = {{"ffn_down", 4}}}},
    // gemv.q4_shift: the split-layout Q4_0 unit dot in its one-chain form (default: two
    // chains, high nibbles in place), through the bulk ring and the default loops
    {"gated+fused+bulk+q4-shift", {.force = gated({{"gemv.load", "bulk"}}), .gemv_q4_shift = true}},
    {"gated+fused+q4-shift", {.force = gated({}), .gemv_q4_shift = true}},
    {"unfused+bulk+serial", {.fuse = false, .force = {{"launch.pdl", "serial"}, {"gemv.load", "bulk"}}}},
    {"siblings+fused", {.force = kSiblings}},
    {"gated+unfused", {.fuse = false, .force = gated({})}},
    {"siblings+unfused", {.fuse = false, .force = kSiblings}},
};

}  // namespace jitllm::test
