// embed: x[:] = dequant(token_embd row *token_ptr) * EMB_SCALE (token_embd; gemma's sqrt(dim)
// and granite's embedding multiplier are EMB_SCALE). One row of a weight in its GGUF type.
//
// params:
//   WTYPE      weight type (quant_blocks.cuh); D = row length (PRECOND: multiple of the block)
//   N_VOCAB    rows; a token outside [0, N_VOCAB) is clamped (a kernel cannot report errors;
//              the host validates tokens before they reach the device)
//   EMB_SCALE  float multiplier (1.0f: none)
//   BLOCK      threads per block
// PDL:     PDL=1 enables griddepcontrol (common.cuh); default 0
// launch:  grid = ceil(D / BLOCK), block = BLOCK, smem = 0
// args:    (table, token_ptr, x)   x: D floats per row; grid.y = rows (row r: token_ptr[r])
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

static_assert(D % QK_ELEMS(WTYPE) == 0, "D: whole blocks");

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(const void* table, const int* token_ptr, float* x) {
    TRACE_BEGIN();
    pdl_launch_dependents();  // small grid: let the next kernel get scheduled
    pdl_wait();
    const int e = blockIdx.x * BLOCK + threadIdx.x;
    if (e >= D) return;
    const int r = blockIdx.y;  // batch row (decode: 0)
    x += (unsigned long long)r * D;
    const int tok = min(max(token_ptr[r], 0), N_VOCAB - 1);
    constexpr unsigned long long ROW_BYTES = (unsigned long long)(D / QK_ELEMS(WTYPE)) * QK_BYTES(WTYPE);
    const uint8_t* row = static_cast<const uint8_t*>(table) + (unsigned long long)tok * ROW_BYTES;
    x[e] = dequant_elem<WTYPE>(row, e) * (float)(EMB_SCALE);
}
