#!/usr/bin/env bash
# Fuzz smoke run (CI, JITLLM_FUZZ_SMOKE=1 in scripts/test.sh): builds the libFuzzer targets with
# clang under ASan+UBSan (build dir build-fuzz), seeds them from the malformed-file corpus, the
# vocab test strings and a few chat conversations, and runs each for a bounded time (as many at
# once as there are cores). A crash,
# sanitizer report, leak, timeout or over-limit allocation fails the script; the reproducer is
# left in $BUILD/fuzz-out/<target>/ (replay: build-fuzz/tests/fuzz/<target> FILE).
# usage: scripts/fuzz-smoke.sh [SECONDS_PER_TARGET]   (default 60, at most 120)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-${JITLLM_FUZZ_SECONDS:-60}}
if (( SECS > 120 )); then SECS=120; fi
BUILD=${JITLLM_FUZZ_BUILD_DIR:-build-fuzz}
source scripts/fuzz-common.sh

fuzz_build
fuzz_seeds
# the targets side by side, one a core (each still runs SECS seconds on a core of its own), their
# reports printed in target order
targets=(gguf_reader_fuzz tokenizer_fuzz chat_format_fuzz)
cores=$(nproc 2>/dev/null || echo 1)
res=$(mktemp -d)
trap 'rm -rf "$res"' EXIT
for t in "${targets[@]}"; do
    while (( $(jobs -rp | wc -l) >= cores )); do wait -n || true; done
    (
        rc=0
        fuzz_run "$t" -max_total_time="$SECS" > "$res/$t.out" 2>&1 || rc=$?
        echo "$rc" > "$res/$t.rc"
    ) &
done
wait
status=0
for t in "${targets[@]}"; do
    cat "$res/$t.out"
    [ "$(cat "$res/$t.rc" 2>/dev/null)" = 0 ] || status=1
done
exit $status
