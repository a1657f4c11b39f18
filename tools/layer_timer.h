// Timing for the standalone microbenchmarks in tools/ (kv_layout_bench.cu, kv_stage_bench.cu):
// one launch per layer over `layers` distinct layers (so L2 holds none of a layer's bytes when it
// comes round again), 2 rounds of warm-up, then 10 timed rounds between two events.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

// Prints `name`, microseconds per layer and GB/s for `bytes` read a layer, and the launch status.
template <class Launch>
void time_per_layer(const char* name, int layers, double bytes, Launch launch) {
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int w = 0; w < 2; ++w)
        for (int l = 0; l < layers; ++l) launch(l);
    const int reps = 10;
    cudaEventRecord(e0);
    for (int r = 0; r < reps; ++r)
        for (int l = 0; l < layers; ++l) launch(l);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    const double us = ms * 1000.0 / (reps * layers);
    std::printf("%-44s %8.2f us per layer  %7.1f GB/s  (%s)\n", name, us, bytes / (us * 1e3),
                cudaGetErrorString(cudaGetLastError()));
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
}
