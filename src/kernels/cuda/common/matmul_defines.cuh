// Defaults of the defines gemv.cu and gemm.cu share (the scheduler swaps one for the other, so
// both read the same fusion parameters; see gemv.cu's header for their meaning).
#pragma once

#ifndef JITLLM_JIT  // a standalone syntax check's shape (the JIT passes every one of these)
#define COLS 4096
#define ROWS0 4096
#define N_MAT 1
#define EPI 0
#endif
#if !defined(ROWS0) && defined(ROWS)
#define ROWS0 ROWS
#endif
#ifndef ROWS1
#define ROWS1 0
#endif
#ifndef ROWS2
#define ROWS2 0
#endif
#ifndef HAS_BIAS
#define HAS_BIAS 0
#endif
#ifndef RES_SCALE
#define RES_SCALE 1.0f
#endif
#ifndef OUT_SCALE
#define OUT_SCALE 1.0f
#endif
#ifndef UP_OFFSET_ROWS
#define UP_OFFSET_ROWS 0
#endif
#ifndef WSPLIT
#define WSPLIT 0
#endif
