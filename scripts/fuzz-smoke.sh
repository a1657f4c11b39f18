#!/usr/bin/env bash
# Fuzz smoke run (CI, JITLLM_FUZZ_SMOKE=1 in scripts/test.sh): builds the libFuzzer targets with
# clang under ASan+UBSan (build dir build-fuzz), seeds them from the malformed-file corpus, the
# vocab test strings and a few chat conversations, and runs each for a bounded time. A crash,
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
status=0
for t in gguf_reader_fuzz tokenizer_fuzz chat_format_fuzz; do
    fuzz_run "$t" -max_total_time="$SECS" || status=1
done
exit $status
