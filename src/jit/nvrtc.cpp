// dlopen'ed NVRTC. Types come from <nvrtc.h> (headers only); the entry points have no versioned
// names, so plain dlsym is enough.
#include "jit/nvrtc.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <regex>

#include "core/error.h"

namespace jitllm {

// clang-format off
#define JITLLM_NVRTC_FUNCS(X)                                                                 \
    X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)      \
    X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog)                   \
    X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetPTXSize) X(nvrtcGetPTX)                  \
    X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs)
// clang-format on

struct Nvrtc::Api {
#define JITLLM_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
    JITLLM_NVRTC_FUNCS(JITLLM_NVRTC_MEMBER)
#undef JITLLM_NVRTC_MEMBER
};

namespace {

std::string find_include_dir(const std::string& loaded_from) {
    namespace fs = std::filesystem;
    std::vector<fs::path> dirs;
    if (!loaded_from.empty()) dirs.push_back(fs::path(loaded_from).parent_path() / "../include");
    dirs.push_back("/usr/local/cuda/include");
    for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
        if (const char* v = std::getenv(env); v && *v) dirs.push_back(fs::path(v) / "include");
    std::error_code ec;
    for (const fs::path& d : dirs)
        if (fs::exists(d / "cuda_fp16.h", ec)) return fs::weakly_canonical(d, ec).string();
    return "";
}

}  // namespace

const Nvrtc& Nvrtc::load() {
    static std::once_flag once;
    static Nvrtc* lib = nullptr;
    static std::string error;
    std::call_once(once, [] {
        std::vector<std::string> names;
        if (const char* p = std::getenv("JITLLM_NVRTC_PATH"); p && *p) names.push_back(p);
        for (const char* n :
             {"libnvrtc.so.13", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13",
              "/usr/local/cuda/lib64/libnvrtc.so"})
            names.push_back(n);
        std::string tried;
        void* h = nullptr;
        for (const std::string& n : names) {
            if ((h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
            const char* e = dlerror();
            tried += fmt::format("\n  {}: {}", n, e ? e : "?");
        }
        if (!h) {
            error = fmt::format(
                "cuda backend unavailable: libnvrtc not found (tried:{}); hint: "
                "set JITLLM_NVRTC_PATH to libnvrtc.so.13",
                tried);
            return;
        }
        auto* api = new Api;  // lives for the process, like the dlopen handle
        std::string missing;
#define JITLLM_NVRTC_RESOLVE(name)                                      \
    api->name = reinterpret_cast<decltype(api->name)>(dlsym(h, #name)); \
    if (!api->name) missing += " " #name;
        JITLLM_NVRTC_FUNCS(JITLLM_NVRTC_RESOLVE)
#undef JITLLM_NVRTC_RESOLVE
        Dl_info info{};
        std::string path =
            dladdr(reinterpret_cast<void*>(api->nvrtcVersion), &info) && info.dli_fname
                ? info.dli_fname
                : "";
        if (!missing.empty()) {
            error = fmt::format("cuda backend unavailable: {} lacks{}", path, missing);
            return;
        }
        int major = 0, minor = 0;
        api->nvrtcVersion(&major, &minor);
        lib = new Nvrtc;
        lib->api_ = api;
        lib->version_ = fmt::format("{}.{}", major, minor);
        std::error_code ec;
        const auto size = std::filesystem::file_size(path, ec);
        lib->fingerprint_ = ec ? lib->version_ : fmt::format("{} ({} bytes)", lib->version_, size);
        lib->library_ = path;
        lib->include_dir_ = find_include_dir(path);
    });
    if (!lib) throw Error(Error::Kind::Device, error);
    return *lib;
}

std::vector<int> Nvrtc::supported_archs() const {
    int n = 0;
    if (api_->nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return {};
    std::vector<int> v(n);
    if (api_->nvrtcGetSupportedArchs(v.data()) != NVRTC_SUCCESS) return {};
    return v;
}

NvrtcOutput Nvrtc::compile(const std::string& source, const std::string& file,
                           const std::vector<std::string>& options,
                           const std::vector<NvrtcHeader>& headers, bool want_ptx) const {
    const Api& a = *api_;
    auto check = [&](nvrtcResult r, const char* call) {
        if (r != NVRTC_SUCCESS)
            fail_device("{}: {} (compiling {})", call, a.nvrtcGetErrorString(r), file);
    };
    std::vector<const char*> hdr_text, hdr_name, opts;
    for (const NvrtcHeader& h : headers) {
        hdr_text.push_back(h.text.c_str());
        hdr_name.push_back(h.name.c_str());
    }
    for (const std::string& o : options) opts.push_back(o.c_str());

    nvrtcProgram prog = nullptr;
    check(a.nvrtcCreateProgram(&prog, source.c_str(), file.c_str(),
                               static_cast<int>(headers.size()), hdr_text.data(), hdr_name.data()),
          "nvrtcCreateProgram");
    struct Guard {
        const Api& a;
        nvrtcProgram* p;
        ~Guard() { a.nvrtcDestroyProgram(p); }
    } guard{a, &prog};

    NvrtcOutput out;
    const nvrtcResult r = a.nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
    size_t n = 0;
    check(a.nvrtcGetProgramLogSize(prog, &n), "nvrtcGetProgramLogSize");
    out.log.resize(n);
    if (n) check(a.nvrtcGetProgramLog(prog, out.log.data()), "nvrtcGetProgramLog");
    while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n'))
        out.log.pop_back();
    if (r == NVRTC_ERROR_COMPILATION) return out;  // ok = false, the log says why
    check(r, "nvrtcCompileProgram");

    check(a.nvrtcGetCUBINSize(prog, &n), "nvrtcGetCUBINSize");
    out.cubin.resize(n);
    if (n) check(a.nvrtcGetCUBIN(prog, reinterpret_cast<char*>(out.cubin.data())), "nvrtcGetCUBIN");
    if (want_ptx) {
        check(a.nvrtcGetPTXSize(prog, &n), "nvrtcGetPTXSize");
        out.ptx.resize(n);
        if (n) check(a.nvrtcGetPTX(prog, out.ptx.data()), "nvrtcGetPTX");
        while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
    }
    // A virtual arch (compute_90) yields PTX but no CUBIN; the JIT always asks for a real one.
    out.ok = !out.cubin.empty();
    if (!out.ok) out.log += "\n(no CUBIN produced: is -arch a real sm_XX arch?)";
    return out;
}

ResourceUsage parse_ptxas_usage(const std::string& log, const std::string& symbol) {
    ResourceUsage u;
    const std::string start = "Compiling entry function '" + symbol + "'";
    size_t pos = log.find(start);
    if (pos == std::string::npos) return u;
    size_t end = log.find("Compiling entry function '", pos + start.size());
    const std::string part = log.substr(pos, end == std::string::npos ? end : end - pos);
    auto grab = [&](const char* pattern, int* field) {
        std::smatch m;
        if (std::regex_search(part, m, std::regex(pattern))) *field = std::stoi(m[1].str());
    };
    grab(R"((\d+) bytes stack frame)", &u.stack_bytes);
    grab(R"((\d+) bytes spill stores)", &u.spill_stores);
    grab(R"((\d+) bytes spill loads)", &u.spill_loads);
    grab(R"(Used (\d+) registers)", &u.registers);
    grab(R"((\d+) bytes smem)", &u.shared_bytes);
    if (u.registers >= 0 && u.shared_bytes < 0) u.shared_bytes = 0;  // ptxas omits "0 bytes smem"
    return u;
}

}  // namespace jitllm
