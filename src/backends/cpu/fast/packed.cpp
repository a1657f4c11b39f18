// Packing weight matrices into the fast kernels' layout (packed.h).
#include "backends/cpu/fast/packed.h"

#include <cstdlib>
#include <cstring>

#include "backends/cpu/fast/fast_ops.h"
#include "backends/cpu/fast/team.h"
#include "core/error.h"

namespace jitllm::cpu::fast {
namespace {

// Bytes of the 16 rows' values of one block in the packed layout (their f16 scales: 32 more)
size_t packed_values_bytes(GgmlType t) { return t == GgmlType::Q4_0 ? 256 : 512; }

// Block b of the 16 rows at rp[0..16) (null: a zero row past the matrix) into values and scales.
// Q4_0: four runs of 64 bytes, run u holding bytes 4u .. 4u + 3 of each row's 16 nibble bytes;
// Q8_0: eight runs of the 32 value bytes (sign bit flipped: unsigned for VPDPBUSD); then the 16
// rows' f16 scales
void pack_block(GgmlType t, const uint8_t* const* rp, size_t b, uint8_t* values, uint8_t* scales) {
    const size_t bb = type_traits(t).type_size, runs = packed_values_bytes(t) / 64;
    std::memset(values, 0, packed_values_bytes(t));
    std::memset(scales, 0, 32);
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

}  // namespace

bool PackedWeights::packs(GgmlType t) {
    return fast_isa() == FastIsa::Avx512Vnni && (t == GgmlType::Q4_0 || t == GgmlType::Q8_0);
}

void PackedWeights::add(GgmlType t, const void* W, size_t row_stride, int rows, int cols, int n_threads) {
    if (!packs(t) || rows < 16 || m_.count(W)) return;
    const int64_t bs = type_traits(t).block_size;
    JITLLM_CHECK(cols % bs == 0, "{} matrix of {} columns", type_name(t), cols);
    const size_t nb = size_t(cols / bs), groups = size_t(rows + 15) / 16;
    PackedMatrix p{t, rows, cols, (nb * (packed_values_bytes(t) + 32) + 63) / 64 * 64};  // groups 64-aligned
    const size_t total = groups * p.group_bytes;
    p.data = {static_cast<uint8_t*>(std::aligned_alloc(64, (total + 63) / 64 * 64)), std::free};
    JITLLM_CHECK(p.data != nullptr, "out of memory packing a {} x {} {} matrix", rows, cols, type_name(t));
    const auto* w = static_cast<const uint8_t*>(W);
    uint8_t* base = p.data.get();
    const size_t vb = packed_values_bytes(t);
    team_for(n_threads, int(groups), [&](int g) {
        const uint8_t* rp[16];
        for (int k = 0; k < 16; ++k) {
            const int r = 16 * g + k;
            rp[k] = r < rows ? w + size_t(r) * row_stride : nullptr;
        }
        uint8_t* group = base + size_t(g) * p.group_bytes;
        for (size_t b = 0; b < nb; ++b) pack_block(t, rp, b, group + b * vb, group + nb * vb + 32 * b);
    });
    bytes_ += total;
    m_.emplace(W, std::move(p));
}

const PackedMatrix* PackedWeights::find(const void* W) const {
    const auto it = m_.find(W);
    return it == m_.end() ? nullptr : &it->second;
}

}  // namespace jitllm::cpu::fast
