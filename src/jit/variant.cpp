// Variant naming, source expansion and the cache key (XXH3-128; definition in disk_cache.h).
#include "jit/variant.h"

#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "core/error.h"
#include "jit/disk_cache.h"
#include "jit/source_registry.h"

namespace jitllm {

namespace {

bool is_identifier(const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
}

// `#include "X"` -> X, else "".
std::string quoted_include(const std::string& line) {
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] != '#') return "";
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string::npos || line.compare(i, 7, "include") != 0) return "";
    i = line.find_first_not_of(" \t", i + 7);
    if (i == std::string::npos || line[i] != '"') return "";
    size_t end = line.find('"', i + 1);
    return end == std::string::npos ? "" : line.substr(i + 1, end - i - 1);
}

bool is_pragma_once(const std::string& line) {
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] != '#') return false;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string::npos || line.compare(i, 6, "pragma") != 0) return false;
    i = line.find_first_not_of(" \t", i + 6);
    return i != std::string::npos && line.compare(i, 4, "once") == 0 &&
           line.find_first_not_of(" \t\r", i + 4) == std::string::npos;
}

void expand_into(const std::string& path, const std::string& text, const std::string& backend,
                 std::set<std::string>& seen, int depth, std::string& out) {
    if (depth > 32) fail("{}: #include nesting deeper than 32; is there an include cycle?", path);
    out += fmt::format("#line 1 \"{}\"\n", path);
    size_t pos = 0;
    int line_no = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        const std::string line = text.substr(pos, nl == std::string::npos ? nl : nl - pos);
        pos = nl == std::string::npos ? text.size() : nl + 1;
        ++line_no;
        if (is_pragma_once(line)) {
            out += '\n';  // keeps line numbers
            continue;
        }
        const std::string inc = quoted_include(line);
        if (inc.empty()) {
            out += line;
            out += '\n';
            continue;
        }
        const std::string inc_path = backend + "/" + inc;
        if (seen.insert(inc_path).second) {
            std::string inc_text;
            try {
                inc_text = kernel_source(inc_path);
            } catch (const Error& e) {
                fail("{}:{}: #include \"{}\": {}", path, line_no, inc, e.what());
            }
            expand_into(inc_path, inc_text, backend, seen, depth + 1, out);
        }
        out += fmt::format("#line {} \"{}\"\n", line_no + 1, path);
    }
}

void hash_field(XXH3_state_t* st, const std::string& s) {
    const uint64_t n = s.size();  // little-endian on every platform we build for
    XXH3_128bits_update(st, &n, sizeof(n));
    XXH3_128bits_update(st, s.data(), s.size());
}

}  // namespace

bool Variant::has(const std::string& name) const {
    for (const auto& d : defines)
        if (d.first == name) return true;
    return false;
}

Variant& Variant::set(const std::string& name, const std::string& value) {
    JITLLM_CHECK(is_identifier(name), "define name '{}' is not an identifier", name);
    JITLLM_CHECK(!value.empty() && value.find_first_of(" \t\r\n") == std::string::npos,
                 "define {} has an empty or multi-word value '{}'", name, value);
    for (auto& [k, v] : defines)
        if (k == name) {
            v = value;
            return *this;
        }
    defines.emplace_back(name, value);
    return *this;
}

std::string Variant::display_name() const {
    std::string s = symbol + "<";
    for (size_t i = 0; i < defines.size(); ++i)
        s += fmt::format("{}{}={}", i ? "," : "", defines[i].first, defines[i].second);
    return s + ">";
}

std::string Variant::flat_name() const {
    std::string s = symbol;
    for (const auto& [k, v] : defines) s += "." + k + "-" + v;
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
            c = '_';
    if (s.size() > 120) s.resize(120);
    return s;
}

std::string Variant::target_arch(const std::string& device_arch) const {
    std::string a = arch.empty() ? device_arch : arch;
    if (requires_arch_suffix_a && !a.empty() && a.back() != 'a') a += 'a';
    return a;
}

std::string VariantKey::hex() const {
    return fmt::format("{:016x}{:016x}", hi, lo);
}
std::string VariantKey::hex16() const {
    return fmt::format("{:016x}", hi);
}

std::string expand_source(const Variant& v) {
    const size_t slash = v.source.find('/');
    JITLLM_CHECK(slash != std::string::npos, "variant source '{}' lacks a backend folder",
                 v.source);
    std::set<std::string> seen{v.source};
    std::string out;
    expand_into(v.source, v.source_text.empty() ? kernel_source(v.source) : v.source_text,
                v.source.substr(0, slash), seen, 0, out);
    return out;
}

std::vector<std::string> base_options(const Variant& v, const std::string& arch) {
    JITLLM_CHECK(is_identifier(v.symbol), "kernel symbol '{}' is not an identifier", v.symbol);
    std::vector<std::string> o = {
        "-arch=" + arch, "-default-device",    "-std=c++17",   "-fmad=true",
        "-lineinfo",     "--ptxas-options=-v", "-DJITLLM_JIT", "-DKERNEL_NAME=" + v.symbol};
    o.insert(o.end(), v.extra_options.begin(), v.extra_options.end());
    return o;
}

std::vector<std::string> define_options(const Variant& v) {
    auto sorted = v.defines;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> o;
    for (const auto& [k, val] : sorted) o.push_back("-D" + k + "=" + val);
    return o;
}

std::string unit_source(const Variant& v, const std::string& arch) {
    std::vector<std::string> options = base_options(v, arch);
    for (std::string& d : define_options(v)) options.push_back(std::move(d));
    std::string comment = "// nvrtc options:", defines;
    for (const std::string& o : options) {
        if (o.compare(0, 2, "-D") != 0) {
            comment += " " + o;
            continue;
        }
        const size_t eq = o.find('=');
        defines += eq == std::string::npos ? fmt::format("#define {} 1\n", o.substr(2))  // as -DX
                                           : fmt::format("#define {} {}\n", o.substr(2, eq - 2), o.substr(eq + 1));
    }
    return comment + "\n" + defines + expand_source(v);
}

VariantKey variant_key(const std::string& expanded_source, const Variant& v,
                       const std::string& arch, const std::string& compiler_id) {
    XXH3_state_t* st = XXH3_createState();
    JITLLM_CHECK(st != nullptr, "XXH3_createState failed");
    XXH3_128bits_reset(st);
    auto join = [](const std::vector<std::string>& parts) {
        std::string s;
        for (const std::string& p : parts) s += p + "\n";
        return s;
    };
    hash_field(st, fmt::format("jitllm-jit-v{}", kCacheFormatVersion));
    hash_field(st, expanded_source);
    hash_field(st, join(define_options(v)));
    hash_field(st, join(base_options(v, arch)));
    hash_field(st, "nvrtc " + compiler_id);
    hash_field(st, arch);
    const XXH128_hash_t h = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    return {h.high64, h.low64};
}

}  // namespace jitllm
