// Helpers shared by the CLI subcommands: CLI11 parsing of an argument vector, timing.
#pragma once

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"

namespace jitllm::cli {

// Parses `args` (argv order). Returns false when --help was printed (exit 0).
// Throws CLI::ParseError on bad flags (main prints it as an error: line).
inline bool parse_args(CLI::App& app, Args args) {
    // multi-letter short spellings (CLI11 short flags are 1 char): "-sp" (the original system's) and
    // llama.cpp's "-sys" for --system-prompt, "-ngl" for --n-gpu-layers, "-fa" for --flash-attn,
    // "-np" for --parallel
    for (auto& a : args) {
        if (a == "-sp" || a == "-sys") a = "--system-prompt";
        else if (a == "-ngl") a = "--n-gpu-layers";
        else if (a == "-fa") a = "--flash-attn";
        else if (a == "-np") a = "--parallel";
    }
    std::vector<std::string> rev(args.rbegin(), args.rend());
    try {
        app.parse(rev);
    } catch (const CLI::CallForHelp&) {
        std::printf("%s", app.help().c_str());
        return false;
    }
    return true;
}

// --gpu, and llama.cpp's -ngl/--n-gpu-layers N for it: jitllm runs every layer on one device, so any
// N > 0 (llama.cpp clamps to the layer count: 99 is the usual "all") means --gpu and 0 the CPU
inline void add_gpu_flags(CLI::App& app, bool& gpu, const std::string& help) {
    app.add_flag("--gpu", gpu, help);
    app.add_option_function<int>(
           "--n-gpu-layers", [&gpu](const int& n) { gpu = n > 0; },
           "llama.cpp's -ngl: any N > 0 runs every layer on the GPU (as --gpu), 0 on the CPU")
        ->check(CLI::Range(0, 1 << 20));
    // llama.cpp's -fa: jitllm's attention is always the fused online-softmax kind, so on / auto are
    // accepted as they are and off is refused (there is no unfused attention to turn on)
    app.add_option_function<std::string>(
           "--flash-attn",
           [](const std::string& v) {
               if (v == "off" || v == "0" || v == "false")
                   fail_usage("--flash-attn {}: expected on or auto, found off (jitllm's attention is always fused, "
                              "flash-attention style)", v);
           },
           "llama.cpp's -fa on|auto|off: on and auto accepted (attention is always fused), off refused")
        ->check(CLI::IsMember({"on", "auto", "off", "1", "0", "true", "false"}));
}

// run's and bench's device and prompt feeding: --gpu (above), --with-prefill-decode, and
// `batch_name` for the prompt chunk size (run: --batch-prefill-size; bench: also -b, llama-bench's)
inline void add_gpu_and_prompt_flags(CLI::App& app, bool& gpu, bool& with_prefill_decode, int& batch_prefill_size,
                                     const std::string& batch_name) {
    add_gpu_flags(app, gpu, "run on the GPU (CUDA, kernels JIT-compiled with NVRTC)");
    app.add_flag("--with-prefill-decode", with_prefill_decode,
                 "prompt tokens skip the output projection until the last one");
    app.add_option(batch_name, batch_prefill_size,
                   "prompt chunks of this many tokens through batched kernels (0 = one token at a time; "
                   "default: 64 on the CPU, 0 on the GPU)")
        ->check(CLI::Range(0, 1 << 16));
}

// --cpu-exact: the CPU's exact reference operations (the numerical specification) instead of the
// fast kernels this CPU runs
inline void add_cpu_exact_flag(CLI::App& app, bool& cpu_exact) {
    app.add_flag("--cpu-exact", cpu_exact,
                 "CPU: the exact reference operations (the numerical specification, slower) instead of the fast "
                 "kernels");
}

// Environment twins of the options defined so far (llama.cpp's LLAMA_ARG_* convention, for
// containers): --ctx-size also from $PREFIX_CTX_SIZE, and so on; the command line wins, an option
// that already reads a variable keeps it, hidden options get none. Call before the options that
// should not have one (serve: its own options, not the GPU tuning flags).
inline void add_env_twins(CLI::App& app, const std::string& prefix) {
    for (CLI::Option* o : app.get_options()) {
        if (o->get_lnames().empty() || !o->get_envname().empty() || o->get_group().empty()) continue;
        const std::string& name = o->get_lnames().front();
        if (name == "help") continue;
        std::string env = prefix;
        for (char c : name) env += c == '-' ? '_' : char(std::toupper(static_cast<unsigned char>(c)));
        o->envname(env);
    }
}

// -f/--file: the whole of `path` ("-": standard input) as prompt text. A file that cannot be read, a
// directory, or one over 64 MiB (far past any context) is refused naming it (a file error: exit 1).
inline std::string read_prompt_file(const std::string& path) {
    constexpr size_t kMax = size_t(64) << 20;
    const bool in = path == "-";
    struct stat st {};
    if (!in && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        fail("{}: cannot read the prompt: expected a file, found a directory", path);
    std::FILE* fp = in ? stdin : std::fopen(path.c_str(), "rb");
    if (!fp) fail("{}: cannot read the prompt: {}", path, std::strerror(errno));
    std::string text;
    char buf[1 << 16];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, fp)) > 0) {
        text.append(buf, n);
        if (text.size() > kMax) {
            if (!in) std::fclose(fp);
            fail("{}: cannot read the prompt: expected at most {} bytes, found more", path, kMax);
        }
    }
    const bool bad = std::ferror(fp) != 0;
    const int err = errno;
    if (!in) std::fclose(fp);
    if (bad) fail("{}: cannot read the prompt: {}", path, std::strerror(err));
    return text;
}

// --tokens "1 2 3": space-separated non-negative ids (eval, perplexity); anything else is refused
inline std::vector<int32_t> parse_token_ids(const std::string& tokens) {
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i < tokens.size()) {
        while (i < tokens.size() && std::isspace(static_cast<unsigned char>(tokens[i]))) ++i;
        if (i == tokens.size()) break;
        size_t j = i;
        while (j < tokens.size() && !std::isspace(static_cast<unsigned char>(tokens[j]))) ++j;
        const std::string w = tokens.substr(i, j - i);
        char* end = nullptr;
        const long v = std::strtol(w.c_str(), &end, 10);
        if (*end != '\0' || v < 0 || v > INT32_MAX) fail_usage("--tokens: expected non-negative integer ids, found '{}'", w);
        ids.push_back(int32_t(v));
        i = j;
    }
    return ids;
}

inline double now_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace jitllm::cli
