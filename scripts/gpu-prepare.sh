#!/usr/bin/env bash
# Prepares .gpu/ (ignored by git) with what a GPU run needs: the built binaries and a subset of
# ../shared (the device transfer is limited to 64 MiB). Carry `.gpu` with the device call.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${JITLLM_BUILD_DIR:-build}
SH=${JITLLM_SHARED_DIR:-../shared}
rm -rf .gpu && mkdir -p .gpu/bin .gpu/shared/golden/synthetic .gpu/shared/testdata/vocab
cp "$BUILD/jitllm" .gpu/bin/
# GPU_TESTS: the test binaries to carry (from the build's tests/ or tests/gpu/ folder); GPU_BASE: a
# jitllm binary carried as .gpu/bin/jitllm-base for gpu-check's `ab` stage (two builds, one call);
# GPU_LLAMA=1: llama.cpp's snapshot too, for its `llama` stage
for t in ${GPU_TESTS:-engine_golden_test prefill_modes_test runtime_generate_test backend_cuda_driver_test kernels_vs_cpu_test kernels_gemm_test kernels_draw_test kernels_attn_prefill_test kernels_moe_group_test runtime_slots_ahead_test runtime_slots_mask_test runtime_slots_paged_test runtime_slots_draw_test persistent_probe_test}; do
    for d in "$BUILD/tests/gpu" "$BUILD/tests"; do
        if [ -f "$d/$t" ]; then cp "$d/$t" .gpu/bin/; break; fi
    done
done
[ -n "${GPU_BASE:-}" ] && cp "$GPU_BASE" .gpu/bin/jitllm-base
strip .gpu/bin/* 2>/dev/null || true
# gpu-check's `opencl` stage: the ICD loader (Debian ocl-icd-libopencl1, 50 KB), for a host without one
lib=$(ldconfig -p 2>/dev/null | awk '/libOpenCL\.so\.1 .*x86-64/ {print $NF; exit}')
[ -n "$lib" ] && mkdir -p .gpu/lib && cp -L "$lib" .gpu/lib/libOpenCL.so.1
cp "$SH/golden/stories260K.golden.json" .gpu/shared/golden/
cp "$SH"/golden/synthetic/*.logits.json .gpu/shared/golden/synthetic/
for f in ${GPU_GOLDEN_FILES:-llama-f32 llama-f16 llama-q8_0 llama-q4_0 llama-q4_k_m llama-q5_k_s llama-q6_k qwen2-q4_0 qwen3-q8_0 phi3-q4_0 granite-q4_k_m}; do
    cp "$SH/golden/synthetic/$f.gguf" .gpu/shared/golden/synthetic/
done
cp "$SH/testdata/vocab/ggml-vocab-llama3-npm.gguf" .gpu/shared/testdata/vocab/
# gpu-check's `llama` stage: llama.cpp's snapshot and build script, the Qwen3 vocab for its files
if [ -n "${GPU_LLAMA:-}" ]; then
    mkdir -p .gpu/baselines && cp "$SH"/baselines/* .gpu/baselines/
    cp "$SH/testdata/vocab/ggml-vocab-qwen3-npm.gguf" .gpu/shared/testdata/vocab/
fi
# what was built: every gpu-check summary starts with it (a stale .gpu shows at once)
{
    echo "prepared $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git describe --always --dirty 2>/dev/null || echo unknown)"
    echo "jitllm sha256 $(sha256sum "$BUILD/jitllm" | cut -c1-16) built $(date -u -r "$BUILD/jitllm" +%Y-%m-%dT%H:%M:%SZ)"
} > .gpu/build-info.txt
cat .gpu/build-info.txt
du -sh .gpu
