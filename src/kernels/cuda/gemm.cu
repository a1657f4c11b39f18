// gemm: Y[m, r] = sum_k X[m, k] * W[r, k] for a chunk of M activation rows (batched prefill,
// multi-sequence decode): gemv.cu's matrix-matrix sibling with the same fusions and defines, so
// the scheduler can swap one for the other.
//   N_MAT    up to 3 matrices of the same WTYPE and COLS in one launch (Q, K, V): concatenated
//            row ranges [0,ROWS0), [ROWS0,+ROWS1), [..,+ROWS2), separate W, bias and y
//   EPI      0: y = acc (+bias)   1: y0 = resid + RES_SCALE * (acc (+bias)) (resid may alias y0;
//               N_MAT=1)   2: y0 = silu(gate) * up, gate = W0 rows, up = W1 rows (N_MAT=2) or W0
//               rows + UP_OFFSET_ROWS (N_MAT=1)   3: y = (acc (+bias)) * OUT_SCALE
//
// params:
//   WTYPE           F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K (quant_blocks.cuh)
//   COLS            K. PRECOND: multiple of 32 (256 for K-quants)
//   ROWS0..2, N_MAT rows per matrix (any count; edges are guarded)
//   HAS_BIAS, EPI, RES_SCALE, OUT_SCALE, UP_OFFSET_ROWS   as gemv.cu
//   MMA             1: tensor cores, mma.sync.aligned.m16n8k16 f32 += f16 x f16 (bf16 x bf16 for
//                   WTYPE=BF16), sm_80+. 0: SIMT f32 FMA tiles (any arch), f32 throughout
//                   (common/gemm_simt.cuh).
//                   2: Hopper wgmma.mma_async m64nBNk16 (sm_90a only; F16/BF16 weights, or
//                   quantized weights with X_F16=1, dequantized to f16 by the producer): 3
//                   warpgroups (producer + 2 consumers), BM = 128, BK = 64, mbarrier ring
//                   (common/gemm_wgmma.cuh has the design, geometry and smem)
//                   3: integer tensor cores for decode-sized steps, mma.sync m16n8k32 s8 (sm_80+):
//                   split-layout Q4_0 / Q8_0 weights, x quantized to Q8_0 rows (convert.cu Q8_OUT)
//                   through the `x` pointer; tiles of BM (8..64) activation rows x 16 * WARPS_N
//                   weight rows, WARPS_K warps sharing each stage's columns (common/gemm_i8.cuh
//                   has the design, geometry and smem)
//   WSPLIT          1: Q4_0/Q8_0 weights in the split device layout (quant.h: a row's quants, then
//                   its f16 scales; COLS % 256 == 0): aligned 8-byte quant and 2-byte scale
//                   loads instead of 2-byte ones; MMA=2 uses the register path, not the raw ring
//   G2_PW           MMA=2 only: producer warpgroups, 1 (default) or 2 (block = 128 * (2 + G2_PW));
//                   the host picks 2 for quantized weights off the raw ring at BN <= 128
//   X_F16           MMA=2 only: 1 = x is 16-bit [m, COLS] (f16 for F16 and quantized weights,
//                   bf16 for BF16; passed through the `x` pointer), loaded with cp.async; 0
//                   (default) = f32 x, rounded in the kernel (F16/BF16 weights only)
//   BM, BN          tile: BM activation rows x BN weight rows per block (MMA default 128 x 128,
//                   SIMT 64 x 64). MMA: BM = 16 * WARPS_M * i, BN = 16 * WARPS_N * j.
//   WARPS_M, WARPS_N  MMA warp grid (default 2 x 4: each warp a 64 x 32 sub-tile)
//   STAGES          MMA cp.async ring depth (default 4, >= 3)
//   BK              32 (fixed: the f16 tiles are 64-byte rows with an XOR swizzle)
//   GROUPED         1 / 2: the mixture-of-experts GEMM of the batch phase (lowering/moe_batch.cpp;
//                   moe_group.cu MG=0 builds the group list): blockIdx.x is a tile of the list
//                   `tiles` (its count, 3 ints of padding, then int4 records (expert, first,
//                   count <= BM)); W0 / W1 are stacked tensors [experts][ROWS_i][COLS] and the
//                   tile multiplies its expert's matrices; the tile's activation row r is x row
//                   ent[first + r] / GROUP_K (1: the token of a (token, choice) entry) or first + r
//                   (2: x already in group order), its output row first + r. Blocks past the list
//                   return at once. MMA 0 / 1, EPI 0 / 2 (N_MAT 2), no bias; two more arguments
//                   (tiles, ent) after m
//   SPLIT_K         MMA=2 only: 1 = the kernel takes (ws, ctr) after m and splits its K steps over
//                   gridDim.z (gridDim.z 1: the whole-K code of SPLIT_K 0, its own copy in the
//                   kernel, for the steps above one tile row): each block sums its share,
//                   the last block of a tile to finish adds the shares in z order (deterministic)
//                   and runs the epilogue (gemm_wgmma.cuh g2_split_sum); ws f32 scratch of
//                   gridDim.x * gridDim.y * gridDim.z * 256 * BN / 2, ctr int [gridDim.x * gridDim.y]
//                   zero (each tile's last block resets its counter). The host splits steps of
//                   one tile row whose tiles leave SMs idle (gate gemm.split_k)
//   MIN_BLOCKS      __launch_bounds__ minimum (MMA default: 2 for F16/BF16 on sm_90+ = 128
//                   registers, 1 otherwise: the register-staged types spill a few bytes at 128,
//                   and sm_8x holds one 112 KiB block per SM anyway)
// launch:  grid  = (ceil(M / BM), N_TILES[, splits]), N_TILES = ceil(OUT_W / BN), OUT_W = ROWS0 + ROWS1 +
//                  ROWS2, or 2 * ROWS0 for EPI=2 (a tile holds BN/2 gate rows and their BN/2 up
//                  rows); block = 32 * WARPS_M * WARPS_N (MMA) or 256 (SIMT)
//          dynamic smem (independent of M):
//            MMA:  STAGES*BM*BK*4 (x f32 ring) + 2*BM*BK*2 (x f16) + W: STAGES*BN*BK*2 (F16/BF16,
//                  cp.async ring) or 2*BN*BK*2 (other types, dequantized double buffer)
//                  = 112 KiB (F16/BF16) / 96 KiB at 128x128, STAGES 4 (host raises the limit)
//            SIMT: 2 * BK * ((BM + 4) + (BN + 4)) * 4 = 34 KiB at 64 x 64
// args:    (w0, w1, w2, b0, b1, b2, y0, y1, y2, x, resid, m[, tiles, ent][, ws, ctr]); unused ones = null.
//          GROUPED: m unused; grid.x = the list's bound (gemm_launch).
//          x f32 [m, COLS], y_i f32 [m, ROWS_i] (EPI=2: y0 [m, ROWS0]), resid f32 [m, ROWS0].
//          PRECOND: W pointers and x 16-byte aligned; y does not overlap x; m >= 1.
// bytes:   weights once from DRAM (sum_i ROWS_i * row_bytes; L2 serves the M tiles after the
//          first: blockIdx.x, the M tile, varies fastest) + 4 * m * COLS (x, once per N tile
//          from L2) + 4 * m * OUT_ROWS (y) (+ 4 * m * OUT_ROWS resid, + 4 * OUT_ROWS bias)
// flops:   2 * m * COLS * (weight rows)
// reference: cpu::matvec for each row of X (+ bias, cpu::swiglu / add_scaled / scale after)
//            test: tests/gpu/kernels_gemm_test.cpp
// precision: MMA: x rounded to f16 (bf16 for BF16 weights: exact weights, no f16 overflow of
//          bf16-trained activations, 2^-9 relative instead of 2^-11), quantized and F32 weights
//          dequantized in f32 then rounded once to f16 (2^-11 relative), f32 accumulation over
//          k in steps of 16. Error ~ 2^-11 * sqrt(K) * |w||x| typical (bf16: 4x). SIMT: f32
//          everywhere (different summation order than the CPU only). MMA=3: the CPU spec's
//          Q8_0-activation arithmetic (exact block sums; the f32 order of their additions only).
//
// design (MMA): 8 warps, block tile 128 x 128 x 32, warp tile 64 x 32 = 4 x 4 mma tiles (64 f32
// accumulators per thread). x arrives as f32 through a STAGES-deep cp.async ring (16-byte
// copies, zero-filled past m), is converted to f16 one K step ahead into a double-buffered
// swizzled tile; F16/BF16 weights go straight into a STAGES-deep cp.async ring (zero-filled
// past the last row); other types are loaded into registers one K step ahead (before the
// tensor-core work), dequantized after it and stored as f16 into a double-buffered tile. Every
// f16 tile row is 64 bytes; 16-byte chunk c of row r sits at chunk c ^ ((r >> 1) & 3), so the
// 8 row addresses of each ldmatrix phase hit 8 distinct bank groups. One __syncthreads per K
// step. Fragments: A (x) with ldmatrix.x4 per 16 x 16, B (W rows = columns of W^T) with one
// ldmatrix.x4 per two 8-row n tiles.

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME gemm
#define WTYPE F16
#define MMA 1
#endif

#include "common/matmul_defines.cuh"
#include "common/gemm_wload.cuh"  // the type macros (F16, Q8_0, ...) before they are tested
#include "common/async_copy.cuh"

#ifndef X_F16
#define X_F16 0
#endif
#ifndef GROUPED
#define GROUPED 0
#endif
#ifndef GROUP_K
#define GROUP_K 1
#endif
#ifndef SPLIT_K
#define SPLIT_K 0
#endif
#ifndef BK
#define BK (MMA == 3 ? 256 : MMA == 2 ? 64 : 32)
#endif
#if MMA == 3
#ifndef WARPS_N
#define WARPS_N 4
#endif
#ifndef WARPS_K
#define WARPS_K 2
#endif
#ifndef BM
#define BM 32
#endif
#ifndef BN
#define BN (16 * WARPS_N)
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#define GEMM_NT (32 * WARPS_N * WARPS_K)
static_assert(BN == 16 * WARPS_N, "MMA=3: BN = 16 * WARPS_N");
#elif MMA == 2
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "gemm MMA=2 (wgmma) needs sm_90a (Variant::requires_arch_suffix_a)"
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef G2_PW
#define G2_PW 1
#endif
#define GEMM_NT (128 * (2 + G2_PW))
#elif MMA
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 4
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef MIN_BLOCKS  // 2 x 8 warps fit 128 registers with cp.async weights; the register-staged
#if (WTYPE == F16 || WTYPE == BF16) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // weight
#define MIN_BLOCKS 2  // loads of the other types need a few more; sm_8x fits one 112 KiB block
#else
#define MIN_BLOCKS 1
#endif
#endif
#define GEMM_NT (32 * WARPS_M * WARPS_N)
#else
#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#define GEMM_NT 256
#endif


#define GEMM_TOTAL_ROWS (ROWS0 + (N_MAT > 1 ? ROWS1 : 0) + (N_MAT > 2 ? ROWS2 : 0))
#define GEMM_OUT_ROWS (EPI == 2 ? ROWS0 : GEMM_TOTAL_ROWS)

static_assert(N_MAT >= 1 && N_MAT <= 3, "N_MAT: 1..3");
static_assert(EPI != 1 || N_MAT == 1, "EPI=1 (residual) is for one matrix");
static_assert(EPI != 2 || N_MAT <= 2, "EPI=2 takes gate/up as 2 matrices or 1 matrix + offset");
static_assert(EPI != 2 || N_MAT == 2 || UP_OFFSET_ROWS >= ROWS0, "EPI=2 with N_MAT=1 needs UP_OFFSET_ROWS");
static_assert(COLS % 32 == 0 && COLS % QK_ELEMS(WTYPE) == 0, "COLS: multiple of 32 and of the block");
static_assert(BK == (MMA == 3 ? 256 : MMA == 2 ? 64 : 32), "BK: 32 (MMA 0/1), 64 (MMA 2), 256 (MMA 3)");
static_assert(MMA >= 0 && MMA <= 3, "MMA: 0..3");
static_assert(!X_F16 || MMA == 2, "X_F16: MMA=2 only");
static_assert(!GROUPED || (MMA < 2 && !HAS_BIAS && (EPI == 0 || (EPI == 2 && N_MAT == 2))),
              "GROUPED: MMA 0 / 1, no bias, EPI 0 or EPI 2 with two matrices");

// EPI=2: a tile's BN columns are groups of 2*G: G gate rows, then the same G rows of up, so one
// thread holds gate and up of the same outputs (MMA: G = half a warp's columns).
#if MMA == 3
#define GEMM_G 8
#elif MMA == 2
#define GEMM_G (BN / 2)
#elif MMA
#define GEMM_G (BN / WARPS_N / 2)
#else
#define GEMM_G (BN / 2)
#endif

// Weight row for column j of N tile `tile`, or null past the end.
__device__ __forceinline__ const uint8_t* gemm_wrow(const uint8_t* W0, const uint8_t* W1,
                                                   const uint8_t* W2, int tile, int j) {
#if EPI == 2
    const int grp = j / (2 * GEMM_G), within = j % (2 * GEMM_G);
    const int o = tile * (BN / 2) + grp * GEMM_G + within % GEMM_G;
    if (o >= ROWS0) return nullptr;
    if (within < GEMM_G) return W0 + (unsigned long long)o * GEMM_ROW_BYTES;
    return N_MAT == 2 ? W1 + (unsigned long long)o * GEMM_ROW_BYTES
                      : W0 + (unsigned long long)(o + UP_OFFSET_ROWS) * GEMM_ROW_BYTES;
#else
    const int o = tile * BN + j;
    if (o >= GEMM_TOTAL_ROWS) return nullptr;
    if (N_MAT == 1 || o < ROWS0) return W0 + (unsigned long long)o * GEMM_ROW_BYTES;
    if (N_MAT == 2 || o < ROWS0 + ROWS1) return W1 + (unsigned long long)(o - ROWS0) * GEMM_ROW_BYTES;
    return W2 + (unsigned long long)(o - ROWS0 - ROWS1) * GEMM_ROW_BYTES;
    (void)W1; (void)W2;
#endif
}

// Output o (concatenated row index, not EPI=2) of activation row m.
__device__ __forceinline__ void gemm_store(float* y0, float* y1, float* y2, const float* b0,
                                           const float* b1, const float* b2, const float* resid,
                                           int m, int o, float v) {
    const int mi = (N_MAT == 1 || o < ROWS0) ? 0 : (N_MAT == 2 || o < ROWS0 + ROWS1) ? 1 : 2;
    const int r = mi == 0 ? o : mi == 1 ? o - ROWS0 : o - ROWS0 - ROWS1;
    const int ld = mi == 0 ? ROWS0 : mi == 1 ? ROWS1 : ROWS2;
#if HAS_BIAS
    v += (mi == 0 ? b0 : mi == 1 ? b1 : b2)[r];
#endif
    float* y = mi == 0 ? y0 : mi == 1 ? y1 : y2;
    const unsigned long long i = (unsigned long long)m * ld + r;
#if EPI == 1
    y[i] = resid[i] + (float)(RES_SCALE) * v;
#elif EPI == 3
    y[i] = v * (float)(OUT_SCALE);
#else
    y[i] = v;
#endif
    (void)b0; (void)b1; (void)b2; (void)resid;
}

// EPI=2: output o of row m from its gate and up sums.
__device__ __forceinline__ void gemm_store_swiglu(float* y0, const float* b0, const float* b1,
                                                  int m, int o, float gate, float up) {
#if HAS_BIAS
    gate += b0[o];
    up += N_MAT == 2 ? b1[o] : b0[o + UP_OFFSET_ROWS];
#endif
    y0[(unsigned long long)m * ROWS0 + o] = gate / (1.0f + expf(-gate)) * up;  // as cpu::swiglu
    (void)b0; (void)b1;
}

// The block's activation rows: `count` of them from output row `first` on, and x row xrow(r) of
// row r (GROUPED=1: through the group list's entries; else x rows are the output rows).
struct GemmRows {
    int first, count;
    const int* ent;
    __device__ __forceinline__ int xrow(int r) const {
#if GROUPED == 1
        return ent[first + r] / GROUP_K;
#else
        return first + r;
#endif
    }
};

#if GROUPED
// GROUPED: the block's tile of the group list as its rows, W0 / W1 moved to the tile's expert;
// false past the list's end.
__device__ __forceinline__ bool gemm_group_rows(const int* tiles, const int* ent, GemmRows& rows,
                                                const uint8_t*& W0, const uint8_t*& W1) {
    if (int(blockIdx.x) >= tiles[0]) return false;
    const int4 t = reinterpret_cast<const int4*>(tiles + 4)[blockIdx.x];
    W0 += (unsigned long long)t.x * ROWS0 * GEMM_ROW_BYTES;
    if (N_MAT > 1) W1 += (unsigned long long)t.x * ROWS1 * GEMM_ROW_BYTES;
    rows = GemmRows{t.y, t.z, ent};
    return true;
}
#define GEMM_GROUP_PARAMS , const int* tiles, const int* ent
// the block's rows `br` (a block past the group list returns)
#define GEMM_BLOCK_ROWS(br)                                \
    GemmRows br;                                           \
    if (!gemm_group_rows(tiles, ent, br, W0, W1)) return; \
    (void)m
#else
#define GEMM_GROUP_PARAMS
#define GEMM_BLOCK_ROWS(br) const GemmRows br{int(blockIdx.x) * BM, m - int(blockIdx.x) * BM, nullptr}
#endif

#if MMA == 1 || MMA == 2
// (lo, hi) -> packed pair (bf16 for BF16 weights, else f16), lo in the low 16 bits (both MMA paths)
__device__ __forceinline__ uint32_t pack2(float lo, float hi) { return pack_16x2<WTYPE == BF16>(lo, hi); }
#endif

#if MMA == 3
#include "common/gemm_i8.cuh"
#elif MMA == 2
#include "common/gemm_wgmma.cuh"
#elif MMA
// ------------------------------------------------------------------------------------------
// tensor-core path
#define GEMM_WTM (BM / WARPS_M)  // warp tile rows (activations)
#define GEMM_WTN (BN / WARPS_N)  // warp tile columns (weight rows)
#define GEMM_MT (GEMM_WTM / 16)
#define GEMM_NTL (GEMM_WTN / 8)
#define GEMM_ASYNC_W (WTYPE == F16 || WTYPE == BF16)
#define GEMM_XC (BM * BK / 4 / GEMM_NT)  // 16-byte x chunks per thread per stage
#define GEMM_WC (BN * BK / 8 / GEMM_NT)  // 8-element weight units per thread per stage
static_assert(GEMM_WTM % 16 == 0 && GEMM_WTN % 16 == 0, "warp tile: multiples of 16");
static_assert((BM * BK / 4) % GEMM_NT == 0 && (BN * BK / 8) % GEMM_NT == 0, "tile vs threads");
static_assert(STAGES >= 3, "STAGES >= 3");

#define GEMM_XF_BYTES (BM * BK * 4)
#define GEMM_XH_BYTES (BM * BK * 2)
#define GEMM_WH_BYTES (BN * BK * 2)
#define GEMM_W_SLOTS (GEMM_ASYNC_W ? STAGES : 2)

__device__ __forceinline__ void mma16816(float* c, const uint32_t* a, const uint32_t* b) {
#if WTYPE == BF16
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
#endif
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// Byte offset of 16-byte chunk c (0..3) of row r in a 64-byte-row f16 tile.
__device__ __forceinline__ uint32_t swz(int r, int c) { return uint32_t(r * 64 + ((c ^ ((r >> 1) & 3)) << 4)); }

extern "C" __global__ void __launch_bounds__(GEMM_NT, MIN_BLOCKS)
KERNEL_NAME(const void* w0, const void* w1, const void* w2, const float* b0, const float* b1,
            const float* b2, float* y0, float* y1, float* y2, const float* x,
            const float* resid, int m GEMM_GROUP_PARAMS) {
    JITLLM_DYN_SMEM(uint8_t, smem);
    uint8_t* xf = smem;                                       // STAGES x [BM][BK] f32
    uint8_t* xh = xf + STAGES * GEMM_XF_BYTES;                // 2 x [BM][BK] f16, swizzled
    uint8_t* wh = xh + 2 * GEMM_XH_BYTES;                     // W_SLOTS x [BN][BK] f16, swizzled
    const uint32_t xf_s = smem_addr(xf), xh_s = smem_addr(xh), wh_s = smem_addr(wh);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int tile = blockIdx.y;
    const uint8_t* W0 = static_cast<const uint8_t*>(w0);
    const uint8_t* W1 = static_cast<const uint8_t*>(w1);
    const uint8_t* W2 = static_cast<const uint8_t*>(w2);
    constexpr int NK = COLS / BK;
    GEMM_BLOCK_ROWS(br);

    // this thread's x chunks (row, 4 floats) and weight units (row, 8 elements), fixed over k
    const float* xsrc[GEMM_XC];
    int xbytes[GEMM_XC];
#pragma unroll
    for (int i = 0; i < GEMM_XC; ++i) {
        const int u = tid + GEMM_NT * i, r = u / (BK / 4), c = u % (BK / 4);
        const bool ok = r < br.count;
        xsrc[i] = x + (unsigned long long)(ok ? br.xrow(r) : 0) * COLS + 4 * c;
        xbytes[i] = ok ? 16 : 0;
    }
    const uint8_t* wsrc[GEMM_WC];
#pragma unroll
    for (int i = 0; i < GEMM_WC; ++i) {
        const int u = tid + GEMM_NT * i;
        wsrc[i] = gemm_wrow(W0, W1, W2, tile, u / (BK / 8));
    }

    auto issue = [&](int s) {  // cp.async of K step s into ring slot s % STAGES (one group)
        if (s < NK) {
            const int slot = s % STAGES;
#pragma unroll
            for (int i = 0; i < GEMM_XC; ++i)
                cp_async16(xf_s + slot * GEMM_XF_BYTES + (tid + GEMM_NT * i) * 16, xsrc[i] + s * BK, xbytes[i]);
#if GEMM_ASYNC_W
#pragma unroll
            for (int i = 0; i < GEMM_WC; ++i) {
                const int u = tid + GEMM_NT * i, r = u / (BK / 8), c = u % (BK / 8);
                const uint8_t* src = wsrc[i] ? wsrc[i] + 2 * (s * BK + 8 * c) : W0;
                cp_async16(wh_s + slot * GEMM_WH_BYTES + swz(r, c), src, wsrc[i] ? 16 : 0);
            }
#endif
        }
        cp_async_commit();
    };
    auto convert_x = [&](int s) {  // f32 ring slot of step s -> f16 tile (s & 1)
        const int slot = s % STAGES;
#pragma unroll
        for (int i = 0; i < GEMM_XC; ++i) {
            const int u = tid + GEMM_NT * i, r = u / (BK / 4), c = u % (BK / 4);
            const float4 v = *reinterpret_cast<const float4*>(xf + slot * GEMM_XF_BYTES + u * 16);
            const uint32_t lo = pack2(v.x, v.y), hi = pack2(v.z, v.w);
            asm volatile("st.shared.v2.u32 [%0], {%1, %2};" ::"r"(xh_s + (s & 1) * GEMM_XH_BYTES + swz(r, c >> 1) + (c & 1) * 8),
                         "r"(lo), "r"(hi) : "memory");
        }
    };
#if !GEMM_ASYNC_W
    WRaw wr[GEMM_WC];
    auto wload = [&](int s) {
#pragma unroll
        for (int i = 0; i < GEMM_WC; ++i) {
            const int u = tid + GEMM_NT * i, c = u % (BK / 8);
            if (wsrc[i]) wr[i] = gemm_wload(wsrc[i], s * BK + 8 * c);
        }
    };
    auto wstore = [&](int s) {
#pragma unroll
        for (int i = 0; i < GEMM_WC; ++i) {
            const int u = tid + GEMM_NT * i, r = u / (BK / 8), c = u % (BK / 8);
            float v[8];
            if (wsrc[i]) {
                gemm_wdequant(wr[i], s * BK + 8 * c, v);
            } else {
#pragma unroll
                for (int e = 0; e < 8; ++e) v[e] = 0.0f;
            }
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(wh_s + (s & 1) * GEMM_WH_BYTES + swz(r, c)),
                         "r"(pack2(v[0], v[1])), "r"(pack2(v[2], v[3])), "r"(pack2(v[4], v[5])), "r"(pack2(v[6], v[7]))
                         : "memory");
        }
    };
#endif

    float acc[GEMM_MT][GEMM_NTL][4];
#pragma unroll
    for (int i = 0; i < GEMM_MT; ++i)
#pragma unroll
        for (int j = 0; j < GEMM_NTL; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    // prologue: steps 0 .. STAGES-2 in flight; step 0 converted (and dequantized)
#if !GEMM_ASYNC_W
    wload(0);
#endif
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) issue(s);
    cp_async_wait<STAGES - 2>();
    convert_x(0);
#if !GEMM_ASYNC_W
    wstore(0);
#endif

#pragma unroll 1
    for (int kt = 0; kt < NK; ++kt) {
        cp_async_wait<STAGES - 3>();  // step kt+1 landed (this thread's copies)
        __syncthreads();              // ... everyone's; tiles of step kt visible; step kt-1 done
        issue(kt + STAGES - 1);
#if !GEMM_ASYNC_W
        if (kt + 1 < NK) wload(kt + 1);
#endif
        if (kt + 1 < NK) convert_x(kt + 1);

        const uint32_t xa = xh_s + (kt & 1) * GEMM_XH_BYTES;
        const uint32_t wa = wh_s + (GEMM_ASYNC_W ? (kt % STAGES) : (kt & 1)) * GEMM_WH_BYTES;
#pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) {
            uint32_t a[GEMM_MT][4], b[GEMM_NTL][2];
#pragma unroll
            for (int i = 0; i < GEMM_MT; ++i) {
                const int r = wm * GEMM_WTM + i * 16 + (lane & 15);
                ldsm_x4(a[i], xa + swz(r, 2 * ks + (lane >> 4)));
            }
#pragma unroll
            for (int p = 0; p < GEMM_NTL / 2; ++p) {
                const int r = wn * GEMM_WTN + p * 16 + ((lane >> 4) << 3) + (lane & 7);
                uint32_t t[4];
                ldsm_x4(t, wa + swz(r, 2 * ks + ((lane >> 3) & 1)));
                b[2 * p][0] = t[0];
                b[2 * p][1] = t[1];
                b[2 * p + 1][0] = t[2];
                b[2 * p + 1][1] = t[3];
            }
#pragma unroll
            for (int i = 0; i < GEMM_MT; ++i)
#pragma unroll
                for (int j = 0; j < GEMM_NTL; ++j) mma16816(acc[i][j], a[i], b[j]);
        }
#if !GEMM_ASYNC_W
        if (kt + 1 < NK) wstore(kt + 1);
#endif
    }
    cp_async_wait<0>();

    // epilogue: c0,c1 at (row g, cols 2q, 2q+1), c2,c3 at row g + 8; g = lane / 4, q = lane % 4
#pragma unroll
    for (int i = 0; i < GEMM_MT; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int lr = wm * GEMM_WTM + i * 16 + (lane >> 2) + 8 * h;
            if (lr >= br.count) continue;
            const int mr = br.first + lr;
#if EPI == 2
#pragma unroll
            for (int j = 0; j < GEMM_NTL / 2; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int o = tile * (BN / 2) + wn * GEMM_G + j * 8 + 2 * (lane & 3) + e;
                    if (o < ROWS0)
                        gemm_store_swiglu(y0, b0, b1, mr, o, acc[i][j][2 * h + e], acc[i][j + GEMM_NTL / 2][2 * h + e]);
                }
#else
#pragma unroll
            for (int j = 0; j < GEMM_NTL; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int o = tile * BN + wn * GEMM_WTN + j * 8 + 2 * (lane & 3) + e;
                    if (o < GEMM_TOTAL_ROWS) gemm_store(y0, y1, y2, b0, b1, b2, resid, mr, o, acc[i][j][2 * h + e]);
                }
#endif
        }
    }
    (void)y1; (void)y2; (void)b2; (void)resid; (void)W1; (void)W2;
}

#else
#include "common/gemm_simt.cuh"
#endif
