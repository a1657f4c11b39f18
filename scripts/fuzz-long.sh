#!/usr/bin/env bash
# Long fuzz run (issue 8's record): each libFuzzer target to RUNS executions (default 10
# million) under ASan+UBSan, all targets at once, logs and stats in $BUILD/fuzz-out/<target>/.
# Prints per target: executions, seconds, corpus size, findings. Not part of CI.
# usage: [FUZZ_RESUME=1] scripts/fuzz-long.sh [RUNS] [TARGET...]  (FUZZ_RESUME=1: continue from the
# corpus an earlier run left in $BUILD/fuzz-out/<target>/corpus; the log gets a timestamped name)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-10000000}
shift || true
TARGETS=${*:-gguf_reader_fuzz tokenizer_fuzz chat_format_fuzz}
BUILD=${JITLLM_FUZZ_BUILD_DIR:-build-fuzz}
source scripts/fuzz-common.sh

fuzz_build
fuzz_seeds
# The targets run side by side (one core each); each prints its line when it ends.
pids=()
for t in $TARGETS; do
    fuzz_run "$t" -runs="$RUNS" &
    pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
