// Kernel sources embedded at build time (cmake/embed_kernels.cmake). JITLLM_KERNEL_DIR, when
// set, makes lookups read src/kernels/ from disk instead, so a kernel edit needs no rebuild.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace jitllm {

struct EmbeddedSource {
    const char* path;  // relative to src/kernels, e.g. "cuda/rms_norm.cu"
    const char* text;
};
extern const EmbeddedSource kEmbeddedSources[];
extern const size_t kEmbeddedSourceCount;

// Text of a kernel source file ("cuda/rms_norm.cu"); throws Error if absent.
std::string kernel_source(const std::string& path);
// All embedded paths (sorted).
std::vector<std::string> kernel_source_paths();

}  // namespace jitllm
