// The flags of `jitllm [run]`, shared with the commands that wrap a run (`jitllm ncu`, `jitllm nsys`):
// one declaration, so a wrapped run's arguments mean what they mean to `jitllm run`.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/gpu_flags.h"
#include "runtime/engine.h"
#include "runtime/json_schema.h"
#include "runtime/sampler.h"

namespace jitllm {
class GgufReader;
class Tokenizer;
}  // namespace jitllm

namespace jitllm::cli {

struct RunFlags : EngineFlags {
    std::string model = default_model_path();
    std::string prompt = "Once upon a time";
    std::string prompt_file;  // -f/--file
    std::string system_prompt;
    int max_tokens = 256;
    int64_t seed = -1;
    SamplerParams sp;
    bool stream = true;
    bool echo = false;
    bool interactive = false;
    bool instruct = false;
    int threads = 0;  // all physical cores
    bool print_plan = false;
    std::string metrics;  // "" | "json"
    int launch_skip_warmup = 2;
    std::string json_schema;       // -j: constrained output, the reply JSON of this schema
    std::string json_schema_file;  // --json-schema-file (read into json_schema)
};

void add_run_flags(CLI::App& app, RunFlags& f);
// After parsing: the seed (random when not given), the sampler's checks, the prompt file read, and
// every text checked as UTF-8 (usage errors otherwise).
void run_flags_finish(RunFlags& f);
// -j / --json-schema-file compiled (null: neither given); usage errors naming the flag for text
// that is not JSON or a schema keyword not taken.
std::shared_ptr<const JsonSchema> run_json_schema(const RunFlags& f);
// The prompt's token ids as the run feeds them (the chat format with --instruct); usage errors for
// an empty prompt or one longer than n_ctx.
std::vector<int32_t> run_prompt_ids(const RunFlags& f, const Tokenizer& tok, const GgufReader& gguf, int n_ctx);
// Refuses text that is not UTF-8 (a usage error naming `what`).
void check_utf8(const char* what, const std::string& text);

}  // namespace jitllm::cli
