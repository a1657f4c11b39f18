// gemv.cu's x prologue, textually included inside its kernel body after the PDL wait (it uses the
// body's locals: tid, red, x, norm_w, eps, xs, XROWS > 1: nx; with BULK late_fill, with NW_EARLY nw_pre):
// x into shared memory and/or the rms of x, by every block (x is small). XROWS > 1: the block's nx
// activation rows quantized; GEMV_XQ8: x quantized to Q8_0 blocks (XQ_IN: one bulk copy of the
// producer's quantized x); X_SMEM: x as floats; else the rms only. Not a header of its own: no
// #pragma once.
#if XROWS > 1
    // the block's nx activation rows, each quantized as below (row j's copy at j * GEMV_XQB)
    JITLLM_DYN_SMEM(float, xsm);
    xs.q = reinterpret_cast<const uint8_t*>(xsm);
    xs.qd = reinterpret_cast<const float2*>(reinterpret_cast<const uint8_t*>(xsm) + COLS);
    xq8_prologue_rows<COLS, BLOCK, NORM_IN, GEMV_XQB>(x, norm_w, eps, reinterpret_cast<uint8_t*>(xsm), red, nx);
#elif GEMV_XQ8
    // x (normalised) quantized to Q8_0 blocks in shared memory (gemv_dot.cuh); X_SMEM ignored
    JITLLM_DYN_SMEM(float, xsm);
    xs.q = reinterpret_cast<const uint8_t*>(xsm);
    xs.qd = reinterpret_cast<const float2*>(reinterpret_cast<const uint8_t*>(xsm) + COLS);
#if XQ_IN
    // gate gemv.xq=producer: the previous gemv left x quantized in this layout (XQ_OUT), so the
    // prologue is one bulk copy of GEMV_XQB bytes: no loads through registers, no quantization
    {
        constexpr uint32_t XIN_BYTES = (GEMV_XQB + 15) / 16 * 16;
        __shared__ __align__(8) uint64_t xin_bar;
        const uint32_t xb = smem_addr(&xin_bar);
        if (tid == 0) {
            mbar_init(xb, 1);
            mbar_init_fence();
            mbar_arrive_expect_tx(xb, XIN_BYTES);
            bulk_g2s(smem_addr(xsm), x, XIN_BYTES, xb);
        }
#if NORM_IN
        // gemv.xq_norm: the producer quantized x * norm_w; every warp sums the groups' squares (the
        // same bits in each) while the copy is in flight, their loads issued ahead of the late slots
        // (an L2 read queued behind ring copies waits for microseconds: a block trace of 2026-12-03), and
        // each d is scaled by 1 / rms once the copy lands
        const auto xn_sums = xq8_norm_load<COLS>(reinterpret_cast<const uint8_t*>(x));
#endif
#if BULK_PRE < BULK_S && BULK_FILL_AT_LOADS
        late_fill();  // behind x's copy
#endif
#if NORM_IN
        const float inv = xq8_norm_inv<COLS>(xn_sums, eps);
#endif
        __syncthreads();  // the barrier's init before anyone waits on it
        mbar_wait(xb, 0);
#if NORM_IN
        float2* qd = reinterpret_cast<float2*>(reinterpret_cast<uint8_t*>(xsm) + COLS);
        for (int b = tid; b < COLS / 32; b += BLOCK) qd[b].x = xq8_norm_d(qd[b].x, inv);
        __syncthreads();
#endif
    }
#elif BULK && BULK_PRE < BULK_S && BULK_FILL_AT_LOADS
    // the ring's late slots go out as soon as x's loads are (behind them in the memory queues)
    xq8_prologue<COLS, BLOCK, NORM_IN, false>(x, norm_w, eps, reinterpret_cast<uint8_t*>(xsm), red, late_fill GEMV_NW_PRE);
#else
    xq8_prologue<COLS, BLOCK, NORM_IN, false>(x, norm_w, eps, reinterpret_cast<uint8_t*>(xsm), red, NoHook() GEMV_NW_PRE);
#endif
#elif X_SMEM
    JITLLM_DYN_SMEM(float, xsm);
    xs.p = xsm;
    float ss = 0.0f;
    if (COLS % 4 == 0) {  // chunks of loads in flight, as above
        for (int c0 = 0; c0 < GEMV_XT; c0 += GEMV_XC) {
            float4 v[GEMV_XC];
#pragma unroll
            for (int j = 0; j < GEMV_XC; ++j) {
                const int k = (c0 + j) * 4 * BLOCK + 4 * tid;
                if (c0 + j < GEMV_XT && k < COLS) v[j] = ld_act4(x + k);
            }
#pragma unroll
            for (int j = 0; j < GEMV_XC; ++j) {
                const int k = (c0 + j) * 4 * BLOCK + 4 * tid;
                if (c0 + j < GEMV_XT && k < COLS) {
                    *reinterpret_cast<float4*>(xsm + k) = v[j];
                    ss += (v[j].x * v[j].x + v[j].y * v[j].y) + (v[j].z * v[j].z + v[j].w * v[j].w);
                }
            }
        }
    } else {
        for (int k = tid; k < COLS; k += BLOCK) {
            const float v = ld_act(x + k);
            xsm[k] = v;
            ss += v * v;
        }
    }
#if NORM_IN
    // matches cpu::rms_norm: scale = 1 / sqrt(sum(x^2) / n + eps); y = x * scale * w
    const float inv = 1.0f / sqrtf(block_sum<BLOCK>(ss, red) / float(COLS) + eps);
    if (COLS % 4 == 0) {
        for (int c0 = 0; c0 < GEMV_XT; c0 += GEMV_XC) {
            float4 w[GEMV_XC];
#pragma unroll
            for (int j = 0; j < GEMV_XC; ++j) {
                const int k = (c0 + j) * 4 * BLOCK + 4 * tid;
                if (c0 + j < GEMV_XT && k < COLS) w[j] = __ldg(reinterpret_cast<const float4*>(norm_w + k));
            }
#pragma unroll
            for (int j = 0; j < GEMV_XC; ++j) {
                const int k = (c0 + j) * 4 * BLOCK + 4 * tid;
                if (c0 + j < GEMV_XT && k < COLS) {  // this thread wrote these four itself
                    float4 v = *reinterpret_cast<const float4*>(xsm + k);
                    v.x = v.x * inv * w[j].x;
                    v.y = v.y * inv * w[j].y;
                    v.z = v.z * inv * w[j].z;
                    v.w = v.w * inv * w[j].w;
                    *reinterpret_cast<float4*>(xsm + k) = v;
                }
            }
        }
    } else {
        for (int k = tid; k < COLS; k += BLOCK) xsm[k] = xsm[k] * inv * __ldg(norm_w + k);
    }
#else
    (void)ss;
#endif
    __syncthreads();
#else
    xs.p = x;
#if NORM_IN
    float ss = 0.0f;
    for (int k = tid; k < COLS; k += BLOCK) {
        const float v = ld_act(x + k);
        ss += v * v;
    }
    xs.inv = 1.0f / sqrtf(block_sum<BLOCK>(ss, red) / float(COLS) + eps);
#endif
#endif
