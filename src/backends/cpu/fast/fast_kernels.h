// Internal to src/backends/cpu/fast: the instruction-set forms of the fast products, over a range of
// weight rows (fast_ops.cpp splits the rows over the threads and picks the form).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <type_traits>

#include "core/dtype.h"

namespace jitllm::cpu::fast::detail {

// One 32-value block of an activation row for the integer products: q = x / d rounded to the
// nearest (ties to even), d = max|x| / 127 rounded to f16 (as a Q8_0 block keeps it; llama.cpp's
// activation blocks); cc[i] = -off * (q[4i] + .. + q[4i + 3] + q[16 + 4i] + .. + q[16 + 4i + 3]),
// the correction of the weights' unsigned encoding (Q4_0: nibble = w + 8, off 8; Q8_0: byte
// w ^ 0x80 = w + 128, off 128), folded into the integer sums before any rounding.
struct alignas(64) XBlock {
    int8_t q[32];
    int32_t cc[4];
    float d;
    int32_t cc_all;  // cc[0] + .. + cc[3]: the correction of a whole block (the packed products')
    int32_t pad[2];
};
static_assert(sizeof(XBlock) == 64);

// One 256-value block of an activation row for the K-quant products (llama.cpp's Q8_K rule):
// q = x * iscale rounded to the nearest (ties to even), iscale = -127 / m with m the value of the
// largest magnitude, d = 1 / iscale (all zero for a zero block). off: Q6_K: off[s] = -32 * the
// sum of q over the 16 values of group s (the weights' offset of 32, where each group's integer
// sum starts); Q4_K: off[i], i < 4, the sums of q over the 32-value sub-blocks 2i and 2i + 1 as
// the low and high 16 bits (VPDPWSSD with the mins).
struct alignas(64) XBlockK {
    int8_t q[256];
    int32_t off[16];
    float d;
    int32_t pad[15];
};
static_assert(sizeof(XBlockK) == 384);

// x[0, 256 * nb) into nb XBlockK with an instruction set's two steps: amax(xb), the largest
// magnitude of a block's 256 values; q16(x, iscale, q), 16 values times iscale rounded (ties to
// even) into q, returning their sum. The rest is the same for every set: iscale from the block's
// first value of that magnitude, with its sign (a block holding a NaN takes its last value:
// garbage in, no read past the block); off from the sums of q over each 16 values.
template <class Amax, class Q16>
inline void quantize_xk_with(const float* x, int64_t nb, bool q4k, XBlockK* out, Amax amax, Q16 q16) {
    for (int64_t b = 0; b < nb; ++b) {
        const float* xb = x + 256 * b;
        XBlockK& o = out[b];
        const float am = amax(xb);
        if (am == 0.0f) {
            std::memset(&o, 0, sizeof(o));
            continue;
        }
        int i = 0;
        while (i < 255 && xb[i] != am && xb[i] != -am) ++i;
        const float iscale = -127.0f / xb[i];
        o.d = 1.0f / iscale;
        int32_t s16[16];
        for (int k = 0; k < 16; ++k) s16[k] = q16(xb + 16 * k, iscale, o.q + 16 * k);
        for (int k = 0; k < 16; ++k) o.off[k] = q4k ? 0 : -32 * s16[k];
        if (q4k)
            for (int k = 0; k < 4; ++k) {
                const int32_t lo = s16[4 * k] + s16[4 * k + 1], hi = s16[4 * k + 2] + s16[4 * k + 3];
                o.off[k] = int32_t(uint32_t(uint16_t(int16_t(lo))) | uint32_t(uint16_t(int16_t(hi))) << 16);
            }
    }
}

// e^x's steps in vector registers (avx2_util.h exp8, avx512_util.h exp16, neon_util.h exp4): x = n
// ln2 + f with |f| <= ln2 / 2 (ln2 in a high part, n times it exact, and a low one), e^f by its
// Taylor polynomial to f^6 (relative error below 2e-7; coefficients highest first), times 2^n;
// x is clamped to [-87, 88] and lanes below -87 give 0 (as expf underflows)
constexpr float kLog2e = 1.44269504f, kLn2Hi = 0.693145752f, kLn2Lo = 1.42860677e-6f;
constexpr float kExpTaylor[7] = {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f};

// Bytes of one 256-value block of a packed Q4_K / Q6_K group of 16 rows (packed.cpp's layouts)
constexpr size_t kQ4kGroupBlock = 2368, kQ6kGroupBlock = 3392;

// Whether this CPU (and build) runs the AVX-512 forms (AVX-512 F/BW/VL/DQ + VNNI, FMA, F16C), the
// AVX2 forms (AVX2, FMA, F16C) and the NEON forms (AArch64 with the dot-product extension).
bool cpu_has_avx512_vnni();
bool cpu_has_avx2_fma();
bool cpu_has_neon_dotprod();

// x[0, 32 * nb) into nb blocks (off: 8 or 128, see XBlock; the AVX2 and NEON Q8_0 forms' 0). Every
// form gives the same blocks.
void quantize_x_avx512(const float* x, int64_t nb, int off, XBlock* out);
void quantize_x_avx2(const float* x, int64_t nb, int off, XBlock* out);
void quantize_x_neon(const float* x, int64_t nb, int off, XBlock* out);

// x[0, 256 * nb) into nb blocks, off for Q4_K (q4k) or Q6_K (every form: the same blocks)
void quantize_xk_avx512(const float* x, int64_t nb, bool q4k, XBlockK* out);
void quantize_xk_avx2(const float* x, int64_t nb, bool q4k, XBlockK* out);
void quantize_xk_neon(const float* x, int64_t nb, bool q4k, XBlockK* out);

// A packed quantized product (packed.h): n_groups groups of 16 rows of a packed matrix (group i at
// P + i * group_bytes, nb blocks a row; q4: the 4-bit type of the pair) times n_x activation rows
// of quantized blocks (Act); the group's row k result for activation row j to
// Y[j * y_stride + 16 i + k], for the first n_rows rows only. Every form of one gives the same bits.
template <class Act>
using PackedGroupsFn = void(bool q4, const uint8_t* P, size_t group_bytes, int n_groups, int64_t nb, const Act* x,
                            int n_x, float* Y, size_t y_stride, int n_rows);

// Q4_0 (q4) or Q8_0 (the AVX2 and NEON forms' Q8_0: activation blocks of off 0)
PackedGroupsFn<XBlock> qp_groups_avx512, qp_groups_avx2, qp_groups_neon;
// Q4_K (q4) or Q6_K, nb blocks of 256 a row
PackedGroupsFn<XBlockK> kp_groups_avx512, kp_groups_avx2, kp_groups_neon;

// The float products' activation rows in panels of kFpPanel rows (the last one shorter): value k
// of the panel's c rows side by side, k after k (one panel of n_x rows of n values: n_x * n floats
// at xp + j0 * n for the panel of rows j0 ..), so that a product's broadcasts read one run of memory
// (rows a multiple of 4 KiB apart met in the same cache sets)
constexpr int kFpPanel = 14;
void fp_panels(const float* X, size_t x_stride, int n_x, int64_t n, float* xp);
// The same as qp_groups_avx512 for a packed F16, BF16 or F32 matrix (type t) of n values a row
// times n_x activation rows in fp_panels' layout
void fp_groups_avx512(GgmlType t, const uint8_t* P, size_t group_bytes, int n_groups, int64_t n, const float* xp,
                      int n_x, float* Y, size_t y_stride, int n_rows);
// The AVX2 and NEON forms, activation row j at X + j * x_stride (no panels); the same bits
void fp_groups_avx2(GgmlType t, const uint8_t* P, size_t group_bytes, int n_groups, int64_t n, const float* X,
                    size_t x_stride, int n_x, float* Y, size_t y_stride, int n_rows);
void fp_groups_neon(GgmlType t, const uint8_t* P, size_t group_bytes, int n_groups, int64_t n, const float* X,
                    size_t x_stride, int n_x, float* Y, size_t y_stride, int n_rows);

// Rows [r0, r1) of F16 (f16) or F32 weights of n elements (row r at W + r * stride) times n_x
// float rows (row j at X + j * x_stride), row j's results at Y + j * y_stride: the unpacked form
// (AVX2 CPUs, and matrices too small to pack)
void f_rows_avx2(bool f16, const uint8_t* W, size_t stride, int r0, int r1, int64_t n, const float* X,
                 size_t x_stride, int n_x, float* Y, size_t y_stride);

// The passes of a product over n_x activation rows, up to N at a time: f(j, C) for the pass of
// the C rows from row j (C a std::integral_constant: each pass shape its own compiled tile)
template <int C, class F>
inline void last_pass(int rest, int j, F& f) {
    if constexpr (C > 0) {
        if (rest == C) return f(j, std::integral_constant<int, C>{});
        last_pass<C - 1>(rest, j, f);
    }
}
template <int N, class F>
inline void passes(int n_x, F&& f) {
    int j = 0;
    for (; j + N <= n_x; j += N) f(j, std::integral_constant<int, N>{});
    last_pass<N - 1>(n_x - j, j, f);
}

// The parts of W rows (the AVX2 forms' halves, 8, the NEON forms' quarters, 4) of n_groups packed
// groups that hold any of the first n_rows rows: f(i, k, left) for part k of group i, left in
// 1 .. W its rows
template <int W, class F>
inline void group_parts(int n_groups, int n_rows, F&& f) {
    for (int i = 0; i < n_groups; ++i)
        for (int k = 0; k < 16 / W; ++k) {
            const int left = n_rows - 16 * i - W * k;
            if (left > 0) f(i, k, left < W ? left : W);
        }
}

// A quantized product's tiles on parts of W rows (group_parts) times passes of up to N activation
// rows (activation blocks B, nb a row): f(g, k, xj, yj, left, c) for part k of the group at g, the
// pass's first activation row's blocks xj and results yj, c the pass's rows (an integral_constant)
template <int W, int N, class B, class F>
inline void tile_passes(const uint8_t* P, size_t group_bytes, int n_groups, int n_rows, const B* x, int64_t nb,
                        int n_x, float* Y, size_t y_stride, F&& f) {
    group_parts<W>(n_groups, n_rows, [&](int i, int k, int left) {
        passes<N>(n_x, [&](int j, auto c) {
            f(P + size_t(i) * group_bytes, k, x + size_t(j) * size_t(nb), Y + 16 * i + W * k + size_t(j) * y_stride,
              left, c);
        });
    });
}

// The float products' passes: up to U parts of W rows of the groups at a time (part k of group i
// at P + i * group_bytes + k * part_bytes), each over the activation rows (row j at X + j *
// x_stride) in passes of up to 2: tile(h, n_parts, valid, xj, yj, c) with h, valid (rows) and yj
// (results of the pass's first activation row) one a part
template <int W, int U, class F>
inline void fp_part_passes(const uint8_t* P, size_t group_bytes, size_t part_bytes, int n_groups, int n_rows,
                           const float* X, size_t x_stride, int n_x, float* Y, size_t y_stride, F&& tile) {
    constexpr int kParts = 16 / W;  // a group's (U a multiple of it)
    for (int u0 = 0; u0 < kParts * n_groups; u0 += U) {
        const uint8_t* h[U];
        float* y[U];
        int valid[U], nu = 0;
        group_parts<W>(std::min(U, kParts * n_groups - u0) / kParts, n_rows - W * u0, [&](int i, int k, int left) {
            h[nu] = P + size_t(u0 / kParts + i) * group_bytes + part_bytes * size_t(k);
            y[nu] = Y + W * u0 + 16 * i + W * k;
            valid[nu++] = left;
        });
        passes<2>(n_x, [&](int j, auto c) {
            float* yj[U];
            for (int u = 0; u < nu; ++u) yj[u] = y[u] + size_t(j) * y_stride;
            tile(h, nu, valid, X + size_t(j) * x_stride, yj, c);
        });
    }
}

// An XBlock's corrections (cc, cc_all) from its 32 rounded values q (off: see XBlock)
inline void block_corrections(const int32_t* q, int off, XBlock& o) {
    for (int l = 0; l < 4; ++l) {
        const int32_t* a = q + 4 * l;
        const int32_t* b = q + 16 + 4 * l;
        o.cc[l] = -off * (((a[0] + b[0]) + (a[1] + b[1])) + ((a[2] + b[2]) + (a[3] + b[3])));
    }
    o.cc_all = (o.cc[0] + o.cc[1]) + (o.cc[2] + o.cc[3]);
}

// Rows [r0, r1) of W in passes of up to P rows: f(rp, r, n_valid) with rp[k] the address of row r + k;
// a short pass repeats its last row in the slots after n_valid (computed, not stored)
template <int P, class F>
inline void row_passes(const uint8_t* W, size_t stride, int r0, int r1, F&& f) {
    for (int r = r0; r < r1; r += P) {
        const int nr = r1 - r < P ? r1 - r : P;
        const uint8_t* rp[P];
        for (int k = 0; k < P; ++k) rp[k] = W + size_t(r + (k < nr ? k : nr - 1)) * stride;
        f(rp, r, nr);
    }
}

}  // namespace jitllm::cpu::fast::detail
