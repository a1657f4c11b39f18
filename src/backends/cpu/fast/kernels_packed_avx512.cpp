// AVX-512 forms of the packed products (packed.h, fast_kernels.h): a group of 16 weight rows times
// up to 8 activation rows a pass. Per 32-value block, eight registers hold four values of each of
// the 16 rows (Q4_0: four loads split into low and high nibbles; Q8_0: eight loads, stored with the
// sign bit flipped), each met by the activation block's same four bytes broadcast (VPDPBUSD), so
// lane k of the 32-bit sum is row k's whole block; the sum starts from the activation's correction
// of the weights' unsigned encoding (XBlock::cc_all). One FMA a block with the 16 rows' scales
// times the activation's. Each (row, activation row) result is one lane's own sequence, whatever
// the pass shape or the thread split.
#include "backends/cpu/fast/fast_kernels.h"

#if defined(__x86_64__)
#include "backends/cpu/fast/avx512_util.h"

#include <algorithm>

#include "core/fp16.h"

namespace jitllm::cpu::fast::detail {
namespace {

// Bytes of a packed group fetched ahead of the block being read
constexpr size_t kPrefetchAhead = 8192;


template <bool Q4, int C>
JITLLM_AVX512 void qp_tile(const uint8_t* g, int64_t nb, const XBlock* x, float* y, size_t y_stride,
                           __mmask16 valid) {
    constexpr size_t kValues = Q4 ? 256 : 512;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const uint8_t* scales = g + size_t(nb) * kValues;
    __m512 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p = g + size_t(b) * kValues;
        prefetch_lines(p, kPrefetchAhead, kValues);
        if ((b & 1) == 0) _mm_prefetch(reinterpret_cast<const char*>(scales + 32 * b + 1024), _MM_HINT_T0);
        __m512i w[8];
        if constexpr (Q4) {
            for (int u = 0; u < 4; ++u) {
                const __m512i v = _mm512_load_si512(p + 64 * u);
                w[u] = _mm512_and_si512(v, m4);                             // values 4u .. 4u + 3
                w[4 + u] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);  // values 16 + 4u ..
            }
        } else {
            for (int t = 0; t < 8; ++t) w[t] = _mm512_load_si512(p + 64 * t);
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(scales + 32 * b)));
        for (int c = 0; c < C; ++c) {
            const XBlock& xb = x[size_t(c) * size_t(nb) + size_t(b)];
            __m512i sum = _mm512_set1_epi32(xb.cc_all);
            for (int t = 0; t < 8; ++t) sum = _mm512_dpbusd_epi32(sum, w[t], bcast4_512(xb.q + 4 * t));
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(xb.d)), acc[c]);
        }
    }
    for (int c = 0; c < C; ++c) _mm512_mask_storeu_ps(y + size_t(c) * y_stride, valid, acc[c]);
}

template <bool Q4>
JITLLM_AVX512 void qp_group(const uint8_t* g, int64_t nb, const XBlock* x, int n_x, float* y, size_t y_stride,
                            __mmask16 valid) {
    passes<8>(n_x, [&](int j, auto c) {
        qp_tile<Q4, decltype(c)::value>(g, nb, x + size_t(j) * size_t(nb), y + size_t(j) * y_stride, y_stride, valid);
    });
}

// Column k of a packed F32, F16 or BF16 group as floats
template <GgmlType T>
JITLLM_AVX512 inline __m512 fp_column(const uint8_t* g, int64_t k) {
    if constexpr (T == GgmlType::F32) return _mm512_load_ps(reinterpret_cast<const float*>(g + 64 * size_t(k)));
    const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i*>(g + 32 * size_t(k)));
    if constexpr (T == GgmlType::F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// G packed F16 / BF16 / F32 groups (group i at g + i * group_bytes: value k of its 16 rows at + k * 16
// values) times C activation rows (a panel: value k of the C rows at xp + k * C): each group's
// column k times activation value k broadcast, one FMA chain a (group, activation row) in k order.
// Two groups a pass: two loads a column for every broadcast, and two chains even when C is 1.
template <GgmlType T, int G, int C>
JITLLM_AVX512 void fp_tile(const uint8_t* g, size_t group_bytes, int64_t n, const float* xp, float* y,
                           size_t y_stride, const __mmask16* valid) {
    constexpr size_t kCol = T == GgmlType::F32 ? 64 : 32;
    __m512 acc[G][C];
    for (int i = 0; i < G; ++i)
        for (int c = 0; c < C; ++c) acc[i][c] = _mm512_setzero_ps();
    for (int64_t k = 0; k < n; ++k) {
        if ((k & 1) == 0)
            for (int i = 0; i < G; ++i) {
                const uint8_t* ahead = g + size_t(i) * group_bytes + size_t(k) * kCol + kPrefetchAhead;
                _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
            }
        __m512 w[G];
        for (int i = 0; i < G; ++i) w[i] = fp_column<T>(g + size_t(i) * group_bytes, k);
        const float* x = xp + size_t(k) * C;
        for (int c = 0; c < C; ++c) {
            const __m512 xv = _mm512_set1_ps(x[c]);
            for (int i = 0; i < G; ++i) acc[i][c] = _mm512_fmadd_ps(w[i], xv, acc[i][c]);
        }
    }
    for (int c = 0; c < C; ++c)
        for (int i = 0; i < G; ++i) _mm512_mask_storeu_ps(y + size_t(c) * y_stride + 16 * i, valid[i], acc[i][c]);
}

// G groups times n_x activation rows, in panels of kFpPanel (fp_panels' layout)
template <GgmlType T, int G>
JITLLM_AVX512 void fp_pass(const uint8_t* g, size_t group_bytes, int64_t n, const float* xp, int n_x, float* y,
                           size_t y_stride, const __mmask16* valid) {
    passes<kFpPanel>(n_x, [&](int j, auto c) {
        fp_tile<T, G, decltype(c)::value>(g, group_bytes, n, xp + size_t(j) * size_t(n), y + size_t(j) * y_stride,
                                          y_stride, valid);
    });
}

JITLLM_AVX512 inline __mmask16 group_mask(int n_rows, int i) {
    const int left = n_rows - 16 * i;
    return left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
}

}  // namespace

bool cpu_has_avx512_vnni() {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("fma") && cpu_has_avx2_fma();
}

JITLLM_AVX512 void quantize_x_avx512(const float* x, int64_t nb, int off, XBlock* out) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    for (int64_t i = 0; i < nb; ++i) {
        const __m512 v0 = _mm512_loadu_ps(x + 32 * i), v1 = _mm512_loadu_ps(x + 32 * i + 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        // rounded to the nearest, ties to even (the default rounding mode)
        const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, _mm512_set1_ps(id)));
        const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, _mm512_set1_ps(id)));
        XBlock& o = out[i];
        _mm_store_si128(reinterpret_cast<__m128i*>(o.q), _mm512_cvtepi32_epi8(q0));
        _mm_store_si128(reinterpret_cast<__m128i*>(o.q + 16), _mm512_cvtepi32_epi8(q1));
        alignas(64) int32_t q[32];
        _mm512_store_si512(q, q0);
        _mm512_store_si512(q + 16, q1);
        block_corrections(q, off, o);
        o.d = fp16_to_fp32(fp32_to_fp16(amax / 127.0f));
    }
}

void fp_panels(const float* X, size_t x_stride, int n_x, int64_t n, float* xp) {
    for (int j0 = 0; j0 < n_x; j0 += kFpPanel) {
        const int c_n = std::min(kFpPanel, n_x - j0);
        float* panel = xp + size_t(j0) * size_t(n);
        for (int c = 0; c < c_n; ++c) {
            const float* x = X + size_t(j0 + c) * x_stride;
            for (int64_t k = 0; k < n; ++k) panel[size_t(k) * size_t(c_n) + size_t(c)] = x[k];
        }
    }
}

namespace {

template <GgmlType T>
JITLLM_AVX512 void fp_groups(const uint8_t* P, size_t group_bytes, int n_groups, int64_t n, const float* xp, int n_x,
                             float* Y, size_t y_stride, int n_rows) {
    for (int i = 0; i < n_groups; i += 2) {
        const __mmask16 valid[2] = {group_mask(n_rows, i), group_mask(n_rows, i + 1)};
        const uint8_t* g = P + size_t(i) * group_bytes;
        if (i + 1 < n_groups) fp_pass<T, 2>(g, group_bytes, n, xp, n_x, Y + 16 * i, y_stride, valid);
        else fp_pass<T, 1>(g, group_bytes, n, xp, n_x, Y + 16 * i, y_stride, valid);
    }
}

}  // namespace

JITLLM_AVX512 void fp_groups_avx512(GgmlType t, const uint8_t* P, size_t group_bytes, int n_groups, int64_t n,
                                    const float* xp, int n_x, float* Y, size_t y_stride, int n_rows) {
    auto* f = t == GgmlType::F16 ? fp_groups<GgmlType::F16>
              : t == GgmlType::BF16 ? fp_groups<GgmlType::BF16>
                                    : fp_groups<GgmlType::F32>;
    f(P, group_bytes, n_groups, n, xp, n_x, Y, y_stride, n_rows);
}

JITLLM_AVX512 void qp_groups_avx512(bool q4, const uint8_t* P, size_t group_bytes, int n_groups, int64_t nb,
                                    const XBlock* x, int n_x, float* Y, size_t y_stride, int n_rows) {
    for (int i = 0; i < n_groups; ++i) {
        const __mmask16 valid = group_mask(n_rows, i);
        if (q4) qp_group<true>(P + size_t(i) * group_bytes, nb, x, n_x, Y + 16 * i, y_stride, valid);
        else qp_group<false>(P + size_t(i) * group_bytes, nb, x, n_x, Y + 16 * i, y_stride, valid);
    }
}

}  // namespace jitllm::cpu::fast::detail

#else  // not x86-64: no AVX-512 forms

namespace jitllm::cpu::fast::detail {
bool cpu_has_avx512_vnni() { return false; }
void quantize_x_avx512(const float*, int64_t, int, XBlock*) {}
void qp_groups_avx512(bool, const uint8_t*, size_t, int, int64_t, const XBlock*, int, float*, size_t, int) {}
void fp_panels(const float*, size_t, int, int64_t, float*) {}
void fp_groups_avx512(GgmlType, const uint8_t*, size_t, int, int64_t, const float*, int, float*, size_t, int) {}
}  // namespace jitllm::cpu::fast::detail

#endif
