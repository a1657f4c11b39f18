#!/usr/bin/env bash
# jitllm's CPU path against llama.cpp's llama-bench on the same files and thread count, one table
# (docs/performance.md, CPU). Each round runs llama.cpp then jitllm on every file, so that a change
# of the machine's load falls on both alike; the table takes each test's median over the rounds.
# Take it on a quiet machine (`uptime`: a load average well below the core count).
#
# usage: scripts/cpu-bench.sh [-t THREADS] [-p N] [-n N] [-b N] [-r REPS] [-R ROUNDS] [FILE.gguf ...]
#   defaults: -t 2 -p 64 -n 16 -b 64 (jitllm's prompt chunk; llama.cpp takes -p whole) -r 3 -R 2;
#   files: $MODELS/llama3.2-1b-{f16,q8_0,q4_0,q4_k_m}.gguf and the bundled stories260K. Missing
#   F16 / Q8_0 / Q4_0 files are written with `jitllm synth --shape llama3.2-1b` (Q4_K_M cannot be:
#   synth writes no K-quants; it is left out when absent).
# environment: JITLLM (build/jitllm), LLAMA_BENCH (/work/llama-cpu/build/bin/llama-bench; built by
#   ../shared/baselines/build-llama-cpu.sh), MODELS (/work/cpufast-models), VOCAB (the Llama 3
#   vocabulary synth copies), OUT (a folder for the raw JSON lines; default a temporary one),
#   JITLLM_ARGS (more jitllm bench flags, e.g. --cpu-exact).
set -euo pipefail
cd "$(dirname "$0")/.."
JITLLM=${JITLLM:-build/jitllm}
LLAMA_BENCH=${LLAMA_BENCH:-/work/llama-cpu/build/bin/llama-bench}
MODELS=${MODELS:-/work/cpufast-models}
VOCAB=${VOCAB:-${JITLLM_SHARED_DIR:-../shared}/testdata/vocab/ggml-vocab-llama3-npm.gguf}
threads=2 np=64 ng=16 chunk=64 reps=3 rounds=2
while getopts "t:p:n:b:r:R:h" o; do
    case $o in
        t) threads=$OPTARG ;; p) np=$OPTARG ;; n) ng=$OPTARG ;; b) chunk=$OPTARG ;;
        r) reps=$OPTARG ;; R) rounds=$OPTARG ;;
        *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ -x "$JITLLM" ] || { echo "cpu-bench: expected the jitllm binary at $JITLLM (JITLLM=...), found none" >&2; exit 1; }
[ -x "$LLAMA_BENCH" ] || {
    echo "cpu-bench: expected llama-bench at $LLAMA_BENCH (LLAMA_BENCH=..., or build it with" \
         "../shared/baselines/build-llama-cpu.sh), found none" >&2
    exit 1
}

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
    mkdir -p "$MODELS"
    for t in f16 q8_0 q4_0 q4_k_m; do
        f=$MODELS/llama3.2-1b-$t.gguf
        if [ ! -f "$f" ] && [ "$t" != q4_k_m ]; then
            echo "cpu-bench: writing $f" >&2
            "$JITLLM" synth --shape llama3.2-1b --type "$t" --vocab "$VOCAB" --out "$f" --seed 42 >&2
        fi
        if [ -f "$f" ]; then files+=("$f"); else echo "cpu-bench: no $f, left out" >&2; fi
    done
    files+=(models/stories260K.gguf)
fi

out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
echo "cpu-bench: $(uptime)" >&2
echo "cpu-bench: raw results in $out" >&2
for ((round = 1; round <= rounds; ++round)); do
    for f in "${files[@]}"; do
        name=$(basename "$f" .gguf)
        echo "cpu-bench: round $round, $name" >&2
        "$LLAMA_BENCH" -m "$f" -t "$threads" -p "$np" -n "$ng" -r "$reps" -o jsonl \
            > "$out/llama.$name.$round.jsonl" 2> "$out/llama.$name.$round.log"
        # shellcheck disable=SC2086
        "$JITLLM" bench -m "$f" -t "$threads" -p "$np" -n "$ng" -b "$chunk" -r "$reps" -o jsonl ${JITLLM_ARGS:-} \
            > "$out/jitllm.$name.$round.jsonl" 2> "$out/jitllm.$name.$round.log"
    done
done
grep -h "products" "$out"/jitllm.*.log | sed 's/^/cpu-bench: /' | sort -u >&2 || true

python3 - "$out" "$np" "$ng" "$threads" <<'EOF'
import glob, json, os, statistics, sys
out, np_, ng, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ts = {}  # (tool, file, test) -> tok/s of each round
for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
    parts = os.path.basename(path).split(".")  # TOOL.NAME.ROUND.jsonl (NAME may hold dots)
    tool, name = parts[0], ".".join(parts[1:-2])
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        test = "pp" if r["n_prompt"] > 0 and r["n_gen"] == 0 else "tg" if r["n_gen"] > 0 and r["n_prompt"] == 0 else None
        if test:
            ts.setdefault((tool, name, test), []).append(r["avg_ts"])
names = sorted({k[1] for k in ts}, key=lambda n: (n.startswith("stories"), n))
med = lambda k: statistics.median(ts[k]) if k in ts else float("nan")
print(f"| file ({threads} threads) | llama.cpp tg{ng} | jitllm tg{ng} | ratio | llama.cpp pp{np_} | jitllm pp{np_} | ratio |")
print("|---|---|---|---|---|---|---|")
for n in names:
    row = [n]
    for test in ("tg", "pp"):
        a, b = med(("llama", n, test)), med(("jitllm", n, test))
        row += [f"{a:.1f}", f"{b:.1f}", f"{b / a:.2f}x" if a == a and a > 0 else "-"]
    print("| " + " | ".join(row) + " |")
EOF
