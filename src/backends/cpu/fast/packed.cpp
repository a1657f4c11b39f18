// Packing weight matrices into the fast kernels' layout (packed.h).
#include "backends/cpu/fast/packed.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/fast/fast_ops.h"
#include "backends/cpu/fast/team.h"
#include "core/error.h"
#include "quant/blocks.h"

namespace jitllm::cpu::fast {
namespace {

// Bytes of the 16 rows' values of one Q4_0 / Q8_0 block in the packed layout (their f16 scales:
// 32 more)
size_t packed_values_bytes(GgmlType t) { return t == GgmlType::Q4_0 ? 256 : 512; }

// Bytes of a packed group of 16 rows of `cols` values, a multiple of 64 (groups stay aligned)
size_t packed_group_bytes(GgmlType t, int cols) {
    const size_t n = size_t(cols);
    size_t b = 0;
    switch (t) {
        case GgmlType::F32: b = 64 * n; break;
        case GgmlType::F16: case GgmlType::BF16: b = 32 * n; break;
        case GgmlType::Q4_K: b = n / 256 * detail::kQ4kGroupBlock; break;
        case GgmlType::Q6_K: b = n / 256 * detail::kQ6kGroupBlock; break;
        default: b = n / 32 * (packed_values_bytes(t) + 32); break;
    }
    return (b + 63) / 64 * 64;
}

// Run `run` of a packed block: bytes [4 * i, 4 * i + 4) of each row's `src` (at rp[k] + src, a
// row at a time; null rows stay zero) side by side, for i = first .. first + n - 1, 64 bytes a run
void pack_runs(const uint8_t* const* rp, size_t src, int first, int n, uint8_t* dst) {
    for (int k = 0; k < 16; ++k)
        if (rp[k])
            for (int i = 0; i < n; ++i)
                std::memcpy(dst + 64 * size_t(i) + 4 * size_t(k), rp[k] + src + 4 * size_t(first + i), 4);
}

// One Q4_K block (at byte off of each row) of the 16 rows: 32 runs of the 128 nibble bytes; the
// 8 sub-blocks' scales (run j: the 16 rows' 6-bit scale of sub-block j, a byte each); the mins in
// pairs (run i: (min 2i, min 2i + 1) of each row); the 16 rows' d, then their dmin (f16)
void pack_q4k(const uint8_t* const* rp, size_t off, uint8_t* dst) {
    pack_runs(rp, off + 16, 0, 32, dst);
    for (int k = 0; k < 16; ++k) {
        if (!rp[k]) continue;
        const uint8_t* blk = rp[k] + off;
        for (int j = 0; j < 8; ++j) {
            uint8_t sc, m;
            k_scale_min(j, blk + 4, &sc, &m);
            dst[2048 + 16 * j + k] = sc;
            dst[2176 + 32 * (j / 2) + 2 * k + (j % 2)] = m;
        }
        std::memcpy(dst + 2304 + 2 * k, blk, 2);
        std::memcpy(dst + 2336 + 2 * k, blk + 2, 2);
    }
}

// One Q6_K block of the 16 rows: 32 runs of the 128 ql bytes, 16 runs of the 64 qh bytes, the 16
// sub-blocks' int8 scales (run s: the 16 rows' scale of sub-block s), the 16 rows' d (f16)
void pack_q6k(const uint8_t* const* rp, size_t off, uint8_t* dst) {
    pack_runs(rp, off, 0, 32, dst);
    pack_runs(rp, off + 128, 0, 16, dst + 2048);
    for (int k = 0; k < 16; ++k) {
        if (!rp[k]) continue;
        const uint8_t* blk = rp[k] + off;
        for (int s = 0; s < 16; ++s) dst[3072 + 16 * s + k] = blk[192 + s];
        std::memcpy(dst + 3328 + 2 * k, blk + 208, 2);
    }
}

// Block b of the 16 rows at rp[0..16) (null: a zero row past the matrix) into values and scales.
// Q4_0: four runs of 64 bytes, run u holding bytes 4u .. 4u + 3 of each row's 16 nibble bytes;
// Q8_0: eight runs of the 32 value bytes (sign bit flipped: unsigned for VPDPBUSD); then the 16
// rows' f16 scales
void pack_block(GgmlType t, const uint8_t* const* rp, size_t b, uint8_t* values, uint8_t* scales) {
    const size_t bb = type_traits(t).type_size, runs = packed_values_bytes(t) / 64;
    for (int k = 0; k < 16; ++k) {
        if (!rp[k]) continue;
        const uint8_t* src = rp[k] + b * bb;
        for (size_t u = 0; u < runs; ++u)
            for (size_t i = 0; i < 4; ++i) {
                const uint8_t v = src[2 + 4 * u + i];
                values[64 * u + 4 * size_t(k) + i] = t == GgmlType::Q8_0 ? uint8_t(v ^ 0x80) : v;
            }
        std::memcpy(scales + 2 * size_t(k), src, 2);
    }
}

// Value k of the 16 rows side by side, k after k (written in order, read from 16 streams)
template <class T>
void pack_columns(const uint8_t* const* rp, int cols, uint8_t* dst) {
    const T* src[16];
    for (int r = 0; r < 16; ++r) src[r] = reinterpret_cast<const T*>(rp[r]);
    T* d = reinterpret_cast<T*>(dst);
    for (int k = 0; k < cols; ++k, d += 16)
        for (int r = 0; r < 16; ++r)
            if (src[r]) std::memcpy(d + r, src[r] + k, sizeof(T));
}

// The 16 rows at rp[0..16) into a group (zeroed first where rows are missing): F16 / BF16 / F32 value k
// of the 16 rows side by side (32 or 64 bytes), k after k; Q4_0 / Q8_0 the blocks' values
// (pack_block), then their scales; Q4_K / Q6_K block after block (pack_q4k, pack_q6k)
void pack_group(GgmlType t, const uint8_t* const* rp, int cols, uint8_t* dst) {
    if (t == GgmlType::F16 || t == GgmlType::BF16) return pack_columns<uint16_t>(rp, cols, dst);
    if (t == GgmlType::F32) return pack_columns<uint32_t>(rp, cols, dst);
    if (t == GgmlType::Q4_K || t == GgmlType::Q6_K) {
        const bool q4k = t == GgmlType::Q4_K;
        const size_t gb = q4k ? detail::kQ4kGroupBlock : detail::kQ6kGroupBlock, bb = type_traits(t).type_size;
        for (size_t b = 0; b < size_t(cols) / 256; ++b) {
            if (q4k) pack_q4k(rp, b * bb, dst + b * gb);
            else pack_q6k(rp, b * bb, dst + b * gb);
        }
        return;
    }
    const size_t nb = size_t(cols) / 32, vb = packed_values_bytes(t);
    for (size_t b = 0; b < nb; ++b) pack_block(t, rp, b, dst + b * vb, dst + nb * vb + 32 * b);
}

}  // namespace

bool PackedWeights::packs(GgmlType t) {
    return fast_isa() != FastIsa::None && (t == GgmlType::Q4_0 || t == GgmlType::Q8_0 || t == GgmlType::Q4_K ||
                                            t == GgmlType::Q6_K || t == GgmlType::F16 || t == GgmlType::BF16 ||
                                            t == GgmlType::F32);
}

void PackedWeights::add(GgmlType t, const void* W, size_t row_stride, int rows, int cols, int n_threads) {
    if (!packs(t) || rows < 16 || m_.count(W)) return;
    const int64_t bs = type_traits(t).block_size;
    JITLLM_CHECK(cols % bs == 0, "{} matrix of {} columns", type_name(t), cols);
    const size_t groups = size_t(rows + 15) / 16;
    PackedMatrix p{t, rows, cols, packed_group_bytes(t, cols)};
    const size_t total = groups * p.group_bytes;
    // 2 MiB pages where the system gives them (fewer faults while packing, fewer TLB misses in
    // the products' streams)
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t alloc = total >= kHuge ? (total + kHuge - 1) / kHuge * kHuge : total;
    p.data = {static_cast<uint8_t*>(std::aligned_alloc(total >= kHuge ? kHuge : 64, alloc)), std::free};
    if (p.data && total >= kHuge) madvise(p.data.get(), alloc, MADV_HUGEPAGE);
    JITLLM_CHECK(p.data != nullptr, "out of memory packing a {} x {} {} matrix", rows, cols, type_name(t));
    const auto* w = static_cast<const uint8_t*>(W);
    uint8_t* base = p.data.get();
    team_for(n_threads, int(groups), [&](int g) {
        const uint8_t* rp[16];
        for (int k = 0; k < 16; ++k) {
            const int r = 16 * g + k;
            rp[k] = r < rows ? w + size_t(r) * row_stride : nullptr;
        }
        if (!rp[15]) std::memset(base + size_t(g) * p.group_bytes, 0, p.group_bytes);  // rows past the last
        pack_group(t, rp, cols, base + size_t(g) * p.group_bytes);
    });
    bytes_ += total;
    m_.emplace(W, std::move(p));
}

const PackedMatrix* PackedWeights::find(const void* W) const {
    const auto it = m_.find(W);
    return it == m_.end() ? nullptr : &it->second;
}

}  // namespace jitllm::cpu::fast
