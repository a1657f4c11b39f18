// Fast CPU products and attention: the default CPU path beside the exact specification of
// cpu_ops.h (selected with --cpu-exact). Chosen at run time by what the CPU has (fast_isa()):
// fused multiply-add, integer dot products on 8-bit values (AVX-512 VNNI, AVX2's pair products or
// AArch64's SDOT), F16 / BF16 conversions in vector registers.
// Numerics: close to llama.cpp's CPU (Q4_0 / Q8_0 weights times x quantized to Q8_0 blocks, Q4_K /
// Q6_K times x quantized to Q8_K blocks, float products with FMA for F16 / BF16 / F32), within the golden
// tolerances, not the exact path's bits. Each output element is summed in one fixed order whatever
// the thread count and the number of activation rows, so a batch row gets the bits of the same row
// alone (decode) on either path. The products of a loaded model run on its weights packed once
// (packed.h: matmul_packed); matmul() below is the unpacked form for F16 / F32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace jitllm::cpu::fast {

// The instruction sets of the fast kernels, best first. None: this CPU (or build) has no fast
// form; every product then takes the exact path.
enum class FastIsa { Avx512Vnni, Avx2Fma, NeonDot, None };
// What this CPU runs: the best it has, or with the environment's JITLLM_CPU_FAST=avx512-vnni|
// avx2-fma|neon-dotprod|none the best it has from the one named down (tests, comparisons);
// another name is a usage error.
FastIsa fast_isa();
const char* fast_isa_name(FastIsa isa);
bool cpu_has_fast_isa(FastIsa isa);

// The CPU's physical cores (distinct core ids of /sys/devices/system/cpu; the hardware threads where
// that cannot be read): the default thread count of the CPU backend.
int physical_cores();

// Whether matmul() has a fast form for weights of type t on this CPU (F16, F32: the x86 forms).
bool has_matmul(GgmlType t);

// Y row j = W X row j for j < n_x, as cpu::matmul (W: `rows` rows of `cols` elements of type t,
// row r at W + r * row_stride bytes; X row j at X + j * x_stride floats, Y row j at
// Y + j * y_stride floats), rows split over n_threads of the team (team.h). Returns false
// (nothing written) where has_matmul(t) is false.
bool matmul(GgmlType t, const void* W, size_t row_stride, int rows, int cols, const float* X,
            size_t x_stride, int n_x, float* Y, size_t y_stride, int n_threads);

// cpu::attention with FMA and vector exponentials (same arguments and layout).
void attention(const float* q, const float* k_cache, const float* v_cache, size_t kv_stride, int n_heads,
               int n_kv_heads, int head_dim, int n_pos, float scale, float* out, int n_threads);

// cpu::rms_norm and cpu::swiglu in vector registers (same arguments; the sum of squares in 32
// lanes, e^x as attention's)
void rms_norm(const float* x, const float* w, float* y, int n, float eps);
void swiglu(const float* gate, const float* up, float* out, int n);

}  // namespace jitllm::cpu::fast
