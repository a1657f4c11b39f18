# Shared by fuzz-smoke.sh and fuzz-long.sh (sourced; expects BUILD set, cwd = repo root):
# fuzz_build (clang, -DJITLLM_FUZZ=ON), fuzz_seeds (seed directories under $BUILD/fuzz-seeds),
# fuzz_run TARGET [libFuzzer flags] (runs one target, prints its numbers, non-zero on a finding).

fuzz_clang() {
    for c in clang++-14 clang++; do
        if command -v "$c" >/dev/null; then echo "$c"; return; fi
    done
    echo "fuzz: clang++ not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
    return 1
}

fuzz_build() {
    local cxx
    cxx=$(fuzz_clang)
    # -O1 with line tables: the usual sanitizer-fuzzing build (stack traces keep file:line); it
    # compiles in 125 s against RelWithDebInfo's 166 s on the 2-core CI machine
    cmake -S . -B "$BUILD" -G Ninja -DJITLLM_FUZZ=ON -DCMAKE_BUILD_TYPE=None \
        "-DCMAKE_CXX_FLAGS=-O1 -gline-tables-only -DNDEBUG" "-DCMAKE_C_FLAGS=-O1 -gline-tables-only -DNDEBUG" \
        -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="${cxx/++/}" >/dev/null
    cmake --build "$BUILD" -j "$(nproc)" \
        --target gguf_reader_fuzz tokenizer_fuzz chat_format_fuzz make_corpus
}

fuzz_seeds() {
    local s=$BUILD/fuzz-seeds
    rm -rf "$s"
    mkdir -p "$s/gguf" "$s/text" "$s/chat"
    # GGUF: the fixtures and every corpus file up to 64 KiB (metadata-level corruption).
    "$BUILD/tests/make_corpus" "$s/gguf" --max-bytes 65536 >/dev/null
    rm -f "$s/gguf/cases.tsv"
    cp tests/fuzz/regressions/gguf_reader_fuzz/* "$s/gguf/" 2>/dev/null || true
    # Text: llama.cpp's tokenizer test strings, each with a few selector bytes (vocab + flags).
    local n=0 f
    local data=${JITLLM_SHARED_DIR:-tests/data}
    for f in "$data"/testdata/vocab/ggml-vocab-llama-spm.gguf.inp \
             "$data"/testdata/vocab/ggml-vocab-qwen2-npm.gguf.inp; do
        [[ -f $f ]] || continue
        awk -v RS='\n__ggml_vocab_test__\n' -v dir="$s/text" -v base="$n" \
            '{ fn = sprintf("%s/t%05d", dir, base + NR); printf "%s", $0 > fn; close(fn) }' "$f"
        n=$((n + 1000))
    done
    local sel i=0
    for f in "$s"/text/t*; do
        sel=$(printf '\\x%02x' $(( (i * 37) % 256 )))
        { printf "$sel"; cat "$f"; } > "$f.s"
        rm -f "$f"
        i=$((i + 1))
    done
    printf '\x30Hello <s> world</s> <|im_start|>user\n\xc3\xa9\xff' > "$s/text/special"
    cp tests/fuzz/regressions/tokenizer_fuzz/* "$s/text/" 2>/dev/null || true
    # Chat: selector bytes, then template NUL role NUL content ...
    local k=0 v
    local tmpl='{%% for message in messages %%}<|im_start|>{{ message.role }}'
    local conv='\x00system\x00Be brief.\x00user\x00Hello <|im_end|> there\x00assistant'
    conv+='\x00<think>x</think>Hi</s>\x00user\x00Bye'
    for v in '\x00' '\x13' '\x22' '\x35' '\x14' '\x07'; do
        printf "$v"'\x80\x01'"$tmpl$conv" > "$s/chat/c$k"
        k=$((k + 1))
    done
    printf '\x01\x02\x0b\x00user\x00\x00tool\x00[INST] x [/INST]' > "$s/chat/odd-roles"
    cp tests/fuzz/regressions/chat_format_fuzz/* "$s/chat/" 2>/dev/null || true
}

# fuzz_run TARGET [libFuzzer flags]
fuzz_run() {
    local t=$1
    shift
    local out=$BUILD/fuzz-out/$t seeds args=()
    case $t in
        gguf_reader_fuzz) seeds=$BUILD/fuzz-seeds/gguf
            args=(-max_len=65536 -dict=tests/fuzz/gguf.dict) ;;
        tokenizer_fuzz) seeds=$BUILD/fuzz-seeds/text; args=(-max_len=4096) ;;
        chat_format_fuzz) seeds=$BUILD/fuzz-seeds/chat; args=(-max_len=4096) ;;
        *) echo "fuzz: unknown target $t" >&2; return 2 ;;
    esac
    # FUZZ_RESUME=1 keeps the corpus of an earlier run (a campaign continued across runs)
    # and writes this run's log next to the earlier ones.
    local log=$out/log.txt
    if [[ ${FUZZ_RESUME:-0} == 1 && -d $out/corpus ]]; then
        log=$out/log-$(date -u +%Y%m%dT%H%M%S).txt
    else
        rm -rf "$out"
    fi
    mkdir -p "$out/corpus"
    local rc=0 t0=$SECONDS
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=allocator_may_return_null=0 \
        "$BUILD/tests/fuzz/$t" "${args[@]}" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
        -timeout=20 -print_final_stats=1 -artifact_prefix="$out/" "$@" \
        "$out/corpus" "$seeds" > "$log" 2>&1 || rc=$?
    local execs corpus findings
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
        grep -o '[0-9]*$' || echo '?')
    corpus=$(find "$out/corpus" -type f | wc -l)
    findings=$(find "$out" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
        -o -name 'timeout-*' -o -name 'oom-*' -o -name 'slow-unit-*' \) | wc -l)
    echo "fuzz: $t: rc=$rc executions=$execs seconds=$((SECONDS - t0))" \
        "new-corpus=$corpus findings=$findings"
    if (( rc != 0 )); then
        echo "fuzz: $t failed; last lines of $log:" >&2
        tail -40 "$log" >&2
        return 1
    fi
}
