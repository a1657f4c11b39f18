// On-disk kernel cache (layout and key in disk_cache.h): verified loads, atomic stores.
#include "jit/disk_cache.h"

#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace jitllm {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> read_file(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) return std::nullopt;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void write_file(const fs::path& p, const void* data, size_t n) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    f.close();
    if (!f)
        fail(
            "kernel cache: cannot write {}; hint: set JITLLM_CACHE_DIR to a writable directory "
            "or pass --no-kernel-cache",
            p.string());
}

std::string cubin_line(const std::vector<uint8_t>& cubin) {
    if (cubin.empty()) return "# cubin: none";
    return fmt::format("# cubin: {} bytes, xxh3-64 {:016x}", cubin.size(),
                       XXH3_64bits(cubin.data(), cubin.size()));
}

std::string unique_name() {
    static std::atomic<uint64_t> counter{0};
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    return fmt::format("{}.{:x}.{}.{:x}", getpid(),
                       std::hash<std::thread::id>{}(std::this_thread::get_id()) & 0xffffff,
                       counter++, static_cast<uint64_t>(now) & 0xffffffff);
}

void write_entry(const fs::path& d, const VariantKey& key, const Variant& v, const CacheEntry& e,
                 const CacheLayout& l) {
    std::string opts = fmt::format(
        "# jitllm kernel cache entry, format {}\n# variant: {}\n# key: {}\n# compiler: {}\n{}\n",
        kCacheFormatVersion, v.display_name(), key.hex(), e.compiler, cubin_line(e.cubin));
    for (const std::string& o : e.options) opts += o + "\n";
    write_file(d / l.source_file, e.source.data(), e.source.size());
    write_file(d / "options.txt", opts.data(), opts.size());
    write_file(d / l.log_file, e.log.data(), e.log.size());
    if (!e.cubin.empty()) write_file(d / l.binary_file, e.cubin.data(), e.cubin.size());
}

void make_dirs(const fs::path& d) {
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec)
        fail(
            "kernel cache: cannot create {}: {}; hint: set JITLLM_CACHE_DIR to a writable "
            "directory or pass --no-kernel-cache",
            d.string(), ec.message());
}

}  // namespace

std::string default_cache_dir() {
    if (const char* d = std::getenv("JITLLM_CACHE_DIR"); d && *d) return d;
    if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/jitllm";
    if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/jitllm";
    return (fs::temp_directory_path() / "jitllm-cache").string();
}

DiskCache::DiskCache(CacheOptions opts, CacheLayout layout)
    : enabled_(opts.disk), dir_(opts.dir.empty() ? default_cache_dir() : opts.dir), layout_(layout) {}

std::string DiskCache::entry_dir(const std::string& arch, const Variant& v,
                                 const VariantKey& key) const {
    return (fs::path(dir_) / layout_.backend / arch / (v.flat_name() + "." + key.hex16())).string();
}

std::optional<CacheEntry> DiskCache::load(const std::string& arch, const Variant& v,
                                          const VariantKey& key) const {
    if (!enabled_) return std::nullopt;
    const fs::path d = entry_dir(arch, v, key);
    auto opts = read_file(d / "options.txt");
    if (!opts || opts->find("\n# key: " + key.hex() + "\n") == std::string::npos)
        return std::nullopt;
    auto cubin = read_file(d / layout_.binary_file);
    const size_t magic = std::strlen(layout_.magic);
    if (!cubin || cubin->empty() || cubin->size() < magic || cubin->compare(0, magic, layout_.magic) != 0)
        return std::nullopt;
    CacheEntry e;
    e.cubin.assign(cubin->begin(), cubin->end());
    if (opts->find("\n" + cubin_line(e.cubin) + "\n") == std::string::npos) return std::nullopt;
    e.log = read_file(d / layout_.log_file).value_or("");
    return e;
}

std::string DiskCache::store(const std::string& arch, const Variant& v, const VariantKey& key,
                             const CacheEntry& e) const {
    if (!enabled_) {
        if (!e.cubin.empty()) return "";
        // Only the failure's source and log, so the error message can point at a file.
        const fs::path d = fs::temp_directory_path() / fmt::format("jitllm-{}", getpid()) / layout_.backend /
                           arch / (v.flat_name() + "." + key.hex16());
        make_dirs(d);
        write_entry(d, key, v, e, layout_);
        return d.string();
    }
    const fs::path final_dir = entry_dir(arch, v, key);
    const fs::path tmp = fs::path(dir_) / "tmp" / unique_name();
    make_dirs(tmp);
    make_dirs(final_dir.parent_path());
    write_entry(tmp, key, v, e, layout_);
    std::error_code ec;
    for (int attempt = 0; attempt < 3; ++attempt) {
        fs::rename(tmp, final_dir, ec);
        if (!ec) return final_dir.string();
        // Taken: keep a valid winner; move a failed or corrupt entry aside and retry.
        if (load(arch, v, key)) {
            fs::remove_all(tmp, ec);
            return final_dir.string();
        }
        const fs::path stale = fs::path(dir_) / "tmp" / (unique_name() + ".stale");
        fs::rename(final_dir, stale, ec);
        fs::remove_all(stale, ec);
    }
    fs::remove_all(tmp, ec);
    fail(
        "kernel cache: cannot move an entry into {}; hint: set JITLLM_CACHE_DIR to a writable "
        "directory or pass --no-kernel-cache",
        final_dir.string());
}

}  // namespace jitllm
