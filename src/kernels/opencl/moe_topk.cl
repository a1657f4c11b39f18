// moe_topk: the mixture-of-experts choice of each row (ffn_topk): softmax over the NE router
// logits, the K largest probabilities best first (the lower index first on a tie), renormalised
// to sum 1 with RENORM. One work-item a row: NE is small (the experts of a layer).
// params: NE, K, RENORM, ROUTER_STRIDE (floats between the router's rows)
// launch: global (1, rows), local (1, 1)
// args:   (router, ids, w)   ids / w: K a row
// bytes:  4 * NE + 8 * K a row
// reference: cpu::moe_topk

#ifndef JITLLM_JIT
#define KERNEL_NAME moe_topk
#define NE 64
#define K 8
#endif

#include "common/common.h"

#ifndef RENORM
#define RENORM 0
#endif
#ifndef ROUTER_STRIDE
#define ROUTER_STRIDE NE
#endif

kernel void KERNEL_NAME(const global float* router, global int* ids, global float* w) {
    const int row = (int)get_global_id(1);
    const global float* lg = router + (ulong)row * ROUTER_STRIDE;
    float pr[NE];
    float mx = lg[0];
    for (int e = 1; e < NE; ++e) mx = fmax(mx, lg[e]);
    float sum = 0.0f;
    for (int e = 0; e < NE; ++e) {
        pr[e] = exp(lg[e] - mx);
        sum += pr[e];
    }
    for (int e = 0; e < NE; ++e) pr[e] = pr[e] / sum;
    uint taken[(NE + 31) / 32];
    for (int i = 0; i < (NE + 31) / 32; ++i) taken[i] = 0;
    float ws[K];
    float wsum = 0.0f;
    for (int j = 0; j < K; ++j) {
        int best = -1;
        for (int e = 0; e < NE; ++e)
            if (!((taken[e / 32] >> (e % 32)) & 1) && (best < 0 || pr[e] > pr[best])) best = e;
        taken[best / 32] |= 1u << (best % 32);
        ids[row * K + j] = best;
        ws[j] = pr[best];
        wsum += ws[j];
    }
    for (int j = 0; j < K; ++j) w[row * K + j] = RENORM ? ws[j] / wsum : ws[j];
}
