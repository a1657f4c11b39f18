// jitllm command line: subcommand dispatch and the one place that turns errors into exit codes.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "core/error.h"

namespace {

struct Command {
    const char* name;
    int (*fn)(const jitllm::cli::Args&);
    const char* help;
};

const Command kCommands[] = {
    {"run", jitllm::cli::cmd_run, "generate text (default when no subcommand is given)"},
    {"inspect", jitllm::cli::cmd_inspect, "print a GGUF file's metadata and tensor table"},
    {"tokenize", jitllm::cli::cmd_tokenize, "tokenize a prompt with a model's vocabulary"},
    {"eval", jitllm::cli::cmd_eval, "compute the logits of every position of a token list"},
    {"plan", jitllm::cli::cmd_plan, "print the execution plan of a model"},
    {"kernels", jitllm::cli::cmd_kernels, "list or compile (NVRTC) every kernel variant of a model"},
    {"synth", jitllm::cli::cmd_synth, "write a random-weight model of a real shape (benchmarks)"},
    {"serve", jitllm::cli::cmd_serve, "OpenAI-compatible HTTP server (docs/server.md)"},
    {"bench", jitllm::cli::cmd_bench, "llama-bench-style pp/tg speed with GB/s and % of copy bandwidth"},
    {"template", jitllm::cli::cmd_template, "render a conversation with the model's chat template (docs/chat.md)"},
    {"perplexity", jitllm::cli::cmd_perplexity, "perplexity of a model over a text (chunks of --ctx-size)"},
    {"ncu", jitllm::cli::cmd_ncu, "Nsight Compute on the kernel of one task, layer and token (docs/profiling.md)"},
    {"nsys", jitllm::cli::cmd_nsys, "an Nsight Systems timeline of a run with one NVTX range per task"},
    {"devices", jitllm::cli::cmd_devices, "NVRTC, the CUDA devices --gpu and the OpenCL devices --opencl can use (--list-devices)"},
    {"version", jitllm::cli::cmd_version, "the release, build commit and compiler (--version)"},
};

void print_usage() {
    std::printf("usage: jitllm [SUBCOMMAND] [OPTIONS]\n\nsubcommands:\n");
    for (const auto& c : kCommands) std::printf("  %-11s %s\n", c.name, c.help);
    std::printf("\n`jitllm SUBCOMMAND --help` lists a subcommand's options; `jitllm --help` "
                "without a subcommand shows `run`'s.\n");
}

}  // namespace

int main(int argc, char** argv) {
    jitllm::cli::Args args(argv + 1, argv + argc);
    const Command* cmd = &kCommands[0];
    if (!args.empty()) {
        // llama.cpp's spellings of two commands
        if (args[0] == "--version") args[0] = "version";
        else if (args[0] == "--list-devices") args[0] = "devices";
        for (const auto& c : kCommands)
            if (args[0] == c.name) {
                cmd = &c;
                args.erase(args.begin());
                break;
            }
        if (args.size() == 1 && (args[0] == "help" || args[0] == "commands")) {
            print_usage();
            return 0;
        }
    }
    try {
        return cmd->fn(args);
    } catch (const jitllm::Error& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "error: %s\n", e.what());
        return e.kind() == jitllm::Error::Kind::Usage ? 2 : 1;
    } catch (const CLI::ParseError& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    } catch (const std::bad_alloc&) {
        std::fflush(stdout);
        std::fprintf(stderr, "error: out of host memory\n");
        return 1;
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
