#!/usr/bin/env bash
# Soak of `jitllm serve` (loopback only, bounded): tests/server/soak.mjs starts the server on a free
# 127.0.0.1 port and runs CLIENTS concurrent streaming openai clients for MINUTES minutes beside
# hostile clients (trickling and idle connections, oversized, malformed and desynchronizing
# requests; HOSTILE=0 leaves them out), sampling the server's RSS, descriptors and threads every
# 5 s, then stops it with SIGTERM. Fails unless every normal response is complete, every hostile
# one as expected, RSS stays within 5 % after the first fifth of the run (a minute of 5), the
# descriptors return to their idle count, the threads do not grow and the exit code is 0.
#
#   scripts/load-test.sh [MINUTES=5]
#   env: JITLLM_BIN (default build/jitllm), CLIENTS (64), PARALLEL (8), QUEUE (64), CTX (512),
#        THREADS (1), MODEL (bundled), ABORT_RATE (0.05), HOSTILE (1),
#        OUT (out/load-test-<time>/: summary.json, series.csv, server.log)
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-5}
case "$MINUTES" in ''|*[!0-9.]*) echo "usage: $0 [MINUTES]" >&2; exit 2;; esac
BIN=${JITLLM_BIN:-build/jitllm}
[ -x "$BIN" ] || { echo "load-test: $BIN not built (set JITLLM_BIN)" >&2; exit 1; }
[ -f tests/server/node_modules/openai/package.json ] || { echo "load-test: run scripts/install-deps.sh" >&2; exit 1; }
OUT=${OUT:-out/load-test-$(date +%Y%m%d-%H%M%S)}
SECONDS_TOTAL=$(awk "BEGIN { printf \"%d\", $MINUTES * 60 }")
JITLLM_BIN=$(realpath "$BIN") exec node tests/server/soak.mjs --seconds "$SECONDS_TOTAL" --clients "${CLIENTS:-64}" \
    --parallel "${PARALLEL:-8}" --queue "${QUEUE:-64}" --ctx "${CTX:-512}" --threads "${THREADS:-1}" \
    --abort-rate "${ABORT_RATE:-0.05}" --hostile "${HOSTILE:-1}" --out "$OUT" ${MODEL:+--model "$MODEL"}
