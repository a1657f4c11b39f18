# scripts/gpu-check.sh's serving and batch stages, a function each: serve batched batched-profile
# kvpool (the stages and their variables: gpu-check.sh's top).
# shellcheck shell=bash

stage_serve() {
    f=$(synth "${SERVE_SHAPE:-llama3.2-1b:q4_0}")
    for temp in ${SERVE_TEMPS:-0 0.8}; do
        log "serve --gpu ${SERVE_SHAPE:-llama3.2-1b:q4_0} [${SERVE_ARGS:-}] temperature $temp: aggregate tok/s by clients"
        # shellcheck disable=SC2086
        x "$B/jitllm" serve --gpu -m "$f" --parallel 64 -c 1024 \
            --port 18080 --prefill-chunk 64 ${SERVE_ARGS:-} > "$OUT/serve-$temp.log" 2>&1 &
        sp=$!
        if [ "$DRY" != 1 ]; then
            for _ in $(seq 1 120); do curl -sf http://127.0.0.1:18080/health > /dev/null 2>&1 && break; sleep 1; done
        fi
        x timeout 300 python3 scripts/serve-load.py --port 18080 --clients "${SERVE_CLIENTS:-1,8,32}" \
            --seconds "${SERVE_SECONDS:-10}" --temperature "$temp" 2>&1 | note
        kill -INT $sp 2> /dev/null
        wait $sp
        tail -3 "$OUT/serve-$temp.log" | note
    done
}

stage_batched() {
    LBB=/tmp/llama.cpp/build/bin/llama-batched-bench
    [ -x "$LBB" ] || x bash .gpu/baselines/build-llama-cuda.sh /tmp/llama.cpp > "$OUT/llama-build.txt" 2>&1 &
    # the paged batch steps against the CPU spec's tokens (carried with GPU_TESTS when wanted)
    for t in runtime_slots_paged_test runtime_slots_draw_test; do
        [ -x "$(tbin $t)" ] && cuda_test "$t" "$t" "$t"
    done
    f=$(synth "${BATCHED_SHAPE:-llama3.1-8b:q4_0}")
    npl=${BATCHED_NPL:-1,8,32,64}
    wait  # the timings below with the build done
    log "jitllm bench --gpu -npp 128 -ntg 128 -npl $npl: $(basename "$f")"
    # shellcheck disable=SC2086
    x timeout 400 "$B/jitllm" bench --gpu -m "$f" -npp 128 -ntg 128 -npl "$npl" $BENCH_ARGS 2>&1 | grep -E "^\||rror" | note
    if [ "$DRY" = 1 ] || [ -x "$LBB" ]; then
        log "llama-batched-bench -npp 128 -ntg 128 -npl $npl -fa 1: $(basename "$f")"
        x timeout 300 "$LBB" -m "$f" -c 20000 -b 2048 -ub 512 -npp 128 -ntg 128 -npl "$npl" -fa 1 -ngl 99 2>&1 |
            grep -E "^\||rror" | note
    else
        log "llama.cpp build failed"; tail -20 "$OUT/llama-build.txt" | note
    fi
    log "serve --gpu --parallel 64 -c 1024 [${BATCHED_SERVE_ARGS:-}]: aggregate tok/s by clients, 128-token completions"
    # shellcheck disable=SC2086
    x "$B/jitllm" serve --gpu -m "$f" --parallel 64 -c 1024 --port 18081 ${BATCHED_SERVE_ARGS:-} > "$OUT/serve-batched.log" 2>&1 &
    sp=$!
    if [ "$DRY" != 1 ]; then
        for _ in $(seq 1 180); do curl -sf http://127.0.0.1:18081/health > /dev/null 2>&1 && break; sleep 1; done
    fi
    x timeout 300 python3 scripts/serve-load.py --port 18081 --clients "${BATCHED_CLIENTS:-1,8,32,64}" \
        --seconds "${SERVE_SECONDS:-10}" --max-tokens 128 2>&1 | note
    [ "$DRY" = 1 ] || curl -s http://127.0.0.1:18081/metrics | grep -E "^jitllm:(kv_cache|prompt_tokens_reused)" | note
    kill -INT $sp 2> /dev/null
    wait $sp
    tail -3 "$OUT/serve-batched.log" | note
}

stage_batched_profile() {
    f=$(synth "${BATCHED_SHAPE:-llama3.1-8b:q4_0}")
    IFS=';' read -r -a psets <<< "${BATCHED_PROFILE_TUNE---tune batch.xrows=8;--tune batch.xrows=2}"
    for set in "" "${psets[@]}"; do
        if [ "${BATCHED_PROFILER:-1}" = 0 ]; then
            # S_TG of every row count in one run a set, unprofiled (graphs, no per-launch timing)
            npl=$(echo "${BATCHED_PROFILE_NPL:-8 32 64}" | tr ' ' ',')
            log "jitllm bench --gpu -npp 128 -ntg 64 -npl $npl ${set:-(defaults)}: $(basename "$f")"
            # shellcheck disable=SC2086
            x timeout 200 "$B/jitllm" bench --gpu -m "$f" -npp 128 -ntg 64 -npl "$npl" $set $BENCH_ARGS \
                > "$OUT/bsets.txt" 2>&1
            [ "$DRY" = 1 ] || grep -E "^\||rror" "$OUT/bsets.txt" | note
            continue
        fi
        for n in ${BATCHED_PROFILE_NPL:-8 32 64}; do
            log "profile jitllm bench --gpu -npp 128 -ntg 32 -npl $n ${set:-(defaults)}: $(basename "$f"), top ${BATCHED_PROFILE_TOP:-14} kernels by time"
            # the md row (profiled: launches one by one), then the table sorted by total_us
            # shellcheck disable=SC2086
            x timeout 100 "$B/jitllm" bench --gpu -m "$f" -npp 128 -ntg 32 -npl "$n" --profiler $set $BENCH_ARGS \
                > "$OUT/bprof.txt" 2>&1
            [ "$DRY" = 1 ] && continue
            grep -E "^\|.*[0-9]|rror" "$OUT/bprof.txt" | note
            grep -m1 -E "^phase " "$OUT/bprof.txt" | note
            grep -E "^(batch|decode|prefill) " "$OUT/bprof.txt" | grep -v "(all kernels)" | sort -k4,4 -g -r |
                head -n "${BATCHED_PROFILE_TOP:-14}" | note
            grep -E "\(all kernels\)" "$OUT/bprof.txt" | note
        done
    done
}

stage_kvpool() {
    f=$(synth "${BATCHED_SHAPE:-llama3.1-8b:q4_0}")
    log "serve --gpu --parallel 64 -c 8192 --kv-pool-tokens ${KVPOOL_TOKENS:-90000}: 64 clients of ~${KVPOOL_WORDS:-700}-word prompts"
    x "$B/jitllm" serve --gpu -m "$f" --parallel 64 -c 8192 --kv-pool-tokens "${KVPOOL_TOKENS:-90000}" --port 18082 \
        --prefill-chunk 256 --verbose-init > "$OUT/serve-kvpool.log" 2>&1 &
    sp=$!
    if [ "$DRY" != 1 ]; then
        for _ in $(seq 1 180); do curl -sf http://127.0.0.1:18082/health > /dev/null 2>&1 && break; sleep 1; done
    fi
    x nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$OUT/kvpool-mem.txt" 2>&1 &
    mp=$!
    x timeout 300 python3 scripts/serve-load.py --port 18082 --clients 64 --seconds "${SERVE_SECONDS:-20}" \
        --max-tokens 128 --prompt-words "${KVPOOL_WORDS:-700}" 2>&1 | note
    [ "$DRY" = 1 ] || curl -s http://127.0.0.1:18082/metrics | grep -E "^jitllm:(kv_cache|prompt_tokens|requests_)" | note
    kill $mp 2> /dev/null
    [ "$DRY" = 1 ] || echo "peak GPU memory used: $(sort -n "$OUT/kvpool-mem.txt" | tail -1) MiB" | note
    grep -iE "weights|kv|memory" "$OUT/serve-kvpool.log" | head -8 | note
    log "time to first token, a ~2000-token system prompt served twice (prefix reuse)"
    x timeout 300 python3 scripts/serve-load.py --port 18082 --ttft-prefix-words 1500 --max-tokens 8 2>&1 | note
    [ "$DRY" = 1 ] || curl -s http://127.0.0.1:18082/metrics | grep -E "^jitllm:prompt_tokens_reused" | note
    kill -INT $sp 2> /dev/null
    wait $sp
}
