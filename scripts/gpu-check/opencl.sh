# scripts/gpu-check.sh's opencl stage (stage_opencl) and its helpers: the ICD setup, NVIDIA's device
# index, the siblings it runs, its tests through the OpenCL backend.
# shellcheck shell=bash
# opencl_env: NVIDIA's OpenCL driver for the ICD loader (an nvidia.icd in a folder of our own), and
# the loader from .gpu/lib where the host has no libOpenCL.so.1
opencl_env() {
    mkdir -p /tmp/jitllm-icd && echo libnvidia-opencl.so.1 > /tmp/jitllm-icd/nvidia.icd
    export OCL_ICD_VENDORS=/tmp/jitllm-icd
    if ! ldconfig -p 2> /dev/null | grep -q 'libOpenCL\.so\.1 ' && [ -f .gpu/lib/libOpenCL.so.1 ]; then
        export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    fi
}
# opencl_device: the index of NVIDIA's OpenCL device in --list-devices ("  1: NVIDIA H100 ... (NVIDIA
# CUDA, ..."), else empty (then --opencl's own choice, the first GPU)
opencl_device() {
    "$B/jitllm" --list-devices 2> /dev/null | awk '/^OpenCL devices/ {on = 1; next}
        on && /^ +[0-9]+: .*\(NVIDIA/ {sub(/:.*/, ""); gsub(/ /, ""); print; exit}'
}
# opencl_siblings MODEL: each gate's sibling the device runs, from --print-plan's gate report
# ("  gate  chosen  (sibling other ) reason"), tried on MODEL (a side the device lacks is refused)
opencl_siblings() {
    local g
    # shellcheck disable=SC2086
    x "$B/jitllm" $CLDEV -m "$1" -n 1 -p x --temperature 0 --print-plan 2>&1 > /dev/null |
        awk '/^opencl gates:/ {on = 1; next} on && $3 == "(sibling" {v = $4; sub(/\)$/, "", v); print $1 "=" v; next} on {exit}' |
        while read -r g; do
            # shellcheck disable=SC2086
            if x "$B/jitllm" $CLDEV -m "$1" -n 1 -p x --temperature 0 --force-variant "$g" > /dev/null 2>&1; then echo "$g"
            else echo "opencl: $g is not runnable here" | note >&2; fi
        done
}
# opencl_test LABEL FILE TEST [VAR=VALUE ...]: cuda_test's verdicts for a golden test through the OpenCL backend
opencl_test() {
    local label=$1 file=$2 test=$3
    shift 3
    cuda_test "$label" "$file" "$test" JITLLM_TEST_BACKEND=opencl ${CLDEV_INDEX:+JITLLM_TEST_OPENCL_DEVICE=$CLDEV_INDEX} "$@"
}

stage_opencl() {
    opencl_env
    log "opencl: devices (OCL_ICD_VENDORS=$OCL_ICD_VENDORS)"
    x "$B/jitllm" --list-devices 2>&1 | note
    CLDEV_INDEX=$(opencl_device)
    CLDEV=${CLDEV_INDEX:+--opencl-device $CLDEV_INDEX}
    CLDEV=${CLDEV:---opencl}
    if [ -n "$CLDEV_INDEX" ]; then log "opencl: every run on the NVIDIA device: $CLDEV"
    else log "opencl: no device named NVIDIA: every run with --opencl (the first GPU, else device 0)"; fi
    g=$JITLLM_SHARED_DIR/golden/synthetic/llama-q8_0.gguf
    log "opencl: gate report and the first launches of $(basename "$g")"
    # shellcheck disable=SC2086
    x "$B/jitllm" $CLDEV -m "$g" -n 1 -p x --temperature 0 --print-plan --verbose-init 2>&1 > /dev/null | head -26 | note
    parts=" ${OPENCL_PARTS:-golden bench profile} "
    [[ $parts == *" golden "* || $parts == *" gates "* ]] && sibs=$(opencl_siblings "$g")
    if [[ $parts == *" golden "* ]]; then
        opencl_test "opencl golden, default gates" opencl-golden engine_golden_test
        opencl_test "opencl prompt modes, default gates" opencl-modes prefill_modes_test
        all=$(echo "$sibs" | paste -sd, -)
        opencl_test "opencl golden, every sibling at once, unfused ($all)" opencl-golden-siblings engine_golden_test \
            JITLLM_TEST_OPENCL_FORCE="$all" JITLLM_TEST_OPENCL_NO_FUSE=1
        opencl_test "opencl prompt modes, every sibling at once ($all)" opencl-modes-siblings prefill_modes_test \
            JITLLM_TEST_OPENCL_FORCE="$all"
        opencl_test "opencl golden, x in tiles (gemv.x=tiles, local.mem=16384)" opencl-golden-xtiles engine_golden_test \
            JITLLM_TEST_OPENCL_FORCE=gemv.x=tiles JITLLM_TEST_OPENCL_TUNE=local.mem=16384
    fi
    if [[ $parts == *" bench "* ]]; then
        for spec in ${OPENCL_SHAPES:-llama3.2-1b:f16 llama3.1-8b:f16 llama3.1-8b:q8_0}; do
            f=$(synth "$spec")
            tests=("-p 0 -n 128")
            [ "${OPENCL_PP:-0}" = 1 ] && tests+=("-p 512 -n 0 -b 512")
            for t in "${tests[@]}"; do
                for be in --gpu "$CLDEV"; do
                    log "opencl: $spec bench $be $t"
                    # shellcheck disable=SC2086
                    x timeout 300 "$B/jitllm" bench $be -m "$f" -r "$BENCH_R" -o md $BENCH_ARGS $t 2>&1 | grep -E "^\| [a-z]|rror" | note
                done
            done
        done
    fi
    if [[ $parts == *" profile "* ]]; then
        spec=${OPENCL_PROFILE_SHAPE:-llama3.2-1b:f16}
        f=$(synth "$spec")
        log "opencl: $spec $CLDEV --profiler, 64 tokens: the per-kernel table and the host's time a step"
        # shellcheck disable=SC2086
        x timeout 300 "$B/jitllm" $CLDEV -m "$f" -p "Once upon a time" -n 64 --temperature 0 --profiler \
            --profiler-dump-dir "$OUT/prof-opencl-${spec/:/-}" $BENCH_ARGS 2>&1 > /dev/null | grep -vE "^\s*$" | tail -34 | note
        log "opencl: $spec $CLDEV tg128 without the profiler: the host's time a decode step (--verbose-init)"
        # shellcheck disable=SC2086
        x timeout 300 "$B/jitllm" bench $CLDEV -m "$f" -r 1 -o md -p 0 -n 128 --verbose-init $BENCH_ARGS 2>&1 |
            grep -E "^\| [a-z]|opencl host|opencl device|rror" | note
    fi
    if [[ $parts == *" gates "* ]]; then
        n=0
        for set in $sibs; do
            n=$((n + 1))
            opencl_test "opencl golden with $set" "opencl-golden-forced-$n" engine_golden_test JITLLM_TEST_OPENCL_FORCE="$set"
        done
        f=$(synth "${OPENCL_GATE_SHAPE:-llama3.1-8b:q8_0}")
        for set in "" $sibs; do
            log "opencl: ${OPENCL_GATE_SHAPE:-llama3.1-8b:q8_0} tg128 $CLDEV ${set:+--force-variant $set}"
            # shellcheck disable=SC2086
            x timeout 300 "$B/jitllm" bench $CLDEV -m "$f" -r "$BENCH_R" -o md -p 0 -n 128 ${set:+--force-variant $set} 2>&1 |
                grep -E "^\| [a-z]|rror" | note
        done
        for tv in ${OPENCL_TUNE:-gemv.rows=8 gemv.rows=32 gemv.wg=512 gemv.groups=8 gemv.ahead=1 gemv.ahead=2 gemv.ahead=4}; do
            log "opencl: ${OPENCL_GATE_SHAPE:-llama3.1-8b:q8_0} tg128 $CLDEV --tune $tv"
            # shellcheck disable=SC2086
            x timeout 300 "$B/jitllm" bench $CLDEV -m "$f" -r "$BENCH_R" -o md -p 0 -n 128 --tune ${tv//,/ --tune } 2>&1 |
                grep -E "^\| [a-z]|rror" | note
        done
    fi
    if [[ $parts == *" ptx "* ]]; then
        # the programs the parts above built: NVIDIA's program binaries are PTX text; each gemv's
        # global loads by width (what the driver made of the kernel's loads) and the cache packed
        log "opencl: global loads by width in each gemv program NVIDIA's driver built (program.bin, PTX)"
        for d in "$JITLLM_CACHE_DIR"/opencl/*NVIDIA*/*gemv*; do
            [ -f "$d/program.bin" ] || continue
            printf '%-64s %s\n' "$(basename "$d")" "$(grep -oE 'ld\.global(\.nc)?(\.v[248])?\.[bfsu](8|16|32|64)' \
                "$d/program.bin" | sort | uniq -c | awk '{printf "%s %s, ", $1, $2}')" | note
        done
        tar czf "$OUT/clcache.tgz" -C "$JITLLM_CACHE_DIR" opencl 2>/dev/null
    fi
}
