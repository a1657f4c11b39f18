// embed: x[row][i] = dequant(token_embd row tokens[row])[i] * EMB_SCALE (token_embd).
// params: WTYPE, D (the row's elements), HAS_SCALE (EMB_SCALE != 1: the CPU's multiply)
// launch: global (ceil(D / 64) * 64, rows), local (64, 1)
// args:   (w, tokens, x)   tokens: the Token slot (decode) or Tokens (batch), one int a row
// bytes:  row_bytes(WTYPE, D) + 4 * D a row
// reference: dequantize_row (quant.cpp) then the embedding scale (CpuBackend::run_task)

#ifndef JITLLM_JIT
#define KERNEL_NAME embed
#define WTYPE 8
#define D 4096
#endif

#include "common/quant_blocks.h"

#ifndef HAS_SCALE
#define HAS_SCALE 0
#endif

kernel void KERNEL_NAME(const global uchar* w, const global int* tokens, global float* x) {
    const int i = (int)get_global_id(0), row = (int)get_group_id(1);
    if (i >= D) return;
    float v = dequant_elem(WTYPE, w + (ulong)tokens[row] * ROW_BYTES(WTYPE, D), i);
#if HAS_SCALE
    v = v * EMB_SCALE;
#endif
    x[(ulong)row * D + i] = v;
}
