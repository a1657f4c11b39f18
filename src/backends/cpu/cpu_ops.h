// CPU reference operations: the numerical specification of every task kind. Plain loops over
// float32 activations; weights stay in their GGUF representation (src/quant/). GPU kernels are
// tested against these functions (tests/kernels/).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/rope_theta.h"

namespace jitllm::cpu {

enum class RopePairing { Norm, NeoX };  // Norm: (x[2i], x[2i+1]); NeoX: (x[i], x[i + n_rot/2])

// y = x * rsqrt(mean(x^2) + eps) * w, over n elements (w may be null: no weight).
void rms_norm(const float* x, const float* w, float* y, int n, float eps);

// How x enters a product: Engine = the engine's numerics (Q4_0 / Q8_0 weights multiply x
// quantized to Q8_0 blocks, as llama.cpp's CPU does: quant.h act_q8_type; every other type
// float x); Float = float x for every type (the reference of the f16-activation GEMMs).
enum class XNumerics { Engine, Float };

// y[r] = sum_k W[r, k] * x[k] for r in [0, rows); W rows of `cols` elements of type t, row r at
// W + r * row_stride bytes. Splits rows over n_threads (1 = caller's thread only).
void matvec(GgmlType t, const void* W, size_t row_stride, int rows, int cols, const float* x,
            float* y, int n_threads, XNumerics xn = XNumerics::Engine);

// Y row j = matvec(W, X row j) for j < n_x (X row j at X + j * x_stride floats, Y row j at
// Y + j * y_stride): each row the bits matvec gives it alone. The weights are walked in tiles of
// rows read from memory once for all the activation rows (the CPU's batch steps).
void matmul(GgmlType t, const void* W, size_t row_stride, int rows, int cols, const float* X, size_t x_stride,
            int n_x, float* Y, size_t y_stride, int n_threads, XNumerics xn = XNumerics::Engine);

// Rotates each of n_heads heads (head_dim floats, contiguous) in place at position pos:
// theta_i = pos * freq_factor_i^-1 * base^(-2i/n_rot) for i < n_rot/2 (freq_factors may be null),
// then YaRN's ramp when `yarn` is active (core/rope_theta.h).
void rope(float* v, int n_heads, int head_dim, int n_rot, int pos, float base,
          RopePairing pairing, const float* freq_factors, const RopeYarn& yarn = {});

// Decode attention for one query position over n_pos cached positions (0..n_pos-1).
// q: (n_heads, head_dim); k_cache, v_cache: (n_pos, n_kv_heads, head_dim) row-major floats,
// consecutive positions `kv_stride` floats apart; out: (n_heads, head_dim).
// Head h reads kv head h / (n_heads / n_kv_heads). scores = q.k * scale, softmax, mix.
void attention(const float* q, const float* k_cache, const float* v_cache, size_t kv_stride,
               int n_heads, int n_kv_heads, int head_dim, int n_pos, float scale, float* out, int n_threads = 1);

// out[i] = silu(gate[i]) * up[i]
void swiglu(const float* gate, const float* up, float* out, int n);

// y[i] += scale * x[i]
void add_scaled(float* y, const float* x, float scale, int n);

// The mixture-of-experts choice: softmax over n_expert router logits, the k largest probabilities
// (best first; the lower index first on a tie) into ids and w, w renormalised to sum 1 when asked.
void moe_topk(const float* logits, int n_expert, int k, bool renorm, int32_t* ids, float* w);

// Index of the largest value (lowest index wins a tie).
int argmax(const float* x, int n);

}  // namespace jitllm::cpu
