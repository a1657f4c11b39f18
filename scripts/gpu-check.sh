#!/usr/bin/env bash
# GPU checks, run on the H200 host through the device tool (never in CI). Stages (args):
#   smoke   : device info, bundled model greedy on the GPU, driver/JIT round trip test
#   golden  : golden logits/greedy tests with JITLLM_TEST_BACKEND=cuda (+ both gate siblings)
#   kernels : every kernel variant vs the CPU reference at odd shapes (tests/kernels; KERNELS_FILTER:
#             a gtest filter, e.g. '*/llama_gqa4_hd128_q4_0:*hist*' for a short call)
#   golden1 : the golden tests with the default gates only
#   jit     : cold (empty cache) and warm JIT start for a Llama-3.2-1B-shaped model
#   decode  : tg128 decode tok/s for 1B-shaped F16/Q8_0/Q4_0 synthetic files
#   modes   : prompt modes (single, prefill-decode, batch chunks 1..512) on the GPU vs llama.cpp / each other
#   gemm    : gemm.cu vs the CPU (kernels_gemm_test GemmVsCpu) and its TFLOP/s at m 512 (GemmBench)
#   prefill : pp512 (-b 512) for the issue-7 shapes, a cuBLAS (torch) f16 GEMM ceiling, TTFT at 2048
#   profile : per-kernel --profiler tables (PROFILE_SHAPES="shape:type ...")
#   ncu     : Nsight Compute on plan tasks (NCU_SHAPE, NCU_KERNELS regexes, NCU_SECTIONS=full)
#   sweep   : tg128 of SWEEP_SHAPES under each ';'-separated SWEEP_ARGS flag set (SWEEP_PROFILE=1:
#             per-kernel means too)
#   bisect  : golden tests under each ';'-separated BISECT_FORCE gate set (JITLLM_TEST_CUDA_FORCE)
#   bulk    : golden with gemv.load=bulk (with and without PDL)
#   prepared: the switches built without device time and still off: modes with batch.small=gemv,
#             golden with them (run `kernels` too: their kernels_vs_cpu variants)
#   mma     : golden and prompt modes with attn.decode=mma (decode attention on tensor cores), prompt
#             modes with attn.prefill=rows
#   next13  : session 13's first call: golden, prompt modes, generate with HEAD's defaults; golden,
#             modes, kernels_vs_cpu with --attn-early-kv and its depth A/B
#   next13b : --kv-l2-prefetch (earlier K/V rows into L2 by the q/k/v gemv): kernels, golden, depth A/B
#   next13c : --attn-prefetch-next (attn_output into L2 during attention): kernels, golden, depth A/B
#   next14  : session 14's first call: --attn-overlap (attention and the gemv after it on one SM)
#             and --gemv-balance: kernels, golden, prompt modes, depth A/B, 8B Q4_0 / Q8_0 rows
#   next14-depth: the K/V cp.async ring shared by 2 / 4 query heads a block at depth 4096
#   next14b : attn.decode=mma fed by a per-lane cp.async ring (--attn-kv-stages): kernels, golden, modes, depth A/B
#   next14c : the same ring as whole rows by cp.async.bulk (--attn-kv-rows bulk): kernels, golden, depth A/B
#   next15  : session 15's first call: the row ring filled by the block's cp.async (--attn-kv-rows
#             cp-async): kernels, golden, prompt modes, depth A/B, depthprof of the 4-stage ring
#   six     : golden, prompt modes, run-ahead with the defaults, then the six shapes and depth 4096
#   splits18: the 3/4-fill split default against --attn-splits 8: golden, kernels, 8B depth rows
#   next19  : the Q4_0 unit dot in two chains (default) against --gemv-q4-shift, --gemv-ablate math
#             (the gemvs' arithmetic cost) on 8B Q4_0 / Q8_0, 8B Q4_0 split counts at depth 4096
#   sync    : tools/sync_bench: a kernel boundary's cost with PDL against an arrival counter (session 37)
#   kdot20  : tools/red_bench (split-K accumulation costs); attn.kdot=half2 (q . k in f16 pairs,
#             session 20): golden (defaults and forced), kernels_vs_cpu, 8B Q8_0 / Q4_0 depth A/B
#             (KDOT20_ROUNDS), depth rows at other split counts
#   six19   : the six issue shapes' tg128 with the defaults (SIX19_SHAPES: a subset; then SIX19_DEPTH shapes' depth rows)
#   attndur : split-KV attention's ncu duration at depth 4096 (8B Q8_0; ATTNDUR_SETS flag sets)
#   next17  : attn.stage=smem with the full carveout (prepared in session 16, run in session 17)
#   next16c : attn.stage=smem diagnosis: splits, chunk 256, copies after the wait, ncu stall reasons
#   next16b : attn.stage=smem (K/V staged in shared memory): kernels, golden, modes, depth A/B, ncu
#   next16  : bench's NVML power figures beside nvidia-smi (power), the md columns, golden
#   var15   : every repetition's tok/s at several contexts; power: clocks, power and the power cap
#   next15b : sample.fuse=gemv (the greedy pick in the output gemv) and step.advance=device (token and
#             position advanced by the pick kernel): kernels, golden, modes, run-ahead, tg128 A/B
#   next13-sweep: the 8B quantized sweep of --attn-early-kv, --gemv-bulk-kb 210/220, --gemv-grid-max N
#   prepared12: golden and prompt modes with gemv.trigger=start forced, --gemv-bulk-kb 100 (session 12)
#   prepared11: golden and prompt modes with session 11's gemv load order (default, not yet run) and
#             with --gemv-late-loads (the order before); greedy decode run ahead (runtime_generate_test)
#   prepared10: golden and prompt modes with layer.tail=persistent (session 10; measured slower in 11)
#   prepared9: golden and prompt modes with session 9's switches (attn.merge=cluster, attn.vsum=half2,
#             --attn-merge-two-trips (the old merge since session 10), --gemv-warp-major)
#   ablate  : decode attention's cost in the graph at depths 0 / 4096: defaults, --attn-ablate
#             loads|math|merge, --ablate ^attn__ (timing only)
#   ab      : A/B bench of this build against .gpu/bin/jitllm-base at depths 0 and 4096 (AB_SHAPES,
#             AB_ROUNDS, AB_ARGS)
#   srcprof : Nsight Compute SourceCounters (stalls per SASS instruction) of split-KV attention at
#             depth 4096 (8B Q8_0; SRCPROF_ARGS flag sets)
#   depthprof: per-kernel table and ncu of split-KV attention at depth 4096 (8B Q8_0; DEPTH_ARGS)
#   draw21  : sample.draw=device: the draw kernel vs the host sampler, sampled generate, golden, the
#             CLI's greedy / sampled decode rate with the draw on the device and on the host
#   next22  : session 22's first call: the draw tests (both merges), --draw-merge rank against rounds
#   next22c : the server's per-row device draws (SequenceBatch test, modes, golden; serve rates)
#   next22d : batch.small=gemv measured (8-row correctness; serve rates against the GEMM)
#   next22e : batch.small=gemv (8 rows) as the default checked; serve rates against 16 rows
#   next27b : attn.kv=tma (decode attention fed by tensor-map copies, on tensor cores): kernels_vs_cpu,
#             golden, greedy text, 8B Q8_0 depth rows of ring shapes (TMA_SETS)
#   first28 : session 27's last changes on the GPU: kvc attn-tma variants, golden (default, tma-from 4),
#             prompt modes, 8B Q8_0 greedy text at --ctx-size 4096 (default / tma-from 20 / ld)
#   depth28 : 8B Q8_0 depth rows (default, ld, tma-from 2048, merge1, splits 8, attn_output=120), then
#             DEPTH28_SHAPES' depth rows default against ld
#   next28b : --gemv-l2-next (gate/up's first rows into L2 by attn_output) on 8B Q4_0 / Q8_0; 8B Q8_0
#             depth 1024 / 2048 rows, tma against ld (the crossover for --attn-tma-from)
#   next28c : --attn-tma-from 512 (default): 8B Q8_0 greedy text, depth 256 / 512 tma against ld, depth rows
#             of the default and deeper tensor-map rings, 8B F16 depth rows default against ld
#   final28 : the session's defaults: prompt modes, 8B Q8_0 depth rows (default twice, splits 10 / 14), 8B Q4_0
#   next35  : prepared: sample.fuse=gemv as a second decode list for greedy steps (run after final34): tests, md5s, rates
#   xregs37 : x units in registers (default) against --no-gemv-x-regs: kernels_vs_cpu, golden, 8B md5, 8B tg128 A/B
#   ablate37: `--gemv-ablate math` on 8B Q4_0 / Q8_0 (the arithmetic's share of a token; next37's rows alone)
#   next38  : on an H200: 8B Q4_0 tg128 first, the other five shapes, golden, 8B Q4_0's block trace, the
#             arithmetic's / x registers' rows, 8B Q8_0 depth rows (session 38)
#   check39 : prompt modes, the whole kernels_vs_cpu suite, 8B Q8_0 against --no-gemv-early-blocks (two rounds), 8B Q4_0
#             at depth 0 and 4096 (session 39)
#   early38 : --gemv-early-blocks-for (a bulk gemv's first blocks fill the whole ring early): kernels_vs_cpu, md5, tg128 sets
#   early38b: the early-blocks default: kernels_vs_cpu bulk variants, golden, md5, tg128 against --no-gemv-early-blocks
#   grid38  : attn_output on 76 SMs (default): golden, md5 and tg128 against 100 / 72
#   grid39  : prepared: ffn_down / gate/up / q/k/v on fewer blocks (the next gemv's early blocks on the SMs left), md5, tg128
#   trace38 : 8B Q4_0's block trace with the defaults (the H100 side of the comparison), tg128
#   next37  : on an H200: the six shapes' table with the greedy list's and x registers' defaults, `--gemv-ablate math`
#             and --no-gemv-x-regs on 8B
#             Q4_0 / Q8_0 (what the arithmetic still costs), 8B Q8_0 depth rows
#   next36  : the six shapes (tg128 bench rows, default and greedy list alternated), 8B Q8_0 depth rows,
#             attention merge alternatives and perplexity --gpu (after final34 / next35)
#   first33 : prepared: --gemv-xq-norm (the normed gemvs' x quantized by the kernel before them): kernels_vs_cpu,
#             golden, greedy text, tg128 rounds, depth rows
#   next33  : prepared: --gemv-xq-norm with its consumers' early ring slots 3 / 3, 4 / 4, 3 / 4 (+ output 4);
#             with the greedy pick in the output head (sample.fuse=gemv)
#   next32  : prepared: kernels_vs_cpu with the new slots, the gate/up producer's cost split (xq-waitonly /
#             xq-notail), the q/k/v gemv's last pass (96 blocks / 12 warps / spread), 8B Q8_0 with the producers forced, the six shapes and depth rows
#   final31 : the session's defaults: greedy text, tg128 against the sibling, golden (bulk forced)
#   next31g : ffn_down 5 / the q/k/v gemv's slots beside ffn_down=4 attn_output=3
#   next31f : those early slots at depth 4096, greedy text
#   next31e : ffn_down 3 / 4 with attn_output 3 (and ffn_norm 3), 8B Q4_0 rounds
#   next31d : ffn_down's early slots 3 / 4 (+ attn_output 3 / 1), 8B Q4_0; Q8_0 producer forced with them
#   next31c : --gemv-xq-lag 2 / 3, early ring slots of the XQ_IN gemvs (8B Q4_0 tg128 rounds)
#   first31b: the producers' quantization by redux.sync: kernels_vs_cpu (producer bytes checked), golden, md5, tg128
#   first31 : the decode attention quantizes attn_output's x (gemv.xq=producer): kernels_vs_cpu bulk variants,
#             golden, greedy text, tg128 rounds against --no-attn-xq / the sibling, depth rows, 8B Q8_0 forced
#   next31  : prepared: gemv.xq's new kernels_vs_cpu variant, golden, 8B Q4_0 depth rows with the producer,
#             8B Q8_0 with the producer forced (and attn_output in clusters of 2) against its default
#   next30e : gemv.xq=producer's pairs by default: tg128 rounds against the sibling and with attn_output in
#             clusters of 2 (--gemv-cluster-for); 8B Q8_0 and its depth rows
#   next30d : gemv.xq=producer, whole groups a block on 112 SMs (default) / pairs by st.async: tests,
#             md5, tg128 rounds against the sibling (and the sibling on 112 SMs)
#   next30c : gemv.xq=producer by mbarrier arrivals (no per-pass round trips): tests, md5, tg128 rounds
#             against the sibling and --gemv-ablate xq-nosync
#   next30b : gemv.xq=producer (gate/up quantizes ffn_down's x): kernels_vs_cpu bulk variants, golden
#             with bulk forced, greedy text against the sibling, tg128 rounds 8B Q4_0 / Q8_0, depth rows
#   first30 : what a pre-quantized x would save each bulk gemv (--gemv-ablate xpre*, timing only), 8B Q4_0 /
#             Q8_0 tg128 (run `first30 next30`)
#   next30  : --attn-tma-stages 3 against the default, alternated rounds (8B Q8_0 / Q4_0); prompt modes
#   last29  : --attn-tma-stages 3 with the default cluster; one-slot blocks in clusters of 12 / 16
#   final29 : the cluster merge by default: the plan's choice, kernels_vs_cpu, golden (tma forced), depth rows
#   next29c : cluster merges with 9 splits through 3 slots, 12 / 16 splits of one-slot blocks; Q4_0
#   next29b : --attn-tma-cluster fixed: kernels_vs_cpu, the cluster sizes that fit, depth rows, trace
#   next29  : --attn-tma-cluster (the splits merged through DSMEM): kernels_vs_cpu, depth rows, trace, golden
#   first29 : block traces of 8B Q8_0 at depths 4096 / 0 (defaults); 8B Q4_0 at depths 256 / 512, tma against ld
#   depth28b: 8B Q8_0 depth rows with attn_output's rings cut to 84 KiB (beside the tensor-map attention)
#   next28  : 8B Q8_0 depth 0 with attn.kv=tma at n_ctx 4224: --attn-tma-from (golden, greedy text,
#             depth rows), --attn-tma-merge1 (kernels_vs_cpu, depth rows), split counts, attn_output's grid
#   final27 : the attn.kv=tma default: golden, depth rows (8B Q8_0, 1B Q4_0 against ld), prompt modes
#   next27d : attn.kv=tma 128-position tiles: L2 prefetch by the q/k/v gemv, carveout, splits; Q4_0
#   next27c : attn.kv=tma, every tile before the PDL wait: kernels_vs_cpu, golden, depth rows, traces
#   next25  : --gemv-fill-at-loads (prepared in session 24): kernels_vs_cpu, golden, 8B Q4_0 / Q8_0 rates
#   final24 : the Q4_0 early-slots default: kernels_vs_cpu bulk, golden, 3 / 4 / 5 slots, depth rows
#   early24 : --gemv-early-slots 1-3 against all, 8B Q4_0 / Q8_0, golden
#   trace24 : --block-trace tables (8B Q4_0 / Q8_0, depth 0 / 4096) and the rates without it
#   next24  : the test refactor on the GPU, golden, the decode table and depth rows (session 24's first call)
#   next23d : defaults with gate batch.xrows: prompt modes, serve rates
#   next23c : gemv.cu XROWS against the CPU, prompt modes
#   next23b : --batch-xrows 8 / 4 (one weight read for the rows of a small step): tests, serve rates
#   next23  : batch.pdl (default) / --batch-bulk (the server's small steps as decode runs its gemvs): tests, serve rates
#   drawtests: the device draw's GPU tests (kernels_draw_test, runtime_generate_test, golden)
#   draw21b : sample__draw's cost split: --profiler rows with --draw-ablate sort|copy|merge|tail, ncu
#   also: decode8b bench depth tune modes head red ceiling prefprof serve (see each case below)
# Binaries and data come from .gpu/ (prepared by scripts/gpu-prepare.sh on the dev machine).
# Results go to $OUT (or /tmp/gpu-out).
set -uo pipefail
cd "$(dirname "$0")/.."
B=$PWD/.gpu/bin
export JITLLM_SHARED_DIR=$PWD/.gpu/shared JITLLM_SOURCE_DIR=$PWD JITLLM_GOLDEN_ALLOW_MISSING=1
export JITLLM_CACHE_DIR=/tmp/jitllm-cache
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
VOCAB=$JITLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama3-npm.gguf
# depth_rows FILE BIN [FLAGS...]: bench's md rows of tg128 at depths 0 and 4096 (one n_ctx for both)
# of .gpu/bin/BIN on FILE into the summary, DEPTH_R repetitions (default 3)
depth_rows() {
    local f=$1 bin=$2
    shift 2
    timeout 120 "$B/$bin" bench --gpu -m "$f" -p 0 -n 128 -d 0,4096 -r "${DEPTH_R:-3}" --no-warmup -o md "$@" 2>&1 |
        grep -E "^\| llama|rror" | tee -a "$OUT/summary.txt"
}
# ncu_attn_depth FILE OUTFILE LIMIT COUNT "FLAGS" NCU_ARGS...: Nsight Compute on COUNT split-KV decode
# attention launches at depth 4096 (after 64; the depth filled by 512-row prompt chunks), bench
# FLAGS, output in OUTFILE, at most LIMIT seconds; returns ncu's status
ncu_attn_depth() {
    local f=$1 o=$2 limit=$3 count=$4 a=$5
    shift 5
    timeout "$limit" ncu --clock-control none "$@" --kernel-name regex:"^attn__split_kv" --launch-skip 64 \
        --launch-count "$count" -- "$B/jitllm" bench --gpu -m "$f" -p 0 -n 4 -d 4096 -b 512 -r 1 --no-warmup $a > "$o"
}
# depth_ab SPEC FILE ROUNDS FLAGS: depth rows of FILE (SPEC its label) with the defaults and with
# FLAGS, alternated ROUNDS times
depth_ab() {
    local spec=$1 f=$2 rounds=$3 flags=$4 r a
    for r in $(seq "$rounds"); do
        for a in " " "$flags"; do
            log "depth $spec round $r [$a]"
            depth_rows "$f" jitllm $a
        done
    done
}
# tg_row LABEL FILE REPS [FLAGS...]: bench's md tg128 row of FILE into the summary
tg_row() {
    local label=$1 f=$2 reps=$3 o
    shift 3
    o=$(timeout 300 "$B/jitllm" bench --gpu -m "$f" -p 0 -n 128 -r "$reps" -o md "$@" 2>&1)
    log "tg128 $label: $(echo "$o" | grep -E '^\| .*tg' | tail -1)"
}
# tg_sets LABEL FILE ROUNDS SETS: tg_row of FILE (3 repetitions) under each ';'-separated flag set of SETS
# (a blank set: the defaults), the sets alternated ROUNDS times, each logged as "LABEL round R [SET]"
tg_sets() {
    local label=$1 f=$2 rounds=$3 r a sets
    IFS=';' read -ra sets <<< "$4"
    for r in $(seq "$rounds"); do
        for a in "${sets[@]}"; do
            # shellcheck disable=SC2086
            tg_row "$label round $r [$a]" "$f" 3 $a
        done
    done
}
# run_rates SHAPE FILE ROUNDS FLAGSET...: the CLI's decode tok/s (256 tokens after a short prompt,
# --metrics json) of FILE under each flag set, the sets alternated ROUNDS times, into the summary
run_rates() {
    local shape=$1 f=$2 rounds=$3 r a m
    shift 3
    for r in $(seq "$rounds"); do
        for a in "$@"; do
            m=$(timeout 120 "$B/jitllm" --gpu -m "$f" -p "Once upon a time" -n 256 --seed 7 --metrics json $a \
                2>&1 > /dev/null | grep -o '"decode_tok_s": [0-9.]*')
            log "run $shape round $r [$a]: $m"
        done
    done
}
# cli_profile FILE TOKENS PATTERN LINES [FLAGS...]: the --profiler table rows of a CLI run of FILE
# that match PATTERN (at most LINES) into the summary
cli_profile() {
    local f=$1 n=$2 pat=$3 lines=$4
    shift 4
    timeout 120 "$B/jitllm" --gpu -m "$f" -p "Once upon a time" -n "$n" --seed 7 --profiler "$@" 2>&1 > /dev/null |
        grep -E "$pat" | head -"$lines" | tee -a "$OUT/summary.txt"
}
# greedy_md5 FILE [FLAGS...]: md5 of 48 greedy tokens of FILE's continuation of a fixed prompt, into
# the summary (equal sums: the flags leave the text as the defaults give it)
greedy_md5() {
    local f=$1
    shift
    timeout 120 "$B/jitllm" --gpu -m "$f" -p "Once upon a time" -n 48 --temperature 0 --no-stream "$@" \
        2>/dev/null | md5sum | tee -a "$OUT/summary.txt"
}
# trace_row NAME FILE [FLAGS...]: a tg128 run of FILE (depth 0 unless FLAGS give -d) with --block-trace, the per-kernel
# table into the summary, the records in $OUT/NAME.csv.gz
trace_row() {
    local name=$1 f=$2
    shift 2
    timeout 200 "$B/jitllm" bench --gpu -m "$f" -p 0 -n 128 -r 2 --no-warmup -o md "$@" \
        --block-trace "$OUT/$name.csv" > "$OUT/$name.txt" 2>&1
    grep -E "^\| llama|span|__|^step|^note|rror|block trace" "$OUT/$name.txt" | tee -a "$OUT/summary.txt"
    [ -f "$OUT/$name.csv" ] && gzip -f "$OUT/$name.csv"
}
# depth_sets LABEL FILE SETS: depth_rows of FILE under each ';'-separated flag set of SETS, each
# logged as "depth LABEL [SET]" (DEPTH_R as depth_rows)
depth_sets() {
    local label=$1 f=$2 a sets
    IFS=';' read -ra sets <<< "$3"
    for a in "${sets[@]}"; do
        log "depth $label [$a]"
        # shellcheck disable=SC2086
        depth_rows "$f" jitllm $a
    done
}
# cluster_fit FILE [FLAGS...]: the backend's --verbose-init line on how many of the decode attention's
# thread-block clusters are resident at once, for FILE at n_ctx 4224 with FLAGS, into the summary
cluster_fit() {
    local f=$1
    shift
    timeout 60 "$B/jitllm" --gpu -m "$f" -p "Once upon a time" -n 4 --ctx-size 4224 --verbose-init "$@" 2>&1 |
        grep -E "thread-block clusters|rror" | head -1 | tee -a "$OUT/summary.txt"
}
synth() {  # shape type -> path
    local f=/tmp/$1-$2.gguf
    [ -f "$f" ] || "$B/jitllm" synth --shape "$1" --type "$2" --vocab "$VOCAB" --out "$f" >&2
    echo "$f"
}
# cuda_test FILE TEST LABEL [VAR=VALUE ...]: one GPU test binary with the given test switches,
# its output in $OUT/FILE.txt, its verdict lines in the summary
cuda_test() {
    local file=$1 test=$2 label=$3
    shift 3
    log "$label"
    # TEST_TIMEOUT: seconds per test binary (a hung kernel ends the binary, not the device call)
    timeout "${TEST_TIMEOUT:-400}" env JITLLM_TEST_BACKEND=cuda "$@" "$B/$test" > "$OUT/$file.txt" 2>&1 ||
        echo "$label: exit $? (124: TEST_TIMEOUT)" | tee -a "$OUT/summary.txt"
    grep -E "golden\]|modes\]|OK \]|FAILED|PASSED|Failure|Expected|Which|actual" "$OUT/$file.txt" | grep -v absent | head -120 |
        tee -a "$OUT/summary.txt"
}
# draw_tests PREFIX: the device draw's GPU tests (the kernel against the host sampler, sampled
# generate run ahead, golden), outputs in $OUT/PREFIX-*.txt
draw_tests() {
    cuda_test "$1-kernel" kernels_draw_test "device draw against the host sampler"
    cuda_test "$1-generate" runtime_generate_test "generate: device draws vs the host sampler, run ahead"
    cuda_test "$1-golden" engine_golden_test "golden (cuda, HEAD's defaults: greedy through sample__draw)"
}
# serve_load FILE LABEL TEMPERATURE CLIENTS [FLAGS...]: `jitllm serve --gpu` of FILE (64 slots) with
# FLAGS under scripts/serve-load.py's clients at TEMPERATURE for SERVE_SECONDS (default 10) each
serve_load() {
    local f=$1 label=$2 temp=$3 clients=$4 sp i
    shift 4
    log "serve $label [$*] temperature $temp: aggregate decode tok/s by concurrent clients"
    LD_LIBRARY_PATH=$PWD/.gpu/lib:${LD_LIBRARY_PATH:-} "$B/jitllm" serve --gpu -m "$f" --parallel 64 -c 1024 \
        --port 18080 --prefill-chunk 64 "$@" > "$OUT/serve-$label.log" 2>&1 &
    sp=$!
    for i in $(seq 1 120); do curl -sf http://127.0.0.1:18080/health >/dev/null 2>&1 && break; sleep 1; done
    timeout 200 python3 scripts/serve-load.py --port 18080 --clients "$clients" --seconds "${SERVE_SECONDS:-10}" \
        --temperature "$temp" 2>&1 | tee -a "$OUT/summary.txt"
    kill -INT $sp
    wait $sp
}
[ -f .gpu/build-info.txt ] && sed 's/^/== build: /' .gpu/build-info.txt | tee -a "$OUT/summary.txt"
stages=${*:-smoke golden jit decode}
for stage in $stages; do
case $stage in
smoke)
    log "smoke"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee -a "$OUT/summary.txt"
    "$B/backend_cuda_driver_test" 2>&1 | tail -5 | tee -a "$OUT/summary.txt"
    "$B/jitllm" --gpu -p "Once upon a time" -n 48 --temperature 0 --verbose-init 2>&1 | tee -a "$OUT/summary.txt"
    ;;
golden1)
    cuda_test golden-default engine_golden_test "golden (cuda, default gates)"
    ;;
golden)
    cuda_test golden-default engine_golden_test "golden (cuda, default gates)"
    cuda_test golden-warp-merge engine_golden_test "golden (cuda, --attn-warp-merge)" JITLLM_TEST_CUDA_ATTN_WARP_MERGE=1
    cuda_test golden-early-all engine_golden_test "golden (cuda, early first load and grid cap forced for every gemv)" \
        JITLLM_TEST_CUDA_FORCE=gemv.early=load,gemv.grid=capped
    cuda_test golden-rope-computed engine_golden_test "golden (cuda, rope.angles=computed with rope.fuse=gemv)" \
        JITLLM_TEST_CUDA_FORCE=rope.angles=computed,rope.fuse=gemv
    cuda_test golden-siblings engine_golden_test "golden (cuda, sibling variants: tree reductions, one-pass attention, no fusion)" \
        JITLLM_TEST_CUDA_SIBLINGS=1
    ;;
bisect)
    # golden (default gates) under each ';'-separated BISECT_FORCE set (JITLLM_TEST_CUDA_FORCE)
    IFS=';' read -ra sets <<< "${BISECT_FORCE:-launch.pdl=serial;attn.algo=onepass}"
    for n in "${!sets[@]}"; do
        cuda_test "bisect-$n" engine_golden_test "golden with ${sets[$n]}" JITLLM_TEST_CUDA_FORCE="${sets[$n]}"
    done
    ;;
kernels)
    log "kernels vs CPU reference"
    timeout "${TEST_TIMEOUT:-400}" "$B/kernels_vs_cpu_test" --gtest_filter="${KERNELS_FILTER:-*}" > "$OUT/kernels.txt" 2>&1 ||
        echo "kernels: exit $? (124: TEST_TIMEOUT)" | tee -a "$OUT/summary.txt"
    grep -E "^\[ +(OK|FAILED|PASSED) |slot " "$OUT/kernels.txt" | head -60 | tee -a "$OUT/summary.txt"
    ;;
jit)
    f=$(synth llama3.2-1b f16)
    log "jit cold / warm, $f"
    rm -rf /tmp/jitllm-jit-probe
    for run in cold warm; do
        JITLLM_CACHE_DIR=/tmp/jitllm-jit-probe "$B/jitllm" --gpu -m "$f" -p "Hi" -n 1 --temperature 0 --verbose-init 2>&1 | grep -E "jit:|memory plan|device" | sed "s/^/$run: /" | tee -a "$OUT/summary.txt"
    done
    ;;
decode)
    for t in f16 q8_0 q4_0; do
        f=$(synth llama3.2-1b "$t")
        log "decode 1B $t"
        "$B/jitllm" --gpu -m "$f" -p "Once upon a time" -n 128 --temperature 0 2>&1 >/dev/null | grep -E "\[jitllm\]|error" | tee -a "$OUT/summary.txt"
    done
    ;;
decode8b)
    for t in ${DECODE8B_TYPES:-q4_0 q8_0 f16}; do
        f=$(synth llama3.1-8b "$t")
        log "decode 8B $t"
        "$B/jitllm" --gpu -m "$f" -p "Once upon a time" -n 128 --temperature 0 2>&1 >/dev/null | grep -E "\[jitllm\]|error" | tee -a "$OUT/summary.txt"
    done
    ;;
profile)
    for spec in ${PROFILE_SHAPES:-llama3.2-1b:f16 llama3.2-1b:q4_0}; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        d="$OUT/prof-${spec/:/-}"
        log "profile $spec (per-kernel table, JSON + trace in $d)"
        "$B/jitllm" --gpu -m "$f" -p "Once upon a time" -n 64 --temperature 0 --profiler \
            --profiler-dump-dir "$d" 2>&1 >/dev/null | grep -vE "^\s*$" | tail -30 | tee -a "$OUT/summary.txt"
    done
    ;;
ncu)
    # The docs/profiling.md workflow: find the launch skip with --print-plan, then ncu one kernel.
    # NCU_SHAPE (default llama3.2-1b:f16), NCU_KERNELS (awk regexes over the plan's task names),
    # NCU_SECTIONS (default: speed of light, launch, occupancy; "full" adds stall reasons etc.)
    spec=${NCU_SHAPE:-llama3.2-1b:f16}
    f=$(synth "${spec%%:*}" "${spec##*:}")
    secs="--section SpeedOfLight --section LaunchStats --section Occupancy"
    [ "${NCU_SECTIONS:-}" = full ] && secs="$secs --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats"
    J="$B/jitllm --gpu -m $f -p 'Once upon a time' -n 64 --seed 42 --temperature 0 ${NCU_ARGS:-}"
    log "launch accounting: $J --print-plan"
    eval "$J --print-plan" 2>&1 >/dev/null | tee "$OUT/print-plan.txt" | grep -A40 "launch accounting" | tee "$OUT/launch-accounting.txt" | head -30 | tee -a "$OUT/summary.txt"
    for kr in ${NCU_KERNELS:-ffn_norm_gate_up_act__gemv_warp_f16 attn__split_kv_f16}; do
        k=$(awk -v k="^$kr\$" '$1 ~ k {print $1; exit}' "$OUT/launch-accounting.txt")
        skip=$(awk -v k="$k" '$1 == k {print $7}' "$OUT/launch-accounting.txt")
        [ -n "$k" ] || { log "ncu: no task matches $kr"; continue; }
        log "ncu $k --launch-skip $skip"
        eval "ncu --clock-control none $secs --csv --kernel-name regex:\"^$k\$\" --launch-skip $skip --launch-count 4 -- $J" \
            > "$OUT/ncu-$k.csv" 2> "$OUT/ncu-$k.err"
        echo "rc=$? $(wc -l < "$OUT/ncu-$k.csv") lines" | tee -a "$OUT/summary.txt"
        grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Shared Memory Config|Dynamic Shared|Static Shared" "$OUT/ncu-$k.csv" | head -20 | tee -a "$OUT/summary.txt"
        tail -3 "$OUT/ncu-$k.err" | tee -a "$OUT/summary.txt"
    done
    ;;
bench)
    # issue 5's table: six shapes, llama-bench style, copy bandwidth measured in the same run
    for spec in ${BENCH_SHAPES:-llama3.1-8b:f16 llama3.1-8b:q8_0 llama3.1-8b:q4_0 llama3.2-1b:f16 llama3.2-1b:q8_0 llama3.2-1b:q4_0}; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        log "bench $spec"
        "$B/jitllm" bench --gpu -m "$f" -p ${BENCH_P:-512} -n 128 -r ${BENCH_R:-3} -o md 2>&1 | tee -a "$OUT/summary.txt"
    done
    ;;
sweep)
    # tuning sweep: tg128 of each SWEEP_SHAPES shape under each ';'-separated SWEEP_ARGS flag set
    IFS=';' read -ra sets <<< "${SWEEP_ARGS:- }"
    for spec in ${SWEEP_SHAPES:-llama3.1-8b:q4_0}; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        for a in "${sets[@]}"; do
            o=$(timeout "${SWEEP_TIMEOUT:-300}" "$B/jitllm" bench --gpu -m "$f" -p 0 -n 128 -r ${BENCH_R:-3} -o md $a 2>&1)
            r=$(echo "$o" | grep -E '^\| .*tg' | tail -1)
            log "sweep $spec [$a]: ${r:-FAILED (exit $?): $(echo "$o" | tail -3 | tr '\n' ' ')} $(echo "$o" | grep -oE 'load [0-9]+ ms( \([^)]*\))?' | head -1)"
            if [ -n "${SWEEP_PROFILE:-}" ]; then  # per-kernel mean µs (profiler: event per kernel)
                "$B/jitllm" --gpu -m "$f" -p "Once upon a time" -n 32 --temperature 0 --profiler $a 2>&1 >/dev/null |
                    awk '$1 == "decode" && $2 != "(all" {printf "%s %s %s%%; ", $2, $5, $9} END {print ""}' | tee -a "$OUT/summary.txt"
            fi
        done
    done
    ;;
gemm)
    # gemm.cu vs cpu::matvec (every MMA level, split layout too), then TFLOP/s at m 512
    log "gemm vs cpu ${GEMM_FILTER:-*GemmVsCpu*}"
    "$B/kernels_gemm_test" --gtest_filter="${GEMM_FILTER:-*GemmVsCpu*}" > "$OUT/gemm.txt" 2>&1
    grep -E "FAIL|PASSED|^\[ +OK" "$OUT/gemm.txt" | tail -30 | tee -a "$OUT/summary.txt"
    log "gemm bench (types ${GEMM_BENCH_TYPE:-q8_0,q4_0}, split ${GEMM_BENCH_SPLIT:-1})"
    JITLLM_GEMM_BENCH=1 JITLLM_GEMM_BENCH_NO_SIMT=1 JITLLM_GEMM_BENCH_TYPE=${GEMM_BENCH_TYPE:-q8_0,q4_0} \
        JITLLM_GEMM_BENCH_SPLIT=${GEMM_BENCH_SPLIT:-1} "$B/kernels_gemm_test" --gtest_filter='GemmBench*' 2>&1 |
        grep -E "TFLOP|FAIL" | tee -a "$OUT/summary.txt"
    ;;
modes)
    cuda_test modes prefill_modes_test "prompt modes on the GPU (cuda)"
    ;;
sync)
    # a kernel boundary's cost: PDL's grid completion against an arrival counter polled by the
    # dependent (tools/sync_bench.cu; perf-notes session 37)
    log "sync_bench"
    timeout 120 "$B/sync_bench" > "$OUT/sync_bench.txt" 2>&1
    tee -a "$OUT/summary.txt" < "$OUT/sync_bench.txt"
    ;;
red)
    # split-K accumulation costs (tools/red_bench.cu: atomics, fixed point, cluster pre-reduction)
    log "red_bench"
    timeout 60 "$B/red_bench" > "$OUT/red_bench.txt" 2>&1
    tee -a "$OUT/summary.txt" < "$OUT/red_bench.txt"
    ;;
draw21)
    # sample.draw=device (session 21): the draw kernel against the host sampler, sampled generate
    # run ahead against the host path, golden (greedy through sample__draw at temperature 0); then
    # the CLI's decode rate greedy / sampled with the draw on the device and on the host
    # (DRAW21_ROUNDS alternations), bench's greedy tg128 with each sibling, the per-kernel profile
    draw_tests draw21
    for shape in llama3.1-8b:q8_0 llama3.2-1b:q4_0; do
        f=$(synth "${shape%%:*}" "${shape##*:}")
        run_rates "$shape" "$f" "${DRAW21_ROUNDS:-2}" "--temperature 0" "--temperature 0.8" \
            "--temperature 0.8 --force-variant sample.draw=host" "--temperature 0 --force-variant sample.draw=host"
        tg_row "$shape default (greedy)" "$f" 3
        tg_row "$shape sample.draw=host (greedy)" "$f" 3 --force-variant sample.draw=host
        cli_profile "$f" 32 "sample|output" 6 --temperature 0.8
    done
    ;;
next22)
    # session 22's first call (prepared in session 21): the device draw's GPU tests (both merges:
    # kernels_draw_test runs --draw-merge rank too), then sample__draw's cost with each merge
    # (--profiler means) and the CLI's sampled decode rate with each, greedy beside them
    draw_tests next22
    cuda_test next22-kvc-sample-fuse kernels_vs_cpu_test "kernels_vs_cpu: sample.fuse=gemv (the shared pick key)" \
        JITLLM_KVC_VARIANTS=sample-fuse
    for shape in llama3.2-1b:q4_0 llama3.1-8b:q8_0; do
        f=$(synth "${shape%%:*}" "${shape##*:}")
        for a in "--temperature 0.8" "--temperature 0.8 --draw-merge rank"; do
            log "profile $shape [$a]"
            cli_profile "$f" 64 "sample__" 2 $a
        done
        run_rates "$shape" "$f" 2 "--temperature 0" "--temperature 0.8" "--temperature 0.8 --draw-merge rank"
    done
    ;;
next22c)
    # session 22's third call: the server's batched steps draw each sampled row on the device
    # (draw_rows): the SequenceBatch test against the host sampler, prompt modes (the batch
    # prefill's last row through draw_rows' argmax branch), golden; then the server's aggregate
    # decode rate, sampled, with the device draw against sample.draw=host, greedy beside them
    cuda_test next22c-slots runtime_slots_draw_test "SequenceBatch: per-row device draws vs the host sampler"
    cuda_test next22c-modes prefill_modes_test "prompt modes (batch prefill through draw_rows)"
    cuda_test next22c-golden engine_golden_test "golden (cuda, defaults)"
    for shape in llama3.2-1b:q4_0 llama3.1-8b:q8_0; do
        f=$(synth "${shape%%:*}" "${shape##*:}")
        serve_load "$f" "$shape-greedy" 0 8,32
        serve_load "$f" "$shape-device" 0.8 8,32
        serve_load "$f" "$shape-host" 0.8 8,32 --force-variant sample.draw=host
    done
    ;;
next22d)
    # session 22's fourth call: batch.small=gemv (the server's steps of few rows through the gemv
    # kernels), first measured: correctness with 8-row steps (SequenceBatch draws, prompt modes),
    # then greedy serve rates against the GEMM default
    cuda_test next22d-slots runtime_slots_draw_test "SequenceBatch draws, batch.small=gemv up to 8 rows" \
        JITLLM_TEST_CUDA_FORCE=batch.small=gemv JITLLM_TEST_CUDA_BATCH_SMALL_ROWS=8
    cuda_test next22d-modes prefill_modes_test "prompt modes, batch.small=gemv up to 8 rows" \
        JITLLM_TEST_CUDA_FORCE=batch.small=gemv JITLLM_TEST_CUDA_BATCH_SMALL_ROWS=8
    for shape in llama3.1-8b:q8_0 llama3.2-1b:q4_0; do
        f=$(synth "${shape%%:*}" "${shape##*:}")
        serve_load "$f" "$shape-gemm" 0 1,8,32
        serve_load "$f" "$shape-small8" 0 1,8,32 --force-variant batch.small=gemv --batch-small-rows 8
        serve_load "$f" "$shape-small32" 0 1,8,32 --force-variant batch.small=gemv --batch-small-rows 32
    done
    ;;
next22e)
    # session 22's fifth call: batch.small=gemv with 8 rows as the default (golden, prompt modes,
    # SequenceBatch draws, generate), then serve rates of the default against 16 rows a step
    cuda_test next22e-golden engine_golden_test "golden (cuda, defaults: batch.small=gemv, 8 rows)"
    cuda_test next22e-modes prefill_modes_test "prompt modes (defaults)"
    cuda_test next22e-slots runtime_slots_draw_test "SequenceBatch draws (defaults)"
    cuda_test next22e-generate runtime_generate_test "generate (defaults)"
    for shape in llama3.1-8b:q8_0 llama3.2-1b:q4_0; do
        f=$(synth "${shape%%:*}" "${shape##*:}")
        serve_load "$f" "$shape-default" 0 1,8,16
        serve_load "$f" "$shape-small16" 0 16 --batch-small-rows 16
    done
    ;;
next23)
    # session 23's first call (prepared in session 22, measured then): the server's small steps
    # with PDL (now the default, gate batch.pdl) against serial launches, and --batch-bulk (that
    # list's products through decode's bulk rings, off): prompt modes, SequenceBatch draws and
    # golden, then serve rates (SERVE_SECONDS=5 keeps the call short)
    cuda_test next23-modes prefill_modes_test "prompt modes, batch.pdl=pdl"
    cuda_test next23-slots runtime_slots_draw_test "SequenceBatch draws, batch.pdl=pdl"
    cuda_test next23-golden engine_golden_test "golden, batch.pdl=pdl"
    cuda_test next23-modes-bulk prefill_modes_test "prompt modes, --batch-bulk" JITLLM_TEST_CUDA_BATCH_BULK=1
    cuda_test next23-slots-bulk runtime_slots_draw_test "SequenceBatch draws, --batch-bulk" JITLLM_TEST_CUDA_BATCH_BULK=1
    for shape in llama3.1-8b:q8_0 llama3.2-1b:q4_0; do
        f=$(synth "${shape%%:*}" "${shape##*:}")
        serve_load "$f" "$shape-serial" 0 1,8 --force-variant batch.pdl=serial
        serve_load "$f" "$shape-batch-pdl" 0 1,8
        serve_load "$f" "$shape-batch-bulk" 0 1,8 --batch-bulk --force-variant batch.pdl=serial
        serve_load "$f" "$shape-batch-bulk-pdl" 0 1,8 --batch-bulk
    done
    ;;
next23b)
    # session 23: --batch-xrows N (the small-step list's split Q4_0/Q8_0 gemvs read each weight row
    # once for up to N of the step's rows): prompt modes (batch-1 and batch-7 chunks take the gemv
    # list) and golden with it, then serve rates against the default
    cuda_test next23b-gemvrows kernels_gemm_test "gemv rows vs cpu" GTEST_FILTER='*GemvRows*'
    grep -E "gemv rows" "$OUT/next23b-gemvrows.txt" | tee -a "$OUT/summary.txt"
    cuda_test next23b-modes8 prefill_modes_test "prompt modes, --batch-xrows 8" JITLLM_TEST_CUDA_BATCH_XROWS=8
    cuda_test next23b-modes4 prefill_modes_test "prompt modes, --batch-xrows 4" JITLLM_TEST_CUDA_BATCH_XROWS=4
    for shape in llama3.1-8b:q8_0 llama3.2-1b:q4_0; do
        f=$(synth "${shape%%:*}" "${shape##*:}")
        serve_load "$f" "$shape-default" 0 1,4,8
        serve_load "$f" "$shape-xrows8" 0 1,4,8 --batch-xrows 8
        serve_load "$f" "$shape-xrows4" 0 1,4,8 --batch-xrows 4
    done
    ;;
next23c)
    # gemv.cu over a step's rows against the CPU (XROWS 1, 2, 4, 8), then prompt modes with the
    # defaults and with --batch-xrows 8
    cuda_test next23c-gemvrows kernels_gemm_test "gemv rows vs cpu" GTEST_FILTER='*GemvRows*'
    grep -E "gemv rows" "$OUT/next23c-gemvrows.txt" | tee -a "$OUT/summary.txt"
    cuda_test next23c-modes prefill_modes_test "prompt modes (defaults)"
    cuda_test next23c-modes8 prefill_modes_test "prompt modes, --batch-xrows 8" JITLLM_TEST_CUDA_BATCH_XROWS=8
    ;;
tests24|next24)
    # session 24's first call: session 23's test refactor (one epilogue reference for GemmVsCpu and
    # GemvRowsVsCpu) and rows_dot_x through split_dot on the GPU, golden and prompt modes with the
    # defaults; next24 then the decode issue's table and 8B Q8_0 / Q4_0 at depth 0 / 4096
    # (BENCH_R=3 keeps it in one call)
    cuda_test next24-gemm kernels_gemm_test "gemm (q4_0, q8_0, f16) and gemv rows vs cpu" \
        GTEST_FILTER='*GemvRows*:*GemmVsCpu*q4_0*:*GemmVsCpu*q8_0*:*GemmVsCpu*f16*'
    grep -E "gemv rows" "$OUT/next24-gemm.txt" | grep -c "max scaled" | sed 's/^/gemv rows cases run: /' | tee -a "$OUT/summary.txt"
    cuda_test next24-golden engine_golden_test "golden (cuda, default gates)"
    cuda_test next24-modes prefill_modes_test "prompt modes (defaults; rows_dot_x through split_dot)"
    [ "$stage" = next24 ] && SIX19_DEPTH="llama3.1-8b:q8_0 llama3.1-8b:q4_0" BENCH_R=${BENCH_R:-3} OUT="$OUT" "$PWD/scripts/gpu-check.sh" six19
    ;;
first28)
    # session 28's first call: session 27's last changes on the GPU (the attn.kv=tma default beyond 256
    # positions, the proxy fence, the shared merge header common/attn_split.cuh, --attn-tma-merge1,
    # --attn-tma-from): kernels_vs_cpu's attn-tma variants, golden with the defaults and with the
    # switch at position 4, prompt modes, the 8B Q8_0 greedy text at --ctx-size 4096 three ways
    cuda_test kvc-tma kernels_vs_cpu_test "kernels_vs_cpu: attn.kv=tma variants (merge1 too)" \
        JITLLM_KVC_VARIANTS=attn-tma "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-default engine_golden_test "golden (cuda, default gates)"
    cuda_test golden-tma-from engine_golden_test "golden with attn.kv=tma, --attn-tma-from 4" \
        JITLLM_TEST_CUDA_FORCE=attn.kv=tma JITLLM_TEST_CUDA_ATTN_TMA_FROM=4
    cuda_test modes prefill_modes_test "prompt modes on the GPU (cuda, default gates)"
    q8=$(synth llama3.1-8b q8_0)
    log "greedy text 8b:q8_0 --ctx-size 4096 [default / --attn-tma-from 20 / ld]"
    greedy_md5 "$q8" --ctx-size 4096
    greedy_md5 "$q8" --ctx-size 4096 --attn-tma-from 20
    greedy_md5 "$q8" --ctx-size 4096 --force-variant attn.kv=ld
    ;;
depth28)
    # session 28's second call: depth rows of 8B Q8_0 with the default and next28's flag sets, then the
    # other shapes' depth rows with the new default (DEPTH28_SHAPES)
    q8=$(synth llama3.1-8b q8_0)
    IFS=';' read -ra sets <<< "${TMA_SETS:- ;--force-variant attn.kv=ld;--attn-tma-from 2048;--attn-tma-merge1;--attn-splits 8;--gemv-grid-for attn_output=120; }"
    for a in "${sets[@]}"; do
        log "depth 8b:q8_0 [$a]"
        depth_rows "$q8" jitllm $a
    done
    for spec in ${DEPTH28_SHAPES:-llama3.1-8b:q4_0 llama3.2-1b:q4_0}; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        for a in " " "--force-variant attn.kv=ld"; do
            log "depth $spec [$a]"
            depth_rows "$f" jitllm $a
        done
    done
    ;;
next28b)
    # session 28, call 3: --gemv-l2-next KB (attn_output's blocks, landing beside attention, prefetch
    # the first KB of each gate/up matrix into L2; one pass of gate/up on 132 x 16 warps is 2112 rows,
    # 4752 KB of Q4_0 a matrix): 8B Q4_0 / Q8_0 tg128 rows, greedy text; then the tensor-map kernel's
    # crossover depth against the register kernel (8B Q8_0 at depths 1024 / 2048), for --attn-tma-from
    q4=$(synth llama3.1-8b q4_0)
    log "greedy text 8b:q4_0 [default / --gemv-l2-next 4752]"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --gemv-l2-next 4752
    IFS=';' read -ra sets <<< "${L2N_SETS:- ;--gemv-l2-next 2376;--gemv-l2-next 4752;--gemv-l2-next 9504;--gemv-l2-next 4752 --gemv-l2-next-at fill;--gemv-l2-next 9504 --gemv-l2-next-at fill; }"
    for a in "${sets[@]}"; do tg_row "8b:q4_0 [$a]" "$q4" 3 $a; done
    q8=$(synth llama3.1-8b q8_0)
    for a in " " "--gemv-l2-next 4352" "--gemv-l2-next 8704" " "; do tg_row "8b:q8_0 [$a]" "$q8" 3 $a; done
    for a in " " "--force-variant attn.kv=ld"; do
        log "depth 1024 / 2048 8b:q8_0 [$a]"
        timeout 120 "$B/jitllm" bench --gpu -m "$q8" -p 0 -n 128 -d 1024,2048 -r 3 --no-warmup -o md --ctx-size 4224 $a 2>&1 |
            grep -E "^\| llama|rror" | tee -a "$OUT/summary.txt"
    done
    ;;
next28c)
    # session 28, call 4: --attn-tma-from 512 by default (the register kernel's graph below 512):
    # the crossover (8B Q8_0 at depths 256 / 512, the tensor-map kernel everywhere against ld), the
    # greedy text (all below 512: equal to ld's), depth rows of the default and of deeper rings
    # (with the register kernel at depth 0, the tensor-map kernel's shape is tuned for depth alone)
    q8=$(synth llama3.1-8b q8_0)
    log "greedy text 8b:q8_0 --ctx-size 4096 [default: below 512 on ld; ld]"
    greedy_md5 "$q8" --ctx-size 4096
    greedy_md5 "$q8" --ctx-size 4096 --force-variant attn.kv=ld
    for a in "--attn-tma-from 0" "--force-variant attn.kv=ld"; do
        log "depth 256 / 512 8b:q8_0 [$a]"
        timeout 120 "$B/jitllm" bench --gpu -m "$q8" -p 0 -n 128 -d 256,512 -r 3 --no-warmup -o md --ctx-size 4224 $a 2>&1 |
            grep -E "^\| llama|rror" | tee -a "$OUT/summary.txt"
    done
    IFS=';' read -ra sets <<< "${TMA_SETS:- ;--attn-kv-stages 3;--attn-chunk 64 --attn-kv-stages 6; }"
    for a in "${sets[@]}"; do
        log "depth 8b:q8_0 [$a]"
        depth_rows "$q8" jitllm $a
    done
    f16=$(synth llama3.1-8b f16)
    for a in " " "--force-variant attn.kv=ld"; do
        log "depth 8b:f16 [$a]"
        depth_rows "$f16" jitllm $a
    done
    ;;
final28)
    # session 28, last call: the defaults (attn.kv=tma at head dim 128 beyond 256 positions, the register
    # kernel's graph below 768): prompt modes, 8B Q8_0 depth rows twice, split counts at depth, Q4_0
    cuda_test modes prefill_modes_test "prompt modes on the GPU (cuda, default gates)"
    q8=$(synth llama3.1-8b q8_0)
    IFS=';' read -ra sets <<< "${TMA_SETS:- ;--attn-splits 10;--attn-splits 14; }"
    for a in "${sets[@]}"; do
        log "depth 8b:q8_0 [$a]"
        depth_rows "$q8" jitllm $a
    done
    q4=$(synth llama3.1-8b q4_0)
    log "depth 8b:q4_0 [default]"
    depth_rows "$q4" jitllm
    ;;
first33)
    # prepared in session 32 (no device that session): --gemv-xq-norm, the normed gemvs' x quantized by the
    # kernel before them (the embedding, attn_output, ffn_down: x * the next norm weight, each group's sum
    # of squares; the consumer scales each d by 1 / rms). Correctness first: kernels_vs_cpu's new
    # variants (the producers' bytes exactly, every kernel against the CPU), golden with it and bulk
    # forced, the greedy text; then tg128 rounds, its consumers' early slots, depth rows
    cuda_test kvc-xqn kernels_vs_cpu_test "kernels_vs_cpu: --gemv-xq-norm and the producers' variants" \
        JITLLM_KVC_VARIANTS=xq-norm,bulk+attn,+xq-,bulk+grid8 "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-xqn engine_golden_test "golden with gemv.load=bulk forced, --gemv-xq-norm" \
        JITLLM_TEST_CUDA_FORCE=gemv.load=bulk JITLLM_TEST_CUDA_GEMV_XQ_NORM=1
    q4=$(synth llama3.1-8b q4_0)
    log "greedy md5 8b q4_0 default / --gemv-xq-norm (4b387fa6...)"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --gemv-xq-norm
    # prediction: +1 to +2 % (session 30's probe: the normed prologues as one bulk copy +2.4 %; the two
    # new producers' tails and the consumers' d scaling take some of it)
    tg_sets 8b:q4_0 "$q4" 2 " ;--gemv-xq-norm"
    DEPTH_R=2 depth_ab 8b:q4_0 "$q4" 1 "--gemv-xq-norm"
    ;;
next33)
    # after first33: the normed consumers' early ring slots now that their prologue is one copy (the
    # other consumers gained 1.9 % from 2 -> 4 / 3 in session 31), the output head's too
    q4=$(synth llama3.1-8b q4_0)
    tg_sets 8b:q4_0 "$q4" 2 "--gemv-xq-norm;--gemv-xq-norm --gemv-early-slots-for attn_norm=3 ffn_norm=3;--gemv-xq-norm --gemv-early-slots-for attn_norm=4 ffn_norm=4;--gemv-xq-norm --gemv-early-slots-for attn_norm=3 ffn_norm=4 output_norm=4"
    # the greedy pick inside the output head (sample.fuse=gemv: measured equal on 8B Q8_0, slower on 1B;
    # not on 8B Q4_0, whose head is now one of the producers' consumers)
    tg_sets 8b:q4_0 "$q4" 2 "--gemv-xq-norm;--gemv-xq-norm --force-variant sample.fuse=gemv"
    ;;
next35)
    # prepared in session 35 (no device that session; run `final34` first): sample.fuse=gemv as a second
    # decode list, its own graph, for greedy steps (the pick in the output gemv) while sampled steps keep
    # the draw kernel's list (sample.draw=device with it). Correctness: kernels_vs_cpu's fused-pick
    # variants (now over the greedy list), golden and the generate tests (greedy queued steps, device
    # draws against the host sampler) with it forced, the greedy and a sampled text against the default's;
    # then tg128 rounds on the four quantized shapes (session 34: 8B Q4_0 +0.4 % in one list; 1B Q8_0
    # -3.5 % in session 15) and the sampled CLI rate (the draw list: unchanged)
    cuda_test kvc-pick kernels_vs_cpu_test "kernels_vs_cpu: sample.fuse=gemv (the greedy list)" \
        JITLLM_KVC_VARIANTS=sample-fuse "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-pick engine_golden_test "golden: sample.fuse=gemv" JITLLM_TEST_CUDA_FORCE=sample.fuse=gemv
    cuda_test gen-pick runtime_generate_test "generate (queued greedy, device draws): sample.fuse=gemv" \
        JITLLM_TEST_CUDA_FORCE=sample.fuse=gemv
    q4=$(synth llama3.1-8b q4_0)
    log "greedy md5 8b q4_0 default (4b387fa6...), then sample.fuse=gemv"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --force-variant sample.fuse=gemv
    log "sampled md5 8b q4_0 (--temperature 0.8 --seed 7) default, then sample.fuse=gemv"
    for a in " " "--force-variant sample.fuse=gemv"; do
        # shellcheck disable=SC2086
        timeout 120 "$B/jitllm" --gpu -m "$q4" -p "Once upon a time" -n 48 --temperature 0.8 --seed 7 --no-stream $a \
            2>/dev/null | md5sum | tee -a "$OUT/summary.txt"
    done
    tg_sets 8b:q4_0 "$q4" 3 " ;--force-variant sample.fuse=gemv"
    # (run_rates gives --seed 7 itself: a second --seed is refused)
    run_rates 8b:q4_0-sampled "$q4" 1 "--temperature 0.8" "--temperature 0.8 --force-variant sample.fuse=gemv"
    ;;
early38)
    # --gemv-early-blocks-for (session 38): the first blocks of a bulk gemv (those landing while the kernel
    # before runs) fill their whole ring before the PDL wait. kernels_vs_cpu's early-blocks variants on a
    # Q4_0 and a Q8_0 case, the 8B Q4_0 greedy md5 with and without, tg128 sets alternated
    nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/summary.txt"
    [ "${EARLY_KVC:-1}" = 1 ] && cuda_test kvc-early kernels_vs_cpu_test "kernels_vs_cpu: early-blocks variants" \
        JITLLM_KVC_VARIANTS=early-blocks "GTEST_FILTER=*Matches*llama_gqa4_hd128_q4_0:*Matches*granite_tail_hd64_q8_0"
    q4=$(synth llama3.1-8b q4_0)
    log "greedy md5 8b q4_0 default, then --gemv-early-blocks-for ffn_norm=32 ffn_down=96 attn_norm=110"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --gemv-early-blocks-for ffn_norm=32 ffn_down=96 attn_norm=110
    tg_sets 8b:q4_0 "$q4" "${EARLY_ROUNDS:-2}" "${EARLY_SETS:- ;--gemv-early-blocks-for ffn_norm=32;--gemv-early-blocks-for ffn_down=96;--gemv-early-blocks-for attn_norm=110;--gemv-early-blocks-for ffn_norm=32 ffn_down=96 attn_norm=110}"
    ;;
early38b)
    # session 38's default (a bulk gemv after one on fewer blocks than SMs: its first blocks fill the whole
    # ring early; 8B Q4_0: gate/up 32, q/k/v and the head 4): kernels_vs_cpu's bulk variants on a Q4_0 and a
    # Q8_0 case, golden, the 8B Q4_0 md5 with and without, tg128 against the sibling and other counts
    nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/summary.txt"
    [ "${EARLY_KVC:-1}" = 1 ] && cuda_test kvc-early kernels_vs_cpu_test "kernels_vs_cpu: bulk variants (early blocks by default)" \
        JITLLM_KVC_VARIANTS=gated+fused+bulk "GTEST_FILTER=*Matches*llama_gqa4_hd128_q4_0:*Matches*granite_tail_hd64_q8_0"
    TEST_TIMEOUT=${TEST_TIMEOUT:-150} OUT="$OUT" "$PWD/scripts/gpu-check.sh" golden1
    q4=$(synth llama3.1-8b q4_0)
    log "greedy md5 8b q4_0 default, then --no-gemv-early-blocks"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --no-gemv-early-blocks
    tg_sets 8b:q4_0 "$q4" "${EARLY_ROUNDS:-2}" "${EARLY_SETS:- ;--no-gemv-early-blocks;--gemv-early-blocks-for ffn_norm=24;--gemv-early-blocks-for ffn_norm=40}"
    ;;
grid38)
    # attn_output on 76 of 132 SMs (session 38's default, with the early blocks): golden, the 8B Q4_0 md5
    # against 100 SMs (the same bits), tg128 against 100 and 72
    nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/summary.txt"
    TEST_TIMEOUT=${TEST_TIMEOUT:-150} OUT="$OUT" "$PWD/scripts/gpu-check.sh" golden1
    q4=$(synth llama3.1-8b q4_0)
    log "greedy md5 8b q4_0 default, then --gemv-grid-for attn_output=100"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --gemv-grid-for attn_output=100
    tg_sets 8b:q4_0 "$q4" "${GRID_ROUNDS:-2}" "${GRID_SETS:- ;--gemv-grid-for attn_output=100;--gemv-grid-for attn_output=72}"
    ;;
grid39)
    # prepared in session 38 (no device time left): the other bulk gemvs on fewer blocks, each leaving SMs
    # free for the next one's early blocks (early_blocks follows any grid), with the second pass of a
    # smaller grid going to its first (earliest-landing) blocks, block-major: ffn_down (one pass on 128
    # blocks now; on 96 its blocks 0-31 take two; with one row a warp item, 1.94 passes on 132), gate/up,
    # q/k/v. 8B Q4_0 md5 first (the same bits expected), then tg128 sets alternated
    nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/summary.txt"
    q4=$(synth llama3.1-8b q4_0)
    greedy_md5 "$q4"
    greedy_md5 "$q4" --gemv-grid-for ffn_down=96
    tg_sets 8b:q4_0 "$q4" "${GRID_ROUNDS:-2}" "${GRID_SETS:- ;--gemv-grid-for ffn_down=112;--gemv-grid-for ffn_down=96;--gemv-grid-for ffn_down=80;--gemv-grid-for ffn_norm=120;--gemv-grid-for attn_norm=112;--gemv-rows-for ffn_down=1;--gemv-rows-for ffn_down=1 --gemv-grid-for ffn_down=112}"
    ;;
xregs37)
    # the bulk split-layout gemvs' x units in registers (session 37; default since 43f5afb, --no-gemv-x-regs
    # the sibling). kernels_vs_cpu on a Q4_0 and a Q8_0 case with the bulk variants (XREG) and the no-x-regs
    # ones, golden with bulk forced (XREG where it fits), the 8B greedy md5 (the same bits by construction)
    # and tg128 alternated
    nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/summary.txt"
    [ "${XREGS_KVC:-1}" = 1 ] && cuda_test kvc-xregs kernels_vs_cpu_test "kernels_vs_cpu: bulk and no-x-regs variants" \
        JITLLM_KVC_VARIANTS=gated+fused+bulk,x-regs \
        "GTEST_FILTER=*Matches*llama_gqa4_hd128_q4_0:*Matches*granite_tail_hd64_q8_0"
    cuda_test golden-xregs engine_golden_test "golden (cuda, bulk forced: XREG)" JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    q4=$(synth llama3.1-8b q4_0)
    [ "${XREGS_Q8:-1}" = 1 ] && q8=$(synth llama3.1-8b q8_0)
    log "greedy md5 8b q4_0 default (x in registers), then --no-gemv-x-regs"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --no-gemv-x-regs
    tg_sets 8b:q4_0 "$q4" "${XREGS_ROUNDS:-2}" " ;--no-gemv-x-regs"
    [ "${XREGS_Q8:-1}" = 1 ] && tg_sets 8b:q8_0 "$q8" 1 " ;--no-gemv-x-regs"
    ;;
ablate37)
    # the H100 / H200 lead (perf-notes session 36): what the split-layout gemvs' arithmetic costs 8B Q4_0 / Q8_0
    nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/summary.txt"
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    tg_sets 8b:q4_0 "$q4" 2 " ;--gemv-ablate math"
    tg_sets 8b:q8_0 "$q8" 1 " ;--gemv-ablate math"
    ;;
check39)
    # session 39, after next38 met the table on an H200: session 38's defaults under the prompt modes and the
    # whole kernels_vs_cpu suite (neither run since), 8B Q8_0 with and without the early blocks alternated
    # (next38's one round was power-capped), 8B Q4_0 at depth 0 and 4096 with the defaults
    nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/summary.txt"
    cuda_test modes prefill_modes_test "prompt modes on the GPU (cuda)"
    tg_sets 8b:q8_0 "$(synth llama3.1-8b q8_0)" "${CHECK_ROUNDS:-2}" " ;--no-gemv-early-blocks"
    q4=$(synth llama3.1-8b q4_0)
    log "tg128 at depth 0 and 4096, 8B Q4_0"
    timeout 300 "$B/jitllm" bench --gpu -m "$q4" -p 0 -n 128 -d 0,4096 -r 3 --no-warmup --with-prefill-decode -o md 2>&1 |
        tee -a "$OUT/summary.txt"
    TEST_TIMEOUT=${TEST_TIMEOUT:-300} OUT="$OUT" "$PWD/scripts/gpu-check.sh" kernels
    ;;
next38)
    # session 38, for an H200 call: the issue's last number first (8B Q4_0 tg128, two rounds), then the
    # other five shapes of the table, golden with the defaults, 8B Q4_0's block trace (per-kernel spans,
    # to set beside the H100's from trace38), the arithmetic's and x registers' rows, 8B Q8_0 depth rows
    nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/summary.txt"
    BENCH_P=0 BENCH_SHAPES=llama3.1-8b:q4_0 OUT="$OUT" "$PWD/scripts/gpu-check.sh" bench
    BENCH_P=0 BENCH_SHAPES="llama3.1-8b:q8_0 llama3.1-8b:f16 llama3.2-1b:q4_0 llama3.2-1b:q8_0 llama3.2-1b:f16 llama3.1-8b:q4_0" \
        OUT="$OUT" "$PWD/scripts/gpu-check.sh" bench
    TEST_TIMEOUT=${TEST_TIMEOUT:-150} OUT="$OUT" "$PWD/scripts/gpu-check.sh" golden1
    q4=$(synth llama3.1-8b q4_0)
    greedy_md5 "$q4"
    log "block trace 8B Q4_0 depth 0"
    trace_row trace38-8b-q4_0 "$q4"
    tg_sets 8b:q4_0 "$q4" 1 " ;--gemv-grid-for attn_output=100;--no-gemv-early-blocks;--gemv-ablate math;--no-gemv-x-regs"
    tg_sets 8b:q8_0 "$(synth llama3.1-8b q8_0)" 1 " ;--no-gemv-early-blocks"
    DEPTH_ARGS=" " OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    ;;
trace38)
    # session 38: 8B Q4_0's block trace with today's defaults (the H100 side of an H100 / H200
    # comparison of each kernel's span), then tg128 without the trace
    nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/summary.txt"
    q4=$(synth llama3.1-8b q4_0)
    log "block trace 8B Q4_0 depth 0"
    trace_row trace38-8b-q4_0 "$q4"
    tg_sets 8b:q4_0 "$q4" 1 " "
    ;;
next37)
    # prepared in session 36 (which got only an H100): on an H200 the issue's table with the greedy list's
    # default (six shapes, tg128, the copy bandwidth measured in each run), 8B Q8_0 at depth 0 / 4096, and
    # the lead from the H100 / H200 comparison: what the split-layout gemvs' arithmetic still costs 8B Q4_0
    # (`--gemv-ablate math`, timing only; session 19 on the H200: 6 % at 711 tok/s)
    nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/summary.txt"
    BENCH_P=0 OUT="$OUT" "$PWD/scripts/gpu-check.sh" bench
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    tg_sets 8b:q4_0 "$q4" 2 " ;--gemv-ablate math;--no-gemv-x-regs"
    tg_sets 8b:q8_0 "$q8" 1 " ;--gemv-ablate math;--no-gemv-x-regs"
    # four weight rows a warp item (x's shared-memory reads a row halved; last measured in session 7,
    # before the bulk rings' current shape): the text first, then the rate
    greedy_md5 "$q4"
    greedy_md5 "$q4" --gemv-rows 4
    greedy_md5 "$q4" --gemv-rows-for ffn_down=4
    tg_sets 8b:q4_0 "$q4" 1 " ;--gemv-rows 4;--gemv-rows-for ffn_down=4"
    tg_sets 8b:q8_0 "$q8" 1 " ;--gemv-rows-for ffn_down=4"
    DEPTH_ARGS=" " OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    ;;
next36)
    # session 36, after final34 / next35: the issue's six shapes as bench rows (tg128, copy bandwidth
    # measured in the run), each with the defaults and with the greedy list (sample.fuse=gemv), the two
    # alternated; 8B Q8_0 at depth 0 / 4096; the register attention's merge alternatives on 8B Q4_0;
    # `jitllm perplexity --gpu` against the CPU on llama-q4_0 (llama.cpp's logits give 536.352)
    for spec in ${SIX_SHAPES:-llama3.1-8b:q4_0 llama3.1-8b:q8_0 llama3.2-1b:q4_0 llama3.2-1b:q8_0 llama3.2-1b:f16 llama3.1-8b:f16}; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        for r in $(seq "${SIX_ROUNDS:-2}"); do
            for a in " " "--force-variant sample.fuse=gemv"; do
                log "six $spec round $r [$a]"
                # shellcheck disable=SC2086
                timeout 120 "$B/jitllm" bench --gpu -m "$f" -p 0 -n 128 -r 3 -o md $a 2>&1 |
                    grep -E "^\| (model|llama)|copy|rror" | tee -a "$OUT/summary.txt"
            done
        done
    done
    DEPTH_ARGS=" " OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    q4=$(synth llama3.1-8b q4_0)
    tg_sets 8b:q4_0 "$q4" 1 " ;--attn-warp-merge;--attn-heads-per-block 2;--attn-heads-per-block 4"
    ids="1 403 407 261 378 432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 408 419"
    for dev in --gpu " "; do
        # shellcheck disable=SC2086
        timeout 60 "$B/jitllm" perplexity $dev -m .gpu/shared/golden/synthetic/llama-q4_0.gguf --tokens "$ids" -c 24 \
            --score all 2>&1 | tail -1 | tee -a "$OUT/summary.txt"
    done
    ;;
final34)
    # session 34's defaults: the lanes gemvs' norm weight before the PDL wait (NW_EARLY). Golden, prompt modes
    # and kernels_vs_cpu's default-gate variants on the GPU, the greedy text with and without it, tg128 rounds
    cuda_test golden34 engine_golden_test "golden (defaults)"
    cuda_test modes34 prefill_modes_test "prompt modes (defaults)"
    cuda_test kvc34 kernels_vs_cpu_test "kernels_vs_cpu: gated+fused (NW_EARLY on the lanes gemvs)" \
        JITLLM_KVC_VARIANTS=gated+fused,gated+block "GTEST_FILTER=*EveryKernelMatches*"
    b4=$(synth llama3.2-1b q4_0)
    b8=$(synth llama3.2-1b q8_0)
    q4=$(synth llama3.1-8b q4_0)
    log "greedy md5 1b q4_0 default, then --no-gemv-norm-early"
    greedy_md5 "$b4"
    greedy_md5 "$b4" --no-gemv-norm-early
    tg_sets 1b:q4_0 "$b4" 2 " ;--no-gemv-norm-early"
    tg_sets 1b:q8_0 "$b8" 2 " ;--no-gemv-norm-early"
    tg_sets 8b:q4_0 "$q4" 1 " "
    ;;
next34c)
    # session 34 after next34b (the output head's greedy pick +0.4 %): the normed gemvs' norm weight loaded
    # before the PDL wait (--gemv-norm-early); same numbers (greedy md5), then tg128 rounds
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    b4=$(synth llama3.2-1b q4_0)
    log "greedy md5 8b q4_0 default (4b387fa6...), then --gemv-norm-early"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --gemv-norm-early
    tg_sets 8b:q4_0 "$q4" 2 " ;--gemv-norm-early;--force-variant sample.fuse=gemv;--gemv-norm-early --force-variant sample.fuse=gemv"
    tg_sets 8b:q8_0 "$q8" 1 " ;--gemv-norm-early;--force-variant sample.fuse=gemv"
    tg_sets 1b:q4_0 "$b4" 1 " ;--gemv-norm-early"
    ;;
next34b)
    # session 34 after next34 (attn.fuse=qkv 15.6 % slower: off): block traces of --gemv-xq-norm with early slots
    # 3 / 4 / 4 against the default, to see where its producers' cost goes; the greedy pick in the output head
    q4=$(synth llama3.1-8b q4_0)
    XQN="--gemv-xq-norm --gemv-early-slots-for attn_norm=3 ffn_norm=4 output_norm=4"
    trace_row trace34-q4-default "$q4"
    # shellcheck disable=SC2086
    trace_row trace34-q4-xqn "$q4" $XQN
    tg_sets 8b:q4_0 "$q4" 2 " ;$XQN;--force-variant sample.fuse=gemv;$XQN --force-variant sample.fuse=gemv"
    ;;
next34)
    # session 34: attn.fuse=qkv (the decode attention as the q/k/v gemv's tail, gemv.cu ATT_TAIL):
    # kernels_vs_cpu on every case, golden with it forced (bulk forced on the small models), the greedy
    # text, tg128 rounds against the default (8B Q4_0, Q8_0), a block trace
    cuda_test kvc-fuse kernels_vs_cpu_test "kernels_vs_cpu: attn.fuse=qkv" \
        JITLLM_KVC_VARIANTS=attn-fuse "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-fuse engine_golden_test "golden: gemv.load=bulk, attn.fuse=qkv" \
        JITLLM_TEST_CUDA_FORCE=gemv.load=bulk,attn.fuse=qkv
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    log "greedy md5 8b q4_0 default (4b387fa6...), then attn.fuse=qkv"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --force-variant attn.fuse=qkv
    tg_sets 8b:q4_0 "$q4" 2 " ;--force-variant attn.fuse=qkv"
    tg_sets 8b:q8_0 "$q8" 1 " ;--force-variant attn.fuse=qkv"
    trace_row trace34-q4-fuse "$q4" --force-variant attn.fuse=qkv
    # where the tail (one block a kv head) stops paying: depths 256 / 512 / 1024, forced against the default
    for a in " " "--force-variant attn.fuse=qkv"; do
        log "depth 8b q4_0 [$a]"
        # shellcheck disable=SC2086
        timeout 200 "$B/jitllm" bench --gpu -m "$q4" -p 0 -n 128 -d 256,512,1024 -r 2 --no-warmup -o md $a 2>&1 |
            grep -E "^\| llama|rror" | tee -a "$OUT/summary.txt"
    done
    ;;
next33b)
    # session 33, after first33 / next33 (--gemv-xq-norm 7.8 % slower; --gemv-ablate xpre, which now runs
    # the normed consumers' rms fix-up on copied bytes, 741 against xpre-nonorm's 797): the consumers'
    # loads of the groups' sums issued ahead of the ring's late slots. Correctness on the Q4_0 shapes,
    # then tg128 rounds against the default
    cuda_test kvc-xqn kernels_vs_cpu_test "kernels_vs_cpu: --gemv-xq-norm (Q4_0 shapes)" \
        JITLLM_KVC_VARIANTS=xq-norm "GTEST_FILTER=*EveryKernelMatches*q4_0*"
    q4=$(synth llama3.1-8b q4_0)
    tg_sets 8b:q4_0 "$q4" 2 " ;--gemv-xq-norm;--gemv-xq-norm --gemv-early-slots-for attn_norm=3 ffn_norm=4 output_norm=4;--gemv-ablate xpre"
    ;;
next32)
    # prepared in session 31: kernels_vs_cpu producer variants with the consumers' early slots (4 / 3),
    # where the gate/up producer's remaining cost goes (timing only: its clusters without the stores,
    # its waits without the quantization, its last groups' quantization left out; ffn_down's bulk
    # prologue alone), 8B Q8_0 with the producers forced and its consumers' slots, the six shapes
    cuda_test kvc-xq kernels_vs_cpu_test "kernels_vs_cpu: the producers' variants" \
        JITLLM_KVC_VARIANTS=bulk+attn,+xq-,bulk+grid8 "GTEST_FILTER=*EveryKernelMatches*"
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    log "greedy md5 8b q4_0 default (4b387fa6...)"
    greedy_md5 "$q4"
    tg_sets 8b:q4_0 "$q4" 2 " ;--gemv-ablate xq-nosync;--gemv-ablate xq-waitonly;--gemv-ablate xq-notail;--force-variant gemv.xq=block --gemv-ablate xpre-down --gemv-early-slots-for ffn_down=4 attn_output=3"
    # the q/k/v gemv's last pass: 3072 row sets of 16 a block pass on 132 blocks leave 60 blocks with 32
    # and 72 with 16 (73 % balanced): 96 blocks (2 whole passes), 12 warps a block (2 passes of 12: 24
    # against 23.3, only this kernel; --gemv-balance did it for every gemv, slower in session 20), or
    # the last pass round every block (--gemv-last-spread did it for every gemv, slower in session 25)
    tg_sets 8b:q4_0 "$q4" 2 " ;--gemv-grid-for attn_norm=96;--gemv-block-for attn_norm=384;--gemv-last-spread-for attn_norm"
    tg_sets 8b:q8_0 "$q8" 2 " ;--force-variant gemv.xq=producer;--force-variant gemv.xq=producer --gemv-early-slots-for ffn_down=4 attn_output=3;--force-variant gemv.xq=producer --no-attn-xq"
    # (then the six shapes: `BENCH_R=3 SIX19_DEPTH="llama3.1-8b:q8_0 llama3.1-8b:q4_0" scripts/gpu-check.sh next32 six19`)
    ;;
final31)
    # the session's defaults (attention as a producer, the consumers' early slots 4 / 3): greedy text,
    # golden with bulk forced, tg128 against the sibling
    q4=$(synth llama3.1-8b q4_0)
    log "greedy md5 8b q4_0 default (4b387fa6...)"
    greedy_md5 "$q4"
    tg_sets 8b:q4_0 "$q4" 1 " ;--force-variant gemv.xq=block"
    cuda_test golden-bulk engine_golden_test "golden with gemv.load=bulk forced" JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    ;;
next31g)
    # around ffn_down=4 attn_output=3: ffn_down 5, and the normed gemvs' own early slots with it
    q4=$(synth llama3.1-8b q4_0)
    tg_sets 8b:q4_0 "$q4" 2 "--gemv-early-slots-for ffn_down=4 attn_output=3;--gemv-early-slots-for ffn_down=5 attn_output=3;--gemv-early-slots-for ffn_down=4 attn_output=3 attn_norm=3;--gemv-early-slots-for ffn_down=4 attn_output=3 attn_norm=1"
    ;;
next31f)
    # the XQ_IN gemvs' early slots (ffn_down 4, attn_output 3) at depth 4096 and on the greedy text
    q4=$(synth llama3.1-8b q4_0)
    log "greedy md5 8b q4_0 --gemv-early-slots-for ffn_down=4 attn_output=3 (4b387fa6...)"
    greedy_md5 "$q4" --gemv-early-slots-for ffn_down=4 attn_output=3
    DEPTH_R=2 depth_sets 8b:q4_0 "$q4" " ;--gemv-early-slots-for ffn_down=4 attn_output=3"
    ;;
next31e)
    # next31d: ffn_down=4 attn_output=3 785.8 / 784.9, ffn_down=3 780.8 / 781.0 against 770.7 / 770.9
    q4=$(synth llama3.1-8b q4_0)
    tg_sets 8b:q4_0 "$q4" 2 " ;--gemv-early-slots-for ffn_down=3 attn_output=3;--gemv-early-slots-for ffn_down=4 attn_output=3;--gemv-early-slots-for ffn_down=3 attn_output=3 ffn_norm=3"
    ;;
next31d)
    # next31c: --gemv-early-slots-for ffn_down=4 779.5 / 779.4 against 770.4 / 770.7; the neighbours
    q4=$(synth llama3.1-8b q4_0)
    tg_sets 8b:q4_0 "$q4" 2 " ;--gemv-early-slots-for ffn_down=3;--gemv-early-slots-for ffn_down=4;--gemv-early-slots-for ffn_down=4 attn_output=3;--gemv-early-slots-for ffn_down=4 attn_output=1"
    q8=$(synth llama3.1-8b q8_0)
    tg_sets 8b:q8_0 "$q8" 1 " ;--force-variant gemv.xq=producer;--force-variant gemv.xq=producer --gemv-early-slots-for ffn_down=4;--force-variant gemv.xq=producer --gemv-early-slots-for ffn_down=5"
    ;;
next31c)
    # --gemv-xq-lag 2 (the leader quantizes a group two passes later: less waiting for the other block),
    # greedy text first; ffn_down / attn_output's ring slots before the PDL wait now that their x
    # prologue is one bulk copy (--gemv-early-slots-for; default 2 of 5 for Q4_0)
    q4=$(synth llama3.1-8b q4_0)
    log "greedy md5 8b q4_0 default / --gemv-xq-lag 2 / 3 (4b387fa6...)"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --gemv-xq-lag 2
    greedy_md5 "$q4" --gemv-xq-lag 3
    tg_sets 8b:q4_0 "$q4" 2 " ;--gemv-xq-lag 2;--gemv-xq-lag 3;--gemv-early-slots-for ffn_down=4;--gemv-early-slots-for ffn_down=5 attn_output=5;--gemv-early-slots-for attn_output=4"
    ;;
first31b)
    # the producers' group quantization by redux.sync (one instruction for the max, one for the sum);
    # kernels_vs_cpu now checks each producer's bytes against its output quantized, and gives each
    # consumer the CPU's x quantized
    cuda_test kvc-xq kernels_vs_cpu_test "kernels_vs_cpu: the producers' variants" \
        JITLLM_KVC_VARIANTS=bulk+attn,+xq-,bulk+grid8,bulk+ring1k+grid8 "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-bulk engine_golden_test "golden with gemv.load=bulk forced" JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    q4=$(synth llama3.1-8b q4_0)
    log "greedy md5 8b q4_0 default / gemv.xq=block (session 30: 4b387fa6...)"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --force-variant gemv.xq=block
    tg_sets 8b:q4_0 "$q4" 2 " ;--no-attn-xq;--force-variant gemv.xq=block"
    ;;
first31)
    # session 31: the decode attention quantizes its output for attn_output (gemv.xq=producer's second
    # producer): kernels_vs_cpu on every bulk variant (the new attention write paths: ticket merges,
    # cluster merges, the tensor-map kernel's), golden with bulk forced, greedy text against the
    # sibling, tg128 rounds against --no-attn-xq and the sibling, depth rows, 8B Q8_0 with it forced
    cuda_test kvc-bulk kernels_vs_cpu_test "kernels_vs_cpu: bulk variants (attention XQ_OUT)" \
        JITLLM_KVC_VARIANTS=fused+bulk "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-bulk engine_golden_test "golden with gemv.load=bulk forced" JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    log "greedy md5 8b q4_0 default / --no-attn-xq / gemv.xq=block (session 30: 4b387fa6...)"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --no-attn-xq
    greedy_md5 "$q4" --force-variant gemv.xq=block
    tg_sets 8b:q4_0 "$q4" 2 " ;--no-attn-xq;--force-variant gemv.xq=block"
    DEPTH_R=2 depth_ab 8b:q4_0 "$q4" 1 "--no-attn-xq"
    tg_sets 8b:q8_0 "$q8" 2 " ;--force-variant gemv.xq=producer"
    ;;
next31)
    # prepared in session 30: the producer forced on Q8_0 (the Q8_0 tail case) in kernels_vs_cpu, golden;
    # 8B Q4_0 depth rows with the new default against the sibling (the depth ratio), 8B Q8_0 with the
    # producer forced, attn_output's clusters of 2 coming with it, against its default (next30e: -0.4 %,
    # one row each, without attn_output's clusters)
    cuda_test kvc-xq kernels_vs_cpu_test "kernels_vs_cpu: gemv.xq variants" \
        JITLLM_KVC_VARIANTS=xq-producer,bulk+grid8,xq-groups "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-bulk engine_golden_test "golden with gemv.load=bulk forced" JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    log "greedy md5 8b q4_0 default (attn_output's clusters of 2 now set by the schedule) / gemv.xq=block"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --force-variant gemv.xq=block
    # what the producer still costs against the prologue alone: its clusters without the stores
    # (xq-nosync, attn_output's clusters with them) and the sibling with ffn_down's bulk prologue
    # (xpre-down: no producer, no clusters; both timing only)
    tg_sets 8b:q4_0 "$q4" 2 " ;--force-variant gemv.xq=block;--gemv-ablate xq-nosync;--force-variant gemv.xq=block --gemv-ablate xpre-down"
    DEPTH_R=2 depth_ab 8b:q4_0 "$q4" 1 "--force-variant gemv.xq=block"
    tg_sets 8b:q8_0 "$q8" 2 " ;--force-variant gemv.xq=producer;--force-variant gemv.xq=producer --gemv-cluster-for attn_output=1"
    ;;
next30e)
    # session 30, last call: the pairs (+0.75 % in next30d) by default; attn_output's 100 blocks in
    # clusters of 2 (whole TPCs: gate/up's pairs land on the 16 free ones at attention's end)
    tg_sets 8b:q4_0 "$(synth llama3.1-8b q4_0)" 2 " ;--force-variant gemv.xq=block;--gemv-cluster-for attn_output=2"
    q8=$(synth llama3.1-8b q8_0)
    tg_sets 8b:q8_0 "$q8" 1 " ;--force-variant gemv.xq=block"
    log "depth 8b:q8_0 [default]"
    depth_rows "$q8" jitllm
    ;;
next30d)
    # session 30: next30c's per-pass mbarrier arrivals still lost 8 %; clusters alone (xq-nosync) +2.7 %.
    # Now by default no clusters: each gate/up block takes whole groups of 32 rows (4 on 112 SMs);
    # --gemv-xq-pairs keeps the pairs with asynchronous stores (the warps never wait)
    cuda_test kvc-xq kernels_vs_cpu_test "kernels_vs_cpu: gemv.xq variants" \
        JITLLM_KVC_VARIANTS=bulk+grid8,xq-groups,bulk+xq-block "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-bulk engine_golden_test "golden with gemv.load=bulk forced (gemv.xq=producer)" \
        JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    q4=$(synth llama3.1-8b q4_0)
    log "greedy md5 8b q4_0 --gemv-xq-groups / gemv.xq=block / pairs"
    greedy_md5 "$q4" --gemv-xq-groups
    greedy_md5 "$q4" --force-variant gemv.xq=block
    greedy_md5 "$q4"
    # (then the groups were the default and the pairs a flag, as written in the rows: since next30e
    # the pairs are the default, with attn_output in clusters of 2, and the groups --gemv-xq-groups)
    tg_sets 8b:q4_0 "$q4" 2 "--gemv-xq-groups;--force-variant gemv.xq=block;--gemv-cluster-for attn_output=1;--force-variant gemv.xq=block --gemv-grid-for ffn_norm=112"
    tg_sets 8b:q8_0 "$(synth llama3.1-8b q8_0)" 1 " ;--force-variant gemv.xq=block"
    ;;
next30c)
    # session 30: next30b's producer lost 14 % (646 against 749 on 8B Q4_0); each warp now arrives on
    # the leader's per-pass mbarrier (no returned atomic, no end barrier) and the leader's warp q % 16
    # quantizes pass q after its own pass q + 1; xq-nosync keeps the clusters without the arrivals
    cuda_test kvc-xq kernels_vs_cpu_test "kernels_vs_cpu: gemv.xq variants" \
        JITLLM_KVC_VARIANTS=bulk+grid8,bulk+ring1k+grid8,bulk+rows1,bulk+xq-block "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-bulk engine_golden_test "golden with gemv.load=bulk forced (gemv.xq=producer)" \
        JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    q4=$(synth llama3.1-8b q4_0)
    log "greedy md5 8b q4_0 default / gemv.xq=block"
    greedy_md5 "$q4"
    greedy_md5 "$q4" --force-variant gemv.xq=block
    tg_sets 8b:q4_0 "$q4" 2 " ;--force-variant gemv.xq=block;--gemv-ablate xq-nosync"
    tg_sets 8b:q8_0 "$(synth llama3.1-8b q8_0)" 1 " ;--force-variant gemv.xq=block"
    ;;
next30b)
    # session 30: gemv.xq=producer (the SwiGLU gemv writes ffn_down's x quantized, pairs of blocks in
    # clusters complete each group of 32): correctness first, then the rates against the sibling
    cuda_test kvc-xq kernels_vs_cpu_test "kernels_vs_cpu: bulk variants (gemv.xq=producer by default there)" \
        JITLLM_KVC_VARIANTS=fused+bulk "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-bulk engine_golden_test "golden with gemv.load=bulk forced (gemv.xq=producer)" \
        JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    for f in "$q4" "$q8"; do
        timeout 60 "$B/jitllm" --gpu -m "$f" -p "Once upon a time" -n 4 --verbose-init --print-plan --print-threads 2>&1 |
            grep -E "gemv.xq|thread-block clusters|ffn_norm_gate_up_act__.*grid" | head -3 | tee -a "$OUT/summary.txt"
        log "greedy md5 $(basename "$f") default / gemv.xq=block"
        greedy_md5 "$f"
        greedy_md5 "$f" --force-variant gemv.xq=block
    done
    tg_sets 8b:q4_0 "$q4" 2 " ;--force-variant gemv.xq=block"
    tg_sets 8b:q8_0 "$q8" 2 " ;--force-variant gemv.xq=block"
    log "depth 8b:q8_0 [default]"
    depth_rows "$q8" jitllm
    ;;
first30)
    # session 30: the x prologue as one bulk copy (--gemv-ablate xpre*: the output is wrong), rounds
    # alternated, so the prologue's share of each kernel is known before building the real thing
    tg_sets 8b:q4_0 "$(synth llama3.1-8b q4_0)" 2 \
        " ;--gemv-ablate xpre-down;--gemv-ablate xpre-out;--gemv-ablate xpre-nonorm;--gemv-ablate xpre"
    tg_sets 8b:q8_0 "$(synth llama3.1-8b q8_0)" 1 " ;--gemv-ablate xpre-nonorm;--gemv-ablate xpre"
    ;;
next30)
    # prepared in session 29: --attn-tma-stages 3 beside the default cluster of 9 (call 6: +0.8 % on
    # 8B Q8_0 at depth 4096, one run; call 4 through --attn-kv-stages 3: +0.2 %, Q4_0 -0.3 %): rounds
    # alternated on one machine, both types; then prompt modes with the session's defaults
    for spec in llama3.1-8b:q8_0 llama3.1-8b:q4_0; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        depth_ab "$spec" "$f" "${AB_ROUNDS:-2}" "--attn-tma-stages 3"
    done
    cuda_test modes prefill_modes_test "prompt modes on the GPU (cuda, default gates)"
    ;;
last29)
    # session 29, the last device seconds: the tensor-map kernel's own ring depth (--attn-tma-stages,
    # new: --attn-kv-stages also changes the register kernel's graph below 768): 3 slots with the
    # default cluster of 9 (4 tiles a block at depth 4096: one refill), and one-slot blocks (65 KiB,
    # three an SM) in clusters of 12 / 16 (which then fit); DEPTH_R=2
    q8=$(synth llama3.1-8b q8_0)
    cluster_fit "$q8" --attn-tma-stages 1 --attn-tma-cluster 1 --attn-splits 16
    DEPTH_R=2 depth_sets 8b:q8_0 "$q8" "${TMA_SETS:- ;--attn-tma-stages 3;--attn-tma-stages 1 --attn-tma-cluster 1 --attn-splits 12;--attn-tma-stages 1 --attn-tma-cluster 1 --attn-splits 16}"
    ;;
final29)
    # session 29, last call: the cluster merge by default where the device's clusters fit (the probe's
    # table, the plan's choice), kernels_vs_cpu's attn-tma variants, golden with the tensor-map kernel
    # forced (the switch at position 4: both graphs), 8B Q8_0 depth rows twice, 8B Q4_0
    q8=$(synth llama3.1-8b q8_0)
    timeout 60 "$B/jitllm" --gpu -m "$q8" -p "Once upon a time" -n 4 --ctx-size 4224 --verbose-init --print-plan --print-threads 2>&1 |
        grep -E "thread-block clusters|split_kv_tma_f16 .*grid" | head -3 | tee -a "$OUT/summary.txt"
    cuda_test kvc-tma kernels_vs_cpu_test "kernels_vs_cpu: attn.kv=tma variants (default: the cluster where it fits)" \
        JITLLM_KVC_VARIANTS=attn-tma "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-tma engine_golden_test "golden with attn.kv=tma, --attn-tma-from 4 (the cluster merge by default)" \
        JITLLM_TEST_CUDA_FORCE=attn.kv=tma JITLLM_TEST_CUDA_ATTN_TMA_FROM=4
    for r in 1 2; do
        log "depth 8b:q8_0 [default] round $r"
        depth_rows "$q8" jitllm
    done
    log "depth 8b:q8_0 [--attn-tma-cluster 0]"
    depth_rows "$q8" jitllm --attn-tma-cluster 0
    q4=$(synth llama3.1-8b q4_0)
    log "depth 8b:q4_0 [default]"
    depth_rows "$q4" jitllm
    ;;
next29c)
    # session 29, call 4: cluster merges with rings that keep a block's tiles in flight: 9 splits
    # (the largest cluster all 8 kv heads fit at once with one 132 KiB block an SM) through 3 slots
    # (4 tiles a block at depth 4096: one refill), and 12 / 16 splits of one-slot blocks (65 KiB:
    # three an SM, so clusters of 12 / 16 fit); Q4_0 likewise
    q8=$(synth llama3.1-8b q8_0)
    # (as run in call 4, before --attn-tma-stages: the one-slot rows were refused by the flag check)
    for a in "--attn-splits 12 --attn-kv-stages 1" "--attn-splits 16 --attn-kv-stages 1"; do
        log "$a:"
        # shellcheck disable=SC2086
        cluster_fit "$q8" --attn-tma-cluster 1 $a
    done
    depth_sets 8b:q8_0 "$q8" "${TMA_SETS:- ;--attn-tma-cluster 1 --attn-splits 9 --attn-kv-stages 3;--attn-tma-cluster 1 --attn-splits 12 --attn-kv-stages 1;--attn-tma-cluster 1 --attn-splits 16 --attn-kv-stages 1;--attn-tma-cluster 1 --attn-splits 9}"
    q4=$(synth llama3.1-8b q4_0)
    depth_sets 8b:q4_0 "$q4" " ;--attn-tma-cluster 1 --attn-splits 9 --attn-kv-stages 3;--attn-tma-cluster 1 --attn-splits 9"
    ;;
next29b)
    # session 29, call 3: --attn-tma-cluster with the merge's outputs spread over the active blocks
    # (call 2 left the inactive ranks' share unwritten): kernels_vs_cpu; which cluster sizes fit all 8
    # kv heads at once (12 and 16: 7 of 8 in call 2; 8: all); depth rows at the sizes that fit; a trace
    cuda_test kvc-cluster kernels_vs_cpu_test "kernels_vs_cpu: attn.kv=tma with --attn-tma-cluster" \
        JITLLM_KVC_VARIANTS=attn-tma+cluster "GTEST_FILTER=*EveryKernelMatches*"
    q8=$(synth llama3.1-8b q8_0)
    sets=" "
    for n in 9 10 11 8; do
        log "splits $n:"
        cluster_fit "$q8" --attn-tma-cluster 1 --attn-splits $n | grep "^\[jitllm\] attn__split_kv_tma_f16: all" > /dev/null &&
            sets="$sets;--attn-tma-cluster 1 --attn-splits $n"
    done
    depth_sets 8b:q8_0 "$q8" "$sets;--attn-splits 8; "
    log "block trace 8b:q8_0 depth 4096 (--attn-tma-cluster 1 --attn-splits 8)"
    trace_row trace-q8-cl8 "$q8" -d 4096 --attn-tma-cluster 1 --attn-splits 8
    ;;
next29)
    # session 29, call 2: --attn-tma-cluster (a kv head's splits as one thread-block cluster, their
    # states merged through distributed shared memory instead of scratch, a fence, a ticket and two
    # L2 round trips: first29's trace put that merge at ~5 us a layer at depth 4096): kernels_vs_cpu,
    # how many clusters fit, depth rows at 12 / 16 / 8 splits, a trace, Q4_0, golden
    cuda_test kvc-cluster kernels_vs_cpu_test "kernels_vs_cpu: attn.kv=tma with --attn-tma-cluster" \
        JITLLM_KVC_VARIANTS=attn-tma+cluster "GTEST_FILTER=*EveryKernelMatches*"
    q8=$(synth llama3.1-8b q8_0)
    for a in "" "--attn-splits 16" "--attn-splits 8"; do
        # shellcheck disable=SC2086
        cluster_fit "$q8" --attn-tma-cluster 1 $a
    done
    depth_sets 8b:q8_0 "$q8" "${TMA_SETS:- ;--attn-tma-cluster 1;--attn-tma-cluster 1 --attn-splits 16;--attn-tma-cluster 1 --attn-splits 8; }"
    log "block trace 8b:q8_0 depth 4096 (--attn-tma-cluster 1)"
    trace_row trace-q8-cl "$q8" -d 4096 --attn-tma-cluster 1
    q4=$(synth llama3.1-8b q4_0)
    depth_sets 8b:q4_0 "$q4" " ;--attn-tma-cluster 1"
    cuda_test golden-cluster engine_golden_test "golden with attn.kv=tma, --attn-tma-cluster, --attn-tma-from 4" \
        JITLLM_TEST_CUDA_FORCE=attn.kv=tma JITLLM_TEST_CUDA_ATTN_TMA_FROM=4 JITLLM_TEST_CUDA_ATTN_TMA_CLUSTER=1
    ;;
first29)
    # session 29, call 1: block traces of 8B Q8_0 at depth 4096 and 0 with the defaults (where the
    # tensor-map attention's ~6 us a layer of depth increment goes: its chunk loop, the merge, the
    # attn_output hand-over), then 8B Q4_0 at depths 256 / 512 (the --attn-tma-from switch was
    # measured on Q8_0 only): the tensor-map kernel everywhere against ld
    q8=$(synth llama3.1-8b q8_0)
    for d in 4096 0; do
        log "block trace 8b:q8_0 depth $d (defaults)"
        trace_row "trace-q8-d$d" "$q8" -d "$d" --ctx-size 4224
    done
    q4=$(synth llama3.1-8b q4_0)
    for a in "--attn-tma-from 0" "--force-variant attn.kv=ld"; do
        log "depth 256 / 512 8b:q4_0 [$a]"
        timeout 120 "$B/jitllm" bench --gpu -m "$q4" -p 0 -n 128 -d 0,256,512 -r 3 --no-warmup -o md --ctx-size 4224 $a 2>&1 |
            grep -E "^\| llama|rror" | tee -a "$OUT/summary.txt"
    done
    ;;
depth28b)
    # session 28, last device seconds: at depth 4096 attn_output's blocks cannot land beside the 96
    # tensor-map attention blocks (132 KiB each); with its rings cut to 84 KiB (4 slots of 512
    # columns) both fit an SM (~210 KiB, 64 K registers), so attn_output lands at attention's start
    # everywhere and prefetches ~2/3 of its rows (applies to both decode graphs: depth 0 shows the cost)
    q8=$(synth llama3.1-8b q8_0)
    IFS=';' read -ra sets <<< "${TMA_SETS:- ;--gemv-bulk-kb-for attn_output=84;--gemv-bulk-kb-for attn_output=84 --gemv-early-slots-for attn_output=4; }"
    for a in "${sets[@]}"; do
        log "depth 8b:q8_0 [$a]"
        DEPTH_R=2 depth_rows "$q8" jitllm $a
    done
    ;;
next28)
    # prepared in session 27: why 8B Q8_0 loses ~1.5 % at depth 0 with attn.kv=tma at n_ctx 4224 (and
    # not at n_ctx 128, nor on Q4_0): the hypothesis is the 12 x 8 blocks of 132 KiB, 88 of them
    # empty at depth 0, each landing on an SM between the q/k/v gemv's block and attn_output's.
    # If so: few splits recover depth 0 (and lose at 4096), the register kernel is the control
    q8=$(synth llama3.1-8b q8_0)
    # --attn-tma-from (prepared in session 27): positions below N on a second graph with the register
    # kernel: golden with the tensor-map kernel forced and the switch at position 4 (both graphs run),
    # the greedy text across the switch, then the depth rows
    cuda_test kvc-tma-merge1 kernels_vs_cpu_test "kernels_vs_cpu: attn.kv=tma with --attn-tma-merge1" \
        JITLLM_KVC_VARIANTS=attn-tma+merge1 "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-tma-from engine_golden_test "golden with attn.kv=tma, --attn-tma-from 4" \
        JITLLM_TEST_CUDA_FORCE=attn.kv=tma JITLLM_TEST_CUDA_ATTN_TMA_FROM=4
    log "greedy text 8b:q8_0 [default / --attn-tma-from 20 / ld]"
    greedy_md5 "$q8" --ctx-size 4096
    greedy_md5 "$q8" --ctx-size 4096 --attn-tma-from 20
    greedy_md5 "$q8" --ctx-size 4096 --force-variant attn.kv=ld
    IFS=';' read -ra sets <<< "${TMA_SETS:- ;--force-variant attn.kv=ld;--attn-tma-from 1024;--attn-tma-from 2048;--attn-tma-merge1;--attn-splits 2;--gemv-grid-for attn_output=120; }"
    for a in "${sets[@]}"; do
        log "depth 8b:q8_0 [$a]"
        depth_rows "$q8" jitllm $a
    done
    ;;
final27)
    # session 27, last call: attn.kv=tma as the sm_90 default beyond 256 positions of context (128-
    # position tiles, 2 slots, 12 / 16 splits): golden and prompt modes with the defaults, depth rows
    cuda_test golden-default engine_golden_test "golden (cuda, default gates)"
    q8=$(synth llama3.1-8b q8_0)
    log "depth 8b:q8_0 [default]"
    depth_rows "$q8" jitllm
    b4=$(synth llama3.2-1b q4_0)
    for a in " " "--force-variant attn.kv=ld"; do
        log "depth 1b:q4_0 [$a]"
        depth_rows "$b4" jitllm $a
    done
    cuda_test modes prefill_modes_test "prompt modes on the GPU (cuda, default gates)"
    ;;
next27d)
    # session 27, call 4: attn.kv=tma, 128-position tiles through 2 slots, 16 splits (the best shape of
    # call 3) with the K/V rows prefetched into L2 by the q/k/v gemv (--kv-l2-prefetch), the driver's
    # carveout, 12 splits; 8B Q4_0 depth rows
    q8=$(synth llama3.1-8b q8_0)
    q4=$(synth llama3.1-8b q4_0)
    T="--force-variant attn.kv=tma --attn-chunk 128 --attn-kv-stages 2"
    IFS=';' read -ra sets <<< "${TMA_SETS:- ;$T;$T --kv-l2-prefetch last;$T --kv-l2-prefetch start;$T --attn-carveout -1;$T --attn-splits 12; }"
    for a in "${sets[@]}"; do
        log "depth 8b:q8_0 [$a]"
        depth_rows "$q8" jitllm $a
    done
    for a in " " "$T"; do
        log "depth 8b:q4_0 [$a]"
        depth_rows "$q4" jitllm $a
    done
    ;;
next27c)
    # session 27, call 3: attn.kv=tma with every tile copied before the PDL wait (the current row
    # patched in shared memory), 256-position tiles; correctness, depth rows, block traces at depth 0
    cuda_test kvc-tma kernels_vs_cpu_test "kernels_vs_cpu: attn.kv=tma variants" \
        JITLLM_KVC_VARIANTS=attn-tma "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-tma engine_golden_test "golden with attn.kv=tma, --attn-chunk 128 --attn-kv-stages 2" \
        JITLLM_TEST_CUDA_FORCE=attn.kv=tma JITLLM_TEST_CUDA_ATTN_CHUNK=128 JITLLM_TEST_CUDA_ATTN_KV_STAGES=2
    q8=$(synth llama3.1-8b q8_0)
    T="--force-variant attn.kv=tma"
    IFS=';' read -ra sets <<< "${TMA_SETS:- ;$T --attn-chunk 128 --attn-kv-stages 2;$T;$T --attn-chunk 256 --attn-kv-stages 1;$T --attn-chunk 128 --attn-kv-stages 1;$T --attn-kv-stages 2; }"
    for a in "${sets[@]}"; do
        log "depth 8b:q8_0 [$a]"
        depth_rows "$q8" jitllm $a
    done
    log "block trace 8b:q8_0 depth 0 (default)"
    trace_row trace-default "$q8"
    log "block trace 8b:q8_0 depth 0 (tma chunk 128, 2 stages)"
    trace_row trace-tma128 "$q8" $T --attn-chunk 128 --attn-kv-stages 2
    ;;
next27b)
    # session 27: attn.kv=tma (attention_decode_tma.cu: K/V tiles by tensor-map copies into a
    # shared-memory ring, q . k and p . v on mma.sync): kernels_vs_cpu, golden with it forced (the
    # stories260K case refuses it: head dim 8), greedy text, 8B Q8_0 depth rows of ring shapes
    cuda_test kvc-tma kernels_vs_cpu_test "kernels_vs_cpu: attn.kv=tma variants" \
        JITLLM_KVC_VARIANTS=attn-tma "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test golden-tma engine_golden_test "golden with attn.kv=tma" JITLLM_TEST_CUDA_FORCE=attn.kv=tma
    q8=$(synth llama3.1-8b q8_0)
    T="--force-variant attn.kv=tma"
    log "greedy text 8b:q8_0 [default / tma]"
    greedy_md5 "$q8"
    greedy_md5 "$q8" $T
    IFS=';' read -ra sets <<< "${TMA_SETS:- ;$T;$T --attn-kv-stages 2 --attn-splits 32;$T --attn-kv-stages 2;$T --attn-chunk 128 --attn-kv-stages 2;$T --attn-kv-stages 1 --attn-splits 64; }"
    for a in "${sets[@]}"; do
        log "depth 8b:q8_0 [$a]"
        depth_rows "$q8" jitllm $a
    done
    ;;
next27)
    # prepared in session 26 (no device time left): a 12-warp gate/up (--gemv-block-for
    # ffn_norm=384) keeps 5 ring slots of 2048-column items a warp in 135 KiB, which fits beside
    # attn_output's 72 KiB of prefetched work (full carveout both): every gate/up block lands at
    # attention's end with its per-warp ring depth (calls 2-4 of session 26: early landing with the
    # full ring streamed gate/up at 91 % of the copy bandwidth; a smaller ring per warp lost more)
    cuda_test next27-kvc kernels_vs_cpu_test "kernels_vs_cpu: gateup384 variant" \
        JITLLM_KVC_VARIANTS=gateup384 "GTEST_FILTER=*EveryKernelMatches*"
    q4=$(synth llama3.1-8b q4_0)
    co="--gemv-bulk-kb-for attn_output=72 --gemv-early-slots-for attn_output=4 --gemv-bulk-kb-for ffn_norm=140 --gemv-block-for ffn_norm=384"
    log "greedy text [default / co384]"
    for a in "" "$co"; do
        greedy_md5 "$q4" $a
    done
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q4_0 control: gate/up 12 warps, 5 slots" "$q4" 3 --gemv-bulk-kb-for ffn_norm=140 --gemv-block-for ffn_norm=384
    tg_row "8b:q4_0 co384" "$q4" 3 $co
    tg_row "8b:q4_0 co384, attn_output on every SM" "$q4" 3 $co --gemv-grid-for attn_output=999
    tg_row "8b:q4_0 co384, gate/up early 3" "$q4" 3 $co --gemv-early-slots-for ffn_norm=3
    tg_row "8b:q4_0 default" "$q4" 3
    log "block trace 8b:q4_0 depth 0 (co384)"
    trace_row trace-co384 "$q4" $co
    ;;
next26g)
    # session 26, call 9: with attn_output on 100 SMs (the new default) 32 gate/up blocks land at
    # attention's end: their early slot count again; Q8_0's attn_output at 116 / 124; Q4_0 depth
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q4_0 gate/up early 3" "$q4" 3 --gemv-early-slots-for ffn_norm=3
    tg_row "8b:q4_0 gate/up early 1" "$q4" 3 --gemv-early-slots-for ffn_norm=1
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q8_0 default" "$q8" 3
    tg_row "8b:q8_0 attn_output on 116" "$q8" 3 --gemv-grid-for attn_output=116
    tg_row "8b:q8_0 attn_output on 124" "$q8" 3 --gemv-grid-for attn_output=124
    tg_row "8b:q8_0 default" "$q8" 3
    log "depth 8b:q4_0 [default]"
    depth_rows "$q4" jitllm
    ;;
final26)
    # session 26, call 8: the new default (a Q4_0 attn_output on 100 of 132 SMs) checked: golden
    # with bulk gemvs forced, kernels_vs_cpu's q4_0 hd128 bulk cases, greedy text, tg128 A/B
    cuda_test final26-golden-bulk engine_golden_test "golden (cuda, gemv.load=bulk forced)" JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    cuda_test final26-kvc kernels_vs_cpu_test "kernels_vs_cpu: bulk variants, q4_0 hd128 cases" \
        JITLLM_KVC_VARIANTS=bulk "GTEST_FILTER=*EveryKernelMatches*hd128_q4_0*"
    q4=$(synth llama3.1-8b q4_0)
    log "greedy text [default / attn_output on every SM]"
    for a in "" "--gemv-grid-for attn_output=999"; do
        greedy_md5 "$q4" $a
    done
    for r in 1 2; do
        tg_row "8b:q4_0 default (attn_output on 100)" "$q4" 3
        tg_row "8b:q4_0 attn_output on every SM" "$q4" 3 --gemv-grid-for attn_output=999
    done
    ;;
next26f)
    # session 26, call 7: attn_output on fewer blocks (next26e: 100 of 132 +0.85 %, plain), around
    # 100, on Q8_0, and at depth 4096
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    tg_row "8b:q4_0 default" "$q4" 3
    for n in 92 96 100 104; do
        tg_row "8b:q4_0 attn_output on $n" "$q4" 3 --gemv-grid-for attn_output=$n
    done
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q8_0 default" "$q8" 3
    tg_row "8b:q8_0 attn_output on 100" "$q8" 3 --gemv-grid-for attn_output=100
    tg_row "8b:q8_0 default" "$q8" 3
    for a in "" "--gemv-grid-for attn_output=100"; do
        log "depth 8b:q8_0 [${a:-default}]"
        depth_rows "$q8" jitllm $a
    done
    ;;
next26e)
    # session 26, call 6: next26d's attn_output on 100 blocks was +0.5 %: the block count swept, and
    # the same for the other bulk gemvs (SMs left free early for the next kernel's blocks)
    q4=$(synth llama3.1-8b q4_0)
    h="--gemv-early-slots-for attn_output=5 --gemv-bulk-kb-for attn_output=200 --gemv-bulk-kb-for ffn_norm=200"
    tg_row "8b:q4_0 default" "$q4" 3
    for n in 100 108 116 124; do
        tg_row "8b:q4_0 attn_output on $n" "$q4" 3 --gemv-grid-for attn_output=$n $h
    done
    tg_row "8b:q4_0 attn_output on 100, early 5 only" "$q4" 3 --gemv-grid-for attn_output=100 --gemv-early-slots-for attn_output=5
    tg_row "8b:q4_0 attn_output on 100 only" "$q4" 3 --gemv-grid-for attn_output=100
    tg_row "8b:q4_0 ffn_down on 116" "$q4" 3 --gemv-grid-for ffn_down=116
    tg_row "8b:q4_0 q/k/v on 116" "$q4" 3 --gemv-grid-for attn_norm=116
    tg_row "8b:q4_0 gate/up on 116" "$q4" 3 --gemv-grid-for ffn_norm=116
    tg_row "8b:q4_0 attn_output on 100" "$q4" 3 --gemv-grid-for attn_output=100 $h
    tg_row "8b:q4_0 default" "$q4" 3
    ;;
next26d)
    # session 26, call 5: attn_output on part of the SMs (--gemv-grid-for), each of its warps
    # holding its whole work (2 sets, 4 items) in its ring before the PDL wait, so gate/up's blocks
    # (their own 5-slot rings) land on the other SMs at attention's end (calls 2-4: early landing with
    # the full ring streams gate/up at 91 % of the copy bandwidth)
    q4=$(synth llama3.1-8b q4_0)
    h="--gemv-early-slots-for attn_output=5 --gemv-bulk-kb-for attn_output=200 --gemv-bulk-kb-for ffn_norm=200"
    log "greedy text [default / attn_output on 66]"
    for a in "" "--gemv-grid-for attn_output=66 $h"; do
        greedy_md5 "$q4" $a
    done
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q4_0 attn_output on 66" "$q4" 3 --gemv-grid-for attn_output=66 $h
    tg_row "8b:q4_0 attn_output on 66, gate/up early 3" "$q4" 3 --gemv-grid-for attn_output=66 $h --gemv-early-slots-for ffn_norm=3
    tg_row "8b:q4_0 attn_output on 88" "$q4" 3 --gemv-grid-for attn_output=88 $h
    tg_row "8b:q4_0 attn_output on 100" "$q4" 3 --gemv-grid-for attn_output=100 $h
    tg_row "8b:q4_0 control: attn_output on 66, driver's carveout" "$q4" 3 --gemv-grid-for attn_output=66 --gemv-early-slots-for attn_output=5
    tg_row "8b:q4_0 default" "$q4" 3
    log "block trace 8b:q4_0 depth 0 (attn_output on 66)"
    trace_row trace-h66 "$q4" --gemv-grid-for attn_output=66 $h
    ;;
next26c)
    # session 26, call 4: next26's loss came with gate/up's ring at 1 KiB-column items. Ring bytes
    # or item size? gate/up alone at 3 / 6 slots of 2 KiB columns (110 / 221 KiB), the co-resident
    # pair with gate/up at 3 such slots, and 6 slots for q/k/v (ffn_down's 18 KiB of x leaves it 5 on Q4_0)
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    co="--gemv-bulk-kb-for attn_output=72 --gemv-early-slots-for attn_output=4 --gemv-bulk-kb-for ffn_norm=110 --gemv-bulk-min-slots 3"
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q4_0 gate/up 3 x 2048" "$q4" 3 --gemv-bulk-kb-for ffn_norm=110 --gemv-bulk-min-slots 3
    tg_row "8b:q4_0 gate/up 6 x 2048" "$q4" 3 --gemv-bulk-kb-for ffn_norm=220
    tg_row "8b:q4_0 co, gate/up 3 x 2048, early 2" "$q4" 3 $co
    tg_row "8b:q4_0 co, gate/up 3 x 2048, early 3" "$q4" 3 $co --gemv-early-slots-for ffn_norm=3
    tg_row "8b:q4_0 q/k/v 6 x 2048" "$q4" 3 --gemv-bulk-kb-for attn_norm=220
    tg_row "8b:q4_0 gate/up 6 x 2048" "$q4" 3 --gemv-bulk-kb-for ffn_norm=220
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q8_0 default" "$q8" 3
    tg_row "8b:q8_0 gate/up 6 slots" "$q8" 3 --gemv-bulk-kb-for ffn_norm=220
    tg_row "8b:q8_0 gate/up, ffn_down 6 slots" "$q8" 3 --gemv-bulk-kb-for ffn_norm=220 --gemv-bulk-kb-for ffn_down=220
    tg_row "8b:q8_0 default" "$q8" 3
    ;;
next26b)
    # session 26, call 3: next26's co-resident pair cost gate/up its ring (7 x 1 KiB-column slots,
    # 129 KiB: -5.9 % alone, -4.3 % with the early landing). Here gate/up keeps its 5 x 2 KiB-column
    # ring (with the full carveout) and attn_output shrinks instead: 6 slots of 256-column items
    # (28 KiB), or the lanes loop (registers, no ring)
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    sm="--gemv-bulk-kb-for attn_output=30 --gemv-bulk-kb-for ffn_norm=180"
    for a in "" "$sm" "--gemv-lanes-for attn_output --gemv-bulk-kb-for ffn_norm=180"; do
        log "greedy text [${a:-default}]"
        greedy_md5 "$q4" $a
    done
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q4_0 small attn_output ring" "$q4" 3 $sm
    tg_row "8b:q4_0 small attn_output ring, ffn_norm early 3" "$q4" 3 $sm --gemv-early-slots-for ffn_norm=3
    tg_row "8b:q4_0 small attn_output ring, attn_output early 6" "$q4" 3 $sm --gemv-early-slots-for attn_output=6
    tg_row "8b:q4_0 attn_output lanes" "$q4" 3 --gemv-lanes-for attn_output --gemv-bulk-kb-for ffn_norm=180
    tg_row "8b:q4_0 control: gate/up carveout only" "$q4" 3 --gemv-bulk-kb-for ffn_norm=180
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q8_0 default" "$q8" 3
    tg_row "8b:q8_0 small attn_output ring" "$q8" 3 --gemv-bulk-kb-for attn_output=30 --gemv-bulk-kb-for ffn_norm=180
    log "block trace 8b:q4_0 depth 0 (small attn_output ring)"
    trace_row trace-sm "$q4" $sm
    ;;
next26)
    # session 26, call 2: rings sized so that gate/up's block lands beside attn_output's
    # (--gemv-bulk-kb-for, full carveout): attn_output 4 x 1 KiB-column slots (its whole work,
    # all before the PDL wait), gate/up 7 slots, 48 registers each; gate/up's early copies then
    # stream from attention's end instead of attn_output's. Greedy text against the defaults,
    # tg128 rows (a control with only gate/up's smaller ring), a block trace
    q4=$(synth llama3.1-8b q4_0)
    co="--gemv-bulk-kb-for attn_output=72 --gemv-early-slots-for attn_output=4 --gemv-bulk-kb-for ffn_norm=126"
    for a in "" "$co --gemv-early-slots-for ffn_norm=4"; do
        log "greedy text [${a:-default}]"
        greedy_md5 "$q4" $a
    done
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q4_0 co ffn_norm early 4" "$q4" 3 $co --gemv-early-slots-for ffn_norm=4
    tg_row "8b:q4_0 co ffn_norm early 7" "$q4" 3 $co --gemv-early-slots-for ffn_norm=7
    tg_row "8b:q4_0 co ffn_norm early 2" "$q4" 3 $co
    tg_row "8b:q4_0 control: gate/up 126 KiB only, early 4" "$q4" 3 --gemv-bulk-kb-for ffn_norm=126 --gemv-early-slots-for ffn_norm=4
    tg_row "8b:q4_0 co ffn_norm early 4" "$q4" 3 $co --gemv-early-slots-for ffn_norm=4
    tg_row "8b:q4_0 default" "$q4" 3
    log "block trace 8b:q4_0 depth 0 (co, ffn_norm early 4)"
    trace_row trace-co "$q4" $co --gemv-early-slots-for ffn_norm=4
    ;;
next25d)
    # session 25, call 4: the trace with the new defaults shows gate/up's warps ending over 5.9 µs
    # (block-major rows: its 7th pass on blocks 0-103 only) and q/k/v's 1.45 passes (blocks 0-59
    # stream twice the rows): warp-major rows again (-3 % on Q4_0 in session 12, older code), and
    # the last pass alone spread (--gemv-last-spread); its kernels_vs_cpu variants first
    cuda_test next25d-kvc kernels_vs_cpu_test "kernels_vs_cpu: last-spread variants" \
        JITLLM_KVC_VARIANTS=last-spread "GTEST_FILTER=*EveryKernelMatches*"
    cuda_test next25d-golden engine_golden_test "golden (cuda, --gemv-last-spread, bulk forced)" \
        JITLLM_TEST_CUDA_GEMV_LAST_SPREAD=1 JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q4_0 --gemv-warp-major" "$q4" 3 --gemv-warp-major
    tg_row "8b:q4_0 for ffn_norm=1" "$q4" 3 --gemv-early-slots-for ffn_norm=1
    tg_row "8b:q8_0 default" "$q8" 3
    tg_row "8b:q8_0 --gemv-warp-major" "$q8" 3 --gemv-warp-major
    tg_row "8b:q4_0 --gemv-warp-major" "$q4" 3 --gemv-warp-major
    # --gemv-last-spread (new, session 25): block-major full passes, only the partial last one
    # round the blocks (kernels_vs_cpu's last-spread variants first)
    tg_row "8b:q4_0 --gemv-last-spread" "$q4" 3 --gemv-last-spread
    tg_row "8b:q8_0 --gemv-last-spread" "$q8" 3 --gemv-last-spread
    tg_row "8b:q4_0 --gemv-last-spread" "$q4" 3 --gemv-last-spread
    tg_row "8b:q4_0 default" "$q4" 3
    ;;
next25c)
    # session 25, call 3: at depth 4096 attention leaves DRAM idle for ~10 µs a layer; the
    # attn_output gemv after it fills only 2-3 ring slots before its PDL wait with the new
    # defaults (all 5 before): its own count by --gemv-early-slots-for, depth rows; then one
    # block trace of 8B Q4_0 at depth 0 with the defaults
    q8=$(synth llama3.1-8b q8_0)
    q4=$(synth llama3.1-8b q4_0)
    for kn in "" attn_output=5 attn_output=4; do
        log "depth 8b:q8_0 ${kn:-default}"
        depth_rows "$q8" jitllm ${kn:+--gemv-early-slots-for "$kn"}
    done
    for kn in "" attn_output=5; do
        log "depth 8b:q4_0 ${kn:-default}"
        depth_rows "$q4" jitllm ${kn:+--gemv-early-slots-for "$kn"}
    done
    log "block trace 8b:q4_0 depth 0 (defaults)"
    trace_row trace-q4_0-d0 "$q4"
    ;;
next25b)
    # session 25, call 2: the new defaults (fill at loads; Q4_0 2 early slots, Q8_0 3): the two
    # kernels_vs_cpu cases next25 did not reach, golden with bulk gemvs forced (the small models'
    # Q4_0 / Q8_0 gemvs through the rings), tg128 A/B against the old defaults, depth rows, a trace
    cuda_test next25b-kvc kernels_vs_cpu_test "kernels_vs_cpu: bulk variants, hd128 hist300 cases" \
        JITLLM_KVC_VARIANTS=bulk "GTEST_FILTER=*EveryKernelMatches*hd128*hist300*"
    cuda_test next25b-golden engine_golden_test "golden (cuda, defaults)"
    cuda_test next25b-golden-bulk engine_golden_test "golden (cuda, gemv.load=bulk forced)" JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    q4=$(synth llama3.1-8b q4_0)
    q8=$(synth llama3.1-8b q8_0)
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q4_0 old default (4, no hook)" "$q4" 3 --no-gemv-fill-at-loads --gemv-early-slots 4
    tg_row "8b:q8_0 default" "$q8" 3
    tg_row "8b:q8_0 old default (all, no hook)" "$q8" 3 --no-gemv-fill-at-loads
    # each bulk kernel's own early slots (--gemv-early-slots-for, new), against the default's 2
    tg_row "8b:q4_0 early 1" "$q4" 3 --gemv-early-slots 1
    for kn in attn_norm=1 attn_norm=3 attn_output=4 attn_output=5 ffn_norm=1 ffn_norm=3 ffn_down=1 ffn_down=3; do
        tg_row "8b:q4_0 for $kn" "$q4" 3 --gemv-early-slots-for "$kn"
    done
    tg_row "8b:q4_0 default" "$q4" 3
    tg_row "8b:q8_0 default" "$q8" 3
    log "depth 8b:q8_0"
    depth_rows "$q8" jitllm
    log "depth 8b:q4_0"
    depth_rows "$q4" jitllm
    ;;
next25)
    # prepared in session 24 (no device time left): --gemv-fill-at-loads (the late ring slots go
    # out as soon as the x prologue's loads are issued): kernels_vs_cpu's at-loads variant, golden
    # with it, then 8B Q4_0 / Q8_0 tg128 with early slots and at-loads, two rounds alternated
    cuda_test next25-kvc kernels_vs_cpu_test "kernels_vs_cpu: bulk variants (at-loads new)" JITLLM_KVC_VARIANTS=bulk
    cuda_test next25-golden engine_golden_test "golden (cuda, --gemv-fill-at-loads)" JITLLM_TEST_CUDA_GEMV_FILL_AT_LOADS=1
    for spec in llama3.1-8b:q4_0 llama3.1-8b:q8_0; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        for r in 1 2; do
            tg_row "$spec default" "$f" 3
            for n in 2 3 4; do tg_row "$spec early $n at-loads" "$f" 3 --gemv-early-slots "$n" --gemv-fill-at-loads; done
        done
    done
    ;;
final24)
    # the new default (Q4_0 bulk gemvs: 3 of 5 ring slots before the PDL wait): kernels_vs_cpu's
    # bulk variants (early1 new), golden, then 8B Q4_0 tg128 with 3 / 4 / 5 slots, two rounds, and
    # its depth rows
    cuda_test final24-kvc kernels_vs_cpu_test "kernels_vs_cpu: bulk variants (defaults, early1)" JITLLM_KVC_VARIANTS=bulk
    cuda_test final24-golden engine_golden_test "golden (cuda, defaults)"
    f=$(synth llama3.1-8b q4_0)
    for r in 1 2; do
        for n in 3 4 5; do tg_row "llama3.1-8b:q4_0 early $n" "$f" 3 --gemv-early-slots "$n"; done
    done
    log "depth llama3.1-8b:q4_0 (defaults)"
    depth_rows "$f" jitllm
    ;;
early24)
    # --gemv-early-slots N (session 24, from the block trace: the x prologue took 2-3 µs behind a
    # whole ring of weight copies): golden with 2, then tg128 rates alternated, two rounds
    cuda_test early24-golden engine_golden_test "golden (cuda, --gemv-early-slots 2)" JITLLM_TEST_CUDA_GEMV_EARLY_SLOTS=2
    for spec in llama3.1-8b:q4_0 llama3.1-8b:q8_0; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        for r in 1 2; do
            for n in ${EARLY_SET:-0 1 2 3}; do
                if [ "$n" = 0 ]; then tg_row "$spec default" "$f" 3; else tg_row "$spec early $n" "$f" 3 --gemv-early-slots "$n"; fi
            done
        done
    done
    ;;
trace24)
    # --block-trace (new in session 24): every warp's start / PDL release / x ready / last copy /
    # end in one decode step, 8B Q4_0 and Q8_0 at depth 0 and 4096; the table per kernel into the
    # summary, the CSV gzipped into $OUT, and the tok/s with and without the trace
    for spec in ${TRACE_SHAPES:-llama3.1-8b:q4_0 llama3.1-8b:q8_0}; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        for d in ${TRACE_DEPTHS:-0 4096}; do
            log "block trace $spec depth $d ${TRACE_ARGS:-}"
            csv=$OUT/trace-${spec/:/-}-d$d.csv
            # shellcheck disable=SC2086
            timeout 200 "$B/jitllm" bench --gpu -m "$f" -p 0 -n 128 -d "$d" -r 2 --no-warmup -o md \
                --block-trace "$csv" ${TRACE_ARGS:-} > "$OUT/trace-${spec/:/-}-d$d.txt" 2>&1
            grep -E "^\| llama|span|__|^step|^note|rror|block trace" "$OUT/trace-${spec/:/-}-d$d.txt" | tee -a "$OUT/summary.txt"
            [ -f "$csv" ] && gzip -f "$csv"
        done
        log "without the trace $spec"
        depth_rows "$f" jitllm
    done
    ;;
next23d)
    # session 23's last call: the defaults with gate batch.xrows (steps of 2+ rows through the XROWS
    # list, one-row steps through the small-step list): prompt modes, then serve rates
    cuda_test next23d-modes prefill_modes_test "prompt modes (defaults: batch.xrows=shared, 4 rows a block)"
    for shape in llama3.1-8b:q8_0 llama3.2-1b:q4_0; do
        f=$(synth "${shape%%:*}" "${shape##*:}")
        serve_load "$f" "$shape-default" 0 1,4,8
    done
    ;;
drawtests)
    # the device draw's GPU tests alone: the kernel against the host sampler, sampled generate, golden
    draw_tests drawtests
    ;;
draw21b)
    # sample__draw's cost split (session 21): the draw test (the ticket's fence moved), then
    # --profiler rows of the pick kernel on 1B Q4_0 greedy, sampled, and sampled with each
    # --draw-ablate part left out; Nsight Compute's stalls per SASS instruction of one draw
    cuda_test draw21b-kernel kernels_draw_test "device draw against the host sampler"
    f=$(synth llama3.2-1b q4_0)
    for a in "--temperature 0" "--temperature 0.8" "--temperature 0.8 --draw-ablate sort" \
             "--temperature 0.8 --draw-ablate copy" "--temperature 0.8 --draw-ablate merge" \
             "--temperature 0.8 --draw-ablate tail" "--temperature 0.8 --top-k 8"; do
        log "profile [$a]"
        cli_profile "$f" 64 "sample__" 2 $a
    done
    log "ncu source counters sample__draw"
    timeout 120 ncu --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight \
        --import-source no --kernel-name regex:"^sample__draw" --launch-skip 8 --launch-count 1 -o "$OUT/draw" -f -- \
        "$B/jitllm" --gpu -m "$f" -p "Once upon a time" -n 16 --seed 7 --temperature 0.8 > "$OUT/draw-ncu.log" 2>&1
    echo "rc=$?" | tee -a "$OUT/summary.txt"
    ncu --import "$OUT/draw.ncu-rep" --page source --csv --print-source sass > "$OUT/draw-sass.csv" 2> "$OUT/draw-sass.err"
    ncu --import "$OUT/draw.ncu-rep" --page details > "$OUT/draw-details.txt" 2>&1
    grep -E "Duration|Warp Cycles Per Issued|Stall|Elapsed Cycles" "$OUT/draw-details.txt" | head -20 | tee -a "$OUT/summary.txt"
    ;;
head)
    # the GPU tests at HEAD's defaults: golden, prompt modes, the queued greedy decode
    cuda_test golden-head engine_golden_test "golden (cuda, HEAD's defaults)"
    cuda_test modes-head prefill_modes_test "prompt modes (cuda, HEAD's defaults)"
    cuda_test generate-head runtime_generate_test "greedy decode run ahead (HEAD's defaults)"
    ;;
next13)
    # session 13's first call (planned in session 12): HEAD's defaults on golden, prompt modes and
    # the queued greedy decode; --attn-early-kv (built without device time, off) on golden, prompt
    # modes and its kernels_vs_cpu variants; then its A/B at depth 0 / 4096 (8B Q8_0)
    cuda_test golden-13 engine_golden_test "golden (cuda, HEAD's defaults)"
    cuda_test modes-13 prefill_modes_test "prompt modes (HEAD's defaults)"
    cuda_test generate-13 runtime_generate_test "greedy decode run ahead (queue / collect)"
    cuda_test golden-early engine_golden_test "golden with --attn-early-kv" JITLLM_TEST_CUDA_ATTN_EARLY=1
    cuda_test modes-early prefill_modes_test "prompt modes with --attn-early-kv" JITLLM_TEST_CUDA_ATTN_EARLY=1
    cuda_test kernels-early kernels_vs_cpu_test "kernels_vs_cpu: the --attn-early-kv variants" JITLLM_KVC_VARIANTS=early-kv
    DEPTH_ARGS="${DEPTH_ARGS:- ;--attn-early-kv}" OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    ;;
next13b)
    # session 13: the q/k/v gemv prefetches the earlier K/V rows into L2 (--kv-l2-prefetch, gemv.cu
    # KV_PF): kernels_vs_cpu variants, golden with it (bulk forced on the small models), depth A/B
    cuda_test kernels-kvpf kernels_vs_cpu_test "kernels_vs_cpu: the --kv-l2-prefetch variants" JITLLM_KVC_VARIANTS=kv-l2-prefetch
    cuda_test golden-kvpf engine_golden_test "golden with --kv-l2-prefetch last, bulk forced" \
        JITLLM_TEST_CUDA_KV_PF=2 JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    DEPTH_ARGS="${DEPTH_ARGS:- ;--kv-l2-prefetch last;--kv-l2-prefetch start}" OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    ;;
next13c)
    # session 13: decode attention prefetches the layer's attn_output matrix into L2 (--attn-prefetch-next,
    # attention_decode.cu NEXT_PF): kernels_vs_cpu variants, golden and prompt modes with it, depth A/B
    cuda_test kernels-pfnext kernels_vs_cpu_test "kernels_vs_cpu: the --attn-prefetch-next variants" JITLLM_KVC_VARIANTS=prefetch-next
    cuda_test golden-pfnext engine_golden_test "golden with --attn-prefetch-next 0" JITLLM_TEST_CUDA_ATTN_PF_NEXT=0
    DEPTH_ARGS="${DEPTH_ARGS:- ;--attn-prefetch-next 0;--attn-prefetch-next 1024}" OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    ;;
next14)
    # session 14's first call (prepared in session 13): --attn-overlap (attention under 96 registers
    # with the full carveout, the bulk gemv after it at 256 threads / <= 64 registers, so one block
    # of it sits beside two attention blocks and fills its rings during attention): kernels_vs_cpu
    # variants, golden and prompt modes with it (bulk forced on the small models), then depth A/B
    # and the 8B Q4_0 / F16 rows
    cuda_test kernels-overlap kernels_vs_cpu_test "kernels_vs_cpu: the --attn-overlap and --gemv-balance variants" \
        JITLLM_KVC_VARIANTS=attn-overlap,gemv-balance
    cuda_test golden-overlap engine_golden_test "golden with --attn-overlap, bulk forced" \
        JITLLM_TEST_CUDA_ATTN_OVERLAP=1 JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    cuda_test golden-balance engine_golden_test "golden with --gemv-balance, bulk forced" \
        JITLLM_TEST_CUDA_GEMV_BALANCE=1 JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    cuda_test modes-overlap prefill_modes_test "prompt modes with --attn-overlap, bulk forced" \
        JITLLM_TEST_CUDA_ATTN_OVERLAP=1 JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    DEPTH_ARGS="${DEPTH_ARGS:- ;--attn-overlap;--attn-overlap --attn-chunk 64}" OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    SWEEP_SHAPES="${SWEEP_SHAPES:-llama3.1-8b:q4_0 llama3.1-8b:q8_0}" \
    SWEEP_ARGS="${SWEEP_ARGS:- ;--attn-overlap;--attn-overlap --attn-chunk 64;--gemv-balance}" OUT="$OUT" "$PWD/scripts/gpu-check.sh" sweep
    ;;
next14b)
    # attn.decode=mma fed by a per-lane cp.async ring (--attn-kv-stages with mma; the first chunks'
    # copies before the PDL wait): kernels_vs_cpu's ring variants, golden with it, then the depth A/B
    cuda_test kernels-mma-ring kernels_vs_cpu_test "kernels_vs_cpu: attn.decode=mma with the cp.async ring" \
        JITLLM_KVC_VARIANTS=attn-mma+kv-stages
    cuda_test golden-mma-ring engine_golden_test "golden with attn.decode=mma, --attn-kv-stages 4" \
        JITLLM_TEST_CUDA_ATTN_KV_STAGES=4 JITLLM_TEST_CUDA_FORCE=attn.decode=mma
    cuda_test modes-mma-ring prefill_modes_test "prompt modes with attn.decode=mma, --attn-kv-stages 4" \
        JITLLM_TEST_CUDA_ATTN_KV_STAGES=4 JITLLM_TEST_CUDA_FORCE=attn.decode=mma
    M="--force-variant attn.decode=mma"
    DEPTH_ARGS="${DEPTH_ARGS:- ;$M --attn-kv-stages 4;$M --attn-kv-stages 4 --force-variant attn.early=wait;$M --attn-kv-stages 3 --attn-chunk 128;$M --attn-kv-stages 2 --attn-splits 32;$M --attn-kv-stages 3 --attn-splits 24}" \
        OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    ;;
next14c)
    # --attn-kv-rows bulk (ran as --attn-kv-bulk): attn.decode=mma's ring as whole rows by cp.async.bulk
    # (session 14's per-lane cp.async ring ran at ~1.1 TB/s under ncu, 6 % occupancy)
    cuda_test kernels-kv-bulk kernels_vs_cpu_test "kernels_vs_cpu: attn.decode=mma with the bulk ring" \
        JITLLM_KVC_VARIANTS=kv-bulk
    cuda_test golden-kv-bulk engine_golden_test "golden with attn.decode=mma, --attn-kv-stages 4 --attn-kv-rows bulk" \
        JITLLM_TEST_CUDA_ATTN_KV_STAGES=4 JITLLM_TEST_CUDA_ATTN_KV_ROWS=1 JITLLM_TEST_CUDA_FORCE=attn.decode=mma
    M="--force-variant attn.decode=mma"
    DEPTH_ARGS="${DEPTH_ARGS:- ;$M --attn-kv-stages 4 --attn-kv-rows bulk;$M --attn-kv-stages 3 --attn-kv-rows bulk --attn-splits 16;$M --attn-kv-stages 2 --attn-kv-rows bulk --attn-chunk 128}" \
        OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    ;;
next15)
    # session 15's first call (prepared in session 14): attn.decode=mma's ring as whole rows filled by
    # the block's 16-byte cp.async (two whole rows a warp instruction, every thread arriving on the
    # slot's barrier): kernels_vs_cpu variants, golden and prompt modes with it, then the depth A/B
    # and the per-kernel table / Nsight Compute at depth 4096 of the 4-stage ring
    cuda_test kernels-rows-cp kernels_vs_cpu_test "kernels_vs_cpu: attn.decode=mma with the block's cp.async row ring" \
        JITLLM_KVC_VARIANTS=kv-rows-cp
    cuda_test golden-rows-cp engine_golden_test "golden with attn.decode=mma, --attn-kv-stages 4 --attn-kv-rows cp-async" \
        JITLLM_TEST_CUDA_ATTN_KV_STAGES=4 JITLLM_TEST_CUDA_ATTN_KV_ROWS=2 JITLLM_TEST_CUDA_FORCE=attn.decode=mma
    # (prompt modes with it: after a win; MODES=1 here)
    [ "${MODES:-0}" = 1 ] && cuda_test modes-rows-cp prefill_modes_test "prompt modes with attn.decode=mma, --attn-kv-stages 4 --attn-kv-rows cp-async" \
        JITLLM_TEST_CUDA_ATTN_KV_STAGES=4 JITLLM_TEST_CUDA_ATTN_KV_ROWS=2 JITLLM_TEST_CUDA_FORCE=attn.decode=mma
    # the last set: a 2-stage ring (70 KiB) beside q/k/v gemv blocks with 96 KiB rings, so the early
    # copies of every block can run during that gemv (it triggers its dependents at its start)
    M="--force-variant attn.decode=mma"
    DEPTH_ARGS="${DEPTH_ARGS:- ;$M --attn-kv-stages 4 --attn-kv-rows cp-async;$M --attn-kv-stages 3 --attn-kv-rows cp-async --attn-splits 16;$M --attn-kv-stages 2 --attn-kv-rows cp-async --attn-chunk 128;$M --attn-kv-stages 2 --attn-kv-rows cp-async --attn-splits 16 --gemv-bulk-kb 96}" \
        OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    DEPTHPROF_ARGS="${DEPTHPROF_ARGS:-$M --attn-kv-stages 4 --attn-kv-rows cp-async}"
    DEPTH_ARGS="$DEPTHPROF_ARGS" OUT="$OUT" "$PWD/scripts/gpu-check.sh" depthprof
    ;;
six)
    # after a default changes: golden (default gates), prompt modes, greedy run-ahead, the issue's
    # six shapes (tg128, BENCH_R runs each) and 8B Q8_0 at depth 0 / 4096: README's table
    cuda_test golden-default engine_golden_test "golden (cuda, default gates)"
    cuda_test modes prefill_modes_test "prompt modes on the GPU (cuda)"
    cuda_test generate-default runtime_generate_test "greedy decode run ahead (default gates)"
    SWEEP_SHAPES="${SWEEP_SHAPES:-llama3.1-8b:f16 llama3.1-8b:q8_0 llama3.1-8b:q4_0 llama3.2-1b:f16 llama3.2-1b:q8_0 llama3.2-1b:q4_0}" \
    SWEEP_ARGS="${SWEEP_ARGS:- }" OUT="$OUT" "$PWD/scripts/gpu-check.sh" sweep
    DEPTH_ARGS=" " OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    ;;
var15)
    # session 15: why tg128 on 8B varies by +-7-11 tok/s at bench's default context (128) and by +-1
    # at --ctx-size 4100: every repetition's tok/s (jsonl samples_ts) at several contexts, twice each
    for spec in ${VAR_SHAPES:-llama3.1-8b:q8_0 llama3.1-8b:q4_0}; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        for c in ${VAR_CTX:-0 256 1024 4100 0}; do
            a=""; [ "$c" != 0 ] && a="--ctx-size $c"
            o=$("$B/jitllm" bench --gpu -m "$f" -p 0 -n 128 -r ${BENCH_R:-10} -o jsonl $a ${VAR_ARGS:-} 2>/dev/null)
            log "var $spec ctx ${c/#0/default} ${VAR_ARGS:-}: $(echo "$o" | grep -oE '"avg_ts": *[0-9.]+|"stddev_ts": *[0-9.]+' | tr '\n' ' ') samples $(echo "$o" | grep -oE '"samples_ts": *\[[^]]*\]' | grep -oE '[0-9]+\.[0-9]' | tr '\n' ' ')"
        done
    done
    nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv 2>&1 | tee -a "$OUT/summary.txt"
    ;;
splits18)
    # session 18's split default (3/4 of the resident fill: 6 splits on the 8B shape) against the old
    # whole fill (--attn-splits 8): golden, kernels_vs_cpu where the split count is the default, then
    # depth rows of 8B Q8_0 and Q4_0, SPLITS18_ROUNDS alternations
    cuda_test golden-default engine_golden_test "golden (cuda, default gates)"
    cuda_test kernels-splits kernels_vs_cpu_test "kernels_vs_cpu: default split counts" \
        JITLLM_KVC_VARIANTS=gated+attn-chunk48,gated+attn-chunk256,gated+attn-vsum-float
    for spec in llama3.1-8b:q8_0 llama3.1-8b:q4_0; do
        depth_ab "$spec" "$(synth "${spec%%:*}" "${spec##*:}")" "${SPLITS18_ROUNDS:-2}" "--attn-splits 8"
    done
    ;;
next19)
    # session 19: kernels_vs_cpu with the two-chain Q4_0 unit dot (every variant's Q4_0 cases) and
    # the one-chain form (q4-shift variants), golden; then tg128 A/B, the arithmetic ablation, and
    # 8B Q4_0's split counts at depth 4096 (SPLITS19 flag sets)
    cuda_test kernels-q4 kernels_vs_cpu_test "kernels_vs_cpu: Q4_0 unit dot forms" \
        JITLLM_KVC_VARIANTS=q4-shift,gated+fused+bulk+rows1,siblings+fused,gated+unfused
    cuda_test golden-default engine_golden_test "golden (cuda, default gates)"
    for spec in "llama3.1-8b:q4_0: ;--gemv-q4-shift;--gemv-ablate math" "llama3.1-8b:q8_0: ;--gemv-ablate math" \
        "llama3.2-1b:q4_0: ;--gemv-q4-shift"; do
        f=$(synth $(echo "${spec%%:*} ${spec#*:}" | sed 's/:.*//'))
        IFS=';' read -ra sets <<< "${spec##*:}"
        for a in "${sets[@]}"; do
            tg_row "${spec%:*} [$a]" "$f" "${BENCH_R:-3}" $a
        done
    done
    f=$(synth llama3.1-8b q4_0)
    IFS=';' read -ra ssets <<< "${SPLITS19:- ;--attn-splits 8;--attn-splits 12;--attn-splits 16}"
    for a in "${ssets[@]}"; do
        log "depth llama3.1-8b:q4_0 [$a]"
        depth_rows "$f" jitllm $a
    done
    ;;
kdot20)
    # what a split-K accumulation of the 8B down output costs (tools/red_bench.cu; a fused FFN's question)
    log "red_bench"
    timeout 60 "$B/red_bench" > "$OUT/red_bench.txt" 2>&1
    tee -a "$OUT/summary.txt" < "$OUT/red_bench.txt"
    cuda_test golden-default engine_golden_test "golden (cuda, default gates: the V sum's weight packed once a lane)"
    cuda_test kernels-kdot kernels_vs_cpu_test "kernels_vs_cpu: attn-kdot and attn-vh2 variants" JITLLM_KVC_VARIANTS=attn-kdot,attn-vh2
    cuda_test golden-kdot engine_golden_test "golden (cuda, attn.kdot=half2)" JITLLM_TEST_CUDA_FORCE=attn.kdot=half2
    for spec in llama3.1-8b:q8_0 llama3.1-8b:q4_0; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        # Q8_0 (the depth goal's shape) two rounds, Q4_0 one
        depth_ab "$spec" "$f" "${KDOT20_ROUNDS:-$([ "${spec##*:}" = q8_0 ] && echo 2 || echo 1)}" "--force-variant attn.kdot=half2"
        # cheaper blocks may want another split count (defaults: Q8_0 6, Q4_0 8)
        for n in $([ "${spec##*:}" = q8_0 ] && echo 8 12 || echo 6 12); do
            log "depth $spec [--force-variant attn.kdot=half2 --attn-splits $n]"
            depth_rows "$f" jitllm --force-variant attn.kdot=half2 --attn-splits $n
        done
    done
    ;;
six19)
    # the decode issue's table with this build's defaults (BENCH_R repetitions), then the depth rows
    for spec in ${SIX19_SHAPES:-llama3.1-8b:q8_0 llama3.1-8b:q4_0 llama3.2-1b:f16 llama3.2-1b:q8_0 llama3.2-1b:q4_0 llama3.1-8b:f16}; do
        tg_row "$spec" "$(synth "${spec%%:*}" "${spec##*:}")" "${BENCH_R:-5}"
    done
    for spec in ${SIX19_DEPTH:-}; do  # e.g. "llama3.1-8b:q8_0 llama3.1-8b:q4_0"
        log "depth $spec"
        DEPTH_R=5 depth_rows "$(synth "${spec%%:*}" "${spec##*:}")" jitllm
    done
    ;;
attndur)
    # split-KV decode attention's own duration at depth 4096 under Nsight Compute (serialised
    # launches: no PDL overlap; median over 8 launches), 8B Q8_0, ATTNDUR_SETS ';'-separated flag sets
    # (session 18: the ticket merge 11.84 us, without it 10.27, 6 splits 13.02)
    f=$(synth llama3.1-8b q8_0)
    IFS=';' read -ra nsets <<< "${ATTNDUR_SETS:- ;--attn-ablate merge;--attn-splits 8}"
    for a in "${nsets[@]}"; do
        log "ncu attention duration at depth 4096 [$a]"
        ncu_attn_depth "$f" "$OUT/ncu-dur.txt" 120 8 "$a" --metrics gpu__time_duration.sum,sm__cycles_active.avg 2> "$OUT/ncu-dur.err"
        grep -E "gpu__time_duration|sm__cycles_active" "$OUT/ncu-dur.txt" | awk '{print $1, $NF}' |
            sort | awk '{v[$1] = v[$1] " " $2} END {for (k in v) print k ":" v[k]}' | tee -a "$OUT/summary.txt"
    done
    ;;
next17)
    # prepared in session 16 after the device time: attn.stage=smem with the full shared-memory
    # carveout by default (the gemvs around it hold ~200 KiB rings; under ncu its SMs were active
    # 62 % of the launch), against the driver's choice, and the register kernel with the full
    # carveout; kernels_vs_cpu first, then the warps' stall reasons and SM activity again
    cuda_test kernels-staged kernels_vs_cpu_test "kernels_vs_cpu: attn.stage=smem" JITLLM_KVC_VARIANTS=attn-staged
    # how fast a block can stage 64 KiB of K/V rows into shared memory, four ways (tools/kv_stage_bench.cu)
    log "kv_stage_bench"
    timeout 60 "$B/kv_stage_bench" > "$OUT/kv_stage_bench.txt" 2>&1
    tee -a "$OUT/summary.txt" < "$OUT/kv_stage_bench.txt"
    F="--force-variant attn.stage=smem"
    f=$(synth llama3.1-8b q8_0)
    for a in " " "$F" "$F --attn-carveout -1" "--attn-carveout 100"; do
        log "depth [$a]"
        depth_rows "$f" jitllm $a
    done
    for a in "$F" " "; do
        log "ncu at depth 4096 [$a]"
        timeout 150 ncu --clock-control none --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__cycles_active.avg,gpc__cycles_elapsed.max,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum" \
            --kernel-name regex:"^attn__split_kv" --launch-skip 64 --launch-count 1 -- \
            "$B/jitllm" bench --gpu -m "$f" -p 0 -n 4 -d 4096 -b 512 -r 1 --no-warmup $a > "$OUT/ncu-stalls.txt" 2>&1
        grep -E "stalled|duration|cycles|throughput|bytes" "$OUT/ncu-stalls.txt" | awk '{print $1, $(NF)}' | sort -k2 -g -r | head -14 | tee -a "$OUT/summary.txt"
    done
    ;;
next16c)
    # attn.stage=smem diagnosis (session 16): 17.7 us at depth 4096 under ncu with SMs active 64 % of
    # it; fewer splits (a shorter merge, several chunks a block), 256-position chunks, the copies
    # after the wait; then the warps' stall reasons of the default configuration
    cuda_test kernels-staged kernels_vs_cpu_test "kernels_vs_cpu: attn.stage=smem" JITLLM_KVC_VARIANTS=attn-staged
    F="--force-variant attn.stage=smem"
    f=$(synth llama3.1-8b q8_0)
    for a in " " "$F" "$F --attn-splits 16" "$F --attn-splits 8" "$F --attn-chunk 256" "$F --force-variant attn.early=wait"; do
        log "depth [$a]"
        DEPTH_R=2 depth_rows "$f" jitllm $a
    done
    log "ncu stall reasons, attn.stage=smem at depth 4096"
    timeout 150 ncu --clock-control none --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__cycles_active.avg,gpu__time_duration.sum" \
        --kernel-name regex:"^attn__split_kv" --launch-skip 64 --launch-count 1 -- \
        "$B/jitllm" bench --gpu -m "$f" -p 0 -n 4 -d 4096 -b 512 -r 1 --no-warmup $F > "$OUT/ncu-stalls.txt" 2>&1
    grep -E "stalled|duration|cycles_active" "$OUT/ncu-stalls.txt" | awk '{print $1, $(NF)}' | sort -k2 -g -r | head -30 | tee -a "$OUT/summary.txt"
    ;;
next16b)
    # attn.stage=smem (session 16): decode attention with each block's K/V chunk staged in shared
    # memory by cp.async and every query head of its kv head served from there; kernels_vs_cpu,
    # golden (stories260K refused: head dim 8), prompt modes, then tg128 at depth 0 / 4096 A/B and
    # the per-kernel table + Nsight Compute of the staged kernel at depth 4096
    cuda_test kernels-staged kernels_vs_cpu_test "kernels_vs_cpu: attn.stage=smem" JITLLM_KVC_VARIANTS=attn-staged
    cuda_test golden-staged engine_golden_test "golden with attn.stage=smem" JITLLM_TEST_CUDA_FORCE=attn.stage=smem
    [ "${NEXT16B_MODES:-1}" = 1 ] &&
        cuda_test modes-staged prefill_modes_test "prompt modes with attn.stage=smem" JITLLM_TEST_CUDA_FORCE=attn.stage=smem
    F="--force-variant"
    DEPTH_ARGS="${DEPTH_ARGS:- ;$F attn.stage=smem}" OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    DEPTH_ARGS="$F attn.stage=smem" OUT="$OUT" "$PWD/scripts/gpu-check.sh" depthprof
    ;;
next16)
    # session 16's first call: bench's NVML power columns (prepared in session 15, not yet run on a
    # GPU) beside nvidia-smi's log on the four shapes, then golden with the defaults
    OUT="$OUT" "$PWD/scripts/gpu-check.sh" power
    "$B/jitllm" bench --gpu -m "$(synth llama3.2-1b q8_0)" -p 0 -n 128 -r 3 -o md 2>&1 | grep -E "^\| |power" | tee -a "$OUT/summary.txt"
    # watts and tok/s of the bulk rings (every weight byte through shared memory) against 16-byte
    # loads into registers on 8B Q8_0: the power a design costs, beside its speed
    for a in "" "--force-variant gemv.load=lanes"; do
        log "8B Q8_0 power [$a]"
        "$B/jitllm" bench --gpu -m "$(synth llama3.1-8b q8_0)" -p 0 -n 128 -r 5 -o md $a 2>&1 | grep -E "^\| llama" | tee -a "$OUT/summary.txt"
    done
    cuda_test golden-default engine_golden_test "golden (cuda, default gates)"
    # attention_decode.cu's ring_fill (session 15): the mma rings' kernels (the per-lane and cp.async
    # row rings compile to the same .text as before; the bulk row ring's bytes differ)
    cuda_test kernels-rings kernels_vs_cpu_test "kernels_vs_cpu: attn.decode=mma's K/V rings after ring_fill" \
        JITLLM_KVC_VARIANTS=attn-mma+kv-
    ;;
power)
    # tg128 of each POWER_SHAPES shape with nvidia-smi logging clocks, power and the throttle
    # reasons every 20 ms: mean SM clock, mean board power and the share of samples at the power
    # cap (reason bit 0x4, SW power cap) while the GPU is busy (> 300 W) (session 15)
    for spec in ${POWER_SHAPES:-llama3.1-8b:q4_0 llama3.1-8b:q8_0 llama3.2-1b:q8_0 llama3.1-8b:f16}; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        csv="$OUT/smi-${spec/:/-}.csv"
        nvidia-smi --query-gpu=clocks.sm,power.draw,clocks_event_reasons.active --format=csv,noheader,nounits -lms 20 > "$csv" &
        smi=$!
        o=$("$B/jitllm" bench --gpu -m "$f" -p 0 -n 128 -r ${BENCH_R:-10} -o jsonl 2>/dev/null)
        kill $smi
        # bench's own NVML figures (power_w, power_capped_pct; since session 15) beside nvidia-smi's
        log "power $spec: $(echo "$o" | grep -oE '"(avg_ts|stddev_ts|copy_bw_gb_s|power_source|power_w|energy_j_per_token|power_capped_pct)":("[a-z]*"|[0-9.]+)' | tr '\n' ' ')"
        awk -F', ' '$2+0 > 300 {n++; c+=$1; p+=$2; if ($3 ~ /4$/) cap++; if ($1 < mn || mn == 0) mn=$1}
            END {if (n) printf "   busy samples %d: mean clock %.0f MHz (min %d), mean power %.0f W, power-capped %d%%\n", n, c/n, mn, p/n, 100*cap/n}' \
            "$csv" | tee -a "$OUT/summary.txt"
    done
    ;;
next15b)
    # sample.fuse=gemv (prepared in session 14): decode's greedy pick inside the output gemv
    # (no argmax launch); kernels_vs_cpu variants, golden (bulk forced too), then the tg128 A/B
    cuda_test kernels-sample-fuse kernels_vs_cpu_test "kernels_vs_cpu: sample.fuse=gemv" JITLLM_KVC_VARIANTS=sample-fuse
    cuda_test golden-sample-fuse engine_golden_test "golden with sample.fuse=gemv" JITLLM_TEST_CUDA_FORCE=sample.fuse=gemv
    cuda_test golden-sample-fuse-bulk engine_golden_test "golden with sample.fuse=gemv, bulk forced" \
        JITLLM_TEST_CUDA_FORCE=sample.fuse=gemv,gemv.load=bulk
    cuda_test modes-sample-fuse prefill_modes_test "prompt modes with sample.fuse=gemv" JITLLM_TEST_CUDA_FORCE=sample.fuse=gemv
    cuda_test generate-sample-fuse runtime_generate_test "greedy decode run ahead with sample.fuse=gemv" \
        JITLLM_TEST_CUDA_FORCE=sample.fuse=gemv
    # step.advance=device (prepared in session 14): the pick kernel advances token and position, a
    # queued greedy step is the graph launch alone; the run-ahead test exercises the skipped copies
    cuda_test kernels-step-advance kernels_vs_cpu_test "kernels_vs_cpu: step.advance=device" JITLLM_KVC_VARIANTS=step-advance
    cuda_test generate-step-advance runtime_generate_test "greedy decode run ahead with step.advance=device" \
        JITLLM_TEST_CUDA_FORCE=step.advance=device
    cuda_test generate-both runtime_generate_test "greedy decode run ahead with sample.fuse=gemv, step.advance=device" \
        JITLLM_TEST_CUDA_FORCE=sample.fuse=gemv,step.advance=device
    cuda_test golden-step-advance engine_golden_test "golden with step.advance=device, sample.fuse=gemv" \
        JITLLM_TEST_CUDA_FORCE=sample.fuse=gemv,step.advance=device
    F="--force-variant"
    SWEEP_SHAPES="${SWEEP_SHAPES:-llama3.1-8b:q8_0 llama3.1-8b:q4_0 llama3.2-1b:q8_0}" \
    SWEEP_ARGS="${SWEEP_ARGS:- ;$F sample.fuse=gemv;$F step.advance=device;$F sample.fuse=gemv $F step.advance=device}" \
        OUT="$OUT" "$PWD/scripts/gpu-check.sh" sweep
    ;;
next14-depth)
    # K/V through the cp.async ring (--attn-kv-stages) shared by 2 or 4 query heads a block: loads
    # decoupled from the per-chunk chain and each K/V row read once per block (session 13's depth
    # figures: the kernel is bound by its chain, not DRAM); kernels_vs_cpu's ring variants first
    cuda_test kernels-stages kernels_vs_cpu_test "kernels_vs_cpu: the --attn-kv-stages variants" JITLLM_KVC_VARIANTS=kv-stages
    DEPTH_ARGS="${DEPTH_ARGS:- ;--attn-heads-per-block 4 --attn-chunk 32 --attn-kv-stages 4 --attn-splits 32;--attn-heads-per-block 2 --attn-chunk 64 --attn-kv-stages 3;--attn-heads-per-block 4 --attn-chunk 32 --attn-kv-stages 3}" \
        OUT="$OUT" "$PWD/scripts/gpu-check.sh" depth
    ;;
next13-sweep)
    # the 8B quantized sweep of the untried boundary knobs: more ring slots (--gemv-bulk-kb), SMs
    # left free for the next kernel (--gemv-grid-max: with the start trigger its blocks can take
    # them early), the first K/V chunk before attention's PDL wait (--attn-early-kv)
    SWEEP_SHAPES="${SWEEP_SHAPES:-llama3.1-8b:q8_0 llama3.1-8b:q4_0}" \
    SWEEP_ARGS="${SWEEP_ARGS:- ;--attn-early-kv;--gemv-bulk-kb 210;--gemv-bulk-kb 220;--gemv-grid-max 124;--gemv-grid-max 116;--gemv-grid-max 100}" \
        OUT="$OUT" "$PWD/scripts/gpu-check.sh" sweep
    ;;
prepared12)
    # session 12's PDL trigger at each gemv's start (gemv.trigger=start forced: every gemv; ran
    # as --gemv-early-trigger) with rings small enough for two blocks per SM and the full carveout:
    # golden and prompt modes, with the bulk gemvs forced on the small golden models too
    cuda_test golden-trig engine_golden_test "golden with gemv.trigger=start, --gemv-bulk-kb 100" \
        JITLLM_TEST_CUDA_BULK_KB=100 JITLLM_TEST_CUDA_FORCE=gemv.trigger=start
    cuda_test golden-trig-bulk engine_golden_test "golden with gemv.trigger=start, --gemv-bulk-kb 100, bulk forced" \
        JITLLM_TEST_CUDA_BULK_KB=100 JITLLM_TEST_CUDA_FORCE=gemv.trigger=start,gemv.load=bulk
    cuda_test modes-trig prefill_modes_test "prompt modes with gemv.trigger=start, --gemv-bulk-kb 100" \
        JITLLM_TEST_CUDA_BULK_KB=100 JITLLM_TEST_CUDA_FORCE=gemv.trigger=start
    ;;
prepared11)
    # session 11's latency cuts in the default gemvs (normed Q4_0/Q8_0 prologue in one L2 trip, the
    # residual / RoPE angle loaded at each pass's start; built without device time): golden and
    # prompt modes with the defaults and with --gemv-late-loads (the old order), then the A/B:
    # BENCH_R=3 SWEEP_SHAPES="<six>" SWEEP_ARGS=" ;--gemv-late-loads" scripts/gpu-check.sh sweep
    cuda_test golden-p11 engine_golden_test "golden (cuda, default gates: session 11's gemv loads)"
    cuda_test modes-p11 prefill_modes_test "prompt modes (session 11's gemv loads)"
    cuda_test golden-late engine_golden_test "golden with --gemv-late-loads" JITLLM_TEST_CUDA_GEMV_LATE=1
    # greedy decode queued one step ahead (CUDA: graph launches queued, picks copied back per step)
    cuda_test generate-queue runtime_generate_test "greedy decode run ahead (queue / collect)"
    ;;
prepared10)
    # session 10's layer.tail=persistent (one launch for attn_output .. ffn_residual per layer, grid
    # barriers between its phases; built without device time, off by default): golden and prompt
    # modes with it (a hang ends at TEST_TIMEOUT); then `KERNELS_FILTER='*EveryKernelMatchesItsCpuTasks/*tail*'
    # kernels` and `SWEEP_SHAPES="llama3.1-8b:q8_0 llama3.1-8b:q4_0" SWEEP_ARGS=" ;--force-variant layer.tail=persistent" sweep`
    cuda_test golden-tail engine_golden_test "golden with layer.tail=persistent" JITLLM_TEST_CUDA_FORCE=layer.tail=persistent
    cuda_test modes-tail prefill_modes_test "prompt modes with layer.tail=persistent" JITLLM_TEST_CUDA_FORCE=layer.tail=persistent
    ;;
prepared9)
    # session 9's switches, built without device time and off by default: golden and prompt modes
    # (600-position prompts decoded token by token: several splits, the merges) with each; run
    # `KERNELS_FILTER=... kernels` too (variants gated+attn-cluster*, *merge1*, *vh2*, *warp-major*)
    cuda_test golden-cluster engine_golden_test "golden with attn.merge=cluster" JITLLM_TEST_CUDA_FORCE=attn.merge=cluster
    cuda_test modes-cluster prefill_modes_test "prompt modes with attn.merge=cluster" JITLLM_TEST_CUDA_FORCE=attn.merge=cluster
    cuda_test golden-vh2 engine_golden_test "golden with attn.vsum=half2" JITLLM_TEST_CUDA_FORCE=attn.vsum=half2
    cuda_test modes-vh2 prefill_modes_test "prompt modes with attn.vsum=half2" JITLLM_TEST_CUDA_FORCE=attn.vsum=half2
    cuda_test golden-merge2 engine_golden_test "golden with --attn-merge-two-trips and --gemv-warp-major" \
        JITLLM_TEST_CUDA_ATTN_MERGE2=1 JITLLM_TEST_CUDA_GEMV_WARP_MAJOR=1
    cuda_test modes-merge2 prefill_modes_test "prompt modes with --attn-merge-two-trips and --gemv-warp-major" \
        JITLLM_TEST_CUDA_ATTN_MERGE2=1 JITLLM_TEST_CUDA_GEMV_WARP_MAJOR=1
    ;;
prepared)
    # switches off by default: batch.small=gemv (not yet measured; prompt modes batch-1 / batch-7 run
    # it), --attn-pipe and --attn-kv-stages (not yet measured), --attn-warp-merge and gemv.prefetch=attn (measured
    # slower; kept as the gates' siblings); one head per block has been the default since session 7
    cuda_test modes-small prefill_modes_test "prompt modes with --force-variant batch.small=gemv" \
        JITLLM_TEST_CUDA_FORCE=batch.small=gemv
    cuda_test modes-small8 prefill_modes_test \
        "prompt modes with batch.small=gemv for steps of up to 8 rows (batch-7 chunks: rows-inner gemv)" \
        JITLLM_TEST_CUDA_FORCE=batch.small=gemv JITLLM_TEST_CUDA_BATCH_SMALL_ROWS=8
    cuda_test golden-prepared engine_golden_test "golden with warp merge + batch.small=gemv + gemv.prefetch=attn together" \
        JITLLM_TEST_CUDA_ATTN_WARP_MERGE=1 JITLLM_TEST_CUDA_FORCE=batch.small=gemv,gemv.prefetch=attn
    cuda_test golden-pipe engine_golden_test "golden with --attn-pipe 1 --attn-chunk 64" \
        JITLLM_TEST_CUDA_ATTN_PIPE=1 JITLLM_TEST_CUDA_ATTN_CHUNK=64
    cuda_test golden-kv-stages engine_golden_test "golden with --attn-kv-stages 3" JITLLM_TEST_CUDA_ATTN_KV_STAGES=3
    cuda_test modes-kv-stages prefill_modes_test "prompt modes with --attn-kv-stages 3 (600-position prompts decoded token by token)" \
        JITLLM_TEST_CUDA_ATTN_KV_STAGES=3
    cuda_test modes-pipe prefill_modes_test "prompt modes with --attn-pipe 1 --attn-chunk 64 (600-position prompts decoded token by token)" \
        JITLLM_TEST_CUDA_ATTN_PIPE=1 JITLLM_TEST_CUDA_ATTN_CHUNK=64
    ;;
mma)
    # attn.decode=mma (session 8, not yet run on a GPU): golden and prompt modes with decode
    # attention on tensor cores; run `KERNELS_FILTER=... kernels` too (variants gated+attn-mma*)
    # (stories260K's head dim 8 is refused by the gate: left out)
    cuda_test golden-attn-mma engine_golden_test "golden with --force-variant attn.decode=mma" JITLLM_TEST_CUDA_FORCE=attn.decode=mma \
        GTEST_FILTER='-Stories260K*'
    cuda_test modes-attn-mma prefill_modes_test "prompt modes with attn.decode=mma (600-position prompts decoded token by token)" \
        JITLLM_TEST_CUDA_FORCE=attn.decode=mma
    # and the batch phase's SIMT attention sibling (attention_decode.cu BATCH=1, whose reduction and
    # exp2 changed in session 8; the default batch attention is attention_prefill's mma)
    cuda_test modes-prefill-rows prefill_modes_test "prompt modes with attn.prefill=rows" JITLLM_TEST_CUDA_FORCE=attn.prefill=rows
    ;;
bulk)
    # gemv.load=bulk (cp.async.bulk rings for decode's split-layout gemvs); run `kernels` too: its
    # kernels_vs_cpu variants (default ring, 1 KiB ring with 3 blocks, unfused + serial)
    cuda_test golden-bulk engine_golden_test "golden with --force-variant gemv.load=bulk" JITLLM_TEST_CUDA_FORCE=gemv.load=bulk
    cuda_test golden-bulk-serial engine_golden_test "golden with gemv.load=bulk and launch.pdl=serial" \
        JITLLM_TEST_CUDA_FORCE=gemv.load=bulk,launch.pdl=serial
    ;;
ceiling)
    log "tensor-core ceiling: torch (cuBLAS) f16 GEMM, same machine"
    python3 - <<'PY' 2>&1 | tee -a "$OUT/summary.txt"
import torch, time
def tflops(m, n, k, dt=torch.float16):
    a = torch.randn(m, k, device="cuda", dtype=dt); b = torch.randn(n, k, device="cuda", dtype=dt)
    for _ in range(3): c = a @ b.t()
    torch.cuda.synchronize(); t = time.perf_counter(); r = 20
    for _ in range(r): c = a @ b.t()
    torch.cuda.synchronize(); s = (time.perf_counter() - t) / r
    return 2 * m * n * k / s / 1e12
for (m, n, k) in [(8192, 8192, 8192), (512, 4096, 4096), (512, 28672, 4096), (512, 4096, 14336), (512, 6144, 4096), (512, 128256, 4096), (512, 2048, 2048), (512, 16384, 2048), (512, 2048, 8192)]:
    print(f"cublas f16 m={m} n={n} k={k}: {tflops(m, n, k):.1f} TFLOP/s")
PY
    ;;
prefill)
    for spec in ${PREFILL_SHAPES:-llama3.2-1b:f16 llama3.1-8b:f16 llama3.1-8b:q8_0 llama3.1-8b:q4_0}; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        log "prefill pp512 -b 512 $spec"
        "$B/jitllm" bench --gpu -m "$f" -p 512 -n 0 -b 512 -r ${BENCH_R:-3} -o md 2>&1 | tee -a "$OUT/summary.txt"
    done
    f=$(synth llama3.1-8b q4_0)
    log "time to first token, 2048-token prompt, 8B Q4_0, -b 512 vs token at a time"
    "$B/jitllm" bench --gpu -m "$f" -p 2048 -n 0 -b 512 -r 1 -o md 2>&1 | tee -a "$OUT/summary.txt"
    ;;
serve)
    # issue 9: aggregate decode tok/s of `jitllm serve --gpu` with 1/8/32/64 concurrent clients
    f=$(synth llama3.2-1b ${SERVE_TYPE:-f16})
    log "serve --gpu --parallel 64, 1B ${SERVE_TYPE:-f16}: aggregate decode tok/s by concurrent clients"
    export LD_LIBRARY_PATH=$PWD/.gpu/lib:${LD_LIBRARY_PATH:-}
    "$B/jitllm" serve --gpu -m "$f" --parallel 64 -c 1024 --port 18080 --prefill-chunk 64 ${SERVE_FLAGS:-} > "$OUT/serve.log" 2>&1 &
    sp=$!
    for i in $(seq 1 120); do curl -sf http://127.0.0.1:18080/health >/dev/null 2>&1 && break; sleep 1; done
    python3 scripts/serve-load.py --port 18080 --clients ${SERVE_CLIENTS:-1,8,32,64} --seconds ${SERVE_SECONDS:-15} 2>&1 | tee -a "$OUT/summary.txt"
    kill -INT $sp; wait $sp
    tail -${SERVE_LOG_LINES:-5} "$OUT/serve.log" | tee -a "$OUT/summary.txt"
    ;;
prefprof)
    # per-kernel time of the batch phase (prompt chunks), 8B F16 pp512 -b 512
    for spec in ${PREFPROF_SHAPES:-llama3.1-8b:f16}; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        log "prefill profile $spec pp512 -b 512"
        "$B/jitllm" bench --gpu -m "$f" -p 512 -n 0 -b 512 -r 1 --no-warmup --profiler -o md 2>&1 | grep -vE "^\s*$" | tail -30 | tee -a "$OUT/summary.txt"
    done
    ;;
depth)
    f=$(synth llama3.1-8b q8_0)
    log "tg128 at depth 0 and 4096, 8B Q8_0"
    # DEPTH_ARGS: ';'-separated flag sets, one bench each (default: none)
    IFS=';' read -ra dsets <<< "${DEPTH_ARGS:- }"
    for a in "${dsets[@]}"; do
        log "depth [$a]"
        timeout "${SWEEP_TIMEOUT:-300}" "$B/jitllm" bench --gpu -m "$f" -p 0 -n 128 -d 0,4096 -r "${BENCH_R:-3}" \
            --no-warmup --with-prefill-decode -o md $a 2>&1 | tee -a "$OUT/summary.txt"
    done
    ;;
depthprof)
    # where the time goes at depth 4096 (8B Q8_0): per-kernel table of 32 decode tokens, then
    # Nsight Compute (full sections) on two split-KV attention launches at that depth (the depth
    # filled by 512-row prompt chunks, so decode's kernels run only at depth 4096; DEPTHPROF_NCU=0: none)
    f=$(synth llama3.1-8b q8_0)
    IFS=';' read -ra dsets <<< "${DEPTH_ARGS:- }"
    for a in "${dsets[@]}"; do
        log "per-kernel table, tg32 at depth 4096, 8B Q8_0 [$a]"
        "$B/jitllm" bench --gpu -m "$f" -p 0 -n 32 -d 4096 -b 512 -r 1 --no-warmup --profiler -o md $a 2>&1 |
            grep -E "^decode|tg32" | tee -a "$OUT/summary.txt"
        [ "${DEPTHPROF_NCU:-1}" = 1 ] || continue
        n=$(echo "$a" | tr -c 'a-z0-9' '_')
        log "ncu attn__split_kv at depth 4096 [$a]"
        ncu_attn_depth "$f" "$OUT/ncu-depth$n.csv" 240 2 "$a" --section SpeedOfLight --section Occupancy --section LaunchStats \
            --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats --csv 2> "$OUT/ncu-depth$n.err"
        echo "rc=$? $(wc -l < "$OUT/ncu-depth$n.csv") lines" | tee -a "$OUT/summary.txt"
        grep -E "\"(Duration|Memory Throughput|DRAM Throughput|L1/TEX Hit Rate|L2 Hit Rate|Compute \(SM\) Throughput|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Waves Per SM|Eligible Warps Per Scheduler|Issued Warp Per Scheduler|Warp Cycles Per Issued Instruction|Block Limit Registers|Block Limit Shared Mem)\"" \
            "$OUT/ncu-depth$n.csv" | awk -F'","' '{print $(NF-2), $(NF-1), $NF}' | head -40 | tee -a "$OUT/summary.txt"
        tail -3 "$OUT/ncu-depth$n.err" | tee -a "$OUT/summary.txt"
    done
    ;;
srcprof)
    # where the split-KV attention kernels' warps stall, per SASS instruction (SourceCounters;
    # kernels carry -lineinfo), at depth 4096 on 8B Q8_0: SRCPROF_ARGS ';'-separated flag sets
    f=$(synth llama3.1-8b q8_0)
    IFS=';' read -ra sets <<< "${SRCPROF_ARGS:- ;--force-variant attn.stage=smem}"
    for a in "${sets[@]}"; do
        n=$(echo "$a" | tr -c 'a-z0-9' '_')
        log "ncu source counters attn__split_kv at depth 4096 [$a]"
        timeout 200 ncu --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight \
            --import-source no --kernel-name regex:"^attn__split_kv" --launch-skip 64 --launch-count 1 -o "$OUT/src$n" -f -- \
            "$B/jitllm" bench --gpu -m "$f" -p 0 -n 4 -d 4096 -b 512 -r 1 --no-warmup $a > "$OUT/src$n.log" 2>&1
        echo "rc=$?" | tee -a "$OUT/summary.txt"
        ncu --import "$OUT/src$n.ncu-rep" --page source --csv --print-source sass > "$OUT/src$n-sass.csv" 2> "$OUT/src$n-sass.err"
        echo "sass page rc=$? $(wc -l < "$OUT/src$n-sass.csv") lines" | tee -a "$OUT/summary.txt"
        ncu --import "$OUT/src$n.ncu-rep" --page details --section SourceCounters --section WarpStateStats > "$OUT/src$n-details.txt" 2>&1
        grep -vE "^\s*$" "$OUT/src$n-details.txt" | head -60 | tee -a "$OUT/summary.txt"
    done
    ;;
ab)
    # A/B of this build against .gpu/bin/jitllm-base (gpu-prepare.sh GPU_BASE=...) in one call:
    # AB_SHAPES (shape:type ...) at depths 0 and 4096 (n_ctx 4224), AB_ROUNDS alternations, AB_ARGS
    # flags for both
    for spec in ${AB_SHAPES:-llama3.1-8b:q8_0}; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        # AB_EXTRA: ';'-separated flag sets run with this build after the plain pair
        IFS=';' read -ra extra <<< "${AB_EXTRA:-}"
        for r in $(seq "${AB_ROUNDS:-2}"); do
            for run in "jitllm-base|" "jitllm|" "${extra[@]/#/jitllm|}"; do
                bin=${run%%|*} a=${run#*|}
                log "ab $spec round $r [$bin ${AB_ARGS:-} $a]"
                depth_rows "$f" "$bin" ${AB_ARGS:-} $a
            done
        done
    done
    ;;
ablate)
    # what decode attention costs inside the replayed graph at depths 0 and 4096 (8B Q8_0, n_ctx
    # 4224), timing only: the defaults, attention without its K/V loads, without its arithmetic,
    # without its split merge, and left out altogether (--ablate); ABLATE_ARGS: flags for all
    f=$(synth llama3.1-8b q8_0)
    for a in " " "--attn-ablate loads" "--attn-ablate math" "--attn-ablate merge" "--ablate ^attn__"; do
        log "ablate [$a ${ABLATE_ARGS:-}]"
        depth_rows "$f" jitllm $a ${ABLATE_ARGS:-}
    done
    ;;
tune)
    # gemv launch-bounds / prefetch sweep on decode (tg128), same run, same copy bandwidth
    for spec in ${TUNE_SHAPES:-llama3.2-1b:f16 llama3.1-8b:f16 llama3.2-1b:q4_0}; do
        f=$(synth "${spec%%:*}" "${spec##*:}")
        for knobs in "" "--gemv-min-blocks 2" "--gemv-min-blocks 3" "--gemv-min-blocks 4" "--gemv-prefetch 2048" "--gemv-min-blocks 3 --gemv-prefetch 2048"; do
            log "tune $spec [$knobs]"
            "$B/jitllm" bench --gpu -m "$f" -p 0 -n 128 -r 3 $knobs -o md 2>&1 | grep -E "tg128|error" | tee -a "$OUT/summary.txt"
        done
    done
    ;;
*) echo "unknown stage $stage"; exit 2 ;;
esac
done
# The device tool brings back only a few files: keep summary.txt and pack the rest.
if [ "$(find "$OUT" -type f | wc -l)" -gt 6 ]; then
    (cd "$OUT" && find . -type f ! -name summary.txt ! -name results.tgz -print0 | tar czf results.tgz --null -T - --remove-files)
fi
