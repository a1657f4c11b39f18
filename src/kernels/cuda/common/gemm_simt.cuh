// gemm.cu's MMA=0 path: SIMT f32 FMA tiles for any architecture (gate gemm.mma=simt). Included by
// gemm.cu after its shared helpers (gemm_wrow, gemm_store, gemm_store_swiglu, GEMM_BLOCK_ROWS);
// every define it reads is gemm.cu's.
//
// SIMT path: 256 threads as 16 x 16, each a 4 x 4 block of outputs at rows ty + 16i, columns
// tx + 16j (BM = BN = 64), f32 tiles [BK][BM + 4] and [BK][BN + 4] (k-major), double-buffered
// through registers: the next step's x and weights are loaded before this step's FMAs and stored
// after them.
static_assert(BM == 64 && BN == 64, "SIMT: BM = BN = 64");
#define GEMM_XP (BM + 4)
#define GEMM_WP (BN + 4)
#define GEMM_SX (BM * BK / 4 / 256)  // float4 x chunks per thread: 2
#define GEMM_SW (BN * BK / 8 / 256)  // weight units per thread: 1

extern "C" __global__ void __launch_bounds__(256, MIN_BLOCKS)
KERNEL_NAME(const void* w0, const void* w1, const void* w2, const float* b0, const float* b1,
            const float* b2, float* y0, float* y1, float* y2, const float* x,
            const float* resid, int m GEMM_GROUP_PARAMS) {
    JITLLM_DYN_SMEM(float, smem);
    float* xs = smem;                       // 2 x [BK][XP]
    float* ws = smem + 2 * BK * GEMM_XP;    // 2 x [BK][WP]
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int tile = blockIdx.y;
    const uint8_t* W0 = static_cast<const uint8_t*>(w0);
    const uint8_t* W1 = static_cast<const uint8_t*>(w1);
    const uint8_t* W2 = static_cast<const uint8_t*>(w2);
    constexpr int NK = COLS / BK;
    GEMM_BLOCK_ROWS(br);

    const uint8_t* wsrc[GEMM_SW];
#pragma unroll
    for (int i = 0; i < GEMM_SW; ++i) wsrc[i] = gemm_wrow(W0, W1, W2, tile, (tid + 256 * i) / (BK / 8));
    const float* xsrc[GEMM_SX];  // this thread's x chunks (null past the block's rows), fixed over k
#pragma unroll
    for (int i = 0; i < GEMM_SX; ++i) {
        const int u = tid + 256 * i, r = u / (BK / 4), c = u % (BK / 4);
        xsrc[i] = r < br.count ? x + (unsigned long long)br.xrow(r) * COLS + 4 * c : nullptr;
    }
    float4 xr[GEMM_SX];
    WRaw wr[GEMM_SW];
    auto load = [&](int s) {
#pragma unroll
        for (int i = 0; i < GEMM_SX; ++i)
            xr[i] = xsrc[i] ? __ldg(reinterpret_cast<const float4*>(xsrc[i] + s * BK)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int i = 0; i < GEMM_SW; ++i) {
            const int u = tid + 256 * i, c = u % (BK / 8);
            if (wsrc[i]) wr[i] = gemm_wload(wsrc[i], s * BK + 8 * c);
        }
    };
    auto store = [&](int s) {
        float* xb = xs + (s & 1) * BK * GEMM_XP;
        float* wb = ws + (s & 1) * BK * GEMM_WP;
#pragma unroll
        for (int i = 0; i < GEMM_SX; ++i) {
            const int u = tid + 256 * i, r = u / (BK / 4), c = u % (BK / 4);
            xb[(4 * c + 0) * GEMM_XP + r] = xr[i].x;
            xb[(4 * c + 1) * GEMM_XP + r] = xr[i].y;
            xb[(4 * c + 2) * GEMM_XP + r] = xr[i].z;
            xb[(4 * c + 3) * GEMM_XP + r] = xr[i].w;
        }
#pragma unroll
        for (int i = 0; i < GEMM_SW; ++i) {
            const int u = tid + 256 * i, r = u / (BK / 8), c = u % (BK / 8);
            float v[8];
            if (wsrc[i]) {
                gemm_wdequant(wr[i], s * BK + 8 * c, v);
            } else {
#pragma unroll
                for (int e = 0; e < 8; ++e) v[e] = 0.0f;
            }
#pragma unroll
            for (int e = 0; e < 8; ++e) wb[(8 * c + e) * GEMM_WP + r] = v[e];
        }
    };

    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
    load(0);
    store(0);
#pragma unroll 1
    for (int kt = 0; kt < NK; ++kt) {
        __syncthreads();  // tiles (kt & 1) written; step kt-1's tiles free
        if (kt + 1 < NK) load(kt + 1);
        const float* xb = xs + (kt & 1) * BK * GEMM_XP;
        const float* wb = ws + (kt & 1) * BK * GEMM_WP;
#pragma unroll 8
        for (int k = 0; k < BK; ++k) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = xb[k * GEMM_XP + ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = wb[k * GEMM_WP + tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (kt + 1 < NK) store(kt + 1);
    }

#pragma unroll
    for (int i = 0; i < 4; ++i) {
        if (ty + 16 * i >= br.count) continue;
        const int mr = br.first + ty + 16 * i;
#if EPI == 2
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int o = tile * (BN / 2) + tx + 16 * j;
            if (o < ROWS0) gemm_store_swiglu(y0, b0, b1, mr, o, acc[i][j], acc[i][j + 2]);
        }
#else
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int o = tile * BN + tx + 16 * j;
            if (o < GEMM_TOTAL_ROWS) gemm_store(y0, y1, y2, b0, b1, b2, resid, mr, o, acc[i][j]);
        }
#endif
    }
    (void)y1; (void)y2; (void)b2; (void)resid; (void)W1; (void)W2;
}
