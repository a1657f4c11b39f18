// CPU reference operations (see cpu_ops.h): readable loops, float accumulation, the spec.
#include "backends/cpu/cpu_ops.h"

#include "core/rope_theta.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/thread_pool.h"

#include "quant/quant.h"

namespace jitllm::cpu {

void rms_norm(const float* x, const float* w, float* y, int n, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; ++i) ss += x[i] * x[i];
    const float scale = 1.0f / std::sqrt(ss / float(n) + eps);
    for (int i = 0; i < n; ++i) y[i] = x[i] * scale * (w ? w[i] : 1.0f);
}

namespace {
// [0, rows) in n ranges of whole 8-row groups (the AVX2 products' passes), work(i, r0, r1) each on
// the pool; under 64 rows or one thread, all on the caller's
template <class F>
void split_rows(int rows, int n_threads, F&& work) {
    ThreadPool& pool = ThreadPool::global();
    const int n = std::min(n_threads, pool.size());
    if (n <= 1 || rows < 64) {
        work(0, rows);
        return;
    }
    const int per = ((rows + n - 1) / n + 7) & ~7;
    pool.parallel_for(n, [&](int i) {
        const int r0 = std::min(rows, i * per), r1 = std::min(rows, (i + 1) * per);
        if (r1 > r0) work(r0, r1);
    });
}
}  // namespace

void matvec(GgmlType t, const void* W, size_t row_stride, int rows, int cols, const float* x,
            float* y, int n_threads, XNumerics xn) {
    matmul(t, W, row_stride, rows, cols, x, 0, 1, y, 0, n_threads, xn);
}

void matmul(GgmlType t, const void* W, size_t row_stride, int rows, int cols, const float* X, size_t x_stride,
            int n_x, float* Y, size_t y_stride, int n_threads, XNumerics xn) {
    const auto* base = static_cast<const uint8_t*>(W);
    const bool q8 = xn == XNumerics::Engine && act_q8_type(t);
    thread_local std::vector<int8_t> xq;
    thread_local std::vector<float> xd;
    thread_local std::vector<int32_t> xs;
    const int32_t* sx8 = nullptr;  // Q4_0: each block's 8 * sum, once for every tile below (the AVX2 form subtracts them)
    if (q8) {
        xq.resize(size_t(n_x) * size_t(cols));
        xd.resize(size_t(n_x) * size_t(cols) / 32);
        for (int j = 0; j < n_x; ++j)
            quantize_act_q8(X + size_t(j) * x_stride, cols, xq.data() + size_t(j) * size_t(cols),
                            xd.data() + size_t(j) * size_t(cols) / 32);
        if (t == GgmlType::Q4_0 && n_x > 1) {
            xs.resize(size_t(n_x) * size_t(cols) / 32);
            act_q8_block_sums8(xq.data(), n_x, cols, xs.data());
            sx8 = xs.data();
        }
    }
    const int8_t* q = xq.data();
    const float* d = xd.data();
    // weight rows in tiles of ~64 KiB (whole 8-row groups), each read from memory once and then from
    // the cache for the other activation rows
    const int tile = n_x == 1 ? rows : std::max(8, int(size_t(65536) / row_stride) & ~7);
    split_rows(rows, n_threads, [&](int r0, int r1) {
        for (int t0 = r0; t0 < r1; t0 += tile) {
            const int t1 = std::min(r1, t0 + tile);
            const uint8_t* w = base + size_t(t0) * row_stride;
            if (q8) {
                dot_rows_act_q8_batch(t, w, row_stride, t1 - t0, q, d, n_x, cols, Y + t0, y_stride, sx8);
            } else {
                dot_rows_batch(t, w, row_stride, t1 - t0, X, x_stride, n_x, cols, Y + t0, y_stride);
            }
        }
    });
}

void rope(float* v, int n_heads, int head_dim, int n_rot, int pos, float base,
          RopePairing pairing, const float* freq_factors, const RopeYarn& yarn) {
    const int half = n_rot / 2;
    for (int i = 0; i < half; ++i) {
        const float theta = rope_theta(pos, i, n_rot, base, freq_factors, yarn);  // llama.cpp's angle
        const float c = std::cos(theta), s = std::sin(theta);
        for (int h = 0; h < n_heads; ++h) {
            float* hv = v + size_t(h) * head_dim;
            const int a = pairing == RopePairing::Norm ? 2 * i : i;
            const int b = pairing == RopePairing::Norm ? 2 * i + 1 : i + half;
            const float x0 = hv[a], x1 = hv[b];
            hv[a] = x0 * c - x1 * s;
            hv[b] = x0 * s + x1 * c;
        }
    }
}

namespace {
// out[d + j] = sum over positions i in order of a_i * v_i[d + j], for j < W (att: the weights a_i;
// v_i at v0 + i * kv_stride), the W sums side by side in registers
template <int W>
inline void mix_columns(const float* att, const float* v0, size_t kv_stride, int n_pos, int d, float* out) {
    float acc[W] = {};
    for (int i = 0; i < n_pos; ++i) {
        const float a = att[i];
        const float* vp = v0 + size_t(i) * kv_stride + size_t(d);
        for (int j = 0; j < W; ++j) acc[j] += a * vp[j];
    }
    std::copy_n(acc, W, out + d);
}

// Heads [h0, h1) of attention() (one head at a time: scores, softmax, mix). The spec's order: each
// score sums d = 0 .. head_dim - 1, the max and the exp sum run over positions in order, and each
// output element adds positions in order. Eight positions' scores are summed side by side
// (independent chains, each in its own order), so they do not wait on one add's latency; the output
// elements are accumulated in registers, 32 at a time, over the positions.
void attention_heads(int h0, int h1, const float* q, const float* k_cache, const float* v_cache, size_t kv_stride,
                     int group, int head_dim, int n_pos, float scale, float* out, float* att) {
    for (int h = h0; h < h1; ++h) {
        const float* qh = q + size_t(h) * head_dim;
        const size_t koff = size_t(h / group) * size_t(head_dim);
        float mx = -INFINITY;
        int p = 0;
        for (; p + 8 <= n_pos; p += 8) {
            const float* k0 = k_cache + size_t(p) * kv_stride + koff;
            const float *k1 = k0 + kv_stride, *k2 = k1 + kv_stride, *k3 = k2 + kv_stride, *k4 = k3 + kv_stride,
                        *k5 = k4 + kv_stride, *k6 = k5 + kv_stride, *k7 = k6 + kv_stride;
            float s[8] = {};
            for (int d = 0; d < head_dim; ++d) {
                const float qd = qh[d];
                s[0] += qd * k0[d], s[1] += qd * k1[d], s[2] += qd * k2[d], s[3] += qd * k3[d];
                s[4] += qd * k4[d], s[5] += qd * k5[d], s[6] += qd * k6[d], s[7] += qd * k7[d];
            }
            for (int j = 0; j < 8; ++j) {
                att[p + j] = s[j] * scale;
                mx = std::max(mx, att[p + j]);
            }
        }
        for (; p < n_pos; ++p) {
            const float* kp = k_cache + size_t(p) * kv_stride + koff;
            float s = 0.0f;
            for (int d = 0; d < head_dim; ++d) s += qh[d] * kp[d];
            att[p] = s * scale;
            mx = std::max(mx, att[p]);
        }
        float sum = 0.0f;
        for (int i = 0; i < n_pos; ++i) {
            att[i] = std::exp(att[i] - mx);
            sum += att[i];
        }
        for (int i = 0; i < n_pos; ++i) att[i] = att[i] / sum;  // each position's weight a
        // out[d] = 0 + a_0 v_0[d] + a_1 v_1[d] + ..., in position order: 32 output elements at a time
        // kept in registers over the positions (then 8, then 1)
        float* oh = out + size_t(h) * head_dim;
        const float* v0 = v_cache + koff;
        int d = 0;
        for (; d + 32 <= head_dim; d += 32) mix_columns<32>(att, v0, kv_stride, n_pos, d, oh);
        for (; d + 8 <= head_dim; d += 8) mix_columns<8>(att, v0, kv_stride, n_pos, d, oh);
        for (; d < head_dim; ++d) mix_columns<1>(att, v0, kv_stride, n_pos, d, oh);
    }
}

#if defined(__x86_64__)
// The same loops compiled for AVX2 (quant.h CpuIsa; no FMA: the same roundings)
__attribute__((target("avx2"), flatten)) void attention_heads_avx2(int h0, int h1, const float* q, const float* k_cache,
                                                                    const float* v_cache, size_t kv_stride, int group,
                                                                    int head_dim, int n_pos, float scale, float* out,
                                                                    float* att) {
    attention_heads(h0, h1, q, k_cache, v_cache, kv_stride, group, head_dim, n_pos, scale, out, att);
}
#endif
}  // namespace

void attention(const float* q, const float* k_cache, const float* v_cache, size_t kv_stride,
               int n_heads, int n_kv_heads, int head_dim, int n_pos, float scale, float* out, int n_threads) {
    const int group = n_heads / n_kv_heads;
    const bool avx2 = cpu_isa() == CpuIsa::Avx2;
    auto heads = [&](int h0, int h1) {
        thread_local std::vector<float> att;
        att.resize(size_t(n_pos));
#if defined(__x86_64__)
        if (avx2)
            return attention_heads_avx2(h0, h1, q, k_cache, v_cache, kv_stride, group, head_dim, n_pos, scale, out,
                                        att.data());
#endif
        (void)avx2;
        attention_heads(h0, h1, q, k_cache, v_cache, kv_stride, group, head_dim, n_pos, scale, out, att.data());
    };
    // heads over the threads once the cached rows outweigh a hand-over (each head's bits its own)
    ThreadPool& pool = ThreadPool::global();
    const int n = std::min({n_threads, pool.size(), n_heads});
    if (n <= 1 || size_t(n_pos) * size_t(head_dim) * size_t(n_heads) < (size_t(1) << 16)) {
        heads(0, n_heads);
        return;
    }
    const int per = (n_heads + n - 1) / n;
    pool.parallel_for(n, [&](int i) {
        const int h0 = std::min(n_heads, i * per), h1 = std::min(n_heads, (i + 1) * per);
        if (h1 > h0) heads(h0, h1);
    });
}

void swiglu(const float* gate, const float* up, float* out, int n) {
    for (int i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add_scaled(float* y, const float* x, float scale, int n) {
    for (int i = 0; i < n; ++i) y[i] += scale * x[i];
}

int argmax(const float* x, int n) {
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return best;
}

}  // namespace jitllm::cpu
