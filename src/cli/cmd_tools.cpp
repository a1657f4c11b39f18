// Tool subcommands: inspect (GGUF dump), tokenize (ids of a prompt), eval (logits of every
// position, as JSON), plan (the execution plan).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/cli_util.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "runtime/engine.h"
#include "tokenizer/tokenizer.h"

namespace jitllm::cli {

int cmd_inspect(const Args& args) {
    CLI::App app{"jitllm inspect: print a GGUF file's metadata and tensor table", "jitllm inspect"};
    std::string path;
    size_t max_array = 8;
    app.add_option("file", path, "GGUF file")->required();
    app.add_option("--max-array", max_array, "array elements shown before abbreviating");
    if (!parse_args(app, args)) return 0;
    auto g = GgufReader::open(path);
    const std::string s = gguf_describe(*g, max_array);
    std::fwrite(s.data(), 1, s.size(), stdout);
    return 0;
}

int cmd_tokenize(const Args& args) {
    CLI::App app{"jitllm tokenize: tokenize a prompt with a model's vocabulary", "jitllm tokenize"};
    std::string model = default_model_path(), prompt;
    bool no_bos = false, parse_special = false, ids_only = false;
    app.add_option("-m,--model", model, "GGUF model or vocab file");
    app.add_option("-p,--prompt", prompt, "text to tokenize")->required();
    app.add_flag("--no-bos", no_bos, "do not add BOS/EOS even if the vocab asks for them");
    app.add_flag("--parse-special", parse_special, "text spelling special tokens becomes those tokens");
    app.add_flag("--ids", ids_only, "print only the ids, as [1, 2, 3]");
    if (!parse_args(app, args)) return 0;
    auto g = GgufReader::open(model);
    auto tok = Tokenizer::from_gguf(*g);
    const auto ids = tok->encode(prompt, !no_bos, parse_special);
    if (ids_only) {
        std::string s = "[";
        for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
        std::printf("%s]\n", s.c_str());
    } else {
        for (int32_t id : ids) {
            std::string piece = tok->token_to_piece(id, true);
            std::printf("%6d -> '%s'\n", id, piece.c_str());
        }
    }
    return 0;
}

int cmd_eval(const Args& args) {
    CLI::App app{"jitllm eval: logits of every position of a token list", "jitllm eval"};
    std::string model = default_model_path(), tokens, dump;
    int threads = 1, ctx = 0;
    app.add_option("-m,--model", model, "GGUF model");
    app.add_option("--tokens", tokens, "space-separated token ids")->required();
    app.add_option("--dump-logits", dump, "write {\"n_vocab\": V, \"logits\": [[...], ...]} here")->required();
    app.add_option("--threads", threads, "CPU threads")->check(CLI::Range(1, 1024));
    app.add_option("--ctx-size", ctx, "context length")->check(CLI::Range(0, 1 << 24));
    if (!parse_args(app, args)) return 0;
    std::vector<int32_t> ids;
    {
        std::istringstream is(tokens);
        std::string w;
        while (is >> w) {
            char* end = nullptr;
            const long v = std::strtol(w.c_str(), &end, 10);
            if (*end != '\0' || v < 0 || v > INT32_MAX)
                fail_usage("--tokens: expected non-negative integer ids, found '{}'", w);
            ids.push_back(int32_t(v));
        }
    }
    if (ids.empty()) fail_usage("--tokens: expected at least one token id, found none");
    EngineOptions eo;
    eo.model_path = model;
    eo.n_threads = threads;
    eo.n_ctx = ctx;
    Engine e(eo);
    const int V = e.model().config.n_vocab;
    nlohmann::json rows = nlohmann::json::array();
    for (int32_t id : ids) {
        const float* l = e.feed({id});
        rows.push_back(std::vector<float>(l, l + V));
    }
    nlohmann::json out = {{"n_vocab", V}, {"logits", rows}};
    // write to a temporary name, then rename: no partial file on failure
    const std::string tmp = dump + ".tmp";
    {
        std::ofstream f(tmp);
        if (!f) fail("{}: cannot write: {}", dump, std::strerror(errno));
        f << out.dump();
        if (!f) fail("{}: cannot write: {}", dump, std::strerror(errno));
    }
    if (std::rename(tmp.c_str(), dump.c_str()) != 0) {
        std::remove(tmp.c_str());
        fail("{}: cannot write: {}", dump, std::strerror(errno));
    }
    std::fprintf(stderr, "[jitllm] wrote logits of %zu positions to %s\n", ids.size(), dump.c_str());
    return 0;
}

int cmd_plan(const Args& args) {
    CLI::App app{"jitllm plan: print a model's execution plan", "jitllm plan"};
    std::string model = default_model_path();
    int ctx = 0;
    app.add_option("-m,--model", model, "GGUF model");
    app.add_option("--ctx-size", ctx, "context length")->check(CLI::Range(0, 1 << 24));
    if (!parse_args(app, args)) return 0;
    auto m = load_model(model);
    const int n_ctx = ctx > 0 ? ctx : std::min(m->config.n_ctx_train, 4096);
    const Plan p = plan_build(*m, n_ctx);
    const std::string s = plan_describe(p);
    std::fwrite(s.data(), 1, s.size(), stdout);
    return 0;
}

}  // namespace jitllm::cli
