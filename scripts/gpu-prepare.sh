#!/usr/bin/env bash
# Prepares .gpu/ (ignored by git) with what a GPU run needs: the built binaries and a subset of
# ../shared (the device transfer is limited to 64 MiB). Carry `.gpu` with the device call.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${JITLLM_BUILD_DIR:-build}
SH=${JITLLM_SHARED_DIR:-../shared}
rm -rf .gpu && mkdir -p .gpu/bin .gpu/shared/golden/synthetic .gpu/shared/testdata/vocab
cp "$BUILD/jitllm" .gpu/bin/
# GPU_TESTS: the test binaries to carry (default all); GPU_BASE: a jitllm binary carried as
# .gpu/bin/jitllm-base for A/B runs in one device call (gpu-check's `ab` stage)
for t in ${GPU_TESTS:-engine_golden_test backend_cuda_driver_test kernels_vs_cpu_test kernels_gemm_test prefill_modes_test runtime_generate_test}; do
    [ -f "$BUILD/tests/$t" ] && cp "$BUILD/tests/$t" .gpu/bin/
done
[ -n "${GPU_BASE:-}" ] && cp "$GPU_BASE" .gpu/bin/jitllm-base
# standalone microbenchmarks (tools/*.cu; the CUDA runtime linked statically, the driver from the host)
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
if [ -x "$NVCC" ]; then
    "$NVCC" -O3 -arch=sm_90 -I src/kernels/cuda -o .gpu/bin/kv_stage_bench tools/kv_stage_bench.cu -L"$(dirname "$NVCC")/../lib64/stubs" -lcuda
    "$NVCC" -O3 -arch=sm_90 -o .gpu/bin/red_bench tools/red_bench.cu
    "$NVCC" -O3 -arch=sm_90 -o .gpu/bin/sync_bench tools/sync_bench.cu
fi
strip .gpu/bin/* 2>/dev/null || true
# the HTTP transport module of `jitllm serve` and the shared libraries it needs (not on the GPU host)
if [ -f "$BUILD/jitllm-httplib.so" ]; then
    mkdir -p .gpu/lib
    cp "$BUILD/jitllm-httplib.so" .gpu/bin/
    for l in $(ldd "$BUILD/jitllm-httplib.so" | awk '/=>/ {print $3}' | grep -E "httplib|brotli|libssl|libcrypto"); do
        cp "$l" .gpu/lib/
    done
fi
cp "$SH/golden/stories260K.golden.json" .gpu/shared/golden/
cp "$SH"/golden/synthetic/*.logits.json .gpu/shared/golden/synthetic/
for f in ${GPU_GOLDEN_FILES:-llama-f32 llama-f16 llama-q8_0 llama-q4_0 llama-q4_k_m llama-q5_k_s llama-q6_k qwen2-q4_0 qwen3-q8_0 phi3-q4_0 granite-q4_k_m}; do
    cp "$SH/golden/synthetic/$f.gguf" .gpu/shared/golden/synthetic/
done
cp "$SH/testdata/vocab/ggml-vocab-llama3-npm.gguf" .gpu/shared/testdata/vocab/
# what was built: every gpu-check summary starts with it (a stale .gpu shows at once)
{
    echo "prepared $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git describe --always --dirty 2>/dev/null || echo unknown)"
    echo "jitllm sha256 $(sha256sum "$BUILD/jitllm" | cut -c1-16) built $(date -u -r "$BUILD/jitllm" +%Y-%m-%dT%H:%M:%SZ)"
} > .gpu/build-info.txt
cat .gpu/build-info.txt
du -sh .gpu
