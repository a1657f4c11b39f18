#!/usr/bin/env bash
# Long fuzz run (issue 8's record): each libFuzzer target to RUNS executions (default 10
# million) under ASan+UBSan, one after another, logs and stats in $BUILD/fuzz-out/<target>/.
# Prints per target: executions, seconds, corpus size, findings. Not part of CI.
# usage: scripts/fuzz-long.sh [RUNS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-10000000}
shift || true
TARGETS=${*:-gguf_reader_fuzz tokenizer_fuzz chat_format_fuzz}
BUILD=${JITLLM_FUZZ_BUILD_DIR:-build-fuzz}
export JITLLM_SHARED_DIR=${JITLLM_SHARED_DIR:-$PWD/../shared}
source scripts/fuzz-common.sh

fuzz_build
fuzz_seeds
status=0
for t in $TARGETS; do
    fuzz_run "$t" -runs="$RUNS" || status=1
done
exit $status
