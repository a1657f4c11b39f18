// The CLI's subcommands. Each returns the process exit code; errors are thrown as jitllm::Error
// and printed by main() (one `error:` line, exit 2 for usage, 1 otherwise).
#pragma once

#include <string>
#include <vector>

namespace jitllm::cli {

using Args = std::vector<std::string>;  // argv without the program name and subcommand

int cmd_run(const Args& args);       // default: generate text (also -i / --instruct)
int cmd_inspect(const Args& args);   // jitllm inspect FILE.gguf
int cmd_tokenize(const Args& args);  // jitllm tokenize -m MODEL -p TEXT --ids
int cmd_eval(const Args& args);      // jitllm eval -m MODEL --tokens "1 2 3" --dump-logits F
int cmd_plan(const Args& args);      // jitllm plan -m MODEL [--target sm_90]
int cmd_kernels(const Args& args);   // jitllm kernels [--compile] --target sm_80,sm_90
int cmd_synth(const Args& args);     // jitllm synth --shape S --type T --vocab V --out F
int cmd_serve(const Args& args);     // jitllm serve -m MODEL --port 8080 --parallel N
int cmd_bench(const Args& args);     // jitllm bench -m MODEL -p 512 -n 128 -r 5 -o md
int cmd_perplexity(const Args& args);  // jitllm perplexity -m MODEL -f TEXT -c 512
int cmd_version(const Args& args);     // jitllm version (--version)
int cmd_devices(const Args& args);     // jitllm devices (--list-devices)
int cmd_ncu(const Args& args);         // jitllm ncu --task blk.3.ffn_down --token 40 -- -m MODEL --gpu
int cmd_nsys(const Args& args);        // jitllm nsys -- -m MODEL --gpu
int cmd_template(const Args& args);    // jitllm template -m MODEL --messages M.json

// $JITLLM_MODEL, else the bundled model (bundled_model_name()).
std::string default_model_path();
// The name GgufReader::open knows the model linked into the binary by ("<bundled>/stories260K.gguf").
const std::string& bundled_model_name();
// Parses args with a CLI11 app; handles --help (prints, returns true => caller exits 0).
}  // namespace jitllm::cli
