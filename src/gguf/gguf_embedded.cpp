// Registry of GGUF files linked into the binary as data (gguf_reader.h): name -> bytes.
#include <map>
#include <mutex>

#include "gguf/gguf_reader.h"

namespace jitllm {

namespace {

struct Registry {
    std::mutex mu;
    std::map<std::string, std::pair<const uint8_t*, size_t>, std::less<>> files;
};

Registry& registry() {
    static Registry r;
    return r;
}

}  // namespace

void register_embedded_gguf(std::string name, const uint8_t* data, size_t size) {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    r.files[std::move(name)] = {data, size};
}

std::pair<const uint8_t*, size_t> embedded_gguf(const std::string& name) {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    const auto it = r.files.find(name);
    return it == r.files.end() ? std::pair<const uint8_t*, size_t>{nullptr, 0} : it->second;
}

}  // namespace jitllm
