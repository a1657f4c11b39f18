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
#                  [--tune batch.xrows=8;--tune batch.xrows=2]
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
# Each stage is a function stage_NAME (hyphens as underscores) in scripts/gpu-check/: tests.sh
# (info kernels slots golden modes), speed.sh (decode prefill depth profile ncu ab sweep llama probe),
# serving.sh (serve batched batched-profile kvpool), opencl.sh (opencl); the helpers in lib.sh.
# shellcheck source-path=SCRIPTDIR
set -uo pipefail
GPU_CHECK_DIR=$(CDPATH='' cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)/gpu-check
cd "$(dirname "$0")/.." || exit 1
# shellcheck disable=SC2034  # read by the stages
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
# shellcheck disable=SC2034  # read by the stages
VOCAB=$JITLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama3-npm.gguf
mkdir -p "$OUT"

# shellcheck source=gpu-check/lib.sh
. "$GPU_CHECK_DIR/lib.sh"
# shellcheck source=gpu-check/tests.sh
. "$GPU_CHECK_DIR/tests.sh"
# shellcheck source=gpu-check/speed.sh
. "$GPU_CHECK_DIR/speed.sh"
# shellcheck source=gpu-check/serving.sh
. "$GPU_CHECK_DIR/serving.sh"
# shellcheck source=gpu-check/opencl.sh
. "$GPU_CHECK_DIR/opencl.sh"
# pack_results also when `timeout` stops the script (a run past its limit still brings back what it
# measured)
trap 'log "stopped by a signal"; pack_results; exit 124' TERM INT
# fd 3: the script's stderr, where x prints a command under GPU_CHECK_DRY=1
exec 3>&2

[ -f .gpu/build-info.txt ] && sed 's/^/== build: /' .gpu/build-info.txt | note
[ "$DRY" = 1 ] && log "dry run: GPU commands printed, not run"
[ $# -gt 0 ] || set -- info kernels golden
for stage in "$@"; do
case $stage in
info | kernels | slots | golden | modes | decode | prefill | depth | serve | profile | ncu | ab | sweep | llama | \
    batched | batched-profile | kvpool | opencl | probe) "stage_${stage//-/_}" ;;
*) echo "unknown stage $stage (stages: info kernels golden modes decode prefill depth serve profile ncu ab llama batched batched-profile kvpool sweep opencl probe slots)"; exit 2 ;;
esac
done
pack_results
