# The helpers of scripts/gpu-check.sh's stages: the summary (log, note), packing, a GPU command run or
# printed (x), test binaries (tbin, cuda_test), synthetic models (synth), bench's rows and rates.
# shellcheck shell=bash
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
note() { tee -a "$OUT/summary.txt"; }
# The device tool brings back only a few files: keep summary.txt and pack the rest
pack_results() {
    if [ "$(find "$OUT" -type f | wc -l)" -gt 6 ]; then
        (cd "$OUT" && find . -type f ! -name summary.txt ! -name results.tgz -print0 |
            tar czf results.tgz --null -T - --remove-files)
    fi
}
# x CMD...: run a command that needs the GPU, or print it under GPU_CHECK_DRY=1
# (printed on fd 3, the script's stderr, whatever the command's own redirections)
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
