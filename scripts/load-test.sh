#!/usr/bin/env bash
# Load test of `jitllm serve` (loopback only, bounded): starts the server on a free 127.0.0.1 port,
# runs 64 concurrent streaming openai clients (tests/server/load_test.mjs) for MINUTES minutes,
# samples the server's RSS every 10 s, then stops it with SIGTERM and checks it exits 0.
#
#   scripts/load-test.sh [MINUTES=5]
#   env: JITLLM_BIN (default build/jitllm), CLIENTS (64), PARALLEL (8), QUEUE (64), CTX (512),
#        THREADS (1), MODEL (bundled), ABORT_RATE (0.05), OUT (load-test-<time>/ under out/)
# Prints a summary; the RSS series and the client's JSON are kept in $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-5}
case "$MINUTES" in ''|*[!0-9.]*) echo "usage: $0 [MINUTES]" >&2; exit 2;; esac
BIN=${JITLLM_BIN:-build/jitllm}
CLIENTS=${CLIENTS:-64}
PARALLEL=${PARALLEL:-8}
QUEUE=${QUEUE:-64}
CTX=${CTX:-512}
THREADS=${THREADS:-1}
ABORT_RATE=${ABORT_RATE:-0.05}
OUT=${OUT:-out/load-test-$(date +%Y%m%d-%H%M%S)}
[ -x "$BIN" ] || { echo "load-test: $BIN not built (set JITLLM_BIN)" >&2; exit 1; }
[ -f tests/server/node_modules/openai/package.json ] || { echo "load-test: run scripts/install-deps.sh" >&2; exit 1; }
mkdir -p "$OUT"
SECONDS_TOTAL=$(awk "BEGIN { printf \"%d\", $MINUTES * 60 }")

args=(serve --host 127.0.0.1 --port 0 --parallel "$PARALLEL" --queue-size "$QUEUE" --ctx-size "$CTX"
      --threads "$THREADS")
[ -n "${MODEL:-}" ] && args+=(-m "$MODEL")
"$BIN" "${args[@]}" 2> "$OUT/server.log" &
SRV=$!
cleanup() { kill -0 "$SRV" 2>/dev/null && kill -KILL "$SRV" 2>/dev/null; true; }
trap cleanup EXIT
for _ in $(seq 1 600); do grep -q "ready:" "$OUT/server.log" && break; kill -0 "$SRV" || break; sleep 0.1; done
grep -q "ready:" "$OUT/server.log" || { cat "$OUT/server.log"; echo "load-test: server did not start" >&2; exit 1; }
PORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$OUT/server.log" | head -1 | sed 's/.*://')
BASE="http://127.0.0.1:$PORT"
echo "load-test: server pid $SRV at $BASE; $CLIENTS clients for ${MINUTES} min (parallel $PARALLEL, queue $QUEUE)"

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$SRV/status"; }
echo "t_s,rss_kib,threads" > "$OUT/rss.csv"
(
    t=0
    while kill -0 "$SRV" 2>/dev/null; do
        echo "$t,$(rss_kib),$(awk '/^Threads:/ { print $2 }' "/proc/$SRV/status")" >> "$OUT/rss.csv"
        sleep 10
        t=$((t + 10))
    done
) &
SAMPLER=$!

node tests/server/load_test.mjs --base "$BASE" --clients "$CLIENTS" --seconds "$SECONDS_TOTAL" \
     --abort-rate "$ABORT_RATE" > "$OUT/client.json"
curl -s "$BASE/metrics" > "$OUT/metrics.txt" || true
kill "$SAMPLER" 2>/dev/null || true
kill -TERM "$SRV"
set +e
wait "$SRV"
CODE=$?
set -e
trap - EXIT

node -e '
const fs = require("fs");
const [out, code] = process.argv.slice(1);
const c = JSON.parse(fs.readFileSync(`${out}/client.json`, "utf8"));
const rows = fs.readFileSync(`${out}/rss.csv`, "utf8").trim().split("\n").slice(1).map((l) => l.split(",").map(Number));
// warm-up: the first minute (a fifth of shorter runs)
const w0 = Math.min(60, Math.floor(rows[rows.length - 1][0] / 5 / 10) * 10);
const warm = rows.filter((r) => r[0] >= w0);
const mib = (k) => (k / 1024).toFixed(1);
const at = warm.length ? warm[0] : rows[0], end = rows[rows.length - 1];
const max = Math.max(...warm.map((r) => r[1]));
console.log(`requests: ${c.started} started, ${c.ok} complete, ${c.failed} failed, ${c.truncated} truncated, ` +
            `${c.aborted_on_purpose} aborted on purpose`);
console.log(`tokens: ${c.completion_tokens} generated, ${c.tokens_per_second} tok/s aggregate, ` +
            `${c.requests_per_second} req/s; TTFT p50 ${c.ttft_ms_p50} ms, p99 ${c.ttft_ms_p99} ms`);
console.log(`/health under load: ${c.health_probes} probes, p50 ${c.health_ms_p50} ms, max ${c.health_ms_max} ms, ` +
            `${c.health_over_100ms} over 100 ms`);
console.log(`RSS: ${mib(rows[0][1])} MiB at start, ${mib(at[1])} MiB at ${at[0]} s (after warm-up), ` +
            `max ${mib(max)} MiB after warm-up, ${mib(end[1])} MiB at ${end[0]} s; threads ${end[2]}`);
console.log(`RSS series (s:MiB): ${rows.map((r) => `${r[0]}:${mib(r[1])}`).join(" ")}`);
if (Object.keys(c.errors).length) console.log("errors:", JSON.stringify(c.errors));
console.log(`server exit code after SIGTERM: ${code}`);
' "$OUT" "$CODE" | tee "$OUT/summary.txt"
FAILED=$(node -p "const c=JSON.parse(require('fs').readFileSync('$OUT/client.json', 'utf8')); c.failed + c.truncated")
[ "$FAILED" = 0 ] && [ "$CODE" = 0 ]
