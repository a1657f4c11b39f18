// `jitllm [run]`: load a model (default: the bundled stories260K), run a prompt, stream text to
// stdout; -i for a chat loop, --instruct to apply the model's chat template. Logs on stderr.
#include <iostream>
#include <random>

#include "cli/cli_util.h"
#include "cli/gpu_flags.h"
#include "cli/run_flags.h"
#include "core/error.h"
#include "core/utf8.h"
#include "gguf/gguf_reader.h"
#include "quant/quant.h"
#include "runtime/chat_format.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "profile/profiler.h"

namespace jitllm::cli {

std::string default_model_path() {
    if (const char* m = std::getenv("JITLLM_MODEL"); m && *m) return m;
    return bundled_model_name();
}

namespace {

void print_metrics(Engine& e, const std::string& format) {
    const auto& t = e.times();
    const double prompt_tps = t.prompt_ms > 0 ? 1000.0 * t.n_prompt / t.prompt_ms : 0.0;
    const double decode_tps = t.decode_ms > 0 ? 1000.0 * t.n_decode / t.decode_ms : 0.0;
    const BackendInfo info = e.backend().info();
    const uint64_t device_bytes = e.backend().device_bytes();
    const double peak_gib = double(device_bytes) / double(1ull << 30);
    if (format == "json") {
        std::string j = fmt::format(
            "{{\"backend\": \"{}\", \"load_ms\": {:.3f}, \"ttft_ms\": {:.3f}, \"n_prompt\": {}, "
            "\"prefill_tok_s\": {:.3f}, \"n_decode\": {}, \"decode_tok_s\": {:.3f}, \"decode_ms_per_tok\": {:.4f}",
            e.backend().name(), t.load_ms, t.prompt_ms, t.n_prompt, prompt_tps, t.n_decode, decode_tps,
            t.n_decode ? t.decode_ms / t.n_decode : 0.0);
        if (info.gpu) {
            j += fmt::format(", \"jit_ms\": {:.3f}, \"jit_compiled\": {}, \"jit_cached\": {}, \"jit_cache\": \"{}\", "
                             "\"peak_gpu_mem_bytes\": {}",
                             info.jit_wall_ms, info.jit_compiled, info.jit_cached,
                             info.jit_compiled == 0 ? "warm" : "cold", device_bytes);
        }
        std::fprintf(stderr, "%s}\n", j.c_str());
        return;
    }
    std::fprintf(stderr, "\n[jitllm] backend %s | load %.1f ms | ttft %.1f ms | prompt %d tok, %.1f tok/s | decode %d tok, %.1f tok/s",
                 e.backend().name().c_str(), t.load_ms, t.prompt_ms, t.n_prompt, prompt_tps, t.n_decode, decode_tps);
    if (info.gpu) {
        std::fprintf(stderr, " | jit %.1f ms (%s: %d compiled, %d cached) | gpu mem %.2f GiB", info.jit_wall_ms,
                     info.jit_compiled == 0 ? "warm" : "cold", info.jit_compiled, info.jit_cached, peak_gib);
    } else {
        std::fprintf(stderr, " | %d threads | products %s", e.n_threads(), info.cpu_products.c_str());
    }
    std::fprintf(stderr, "\n");
}

// Feeds ids and records prompt timing.
const float* feed_prompt(Engine& e, const std::vector<int32_t>& ids) {
    const double t0 = now_ms();
    const float* logits = e.feed(ids);
    e.times().prompt_ms += now_ms() - t0;
    e.times().n_prompt += int(ids.size());
    return logits;
}

// -j: a reply's constraint (null without a schema; `vocab` made at the first); a usage error
// where the budget cannot hold the schema's shortest JSON (each token is a character at the least).
std::unique_ptr<JsonConstraint> make_constraint(Engine& e, const std::shared_ptr<const JsonSchema>& schema,
                                                int budget, std::shared_ptr<const ConstraintVocab>& vocab) {
    if (!schema) return nullptr;
    if (!vocab) vocab = constraint_vocab(e.tokenizer());
    auto c = std::make_unique<JsonConstraint>(schema, vocab);
    if (c->remaining() > budget)
        fail_usage("--json-schema: the shortest JSON of the schema has {} characters, more than the {} tokens "
                   "left to generate (-n, or the context)", c->remaining(), budget);
    return c;
}

int run_chat(Engine& e, const RunFlags& f, Sampler& sampler, const std::shared_ptr<const JsonSchema>& schema) {
    const ChatTemplate ct = chat_template_for(e.tokenizer(), *e.model().gguf);
    std::fprintf(stderr, "[jitllm] chat: %s; type a message, an empty line or EOF ends\n",
                 chat_template_describe(ct).c_str());
    std::vector<ChatMessage> msgs;
    if (!f.system_prompt.empty()) msgs.push_back({"system", f.system_prompt});
    std::vector<int32_t> fed;  // tokens in the KV cache
    std::shared_ptr<const ConstraintVocab> vocab;  // (-j)
    std::string line;
    for (;;) {
        std::fprintf(stderr, "> ");
        if (!std::getline(std::cin, line) || line.empty()) break;
        check_utf8("input line", line);
        msgs.push_back({"user", line});
        const std::string text = chat_render(ct, msgs, true);
        std::vector<int32_t> ids = e.tokenizer().encode(text, chat_add_special(ct, text), true);
        size_t common = 0;
        while (common < fed.size() && common < ids.size() && fed[common] == ids[common]) ++common;
        if (common < fed.size()) {  // the rendering diverged from what is cached: start over
            e.reset();
            fed.clear();
            common = 0;
        }
        std::vector<int32_t> fresh(ids.begin() + long(common), ids.end());
        const int room = e.n_ctx() - e.pos() - int(fresh.size());
        if (room <= 0)
            fail("conversation of {} tokens does not fit the context of {}; hint: raise --ctx-size",
                 ids.size(), e.n_ctx());
        const float* logits = feed_prompt(e, fresh);
        fed = ids;
        std::vector<int32_t> history = fed;
        std::unique_ptr<JsonConstraint> constraint = make_constraint(e, schema, std::min(f.max_tokens, room), vocab);
        auto r = generate(e, sampler, logits, history, std::min(f.max_tokens, room),
                          [](const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); std::fflush(stdout); return true; },
                          constraint.get());
        std::printf("\n");
        msgs.push_back({"assistant", r.text});
        // the generated tokens are in the cache but for the last when the budget or a stop cut
        // the generation (only a pick that fed a step is cached); the end token is re-rendered by
        // the template
        fed.insert(fed.end(), r.ids.begin(), r.ids.end());
        if (fed.size() > size_t(e.pos())) fed.resize(size_t(e.pos()));
    }
    print_metrics(e, f.metrics);
    return 0;
}

}  // namespace

int cmd_run(const Args& args) {
    CLI::App app{"jitllm: run a GGUF model (generated text on stdout, logs on stderr)", "jitllm"};
    RunFlags f;
    add_run_flags(app, f);
    if (!parse_args(app, args)) return 0;
    run_flags_finish(f);

    EngineOptions eo;
    eo.model_path = f.model;
    eo.n_threads = f.threads;
    Profiler profiler;
    f.apply_engine(eo, f.print_plan, &profiler);
    Engine e(eo);
    const bool until_full = f.max_tokens < 0;  // -n -1: until an end token or the context is full
    if (until_full) f.max_tokens = e.n_ctx();
    if (f.print_plan) std::fprintf(stderr, "%s", plan_describe(e.plan()).c_str());
    Sampler sampler(f.sp);
    const std::shared_ptr<const JsonSchema> schema = run_json_schema(f);
    // greedy without penalties: the device's argmax picks the token, logits stay on the device
    // (constrained output: the first pick from the prompt's logits on the host)
    e.backend().set_logits_needed(!sampler.plain_greedy() || schema);
    if (f.interactive) return run_chat(e, f, sampler, schema);

    const std::vector<int32_t> ids = run_prompt_ids(f, e.tokenizer(), *e.model().gguf, e.n_ctx());
    if (f.echo) {
        std::string p = e.tokenizer().detokenize(ids, true);
        std::fwrite(p.data(), 1, p.size(), stdout);
        std::fflush(stdout);
    }
    if (f.print_plan) {
        RunShape rs{int(ids.size()), f.max_tokens, f.with_prefill_decode, e.plan().batch_rows,
                    sampler.device_drawable(e.plan().config->n_vocab, e.backend().draw_max_k())};
        std::fprintf(stderr, "%s", e.backend().describe_launches(rs, f.launch_skip_warmup).c_str());
        const PhaseRuns pr = plan_phase_runs(rs);
        std::fprintf(stderr, "task executions: decode phase %lld runs x %zu tasks, prefill phase %lld runs x %zu tasks, "
                     "batch phase %lld chunks x %zu tasks\n",
                     (long long)pr.decode, e.plan().decode.size(), (long long)pr.prefill, e.plan().prefill.size(),
                     (long long)pr.batch, e.plan().batch_body);
    }
    const float* logits = feed_prompt(e, ids);
    int budget = f.max_tokens;
    if (ids.size() + size_t(budget) > size_t(e.n_ctx())) {
        budget = e.n_ctx() - int(ids.size());
        if (!until_full)
            std::fprintf(stderr, "[jitllm] note: -n %d exceeds the context; generating at most %d tokens\n",
                         f.max_tokens, budget);
    }
    std::vector<int32_t> history = ids;
    std::shared_ptr<const ConstraintVocab> vocab;
    std::unique_ptr<JsonConstraint> constraint = make_constraint(e, schema, budget, vocab);
    auto r = generate(e, sampler, logits, history, budget, [&](const std::string& s) {
        if (f.stream) {
            std::fwrite(s.data(), 1, s.size(), stdout);
            std::fflush(stdout);
        }
        return true;
    }, constraint.get());
    if (!f.stream) std::fwrite(r.text.data(), 1, r.text.size(), stdout);
    std::printf("\n");
    std::fflush(stdout);
    print_metrics(e, f.metrics);
    if (!profiler.records().empty()) {
        std::fprintf(stderr, "%s", profiler.table().c_str());
        if (!f.g.profiler_dump_dir.empty()) {
            profiler.dump(f.g.profiler_dump_dir);
            std::fprintf(stderr, "[jitllm] profile written to %s/profile.json and trace.json\n", f.g.profiler_dump_dir.c_str());
        }
    }
    return 0;
}

}  // namespace jitllm::cli
