// Helpers shared by the CLI subcommands: CLI11 parsing of an argument vector, timing.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>

#include "cli/commands.h"

namespace jitllm::cli {

// Parses `args` (argv order). Returns false when --help was printed (exit 0).
// Throws CLI::ParseError on bad flags (main prints it as an error: line).
inline bool parse_args(CLI::App& app, Args args) {
    // "-sp" is the original system's spelling of --system-prompt (CLI11 short flags are 1 char)
    for (auto& a : args)
        if (a == "-sp") a = "--system-prompt";
    std::vector<std::string> rev(args.rbegin(), args.rend());
    try {
        app.parse(rev);
    } catch (const CLI::CallForHelp&) {
        std::printf("%s", app.help().c_str());
        return false;
    }
    return true;
}

inline double now_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace jitllm::cli
