#!/usr/bin/env bash
# The whole test suite: install dependencies, configure, build everything, run ctest (unit +
# golden + CLI + offline JIT checks). Used by the README and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
BUILD=${JITLLM_BUILD_DIR:-build}
# The reference data (llama.cpp's golden logits, the synthetic models, the vocab files) is
# tests/data; JITLLM_SHARED_DIR, when set, points the tests at another copy of the same layout.
# A compiler launcher (ccache) is taken from CMAKE_CXX_COMPILER_LAUNCHER in the environment.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DJITLLM_WERROR=ON >/dev/null
cmake --build "$BUILD" -j "$(nproc)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" "$@" 2>&1 | tee "$log" || rc=$?
# Fuzz smoke run (issue 8; .ci/run sets JITLLM_FUZZ_SMOKE=1): clang ASan+UBSan build of the
# libFuzzer targets in build-fuzz, then each target for 60 s (JITLLM_FUZZ_SECONDS).
if [ "${JITLLM_FUZZ_SMOKE:-0}" = 1 ]; then
    if [ -f scripts/fuzz-smoke.sh ]; then
        bash scripts/fuzz-smoke.sh
    else
        echo "fuzz smoke: scripts/fuzz-smoke.sh is not in this checkout; skipped"
    fi
fi
# the closing line: N passed, N failed (ctest's own summary, restated last)
summary=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$log" | tail -1)
total=$(echo "$summary" | sed -E 's/.*out of ([0-9]+).*/\1/')
failed=$(echo "$summary" | sed -E 's/.* ([0-9]+) tests failed.*/\1/')
if [ -n "$total" ] && [ -n "$failed" ]; then
    echo "$((total - failed)) passed, $failed failed"
else
    echo "ctest printed no summary (rc $rc)"
    rc=${rc:-1}
fi
exit "$rc"
