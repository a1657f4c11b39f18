// The matrix-matrix kernel (src/kernels/cuda/gemm.cu) from the host: its JIT variant, launch
// geometry, bytes and flops for a chunk of m activation rows, and the tensor-core gate. Pure
// host data (no device), so the schedule can use it for any target arch.
#pragma once

#include <cstdint>
#include <string>

#include "backends/cuda/cuda_device.h"
#include "core/dtype.h"
#include "jit/variant.h"

namespace jitllm {

struct GemmSpec {
    GgmlType wtype = GgmlType::F16;
    int cols = 0;                // K: multiple of 32 (256 for K-quants)
    int rows[3] = {0, 0, 0};     // rows of each matrix (only the first n_mat count)
    int n_mat = 1;               // 1..3
    int epi = 0;                 // 0 plain, 1 residual, 2 swiglu, 3 scale (as gemv.cu)
    bool has_bias = false;
    float res_scale = 1.0f;      // EPI=1
    float out_scale = 1.0f;      // EPI=3
    int up_offset_rows = 0;      // EPI=2 with n_mat=1
    int mma = 1;                 // 2 wgmma (sm_90a; quantized weights need x_f16), 1 tensor cores (mma.sync,
                                 // sm_80+), 0 SIMT f32; gemm_mma_level says which one a type has;
                                 // 3 integer tensor cores for decode-sized steps (split-layout Q4_0 /
                                 // Q8_0 weights, x as Q8_0 rows: convert.cu Q8_OUT; sm_80+)
    int bm = 0, bn = 0;          // tile; 0 = default (MMA 128 x 128, SIMT 64 x 64; MMA=2: bm 128
                                 // only, bn 64 / 128 / 256)
    int stages = 0;              // MMA ring depth; 0 = default (4)
    int warps_k = 0;             // MMA=3: warps sharing each stage's columns (1, 2, 4, 8; 0 = 2); the
                                 // tile is bm (8..64, default 32) x bn (16 * warps side by side: 16,
                                 // 32, 64 or 128; default 64) rows
    bool x_f16 = false;          // MMA=2: x is 16-bit [m, cols] (f16; bf16 for BF16 weights);
                                 // required for quantized weights
    bool wsplit = false;         // Q4_0/Q8_0 weights in the split device layout (quant.h); cols % 256 == 0
    int producers = 0;           // MMA=2 producer warpgroups (G2_PW); 0 = auto (gemm_producers)
    bool split_k = false;        // MMA=2: SPLIT_K (K steps over grid.z; gemm_k_splits says how many)
    // GROUPED (mixture of experts, gemm.cu): 1 x rows gathered through the group list (entry /
    // group_k), 2 x rows in group order; 0 off. The matrices are stacked per expert (`groups` of
    // them); a step of m tokens has m * group_k entries, in at most ceil(m * group_k / bm) +
    // min(groups, m * group_k) tiles (the grid's x bound). MMA 0 / 1, epi 0 or 2 (two matrices).
    int grouped = 0;
    int group_k = 1;             // entries per token (the experts a token uses)
    int groups = 0;              // experts
};

// MMA=2 producer warpgroups: `producers` when set, else 2 for quantized weights dequantized from
// registers (not the raw ring) at BN <= 128, else 1. Other MMA levels: 0.
int gemm_producers(const GemmSpec& s);

// Whether gemm.cu has a weight loader for type t (F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K).
bool gemm_type_supported(GgmlType t);

// Variant of "cuda/gemm.cu" with every define of `s` (symbol = entry point name).
Variant gemm_variant(const GemmSpec& s, const std::string& symbol);

struct GemmLaunch {
    Dim3 grid, block;
    unsigned smem = 0;  // dynamic shared memory; above 48 KiB the host raises the function limit
};
// Launch geometry for m activation rows (m >= 1; grouped: m tokens).
GemmLaunch gemm_launch(const GemmSpec& s, int m);
// grouped: tiles of the group list, at most ceil(entries / bm) + min(groups, entries) (every
// expert's last tile may be partial); the grid's x bound for m tokens
int gemm_group_tiles(const GemmSpec& s, int m);
// Split-K (SPLIT_K): the grid.z a step of m rows gets on a device of `sm_count` SMs. Steps whose
// tiles (tile rows x weight-row tiles) number fewer than the SMs (a decode step of one tile row; a
// small model's prompt chunk) split their K steps so that tiles x splits comes near the SM count,
// each split 8 K steps of 64 at least, every split non-empty; `force` > 0 asks such a step for
// that many (gemm.splits, within the same bounds). Else 1.
int gemm_k_splits(const GemmSpec& s, int m, int sm_count, int force = 0);
// The f32 workspace a step of m rows split `splits` ways needs (floats), and its counters (ints).
uint64_t gemm_split_ws_floats(const GemmSpec& s, int m, int splits);
int gemm_split_counters(const GemmSpec& s, int m);
// Dynamic shared memory of the variant (for every m; MMA=3: for a tile of bm rows, the most).
unsigned gemm_smem_bytes(const GemmSpec& s);
// MMA=3: the dynamic shared memory a step of m rows needs (its tile's rows up to bm, in whole
// n tiles of 8): the stages hold only those activation rows.
unsigned gemm_i8_smem_rows(const GemmSpec& s, int m);

// Output rows per activation row: rows[0] for EPI=2, else the sum over matrices.
int gemm_out_rows(const GemmSpec& s);
// Weight rows read: 2 * rows[0] for EPI=2, else the sum.
int gemm_weight_rows(const GemmSpec& s);
// MMA=3's activation rows (convert.cu Q8_OUT): cols int8, then cols / 32 f16 scales.
inline uint64_t gemm_xq8_row_bytes(int cols) { return uint64_t(cols) + uint64_t(cols) / 16; }
// Bytes moved from/to DRAM in the ideal case (weights once, x once, y once, + resid / bias).
// Grouped: every expert's matrices once (which experts a step uses is known only on the device),
// x and y per entry.
uint64_t gemm_bytes(const GemmSpec& s, int m);
// 2 * m * cols * weight rows (grouped: per entry).
uint64_t gemm_flops(const GemmSpec& s, int m);

// Whether MMA level `mma` (1: mma.sync, 2: wgmma, 3: integer mma.sync for decode-sized steps:
// Q4_0 and Q8_0 from sm_80, the split layout and cols % 256 == 0 the caller's to check) supports
// wtype on compute capability `sm`
// (e.g. 80, 90); when not, `why` (if given) says why. Level 1: every supported weight type from
// sm_80 (mma.sync f16 and bf16). Level 2: F16, BF16 and the quantized types (dequantized to
// f16 in shared memory; 16-bit activations) on sm_90 exactly (sm_90a code: wgmma does not exist
// on sm_100+); F32 stays on level 1. gemm_mma_level returns 2 for F16, BF16, Q8_0 and Q4_0 only
// (measured faster than level 1; quantized weights need cols % 64 == 0 for the fast raw path,
// which the schedule checks).
bool gemm_mma_supported(GgmlType wtype, int sm, std::string* why = nullptr, int mma = 1);
// The highest MMA level (2, 1, or 0 = SIMT only) gemm.cu has for wtype on `sm`.
int gemm_mma_level(GgmlType wtype, int sm);

}  // namespace jitllm
