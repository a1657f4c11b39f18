// Schedule: the CUDA lowering of a Plan. Consecutive tasks are grouped into kernels (fusion),
// each kernel gets a JIT variant (source + defines), a launch geometry and symbolic arguments,
// and every capability gate records what it chose and why. Pure host data, so it can be built
// for a target arch without a GPU (`jitllm plan --target sm_90`).
//
// Kernel naming rule (docs/jit.md): symbol = <task group>__<algorithm>[_<type>], where the task
// group is the first task's name followed by the later tasks' names with the shared prefix
// dropped (attn_norm + attn_qkv -> attn_norm_qkv), e.g. attn_norm_qkv__gemv_warp_q8_0.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backends/cuda/cuda_device.h"
#include "core/rope_theta.h"
#include "jit/variant.h"
#include "plan/plan.h"

namespace jitllm {

// A kernel argument, resolved to a device pointer or value by the backend.
struct KArg {
    // Rows: the batch step's row count (an int), known at launch time
    // HostRing: the backend's pinned host ring of decode picks (4 ints, one per position mod 4), passed
    // as a device pointer (unified addressing: pinned host memory is the same address on the device)
    // KvMaps: layer `layer`'s K and V cache tensor maps (gate attn.kv=tma; Schedule::kv_map_rows), a
    // device pointer to 256 bytes: K's CUtensorMap, then V's
    enum class Kind { Null, Slot, Weight, KCache, VCache, Scratch, F32, I32, Rows, HostRing, KvMaps } kind = Kind::Null;
    Slot slot = Slot::X;
    int layer = -1;
    const WeightTensor* w = nullptr;
    uint64_t offset = 0;  // bytes into the slot / weight / scratch
    std::string scratch;  // Scratch: buffer name (sizes in Schedule::scratch)
    float f = 0.0f;
    int i = 0;
};

struct KernelStep {
    std::string symbol;       // the kernel's name in profilers (see the naming rule)
    std::string group;        // task group, e.g. "attn_norm_qkv"
    Variant variant;
    std::vector<int> tasks;   // indices into the phase's task list covered by this launch
    int layer = -1;
    Dim3 grid, block;
    unsigned smem = 0;
    std::vector<KArg> args;
    uint64_t bytes = 0;          // bytes moved per launch at position 0 (batch: per row)
    uint64_t bytes_per_pos = 0;  // plus this many per cached position (attention)
    uint64_t flops = 0;          // batch: per row
    uint64_t flops_per_pos = 0;  // plus this many per cached position (attention)
    uint64_t bytes_fixed = 0;    // batch: bytes independent of the rows (weights)
    // Batch phase: grid dimension `rows_dim` (0 x, 1 y, 2 z; -1 none) is ceil(m * rows_mul /
    // rows_div) + min(rows_add, m * rows_mul) for a step of m rows (`grid` holds the value for the
    // plan's batch_rows). rows_add: the grouped expert GEMMs' tiles, one partial tile per expert at
    // most, never more than one per (row, choice) entry (gemm_group_tiles).
    int rows_dim = -1, rows_mul = 1, rows_div = 1, rows_add = 0;
    // Batch phase, gemm.cu SPLIT_K (gate gemm.split_k): grid.z = ksplit[t - 1] for a step of t
    // tiles of ksplit_bm rows (the last entry beyond), 1 where empty.
    std::vector<int> ksplit;
    int ksplit_bm = 0;
    Dim3 grid_for_rows(int m) const;
    // Batch phase, gemm.cu MMA=3: the dynamic shared memory of a step of up to 8 (i + 1) rows is
    // smem_n8[i] (the last entry beyond; `smem`, the largest, where empty): a tile's activation
    // rows take room in every stage only for the rows the step has
    std::vector<unsigned> smem_n8;
    unsigned smem_for_rows(int m) const;
    // Programmatic dependent launch (gate launch.pdl): compiled with PDL=1 and launched with
    // programmatic stream serialization, so its prologue overlaps the previous kernel's tail.
    bool pdl = false;
    // Thread-block cluster (sm_90; attn.kv=tma's merge, gemv.xq's pairs): launched with this cluster shape;
    // (1, 1, 1) = no cluster.
    Dim3 cluster;
    // Preferred shared-memory carveout, percent of the unified L1 / shared memory (-1: the
    // driver's choice).
    int carveout = -1;
};

struct GateDecision {
    std::string gate;     // e.g. "gemv.reduce"
    std::string chosen;   // e.g. "warp"
    std::string sibling;  // e.g. "tree"
    std::string reason;
};

struct ScheduleOptions {
    bool fuse = true;                            // --no-fuse: one kernel per task
    std::map<std::string, std::string> force;    // --force-variant GATE=VARIANT
    bool kv_f32 = false;                         // KV cache in float instead of half
    int gemm_bm = 0;                             // gemm.bm: MMA tile rows (0: auto 64 | 128)
    int gemm_splits = 0;                         // gemm.splits: gate gemm.split_k's K splits (0: auto)
    int moe_bm = 0;                              // moe.bm: rows of a grouped expert GEMM tile (0: auto 64)
    int gemv_min_blocks = 0;                     // gemv.min_blocks: __launch_bounds__ minimum (0: auto)
    int gemv_prefetch = 0;                       // gemv.prefetch: bytes of each row prefetched to L2
    int gemv_block = 0;                          // gemv.block: threads per gemv block (0: auto 256)
    int batch_small_rows = 8;                    // batch.small_rows: batch.small=gemv takes steps of up to N rows
    int batch_xrows = 4;                         // batch.xrows: gate batch.xrows, N rows a block (0: off)
    int batch_imma_from = 5;                     // batch.imma_from: gate batch.imma's list takes steps of N .. batch_imma_rows rows
    int batch_imma_rows = 64;                    // batch.imma_rows: ... and up to N rows
    int imma_bm = 0;                             // gemm.imma_bm: activation rows of an integer GEMM tile, 8 .. 64 (0: the list's bound)
    int imma_bn = 0;                             // gemm.imma_bn: weight rows of an integer GEMM tile, 16 / 32 / 64 / 128 (0: auto)
    int imma_warps_k = 0;                        // gemm.imma_warps_k: warps sharing a stage's columns, 1 / 2 / 4 / 8 (0: auto)
    int imma_stages = 0;                         // gemm.imma_stages: the integer GEMM's cp.async ring depth (0: auto 4)
    bool batch_bulk = false;                     // batch.bulk: the batch phase's gemv list through the bulk rings (gemv.load=bulk)
    int attn_chunk = 0;                          // attn.chunk: split-KV positions per chunk (0: auto 128)
    int attn_splits = 0;                         // attn.splits: split-KV blocks per query-head set (0: auto, about 2 blocks per SM for <= 2 heads per block, else 1)
    int attn_heads_per_block = 0;                // attn.heads_per_block: decode attention query heads per block (0: 1 split, all onepass)
    int attn_pipe = -1;                          // attn.pipe: split-KV blocks load their next chunk before using this one (-1: auto, 2 for the SIMT kernel)
    int attn_kv_stages = 0;                      // attn.kv_stages: split-KV K/V through an N-deep cp.async ring (0: off)
    int gemv_rows = 0;                           // gemv.rows: output rows per warp and pass (0: auto 2)
    int gemv_split_pipe = -1;                    // gemv.split_pipe: split-layout loop pipelined (-1: auto)
    int gemv_split_units = 0;                    // gemv.split_units: 16-byte units per lane and step (0: auto)
    int gemv_bulk_kb = 0;                        // gemv.bulk_kb: gemv.load=bulk ring bytes per block in KiB (0: auto 200, less the x copy)
    int gemv_bulk_min_slots = 0;                 // gemv.bulk_min_slots: the ring's chunk is the largest leaving this many slots (0: 4)
    int attn_carveout = -2;                      // attn.carveout: the decode attention kernel's (-1: driver's; -2: its default)
    bool gemv_q4_shift = false;                  // gemv.q4_shift: GEMV_Q4_SHIFT=1 (the one-chain Q4_0 unit dot)
    bool gemv_xq_norm = false;                   // gemv.xq_norm: gemv.xq=producer for the normed gemvs too (the embedding and the residual gemvs quantize x * norm weight, XQ_NORM)
    bool gemv_x_regs = true;                     // the bulk split-layout Q4_0 / Q8_0 decode gemvs keep each lane's x units in registers (gemv.cu XREG) where they fit (gemv.x_regs)
    bool attn_xq = true;                         // attn.xq: under gemv.xq=producer, decode attention quantizes its output for attn_output (off: attn_output quantizes x)
    int gemv_xq_lag = 1;                         // gemv.xq_lag: gemv.xq=producer's group quantized after the leader's pass N groups later (XQ_LAG)
    int kv_l2_prefetch = 0;                      // kv.l2_prefetch: q/k/v gemv prefetches earlier K/V rows into L2 (gemv KV_PF: 1 start, 2 last copy)
    int gemv_early_slots = 0;                    // gemv.early_slots: bulk gemv ring slots a warp fills before the PDL wait (0: auto, decode Q4_0 2, Q8_0 3, else all; BULK_PRE)
    std::map<std::string, int> gemv_early_slots_for = {};  // gemv.early_slots.KIND: the same for the bulk gemv whose first task is KIND (e.g. attn_output)
    bool gemv_early_blocks = true;               // a bulk gemv after one on fewer blocks than SMs: its first (SMs - that grid) blocks fill their whole ring early (BULK_PRE_B; gemv.early_blocks)
    std::map<std::string, int> gemv_early_blocks_for = {};  // gemv.early_blocks.KIND: that bulk gemv's blocks 0 .. B-1 fill their whole ring before the PDL wait (BULK_PRE_B)
    std::map<std::string, int> gemv_cluster_for = {};     // gemv.cluster.KIND: that gemv launched in clusters of N blocks (unused by it)
    std::map<std::string, int> gemv_grid_for = {};        // gemv.grid.KIND: the gemv whose first task is KIND on at most N blocks
    std::map<std::string, int> gemv_rows_for = {};        // gemv.rows.KIND: gemv.rows of the gemv whose first task is KIND
    int gemv_norm_early = -1;                    // gemv.norm_early: every normed Q4_0 / Q8_0 gemv loads its norm weight before the PDL wait (1), none (0); -1: the lanes gemvs under gemv.early=load (NW_EARLY)
    bool gemv_fill_at_loads = true;              // gemv.fill_at_loads: the late ring slots once the x prologue's loads are out (off: after it, and no auto early slots; BULK_FILL_AT_LOADS)
    int attn_tma_from = -1;                      // attn.tma_from: with attn.kv=tma, decode positions below N take a second graph with the register kernel's attention (0: one graph; -1: auto, kTmaFromAuto where attn.kv=tma is the default, 0 where forced)
    int attn_tma_stages = 0;                     // attn.tma_stages: attn.kv=tma's ring slots only (0: attn.kv_stages, else 2)
    int moe_router_warps = 8;                    // moe.router_warps: router rows (warps) per block of the MoE router + top-k kernel (moe.cu MOE=0)
    int attn_tma_cluster = -1;                   // attn.tma_cluster: attn.kv=tma's splits of a kv head as one cluster, merged through DSMEM (CLUSTER): 1 on, 0 off, -1 where the device's clusters fit
};

struct Schedule {
    std::vector<KernelStep> decode, prefill, batch;
    size_t batch_body = 0;  // batch[0, batch_body): every step; the rest: steps with logits
    // Gate batch.small=gemv: the same batch tasks with every matrix product as a row-batched gemv,
    // for steps of at most batch_small_rows rows (body and output tail chosen separately; both
    // lists read and write the same slots, so a step may mix them). Empty when the gate is off.
    // Gate rope.angles=table: scratch "rope_table" holds (cos, sin) of every (position, pair) as floats,
    // [n_pos][n_rot / 2], computed on the host as cpu::rope does (core/rope_theta.h); n_pos 0: none
    // Gate attn.kv=tma: scratch "attn_kv_maps" holds every layer's K and V cache tensor maps (256
    // bytes a layer), 2-D f16 [rows][kv_dim], boxes of 64 halves x kv_map_rows rows, 128-byte
    // swizzle, encoded by the backend once the caches exist; 0: none
    int kv_map_rows = 0;
    // attn.tma_from N (with attn.kv=tma): decode steps at positions below decode_short_below run
    // decode_short instead of decode: the same kernels in the same order but the register kernel's
    // decode attention (a second decode graph); empty and 0 otherwise
    std::vector<KernelStep> decode_short;
    int decode_short_below = 0;
    // Gate sample.fuse=gemv: decode (and decode_short) again with the greedy pick in the output gemv
    // (gemv.cu ARGMAX) instead of the pick kernel after it; the backend replays these (their own
    // graphs) for steps without a device draw, the lists above (the pick kernel, which also draws)
    // for sampled steps. Empty when the gate is off.
    std::vector<KernelStep> decode_greedy, decode_short_greedy;
    struct RopeTable {
        int n_pos = 0, n_rot = 0;
        float base = 0;
        RopeYarn yarn;  // YaRN's ramp (inactive: none)
        const WeightTensor* freq_factors = nullptr;
    } rope_table;
    std::vector<KernelStep> batch_small;
    size_t batch_small_body = 0;
    int batch_small_rows = 0;
    // Gate batch.xrows: the small-step list again with its split-layout Q4_0/Q8_0 gemvs reading each
    // weight row once for up to ScheduleOptions::batch_xrows rows (gemv.cu XROWS), for steps of 2 ..
    // batch_small_rows rows (one-row steps keep batch_small). Empty when the gate is off or no
    // product qualifies.
    std::vector<KernelStep> batch_xrows;
    size_t batch_xrows_body = 0;
    // Gate batch.imma: the GEMM list again with its split-layout Q4_0/Q8_0 products as integer
    // tensor-core GEMMs for decode-sized steps (gemm.cu MMA=3 after a Q8_0 conversion of x), for
    // steps of batch_imma_from .. batch_imma_rows rows. Empty when the gate is off or no product
    // qualifies.
    std::vector<KernelStep> batch_imma;
    size_t batch_imma_body = 0;
    int batch_imma_from = 0, batch_imma_rows = 0;
    // The batch list a step of `rows` rows runs (its body, and its output tail chosen the same way
    // for the tail's rows): batch_imma for batch_imma_from .. batch_imma_rows rows where it exists,
    // else the small-step lists up to batch_small_rows rows (2 or more rows: batch_xrows where it
    // exists), else batch.
    enum class List { Gemm, Small, Xrows, Imma };
    List batch_list(int rows) const;
    const std::vector<KernelStep>& batch_steps(List l) const;
    size_t batch_body_of(List l) const;
    std::vector<GateDecision> gates;
    std::map<std::string, size_t> scratch;  // name -> bytes
    // Gate step.advance=device: decode's last kernel also writes its pick into the token slot and
    // adds one to the position slot, so a queued greedy step that follows needs no copies first
    bool decode_advance = false;
    // Gate sample.draw=device: decode's `sample` kernel also draws (argmax.cu DRAW) with the
    // parameters in scratch "draw_params" (backends/backend.h DrawParams) for top-k up to this; 0: off
    int draw_max_k = 0;
    std::string kv_type;                    // "half" | "float"
    // Weights stored on the device in the split layout (gate weights.layout=split, quant.h's
    // repack_split_rows): the backend repacks them at upload, their kernels get WSPLIT=1.
    std::set<const WeightTensor*> split_weights;
    const std::vector<KernelStep>& phase(Phase p) const {
        return p == Phase::Decode ? decode : p == Phase::Prefill ? prefill : batch;
    }
};

// Gates --force-variant accepts, each as "gate=variant|sibling" (e.g. "gemv.reduce=warp|tree"), and their
// names alone.
std::vector<std::string> schedule_gate_choices();
std::vector<std::string> schedule_gate_names();

Schedule schedule_build(const Plan& plan, const DeviceInfo& dev, const ScheduleOptions& opt);

// --print-plan (kernels with tasks and launches per token), --print-threads (grid/block).
std::string schedule_describe(const Plan& plan, const Schedule& s, bool threads);
// A gemv launch's row sets (a group's output rows of one pass) per block, as gemv.cu assigns them
// (block-major, or WARP_MAJOR): with the grid capped at one block per SM, the most a block streams
// against the mean is the kernel's imbalance. Empty for other kernels and batch steps.
struct GemvBalance {
    int passes = 0, sets = 0, max_per_block = 0;
    double mean_per_block = 0;
};
std::optional<GemvBalance> gemv_balance(const KernelStep& k);
// Launch accounting for ncu: per kernel symbol, launches per decode token, per prefill step and
// in warm-up, and the --launch-skip that reaches the steady state of decode (after the prompt and
// `warmup_tokens` generated tokens) and of prefill (after `warmup_tokens` prefill steps).
struct KernelLaunchCount {
    std::string kernel;
    int per_decode = 0, per_prefill = 0, per_chunk = 0, warmup = 0;  // warm-up: JIT and first touch launch nothing
    int per_tail = 0;  // launches in the batch phase's output tail (once, after a prompt's last chunk)
    int64_t total = 0, skip_decode = 0, skip_prefill = 0, skip_chunk = 0;
};
std::vector<KernelLaunchCount> schedule_launch_accounting(const Schedule& s, const RunShape& r, int warmup_tokens);

// One kernel launch of a run, as the backend issues it: the phase, the run of that phase (prefill
// step, prompt chunk or decode step, from 0), the token position it starts at, the list entry and
// its index in the list it came from (the batch phase's body and output tail may come from the
// small-step lists: `rows` is what chose it).
struct LaunchRef {
    Phase phase = Phase::Decode;
    int64_t run = 0, position = 0;
    const KernelStep* step = nullptr;
    size_t index = 0;
    int rows = 1;
    bool tail = false;  // the batch phase's output tail (the prompt's last row, after its chunk)
};
// Calls f for every kernel launch of a run of shape r in issue order (prefill steps, then prompt
// chunks each followed by nothing but the last by the output tail, then decode steps with the list
// their position and draw take), until f returns false. No early end of generation is assumed.
void schedule_for_each_launch(const Schedule& s, const RunShape& r, const std::function<bool(const LaunchRef&)>& f);
// The first launch of a run that `want` accepts, with ncu's --launch-skip for it: the launches of
// the same kernel symbol before it. Empty when no launch of the run matches.
struct LaunchPick {
    LaunchRef at;
    int64_t skip = 0;   // earlier launches of at.step->symbol
    int64_t total = 0;  // launches of that symbol in the whole run
};
std::optional<LaunchPick> schedule_pick_launch(const Schedule& s, const RunShape& r,
                                               const std::function<bool(const LaunchRef&)>& want);
std::string schedule_describe_launches(const Schedule& s, const RunShape& r, int warmup_tokens);

// Every distinct variant of the schedule (both phases), in first-use order.
std::vector<Variant> schedule_variants(const Schedule& s);

}  // namespace jitllm
