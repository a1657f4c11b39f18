# scripts/gpu-check.sh's correctness stages, a function each: info kernels slots golden modes; and the
# forced gate sets that golden and modes run (the stages and their variables: gpu-check.sh's top).
# shellcheck shell=bash
# Forced variants that the test files do not all take alone (the refusals `jitllm plan
# --force-variant` gives on the golden files):
#   gemv.xq=producer  the producer's pairs are the bulk gemvs' blocks: forced with gemv.load=bulk
#   attn.kv=tma       head_dim 64 or 128: not the bundled stories260K (head_dim 8), the synthetic
#                     files only
GATE_WITH="gemv.xq=producer:gemv.load=bulk"        # VARIANT:COMPANION[,COMPANION] ...
GATE_SKIP="attn.kv=tma:*Stories260KGolden.*"        # VARIANT:GTEST_PATTERN ... (tests left out)
# gate_sets: the forced sets of GATES, or every gate's sibling from the plans of GATE_MODELS; each with
# the companions GATE_WITH names for its variants
gate_sets() {
    local m p set w
    if [ -n "${GATES:-}" ]; then
        [ "$GATES" = none ] || echo "$GATES" | tr ' ' '\n'
    else
        for m in ${GATE_MODELS:-$JITLLM_SHARED_DIR/golden/synthetic/llama-q4_0.gguf $JITLLM_SHARED_DIR/golden/synthetic/llama-f16.gguf}; do
            # the plan needs no GPU: "  gate  chosen  (sibling other ) reason"
            p=$("$B/jitllm" plan -m "$m" --target sm_90 2>/dev/null)
            echo "$p" | awk '$3 == "(sibling" {v = $4; sub(/\)$/, "", v); print $1 "=" v}'
        done | sort -u
    fi | while read -r set; do
        for w in $GATE_WITH; do
            [[ ",$set," == *",${w%%:*},"* && ",$set," != *",${w#*:},"* ]] && set="$set,${w#*:}"
        done
        echo "$set"
    done
}
# gate_filter SET [PATTERN]: the gtest filter of PATTERN's tests [all] leaving out the tests GATE_SKIP
# names for a variant of SET (nothing when neither applies)
gate_filter() {
    local s out=() pos=${2:-}
    for s in $GATE_SKIP; do [[ ",$1," == *",${s%%:*},"* ]] && out+=("${s#*:}"); done
    if [ ${#out[@]} != 0 ]; then
        (IFS=:; echo "--gtest_filter=${pos:-*}-${out[*]}")
    elif [ -n "$pos" ]; then
        echo "--gtest_filter=$pos"
    fi
}
# forced_tests NAME TEST [PATTERN]: TEST (PATTERN's tests of it [all]) with each forced set of
# gate_sets (GATE_SHARD's share of them)
forced_tests() {
    local name=$1 test=$2 pos=${3:-} set n=0 shard=${GATE_SHARD:-1/1} done=()
    for set in $(gate_sets); do
        n=$((n + 1))
        [ $(((n - ${shard%/*}) % ${shard#*/})) = 0 ] || continue
        # TEST_JOBS sets at once, one process each
        while [ "$(jobs -rp | wc -l)" -ge "$TEST_JOBS" ]; do wait -n; done
        # shellcheck disable=SC2046
        cuda_test_run 1 "$name with $set forced" "$name-forced-$n" "$test" JITLLM_TEST_CUDA_FORCE="$set" \
            ${FORCED_ENV:-} $(gate_filter "$set" "$pos") &
        done+=("$name-forced-$n")
    done
    wait
    for set in "${done[@]}"; do
        note < "$OUT/$set.sum"
        rm -f "$OUT/$set.sum"
    done
}

stage_info() {
    log "device"
    x nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv | note
    x "$B/jitllm" --version 2>&1 | note
    x "$B/jitllm" --list-devices 2>&1 | note
    cuda_test "driver round trip" driver backend_cuda_driver_test
    log "bundled model, greedy on the GPU"
    x "$B/jitllm" --gpu -p "Once upon a time" -n 48 --temperature 0 --verbose-init 2>&1 | tail -20 | note
}

stage_kernels() {
    for part in ${KERNELS_PARTS:-vs-cpu gemm draw attn-prefill moe-group}; do
        case $part in
        vs-cpu) cuda_test "kernels_vs_cpu (${KERNELS_FILTER:-*})" kernels-vs-cpu kernels_vs_cpu_test \
            --gtest_filter="${KERNELS_FILTER:-*}" ;;
        gemm) cuda_test "gemm and x-rows gemv vs cpu" kernels-gemm kernels_gemm_test --gtest_filter='-GemmBench.*' ;;
        draw) cuda_test "device draw vs the host sampler" kernels-draw kernels_draw_test ;;
        attn-prefill) cuda_test "prefill attention vs cpu" kernels-attn-prefill kernels_attn_prefill_test ;;
        moe-group) cuda_test "grouped experts vs cpu" kernels-moe-group kernels_moe_group_test \
            --gtest_filter='*MoeGroupVsCpu*' ;;
        *) echo "unknown kernels part $part (vs-cpu gemm draw attn-prefill moe-group)"; exit 2 ;;
        esac
    done
}

stage_slots() {
    for t in runtime_slots_ahead_test runtime_slots_mask_test runtime_slots_paged_test runtime_slots_draw_test; do
        [ -x "$(tbin "$t")" ] || { log "$t: not carried (GPU_TESTS)"; continue; }
        cuda_test "${t%_test} on the GPU" "${t%_test}" "$t"
    done
}

stage_golden() {
    cuda_test "golden, default gates" golden-default engine_golden_test
    cuda_test "golden, every sibling at once" golden-siblings engine_golden_test JITLLM_TEST_CUDA_SIBLINGS=1
    forced_tests golden engine_golden_test
}

stage_modes() {
    parts=" ${MODES_PARTS:-defaults siblings forced generate} "
    [[ $parts == *" defaults "* ]] && cuda_test "prompt modes, default gates" modes-default prefill_modes_test
    [[ $parts == *" siblings "* ]] &&
        cuda_test "prompt modes, every sibling at once" modes-siblings prefill_modes_test JITLLM_TEST_CUDA_SIBLINGS=1
    if [[ $parts == *" forced "* ]]; then
        # the forced sets on MODES_FORCED_FILES only: a shared folder of links holding just those
        # golden files (the golden stage runs every set on every file)
        fs=/tmp/jitllm-modes-forced
        rm -rf "$fs" && mkdir -p "$fs/golden/synthetic"
        ln -s "$JITLLM_SHARED_DIR/testdata" "$fs/testdata"
        ln -s "$JITLLM_SHARED_DIR"/golden/*.json "$fs/golden/" 2> /dev/null
        ln -s "$JITLLM_SHARED_DIR"/golden/synthetic/*.json "$fs/golden/synthetic/"
        for f in ${MODES_FORCED_FILES:-llama-f16 llama-q8_0 llama-q4_0 llama-q4_k_m}; do
            ln -s "$JITLLM_SHARED_DIR/golden/synthetic/$f.gguf" "$fs/golden/synthetic/"
        done
        FORCED_ENV="JITLLM_SHARED_DIR=$fs" forced_tests modes prefill_modes_test "${MODES_FORCED_FILTER:-*/0}"
    fi
    [[ $parts == *" generate "* ]] && cuda_test "generate: run-ahead and device draws" generate runtime_generate_test
}
