// embed: x[:] = dequant(token_embd row *token_ptr) * EMB_SCALE (token_embd; gemma's sqrt(dim)
// and granite's embedding multiplier are EMB_SCALE). One row of a weight in its GGUF type.
//
// params:
//   WTYPE      weight type (quant_blocks.cuh); D = row length (PRECOND: multiple of the block)
//   N_VOCAB    rows; a token outside [0, N_VOCAB) is clamped (a kernel cannot report errors;
//              the host validates tokens before they reach the device)
//   EMB_SCALE  float multiplier (1.0f: none)
//   BLOCK      threads per block
//   XQ_OUT     1 (gate gemv.xq=producer with gemv.xq_norm; decode, one row): the row times nw (the
//              first layer's attn_norm weight) also quantized into xq for the q/k/v gemv (gemv.cu
//              XQ_IN with NORM_IN), each warp's 32 elements one group (common/xq8_group.cuh
//              xq8_group_store_norm); XQ_PLANES: Q4_0's layout. Default 0
// PDL:     PDL=1 enables griddepcontrol (common.cuh); default 0
// launch:  grid = ceil(D / BLOCK), block = BLOCK, smem = 0
// args:    (table, token_ptr, x, nw, xq)   x: D floats per row; grid.y = rows (row r: token_ptr[r]);
//          nw, xq: XQ_OUT only (else null)
// bytes:   row_bytes(WTYPE, D) + D * 4
// reference: dequantize_row (src/quant/quant.h), then * EMB_SCALE
//            test: tests/kernels/embed_test.cpp

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME embed
#define WTYPE Q8_0
#define D 4096
#define N_VOCAB 128256
#define EMB_SCALE 1.0f
#define BLOCK 256
#endif

#include "common/quant_blocks.cuh"
#include "common/xq8_group.cuh"  // XQ_OUT, XQ_PLANES (default 0)

static_assert(D % QK_ELEMS(WTYPE) == 0, "D: whole blocks");
#if XQ_OUT
static_assert(D % 32 == 0 && BLOCK % 32 == 0, "XQ_OUT: whole warps, each a group of 32 elements");
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(const void* table, const int* token_ptr, float* x, const float* nw, uint8_t* xq) {
    pdl_launch_dependents();  // small grid: let the next kernel get scheduled
    pdl_wait();
    const int e = blockIdx.x * BLOCK + threadIdx.x;
    if (e >= D) return;
    const int r = blockIdx.y;  // batch row (decode: 0)
    x += (unsigned long long)r * D;
    const int tok = min(max(token_ptr[r], 0), N_VOCAB - 1);
    constexpr unsigned long long ROW_BYTES = (unsigned long long)(D / QK_ELEMS(WTYPE)) * QK_BYTES(WTYPE);
    const uint8_t* row = static_cast<const uint8_t*>(table) + (unsigned long long)tok * ROW_BYTES;
    const float v = dequant_elem<WTYPE>(row, e) * (float)(EMB_SCALE);
    x[e] = v;
#if XQ_OUT
    xq8_group_store_norm<D, XQ_PLANES>(v, __ldg(nw + e), e / 32, xq, threadIdx.x & 31);
#else
    (void)nw; (void)xq;
#endif
}
