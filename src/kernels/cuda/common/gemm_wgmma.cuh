// gemm.cu's MMA=2 path: Hopper warpgroup MMA (sm_90a only: wgmma does not exist on sm_80/89 and
// sm_100+; the host compiles it with Variant::requires_arch_suffix_a). Included by gemm.cu after
// its shared helpers (gemm_wrow, gemm_store, gemm_store_swiglu); F16 / BF16 weights, and the
// quantized types (Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K) with X_F16=1 (f16 operands).
//
// block: 384 threads = 3 warpgroups. Warpgroup 0 is the producer: it fills a STAGES-deep ring
// of (x tile [BM=128][64] 16-bit, W tile [BN][64] 16-bit) in shared memory, every row 128
// bytes with the 128-byte swizzle (16-byte chunk c of row r at chunk c ^ (r & 7), tiles
// 1024-aligned), which is what wgmma's shared-memory descriptors read:
//   - F16/BF16 weights: cp.async 16 bytes (zero-filled past the last row / past COLS),
//     completion signalled with cp.async.mbarrier.arrive.noinc on the stage's `full` barrier;
//   - quantized weights: thread (row group tid / 8, chunk c = tid % 8) owns 8 elements of BN/16
//     rows per K step; their raw words are loaded with ld.global.nc (gemm_wload) two K steps
//     ahead into two register sets (one, i.e. one step ahead, at BN=256 and for K-quants at
//     BN=128: registers),
//     dequantized to f16 (g2_wdeq: Q8_0/Q4_0/Q5_0 with f16x2 arithmetic, exact int -> f16 via
//     the 1024 + n bit trick, then one rounding of d * n; others in f32 then rounded once) and
//     stored with st.shared.v4 into the same swizzled slot, then fence.proxy.async +
//     mbarrier.arrive on `full` (the x copies arrive with noinc: 256 arrivals per stage);
//   - x, X_F16=1 (x is 16-bit [m, COLS], f16 for F16/quantized weights, bf16 for BF16):
//     cp.async as W;
//   - x, f32 (F16/BF16 only): ld.global of float4 two K steps ahead (two register sets; one at
//     BN=256), rounded to f16/bf16 and stored with st.shared, then fence.proxy.async +
//     mbarrier.arrive on `full`.
// Warpgroups 1 and 2 are consumers, 64 activation rows each x all BN weight rows: per K step
// of 64 they wait on `full`, issue 4 x wgmma.mma_async m64nBNk16 (f32 += f16 x f16, or bf16),
// commit, wait until the previous step's group is done and release that step's stage (lane 0
// of each warp arrives on `empty`, count 8). The producer waits on `empty` before reusing a
// stage. Accumulators: BN / 2 f32 per thread (row 16 * warp + lane / 4 (+8), columns
// 8 j + 2 (lane % 4) (+1), as mma.sync's m16n8 tiles); the epilogue is the MMA=1 one.
// EPI=2: a tile's BN columns are BN/2 gate rows then the same BN/2 up rows (GEMM_G = BN / 2).
// smem: 1024 (alignment slack) + STAGES * (BM + BN) * 128 + 16 * STAGES bytes
//       (STAGES 4, BN 128: 132 KiB; BN 256: 196 KiB).
#pragma once

#define G2_ASYNC_W (WTYPE == F16 || WTYPE == BF16)
static_assert(G2_ASYNC_W || (X_F16 && WTYPE != F32), "MMA=2: F16/BF16 weights, or quantized weights with X_F16=1");
static_assert(BM == 128, "MMA=2: BM = 128 (two consumer warpgroups x 64 rows)");
static_assert(BN == 64 || BN == 128 || BN == 256, "MMA=2: BN in {64, 128, 256}");
static_assert(STAGES >= 2, "MMA=2: STAGES >= 2");
static_assert(G2_PW == 1 || G2_PW == 2, "MMA=2: 1 or 2 producer warpgroups");
static_assert(GEMM_NT == 128 * (2 + G2_PW), "MMA=2: GEMM_NT = 128 * (2 + G2_PW)");

#if WTYPE == BF16
#define GEMM_AB "bf16"
#else
#define GEMM_AB "f16"
#endif
#define G2_A_BYTES (BM * 128)
#define G2_B_BYTES (BN * 128)
#define G2_STAGE_BYTES (G2_A_BYTES + G2_B_BYTES)
// producer warpgroups (host: GemmSpec::producers): 2 for quantized weights on the register
// path (the dequantization is the producer's limit), else 1; GEMM_NT = 128 * (2 + G2_PW)
#ifndef G2_PW
#define G2_PW 1
#endif
#define G2_PT (128 * G2_PW)    // producer threads
#define G2_PROWS (G2_PT / 8)   // tile rows covered by one pass of the producers (8 chunks a row)
#define G2_WC (BN * 8 / G2_PT)   // 16-byte weight chunks per producer thread per stage
#define G2_XC (BM * 8 / G2_PT)   // 16-byte x chunks (X_F16)
#define G2_XF (BM * 16 / G2_PT)  // float4 x chunks (f32 x)
#define G2_NK ((COLS + 63) / 64)
// 32-element-block quants with 4-aligned rows (COLS % 64 == 0): the raw bytes of each K step
// (2 blocks per row, G2_RB bytes) go through a G2_RS-deep smem ring filled by 4-byte cp.async
#define G2_RAW ((WTYPE == Q8_0 || WTYPE == Q4_0 || WTYPE == Q4_1 || WTYPE == Q5_0 || WTYPE == Q5_1) && COLS % 64 == 0 && !WSPLIT)
#define G2_RB (2 * QK_BYTES(WTYPE))
#ifndef G2_RS
#define G2_RS 4
#endif
// quantized weights: raw register sets in flight (one at BN=256, and for K-quants at BN=128)
#ifndef G2_WSETS
#define G2_WSETS ((BN == 256 || (BN == 128 && (WTYPE == Q4_K || WTYPE == Q5_K || WTYPE == Q6_K))) ? 1 : 2)
#endif

// mbar_* and fence_proxy_async: common/async_copy.cuh
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

// K-major operand, 128-byte swizzle: start address, leading byte offset unused (1), stride
// byte offset 1024 (8 rows of 128 bytes), layout type 1 (SWIZZLE_128B). PRECOND: the tile is
// 1024-aligned; a k16 step inside the 64-wide row advances the start address by 32 bytes.
__device__ __forceinline__ uint64_t g2_desc(uint32_t saddr) {
    return uint64_t((saddr & 0x3FFFFu) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

#if !G2_ASYNC_W
// (1024 + byte) pairs as f16 (exact), minus `off2` (exact: small integers), times d2: one
// rounding of the exact product d * n, the same f16 value as the f32 path's pack2(d * n).
__device__ __forceinline__ uint32_t g2_h2(uint32_t w, uint32_t sel, uint32_t off2, uint32_t d2) {
    const uint32_t h = __byte_perm(w, 0x64646464u, sel);
    uint32_t r;
    asm("{ .reg .b32 t; sub.rn.f16x2 t, %1, %2; mul.rn.f16x2 %0, t, %3; }" : "=r"(r) : "r"(h), "r"(off2), "r"(d2));
    return r;
}
#if G2_RAW
__device__ __forceinline__ uint32_t g2_s16(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }
__device__ __forceinline__ uint32_t g2_s32(const uint8_t* p) { return g2_s16(p) | (g2_s16(p + 2) << 16); }
// gemm_wload for a raw K step of one row in shared memory (k = 0..63 within the step)
__device__ __forceinline__ WRaw g2_rload(const uint8_t* row, int k) {
    WRaw r;
    r.a = make_uint4(0, 0, 0, 0);
    r.b = make_uint4(0, 0, 0, 0);
    r.q2 = 0;
    const uint8_t* blk = row + (k >> 5) * QK_BYTES(WTYPE);
    const int j = k & 31;
#if WTYPE == Q8_0
    r.d = g2_s16(blk);
    r.a.x = g2_s32(blk + 2 + j);
    r.a.y = g2_s32(blk + 6 + j);
#elif WTYPE == Q4_0 || WTYPE == Q4_1
    constexpr int QS = WTYPE == Q4_0 ? 2 : 4;
    r.d = WTYPE == Q4_0 ? g2_s16(blk) : g2_s32(blk);
    r.a.x = g2_s32(blk + QS + (j & 15));
    r.a.y = g2_s32(blk + QS + (j & 15) + 4);
#else
    constexpr int QH = WTYPE == Q5_0 ? 2 : 4;
    r.d = WTYPE == Q5_0 ? g2_s16(blk) : g2_s32(blk);
    r.q2 = g2_s32(blk + QH);
    r.a.x = g2_s32(blk + QH + 4 + (j & 15));
    r.a.y = g2_s32(blk + QH + 8 + (j & 15));
#endif
    return r;
}
#endif
// The 8 weights k..k+7 of a gemm_wload unit as 4 packed f16 pairs (element k in the low half
// of .x).
__device__ __forceinline__ uint4 g2_wdeq(const WRaw& r, int k) {
#if WTYPE == Q8_0 || WTYPE == Q4_0 || WTYPE == Q5_0
    uint32_t w0, w1, off2;
#if WTYPE == Q8_0
    w0 = r.a.x ^ 0x80808080u;  // q + 128
    w1 = r.a.y ^ 0x80808080u;
    off2 = 0x64806480u;  // 1152 = 1024 + 128
    (void)k;
#else
    const int j = k & 31, sh = (j >> 4) * 4;  // elements 16..31 are the high nibbles
    w0 = (r.a.x >> sh) & 0x0F0F0F0Fu;
    w1 = (r.a.y >> sh) & 0x0F0F0F0Fu;
#if WTYPE == Q5_0
    const uint32_t hb = r.q2 >> j;
    w0 |= (((hb & 0xFu) * 0x00204081u) & 0x01010101u) << 4;
    w1 |= ((((hb >> 4) & 0xFu) * 0x00204081u) & 0x01010101u) << 4;
    off2 = 0x64106410u;  // 1040 = 1024 + 16
#else
    off2 = 0x64086408u;  // 1032 = 1024 + 8
#endif
#endif
    const uint32_t d2 = (r.d & 0xFFFFu) * 0x10001u;
    return make_uint4(g2_h2(w0, 0x5140u, off2, d2), g2_h2(w0, 0x7362u, off2, d2),
                      g2_h2(w1, 0x5140u, off2, d2), g2_h2(w1, 0x7362u, off2, d2));
#else
    float v[8];
    gemm_wdequant(r, k, v);
    return make_uint4(pack2(v[0], v[1]), pack2(v[2], v[3]), pack2(v[4], v[5]), pack2(v[6], v[7]));
#endif
}
#endif

// d[BN/2] += A (64 x 16, descriptor da) * B (16 x BN, K-major, descriptor db)
__device__ __forceinline__ void wgmma_n64(float* d, uint64_t da, uint64_t db) {
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %34, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32." GEMM_AB "." GEMM_AB " "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0; }"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_n128(float* d, uint64_t da, uint64_t db) {
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %66, 0; wgmma.mma_async.sync.aligned.m64n128k16.f32." GEMM_AB "." GEMM_AB " "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0; }"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_n256(float* d, uint64_t da, uint64_t db) {
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %130, 0; wgmma.mma_async.sync.aligned.m64n256k16.f32." GEMM_AB "." GEMM_AB " "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0; }"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db), "r"(1));
}

__device__ __forceinline__ void g2_mma(float* acc, uint64_t da, uint64_t db) {
#if BN == 64
    wgmma_n64(acc, da, db);
#elif BN == 128
    wgmma_n128(acc, da, db);
#else
    wgmma_n256(acc, da, db);
#endif
}
// The producer's K loop over the block's nk steps k0 .. k0 + nk - 1 (all G2_NK without split-K):
// step(kt, slot, sb, set) fills ring slot `slot` = (kt - k0) % STAGES (shared address sb) once its
// consumers have released it; load(set, kt) fetches step kt's register inputs (N values of T)
// ahead. SETS 0: no register inputs (step gets null); 1: one set, reloaded after each step; 2: two
// sets in turn, so step kt + 2's loads are in flight during kt + 1.
template <int SETS, typename T, int N, typename Load, typename Step>
__device__ __forceinline__ void g2_produce(uint32_t base, uint32_t empty, int k0, int nk, Load load, Step step) {
    auto fill = [&](int j, const T* set) {
        const int slot = j % STAGES;
        const uint32_t sb = base + slot * G2_STAGE_BYTES;
        if (j >= STAGES) mbar_wait(empty + 8 * slot, ((j / STAGES) + 1) & 1);
        step(k0 + j, slot, sb, set);
    };
    if constexpr (SETS == 0) {
#pragma unroll 1
        for (int j = 0; j < nk; ++j) fill(j, static_cast<const T*>(nullptr));
        (void)load;
    } else if constexpr (SETS == 1) {
        T a[N];
        load(a, k0);
#pragma unroll 1
        for (int j = 0; j < nk; ++j) {
            fill(j, a);
            if (j + 1 < nk) load(a, k0 + j + 1);
        }
    } else {
        T a[N], b[N];
        load(a, k0);
        if (nk > 1) load(b, k0 + 1);
#pragma unroll 1
        for (int j = 0; j < nk; j += 2) {
            fill(j, a);
            if (j + 2 < nk) load(a, k0 + j + 2);
            if (j + 1 < nk) {
                fill(j + 1, b);
                if (j + 3 < nk) load(b, k0 + j + 3);
            }
        }
    }
}
// keeps the compiler from moving accumulator accesses across wgmma issue / wait
__device__ __forceinline__ void g2_fence_acc(float* acc) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) asm volatile("" : "+f"(acc[i])::"memory");
}

#if SPLIT_K
// Split-K: the consumers of block (x, y, z) hold the partial sums of K steps k0 .. k0 + nk - 1.
// Each thread whose rows (r, r + 8 of its 16-row group) start below the tile's `rows` stores its
// BN / 2 partials in ws at [tile (x, y)][z][consumer thread]; after a fence and the consumers'
// barrier one thread counts the block in ctr[tile]. The block that counts last sums every split's
// partials in z order (the same order whichever block is last: deterministic), resets the counter
// for the next launch and returns true (it stores the tile); the others return false.
// ws: gridDim.x * gridDim.y * gridDim.z * 256 * (BN / 2) floats; ctr: gridDim.x * gridDim.y ints, 0.
__device__ __forceinline__ bool g2_split_sum(float* acc, float* ws, int* ctr, int rows, int r) {
    __shared__ int last;
    const int ct = threadIdx.x - G2_PT;  // consumer thread 0 .. 255
    const unsigned t = blockIdx.x * gridDim.y + blockIdx.y;
    constexpr int PER = BN / 2;
    const bool live = r < rows;
    float* mine = ws + ((size_t(t) * gridDim.z + blockIdx.z) * 256 + ct) * PER;
    if (live) {
#pragma unroll
        for (int i = 0; i < PER; i += 4)
            __stcg(reinterpret_cast<float4*>(mine + i), make_float4(acc[i], acc[i + 1], acc[i + 2], acc[i + 3]));
    }
    __threadfence();
    asm volatile("bar.sync 2, 256;" ::: "memory");  // the consumers' stores are out
    if (ct == 0) last = atomicAdd(ctr + t, 1) == int(gridDim.z) - 1;
    asm volatile("bar.sync 2, 256;" ::: "memory");
    if (!last) return false;
    __threadfence();
    if (live) {
#pragma unroll
        for (int i = 0; i < PER; ++i) acc[i] = 0.0f;
        for (unsigned z = 0; z < gridDim.z; ++z) {
            const float* part = ws + ((size_t(t) * gridDim.z + z) * 256 + ct) * PER;
#pragma unroll
            for (int i = 0; i < PER; i += 4) {
                const float4 v = __ldcg(reinterpret_cast<const float4*>(part + i));
                acc[i] += v.x;
                acc[i + 1] += v.y;
                acc[i + 2] += v.z;
                acc[i + 3] += v.w;
            }
        }
    }
    if (ct == 0) ctr[t] = 0;
    return true;
}
#endif

// The kernel's body for K steps k0 .. k0 + nk - 1. SPLIT false: the whole K (k0 0, nk G2_NK as
// constants, the code of a kernel without split-K); true: a split's share, then g2_split_sum.
template <bool SPLIT>
__device__ __forceinline__ void g2_gemm(const void* w0, const void* w1, const void* w2, const float* b0,
                                        const float* b1, const float* b2, float* y0, float* y1, float* y2,
                                        const float* x, const float* resid, int m, int split_k0, int split_nk,
                                        float* ws, int* ctr) {
    JITLLM_DYN_SMEM(uint8_t, smem);
    const uint32_t base = (smem_addr(smem) + 1023u) & ~1023u;  // stage s: x tile, then W tile
    const uint32_t full = base + STAGES * G2_STAGE_BYTES;     // full[s] = full + 8 s
    const uint32_t empty = full + 8 * STAGES;                 // empty[s] = empty + 8 s
    const int tid = threadIdx.x;
    const int m0 = blockIdx.x * BM, tile = blockIdx.y;
    const int k0 = SPLIT ? split_k0 : 0, nk = SPLIT ? split_nk : G2_NK;
    (void)ws, (void)ctr;
    const uint8_t* W0 = static_cast<const uint8_t*>(w0);
    const uint8_t* W1 = static_cast<const uint8_t*>(w1);
    const uint8_t* W2 = static_cast<const uint8_t*>(w2);
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, X_F16 && G2_ASYNC_W ? G2_PT : 2 * G2_PT);  // producer threads: cp.async, + stores
            mbar_init(empty + 8 * s, 8);                 // consumer warps
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (tid < G2_PT) {
        // --------------------------------------------------------------- producer warpgroup(s)
        const int c = tid & 7;  // 16-byte chunk (8 elements) of the 64-wide K step
        const uint8_t* wsrc[G2_WC];
#pragma unroll
        for (int i = 0; i < G2_WC; ++i) wsrc[i] = gemm_wrow(W0, W1, W2, tile, (tid >> 3) + G2_PROWS * i);
#if G2_ASYNC_W
        auto issue_w = [&](int kt, uint32_t sb) {
            const int k = kt * 64 + 8 * c;
#pragma unroll
            for (int i = 0; i < G2_WC; ++i) {
                const int r = (tid >> 3) + G2_PROWS * i;
                const bool ok = wsrc[i] != nullptr && k < COLS;
                cp_async16(sb + G2_A_BYTES + r * 128 + ((c ^ (r & 7)) << 4), ok ? wsrc[i] + 2 * k : W0, ok ? 16 : 0);
            }
        };
#endif
#if X_F16 && !G2_RAW
        // 16-bit x: step kt's x tile by cp.async (zero-filled past m and COLS)
        auto issue_x = [&](int kt, uint32_t sb) {
            const uint8_t* X = reinterpret_cast<const uint8_t*>(x);
            const int k = kt * 64 + 8 * c;
#pragma unroll
            for (int i = 0; i < G2_XC; ++i) {
                const int r = (tid >> 3) + G2_PROWS * i;
                const bool ok = m0 + r < m && k < COLS;
                cp_async16(sb + r * 128 + ((c ^ (r & 7)) << 4),
                           ok ? X + 2 * ((unsigned long long)(m0 + r) * COLS + k) : X, ok ? 16 : 0);
            }
        };
#endif
#if G2_RAW
        // raw ring: step kt's G2_RB bytes of each of the BN rows, copied 4 bytes at a time by
        // consecutive threads (one commit group per step), shared by the producers after a
        // named barrier; the x copies of a step join the next raw group (tracked by `full`)
        const uint8_t* X = reinterpret_cast<const uint8_t*>(x);
        const uint32_t raw_s = (empty + 8 * STAGES + 15u) & ~15u;
        const uint8_t* raw_g = smem + (raw_s - smem_addr(smem));
        auto issue_raw = [&](int kt) {
            if (kt < k0 + nk) {
                const uint32_t rb = raw_s + (kt % G2_RS) * (BN * G2_RB);
#pragma unroll 4
                for (int u = tid; u < BN * G2_RB / 4; u += G2_PT) {
                    const int r = u / (G2_RB / 4), wi = u % (G2_RB / 4);
                    const uint8_t* row = gemm_wrow(W0, W1, W2, tile, r);
                    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(rb + 4 * u),
                                 "l"(row ? row + (unsigned long long)kt * G2_RB + 4 * wi : W0), "r"(row ? 4 : 0) : "memory");
                }
            }
            asm volatile("cp.async.commit_group;" ::: "memory");
        };
#pragma unroll 1
        for (int s = 0; s < G2_RS - 1; ++s) issue_raw(k0 + s);
        auto step = [&](int kt, int slot, uint32_t sb, const uint4*) {  // (no register inputs)
            const int k = kt * 64 + 8 * c;
#pragma unroll
            for (int i = 0; i < G2_XC; ++i) {
                const int r = (tid >> 3) + G2_PROWS * i;
                const bool ok = m0 + r < m;
                cp_async16(sb + r * 128 + ((c ^ (r & 7)) << 4),
                           ok ? X + 2 * ((unsigned long long)(m0 + r) * COLS + k) : X, ok ? 16 : 0);
            }
            mbar_arrive_cp_async(full + 8 * slot);
            asm volatile("cp.async.wait_group %0;" ::"n"(G2_RS - 2) : "memory");  // raw step kt landed
            asm volatile("bar.sync 1, %0;" ::"n"(G2_PT) : "memory");  // ... everyone's; raw slot kt-1 free
            issue_raw(kt + G2_RS - 1);
            const uint8_t* rs = raw_g + (kt % G2_RS) * (BN * G2_RB);
#pragma unroll
            for (int i = 0; i < G2_WC; ++i) {
                const int r = (tid >> 3) + G2_PROWS * i;
                const uint4 h = g2_wdeq(g2_rload(rs + r * G2_RB, 8 * c), 8 * c);
                asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(sb + G2_A_BYTES + r * 128 + ((c ^ (r & 7)) << 4)),
                             "r"(h.x), "r"(h.y), "r"(h.z), "r"(h.w) : "memory");
            }
            fence_proxy_async();
            mbar_arrive(full + 8 * slot);
        };
        g2_produce<0, uint4, 1>(base, empty, k0, nk, [](uint4*, int) {}, step);
        (void)wsrc;
#elif !G2_ASYNC_W
        // quantized weights: raw words two K steps ahead in registers (G2_WSETS sets), decoded
        // to f16 and stored swizzled after the x copies of the step are issued
        auto wload = [&](WRaw* wr, int kt) {
            const int k = kt * 64 + 8 * c;
#pragma unroll
            for (int i = 0; i < G2_WC; ++i)
                if (wsrc[i] != nullptr && k < COLS) wr[i] = gemm_wload(wsrc[i], k);
        };
        auto step = [&](int kt, int slot, uint32_t sb, const WRaw* wr) {
            issue_x(kt, sb);
            mbar_arrive_cp_async(full + 8 * slot);
            const int k = kt * 64 + 8 * c;
#pragma unroll
            for (int i = 0; i < G2_WC; ++i) {
                const int r = (tid >> 3) + G2_PROWS * i;
                const uint4 h = (wsrc[i] != nullptr && k < COLS) ? g2_wdeq(wr[i], k) : make_uint4(0, 0, 0, 0);
                asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(sb + G2_A_BYTES + r * 128 + ((c ^ (r & 7)) << 4)),
                             "r"(h.x), "r"(h.y), "r"(h.z), "r"(h.w) : "memory");
            }
            fence_proxy_async();
            mbar_arrive(full + 8 * slot);
        };
        g2_produce<G2_WSETS, WRaw, G2_WC>(base, empty, k0, nk, wload, step);
#elif X_F16
        auto step = [&](int kt, int slot, uint32_t sb, const uint4*) {  // (no register inputs)
            issue_w(kt, sb);
            issue_x(kt, sb);
            mbar_arrive_cp_async(full + 8 * slot);
        };
        g2_produce<0, uint4, 1>(base, empty, k0, nk, [](uint4*, int) {}, step);
#else
        // f32 x: float4 f = tid & 15 of row (tid >> 4) + 8 i; two K steps in flight in registers
        const int f = tid & 15;
        auto load_x = [&](float4* xr, int kt) {
            const int k = kt * 64 + 4 * f;
#pragma unroll
            for (int i = 0; i < G2_XF; ++i) {
                const int r = (tid >> 4) + (G2_PT / 16) * i;
                xr[i] = (m0 + r < m && k < COLS)
                            ? __ldg(reinterpret_cast<const float4*>(x + (unsigned long long)(m0 + r) * COLS + k))
                            : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
        };
        auto step = [&](int kt, int slot, uint32_t sb, const float4* xr) {
            issue_w(kt, sb);
            mbar_arrive_cp_async(full + 8 * slot);
#pragma unroll
            for (int i = 0; i < G2_XF; ++i) {
                const int r = (tid >> 4) + (G2_PT / 16) * i;
                asm volatile("st.shared.v2.u32 [%0], {%1, %2};" ::"r"(sb + r * 128 + ((((f >> 1) ^ (r & 7)) << 4) | ((f & 1) << 3))),
                             "r"(pack2(xr[i].x, xr[i].y)), "r"(pack2(xr[i].z, xr[i].w)) : "memory");
            }
            fence_proxy_async();
            mbar_arrive(full + 8 * slot);
        };
        // (BN 256: the consumers' 128 accumulators leave room for one x set only)
        g2_produce<BN == 256 ? 1 : 2, float4, G2_XF>(base, empty, k0, nk, load_x, step);
#endif
        asm volatile("cp.async.wait_all;" ::: "memory");
        return;
    }

    // -------------------------------------------------------------------- consumer warpgroups
    const int wg = (tid >> 7) - G2_PW, warp = (tid >> 5) & 3, lane = tid & 31;
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
#pragma unroll 1
    for (int j = 0; j < nk; ++j) {
        const int slot = j % STAGES;
        const uint32_t sb = base + slot * G2_STAGE_BYTES;
        mbar_wait(full + 8 * slot, (j / STAGES) & 1);
        fence_proxy_async();
        const uint32_t sa = sb + wg * (64 * 128), sw = sb + G2_A_BYTES;
        g2_fence_acc(acc);
        wg_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) g2_mma(acc, g2_desc(sa + 32 * ks), g2_desc(sw + 32 * ks));
        wg_commit();
        g2_fence_acc(acc);
        wg_wait<1>();  // step j-1's group is done: release its stage
        g2_fence_acc(acc);
        if (j > 0 && lane == 0) mbar_arrive(empty + 8 * ((j - 1) % STAGES));
    }
    wg_wait<0>();
    g2_fence_acc(acc);
#if SPLIT_K
    if constexpr (SPLIT) {
        if (!g2_split_sum(acc, ws, ctr, m - m0, 64 * wg + 16 * warp + (lane >> 2))) return;
    }
#endif

    // epilogue: acc[4 j + 2 h + e] = (row 16 warp + lane / 4 + 8 h, column 8 j + 2 (lane % 4) + e)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int mr = m0 + 64 * wg + 16 * warp + (lane >> 2) + 8 * h;
        if (mr >= m) continue;
#if EPI == 2
#pragma unroll
        for (int j = 0; j < BN / 16; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int o = tile * (BN / 2) + 8 * j + 2 * (lane & 3) + e;
                if (o < ROWS0) gemm_store_swiglu(y0, b0, b1, mr, o, acc[4 * j + 2 * h + e], acc[4 * (j + BN / 16) + 2 * h + e]);
            }
#else
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int o = tile * BN + 8 * j + 2 * (lane & 3) + e;
                if (o < GEMM_TOTAL_ROWS) gemm_store(y0, y1, y2, b0, b1, b2, resid, mr, o, acc[4 * j + 2 * h + e]);
            }
#endif
    }
    (void)y1; (void)y2; (void)b2; (void)resid; (void)W1; (void)W2;
}

extern "C" __global__ void __launch_bounds__(GEMM_NT, MIN_BLOCKS)
KERNEL_NAME(const void* w0, const void* w1, const void* w2, const float* b0, const float* b1,
            const float* b2, float* y0, float* y1, float* y2, const float* x,
            const float* resid, int m
#if SPLIT_K
            , float* ws, int* ctr
#endif
            ) {
#if SPLIT_K
    // split-K (gridDim.z > 1): this block's K steps k0 .. k0 + nk - 1 (the host keeps every split
    // non-empty); a step of more rows (grid.z 1) takes the whole-K code
    if (gridDim.z > 1) {
        const int nks = (G2_NK + int(gridDim.z) - 1) / int(gridDim.z);
        const int k0 = int(blockIdx.z) * nks;
        g2_gemm<true>(w0, w1, w2, b0, b1, b2, y0, y1, y2, x, resid, m, k0, min(G2_NK - k0, nks), ws, ctr);
        return;
    }
#else
    float* const ws = nullptr;
    int* const ctr = nullptr;
#endif
    g2_gemm<false>(w0, w1, w2, b0, b1, b2, y0, y1, y2, x, resid, m, 0, G2_NK, ws, ctr);
}
