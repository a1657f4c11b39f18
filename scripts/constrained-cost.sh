#!/usr/bin/env bash
# Constrained output on a GPU host (never in CI): the GPU tests of the token mask, then decode tok/s
# of the 8B Q4_0 shape with and without `-j` (the figure of docs/performance.md, "Constrained
# output"). Prepare on the development machine:
#   GPU_TESTS="kernels_mask_test runtime_generate_constrained_test runtime_generate_test" scripts/gpu-prepare.sh
# then on the GPU host (carry .gpu): scripts/constrained-cost.sh
# Parameters (environment): ROUNDS [3], TOKENS [256], SHAPE [llama3.1-8b], TYPE [q4_0],
# SKIP_TESTS=1 (only the timings). Each round runs every configuration once, alternated; the table
# gives each one's median tok/s and its ratio to the run without -j of the same sampling.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
B=$PWD/.gpu/bin
export JITLLM_CACHE_DIR=/tmp/jitllm-cache JITLLM_SHARED_DIR=$PWD/.gpu/shared JITLLM_SOURCE_DIR=$PWD \
       JITLLM_BINARY=$B/jitllm JITLLM_GOLDEN_ALLOW_MISSING=1
ROUNDS=${ROUNDS:-3} TOKENS=${TOKENS:-256} SHAPE=${SHAPE:-llama3.1-8b} TYPE=${TYPE:-q4_0}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ "${SKIP_TESTS:-0}" != 1 ]; then
    for t in kernels_mask_test runtime_generate_constrained_test runtime_generate_test; do
        echo "== $t"
        JITLLM_TEST_BACKEND=cuda timeout 400 "$B/$t" 2>&1 | grep -E '^\[  (PASSED|FAILED|SKIPPED) |Failure' | head -20
    done
fi
M=/tmp/$SHAPE-$TYPE.gguf
[ -f "$M" ] || "$B/jitllm" synth --shape "$SHAPE" --type "$TYPE" \
    --vocab "$JITLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama3-npm.gguf" --out "$M" >/dev/null || exit 1
# strings (free and bounded) and structure; structure, numbers and enums only
S1='{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string","maxLength":12}},"age":{"type":"integer"}},"required":["name","tags","age"]}'
S2='{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"ok":{"type":"boolean"},"kind":{"enum":["red","green","blue"]}},"required":["id","ok","kind"]},"minItems":5}'
declare -A ARGS=(
    ["greedy"]="--temp 0" ["greedy -j S1"]="--temp 0 -j S1" ["greedy -j S2"]="--temp 0 -j S2"
    ["draw"]="--temp 0.8 --top-k 40 -s 1" ["draw -j S1"]="--temp 0.8 --top-k 40 -s 1 -j S1"
)
ORDER=("greedy" "greedy -j S1" "greedy -j S2" "draw" "draw -j S1")
R=$(mktemp -d)
# rate CONFIG: one run's generated tokens and decode tok/s (the text's start to the log)
rate() {
    local a=() w
    for w in ${ARGS[$1]}; do
        case $w in S1) a+=("$S1") ;; S2) a+=("$S2") ;; *) a+=("$w") ;; esac
    done
    "$B/jitllm" --gpu -m "$M" -p "Once upon a time" -n "$TOKENS" --metrics json "${a[@]}" 2>"$R/err" >"$R/out"
    echo "[$1] $(head -c 120 "$R/out" | tr '\n' ' ')" >&2
    grep -o '"n_decode": [0-9]*, "decode_tok_s": [0-9.]*' "$R/err" | tr -dc '0-9. \n' | awk '{print $1, $2}'
}
rate greedy >/dev/null  # JIT cache and page cache warm
for ((r = 0; r < ROUNDS; ++r)); do
    for c in "${ORDER[@]}"; do rate "$c" >>"$R/${c// /_}"; done
done
# median FILE COLUMN
median() { awk -v k="$2" '{print $k}' "$1" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "| run ($SHAPE $TYPE, -n $TOKENS, $ROUNDS rounds) | tokens | decode tok/s (median) | vs without -j |"
echo "|---|---|---|---|"
for c in "${ORDER[@]}"; do
    m=$(median "$R/${c// /_}" 2)
    base=$(median "$R/${c%% -j*}" 2)
    echo "| \`${ARGS[$c]}\` | $(median "$R/${c// /_}" 1) | $m | $(awk -v a="$m" -v b="$base" 'BEGIN {printf "%+.1f %%", 100 * (a / b - 1)}') |"
done
rm -rf "$R"
