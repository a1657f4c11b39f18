// gemm.cu MMA=3: integer tensor cores for decode-sized steps (a server's concurrent rows; gate
// batch.imma: 5 .. 64 by default).
// Q4_0 / Q8_0 weights in the split layout (WSPLIT) times x quantized to Q8_0 blocks (convert.cu
// Q8_OUT: each row COLS int8, then COLS / 32 f16 scales), passed through the `x` pointer.
//
// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32: A = 16 weight rows x one 32-column quant block,
// B = the block's 32 columns x 8 activation rows. Each block's exact int32 sums are scaled by the
// weight scale times the activation scale and added in f32, block after block (the arithmetic of
// cpu::matvec's Q8_0-activation dot, up to the order of the f32 additions).
//
// design: a warp owns 16 weight rows (WARPS_N warps side by side: BN = 16 * WARPS_N) and one of
// WARPS_K interleaved shares of each stage's 8 blocks (their sums added through shared memory at
// the end, in warp order). Stages of 256 columns: the tile's weight rows (quants, then the 8 f16
// scales) and the BM activation rows (int8, then 8 f16 scales) arrive by cp.async, STAGES deep.
// Rows are padded in shared memory so that a warp's fragment loads hit 32 distinct banks:
//   Q4_0  weights 144 bytes (128 quants + 16 scales), x 272 (256 + 16): 4-byte loads, 36 / 68 words
//   Q8_0  weights and x 288 (256 + 16 + 16 spare): 8-byte loads (half-warps), 72 words
// A fragment (PTX "Matrix Fragments for mma.m16n8k32", g = lane / 4, t = lane % 4): a0 / a2 row g,
// columns 4t.. / 16 + 4t.., a1 / a3 the same of row g + 8; B: b0 / b1 activation row g, the same
// columns; C: c0, c1 weight row g, activation rows 2t, 2t + 1; c2, c3 weight row g + 8.
//   Q4_0: the u32 at quant byte 4t of a block holds columns 4t..4t+3 (low nibbles) and 16+4t..
//         (high nibbles): a0 and a2 from one load, each nibble minus 8 as a signed byte.
//   Q8_0: the 8 bytes at 8t as a0 / a2 (and x's 8 bytes at 8t as b0 / b1): columns 8t..8t+7 in
//         the k slots 4t.. and 16+4t.. of both operands (any common permutation of a block's
//         columns gives the same sum).
// EPI=2: a warp's 16 rows are 8 gate rows (g) and the same 8 up rows (g + 8), so c0 / c2 are gate
// and up of one output (GEMM_G = 8).
//
// launch: grid = (ceil(m / BM), ceil(weight rows / BN)), block = 32 * WARPS_N * WARPS_K,
//         dynamic smem = max(STAGES * (BN * I8_WS + R * I8_XS), (WARPS_K - 1) * WARPS_N * 32 * R / 2 * 4)
//         for R = min(m, BM) rounded up to 8 (a stage holds the rows the step has:
//         gemm_i8_smem_rows; fewer rows, more blocks an SM)
// registers: BM / 2 f32 accumulators a thread

#define I8_QB (WTYPE == Q4_0 ? 128 : 256)      // quant bytes of a row's 256-column stage
#define I8_WS (WTYPE == Q4_0 ? 144 : 288)      // shared-memory bytes of a weight row's stage
#define I8_XS (WTYPE == Q4_0 ? 272 : 288)      // ... of an activation row's stage
#define I8_WCH (I8_QB / 16 + 1)                // 16-byte copies of a weight row's stage
#define I8_XCH 17                              // ... of an activation row's stage
#define I8_COPIES (BN * I8_WCH + BM * I8_XCH)
#define I8_CPT ((I8_COPIES + GEMM_NT - 1) / GEMM_NT)  // copies a thread issues per stage
#define I8_NT (BM / 8)                         // n tiles of 8 activation rows
#define I8_KB (8 / WARPS_K)                    // blocks a warp takes per stage
#define I8_XROW (COLS + COLS / 16)             // bytes of an activation row in global memory
static_assert(WTYPE == Q4_0 || WTYPE == Q8_0, "MMA=3: Q4_0 or Q8_0 weights");
static_assert(WSPLIT && COLS % 256 == 0, "MMA=3: the split layout, COLS a multiple of 256");
static_assert(BM % 8 == 0 && BM >= 8 && BM <= 64, "MMA=3: BM 8 .. 64, a multiple of 8");
static_assert(WARPS_K == 1 || WARPS_K == 2 || WARPS_K == 4 || WARPS_K == 8, "MMA=3: WARPS_K 1, 2, 4 or 8");
static_assert(STAGES >= 2, "MMA=3: STAGES >= 2");
static_assert(!GROUPED, "MMA=3: not grouped");

// the int8 product of one 16 x 32 by 32 x 8 pair, from zero
__device__ __forceinline__ void mma_i8(int* c, const uint32_t* a, const uint32_t* b) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%10, %10, %10, %10};"
                 : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(0));
}
// four nibbles (one per byte, 0..15) -> four signed bytes nibble - 8: each byte as 128 + n, minus 8
// (no borrow crosses a byte), then the top bit flipped back
__device__ __forceinline__ uint32_t q4_s8(uint32_t n) { return ((n | 0x80808080u) - 0x08080808u) ^ 0x80808080u; }
// an exact int32 (|v| < 2^22: a block's sum is at most 32 * 128 * 127) as a float by its mantissa
__device__ __forceinline__ float i8_sum_f(int v) { return __int_as_float(v + 0x4B400000) - 12582912.0f; }
__device__ __forceinline__ float smem_f16(const uint8_t* p) { return f16_to_f32(*reinterpret_cast<const uint16_t*>(p)); }

extern "C" __global__ void __launch_bounds__(GEMM_NT, MIN_BLOCKS)
KERNEL_NAME(const void* w0, const void* w1, const void* w2, const float* b0, const float* b1,
            const float* b2, float* y0, float* y1, float* y2, const float* x,
            const float* resid, int m) {
    JITLLM_DYN_SMEM(uint8_t, smem);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wn = warp % WARPS_N, wk = warp / WARPS_N;
    const int g = lane >> 2, t = lane & 3;
    const int tile = blockIdx.y;
    const int first = int(blockIdx.x) * BM;
    const int mb = min(BM, m - first);  // the block's activation rows
    const uint8_t* W0 = static_cast<const uint8_t*>(w0);
    const uint8_t* W1 = static_cast<const uint8_t*>(w1);
    const uint8_t* W2 = static_cast<const uint8_t*>(w2);
    const uint8_t* X = reinterpret_cast<const uint8_t*>(x);
    constexpr int NK = COLS / 256;

    // this thread's copies, fixed over the stages: source (null: none), its step per stage and
    // its place in a stage
    const uint8_t* src[I8_CPT];
    int step[I8_CPT];
    uint32_t dst[I8_CPT];
#pragma unroll
    for (int i = 0; i < I8_CPT; ++i) {
        const int c = tid + GEMM_NT * i;
        src[i] = nullptr;
        step[i] = 0;
        dst[i] = 0;
        if (c < BN * I8_WCH) {
            const int r = c / I8_WCH, ch = c % I8_WCH;
            const uint8_t* row = gemm_wrow(W0, W1, W2, tile, r);
            if (row) {
                const bool sc = ch == I8_WCH - 1;  // the stage's 8 scales after the quants
                src[i] = row + (sc ? COLS / 32 * (QK_BYTES(WTYPE) - 2) : 16 * ch);
                step[i] = sc ? 16 : I8_QB;
                dst[i] = uint32_t(r * I8_WS + 16 * ch);
            }
        } else if (c < I8_COPIES) {
            const int u = c - BN * I8_WCH, r = u / I8_XCH, ch = u % I8_XCH;
            if (r < mb) {
                const bool sc = ch == I8_XCH - 1;
                src[i] = X + (unsigned long long)(first + r) * I8_XROW + (sc ? COLS : 16 * ch);
                step[i] = sc ? 16 : 256;
                dst[i] = uint32_t(BN * I8_WS + r * I8_XS + 16 * ch);
            }
        }
    }
    const int nt = (mb + 7) / 8;  // n tiles holding activation rows
    const int stage = BN * I8_WS + 8 * nt * I8_XS;  // a stage's bytes: the weight rows, the tile's rows
    const uint32_t ring = smem_addr(smem);
    auto issue = [&](int s) {  // stage s into ring slot s % STAGES (one commit group, maybe empty)
        if (s < NK) {
            const uint32_t base = ring + uint32_t((s % STAGES) * stage);
#pragma unroll
            for (int i = 0; i < I8_CPT; ++i)
                if (src[i]) cp_async16(base + dst[i], src[i] + (unsigned long long)s * step[i], 16);
        }
        cp_async_commit();
    };

    float acc[I8_NT][4];
#pragma unroll
    for (int j = 0; j < I8_NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) issue(s);
#pragma unroll 1
    for (int kt = 0; kt < NK; ++kt) {
        cp_async_wait<STAGES - 2>();  // stage kt landed (this thread's copies)
        __syncthreads();              // ... everyone's; slot (kt - 1) % STAGES is free again
        issue(kt + STAGES - 1);
        const uint8_t* ws = smem + (kt % STAGES) * stage;
        const uint8_t* wr = ws + (wn * 16 + g) * I8_WS;  // weight row g (row g + 8: + 8 * I8_WS)
        const uint8_t* xs = ws + BN * I8_WS;
#pragma unroll
        for (int i = 0; i < I8_KB; ++i) {
            const int kb = wk + WARPS_K * i;
            uint32_t a[4];
#if WTYPE == Q4_0
            const uint32_t q0 = *reinterpret_cast<const uint32_t*>(wr + 16 * kb + 4 * t);
            const uint32_t q1 = *reinterpret_cast<const uint32_t*>(wr + 8 * I8_WS + 16 * kb + 4 * t);
            a[0] = q4_s8(q0 & 0x0F0F0F0Fu);
            a[1] = q4_s8(q1 & 0x0F0F0F0Fu);
            a[2] = q4_s8((q0 >> 4) & 0x0F0F0F0Fu);
            a[3] = q4_s8((q1 >> 4) & 0x0F0F0F0Fu);
#else
            const uint2 q0 = *reinterpret_cast<const uint2*>(wr + 32 * kb + 8 * t);
            const uint2 q1 = *reinterpret_cast<const uint2*>(wr + 8 * I8_WS + 32 * kb + 8 * t);
            a[0] = q0.x;
            a[1] = q1.x;
            a[2] = q0.y;
            a[3] = q1.y;
#endif
            const float d0 = smem_f16(wr + I8_QB + 2 * kb), d1 = smem_f16(wr + 8 * I8_WS + I8_QB + 2 * kb);
#pragma unroll
            for (int j = 0; j < I8_NT; ++j) {
                if (j >= nt) break;
                const uint8_t* xr = xs + (8 * j + g) * I8_XS + 32 * kb;  // activation row 8j + g
                uint32_t b[2];
#if WTYPE == Q4_0
                b[0] = *reinterpret_cast<const uint32_t*>(xr + 4 * t);
                b[1] = *reinterpret_cast<const uint32_t*>(xr + 16 + 4 * t);
#else
                const uint2 v = *reinterpret_cast<const uint2*>(xr + 8 * t);
                b[0] = v.x;
                b[1] = v.y;
#endif
                const uint8_t* xd = xs + (8 * j + 2 * t) * I8_XS + 256 + 2 * kb;  // rows 2t, 2t + 1's scales
                const float e0 = smem_f16(xd), e1 = smem_f16(xd + I8_XS);
                int c[4];
                mma_i8(c, a, b);
                acc[j][0] = fmaf(d0 * e0, i8_sum_f(c[0]), acc[j][0]);
                acc[j][1] = fmaf(d0 * e1, i8_sum_f(c[1]), acc[j][1]);
                acc[j][2] = fmaf(d1 * e0, i8_sum_f(c[2]), acc[j][2]);
                acc[j][3] = fmaf(d1 * e1, i8_sum_f(c[3]), acc[j][3]);
            }
        }
    }
    cp_async_wait<0>();

#if WARPS_K > 1
    // the K shares of warps wk > 0 added to warp wk = 0's, in warp order
    __syncthreads();
    float* red = reinterpret_cast<float*>(smem);  // [WARPS_K - 1][WARPS_N][nt * 4][32]
    if (wk > 0) {
#pragma unroll
        for (int j = 0; j < I8_NT; ++j) {
            if (j >= nt) break;
#pragma unroll
            for (int e = 0; e < 4; ++e) red[(((wk - 1) * WARPS_N + wn) * nt * 4 + 4 * j + e) * 32 + lane] = acc[j][e];
        }
    }
    __syncthreads();
    if (wk > 0) return;
#pragma unroll 1
    for (int q = 1; q < WARPS_K; ++q)
#pragma unroll
        for (int j = 0; j < I8_NT; ++j) {
            if (j >= nt) break;
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[j][e] += red[(((q - 1) * WARPS_N + wn) * nt * 4 + 4 * j + e) * 32 + lane];
        }
#endif

    // epilogue: weight rows g, g + 8 of the warp, activation rows 8j + 2t, 8j + 2t + 1
#pragma unroll
    for (int j = 0; j < I8_NT; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int lr = 8 * j + 2 * t + e;
            if (lr >= mb) continue;
            const int mr = first + lr;
#if EPI == 2
            const int o = tile * (BN / 2) + wn * 8 + g;
            if (o < ROWS0) gemm_store_swiglu(y0, b0, b1, mr, o, acc[j][e], acc[j][2 + e]);
#else
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int o = tile * BN + wn * 16 + g + 8 * h;
                if (o < GEMM_TOTAL_ROWS) gemm_store(y0, y1, y2, b0, b1, b2, resid, mr, o, acc[j][2 * h + e]);
            }
#endif
        }
    }
    (void)y1; (void)y2; (void)b2; (void)resid; (void)W1; (void)W2;
}
