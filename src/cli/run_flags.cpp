// The run's flags (run_flags.h).
#include "cli/run_flags.h"

#include <random>

#include "cli/cli_util.h"
#include "core/error.h"
#include "core/utf8.h"
#include "gguf/gguf_reader.h"
#include "runtime/chat_format.h"
#include "tokenizer/tokenizer.h"

namespace jitllm::cli {

void add_run_flags(CLI::App& app, RunFlags& f) {
    app.add_option("-m,--model", f.model, "GGUF model file (default: bundled stories260K)");
    auto* p = app.add_option("-p,--prompt", f.prompt, "prompt text");
    app.add_option("-f,--file", f.prompt_file, "read the prompt from this file ('-': standard input) instead of -p")
        ->excludes(p);
    app.add_option("--system-prompt", f.system_prompt, "system prompt (-sp, -sys), with --instruct / -i");
    app.add_option("-n,--max-tokens,--n-predict", f.max_tokens,
                   "tokens to generate (-1: until an end token or the context is full)")
        ->check(CLI::Range(-1, 1 << 24));
    app.add_option("-s,--seed", f.seed, "sampling seed (default: random)");
    app.add_option("--temp,--temperature", f.sp.temperature, "0 = greedy")->default_val(0.8f);
    app.add_option("--top-p", f.sp.top_p, "nucleus sampling threshold")->default_val(0.95f);
    app.add_option("--top-k", f.sp.top_k, "keep the k most likely tokens (0 = all)")->default_val(40);
    app.add_option("--min-p", f.sp.min_p, "drop tokens below min-p x the top probability")->default_val(0.05f);
    app.add_option("--repeat-penalty", f.sp.repeat_penalty, "penalty for recent tokens (1 = off)")->default_val(1.0f);
    app.add_option("--repeat-last-n", f.sp.repeat_last_n, "window of the repeat penalty")->default_val(64);
    app.add_flag("--stream,!--no-stream", f.stream, "print tokens as they are generated (default on)");
    app.add_flag("--echo", f.echo, "print the prompt before the generated text");
    app.add_flag("-i,--interactive", f.interactive, "chat loop on stdin");
    app.add_flag("--instruct", f.instruct, "apply the model's chat template (or its family's format) to the prompt");
    app.add_option("-t,--threads", f.threads, "CPU threads (default: all physical cores)")->check(CLI::Range(1, 1024));
    app.add_option("-c,--ctx-size", f.ctx_size, "context length (default: min(model, 4096))")->check(CLI::Range(0, 1 << 24));
    add_gpu_and_prompt_flags(app, f.gpu, f.with_prefill_decode, f.batch_prefill_size, "--batch-prefill-size");
    add_cpu_exact_flag(app, f.cpu_exact);
    app.add_flag("--print-plan", f.print_plan, "print the execution plan (tasks, kernels, launches per token)");
    f.g.add(app);
    app.add_option("--launch-skip-warmup", f.launch_skip_warmup,
                   "generated tokens counted as warm-up in --print-plan's --launch-skip")->check(CLI::Range(0, 1 << 20));
    app.add_option("--metrics", f.metrics, "end-of-run metrics format: human (default) or json")
        ->check(CLI::IsMember({"human", "json"}));
    auto* js = app.add_option("-j,--json-schema", f.json_schema,
                              "constrained output: the reply is JSON that validates against this schema "
                              "('{\"type\": \"object\"}': any object; docs/chat.md lists the keywords)");
    app.add_option("--json-schema-file", f.json_schema_file, "-j's schema from this file")->excludes(js);
}


// Prompts are text: invalid UTF-8 is refused rather than tokenized differently by each vocab
// (byte tokens in SentencePiece, U+FFFD in byte-level BPE).
void check_utf8(const char* what, const std::string& text) {
    if (size_t bad = utf8_invalid_at(text); bad != std::string::npos)
        fail_usage("{}: expected UTF-8 text, found invalid byte 0x{:02x} at offset {}", what,
                   uint8_t(text[bad]), bad);
}

void run_flags_finish(RunFlags& f) {
    if (f.seed < 0) f.seed = int64_t(std::random_device{}() & 0x7fffffff);
    f.sp.seed = uint64_t(f.seed);
    sampler_params_validate(f.sp);
    if (!f.prompt_file.empty()) {
        if (f.prompt_file == "-" && f.interactive)
            fail_usage("-f - and -i/--interactive both read standard input: expected one of them");
        f.prompt = read_prompt_file(f.prompt_file);
        check_utf8(("--file " + f.prompt_file).c_str(), f.prompt);
    }
    if (!f.json_schema_file.empty()) f.json_schema = read_prompt_file(f.json_schema_file);
    check_utf8("--prompt", f.prompt);
    check_utf8("--system-prompt", f.system_prompt);
}

std::shared_ptr<const JsonSchema> run_json_schema(const RunFlags& f) {
    if (f.json_schema.empty()) return nullptr;
    const std::string flag = f.json_schema_file.empty() ? "--json-schema" : f.json_schema_file + ": schema";
    nlohmann::json schema;
    try {
        schema = nlohmann::json::parse(f.json_schema);
    } catch (const nlohmann::json::parse_error& e) {
        fail_usage("{}: expected a JSON schema, found text that is not JSON (byte {})", flag, e.byte);
    }
    try {
        return compile_json_schema(schema, flag);
    } catch (const Error& e) {
        fail_usage("{}", e.what());
    }
}

std::vector<int32_t> run_prompt_ids(const RunFlags& f, const Tokenizer& tok, const GgufReader& gguf, int n_ctx) {
    std::vector<int32_t> ids;
    if (f.instruct) {
        const ChatTemplate ct = chat_template_for(tok, gguf);
        std::vector<ChatMessage> msgs;
        if (!f.system_prompt.empty()) msgs.push_back({"system", f.system_prompt});
        msgs.push_back({"user", f.prompt});
        const std::string text = chat_render(ct, msgs, true);
        ids = tok.encode(text, chat_add_special(ct, text), true);
    } else {
        ids = tok.encode(f.prompt, true, false);
    }
    if (ids.empty()) fail_usage("--prompt: expected at least one token, found an empty prompt");
    if (int(ids.size()) > n_ctx)
        fail_usage("prompt of {} tokens exceeds the context of {} tokens; hint: raise --ctx-size "
                   "or shorten the prompt", ids.size(), n_ctx);
    return ids;
}

}  // namespace jitllm::cli
