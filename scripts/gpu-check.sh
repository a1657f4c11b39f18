#!/usr/bin/env bash
# GPU checks on a GPU host (never in CI): `scripts/gpu-check.sh STAGE...` after
# `scripts/gpu-prepare.sh` has filled .gpu/ on the development machine (carry .gpu with the call).
# Results: $OUT/summary.txt (every stage's verdicts and rows), other files packed into results.tgz.
#
# Stages (default: info kernels golden):
#   info    : device, driver, clocks, build-info, `jitllm --version`, --list-devices, the driver round
#             trip test, the bundled model's greedy text on the GPU
#   kernels : the GPU kernel tests against the CPU (KERNELS_PARTS of vs-cpu: kernels_vs_cpu, gemm:
#             kernels_gemm GemmVsCpu, draw: kernels_draw, attn-prefill: kernels_attn_prefill,
#             moe-group: kernels_moe_group MoeGroupVsCpu; all five by default)
#   slots   : the sequence-batch tests on the GPU (runtime_slots_ahead, _mask, _paged, _draw: where
#             GPU_TESTS carried them; gpu-prepare carries them by default), the steps queued ahead and
#             masked picks on the device
#   golden  : engine_golden_test on the GPU with the default gates, with every sibling at once, and
#             with each set of GATES forced (JITLLM_TEST_CUDA_FORCE; a variant's prerequisites from
#             GATE_WITH, the tests it cannot run left out by GATE_SKIP)
#   modes   : prefill_modes_test (every prompt mode against llama.cpp and single-token steps) with the
#             defaults and with every sibling at once on every architecture, and with each set of GATES
#             forced on MODES_FORCED_FILES (a set on llama's F16, Q8_0, Q4_0 and Q4_K_M: ~136 s with 8
#             sets at once on an H100 host); runtime_generate_test (run-ahead, device draws).
#             MODES_PARTS picks among them
#   decode  : tg128 of SHAPES (bench's md row, copy bandwidth and % of it)
#   prefill : pp512 with -b 512 of PREFILL_SHAPES; time to first token of a 2048-token prompt
#   depth   : tg128 at depths 0 and DEPTH of DEPTH_SHAPES (one n_ctx for both rows)
#   serve   : `jitllm serve --gpu` under scripts/serve-load.py (aggregate decode tok/s by clients)
#   profile : --profiler's per-kernel table of PROFILE_SHAPES (decode, and the batch phase)
#   ncu     : `jitllm ncu` on NCU_TASKS of NCU_SHAPE at a decode token and a prompt chunk; each launch
#             checked against ncu's grid and its NVTX step range (the launch asked for is the one profiled)
#   ab      : this build against .gpu/bin/jitllm-base: tg128 of AB_SHAPES and pp512 of AB_PREFILL
#             alternated AB_ROUNDS times, a before / after / ratio table, and the greedy md5 of each
#             build on each shape and prompt (equal md5s: the same text)
#   llama   : llama.cpp side by side: builds llama-bench from .gpu/baselines (the snapshot gpu-prepare
#             copies from ../shared/baselines; about 4.5 minutes, in the background while the
#             files of LLAMA_SHAPES are made), then tg128 and pp512 of each file with jitllm bench
#             (-b 512) and llama-bench (-fa 1), both md rows into the summary
#   batched : issue 53's table in one call: llama-batched-bench (built from .gpu/baselines as llama
#             does, in the background while runtime_slots_paged_test and runtime_slots_draw_test
#             run, where GPU_TESTS carried them, and the file is made) and `jitllm bench --gpu -npp 128
#             -ntg 128 -npl BATCHED_NPL` on BATCHED_SHAPE, then `jitllm serve --gpu --parallel 64`
#             under serve-load.py at BATCHED_CLIENTS; md tables into the summary
#   batched-profile : where a batched decode step's time goes: `jitllm bench --gpu -npp 128 -ntg 32
#             -npl N --profiler` on BATCHED_SHAPE, one run per N of BATCHED_PROFILE_NPL (the per-kernel
#             table of each row count: the 2-3 prompt steps and 34 decode steps, launches one by one),
#             top BATCHED_PROFILE_TOP rows by time; then the same with each flag set of
#             BATCHED_PROFILE_TUNE: wgmma tiles of 64 weight rows (two blocks an SM where the registers
#             allow), the same asking nvcc for two blocks an SM, x-rows gemvs of 8 rows. About 4 minutes
#   kvpool  : issue 53's pool and reuse: `jitllm serve --gpu --parallel 64 -c 8192 --kv-pool-tokens
#             KVPOOL_TOKENS --prefill-chunk 256` on BATCHED_SHAPE under 64 clients of ~1 k-token prompts (nvidia-smi's
#             peak memory beside the weights and the pool, /metrics' occupancy), then the time to
#             first token of two requests sharing a ~2000-token system prompt
#   probe   : persistent_probe_test (tests/gpu): a 1B model's token of bytes through one launch with a
#             grid barrier at every phase's end, against no barriers, a stopped producer and a launch
#             a phase, at the Q4_0 / Q8_0 / F16 byte counts (PROBE_SCALES), beside the copy bandwidth
#   sweep   : tg128 of SWEEP_SHAPES with `--tune SWEEP_KEY=V` for each V of SWEEP_VALUES beside
#             the default, alternated SWEEP_ROUNDS times (SWEEP_ARGS: ';'-separated flag sets instead)
#   opencl  : the OpenCL backend on NVIDIA's OpenCL (docs/opencl.md): libnvidia-opencl.so.1 named by
#             an nvidia.icd in a folder OCL_ICD_VENDORS points at (the ICD loader from .gpu/lib where
#             the host has none), --list-devices and the gate report; every run on NVIDIA's device
#             (its --opencl-device index from --list-devices, JITLLM_TEST_OPENCL_DEVICE for the tests).
#             Parts: golden (the golden tests and prompt modes with the default gates, every sibling
#             at once, unfused, and gemv.x=tiles with local.mem=16384), bench (tg128 of OPENCL_SHAPES
#             and pp512 -b 512 with OPENCL_PP=1, --opencl next to --gpu), profile (--profiler on
#             OPENCL_PROFILE_SHAPE for 64 tokens: the per-kernel table, then the host's time a decode
#             step without the profiler), gates (each sibling alone in the golden tests, tg128 of
#             OPENCL_GATE_SHAPE with each sibling forced and with each of OPENCL_TUNE: a call of its own),
#             ptx (after the others: each gemv program's global loads by width in the PTX NVIDIA's
#             driver built, and the program cache as clcache.tgz)
#
# Parameters (environment; defaults in brackets):
#   OUT            where results go [/tmp/gpu-out]
#   GPU_CHECK_DRY  1: print each GPU command instead of running it (no GPU needed) [0]
#   SHAPES         decode shapes, shape:type [the six: llama3.1-8b and llama3.2-1b x f16 q8_0 q4_0]
#   PREFILL_SHAPES [llama3.2-1b:f16 llama3.1-8b:f16 llama3.1-8b:q8_0 llama3.1-8b:q4_0]
#   GEMM_BENCH     1: prefill also times the batch GEMMs alone (GEMM_BENCH_TYPE [q8_0,q4_0]) [0]
#   DEPTH_SHAPES   [llama3.1-8b:q8_0]    DEPTH: the deeper depth [4096]
#   BENCH_R        bench repetitions [3]    BENCH_ARGS: extra flags for every bench and run []
#   GATES          space-separated forced sets "gate=variant[,gate=variant]"; "none": defaults only
#                  [every gate's sibling, from `jitllm plan --target sm_90` of GATE_MODELS, with the
#                  companions GATE_WITH names]
#   GATE_MODELS    files whose plans give the gates [golden llama-q4_0 and llama-f16]
#   GATE_SHARD     I/N: only every N-th forced set from the I-th (1-based), to split a long list
#                  over several device calls [1/1]
#   MODES_FORCED_FILTER gtest filter of the modes stage's forced sets [*/0: llama]
#   MODES_FORCED_FILES golden files the forced sets take [llama-f16 llama-q8_0 llama-q4_0 llama-q4_k_m]
#   MODES_PARTS    the modes stage's parts: defaults, siblings (every one at once), forced (GATES one
#                  set at a time), generate [defaults siblings forced generate]
#   KERNELS_FILTER gtest filter for kernels_vs_cpu [*]     TEST_TIMEOUT: seconds a test binary [400]
#   TEST_JOBS      test processes at once: a test binary's gtest shards, the forced gate sets [8]
#   SERVE_SHAPE [llama3.2-1b:q4_0]  SERVE_CLIENTS [1,8,32]  SERVE_TEMPS [0 0.8]  SERVE_SECONDS [10]
#   SERVE_ARGS     extra `jitllm serve` flags []
#   PROFILE_SHAPES [llama3.2-1b:f16 llama3.1-8b:q4_0]  PROFILE_BATCH: 1 also profiles pp512 -b 512 [1]
#   NCU_SHAPE [llama3.2-1b:f16]  NCU_TASKS: task:layer ('-': a global task) [ffn_down:2 attn:1 output:-]
#                  NCU_TOKEN: the decode token [30]  NCU_ARGS: extra run flags []
#   AB_SHAPES [the six]  AB_PREFILL [llama3.2-1b:f16 llama3.1-8b:f16 llama3.1-8b:q4_0]
#   AB_ROUNDS [2]  AB_ARGS: flags for both builds []  AB_PROMPTS: '|'-separated prompts for the md5s
#                  [Once upon a time]  AB_TOKENS: greedy tokens each [48]
#   LLAMA_SHAPES [qwen3-30b-a3b:q4_0 qwen3-30b-a3b:q8_0]  LLAMA_VOCAB: the vocab file synth copies
#                  [testdata/vocab/ggml-vocab-qwen3-npm.gguf when .gpu has it, else VOCAB]
#   BATCHED_SHAPE [llama3.1-8b:q4_0]  BATCHED_NPL [1,8,32,64]  BATCHED_CLIENTS [1,8,32,64]
#                  BATCHED_SERVE_ARGS: extra serve flags []  (SERVE_SECONDS: each client count's window)
#   BATCHED_PROFILE_NPL [8 32 64]  BATCHED_PROFILE_TOP [14]  BATCHED_PROFILER: 0 gives each set's S_TG
#                  at every N in one unprofiled run instead (the rate, not where it goes) [1]
#                  BATCHED_PROFILE_TUNE: ';'-separated flag sets, each profiled at every N
#                  [--tune gemm.bn=64;--tune gemm.bn=64 --tune gemm.min_blocks=2;--tune batch.xrows=8]
#   KVPOOL_TOKENS [90000]  KVPOOL_WORDS: prompt words a client [700]
#   SWEEP_SHAPES [llama3.1-8b:q4_0]  SWEEP_KEY  SWEEP_VALUES (space-separated)  SWEEP_ROUNDS [2]
#                  SWEEP_ARGS: ';'-separated flag sets run instead of the --tune values
#   OPENCL_PARTS   the opencl stage's parts: golden (the tests), bench (OPENCL_SHAPES), profile,
#                  gates (each sibling alone, OPENCL_GATE_SHAPE's siblings and tunables) [golden bench profile]
#   OPENCL_SHAPES [llama3.2-1b:f16 llama3.1-8b:f16 llama3.1-8b:q8_0]  OPENCL_PP: 1 adds pp512 [0]
#   OPENCL_PROFILE_SHAPE [llama3.2-1b:f16]
#   OPENCL_GATE_SHAPE [llama3.1-8b:q8_0]  OPENCL_TUNE: --tune values, one bench each (a,b: both at once)
#                  [gemv.rows=8 gemv.rows=32 gemv.wg=512 gemv.groups=8 gemv.ahead=1 gemv.ahead=2 gemv.ahead=4]
# Binaries come from .gpu/bin (test binaries there or in .gpu/bin/gpu), data from .gpu/shared.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
B=$PWD/.gpu/bin
export JITLLM_SHARED_DIR=$PWD/.gpu/shared JITLLM_SOURCE_DIR=$PWD JITLLM_GOLDEN_ALLOW_MISSING=1
export JITLLM_CACHE_DIR=/tmp/jitllm-cache
OUT=${OUT:-/tmp/gpu-out}
DRY=${GPU_CHECK_DRY:-0}
SIX="llama3.1-8b:f16 llama3.1-8b:q8_0 llama3.1-8b:q4_0 llama3.2-1b:f16 llama3.2-1b:q8_0 llama3.2-1b:q4_0"
SHAPES=${SHAPES:-$SIX}
BENCH_R=${BENCH_R:-3}
BENCH_ARGS=${BENCH_ARGS:-}
TEST_TIMEOUT=${TEST_TIMEOUT:-400}
TEST_JOBS=${TEST_JOBS:-8}
VOCAB=$JITLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama3-npm.gguf
mkdir -p "$OUT"

log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
note() { tee -a "$OUT/summary.txt"; }
# The device tool brings back only a few files: keep summary.txt and pack the rest, also when
# `timeout` stops the script (a run past its limit still brings back what it measured)
pack_results() {
    if [ "$(find "$OUT" -type f | wc -l)" -gt 6 ]; then
        (cd "$OUT" && find . -type f ! -name summary.txt ! -name results.tgz -print0 |
            tar czf results.tgz --null -T - --remove-files)
    fi
}
trap 'log "stopped by a signal"; pack_results; exit 124' TERM INT
# x CMD...: run a command that needs the GPU, or print it under GPU_CHECK_DRY=1
# (printed on fd 3, the script's stderr, whatever the command's own redirections)
exec 3>&2
x() {
    if [ "$DRY" = 1 ]; then
        { printf '+'; printf ' %q' "$@"; echo; } >&3
        return 0
    fi
    "$@"
}
# tbin NAME: a test binary, in .gpu/bin or its gpu/ folder
tbin() { if [ -x "$B/gpu/$1" ]; then echo "$B/gpu/$1"; else echo "$B/$1"; fi; }
# synth SHAPE:TYPE -> path of a synthetic model of that shape (made once per host)
synth() {
    local s=${1%%:*} t=${1##*:} f
    f=/tmp/$s-$t.gguf
    [ -f "$f" ] || x "$B/jitllm" synth --shape "$s" --type "$t" --vocab "$VOCAB" --out "$f" >&2
    echo "$f"
}
# bench_rate BIN MODEL ARGS...: bench's mean t/s of its last md row (empty if none)
bench_rate() {
    local bin=$1 f=$2 o
    shift 2
    # shellcheck disable=SC2086
    o=$(x timeout 300 "$B/$bin" bench --gpu -m "$f" -r "$BENCH_R" -o md $BENCH_ARGS "$@" 2>&1)
    echo "$o" >> "$OUT/bench-rows.txt"
    echo "$o" | awk -F'|' '/^\| /{for (i = 2; i < NF; i++) if ($i ~ /^ *(tg|pp)[0-9]+/) {split($(i+1), a, " "); r = a[1]}}
        END {print r}'
}
# bench_rows LABEL MODEL ARGS...: bench's md rows of this build into the summary
bench_rows() {
    local label=$1 f=$2
    shift 2
    log "$label"
    # shellcheck disable=SC2086
    x timeout 300 "$B/jitllm" bench --gpu -m "$f" -r "$BENCH_R" -o md $BENCH_ARGS "$@" 2>&1 |
        grep -E "^\| [a-z]|rror" | note
}
# cuda_test_run SHARDS LABEL FILE TEST [VAR=VALUE | ARG ...]: one GPU test binary with the given
# environment (VAR=VALUE) and arguments, as SHARDS gtest shards at once (GTEST_TOTAL_SHARDS: the
# tests are correctness checks, their time is NVRTC's and the CPU references'), its output in
# $OUT/FILE.txt and its verdict lines in $OUT/FILE.sum (the summary's share, added by the caller)
cuda_test_run() {
    local shards=$1 label=$2 file=$3 test=$4 rc=0 r i a envs=() args=() pids=()
    shift 4
    for a in "$@"; do
        if [[ $a =~ ^[A-Z_][A-Z0-9_]*= ]]; then envs+=("$a"); else args+=("$a"); fi
    done
    for ((i = 0; i < shards; i++)); do
        x timeout "$TEST_TIMEOUT" env JITLLM_TEST_BACKEND=cuda GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$i" \
            "${envs[@]}" "$(tbin "$test")" "${args[@]}" > "$OUT/$file.$i.part" 2>&1 &
        pids+=($!)
    done
    for i in "${pids[@]}"; do
        wait "$i"
        r=$?
        [ $rc != 0 ] || rc=$r
    done
    for ((i = 0; i < shards; i++)); do cat "$OUT/$file.$i.part"; done > "$OUT/$file.txt"
    rm -f "$OUT/$file".*.part
    {
        echo "== $label"
        [ $rc = 0 ] || echo "$label: exit $rc (124: TEST_TIMEOUT)"
        grep -E "golden\]|modes\]|^\[ +(OK|FAILED|PASSED) |Failure|Expected|Which|actual" "$OUT/$file.txt" |
            grep -v -E "absent|PASSED  \] 0 tests" | head -80
    } > "$OUT/$file.sum"
}
# cuda_test LABEL FILE TEST [VAR=VALUE | ARG ...]: cuda_test_run in TEST_JOBS shards, its verdicts
# into the summary
cuda_test() {
    echo "-- $1: running"  # (progress on stdout; the summary gets the verdicts)
    cuda_test_run "$TEST_JOBS" "$@"
    note < "$OUT/$2.sum"
    rm -f "$OUT/$2.sum"
}
# Forced variants that the test files do not all take alone (the refusals `jitllm plan
# --force-variant` gives on the golden files):
#   gemv.xq=producer  the producer's pairs are the bulk gemvs' blocks: forced with gemv.load=bulk
#   attn.kv=tma       head_dim 64 or 128: not the bundled stories260K (head_dim 8), the synthetic
#                     files only
GATE_WITH="gemv.xq=producer:gemv.load=bulk"        # VARIANT:COMPANION[,COMPANION] ...
GATE_SKIP="attn.kv=tma:*Stories260KGolden.*"        # VARIANT:GTEST_PATTERN ... (tests left out)
# gate_sets: the forced sets of GATES, or every gate's sibling from the plans of GATE_MODELS; each with
# the companions GATE_WITH names for its variants
gate_sets() {
    local m p set w
    if [ -n "${GATES:-}" ]; then
        [ "$GATES" = none ] || echo "$GATES" | tr ' ' '\n'
    else
        for m in ${GATE_MODELS:-$JITLLM_SHARED_DIR/golden/synthetic/llama-q4_0.gguf $JITLLM_SHARED_DIR/golden/synthetic/llama-f16.gguf}; do
            # the plan needs no GPU: "  gate  chosen  (sibling other ) reason"
            p=$("$B/jitllm" plan -m "$m" --target sm_90 2>/dev/null)
            echo "$p" | awk '$3 == "(sibling" {v = $4; sub(/\)$/, "", v); print $1 "=" v}'
        done | sort -u
    fi | while read -r set; do
        for w in $GATE_WITH; do
            [[ ",$set," == *",${w%%:*},"* && ",$set," != *",${w#*:},"* ]] && set="$set,${w#*:}"
        done
        echo "$set"
    done
}
# gate_filter SET [PATTERN]: the gtest filter of PATTERN's tests [all] leaving out the tests GATE_SKIP
# names for a variant of SET (nothing when neither applies)
gate_filter() {
    local s out=() pos=${2:-}
    for s in $GATE_SKIP; do [[ ",$1," == *",${s%%:*},"* ]] && out+=("${s#*:}"); done
    if [ ${#out[@]} != 0 ]; then
        (IFS=:; echo "--gtest_filter=${pos:-*}-${out[*]}")
    elif [ -n "$pos" ]; then
        echo "--gtest_filter=$pos"
    fi
}
# forced_tests NAME TEST [PATTERN]: TEST (PATTERN's tests of it [all]) with each forced set of
# gate_sets (GATE_SHARD's share of them)
forced_tests() {
    local name=$1 test=$2 pos=${3:-} set n=0 shard=${GATE_SHARD:-1/1} done=()
    for set in $(gate_sets); do
        n=$((n + 1))
        [ $(((n - ${shard%/*}) % ${shard#*/})) = 0 ] || continue
        # TEST_JOBS sets at once, one process each
        while [ "$(jobs -rp | wc -l)" -ge "$TEST_JOBS" ]; do wait -n; done
        # shellcheck disable=SC2046
        cuda_test_run 1 "$name with $set forced" "$name-forced-$n" "$test" JITLLM_TEST_CUDA_FORCE="$set" \
            ${FORCED_ENV:-} $(gate_filter "$set" "$pos") &
        done+=("$name-forced-$n")
    done
    wait
    for set in "${done[@]}"; do
        note < "$OUT/$set.sum"
        rm -f "$OUT/$set.sum"
    done
}
# greedy_md5 BIN MODEL PROMPT: md5 of BIN's greedy continuation of PROMPT (AB_TOKENS tokens)
greedy_md5() {
    # shellcheck disable=SC2086
    x timeout 120 "$B/$1" --gpu -m "$2" -p "$3" -n "${AB_TOKENS:-48}" --temperature 0 --no-stream \
        $BENCH_ARGS ${AB_ARGS:-} 2>/dev/null | md5sum | cut -c1-32
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a > 0 && b > 0) printf "%.4f", b / a; else print "-"}'; }
# opencl_env: NVIDIA's OpenCL driver for the ICD loader (an nvidia.icd in a folder of our own), and
# the loader from .gpu/lib where the host has no libOpenCL.so.1
opencl_env() {
    mkdir -p /tmp/jitllm-icd && echo libnvidia-opencl.so.1 > /tmp/jitllm-icd/nvidia.icd
    export OCL_ICD_VENDORS=/tmp/jitllm-icd
    if ! ldconfig -p 2> /dev/null | grep -q 'libOpenCL\.so\.1 ' && [ -f .gpu/lib/libOpenCL.so.1 ]; then
        export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    fi
}
# opencl_device: the index of NVIDIA's OpenCL device in --list-devices ("  1: NVIDIA H100 ... (NVIDIA
# CUDA, ..."), else empty (then --opencl's own choice, the first GPU)
opencl_device() {
    "$B/jitllm" --list-devices 2> /dev/null | awk '/^OpenCL devices/ {on = 1; next}
        on && /^ +[0-9]+: .*\(NVIDIA/ {sub(/:.*/, ""); gsub(/ /, ""); print; exit}'
}
# opencl_siblings MODEL: each gate's sibling the device runs, from --print-plan's gate report
# ("  gate  chosen  (sibling other ) reason"), tried on MODEL (a side the device lacks is refused)
opencl_siblings() {
    local g
    # shellcheck disable=SC2086
    x "$B/jitllm" $CLDEV -m "$1" -n 1 -p x --temperature 0 --print-plan 2>&1 > /dev/null |
        awk '/^opencl gates:/ {on = 1; next} on && $3 == "(sibling" {v = $4; sub(/\)$/, "", v); print $1 "=" v; next} on {exit}' |
        while read -r g; do
            # shellcheck disable=SC2086
            if x "$B/jitllm" $CLDEV -m "$1" -n 1 -p x --temperature 0 --force-variant "$g" > /dev/null 2>&1; then echo "$g"
            else echo "opencl: $g is not runnable here" | note >&2; fi
        done
}
# opencl_test LABEL FILE TEST [VAR=VALUE ...]: cuda_test's verdicts for a golden test through the OpenCL backend
opencl_test() {
    local label=$1 file=$2 test=$3
    shift 3
    cuda_test "$label" "$file" "$test" JITLLM_TEST_BACKEND=opencl ${CLDEV_INDEX:+JITLLM_TEST_OPENCL_DEVICE=$CLDEV_INDEX} "$@"
}

[ -f .gpu/build-info.txt ] && sed 's/^/== build: /' .gpu/build-info.txt | note
[ "$DRY" = 1 ] && log "dry run: GPU commands printed, not run"
[ $# -gt 0 ] || set -- info kernels golden
for stage in "$@"; do
case $stage in
info)
    log "device"
    x nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv | note
    x "$B/jitllm" --version 2>&1 | note
    x "$B/jitllm" --list-devices 2>&1 | note
    cuda_test "driver round trip" driver backend_cuda_driver_test
    log "bundled model, greedy on the GPU"
    x "$B/jitllm" --gpu -p "Once upon a time" -n 48 --temperature 0 --verbose-init 2>&1 | tail -20 | note
    ;;
kernels)
    for part in ${KERNELS_PARTS:-vs-cpu gemm draw attn-prefill moe-group}; do
        case $part in
        vs-cpu) cuda_test "kernels_vs_cpu (${KERNELS_FILTER:-*})" kernels-vs-cpu kernels_vs_cpu_test \
            --gtest_filter="${KERNELS_FILTER:-*}" ;;
        gemm) cuda_test "gemm and x-rows gemv vs cpu" kernels-gemm kernels_gemm_test --gtest_filter='-GemmBench.*' ;;
        draw) cuda_test "device draw vs the host sampler" kernels-draw kernels_draw_test ;;
        attn-prefill) cuda_test "prefill attention vs cpu" kernels-attn-prefill kernels_attn_prefill_test ;;
        moe-group) cuda_test "grouped experts vs cpu" kernels-moe-group kernels_moe_group_test \
            --gtest_filter='*MoeGroupVsCpu*' ;;
        *) echo "unknown kernels part $part (vs-cpu gemm draw attn-prefill moe-group)"; exit 2 ;;
        esac
    done
    ;;
slots)
    for t in runtime_slots_ahead_test runtime_slots_mask_test runtime_slots_paged_test runtime_slots_draw_test; do
        [ -x "$(tbin "$t")" ] || { log "$t: not carried (GPU_TESTS)"; continue; }
        cuda_test "${t%_test} on the GPU" "${t%_test}" "$t"
    done
    ;;
golden)
    cuda_test "golden, default gates" golden-default engine_golden_test
    cuda_test "golden, every sibling at once" golden-siblings engine_golden_test JITLLM_TEST_CUDA_SIBLINGS=1
    forced_tests golden engine_golden_test
    ;;
modes)
    parts=" ${MODES_PARTS:-defaults siblings forced generate} "
    [[ $parts == *" defaults "* ]] && cuda_test "prompt modes, default gates" modes-default prefill_modes_test
    [[ $parts == *" siblings "* ]] &&
        cuda_test "prompt modes, every sibling at once" modes-siblings prefill_modes_test JITLLM_TEST_CUDA_SIBLINGS=1
    if [[ $parts == *" forced "* ]]; then
        # the forced sets on MODES_FORCED_FILES only: a shared folder of links holding just those
        # golden files (the golden stage runs every set on every file)
        fs=/tmp/jitllm-modes-forced
        rm -rf "$fs" && mkdir -p "$fs/golden/synthetic"
        ln -s "$JITLLM_SHARED_DIR/testdata" "$fs/testdata"
        ln -s "$JITLLM_SHARED_DIR"/golden/*.json "$fs/golden/" 2> /dev/null
        ln -s "$JITLLM_SHARED_DIR"/golden/synthetic/*.json "$fs/golden/synthetic/"
        for f in ${MODES_FORCED_FILES:-llama-f16 llama-q8_0 llama-q4_0 llama-q4_k_m}; do
            ln -s "$JITLLM_SHARED_DIR/golden/synthetic/$f.gguf" "$fs/golden/synthetic/"
        done
        FORCED_ENV="JITLLM_SHARED_DIR=$fs" forced_tests modes prefill_modes_test "${MODES_FORCED_FILTER:-*/0}"
    fi
    [[ $parts == *" generate "* ]] && cuda_test "generate: run-ahead and device draws" generate runtime_generate_test
    ;;
decode)
    for spec in $SHAPES; do
        bench_rows "decode tg128 $spec" "$(synth "$spec")" -p 0 -n 128
    done
    ;;
prefill)
    for spec in ${PREFILL_SHAPES:-llama3.2-1b:f16 llama3.1-8b:f16 llama3.1-8b:q8_0 llama3.1-8b:q4_0}; do
        bench_rows "prefill pp512 -b 512 $spec" "$(synth "$spec")" -p 512 -n 0 -b 512
    done
    BENCH_R=1 bench_rows "time to first token, 2048-token prompt, 8B Q4_0, -b 512" "$(synth llama3.1-8b:q4_0)" \
        -p 2048 -n 0 -b 512
    if [ "${GEMM_BENCH:-0}" = 1 ]; then
        log "batch GEMMs alone: TFLOP/s at m 512 (kernels_gemm_test GemmBench, types ${GEMM_BENCH_TYPE:-q8_0,q4_0})"
        x env JITLLM_GEMM_BENCH=1 JITLLM_GEMM_BENCH_NO_SIMT=1 JITLLM_GEMM_BENCH_TYPE="${GEMM_BENCH_TYPE:-q8_0,q4_0}" \
            "$(tbin kernels_gemm_test)" --gtest_filter='GemmBench*' 2>&1 | grep -E "TFLOP|FAIL" | note
    fi
    ;;
depth)
    for spec in ${DEPTH_SHAPES:-llama3.1-8b:q8_0}; do
        bench_rows "depth 0 and ${DEPTH:-4096}, $spec" "$(synth "$spec")" -p 0 -n 128 -d "0,${DEPTH:-4096}" \
            --no-warmup --with-prefill-decode
    done
    ;;
serve)
    f=$(synth "${SERVE_SHAPE:-llama3.2-1b:q4_0}")
    for temp in ${SERVE_TEMPS:-0 0.8}; do
        log "serve --gpu ${SERVE_SHAPE:-llama3.2-1b:q4_0} [${SERVE_ARGS:-}] temperature $temp: aggregate tok/s by clients"
        # shellcheck disable=SC2086
        x "$B/jitllm" serve --gpu -m "$f" --parallel 64 -c 1024 \
            --port 18080 --prefill-chunk 64 ${SERVE_ARGS:-} > "$OUT/serve-$temp.log" 2>&1 &
        sp=$!
        if [ "$DRY" != 1 ]; then
            for _ in $(seq 1 120); do curl -sf http://127.0.0.1:18080/health > /dev/null 2>&1 && break; sleep 1; done
        fi
        x timeout 300 python3 scripts/serve-load.py --port 18080 --clients "${SERVE_CLIENTS:-1,8,32}" \
            --seconds "${SERVE_SECONDS:-10}" --temperature "$temp" 2>&1 | note
        kill -INT $sp 2> /dev/null
        wait $sp
        tail -3 "$OUT/serve-$temp.log" | note
    done
    ;;
profile)
    for spec in ${PROFILE_SHAPES:-llama3.2-1b:f16 llama3.1-8b:q4_0}; do
        f=$(synth "$spec")
        d=$OUT/prof-${spec/:/-}
        log "profile $spec: decode's per-kernel table (JSON and Chrome trace in $d)"
        # shellcheck disable=SC2086
        x "$B/jitllm" --gpu -m "$f" -p "Once upon a time" -n 64 --temperature 0 --profiler --profiler-dump-dir "$d" \
            $BENCH_ARGS 2>&1 > /dev/null | grep -vE "^\s*$" | tail -30 | note
        if [ "${PROFILE_BATCH:-1}" = 1 ]; then
            log "profile $spec: the batch phase, pp512 -b 512"
            # shellcheck disable=SC2086
            x "$B/jitllm" bench --gpu -m "$f" -p 512 -n 0 -b 512 -r 1 --no-warmup --profiler -o md $BENCH_ARGS 2>&1 |
                grep -vE "^\s*$" | tail -30 | note
        fi
    done
    ;;
ncu)
    # `jitllm ncu` on NCU_TASKS in single-token decode and in the last prompt chunk (the output runs
    # there); each launch checked twice: ncu's grid against the plan's, and ncu's NVTX step range
    # (--print-nvtx-rename kernel) of the launch and of the ones before it: the layer's launch is the
    # L+1-th of its step. The NVTX run has graphs off (a graph's kernels carry no NVTX range); the
    # launches and their order are the same.
    f=$(synth "${NCU_SHAPE:-llama3.2-1b:f16}")
    prompt="Once upon a time there was a little girl named Lily who loved to play outside in the park with her friends"
    for mode in "--token ${NCU_TOKEN:-30}" "--chunk 2"; do
        # shellcheck disable=SC2206
        run=(-m "$f" -p "$prompt" -n 16 --temperature 0 --gpu ${NCU_ARGS:-})
        [ "$mode" = "--chunk 2" ] && run+=(--batch-prefill-size 8)
        for tl in ${NCU_TASKS:-ffn_down:2 attn:1 output:-}; do
            t=${tl%%:*} l=${tl#*:} lay=()
            [ "$l" = - ] && l=0 || lay=(--layer "$l")
            tag="$t-${l}-${mode// /}"
            log "jitllm ncu --task $t ${lay[*]} $mode -- ${run[*]}"
            # shellcheck disable=SC2086
            x timeout 300 "$B/jitllm" ncu --task "$t" "${lay[@]}" $mode --out "$OUT/ncu-$tag" -- "${run[@]}" \
                > "$OUT/ncu-$tag.txt" 2>&1
            echo "rc=$?" | note
            grep -vE "^==PROF==|^ *$" "$OUT/ncu-$tag.txt" | grep -vE "^(Once|[A-Za-z ,.']+$)" | head -16 | note
            pr=$(grep -m1 "^profiles" "$OUT/ncu-$tag.txt")
            k=$(echo "$pr" | awk '{print $2}')
            skip=$(echo "$pr" | sed -n 's/.*--launch-skip \([0-9]*\)).*/\1/p')
            grid=$(echo "$pr" | sed -n 's/.*grid (\([0-9]*\), \([0-9]*\), \([0-9]*\)).*/\1 \2 \3/p' | awk '{print $1 * $2 * $3}')
            want=$(echo "$pr" | sed -n -e 's/.*step at position \([0-9]*\).*/(pos \1)/p' -e 's/.*rows from position \([0-9]*\)).*/from pos \1)/p')
            [ -n "$skip" ] || { echo "ncu check $tag: no launch in jitllm ncu's output" | note; continue; }
            from=$((skip - l - 1)); [ $from -lt 0 ] && from=0
            x timeout 300 ncu --clock-control none --nvtx --print-nvtx-rename kernel --csv --page raw \
                --metrics launch__grid_size,launch__block_size --kernel-name "regex:^$k\$" --launch-skip "$from" \
                --launch-count $((skip - from + 1)) "$B/jitllm" "${run[@]}" --no-cuda-graphs > "$OUT/ncu-nvtx-$tag.csv" 2>&1
            python3 scripts/ncu-nvtx-check.py "$OUT/ncu-nvtx-$tag.csv" "$want" "$grid" "$l" "$((skip - from))" "$tag" | note
        done
    done
    ;;
ab)
    # before = .gpu/bin/jitllm-base (gpu-prepare.sh GPU_BASE=...), after = .gpu/bin/jitllm
    [ -x "$B/jitllm-base" ] || [ "$DRY" = 1 ] || { log "ab: no .gpu/bin/jitllm-base (GPU_BASE for gpu-prepare.sh)"; continue; }
    rows=()
    for spec in ${AB_SHAPES:-$SIX}; do rows+=("$spec|-p 0 -n 128|tg128"); done
    for spec in ${AB_PREFILL:-llama3.2-1b:f16 llama3.1-8b:f16 llama3.1-8b:q4_0}; do rows+=("$spec|-p 512 -n 0 -b 512|pp512"); done
    : > "$OUT/ab-rates.txt"
    for r in $(seq "${AB_ROUNDS:-2}"); do
        for row in "${rows[@]}"; do
            IFS='|' read -r spec args test <<< "$row"
            f=$(synth "$spec")
            for bin in jitllm-base jitllm; do
                # shellcheck disable=SC2086
                v=$(bench_rate "$bin" "$f" $args ${AB_ARGS:-})
                echo "$spec $test $bin $r ${v:--}" >> "$OUT/ab-rates.txt"
                log "ab round $r $spec $test $bin: ${v:--}"
            done
        done
    done
    log "ab: mean tok/s over ${AB_ROUNDS:-2} rounds (before = jitllm-base, after = this build)"
    {
        echo "| shape | test | before | after | after / before |"
        echo "|---|---|---|---|---|"
        for row in "${rows[@]}"; do
            IFS='|' read -r spec args test <<< "$row"
            b=$(awk -v s="$spec" -v t="$test" '$1 == s && $2 == t && $3 == "jitllm-base" && $5 != "-" {x += $5; n++} END {if (n) printf "%.2f", x / n}' "$OUT/ab-rates.txt")
            a=$(awk -v s="$spec" -v t="$test" '$1 == s && $2 == t && $3 == "jitllm" && $5 != "-" {x += $5; n++} END {if (n) printf "%.2f", x / n}' "$OUT/ab-rates.txt")
            echo "| $spec | $test | ${b:--} | ${a:--} | $(ratio "${b:-0}" "${a:-0}") |"
        done
    } | note
    log "ab: greedy md5 of each build (${AB_TOKENS:-48} tokens)"
    IFS='|' read -ra prompts <<< "${AB_PROMPTS:-Once upon a time}"
    for spec in ${AB_SHAPES:-$SIX}; do
        f=$(synth "$spec")
        for p in "${prompts[@]}"; do
            mb=$(greedy_md5 jitllm-base "$f" "$p")
            ma=$(greedy_md5 jitllm "$f" "$p")
            same=DIFFERENT
            [ "$mb" = "$ma" ] && same=same
            # the md5 of no output at all: a run that failed
            [ "$ma" = d41d8cd98f00b204e9800998ecf8427e ] && same="$same, NO OUTPUT"
            echo "md5 $spec \"$p\": before $mb after $ma $same" | note
        done
    done
    ;;
sweep)
    if [ -n "${SWEEP_ARGS:-}" ]; then
        IFS=';' read -ra sets <<< " ;$SWEEP_ARGS"
    else
        [ -n "${SWEEP_KEY:-}" ] || { log "sweep: set SWEEP_KEY and SWEEP_VALUES (jitllm plan --list-tunables) or SWEEP_ARGS"; continue; }
        sets=(" ")
        for v in ${SWEEP_VALUES:-}; do sets+=("--tune $SWEEP_KEY=$v"); done
    fi
    for spec in ${SWEEP_SHAPES:-llama3.1-8b:q4_0}; do
        f=$(synth "$spec")
        for r in $(seq "${SWEEP_ROUNDS:-2}"); do
            for a in "${sets[@]}"; do
                # shellcheck disable=SC2086
                v=$(bench_rate jitllm "$f" -p 0 -n 128 $a)
                log "sweep $spec round $r [${a# }]: tg128 ${v:-FAILED (see bench-rows.txt)}"
            done
        done
    done
    ;;
llama)
    LB=/tmp/llama.cpp/build/bin/llama-bench
    [ -x "$LB" ] || x bash .gpu/baselines/build-llama-cuda.sh /tmp/llama.cpp > "$OUT/llama-build.txt" 2>&1 &
    lv=$JITLLM_SHARED_DIR/testdata/vocab/ggml-vocab-qwen3-npm.gguf
    [ -f "$lv" ] || lv=$VOCAB
    files=()
    for spec in ${LLAMA_SHAPES:-qwen3-30b-a3b:q4_0 qwen3-30b-a3b:q8_0}; do files+=("$(VOCAB=${LLAMA_VOCAB:-$lv} synth "$spec")"); done
    for f in "${files[@]}"; do bench_rows "jitllm tg128, pp512 -b 512: $(basename "$f")" "$f" -p 512 -n 128 -b 512; done
    wait
    [ "$DRY" = 1 ] || [ -x "$LB" ] || { log "llama.cpp build failed"; tail -20 "$OUT/llama-build.txt" | note; continue; }
    for f in "${files[@]}"; do
        log "llama.cpp tg128, pp512 -fa 1: $(basename "$f")"
        x timeout 300 "$LB" -m "$f" -p 512 -n 128 -fa 1 -r "$BENCH_R" -o md 2>&1 | grep -E "^\| (model|[a-z])|rror" | note
    done
    ;;
batched)
    LBB=/tmp/llama.cpp/build/bin/llama-batched-bench
    [ -x "$LBB" ] || x bash .gpu/baselines/build-llama-cuda.sh /tmp/llama.cpp > "$OUT/llama-build.txt" 2>&1 &
    # the paged batch steps against the CPU spec's tokens (carried with GPU_TESTS when wanted)
    for t in runtime_slots_paged_test runtime_slots_draw_test; do
        [ -x "$(tbin $t)" ] && cuda_test "$t" "$t" "$t"
    done
    f=$(synth "${BATCHED_SHAPE:-llama3.1-8b:q4_0}")
    npl=${BATCHED_NPL:-1,8,32,64}
    wait  # the timings below with the build done
    log "jitllm bench --gpu -npp 128 -ntg 128 -npl $npl: $(basename "$f")"
    # shellcheck disable=SC2086
    x timeout 400 "$B/jitllm" bench --gpu -m "$f" -npp 128 -ntg 128 -npl "$npl" $BENCH_ARGS 2>&1 | grep -E "^\||rror" | note
    if [ "$DRY" = 1 ] || [ -x "$LBB" ]; then
        log "llama-batched-bench -npp 128 -ntg 128 -npl $npl -fa 1: $(basename "$f")"
        x timeout 300 "$LBB" -m "$f" -c 20000 -b 2048 -ub 512 -npp 128 -ntg 128 -npl "$npl" -fa 1 -ngl 99 2>&1 |
            grep -E "^\||rror" | note
    else
        log "llama.cpp build failed"; tail -20 "$OUT/llama-build.txt" | note
    fi
    log "serve --gpu --parallel 64 -c 1024 [${BATCHED_SERVE_ARGS:-}]: aggregate tok/s by clients, 128-token completions"
    # shellcheck disable=SC2086
    x "$B/jitllm" serve --gpu -m "$f" --parallel 64 -c 1024 --port 18081 ${BATCHED_SERVE_ARGS:-} > "$OUT/serve-batched.log" 2>&1 &
    sp=$!
    if [ "$DRY" != 1 ]; then
        for _ in $(seq 1 180); do curl -sf http://127.0.0.1:18081/health > /dev/null 2>&1 && break; sleep 1; done
    fi
    x timeout 300 python3 scripts/serve-load.py --port 18081 --clients "${BATCHED_CLIENTS:-1,8,32,64}" \
        --seconds "${SERVE_SECONDS:-10}" --max-tokens 128 2>&1 | note
    [ "$DRY" = 1 ] || curl -s http://127.0.0.1:18081/metrics | grep -E "^jitllm:(kv_cache|prompt_tokens_reused)" | note
    kill -INT $sp 2> /dev/null
    wait $sp
    tail -3 "$OUT/serve-batched.log" | note
    ;;
batched-profile)
    f=$(synth "${BATCHED_SHAPE:-llama3.1-8b:q4_0}")
    IFS=';' read -r -a psets <<< "${BATCHED_PROFILE_TUNE---tune gemm.bn=64;--tune gemm.bn=64 --tune gemm.min_blocks=2;--tune batch.xrows=8}"
    for set in "" "${psets[@]}"; do
        if [ "${BATCHED_PROFILER:-1}" = 0 ]; then
            # S_TG of every row count in one run a set, unprofiled (graphs, no per-launch timing)
            npl=$(echo "${BATCHED_PROFILE_NPL:-8 32 64}" | tr ' ' ',')
            log "jitllm bench --gpu -npp 128 -ntg 64 -npl $npl ${set:-(defaults)}: $(basename "$f")"
            # shellcheck disable=SC2086
            x timeout 200 "$B/jitllm" bench --gpu -m "$f" -npp 128 -ntg 64 -npl "$npl" $set $BENCH_ARGS \
                > "$OUT/bsets.txt" 2>&1
            [ "$DRY" = 1 ] || grep -E "^\||rror" "$OUT/bsets.txt" | note
            continue
        fi
        for n in ${BATCHED_PROFILE_NPL:-8 32 64}; do
            log "profile jitllm bench --gpu -npp 128 -ntg 32 -npl $n ${set:-(defaults)}: $(basename "$f"), top ${BATCHED_PROFILE_TOP:-14} kernels by time"
            # the md row (profiled: launches one by one), then the table sorted by total_us
            # shellcheck disable=SC2086
            x timeout 100 "$B/jitllm" bench --gpu -m "$f" -npp 128 -ntg 32 -npl "$n" --profiler $set $BENCH_ARGS \
                > "$OUT/bprof.txt" 2>&1
            [ "$DRY" = 1 ] && continue
            grep -E "^\|.*[0-9]|rror" "$OUT/bprof.txt" | note
            grep -m1 -E "^phase " "$OUT/bprof.txt" | note
            grep -E "^(batch|decode|prefill) " "$OUT/bprof.txt" | grep -v "(all kernels)" | sort -k4,4 -g -r |
                head -n "${BATCHED_PROFILE_TOP:-14}" | note
            grep -E "\(all kernels\)" "$OUT/bprof.txt" | note
        done
    done
    ;;
kvpool)
    f=$(synth "${BATCHED_SHAPE:-llama3.1-8b:q4_0}")
    log "serve --gpu --parallel 64 -c 8192 --kv-pool-tokens ${KVPOOL_TOKENS:-90000}: 64 clients of ~${KVPOOL_WORDS:-700}-word prompts"
    x "$B/jitllm" serve --gpu -m "$f" --parallel 64 -c 8192 --kv-pool-tokens "${KVPOOL_TOKENS:-90000}" --port 18082 \
        --prefill-chunk 256 --verbose-init > "$OUT/serve-kvpool.log" 2>&1 &
    sp=$!
    if [ "$DRY" != 1 ]; then
        for _ in $(seq 1 180); do curl -sf http://127.0.0.1:18082/health > /dev/null 2>&1 && break; sleep 1; done
    fi
    x nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$OUT/kvpool-mem.txt" 2>&1 &
    mp=$!
    x timeout 300 python3 scripts/serve-load.py --port 18082 --clients 64 --seconds "${SERVE_SECONDS:-20}" \
        --max-tokens 128 --prompt-words "${KVPOOL_WORDS:-700}" 2>&1 | note
    [ "$DRY" = 1 ] || curl -s http://127.0.0.1:18082/metrics | grep -E "^jitllm:(kv_cache|prompt_tokens|requests_)" | note
    kill $mp 2> /dev/null
    [ "$DRY" = 1 ] || echo "peak GPU memory used: $(sort -n "$OUT/kvpool-mem.txt" | tail -1) MiB" | note
    grep -iE "weights|kv|memory" "$OUT/serve-kvpool.log" | head -8 | note
    log "time to first token, a ~2000-token system prompt served twice (prefix reuse)"
    x timeout 300 python3 scripts/serve-load.py --port 18082 --ttft-prefix-words 1500 --max-tokens 8 2>&1 | note
    [ "$DRY" = 1 ] || curl -s http://127.0.0.1:18082/metrics | grep -E "^jitllm:prompt_tokens_reused" | note
    kill -INT $sp 2> /dev/null
    wait $sp
    ;;
opencl)
    opencl_env
    log "opencl: devices (OCL_ICD_VENDORS=$OCL_ICD_VENDORS)"
    x "$B/jitllm" --list-devices 2>&1 | note
    CLDEV_INDEX=$(opencl_device)
    CLDEV=${CLDEV_INDEX:+--opencl-device $CLDEV_INDEX}
    CLDEV=${CLDEV:---opencl}
    if [ -n "$CLDEV_INDEX" ]; then log "opencl: every run on the NVIDIA device: $CLDEV"
    else log "opencl: no device named NVIDIA: every run with --opencl (the first GPU, else device 0)"; fi
    g=$JITLLM_SHARED_DIR/golden/synthetic/llama-q8_0.gguf
    log "opencl: gate report and the first launches of $(basename "$g")"
    # shellcheck disable=SC2086
    x "$B/jitllm" $CLDEV -m "$g" -n 1 -p x --temperature 0 --print-plan --verbose-init 2>&1 > /dev/null | head -26 | note
    parts=" ${OPENCL_PARTS:-golden bench profile} "
    [[ $parts == *" golden "* || $parts == *" gates "* ]] && sibs=$(opencl_siblings "$g")
    if [[ $parts == *" golden "* ]]; then
        opencl_test "opencl golden, default gates" opencl-golden engine_golden_test
        opencl_test "opencl prompt modes, default gates" opencl-modes prefill_modes_test
        all=$(echo "$sibs" | paste -sd, -)
        opencl_test "opencl golden, every sibling at once, unfused ($all)" opencl-golden-siblings engine_golden_test \
            JITLLM_TEST_OPENCL_FORCE="$all" JITLLM_TEST_OPENCL_NO_FUSE=1
        opencl_test "opencl prompt modes, every sibling at once ($all)" opencl-modes-siblings prefill_modes_test \
            JITLLM_TEST_OPENCL_FORCE="$all"
        opencl_test "opencl golden, x in tiles (gemv.x=tiles, local.mem=16384)" opencl-golden-xtiles engine_golden_test \
            JITLLM_TEST_OPENCL_FORCE=gemv.x=tiles JITLLM_TEST_OPENCL_TUNE=local.mem=16384
    fi
    if [[ $parts == *" bench "* ]]; then
        for spec in ${OPENCL_SHAPES:-llama3.2-1b:f16 llama3.1-8b:f16 llama3.1-8b:q8_0}; do
            f=$(synth "$spec")
            tests=("-p 0 -n 128")
            [ "${OPENCL_PP:-0}" = 1 ] && tests+=("-p 512 -n 0 -b 512")
            for t in "${tests[@]}"; do
                for be in --gpu "$CLDEV"; do
                    log "opencl: $spec bench $be $t"
                    # shellcheck disable=SC2086
                    x timeout 300 "$B/jitllm" bench $be -m "$f" -r "$BENCH_R" -o md $BENCH_ARGS $t 2>&1 | grep -E "^\| [a-z]|rror" | note
                done
            done
        done
    fi
    if [[ $parts == *" profile "* ]]; then
        spec=${OPENCL_PROFILE_SHAPE:-llama3.2-1b:f16}
        f=$(synth "$spec")
        log "opencl: $spec $CLDEV --profiler, 64 tokens: the per-kernel table and the host's time a step"
        # shellcheck disable=SC2086
        x timeout 300 "$B/jitllm" $CLDEV -m "$f" -p "Once upon a time" -n 64 --temperature 0 --profiler \
            --profiler-dump-dir "$OUT/prof-opencl-${spec/:/-}" $BENCH_ARGS 2>&1 > /dev/null | grep -vE "^\s*$" | tail -34 | note
        log "opencl: $spec $CLDEV tg128 without the profiler: the host's time a decode step (--verbose-init)"
        # shellcheck disable=SC2086
        x timeout 300 "$B/jitllm" bench $CLDEV -m "$f" -r 1 -o md -p 0 -n 128 --verbose-init $BENCH_ARGS 2>&1 |
            grep -E "^\| [a-z]|opencl host|opencl device|rror" | note
    fi
    if [[ $parts == *" gates "* ]]; then
        n=0
        for set in $sibs; do
            n=$((n + 1))
            opencl_test "opencl golden with $set" "opencl-golden-forced-$n" engine_golden_test JITLLM_TEST_OPENCL_FORCE="$set"
        done
        f=$(synth "${OPENCL_GATE_SHAPE:-llama3.1-8b:q8_0}")
        for set in "" $sibs; do
            log "opencl: ${OPENCL_GATE_SHAPE:-llama3.1-8b:q8_0} tg128 $CLDEV ${set:+--force-variant $set}"
            # shellcheck disable=SC2086
            x timeout 300 "$B/jitllm" bench $CLDEV -m "$f" -r "$BENCH_R" -o md -p 0 -n 128 ${set:+--force-variant $set} 2>&1 |
                grep -E "^\| [a-z]|rror" | note
        done
        for tv in ${OPENCL_TUNE:-gemv.rows=8 gemv.rows=32 gemv.wg=512 gemv.groups=8 gemv.ahead=1 gemv.ahead=2 gemv.ahead=4}; do
            log "opencl: ${OPENCL_GATE_SHAPE:-llama3.1-8b:q8_0} tg128 $CLDEV --tune $tv"
            # shellcheck disable=SC2086
            x timeout 300 "$B/jitllm" bench $CLDEV -m "$f" -r "$BENCH_R" -o md -p 0 -n 128 --tune ${tv//,/ --tune } 2>&1 |
                grep -E "^\| [a-z]|rror" | note
        done
    fi
    if [[ $parts == *" ptx "* ]]; then
        # the programs the parts above built: NVIDIA's program binaries are PTX text; each gemv's
        # global loads by width (what the driver made of the kernel's loads) and the cache packed
        log "opencl: global loads by width in each gemv program NVIDIA's driver built (program.bin, PTX)"
        for d in "$JITLLM_CACHE_DIR"/opencl/*NVIDIA*/*gemv*; do
            [ -f "$d/program.bin" ] || continue
            printf '%-64s %s\n' "$(basename "$d")" "$(grep -oE 'ld\.global(\.nc)?(\.v[248])?\.[bfsu](8|16|32|64)' \
                "$d/program.bin" | sort | uniq -c | awk '{printf "%s %s, ", $1, $2}')" | note
        done
        tar czf "$OUT/clcache.tgz" -C "$JITLLM_CACHE_DIR" opencl 2>/dev/null
    fi
    ;;
probe)
    for sc in ${PROBE_SCALES:-1 1.89 3.56}; do
        log "persistent probe, bytes x $sc"
        x timeout "$TEST_TIMEOUT" env JITLLM_TEST_BACKEND=cuda JITLLM_PERSISTENT_PROBE=1 \
            JITLLM_PERSISTENT_PROBE_BYTES_SCALE="$sc" "$(tbin persistent_probe_test)" 2>&1 |
            grep -E "us a token|copy bandwidth|^\[ +(OK|FAILED|PASSED) |Failure|Expected|Which|actual" | note
    done
    ;;
*) echo "unknown stage $stage (stages: info kernels golden modes decode prefill depth serve profile ncu ab llama batched batched-profile kvpool sweep opencl probe slots)"; exit 2 ;;
esac
done
pack_results
