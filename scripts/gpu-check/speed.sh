# scripts/gpu-check.sh's timing stages, a function each: decode prefill depth profile ncu ab sweep
# llama probe; and ab's md5s and ratios (the stages and their variables: gpu-check.sh's top).
# shellcheck shell=bash
# greedy_md5 BIN MODEL PROMPT: md5 of BIN's greedy continuation of PROMPT (AB_TOKENS tokens)
greedy_md5() {
    # shellcheck disable=SC2086
    x timeout 120 "$B/$1" --gpu -m "$2" -p "$3" -n "${AB_TOKENS:-48}" --temperature 0 --no-stream \
        $BENCH_ARGS ${AB_ARGS:-} 2>/dev/null | md5sum | cut -c1-32
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a > 0 && b > 0) printf "%.4f", b / a; else print "-"}'; }

stage_decode() {
    for spec in $SHAPES; do
        bench_rows "decode tg128 $spec" "$(synth "$spec")" -p 0 -n 128
    done
}

stage_prefill() {
    for spec in ${PREFILL_SHAPES:-llama3.2-1b:f16 llama3.1-8b:f16 llama3.1-8b:q8_0 llama3.1-8b:q4_0}; do
        bench_rows "prefill pp512 -b 512 $spec" "$(synth "$spec")" -p 512 -n 0 -b 512
    done
    BENCH_R=1 bench_rows "time to first token, 2048-token prompt, 8B Q4_0, -b 512" "$(synth llama3.1-8b:q4_0)" \
        -p 2048 -n 0 -b 512
    if [ "${GEMM_BENCH:-0}" = 1 ]; then
        log "batch GEMMs alone: TFLOP/s at m 512 (kernels_gemm_test GemmBench, types ${GEMM_BENCH_TYPE:-q8_0,q4_0})"
        x env JITLLM_GEMM_BENCH=1 JITLLM_GEMM_BENCH_NO_SIMT=1 JITLLM_GEMM_BENCH_TYPE="${GEMM_BENCH_TYPE:-q8_0,q4_0}" \
            "$(tbin kernels_gemm_test)" --gtest_filter='GemmBench*' 2>&1 | grep -E "TFLOP|FAIL" | note
    fi
}

stage_depth() {
    for spec in ${DEPTH_SHAPES:-llama3.1-8b:q8_0}; do
        bench_rows "depth 0 and ${DEPTH:-4096}, $spec" "$(synth "$spec")" -p 0 -n 128 -d "0,${DEPTH:-4096}" \
            --no-warmup --with-prefill-decode
    done
}

stage_profile() {
    for spec in ${PROFILE_SHAPES:-llama3.2-1b:f16 llama3.1-8b:q4_0}; do
        f=$(synth "$spec")
        d=$OUT/prof-${spec/:/-}
        log "profile $spec: decode's per-kernel table (JSON and Chrome trace in $d)"
        # shellcheck disable=SC2086
        x "$B/jitllm" --gpu -m "$f" -p "Once upon a time" -n 64 --temperature 0 --profiler --profiler-dump-dir "$d" \
            $BENCH_ARGS 2>&1 > /dev/null | grep -vE "^\s*$" | tail -30 | note
        if [ "${PROFILE_BATCH:-1}" = 1 ]; then
            log "profile $spec: the batch phase, pp512 -b 512"
            # shellcheck disable=SC2086
            x "$B/jitllm" bench --gpu -m "$f" -p 512 -n 0 -b 512 -r 1 --no-warmup --profiler -o md $BENCH_ARGS 2>&1 |
                grep -vE "^\s*$" | tail -30 | note
        fi
    done
}

stage_ncu() {
    # `jitllm ncu` on NCU_TASKS in single-token decode and in the last prompt chunk (the output runs
    # there); each launch checked twice: ncu's grid against the plan's, and ncu's NVTX step range
    # (--print-nvtx-rename kernel) of the launch and of the ones before it: the layer's launch is the
    # L+1-th of its step. The NVTX run has graphs off (a graph's kernels carry no NVTX range); the
    # launches and their order are the same.
    f=$(synth "${NCU_SHAPE:-llama3.2-1b:f16}")
    prompt="Once upon a time there was a little girl named Lily who loved to play outside in the park with her friends"
    for mode in "--token ${NCU_TOKEN:-30}" "--chunk 2"; do
        # shellcheck disable=SC2206
        run=(-m "$f" -p "$prompt" -n 16 --temperature 0 --gpu ${NCU_ARGS:-})
        [ "$mode" = "--chunk 2" ] && run+=(--batch-prefill-size 8)
        for tl in ${NCU_TASKS:-ffn_down:2 attn:1 output:-}; do
            t=${tl%%:*} l=${tl#*:} lay=()
            [ "$l" = - ] && l=0 || lay=(--layer "$l")
            tag="$t-${l}-${mode// /}"
            log "jitllm ncu --task $t ${lay[*]} $mode -- ${run[*]}"
            # shellcheck disable=SC2086
            x timeout 300 "$B/jitllm" ncu --task "$t" "${lay[@]}" $mode --out "$OUT/ncu-$tag" -- "${run[@]}" \
                > "$OUT/ncu-$tag.txt" 2>&1
            echo "rc=$?" | note
            grep -vE "^==PROF==|^ *$" "$OUT/ncu-$tag.txt" | grep -vE "^(Once|[A-Za-z ,.']+$)" | head -16 | note
            pr=$(grep -m1 "^profiles" "$OUT/ncu-$tag.txt")
            k=$(echo "$pr" | awk '{print $2}')
            skip=$(echo "$pr" | sed -n 's/.*--launch-skip \([0-9]*\)).*/\1/p')
            grid=$(echo "$pr" | sed -n 's/.*grid (\([0-9]*\), \([0-9]*\), \([0-9]*\)).*/\1 \2 \3/p' | awk '{print $1 * $2 * $3}')
            want=$(echo "$pr" | sed -n -e 's/.*step at position \([0-9]*\).*/(pos \1)/p' -e 's/.*rows from position \([0-9]*\)).*/from pos \1)/p')
            [ -n "$skip" ] || { echo "ncu check $tag: no launch in jitllm ncu's output" | note; continue; }
            from=$((skip - l - 1)); [ $from -lt 0 ] && from=0
            x timeout 300 ncu --clock-control none --nvtx --print-nvtx-rename kernel --csv --page raw \
                --metrics launch__grid_size,launch__block_size --kernel-name "regex:^$k\$" --launch-skip "$from" \
                --launch-count $((skip - from + 1)) "$B/jitllm" "${run[@]}" --no-cuda-graphs > "$OUT/ncu-nvtx-$tag.csv" 2>&1
            python3 scripts/ncu-nvtx-check.py "$OUT/ncu-nvtx-$tag.csv" "$want" "$grid" "$l" "$((skip - from))" "$tag" | note
        done
    done
}

stage_ab() {
    # before = .gpu/bin/jitllm-base (gpu-prepare.sh GPU_BASE=...), after = .gpu/bin/jitllm
    [ -x "$B/jitllm-base" ] || [ "$DRY" = 1 ] || { log "ab: no .gpu/bin/jitllm-base (GPU_BASE for gpu-prepare.sh)"; return; }
    rows=()
    for spec in ${AB_SHAPES:-$SIX}; do rows+=("$spec|-p 0 -n 128|tg128"); done
    for spec in ${AB_PREFILL:-llama3.2-1b:f16 llama3.1-8b:f16 llama3.1-8b:q4_0}; do rows+=("$spec|-p 512 -n 0 -b 512|pp512"); done
    : > "$OUT/ab-rates.txt"
    for r in $(seq "${AB_ROUNDS:-2}"); do
        for row in "${rows[@]}"; do
            IFS='|' read -r spec args test <<< "$row"
            f=$(synth "$spec")
            for bin in jitllm-base jitllm; do
                # shellcheck disable=SC2086
                v=$(bench_rate "$bin" "$f" $args ${AB_ARGS:-})
                echo "$spec $test $bin $r ${v:--}" >> "$OUT/ab-rates.txt"
                log "ab round $r $spec $test $bin: ${v:--}"
            done
        done
    done
    log "ab: mean tok/s over ${AB_ROUNDS:-2} rounds (before = jitllm-base, after = this build)"
    {
        echo "| shape | test | before | after | after / before |"
        echo "|---|---|---|---|---|"
        for row in "${rows[@]}"; do
            IFS='|' read -r spec args test <<< "$row"
            b=$(awk -v s="$spec" -v t="$test" '$1 == s && $2 == t && $3 == "jitllm-base" && $5 != "-" {x += $5; n++} END {if (n) printf "%.2f", x / n}' "$OUT/ab-rates.txt")
            a=$(awk -v s="$spec" -v t="$test" '$1 == s && $2 == t && $3 == "jitllm" && $5 != "-" {x += $5; n++} END {if (n) printf "%.2f", x / n}' "$OUT/ab-rates.txt")
            echo "| $spec | $test | ${b:--} | ${a:--} | $(ratio "${b:-0}" "${a:-0}") |"
        done
    } | note
    log "ab: greedy md5 of each build (${AB_TOKENS:-48} tokens)"
    IFS='|' read -ra prompts <<< "${AB_PROMPTS:-Once upon a time}"
    for spec in ${AB_SHAPES:-$SIX}; do
        f=$(synth "$spec")
        for p in "${prompts[@]}"; do
            mb=$(greedy_md5 jitllm-base "$f" "$p")
            ma=$(greedy_md5 jitllm "$f" "$p")
            same=DIFFERENT
            [ "$mb" = "$ma" ] && same=same
            # the md5 of no output at all: a run that failed
            [ "$ma" = d41d8cd98f00b204e9800998ecf8427e ] && same="$same, NO OUTPUT"
            echo "md5 $spec \"$p\": before $mb after $ma $same" | note
        done
    done
}

stage_sweep() {
    if [ -n "${SWEEP_ARGS:-}" ]; then
        IFS=';' read -ra sets <<< " ;$SWEEP_ARGS"
    else
        [ -n "${SWEEP_KEY:-}" ] || { log "sweep: set SWEEP_KEY and SWEEP_VALUES (jitllm plan --list-tunables) or SWEEP_ARGS"; return; }
        sets=(" ")
        for v in ${SWEEP_VALUES:-}; do sets+=("--tune $SWEEP_KEY=$v"); done
    fi
    for spec in ${SWEEP_SHAPES:-llama3.1-8b:q4_0}; do
        f=$(synth "$spec")
        for r in $(seq "${SWEEP_ROUNDS:-2}"); do
            for a in "${sets[@]}"; do
                # shellcheck disable=SC2086
                v=$(bench_rate jitllm "$f" -p 0 -n 128 $a)
                log "sweep $spec round $r [${a# }]: tg128 ${v:-FAILED (see bench-rows.txt)}"
            done
        done
    done
}

stage_llama() {
    LB=/tmp/llama.cpp/build/bin/llama-bench
    [ -x "$LB" ] || x bash .gpu/baselines/build-llama-cuda.sh /tmp/llama.cpp > "$OUT/llama-build.txt" 2>&1 &
    lv=$JITLLM_SHARED_DIR/testdata/vocab/ggml-vocab-qwen3-npm.gguf
    [ -f "$lv" ] || lv=$VOCAB
    files=()
    for spec in ${LLAMA_SHAPES:-qwen3-30b-a3b:q4_0 qwen3-30b-a3b:q8_0}; do files+=("$(VOCAB=${LLAMA_VOCAB:-$lv} synth "$spec")"); done
    for f in "${files[@]}"; do bench_rows "jitllm tg128, pp512 -b 512: $(basename "$f")" "$f" -p 512 -n 128 -b 512; done
    wait
    [ "$DRY" = 1 ] || [ -x "$LB" ] || { log "llama.cpp build failed"; tail -20 "$OUT/llama-build.txt" | note; return; }
    for f in "${files[@]}"; do
        log "llama.cpp tg128, pp512 -fa 1: $(basename "$f")"
        x timeout 300 "$LB" -m "$f" -p 512 -n 128 -fa 1 -r "$BENCH_R" -o md 2>&1 | grep -E "^\| (model|[a-z])|rror" | note
    done
}

stage_probe() {
    for sc in ${PROBE_SCALES:-1 1.89 3.56}; do
        log "persistent probe, bytes x $sc"
        x timeout "$TEST_TIMEOUT" env JITLLM_TEST_BACKEND=cuda JITLLM_PERSISTENT_PROBE=1 \
            JITLLM_PERSISTENT_PROBE_BYTES_SCALE="$sc" "$(tbin persistent_probe_test)" 2>&1 |
            grep -E "us a token|copy bandwidth|^\[ +(OK|FAILED|PASSED) |Failure|Expected|Which|actual" | note
    done
}
