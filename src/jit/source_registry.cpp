// Lookup of embedded kernel sources, with the JITLLM_KERNEL_DIR on-disk override.
#include "jit/source_registry.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace jitllm {

std::string kernel_source(const std::string& path) {
    if (const char* dir = std::getenv("JITLLM_KERNEL_DIR"); dir && *dir) {
        std::ifstream f(std::string(dir) + "/" + path, std::ios::binary);
        if (!f) fail("JITLLM_KERNEL_DIR={}: kernel source '{}' not found", dir, path);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    }
    for (size_t i = 0; i < kEmbeddedSourceCount; ++i)
        if (path == kEmbeddedSources[i].path) return kEmbeddedSources[i].text;
    fail("kernel source '{}' is not embedded in this binary", path);
}

std::vector<std::string> kernel_source_paths() {
    std::vector<std::string> v;
    for (size_t i = 0; i < kEmbeddedSourceCount; ++i) v.push_back(kEmbeddedSources[i].path);
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace jitllm
