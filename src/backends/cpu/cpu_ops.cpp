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
    if (q8) {
        xq.resize(size_t(n_x) * size_t(cols));
        xd.resize(size_t(n_x) * size_t(cols) / 32);
        for (int j = 0; j < n_x; ++j)
            quantize_act_q8(X + size_t(j) * x_stride, cols, xq.data() + size_t(j) * size_t(cols),
                            xd.data() + size_t(j) * size_t(cols) / 32);
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
                dot_rows_act_q8_batch(t, w, row_stride, t1 - t0, q, d, n_x, cols, Y + t0, y_stride);
            } else {
                dot_rows_batch(t, w, row_stride, t1 - t0, X, x_stride, n_x, cols, Y + t0, y_stride);
            }
        }
    });
}

void rope(float* v, int n_heads, int head_dim, int n_rot, int pos, float base,
          RopePairing pairing, const float* freq_factors) {
    const int half = n_rot / 2;
    for (int i = 0; i < half; ++i) {
        const float theta = rope_theta(pos, i, n_rot, base, freq_factors);  // llama.cpp's angle
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

void attention(const float* q, const float* k_cache, const float* v_cache, size_t kv_stride,
               int n_heads, int n_kv_heads, int head_dim, int n_pos, float scale, float* out) {
    const int group = n_heads / n_kv_heads;
    std::vector<float> att(static_cast<size_t>(n_pos));
    for (int h = 0; h < n_heads; ++h) {
        const float* qh = q + size_t(h) * head_dim;
        const int kvh = h / group;
        float mx = -INFINITY;
        for (int p = 0; p < n_pos; ++p) {
            const float* kp = k_cache + size_t(p) * kv_stride + size_t(kvh) * head_dim;
            float s = 0.0f;
            for (int d = 0; d < head_dim; ++d) s += qh[d] * kp[d];
            att[p] = s * scale;
            mx = std::max(mx, att[p]);
        }
        float sum = 0.0f;
        for (int p = 0; p < n_pos; ++p) {
            att[p] = std::exp(att[p] - mx);
            sum += att[p];
        }
        float* oh = out + size_t(h) * head_dim;
        std::fill(oh, oh + head_dim, 0.0f);
        for (int p = 0; p < n_pos; ++p) {
            const float a = att[p] / sum;
            const float* vp = v_cache + size_t(p) * kv_stride + size_t(kvh) * head_dim;
            for (int d = 0; d < head_dim; ++d) oh[d] += a * vp[d];
        }
    }
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
