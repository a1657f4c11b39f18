// The GPU flags shared by `run`, `plan`, `kernels` and `bench`: declared once here.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "core/error.h"
#include "plan/task_kind.h"

namespace jitllm::cli {

struct GpuFlags {
    std::vector<std::string> force;  // GATE=VARIANT
    std::vector<std::string> gemv_early_slots_for;  // KIND=N
    std::vector<std::string> gemv_early_blocks_for;  // KIND=B
    std::vector<std::string> gemv_bulk_kb_for;      // KIND=KB
    std::vector<std::string> gemv_lanes_for;        // KIND
    std::vector<std::string> gemv_last_spread_for;  // KIND
    std::vector<std::string> gemv_grid_for;         // KIND=N
    std::vector<std::string> gemv_cluster_for;      // KIND=N
    std::vector<std::string> gemv_block_for;        // KIND=N
    std::vector<std::string> gemv_rows_for;         // KIND=N
    bool no_fuse = false, attn_merge_two_trips = false;
    bool norm_early = false, no_norm_early = false;  // --gemv-norm-early / --no-gemv-norm-early
    std::string kernel_cache;
    bool no_kernel_cache = false;
    bool no_graphs = false, no_run_ahead = false;
    bool print_kernel = false, print_threads = false, verbose_init = false;
    bool profiler = false, nvtx_tasks = false;
    std::string kv_l2_prefetch = "off", gemv_l2_next_at = "start";
    std::string profiler_dump_dir;
    std::string block_trace;
    std::string ablate;
    std::string draw_merge = "rounds";

    // the schedule's options a flag sets as they are (schedule() converts the others)
    ScheduleOptions so;

    void add(CLI::App& app) {
        const std::vector<CLI::Option*> before = app.get_options();
        add_options(app);
        // --help: the command's own options stay under "Options"; these come after them under three
        // headings, by what their text says they are
        for (CLI::Option* o : app.get_options()) {
            if (std::find(before.begin(), before.end(), o) != before.end()) continue;
            const std::string& d = o->get_description();
            if (d.rfind("tuning:", 0) == 0) o->group("GPU tuning (alternatives to the measured defaults)");
            else if (d.rfind("measurement", 0) == 0) o->group("Measurement only (timing runs; some make the output wrong)");
            else o->group("GPU and inspection");
        }
    }

private:
    void add_options(CLI::App& app) {
        app.add_option("--force-variant", force,
                       fmt::format("override a capability gate: GATE=VARIANT ({}); repeatable",
                                   fmt::join(schedule_gate_choices(), ", ")));
        app.add_flag("--no-fuse", no_fuse, "one kernel per task (no fusion)");
        app.add_flag("--gemv-warp-major", so.gemv_warp_major,
                     "tuning: gemv row sets of a pass go to warp 0 of every block first, so a last, partial pass spreads "
                     "over every SM (default: block by block; measured on the H200: 8B Q8_0 +0.4 %, Q4_0 -3.0 % in session 10; "
                     "session 26, one machine: Q4_0 732.8 against 745.2, Q8_0 464.7 against 479.1 tok/s)");
        app.add_flag("--gemv-last-spread", so.gemv_last_spread,
                     "tuning: gemv row sets block by block for the full passes, and the last, partial pass's round "
                     "every block (its remainder on every SM, each block's sets adjacent otherwise; H200, one machine: 8B Q4_0 "
                     "733.2 against 745.2 tok/s by default, Q8_0 466.5 against 479.1)");
        app.add_option("--gemv-last-spread-for", gemv_last_spread_for,
                       "tuning: KIND, --gemv-last-spread for the gemv kernel whose first task is KIND only (e.g. "
                       "attn_norm: the 8B q/k/v gemv's second pass is on 60 of 132 blocks; repeatable; H200 8B Q4_0: "
                       "772.2 against 785.2 tok/s)");
        app.add_flag("--attn-merge-two-trips", attn_merge_two_trips,
                     "tuning: the last split-KV attention block reads the splits' maxima and sums first, then their outputs "
                     "(default: every split's partial state in one round trip; the two-trip merge measured 0.2-0.3 % slower "
                     "at depth 4096 on the H200)");
        app.add_flag("--attn-warp-merge", so.attn_warp_merge,
                     "tuning: decode attention merges the position groups of a warp by shuffles first (measured 1-2 % slower on the H200)");
        app.add_flag("--kv-f32", so.kv_f32, "GPU KV cache in float32 (default half)");
        app.add_option("--kernel-cache", kernel_cache, "JIT cache directory (default $XDG_CACHE_HOME/jitllm)");
        app.add_flag("--no-kernel-cache", no_kernel_cache, "compile every kernel, read and write no cache");
        app.add_flag("--no-cuda-graphs", no_graphs, "launch kernel by kernel instead of replaying a graph");
        app.add_flag("--no-run-ahead", no_run_ahead,
                     "greedy decode waits for each step's pick before queuing the next (default: the step fed "
                     "by the next pick is queued while the host reads this one)");
        app.add_flag("--print-kernel", print_kernel, "print each generated kernel's source, tasks and gates");
        app.add_flag("--print-threads", print_threads, "print the grid and block of every kernel");
        app.add_flag("--verbose-init", verbose_init, "print the device, GPU memory plan and JIT statistics");
        app.add_flag("--profiler", profiler, "time every kernel launch; print a per-kernel table at the end");
        app.add_option("--profiler-dump-dir", profiler_dump_dir, "write profile.json and trace.json (Chrome trace) here");
        app.add_option("--gemv-early-slots", so.gemv_early_slots,
                       "tuning: bulk gemv ring slots each warp fills before its PDL wait, the rest after the x "
                       "prologue (default: 2 for Q4_0 weights, 3 for Q8_0, all for others; H200 8B tg128 with "
                       "--gemv-fill-at-loads: Q4_0 2 of 5 slots 742 against 724 tok/s with 4, Q8_0 3 slots 475 against "
                       "458 with all)");
        app.add_option("--gemv-early-slots-for", gemv_early_slots_for,
                       "tuning: KIND=N, --gemv-early-slots for the bulk gemv kernel whose first task is KIND "
                       "(attn_norm, attn_output, ffn_norm, ffn_down, output_norm; repeatable; default: --gemv-early-slots's, "
                       "and for a Q4_0 gemv whose x a gemv.xq producer quantized, ffn_down 4 and attn_output 3: H200 8B "
                       "Q4_0 785.3 against 770.7 tok/s with 2 and 2; before those producers no kernel's own count beat the "
                       "default 2 by more than 0.3 %)");
        app.add_option("--gemv-early-blocks-for", gemv_early_blocks_for,
                       "tuning: KIND=B, the bulk gemv kernel whose first task is KIND: its blocks 0 .. B-1 fill their whole "
                       "ring before the PDL wait, the others their --gemv-early-slots (blocks land in index order, the first "
                       "on the SMs the kernel before leaves first; repeatable; default: a bulk gemv after one on fewer "
                       "blocks than SMs, those it leaves free: 8B Q4_0 gate/up's 56 beside attn_output's 76; H100 tg128 with "
                       "attn_output on 100: gate/up's 32 631.0 against 625.9 tok/s without; ffn_down=96 617.9, attn_norm=110 618.9)");
        app.add_flag("--no-gemv-early-blocks{false}", so.gemv_early_blocks,
                     "tuning: no bulk gemv's first blocks fill their whole ring before the PDL wait unless "
                     "--gemv-early-blocks-for names it (the default's sibling)");
        app.add_option("--gemv-bulk-kb-for", gemv_bulk_kb_for,
                       "tuning: KIND=KB, --gemv-bulk-kb for the bulk gemv kernel whose first task is KIND, with the "
                       "full shared-memory carveout (e.g. attn_output=72 ffn_norm=126 on 8B Q4_0: rings small "
                       "enough for the gate/up block to land beside attn_output's; repeatable; H200 8B Q4_0 tg128: attn_output=72 "
                       "ffn_norm=126 with attn_output=4 early slots 704.2 against 735.9 by default, ffn_norm=126 alone 692.5; "
                       "attn_output=30 ffn_norm=180 581.7; ffn_norm=220 (6 slots) 735.8 against 741.7, attn_norm=220 739.3)");
        app.add_option("--gemv-lanes-for", gemv_lanes_for,
                       "tuning: KIND, the gemv kernel whose first task is KIND keeps the lanes loop (gemv.load=lanes: "
                       "weights through registers, no shared-memory ring), so the next bulk gemv's block can land "
                       "beside it (repeatable; H200 8B Q4_0 tg128, attn_output with ffn_norm=180 of --gemv-bulk-kb-for: 713.5 "
                       "against 746.0 by default)");
        app.add_option("--gemv-cluster-for", gemv_cluster_for,
                       "tuning: KIND=N launches the decode gemv whose first task is KIND (e.g. attn_output) in "
                       "thread-block clusters of N blocks (its grid a multiple of N), which the kernel does not use: "
                       "its blocks then hold whole TPCs, so the next kernel's clusters of 2 land on the others (default: "
                       "2 for the gemv before gemv.xq=producer's pairs when its grid is even and below the SM count; 1: "
                       "none; repeatable)");
        app.add_option("--gemv-grid-for", gemv_grid_for,
                       "tuning: KIND=N, the gemv kernel whose first task is KIND on at most N blocks (e.g. "
                       "attn_output=66: half the SMs, the next kernel's blocks land on the others while it runs; "
                       "repeatable; default: a Q4_0 attn_output on 76 of 132 SMs (8B Q4_0 with the early blocks: H200 "
                       "820.4 against 809.3 tok/s on 100, H100 649.0 against 635.5; before them, H200 100 SMs 752.2 "
                       "against 745.2 on all, 66: 732.8, 116: 744.5); attn_output=999 for every SM)");
        app.add_option("--gemv-block-for", gemv_block_for,
                       "tuning: KIND=N, threads per block (a multiple of 32, 128 to 1024) of the gemv kernel whose "
                       "first task is KIND (e.g. ffn_norm=384: a 12-warp gate/up whose rings fit beside "
                       "attn_output's; repeatable; H200 8B Q4_0 attn_norm=384: 769.0 against 785.2 tok/s)");
        app.add_option("--gemv-rows-for", gemv_rows_for,
                       "tuning: KIND=N, --gemv-rows for the gemv kernel whose first task is KIND (1 to 8; e.g. "
                       "ffn_down=4: each slot's x units read once for 4 weight rows, where x does not stay in registers; "
                       "repeatable)");
        app.add_flag("--no-gemv-norm-early", no_norm_early, "tuning: no gemv loads its norm weight before the PDL wait");
        app.add_flag("--gemv-norm-early", norm_early,
                     "tuning: every normed Q4_0 / Q8_0 gemv (q/k/v, gate/up, the output head) loads its norm weight before "
                     "the PDL wait, the bulk ones too (--no-gemv-norm-early: none). Default: the lanes gemvs under "
                     "gemv.early=load (H200 1B Q4_0 2400.4 against 2276.8 tok/s), not the bulk ones (8B Q4_0 779.2 against "
                     "788.1, Q8_0 480.6 against 480.5)");
        app.add_flag("--gemv-fill-at-loads,!--no-gemv-fill-at-loads", so.gemv_fill_at_loads,
                     "tuning: with fewer early slots than the ring holds, the late slots go out as soon as the x "
                     "prologue's loads are issued (default on; --no-gemv-fill-at-loads: after the whole prologue, and "
                     "every slot early unless --gemv-early-slots says otherwise; split-layout Q4_0 / Q8_0)");
        app.add_option("--block-trace", block_trace,
                       "decode kernels stamp each warp's start, PDL wait, x ready, last weight copy and end "
                       "(%globaltimer); the last decode step's records go to this CSV file and a table per kernel "
                       "(span, landing and hand-over relative to the previous kernel's end, drain, GB/s) to stderr. "
                       "The graph replays as usual; the kernels carry a few more instructions");
        app.add_option("--gemv-min-blocks", so.gemv_min_blocks,
                       "tuning: minimum resident gemv blocks per SM (caps registers; 0 = compiler's choice)")
            ->check(CLI::Range(0, 32));
        app.add_option("--gemv-prefetch", so.gemv_prefetch, "tuning: bytes of each weight row prefetched to L2 (0 = off)")
            ->check(CLI::Range(0, 1 << 20));
        app.add_option("--batch-small-rows", so.batch_small_rows,
                       "tuning: batch steps of up to N rows take the gemv list (gate batch.small=gemv; H200, 1B Q4_0 serve: 32 rows a "
                       "step 4156 tok/s through the gemv list against 7337 through the GEMM; default 8)")
            ->check(CLI::Range(1, 64));
        app.add_option("--batch-xrows", so.batch_xrows,
                       "tuning: gate batch.xrows: steps of 2 or more rows (the server's concurrent slots) take a gemv list whose "
                       "blocks read each split-layout Q4_0/Q8_0 weight row once for up to N of the step's rows (halved for a "
                       "product whose rows' int8 x copies do not fit shared memory; 0 = off: "
                       "each row reads them; H200 serve, 8 clients, N 4 / 8: 8B Q8_0 1501.4 / 1547.2 tok/s against 771.9, "
                       "1B Q4_0 4877.6 / 4576.4 against 3592.0; default 4)")
            ->check(CLI::IsMember({0, 2, 4, 8}));
        app.add_flag("--batch-bulk", so.batch_bulk,
                     "tuning: the batch phase's gemv list (the server's small steps) streams its weights through "
                     "decode's shared-memory rings (gate gemv.load=bulk) where decode's gemvs do (H200 serve, 8B Q8_0: one "
                     "client 399.0 tok/s against 362.4, 8 clients 664.8 against 777.6: off)");
        app.add_option("--attn-chunk", so.attn_chunk,
                       "tuning: split-KV decode attention positions per chunk, 32, 64, 128 or 256 (0 = auto 128; "
                       "attn.decode=mma: 64, 16 per warp; attn.kv=tma: 64, 128 or 256, 16 per warp, default 64)")
            ->check(CLI::IsMember({0, 32, 64, 128, 256}));
        app.add_option("--attn-splits", so.attn_splits,
                       "tuning: split-KV decode attention blocks per query-head set along the context (0 = about 2 "
                       "resident blocks per SM for 1-2 query heads per block, else 1; attn.decode=mma: about 3)")
            ->check(CLI::Range(0, 1024));
        app.add_option("--attn-heads-per-block", so.attn_heads_per_block,
                       "tuning: decode attention query heads per block, a divisor of the heads per kv head "
                       "(0 = auto: 1 for split-KV attention, all of a kv head's heads for one-pass)")
            ->check(CLI::Range(0, 256));
        app.add_option("--attn-pipe", so.attn_pipe,
                       "tuning: split-KV decode attention blocks load their next chunk before using the current one: 1 into "
                       "a second register set, 2 into the current chunk's K registers after its dot products and V registers "
                       "after its V sum, 0 off (default -1 = auto: 2 for the SIMT split-KV kernel, 0 for attn.decode=mma and with "
                       "--attn-kv-stages; long contexts)")
            ->check(CLI::Range(-1, 2));
        app.add_option("--attn-kv-stages", so.attn_kv_stages,
                       "tuning: split-KV decode attention streams K/V chunks through an N-deep cp.async ring in shared "
                       "memory, 2 to 4 (default 0: loads into registers; long contexts; with attn.decode=mma each lane's "
                       "fragment pieces, the first chunks copied before the PDL wait; measured slower on the H200: 8B "
                       "Q8_0 with mma and 4 stages 441.1 / 396.7 against 456.2 / 397.2 tok/s at depth 0 / 4096); with "
                       "attn.kv=tma the ring's slots of --attn-chunk positions, 1 to 8 (default 4)")
            ->check(CLI::Range(0, 8));
        app.add_option("--gemv-grid-max", so.gemv_grid_max,
                       "tuning: at most N blocks per gemv launch, each looping over its row sets (0 = no cap; with "
                       "the bulk gemvs' start trigger, SMs left free take the next kernel's blocks early; measured "
                       "slower on the H200: 8B Q8_0 450.2 -> 411.3 / 423.3 / 426.2 tok/s at 124 / 116 / 100)")
            ->check(CLI::Range(0, 1 << 20));
        app.add_flag("--gemv-balance", so.gemv_balance,
                     "tuning: each bulk gemv takes 12 to 16 warps a block, the count whose last pass leaves the "
                     "fewest row sets on the busiest SM (8B q/k/v: 12 warps, 24 sets against 32; measured slower on the "
                     "H200: 8B Q8_0 448.7 against 450.9, Q4_0 685.8 against 693.7 tok/s)");
        app.add_option("--attn-kv-rows", so.attn_kv_rows,
                       "tuning: with --force-variant attn.decode=mma and --attn-kv-stages, the ring holds whole K/V rows "
                       "(a barrier per slot; sm_90) instead of each lane's 16-byte pieces: 'bulk' one cp.async.bulk per row "
                       "(measured slower on the H200: 8B Q8_0 at depth 4096 354.5 against 400.3 tok/s, the "
                       "default), 'cp-async' the block's 16-byte copies, two whole rows a warp instruction (not yet "
                       "measured)")
            ->transform(CLI::CheckedTransformer(std::map<std::string, int>{{"none", 0}, {"bulk", 1}, {"cp-async", 2}}));
        app.add_flag("--attn-overlap", so.attn_overlap,
                     "tuning: split-KV decode attention capped at 96 registers (two blocks of it) and the gemv after "
                     "it at 256 threads, so both fit an SM and that gemv's shared-memory rings fill while attention "
                     "runs (sm_90 bulk gemvs; measured slower on the H200: 8B Q8_0 442.4 / 375.9 against 452.0 / 396.6 "
                     "tok/s at depth 0 / 4096, Q4_0 675.2 against 693.7)");
        app.add_flag("--attn-kv-prefetch", so.attn_kv_prefetch,
                     "tuning: split-KV decode attention's blocks (attn.early=kv) ask L2 for the K/V rows of their "
                     "later chunks at their start, so the chunk loop's loads hit L2 (sm_90; measured slower on the H200, "
                     "8B Q8_0: 459.1 / 399.1 tok/s at depth 0 / 4096 against 458.7 / 401.9)");
        app.add_option("--attn-tma-from", so.attn_tma_from,
                       "tuning: with attn.kv=tma (the sm_90 default beyond 256 positions of context at head dim 128), "
                       "decode steps at positions below N run a second decode graph whose attention is the register "
                       "kernel (0 = off: one graph; default -1: 768 where attn.kv=tma is not forced, 0 where it is; H200, "
                       "8B Q8_0, 4224-position context: the tensor-map kernel 472.2 tok/s at depth 0 against 480.4, 455.8 "
                       "at depth 512 against 459.1, 447.2 at depth 1024 against 441.1)")
            ->check(CLI::Range(-1, 1 << 30));
        app.add_flag("--attn-tma-merge1", so.attn_tma_merge1,
                     "tuning: attn.kv=tma's last block of a kv head merges the splits' states in one L2 round trip, each "
                     "thread loading its head's (m, l) and its dim's output of every split at once (default: (m, l) first, "
                     "the outputs after; measured slower on the H200, session 28: 8B Q8_0 at depth 4096 428.37 against 432.28)");
        app.add_option("--attn-tma-stages", so.attn_tma_stages,
                       "tuning: attn.kv=tma's ring slots (1 to 8; default 0: --attn-kv-stages if given, else 2), leaving the "
                       "register kernel's (the decode graph below --attn-tma-from) as they are")
            ->check(CLI::Range(0, 8));
        app.add_option("--attn-tma-cluster", so.attn_tma_cluster,
                       "tuning: attn.kv=tma's split blocks of a kv head as one thread-block cluster, their states merged through "
                       "distributed shared memory instead of global scratch and an atomic ticket: 1 on (the splits as "
                       "chosen; more than 8: the non-portable size, at most 16), 0 off, -1 (default) where the device's "
                       "GPCs hold every kv head's cluster at once, with the largest such split count (at least half the "
                       "splits wanted; H200: 9, at depth 4096 8B Q8_0 +0.3-0.6 %, Q4_0 +2.0 %)")
            ->check(CLI::Range(-1, 1));
        app.add_option("--attn-prefetch-next", so.attn_prefetch_next,
                       "tuning: decode attention's blocks prefetch the attn_output matrix into L2 at their start when "
                       "at least N positions are cached (0: always; default -1: off; sm_90; measured slower on the H200, "
                       "8B Q8_0: 0 gives 446.7 / 393.8 tok/s at depth 0 / 4096 against 455.8 / 398.4, 1024 456.1 / 398.0)")
            ->check(CLI::Range(-1, 1 << 30));
        app.add_option("--gemv-l2-next", so.gemv_l2_next_kb,
                       "tuning: the attn_output gemv (bulk rings, decode) prefetches the first KB of each of the layer's "
                       "gate/up matrices into L2, while its blocks wait beside decode attention (0: off, default; measured "
                       "slower on the H200, 8B Q4_0 tg128: 749.7 tok/s without, 743.6 with 2376, 736.0 with 4752, 717.6 with "
                       "9504; Q8_0 476.9 without, 475.7 with 4352)")
            ->check(CLI::Range(0, 1 << 22));
        app.add_option("--gemv-l2-next-at", gemv_l2_next_at,
                       "tuning: when --gemv-l2-next's prefetch goes out: after each warp's early ring slots, before its "
                       "wait for attention (start, default), or after its ring's first fill, once x is in (fill; H200 8B "
                       "Q4_0: 745.6 tok/s with 4752 against 749.7 without)")
            ->check(CLI::IsMember({"start", "fill"}));
        app.add_option("--kv-l2-prefetch", kv_l2_prefetch,
                       "tuning: the q/k/v gemv (bulk rings, RoPE and KV store fused) prefetches the K and V cache rows "
                       "of earlier positions into L2 for the attention after it: at its start, once its last weight "
                       "copy is out (last), or off (default; measured on the H200, 8B Q8_0 at depth 4096: 396.7 -> 396.9 last, 392.7 start)")
            ->check(CLI::IsMember({"off", "start", "last"}));
        app.add_option("--gemv-block", so.gemv_block,
                       "tuning: threads per gemv block for plain and split-layout weights, 128, 256, 512 or 1024 (0 = auto 256)")
            ->check(CLI::IsMember({0, 128, 256, 512, 1024}));
        app.add_option("--gemv-grid-per-sm", so.gemv_grid_per_sm,
                       "tuning: at most N blocks per SM for every gemv, each looping over its rows (0 = gate gemv.grid; "
                       "the bulk-ring gemvs take one block per SM unless N is given, e.g. N = 2 with --gemv-block 256 "
                       "--gemv-bulk-kb 100: two blocks an SM with half the ring each; measured slower on the H200: 8B Q8_0 429.4 against 459.5, Q4_0 659.9 against 710.6 tok/s)")
            ->check(CLI::Range(0, 32));
        app.add_option("--gemv-rows", so.gemv_rows, "tuning: gemv output rows per warp and pass (0 = auto; the q/k/v gemv with RoPE fused rounds an odd "
                       "count up: rotation pairs)")
            ->check(CLI::Range(0, 8));
        app.add_option("--gemv-split-pipe", so.gemv_split_pipe,
                       "tuning: split-layout gemv loads one step ahead, 0 or 1 (-1 = auto)")
            ->check(CLI::Range(-1, 1));
        app.add_option("--gemv-split-units", so.gemv_split_units,
                       "tuning: split-layout gemv 16-byte units per lane and step (0 = auto)")
            ->check(CLI::Range(0, 4));
        app.add_option("--gemv-bulk-kb", so.gemv_bulk_kb,
                       "tuning: with gemv.load=bulk, KiB of shared-memory rings per gemv block (0 = auto: 200, less the x copy; H200, 8B Q8_0: 446.1 tok/s at 200, 314.0 at 100)")
            ->check(CLI::Range(0, 220));
        app.add_option("--gemv-bulk-min-slots", so.gemv_bulk_min_slots,
                       "tuning: with gemv.load=bulk, each ring's item is the largest column chunk (256 to 2048) that "
                       "still leaves this many slots in its budget (0 = auto: 4; H200 8B Q4_0, gate/up in 110 KiB: 3 slots of "
                       "2048 columns 725.5 tok/s, 7 of 1024 in 126 KiB 692.5 on another machine; 741.7 by default)")
            ->check(CLI::Range(0, 16));
        app.add_option("--l2-prefetch", so.l2_prefetch,
                       "tuning: items each warp of a bulk gemv or of the persistent layer tail prefetches into L2 "
                       "beyond its shared-memory ring (cp.async.bulk.prefetch; 0 = off; H200, 8B Q8_0: 403.4 "
                       "tok/s off, 371.0 with 4, 321.4 with 12)")
            ->check(CLI::Range(0, 64));
        app.add_option("--smem-carveout", so.smem_carveout,
                       "tuning: preferred shared-memory carveout of every decode kernel, percent of the unified L1 / "
                       "shared memory (-1 = the driver's choice; 100 lets blocks of consecutive kernels share an SM "
                       "without reconfiguring it; H200, 8B Q8_0: 447.1 tok/s with the driver's choice, 432.8 with 100)")
            ->check(CLI::Range(-1, 100));
        app.add_option("--attn-carveout", so.attn_carveout,
                       "tuning: preferred shared-memory carveout of the decode attention kernel, percent (-1 = the "
                       "driver's choice, the register kernel's default; attn.stage=smem defaults to 100 so the gemvs "
                       "around it, which take ~200 KiB of rings, need no reconfiguration of an SM; measured no "
                       "difference on the H200, 8B Q8_0 at depth 4096: staged 387.8 / 387.9, register kernel 400.1 "
                       "at 100 against 400.6)")
            ->check(CLI::Range(-1, 100));
        app.add_flag("--gemv-late-loads", so.gemv_late_loads,
                     "measurement: gemv loads as before session 11 (the normed Q4_0/Q8_0 prologue reads x twice; the "
                     "residual and the RoPE angle are loaded after the dot products)");
        app.add_option("--tail-barrier-prefetch", so.tail_barrier_prefetch,
                       "tuning: with layer.tail=persistent, items each warp prefetches into L2 beyond its ring when it "
                       "reaches a grid barrier or the PDL wait (0 = off; not yet measured)")
            ->check(CLI::Range(0, 64));
        app.add_option("--gemm-bm", so.gemm_bm, "tuning: rows of the tensor-core GEMM tile, 64 or 128 (0 = auto)")
            ->check(CLI::IsMember({0, 64, 128}));
        app.add_option("--ablate", ablate,
                       "measurement only: leave out the decode kernels whose symbol matches this regex "
                       "(the output is wrong; the tok/s difference is what they cost in the replayed graph)");
        app.add_option("--attn-ablate", so.attn_ablate,
                       "measurement only: decode attention without its K/V loads (loads: bits made from the addresses), "
                       "without its arithmetic (math: the loaded words XORed) or without the split-KV merge (merge: "
                       "each block writes its partial output), to split what it costs in the replayed graph (the "
                       "output is wrong)")
            ->transform(CLI::CheckedTransformer(std::map<std::string, int>{{"loads", 1}, {"math", 2}, {"merge", 3}}));
        app.add_option("--draw-merge", draw_merge,
                       "tuning: how the sampled pick kernel's last block takes the k best of the blocks' lists: rounds "
                       "(default: one warp merges the list heads k times) or rank (the keys above the largest of the "
                       "blocks' k-th keys, ranked by every thread; the rounds when more than 1024 remain; measured slower on "
                       "the H200, session 22: 33.1 against 28.7 µs a token on 1B Q4_0, 38.8 against 32.2 on 8B Q8_0)")
            ->check(CLI::IsMember({"rounds", "rank"}));
        app.add_option("--draw-ablate", so.draw_ablate,
                       "measurement only: the sampled pick kernel (sample__draw) without its block sort (sort), its "
                       "copy of the blocks' lists (copy), its merge of them (merge) or its filters and draw (tail), "
                       "to split what it costs (the picks are wrong)")
            ->transform(CLI::CheckedTransformer(std::map<std::string, int>{{"sort", 1}, {"copy", 2}, {"merge", 3}, {"tail", 4}}));
        app.add_flag("--gemv-q4-shift", so.gemv_q4_shift,
                     "tuning: the split-layout Q4_0 dot products shift each word's high nibbles down and sum "
                     "all eight dp4a in one chain (session 18's form; default: two chains, the high nibbles "
                     "summed in place and shifted once; the same integer sums)");
        app.add_flag("--gemv-xq-groups", so.gemv_xq_groups,
                     "tuning: gemv.xq=producer's groups of 32 rows whole in one block (consecutive passes, on as many "
                     "blocks as the busiest needs: 8B gate/up on 112 of 132 SMs) instead of clusters of 2 blocks, 16 + 16 "
                     "rows of every pass (default; H200 8B Q4_0 tg128: 725.0 against 757.9)");
        app.add_option("--gemv-xq-lag", so.gemv_xq_lag,
                       "tuning: gemv.xq=producer's cluster leader quantizes a group after its own pass N groups later "
                       "(default 1; more: less waiting for the other block's rows of it)")
            ->check(CLI::Range(1, 8));
        app.add_flag("--gemv-xq-norm", so.gemv_xq_norm,
                     "tuning: under gemv.xq=producer, the normed gemvs (q/k/v, gate/up, the output head) take x "
                     "quantized too: the embedding and the residual gemvs before them (attn_output, ffn_down) write the "
                     "residual stream times the next norm weight quantized, with each group's sum of squares, and the "
                     "consumer scales each group's scale by 1 / rms (default off: H200 8B Q4_0 with --gemv-early-slots-for attn_norm=3 ffn_norm=4 "
                     "output_norm=4, 782.6 against 781.9 tok/s)");
        app.add_flag("--no-gemv-x-regs{false}", so.gemv_x_regs,
                     "tuning: the bulk split-layout Q4_0 / Q8_0 decode gemvs read x from its shared-memory copy for every "
                     "ring slot (default: where a lane's x units fit in ~40 registers (8B: q/k/v, attn_output, gate/up, "
                     "the output head; not ffn_down's 14336 columns) they stay in registers, loaded once after the x "
                     "prologue; the same bits; H100 8B Q4_0 tg128 627.8 against 622.2 tok/s)");
        app.add_flag("--no-attn-xq", so.no_attn_xq,
                     "tuning: under gemv.xq=producer, attn_output quantizes its x itself (default: the decode attention "
                     "writes its output quantized for it too, from the registers of the warps that write it)");
        app.add_option("--gemv-ablate", so.gemv_ablate,
                       "measurement only: the bulk split-layout Q4_0 / Q8_0 decode gemvs without their dot products "
                       "(math: each lane XORs the weight words it read from its ring slot; x, scales and the dp4a "
                       "sums are skipped), to split what the arithmetic costs in the replayed graph; xpre: the x prologue "
                       "as one bulk copy of x's bytes, as if an earlier kernel had left x quantized (every such gemv; "
                       "xpre-down: ffn_down only, xpre-out: attn_output only, xpre-nonorm: both), to measure what a "
                       "pre-quantized x would save; xq-nosync: gemv.xq=producer's clusters without their per-pass "
                       "arrivals and stores; xq-waitonly: with them, the leader waiting for each group but not "
                       "quantizing it; xq-notail: the groups after the leader's last pass not quantized (the output "
                       "is wrong)")
            ->transform(CLI::CheckedTransformer(std::map<std::string, int>{
                {"math", 1}, {"xpre", 2}, {"xpre-down", 3}, {"xpre-out", 4}, {"xpre-nonorm", 5}, {"xq-nosync", 6},
                {"xq-waitonly", 7}, {"xq-notail", 8}}));
        app.add_flag("--nvtx-tasks", nvtx_tasks, "one NVTX range per kernel launch (for nsys / ncu --nvtx)");
    }

public:

    // KIND=N options (--gemv-early-slots-for, --gemv-bulk-kb-for, --gemv-grid-for, --gemv-block-for, --gemv-rows-for):
    // KIND a task kind, N in 1..max
    static std::map<std::string, int> kind_counts(const char* flag, const char* what, const std::vector<std::string>& list,
                                                  int max) {
        std::map<std::string, int> out;
        for (const auto& f : list) {
            const auto eq = f.find('=');
            const std::string kind = f.substr(0, eq == std::string::npos ? 0 : eq);
            if (eq == std::string::npos || !task_kind_from_name(kind))
                fail_usage("{}: expected KIND=N with KIND a task kind (e.g. attn_output), found '{}'", flag, f);
            const std::string n = f.substr(eq + 1);
            const bool digits = !n.empty() && n.size() <= 4 && n.find_first_not_of("0123456789") == std::string::npos;
            const int v = digits ? std::stoi(n) : 0;
            if (v < 1 || v > max) fail_usage("{}: expected {} of 1 to {} after '{}=', found '{}'", flag, what, max, kind, n);
            out[kind] = v;
        }
        return out;
    }

    ScheduleOptions schedule() const {
        ScheduleOptions s = so;
        s.fuse = !no_fuse;
        s.attn_merge_one_trip = !attn_merge_two_trips;
        s.draw_rank = draw_merge == "rank";
        s.kv_l2_prefetch = kv_l2_prefetch == "start" ? 1 : kv_l2_prefetch == "last" ? 2 : 0;
        s.gemv_l2_next_at = gemv_l2_next_at == "fill" ? 2 : 1;
        for (const auto& f : force) {
            const auto eq = f.find('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == f.size())
                fail_usage("--force-variant: expected GATE=VARIANT, found '{}'", f);
            // checked here, so that a misspelt gate is refused on the CPU too (the schedule checks
            // whether the device can run the variant)
            const std::string gate = f.substr(0, eq), variant = f.substr(eq + 1);
            std::string choices;
            for (const std::string& c : schedule_gate_choices())
                if (c.compare(0, gate.size() + 1, gate + "=") == 0) choices = c.substr(gate.size() + 1);
            if (choices.empty())
                fail_usage("--force-variant {}: unknown gate '{}'; gates: {}", f, gate, fmt::join(schedule_gate_names(), ", "));
            if (variant != choices.substr(0, choices.find('|')) && variant != choices.substr(choices.find('|') + 1))
                fail_usage("--force-variant {}: expected {} for gate '{}', found '{}'", f, choices, gate, variant);
            s.force[gate] = variant;
        }
        if (norm_early && no_norm_early) fail_usage("--gemv-norm-early and --no-gemv-norm-early: pick one");
        s.gemv_norm_early = norm_early ? 1 : no_norm_early ? 0 : -1;
        s.trace = !block_trace.empty();
        s.gemv_early_slots_for = kind_counts("--gemv-early-slots-for", "a slot count", gemv_early_slots_for, 99);
        s.gemv_early_blocks_for = kind_counts("--gemv-early-blocks-for", "a block count", gemv_early_blocks_for, 4096);
        s.gemv_bulk_kb_for = kind_counts("--gemv-bulk-kb-for", "a size in KiB", gemv_bulk_kb_for, 220);
        s.gemv_grid_for = kind_counts("--gemv-grid-for", "a block count", gemv_grid_for, 999);
        s.gemv_cluster_for = kind_counts("--gemv-cluster-for", "a cluster size", gemv_cluster_for, 8);
        s.gemv_block_for = kind_counts("--gemv-block-for", "a thread count", gemv_block_for, 1024);
        s.gemv_rows_for = kind_counts("--gemv-rows-for", "a row count", gemv_rows_for, 8);
        for (const auto& [kind, n] : s.gemv_block_for)
            if (n % 32 != 0 || n < 128)
                fail_usage("--gemv-block-for: expected whole warps, 128 to 1024 threads, for '{}', found {}", kind, n);
        for (const auto& kind : gemv_last_spread_for) {
            if (!task_kind_from_name(kind)) fail_usage("--gemv-last-spread-for: expected a task kind (e.g. attn_norm), found '{}'", kind);
            s.gemv_last_spread_for.insert(kind);
        }
        for (const auto& kind : gemv_lanes_for) {
            if (!task_kind_from_name(kind)) fail_usage("--gemv-lanes-for: expected a task kind (e.g. attn_output), found '{}'", kind);
            s.gemv_lanes_for.insert(kind);
        }
        return s;
    }

    // --ablate is a measurement of the decode graph: a GPU run of `run` or `bench` only, and a
    // regular expression that compiles (checked before any model is loaded)
    // (--attn-ablate also on `plan` / `kernels`, which only print or compile the kernels: inspect = true)
    void check_ablate(bool gpu, bool decode_graph = true, bool inspect = false) const {
        if (so.attn_ablate > 0 && !inspect) {
            if (!decode_graph) fail_usage("--attn-ablate: expected `jitllm run --gpu` or `jitllm bench --gpu`, found it on a command without a decode graph");
            if (!gpu) fail_usage("--attn-ablate: expected --gpu (it changes the CUDA decode attention), found a CPU run");
        }
        if (so.draw_ablate > 0 && !inspect) {
            if (!decode_graph) fail_usage("--draw-ablate: expected `jitllm run --gpu` or `jitllm bench --gpu`, found it on a command without a decode graph");
            if (!gpu) fail_usage("--draw-ablate: expected --gpu (it changes the CUDA pick kernel), found a CPU run");
        }
        if (so.gemv_ablate > 0 && !inspect) {
            if (!decode_graph) fail_usage("--gemv-ablate: expected `jitllm run --gpu` or `jitllm bench --gpu`, found it on a command without a decode graph");
            if (!gpu) fail_usage("--gemv-ablate: expected --gpu (it changes the CUDA decode gemvs), found a CPU run");
        }
        if (!block_trace.empty() && !inspect) {
            if (!decode_graph) fail_usage("--block-trace: expected `jitllm run --gpu` or `jitllm bench --gpu`, found it on a command without a decode graph");
            if (!gpu) fail_usage("--block-trace: expected --gpu (the CUDA decode kernels write the records), found a CPU run");
        }
        if (ablate.empty()) return;
        if (!decode_graph) fail_usage("--ablate: expected `jitllm run --gpu` or `jitllm bench --gpu`, found it on a command without a decode graph");
        if (!gpu) fail_usage("--ablate: expected --gpu (it leaves kernels out of the CUDA decode graph), found a CPU run");
        try {
            std::regex re(ablate);
        } catch (const std::regex_error& e) {
            fail_usage("--ablate: expected a regular expression over kernel symbols, found '{}' ({})", ablate, e.what());
        }
    }

    CudaOptions cuda(bool print_plan, Profiler* prof = nullptr) const {
        CudaOptions o;
        o.profiler = (profiler || !profiler_dump_dir.empty()) ? prof : nullptr;
        o.nvtx_tasks = nvtx_tasks;
        o.schedule = schedule();
        o.cache.disk = !no_kernel_cache;
        o.cache.dir = kernel_cache;
        o.graphs = !no_graphs;
        o.run_ahead = !no_run_ahead;
        o.print_kernel = print_kernel;
        o.print_threads = print_threads;
        o.print_plan = print_plan;
        o.verbose_init = verbose_init;
        o.ablate = ablate;
        o.block_trace = block_trace;
        return o;
    }
};

}  // namespace jitllm::cli
