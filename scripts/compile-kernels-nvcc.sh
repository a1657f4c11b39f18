#!/usr/bin/env bash
# Compiles every CUDA kernel of src/kernels/cuda over its variant (define) matrix with nvcc
# (-cubin, -Xptxas -v) for sm_75, sm_80 and sm_90, and reports registers, spills and shared
# memory per entry point. Fails on any compile error or any spill. No GPU needed.
#
# usage: scripts/compile-kernels-nvcc.sh [--quick] [--nvrtc] [--arch "sm_90 ..."] [--out DIR]
#   --quick   one configuration per kernel/type instead of the whole matrix
#   --nvrtc   also compile each variant with NVRTC (as the JIT does: -default-device -std=c++17
#             -fmad=true, headers by include path) through a small checker built on the fly
#   env JOBS  parallel compiles (default 2); NVCC (default /usr/local/cuda/bin/nvcc)
# Output: DIR/report.csv (variant,arch,entry,registers,spill_stores,spill_loads,stack,smem) and
# a summary on stdout. DIR defaults to build-kern/kernel-compile.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KDIR="$ROOT/src/kernels/cuda"
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
JOBS="${JOBS:-2}"
ARCHS="sm_75 sm_80 sm_90"
OUT="$ROOT/build-kern/kernel-compile"
QUICK=0
NVRTC=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --nvrtc) NVRTC=1 ;;
        --arch) ARCHS="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$OUT/logs"
JOBLIST="$OUT/jobs.txt"
: > "$JOBLIST"

# add KERNEL "DEFINES": one line per arch in the job list
add() {
    local a
    for a in $ARCHS; do echo "$1|$a|$2" >> "$JOBLIST"; done
}

# --- gemv: types x reduction x fusion configurations ------------------------------------------
GEMV_TYPES="F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K"
gemv_cfgs=(
    "COLS=4096 ROWS0=4096 ROWS1=1024 ROWS2=1024 N_MAT=3 HAS_BIAS=1 X_SMEM=1 NORM_IN=1 EPI=0"
    "COLS=4096 ROWS0=14336 ROWS1=14336 N_MAT=2 HAS_BIAS=0 X_SMEM=0 NORM_IN=1 EPI=2"
    "COLS=14336 ROWS0=4096 N_MAT=1 HAS_BIAS=0 X_SMEM=1 NORM_IN=0 EPI=1 RES_SCALE=0.22f"
    "COLS=2048 ROWS0=128256 N_MAT=1 HAS_BIAS=0 X_SMEM=0 NORM_IN=1 EPI=3 OUT_SCALE=0.125f"
    "COLS=3072 ROWS0=8192 N_MAT=1 UP_OFFSET_ROWS=8192 HAS_BIAS=0 X_SMEM=1 NORM_IN=1 EPI=2"
)
[[ $QUICK == 1 ]] && gemv_cfgs=("${gemv_cfgs[0]}")
# Rows per group: 2 weight rows per warp (REDUCE=1) or per block (REDUCE=0), the recommended
# setting (docs/kernels.md): ROWS_PER_BLOCK = 8 warps x 2 (EPI=2: x 1 output = 2 weight rows).
for t in $GEMV_TYPES; do
    for cfg in "${gemv_cfgs[@]}"; do
        # K-quants need COLS % 256 == 0: all configurations above satisfy it
        if [[ $cfg == *EPI=2* ]]; then r1=8; r0=1; else r1=16; r0=2; fi
        add gemv "WTYPE=$t $cfg BLOCK=256 REDUCE=1 ROWS_PER_BLOCK=$r1"
        add gemv "WTYPE=$t $cfg BLOCK=256 REDUCE=0 ROWS_PER_BLOCK=$r0"
    done
    # 4 weight rows per warp (the most the staging budget allows for Q8_0) and a 128-thread block
    [[ $QUICK == 1 ]] || add gemv "WTYPE=$t ${gemv_cfgs[0]} BLOCK=128 REDUCE=1 ROWS_PER_BLOCK=16"
done
for t in F32 F16 BF16; do  # odd row length: the unaligned scalar path
    add gemv "WTYPE=$t COLS=4099 ROWS0=37 N_MAT=1 HAS_BIAS=0 X_SMEM=1 NORM_IN=1 EPI=0 BLOCK=128 REDUCE=1 ROWS_PER_BLOCK=8"
    add gemv "WTYPE=$t COLS=4099 ROWS0=37 N_MAT=1 HAS_BIAS=0 X_SMEM=0 NORM_IN=1 EPI=0 BLOCK=128 REDUCE=0 ROWS_PER_BLOCK=2"
done

# --- rms_norm -----------------------------------------------------------------------------------
for r in 1 0; do
    add rms_norm "D=4096 BLOCK=256 REDUCE=$r HAS_WEIGHT=1"
    [[ $QUICK == 1 ]] && continue
    add rms_norm "D=128 BLOCK=32 REDUCE=$r HAS_WEIGHT=1"
    add rms_norm "D=4099 BLOCK=128 REDUCE=$r HAS_WEIGHT=0"
done

# --- rope (+ KV store) --------------------------------------------------------------------------
for kv in half float; do
    for p in 0 1; do
        add rope "N_HEADS=32 N_KV_HEADS=8 HEAD_DIM=128 N_ROT=128 PAIRING=$p HAS_FREQ_FACTORS=1 KV_T=$kv"
        [[ $QUICK == 1 ]] && continue
        add rope "N_HEADS=14 N_KV_HEADS=2 HEAD_DIM=64 N_ROT=64 PAIRING=$p HAS_FREQ_FACTORS=0 KV_T=$kv"
        add rope "N_HEADS=32 N_KV_HEADS=32 HEAD_DIM=96 N_ROT=32 PAIRING=$p HAS_FREQ_FACTORS=0 KV_T=$kv"
    done
done

# --- attention_decode ---------------------------------------------------------------------------
for kv in half float; do
    for r in 1 0; do
        for shape in "N_HEADS=32 N_KV_HEADS=8 HEAD_DIM=128" "N_HEADS=14 N_KV_HEADS=2 HEAD_DIM=64" \
                     "N_HEADS=32 N_KV_HEADS=32 HEAD_DIM=96"; do
            [[ $shape == *96* && $kv == float ]] && continue  # 96/4 = 24 lanes: not a power of two
            [[ $shape == *96* ]] && shape="N_HEADS=32 N_KV_HEADS=32 HEAD_DIM=64"
            add attention_decode "$shape KV_T=$kv SCALE=0.08838835f ALGO=1 BLOCK=128 REDUCE=$r"
            add attention_decode "$shape KV_T=$kv SCALE=0.08838835f ALGO=2 N_SPLITS=16 BLOCK=128 REDUCE=$r"
            [[ $QUICK == 1 ]] && break
        done
    done
done

# --- embed, argmax, add, swiglu -----------------------------------------------------------------
for t in $GEMV_TYPES; do add embed "WTYPE=$t D=4096 N_VOCAB=128256 EMB_SCALE=1.0f BLOCK=256"; done
for r in 1 0; do
    for f in 0 1; do add argmax "N=128256 BLOCK=256 REDUCE=$r N_PARTS=132 FUSE_ADVANCE=$f"; done
done
for n in 4096 4099; do
    add add "N=$n BLOCK=256"
    add swiglu "N=$n BLOCK=256"
done

# --- NVRTC checker (optional) -------------------------------------------------------------------
CHECKER=""
if [[ $NVRTC == 1 ]]; then
    CHECKER="$OUT/nvrtc_check"
    cat > "$OUT/nvrtc_check.cpp" <<'EOF'
// nvrtc_check SRC ARCH [options...]: compiles SRC with NVRTC as the JIT does; prints the log.
#include <nvrtc.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
int main(int argc, char** argv) {
    std::ifstream f(argv[1]);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string src = ss.str();
    nvrtcProgram prog;
    nvrtcCreateProgram(&prog, src.c_str(), argv[1], 0, nullptr, nullptr);
    std::vector<std::string> opts = {std::string("-arch=") + argv[2], "-default-device",
                                     "-std=c++17", "-fmad=true", "--ptxas-options=-v"};
    for (int i = 3; i < argc; ++i) opts.push_back(argv[i]);
    std::vector<const char*> o;
    for (auto& s : opts) o.push_back(s.c_str());
    const nvrtcResult r = nvrtcCompileProgram(prog, int(o.size()), o.data());
    size_t n;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
    std::printf("%s\n", log.c_str());
    return r == NVRTC_SUCCESS ? 0 : 1;
}
EOF
    CUDA_HOME="$(dirname "$(dirname "$NVCC")")"
    g++ -O1 -I "$CUDA_HOME/include" "$OUT/nvrtc_check.cpp" -L "$CUDA_HOME/lib64" -lnvrtc \
        -Wl,-rpath,"$CUDA_HOME/lib64" -o "$CHECKER"
fi

# --- run ----------------------------------------------------------------------------------------
# one job: compile, then turn the ptxas -v lines into CSV rows (one per entry point)
run_one() {
    local line="$1" kernel arch defs id log opts d
    IFS='|' read -r kernel arch defs <<< "$line"
    id="$(echo "$kernel $arch $defs" | md5sum | cut -c1-12)"
    log="$OUT/logs/$id.log"
    opts="-DJITLLM_JIT -DKERNEL_NAME=k_$kernel"
    for d in $defs; do opts="$opts -D$d"; done
    local rc=0
    {
        echo "# $kernel $arch $defs"
        "$NVCC" -arch="$arch" -cubin -Xptxas -v $opts -I "$KDIR" "$KDIR/$kernel.cu" \
            -o "$OUT/logs/$id.cubin" 2>&1 || rc=1
        if [[ -n "$CHECKER" && $rc == 0 ]]; then
            echo "# nvrtc"
            "$CHECKER" "$KDIR/$kernel.cu" "$arch" $opts -I "$KDIR" 2>&1 | grep -v "^$" || rc=1
        fi
    } > "$log" 2>&1
    rm -f "$OUT/logs/$id.cubin"
    if [[ $rc != 0 ]] || grep -q "error" "$log"; then
        echo "ERROR|$kernel $defs|$arch|$log"
        return 0
    fi
    # ptxas prints per function: "Compiling entry function 'X'", "N bytes stack frame, S bytes
    # spill stores, L bytes spill loads", "Used R registers, ... M bytes smem"
    awk -v var="$kernel $defs" -v arch="$arch" '
        /^# nvrtc/ { src = "nvrtc" }
        /Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); fn = substr($0, RSTART + 1, RLENGTH - 2) }
        /bytes stack frame/ {
            match($0, /[0-9]+ bytes stack frame/); st = substr($0, RSTART, RLENGTH - 17) + 0
            match($0, /[0-9]+ bytes spill stores/); ss = substr($0, RSTART, RLENGTH - 18) + 0
            match($0, /[0-9]+ bytes spill loads/); sl = substr($0, RSTART, RLENGTH - 17) + 0
        }
        /Used [0-9]+ registers/ {
            match($0, /Used [0-9]+ registers/); r = substr($0, RSTART + 5, RLENGTH - 15)
            sm = 0; if (match($0, /[0-9]+ bytes smem/)) sm = substr($0, RSTART, RLENGTH - 11)
            printf "ROW|%s|%s|%s|%s|%d|%d|%d|%d\n", var, (src == "nvrtc" ? arch "(nvrtc)" : arch), fn, r, ss, sl, st, sm
        }' "$log"
}
export -f run_one
export OUT KDIR NVCC CHECKER

n_jobs=$(wc -l < "$JOBLIST")
echo "compiling $n_jobs kernel variants (archs: $ARCHS, jobs: $JOBS)..."
RESULTS="$OUT/results.txt"
tr '\n' '\0' < "$JOBLIST" | xargs -0 -P "$JOBS" -I{} bash -c 'run_one "$1"' _ {} > "$RESULTS"

echo "variant,arch,entry,registers,spill_stores,spill_loads,stack,smem" > "$OUT/report.csv"
grep '^ROW|' "$RESULTS" | cut -d'|' -f2- | sed 's/|/,/g' >> "$OUT/report.csv" || true
n_err=$(grep -c '^ERROR|' "$RESULTS" || true)
n_spill=$(grep '^ROW|' "$RESULTS" | awk -F'|' '$6 > 0 || $7 > 0' | wc -l)

# summary: per kernel file and arch, the register range and max smem over its variants
echo
printf "%-18s %-14s %8s %10s %8s\n" kernel arch variants registers smem
grep '^ROW|' "$RESULTS" | awk -F'|' '{
        split($2, w, " "); key = w[1] "|" $3
        n[key]++; if (!(key in lo) || $5 < lo[key]) lo[key] = $5; if ($5 > hi[key]) hi[key] = $5
        if ($9 > sm[key]) sm[key] = $9 }
    END { for (k in n) { split(k, p, "|"); printf "%-18s %-14s %8d %5d-%-4d %8d\n", p[1], p[2], n[k], lo[k], hi[k], sm[k] } }' \
    | sort
echo
if [[ $n_spill -gt 0 ]]; then
    echo "SPILLS in $n_spill entries:"
    grep '^ROW|' "$RESULTS" | awk -F'|' '$6 > 0 || $7 > 0 { print "  " $2 " " $3 " " $4 ": " $6 "/" $7 " bytes" }'
fi
if [[ $n_err -gt 0 ]]; then
    echo "ERRORS in $n_err variants:"
    grep '^ERROR|' "$RESULTS" | cut -d'|' -f2- | sed 's/^/  /'
fi
echo "report: $OUT/report.csv"
if [[ $n_err -gt 0 || $n_spill -gt 0 ]]; then
    echo "FAILED: $n_err errors, $n_spill spilling entries"
    exit 1
fi
echo "OK: $n_jobs variants, no errors, no spills"
