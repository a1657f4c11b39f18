// AVX2 + FMA forms of the packed products (packed.h, fast_kernels.h), for x86-64 CPUs without
// AVX-512 VNNI: the same packed layout read as two halves of 8 rows (of a 64-byte run, rows 0 - 7
// are its first 32 bytes), a vector lane one row. Q4_0 / Q8_0: per 32-value block, each run's four
// bytes a row times the activation block's same four bytes broadcast, as VPMADDUBSW (unsigned by
// signed bytes, pairs into 16 bits) and VPMADDWD with ones (into 32 bits): lane k is row k's block
// sum. Q4_0's nibbles (0 .. 15) cannot saturate a 16-bit pair, nor the block's eight pair sums
// added in 16 bits (one VPMADDWD a block); Q8_0's bytes are read back signed,
// the activation takes their sign and the product their magnitude (a pair at most 2 * 128 * 127),
// so its activation blocks carry no correction (off 0). F16 / BF16 / F32: a column of the half
// converted in registers, one FMA chain a (row, activation row) in value order.
// Each result is the bits of the AVX-512 form's (the same integer sums and the same float steps).
#include "backends/cpu/fast/fast_kernels.h"

#if defined(__x86_64__)
#include "backends/cpu/fast/avx2_util.h"

#include <algorithm>

#include "core/fp16.h"

namespace jitllm::cpu::fast::detail {
namespace {

constexpr size_t kPrefetchAhead = 8192;

// Half hf (rows 8 hf .. 8 hf + 7) of a packed Q4_0 / Q8_0 group times C activation rows
template <bool Q4, int C>
JITLLM_AVX2 void qp_tile(const uint8_t* g, int hf, int64_t nb, const XBlock* x, float* y, size_t y_stride,
                         int n_valid) {
    constexpr size_t kValues = Q4 ? 256 : 512;
    const __m256i m4 = _mm256_set1_epi8(0x0F), flip = _mm256_set1_epi8(char(0x80));
    const uint8_t* scales = g + size_t(nb) * kValues + 16 * size_t(hf);
    __m256 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p = g + size_t(b) * kValues + 32 * size_t(hf);
        prefetch_lines(p, kPrefetchAhead, kValues);
        const XBlock* xb[C];
        __m256i sum[C];  // Q4_0: 16-bit pair sums (eight VPMADDUBSW results of at most 2 * 15 * 127 fit)
        for (int c = 0; c < C; ++c) {
            xb[c] = x + size_t(c) * size_t(nb) + size_t(b);
            sum[c] = Q4 ? _mm256_setzero_si256() : _mm256_set1_epi32(xb[c]->cc_all);
        }
        for (int t = 0; t < 8; ++t) {
            if constexpr (Q4) {  // run t % 4: low nibbles values 4t .., high ones 16 + 4 (t - 4) ..
                const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 64 * (t & 3)));
                const __m256i w = _mm256_and_si256(t < 4 ? v : _mm256_srli_epi16(v, 4), m4);
                for (int c = 0; c < C; ++c)
                    sum[c] = _mm256_add_epi16(sum[c], _mm256_maddubs_epi16(w, bcast4_256(xb[c]->q + 4 * t)));
            } else {
                const __m256i ws =
                    _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(p + 64 * t)), flip);
                const __m256i aw = _mm256_abs_epi8(ws);
                for (int c = 0; c < C; ++c)
                    sum[c] = dpbusd8(sum[c], aw, _mm256_sign_epi8(bcast4_256(xb[c]->q + 4 * t), ws));
            }
        }
        if constexpr (Q4)
            for (int c = 0; c < C; ++c)
                sum[c] = _mm256_add_epi32(_mm256_madd_epi16(sum[c], _mm256_set1_epi16(1)),
                                          _mm256_set1_epi32(xb[c]->cc_all));
        const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(scales + 32 * b)));
        for (int c = 0; c < C; ++c)
            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[c]), _mm256_mul_ps(dw, _mm256_set1_ps(xb[c]->d)), acc[c]);
    }
    for (int c = 0; c < C; ++c) _mm256_maskstore_ps(y + size_t(c) * y_stride, lanes_mask(n_valid), acc[c]);
}

// Eight values of a packed float column (F32, F16 or BF16) as floats
template <GgmlType T>
JITLLM_AVX2 inline __m256 fp_load8(const uint8_t* p) {
    if constexpr (T == GgmlType::F32) return _mm256_load_ps(reinterpret_cast<const float*>(p));
    const __m128i h = _mm_load_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (T == GgmlType::F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// U halves (half u at h[u]: value k of its 8 rows at + k * column bytes) times C activation
// rows (row c at X + c * x_stride): one FMA chain a (row, activation row) in value order
template <GgmlType T, int U, int C>
JITLLM_AVX2 void fp_tile(const uint8_t* const* h, int64_t n, const float* X, size_t x_stride, float* const* y,
                         size_t y_stride, const int* n_valid) {
    constexpr size_t kCol = T == GgmlType::F32 ? 64 : 32;
    __m256 acc[U][C];
    for (int u = 0; u < U; ++u)
        for (int c = 0; c < C; ++c) acc[u][c] = _mm256_setzero_ps();
    for (int64_t k = 0; k < n; ++k) {
        if ((k & 1) == 0)
            for (int u = 0; u < U; ++u)
                _mm_prefetch(reinterpret_cast<const char*>(h[u] + size_t(k) * kCol + kPrefetchAhead), _MM_HINT_T0);
        __m256 w[U];
        for (int u = 0; u < U; ++u) w[u] = fp_load8<T>(h[u] + size_t(k) * kCol);
        for (int c = 0; c < C; ++c) {
            const __m256 xv = _mm256_broadcast_ss(X + size_t(c) * x_stride + size_t(k));
            for (int u = 0; u < U; ++u) acc[u][c] = _mm256_fmadd_ps(w[u], xv, acc[u][c]);
        }
    }
    for (int c = 0; c < C; ++c)
        for (int u = 0; u < U; ++u) _mm256_maskstore_ps(y[u] + size_t(c) * y_stride, lanes_mask(n_valid[u]), acc[u][c]);
}

// Up to four halves of the groups a pass (four FMA chains even for one activation row)
template <GgmlType T>
JITLLM_AVX2 void fp_groups(const uint8_t* P, size_t group_bytes, int n_groups, int64_t n, const float* X,
                           size_t x_stride, int n_x, float* Y, size_t y_stride, int n_rows) {
    constexpr size_t kHalf = T == GgmlType::F32 ? 32 : 16;
    auto tile = [&](const uint8_t* const* h, int nu, const int* valid, const float* xj, float* const* yj, auto c) {
        constexpr int kC = decltype(c)::value;
        if (nu == 4) fp_tile<T, 4, kC>(h, n, xj, x_stride, yj, y_stride, valid);
        else if (nu == 3) fp_tile<T, 3, kC>(h, n, xj, x_stride, yj, y_stride, valid);
        else if (nu == 2) fp_tile<T, 2, kC>(h, n, xj, x_stride, yj, y_stride, valid);
        else if (nu == 1) fp_tile<T, 1, kC>(h, n, xj, x_stride, yj, y_stride, valid);
    };
    fp_part_passes<8, 4>(P, group_bytes, kHalf, n_groups, n_rows, X, x_stride, n_x, Y, y_stride, tile);
}

}  // namespace

JITLLM_AVX2 void quantize_x_avx2(const float* x, int64_t nb, int off, XBlock* out) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t i = 0; i < nb; ++i) {
        __m256 v[4], amax = _mm256_setzero_ps();
        for (int k = 0; k < 4; ++k) {
            v[k] = _mm256_loadu_ps(x + 32 * i + 8 * k);
            amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));
        }
        const float am = hmax8(amax);
        const float id = am != 0.0f ? 127.0f / am : 0.0f;
        XBlock& o = out[i];
        alignas(32) int32_t q[32];
        // rounded to the nearest, ties to even (the default rounding mode)
        for (int k = 0; k < 4; ++k)
            _mm256_store_si256(reinterpret_cast<__m256i*>(q + 8 * k),
                               _mm256_cvtps_epi32(_mm256_mul_ps(v[k], _mm256_set1_ps(id))));
        for (int k = 0; k < 32; ++k) o.q[k] = int8_t(q[k]);
        block_corrections(q, off, o);
        o.d = fp16_to_fp32(fp32_to_fp16(am / 127.0f));
    }
}

JITLLM_AVX2 void qp_groups_avx2(bool q4, const uint8_t* P, size_t group_bytes, int n_groups, int64_t nb,
                                const XBlock* x, int n_x, float* Y, size_t y_stride, int n_rows) {
    tile_passes<8, 4>(P, group_bytes, n_groups, n_rows, x, nb, n_x, Y, y_stride,
                      [&](const uint8_t* g, int hf, const XBlock* xj, float* yj, int left, auto c) {
                          if (q4) qp_tile<true, decltype(c)::value>(g, hf, nb, xj, yj, y_stride, left);
                          else qp_tile<false, decltype(c)::value>(g, hf, nb, xj, yj, y_stride, left);
                      });
}

JITLLM_AVX2 void fp_groups_avx2(GgmlType t, const uint8_t* P, size_t group_bytes, int n_groups, int64_t n,
                                const float* X, size_t x_stride, int n_x, float* Y, size_t y_stride, int n_rows) {
    auto* f = t == GgmlType::F16 ? fp_groups<GgmlType::F16>
              : t == GgmlType::BF16 ? fp_groups<GgmlType::BF16>
                                    : fp_groups<GgmlType::F32>;
    f(P, group_bytes, n_groups, n, X, x_stride, n_x, Y, y_stride, n_rows);
}

}  // namespace jitllm::cpu::fast::detail

#else  // not x86-64: no AVX2 forms

namespace jitllm::cpu::fast::detail {
void quantize_x_avx2(const float*, int64_t, int, XBlock*) {}
void qp_groups_avx2(bool, const uint8_t*, size_t, int, int64_t, const XBlock*, int, float*, size_t, int) {}
void fp_groups_avx2(GgmlType, const uint8_t*, size_t, int, int64_t, const float*, size_t, int, float*, size_t, int) {}
}  // namespace jitllm::cpu::fast::detail

#endif
