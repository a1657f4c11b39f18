// x86-64 forms of quant.cpp's hot CPU products, chosen at run time by cpu_isa(), each giving the
// scalar spec's bits (no fused multiply-add anywhere: the target enables AVX2 and F16C, not FMA).
// dot_rows_act_q8 (Q4_0 / Q8_0 weights times x quantized to Q8_0 blocks): each block's integer sum
// is exact in any order, its term is (weight scale * x scale) * float(sum) with the same two
// roundings, and each row's terms are added in block order, one row a vector lane. dot_f16: the
// scalar form's 8 float lanes are one vector, each half converted once for up to 4 activation rows.
#include "quant/quant_isa.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"

namespace jitllm::detail {
namespace {

#define JITLLM_AVX2 __attribute__((target("avx2,f16c")))

// Each row's bytes this far ahead are prefetched every block: eight rows advance 18 / 34 bytes a
// block each, eight streams the hardware prefetcher alone left the loads waiting on (1B Q4_0 on
// 2 cores: 13 -> 23 tok/s; 128 to 256 bytes measured best, 384 and 768 slower; docs/performance.md)
constexpr size_t kPrefetchBytes = 256;

JITLLM_AVX2 inline uint16_t load_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

// The exact sums of 8 vectors of 8 int32, one a lane: lane k of the result is the sum of v[k]'s
// lanes (integer adds: any order gives the same value)
JITLLM_AVX2 inline __m256i sum8(const __m256i* v) {
    const __m256i s01 = _mm256_hadd_epi32(v[0], v[1]), s23 = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i s45 = _mm256_hadd_epi32(v[4], v[5]), s67 = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i t0 = _mm256_hadd_epi32(s01, s23);  // [v0..v3 low halves' sums | v0..v3 high halves']
    const __m256i t1 = _mm256_hadd_epi32(s45, s67);  // (the same for v4..v7)
    return _mm256_add_epi32(_mm256_permute2x128_si256(t0, t1, 0x20), _mm256_permute2x128_si256(t0, t1, 0x31));
}

// Rows r0 .. r0 + 7 (row k at r0 + k * stride) times R activation rows: activation row j's q at
// q + j * nb * 32, its d at d + j * nb, its sx8 at sx8 + j * nb (8 sum x of each block, Q4 only), its
// y[0..8) at y + j * y_stride. Each weight block is loaded and unpacked once for the R rows. Q4: the
// nibbles n are unsigned, so sum (n - 8) x = maddubs(n, x) summed - 8 sum x. Q8: w x = |w| * sign(x, w)
// (x is within +-127, so its negation never wraps; |-128| reads as unsigned 128). Pair sums stay
// within int16 (Q4: 2 * 15 * 128, Q8: 2 * 128 * 127).
template <bool Q4, int R>
JITLLM_AVX2 void rows8(const uint8_t* r0, size_t stride, const int8_t* q, const float* d, const int32_t* sx8,
                       int64_t nb, float* y, size_t y_stride) {
    constexpr size_t bb = Q4 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
    const __m256i ones = _mm256_set1_epi16(1);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const size_t qn = size_t(nb) * kQK;
    __m256 acc[R];
    for (int j = 0; j < R; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const uint8_t* b0 = r0 + size_t(i) * bb;
        __m256i w[8];  // Q4: the nibbles in element order; Q8: |w|
        __m256i ws[8];  // Q8: w (the signs)
        for (int k = 0; k < 8; ++k) {
            const uint8_t* qs = b0 + size_t(k) * stride + 2;
            _mm_prefetch(reinterpret_cast<const char*>(qs + kPrefetchBytes), _MM_HINT_T0);
            if constexpr (Q4) {
                const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
                const __m128i lo = _mm_and_si128(raw, m4), hi = _mm_and_si128(_mm_srli_epi16(raw, 4), m4);
                w[k] = _mm256_set_m128i(hi, lo);  // elements 0..15, then 16..31
            } else {
                ws[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
                w[k] = _mm256_abs_epi8(ws[k]);
            }
        }
        const __m128i h = _mm_set_epi16(short(load_u16(b0 + 7 * stride)), short(load_u16(b0 + 6 * stride)),
                                        short(load_u16(b0 + 5 * stride)), short(load_u16(b0 + 4 * stride)),
                                        short(load_u16(b0 + 3 * stride)), short(load_u16(b0 + 2 * stride)),
                                        short(load_u16(b0 + stride)), short(load_u16(b0)));
        const __m256 dw = _mm256_cvtph_ps(h);  // exact, as fp16_to_fp32
        for (int j = 0; j < R; ++j) {
            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + j * qn + size_t(i) * kQK));
            __m256i s[8];
            for (int k = 0; k < 8; ++k) {
                const __m256i p = Q4 ? _mm256_maddubs_epi16(w[k], xv)
                                     : _mm256_maddubs_epi16(w[k], _mm256_sign_epi8(xv, ws[k]));
                s[k] = _mm256_madd_epi16(p, ones);
            }
            __m256i isum = sum8(s);
            if constexpr (Q4) isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(sx8[size_t(j) * size_t(nb) + size_t(i)]));
            const __m256 t = _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(d[size_t(j) * size_t(nb) + size_t(i)])),
                                           _mm256_cvtepi32_ps(isum));
            acc[j] = _mm256_add_ps(acc[j], t);
        }
    }
    for (int j = 0; j < R; ++j) _mm256_storeu_ps(y + j * y_stride, acc[j]);
}

template <bool Q4>
void rows8_n(int n_x, const uint8_t* r0, size_t stride, const int8_t* q, const float* d, const int32_t* sx8,
             int64_t nb, float* y, size_t y_stride) {
    // activation rows 4 at a time (the weights' unpacking shared; more would spill the 16 registers)
    const size_t qn = size_t(nb) * kQK;
    int j = 0;
    for (; j + 4 <= n_x; j += 4)
        rows8<Q4, 4>(r0, stride, q + j * qn, d + j * nb, sx8 + j * nb, nb, y + j * y_stride, y_stride);
    const int rest = n_x - j;
    q += j * qn, d += j * nb, sx8 += j * nb, y += j * y_stride;
    if (rest == 3) rows8<Q4, 3>(r0, stride, q, d, sx8, nb, y, y_stride);
    if (rest == 2) rows8<Q4, 2>(r0, stride, q, d, sx8, nb, y, y_stride);
    if (rest == 1) rows8<Q4, 1>(r0, stride, q, d, sx8, nb, y, y_stride);
}

// quant.cpp dot_impl<DecF16>'s arithmetic for R activation rows (row j at x + j * x_stride, its result
// at y[j * y_stride]), each half converted once by F16C (exact, as halves_to_floats): element i's
// product into lane i % 8 of the 32-element blocks, the lanes summed as lanes_sum, then the last
// n % 32 products in order
template <int R>
JITLLM_AVX2 void dot_f16(const uint8_t* row, const float* x, size_t x_stride, int64_t n, float* y, size_t y_stride) {
    const int64_t nf = n / 32 * 32;
    __m256 acc[R];
    for (int j = 0; j < R; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nf; i += 8) {
        const __m256 w = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
        for (int j = 0; j < R; ++j) acc[j] = _mm256_add_ps(acc[j], _mm256_mul_ps(w, _mm256_loadu_ps(x + j * x_stride + i)));
    }
    for (int j = 0; j < R; ++j) {
        alignas(32) float a[8];
        _mm256_store_ps(a, acc[j]);
        float sum = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
        for (int64_t i = nf; i < n; ++i) sum += fp16_to_fp32(load_u16(row + 2 * i)) * x[j * x_stride + i];
        y[j * y_stride] = sum;
    }
}

}  // namespace

void dot_rows_f16_avx2(const uint8_t* mat, size_t stride, int64_t n_rows, const float* x, size_t x_stride, int n_x,
                       int64_t n, float* y, size_t y_stride) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const uint8_t* row = mat + size_t(r) * stride;
        int j = 0;
        for (; j + 4 <= n_x; j += 4) dot_f16<4>(row, x + j * x_stride, x_stride, n, y + j * y_stride + r, y_stride);
        for (; j < n_x; ++j) dot_f16<1>(row, x + j * x_stride, x_stride, n, y + j * y_stride + r, y_stride);
    }
}

bool cpu_has_avx2() {
    // F16C from CPUID leaf 1 (clang's __builtin_cpu_supports has no "f16c"); AVX2 with the OS's YMM
    // state from the builtin
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) && __builtin_cpu_supports("avx2");
}

int64_t dot_rows_act_q8_avx2(bool q4, const uint8_t* base, size_t stride, int64_t n_rows, const int8_t* q,
                             const float* d, const int32_t* sx8, int64_t nb, float* y, int n_x, size_t y_stride) {
    int64_t r = 0;
    for (; r + 8 <= n_rows; r += 8) {
        if (q4)
            rows8_n<true>(n_x, base + size_t(r) * stride, stride, q, d, sx8, nb, y + r, y_stride);
        else
            rows8_n<false>(n_x, base + size_t(r) * stride, stride, q, d, sx8, nb, y + r, y_stride);
    }
    return r;
}

}  // namespace jitllm::detail

#else  // not x86-64: the scalar spec only

namespace jitllm::detail {
bool cpu_has_avx2() { return false; }
int64_t dot_rows_act_q8_avx2(bool, const uint8_t*, size_t, int64_t, const int8_t*, const float*, const int32_t*,
                             int64_t, float*, int, size_t) {
    return 0;
}
void dot_rows_f16_avx2(const uint8_t*, size_t, int64_t, const float*, size_t, int, int64_t, float*, size_t) {}
}  // namespace jitllm::detail

#endif
