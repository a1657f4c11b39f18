// `jitllm perplexity`: the model's perplexity over a text (or a token list), llama-perplexity style.
// The text's tokens are cut into chunks of --ctx-size tokens; each chunk starts from an empty cache
// (its first token replaced by BOS when the vocabulary adds one, as llama.cpp does), every token goes
// through the decode path the generator uses, and each prediction of the chunk's second half (all of
// them with --score all) adds -log softmax(logits)[next token], in double. PPL = exp(mean), with the
// delta-method standard error exp(mean) * sd / sqrt(n).
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/gpu_flags.h"
#include "core/error.h"
#include "runtime/engine.h"
#include "tokenizer/tokenizer.h"

namespace jitllm::cli {

namespace {

// -log softmax(logits)[target], in double (max subtracted first)
double nll_of(const float* logits, int n_vocab, int32_t target) {
    double m = logits[0];
    for (int i = 1; i < n_vocab; ++i) m = std::max(m, double(logits[i]));
    double s = 0.0;
    for (int i = 0; i < n_vocab; ++i) s += std::exp(double(logits[i]) - m);
    return (m + std::log(s)) - double(logits[target]);
}

}  // namespace

int cmd_perplexity(const Args& args) {
    CLI::App app{"jitllm perplexity: perplexity of a model over a text (llama-perplexity style)", "jitllm perplexity"};
    std::string model = default_model_path(), file, tokens, score = "half", output = "human";
    int ctx = 512, threads = 0, max_chunks = 0;  // threads 0: all physical cores
    bool gpu = false, cpu_exact = false;
    GpuFlags g;
    app.add_option("-m,--model", model, "GGUF model (default: bundled stories260K)");
    auto* fo = app.add_option("-f,--file", file, "the text ('-': standard input)");
    app.add_option("--tokens", tokens, "space-separated token ids instead of a text (used as given: no BOS added)")
        ->excludes(fo);
    app.add_option("-c,--ctx-size", ctx, "tokens a chunk (each from an empty cache; default 512)")
        ->check(CLI::Range(2, 1 << 24));
    app.add_option("--chunks", max_chunks, "score at most this many chunks (0 = all)")->check(CLI::Range(0, 1 << 30));
    app.add_option("--score", score, "predictions scored: half (each chunk's second half, as llama.cpp) or all")
        ->check(CLI::IsMember({"half", "all"}));
    app.add_option("-o,--output", output, "human (running chunk values on stderr, the result on stdout) or json")
        ->check(CLI::IsMember({"human", "json"}));
    app.add_option("-t,--threads", threads, "CPU threads (default: all physical cores)")->check(CLI::Range(1, 1024));
    add_gpu_flags(app, gpu, "run on the GPU (CUDA, kernels JIT-compiled with NVRTC)");
    add_cpu_exact_flag(app, cpu_exact);
    g.add(app);
    if (!parse_args(app, args)) return 0;
    if (file.empty() && tokens.empty()) fail_usage("jitllm perplexity: expected -f/--file FILE or --tokens IDS");

    // (the Engine refuses a --ctx-size beyond the model's context)
    Engine e(scoring_engine_options(model, threads, ctx, cpu_exact, gpu, g));
    const Tokenizer& tok = e.tokenizer();
    const int V = e.model().config.n_vocab;
    std::vector<int32_t> ids;
    if (!tokens.empty()) {
        ids = parse_token_ids(tokens);
    } else {
        const std::string text = read_prompt_file(file);
        ids = tok.encode(text, false, false);
    }
    for (int32_t id : ids)
        if (id >= V) fail_usage("token id {}: expected ids below the vocabulary's {}", id, V);
    const bool from_text = tokens.empty();
    const int32_t bos = from_text && tok.add_bos() ? tok.bos() : -1;
    // chunks of ctx tokens (a token list shorter than that: one chunk of all of it)
    const int64_t n_ids = int64_t(ids.size());
    const int64_t chunk = from_text ? ctx : std::min<int64_t>(ctx, n_ids);
    int64_t n_chunks = chunk >= 2 ? n_ids / chunk : 0;
    if (max_chunks > 0) n_chunks = std::min<int64_t>(n_chunks, max_chunks);
    if (n_chunks == 0)
        fail_usage("{}: {} tokens, expected at least --ctx-size {} (one chunk)", from_text ? file : "--tokens", n_ids,
                   from_text ? ctx : 2);
    const int64_t first = score == "all" ? 0 : chunk / 2;  // the first prediction scored: from position first
    double sum = 0.0, sum2 = 0.0;
    int64_t n = 0;
    nlohmann::json per_chunk = nlohmann::json::array();
    const double t0 = now_ms();
    for (int64_t c = 0; c < n_chunks; ++c) {
        e.reset();
        std::vector<int32_t> in(ids.begin() + c * chunk, ids.begin() + (c + 1) * chunk);
        if (bos >= 0) in[0] = bos;
        for (int64_t i = 0; i + 1 < chunk; ++i) {
            const float* logits = e.feed({in[size_t(i)]});
            if (i < first) continue;
            const double v = nll_of(logits, V, in[size_t(i + 1)]);
            sum += v;
            sum2 += v * v;
            ++n;
        }
        const double ppl = std::exp(sum / double(n));
        per_chunk.push_back(ppl);
        if (output == "human") std::fprintf(stderr, "[%lld]%.4f%s", (long long)(c + 1), ppl, c + 1 < n_chunks ? "," : "\n");
    }
    const double mean = sum / double(n);
    const double var = n > 1 ? std::max(0.0, (sum2 - sum * sum / double(n)) / double(n - 1)) : 0.0;
    const double ppl = std::exp(mean), err = ppl * std::sqrt(var / double(n));
    const double secs = (now_ms() - t0) / 1000.0;
    if (output == "json") {
        nlohmann::json j = {{"model", model},          {"backend", e.backend().name()}, {"n_ctx", chunk},
                            {"n_chunks", n_chunks},     {"scored", n},                    {"score", score},
                            {"mean_nll", mean},         {"ppl", ppl},                     {"ppl_stderr", err},
                            {"chunk_ppl", per_chunk},   {"seconds", secs}};
        std::printf("%s\n", j.dump().c_str());
    } else {
        std::printf("perplexity: %.4f +/- %.4f (%lld predictions, %lld chunks of %lld tokens, %s; %.1f s, backend %s)\n",
                    ppl, err, (long long)n, (long long)n_chunks, (long long)chunk,
                    score == "all" ? "every prediction" : "second halves", secs, e.backend().name().c_str());
    }
    return 0;
}

}  // namespace jitllm::cli
