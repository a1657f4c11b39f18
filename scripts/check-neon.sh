#!/usr/bin/env bash
# The fast CPU path's NEON forms (src/backends/cpu/fast/*_neon.cpp, compiled only for AArch64)
# built for AArch64 with their tests (tests/unit/backend_cpu_fast_test.cpp) and run under user-mode
# QEMU on an x86-64 host, on the NEON forms and on the exact path (JITLLM_CPU_FAST=none).
# Needs Debian's g++-aarch64-linux-gnu, qemu-user-static and googletest's sources
# (/usr/src/googletest, libgtest-dev). Takes a few minutes on 2 cores.
# usage: scripts/check-neon.sh [BUILD_DIR]   (default build-aarch64)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-aarch64}
CXX=${CXX_AARCH64:-aarch64-linux-gnu-g++}
QEMU=${QEMU_AARCH64:-qemu-aarch64-static}
GTEST=${GTEST_SRC:-/usr/src/googletest/googletest}
for tool in "$CXX" "$QEMU"; do
    command -v "$tool" > /dev/null || { echo "check-neon: expected $tool on PATH, found none" >&2; exit 1; }
done
[ -f "$GTEST/src/gtest-all.cc" ] || { echo "check-neon: expected googletest's sources in $GTEST, found none" >&2; exit 1; }
mkdir -p "$out/inc" "$out/obj"
# the header-only libraries the sources include, without the host's other headers
ln -sfn /usr/include/fmt "$out/inc/fmt"
ln -sfn /usr/include/gtest "$out/inc/gtest"
flags=(-std=c++20 -O2 -DFMT_HEADER_ONLY=1 -Isrc -Itests -I"$out/inc" -I"$GTEST" -Wall -Wextra
       -Wno-unused-parameter -ffp-contract=off -Werror)
srcs=(src/backends/cpu/fast/*.cpp src/backends/cpu/cpu_ops.cpp src/quant/*.cpp src/core/dtype.cpp
      src/core/thread_pool.cpp tests/unit/backend_cpu_fast_test.cpp)
objs=()
for s in "${srcs[@]}"; do
    o="$out/obj/$(echo "$s" | tr / _).o"
    if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ -n "$(find src tests -name '*.h' -newer "$o" -print -quit)" ]; then
        echo "check-neon: $s" >&2
        "$CXX" "${flags[@]}" -c "$s" -o "$o"
    fi
    objs+=("$o")
done
for s in gtest-all gtest_main; do
    o="$out/obj/$s.o"
    [ -f "$o" ] || "$CXX" -std=c++20 -O1 -I"$GTEST/include" -I"$GTEST" -c "$GTEST/src/$s.cc" -o "$o"
    objs+=("$o")
done
"$CXX" -static -pthread "${objs[@]}" -o "$out/backend_cpu_fast_test"
echo "check-neon: the NEON forms" >&2
"$QEMU" -cpu max "$out/backend_cpu_fast_test"
echo "check-neon: the exact path (JITLLM_CPU_FAST=none)" >&2
JITLLM_CPU_FAST=none "$QEMU" -cpu max "$out/backend_cpu_fast_test"
