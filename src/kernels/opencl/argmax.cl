// argmax: the `sample` task on the device (gate sample.argmax=device): picks[row] = the index of
// the largest of row's N logits, the first of equal ones, as cpu::argmax (a NaN is never picked, a
// NaN at index 0 gives 0). In decode `picks` is the Token slot: the next step's token_embd reads
// the pick where it was made (decode steps queued ahead), and 4 bytes cross to the host instead
// of the logits.
// params: N, WG (a power of 2), ROW_STRIDE (floats between batch rows)
// launch: global (WG, rows), local (WG, 1)
// args:   (x, picks)
// bytes:  4 * N a row
// reference: cpu::argmax

#ifndef JITLLM_JIT
#define KERNEL_NAME argmax
#define N 128256
#define WG 256
#endif

#include "common/common.h"

#ifndef ROW_STRIDE
#define ROW_STRIDE N
#endif

// (v, i) rather than (bv, bi): the larger value, the lower index of equal ones; i < 0: none yet
inline bool takes(float v, int i, float bv, int bi) { return i >= 0 && (bi < 0 || v > bv || (v == bv && i < bi)); }

kernel void KERNEL_NAME(const global float* x, global int* picks) {
    local float rv[WG];
    local int ri[WG];
    const int t = (int)get_local_id(0), row = (int)get_group_id(1);
    const global float* r = x + (ulong)row * ROW_STRIDE;
    float bv = 0.0f;
    int bi = -1;
    for (int i = t; i < N; i += WG) {
        const float v = r[i];
        if (!isnan(v) && (bi < 0 || v > bv)) {
            bv = v;
            bi = i;
        }
    }
    rv[t] = bv;
    ri[t] = bi;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (t < s && takes(rv[t + s], ri[t + s], rv[t], ri[t])) {
            rv[t] = rv[t + s];
            ri[t] = ri[t + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0) picks[row] = ri[0] < 0 || isnan(r[0]) ? 0 : ri[0];
}
