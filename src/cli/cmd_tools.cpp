// Tool subcommands: inspect (GGUF dump), tokenize (ids of a prompt), eval (logits of every
// position, as JSON), plan (the execution plan).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/cli_util.h"
#include "cli/gpu_flags.h"
#include "jit/jit_compiler.h"
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
    std::string model = default_model_path(), prompt, file;
    bool no_bos = false, parse_special = false, ids_only = false;
    app.add_option("-m,--model", model, "GGUF model or vocab file");
    auto* p = app.add_option("-p,--prompt", prompt, "text to tokenize");
    auto* fo = app.add_option("-f,--file", file, "tokenize this file's text ('-': standard input) instead of -p")->excludes(p);
    app.add_flag("--no-bos", no_bos, "do not add BOS/EOS even if the vocab asks for them");
    app.add_flag("--parse-special", parse_special, "text spelling special tokens becomes those tokens");
    app.add_flag("--ids", ids_only, "print only the ids, as [1, 2, 3]");
    if (!parse_args(app, args)) return 0;
    if (p->count() == 0 && fo->count() == 0) fail_usage("jitllm tokenize: expected -p/--prompt TEXT or -f/--file FILE");
    if (fo->count() > 0) prompt = read_prompt_file(file);
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
    const std::vector<int32_t> ids = parse_token_ids(tokens);
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

namespace {
std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> v;
    size_t a = 0;
    while (a <= s.size()) {
        size_t b = s.find(',', a);
        if (b == std::string::npos) b = s.size();
        if (b > a) v.push_back(s.substr(a, b - a));
        a = b + 1;
    }
    return v;
}
}  // namespace

int cmd_plan(const Args& args) {
    CLI::App app{"jitllm plan: print a model's execution plan (tasks; kernels for a CUDA target)", "jitllm plan"};
    std::string model = default_model_path(), target;
    int ctx = 0;
    GpuFlags g;
    app.add_option("-m,--model", model, "GGUF model");
    app.add_option("--ctx-size", ctx, "context length")->check(CLI::Range(0, 1 << 24));
    app.add_option("--target", target, "CUDA arch to plan for without a GPU (sm_75, sm_80, sm_86, sm_89, sm_90)");
    int batch = 0;
    app.add_option("--batch-prefill-size", batch, "also plan the batch phase for chunks of this many rows")
        ->check(CLI::Range(0, 1 << 16));
    g.add(app);
    if (!parse_args(app, args)) return 0;
    g.check_ablate(true, false, true);
    auto m = load_model(model);
    const int n_ctx = ctx > 0 ? ctx : std::min(m->config.n_ctx_train, 4096);
    const Plan p = plan_build(*m, PlanOptions{n_ctx, std::min(batch, n_ctx), 1});
    std::string s = plan_describe(p);
    if (!target.empty()) {
        const Schedule sch = cuda_schedule_for_target(p, target, g.schedule());
        const DeviceInfo dev = DeviceInfo::for_target(target);
        s += fmt::format("cuda schedule for {} ({}):\n", target, dev.summary());
        s += schedule_describe(p, sch, g.print_threads);
        if (g.print_kernel)
            for (const auto& v : schedule_variants(sch))
                s += fmt::format("// ==== kernel {}\n// variant: {}\n{}\n", v.symbol, v.display_name(), expand_source(v));
    }
    std::fwrite(s.data(), 1, s.size(), stdout);
    return 0;
}

int cmd_kernels(const Args& args) {
    CLI::App app{"jitllm kernels: list or compile (NVRTC, no GPU needed) every kernel variant of a model's schedule",
                 "jitllm kernels"};
    std::string model = default_model_path(), targets = "sm_90";
    bool compile = false;
    int ctx = 0;
    GpuFlags g;
    app.add_option("-m,--model", model, "GGUF model");
    app.add_option("--target", targets, "comma-separated CUDA archs, e.g. sm_80,sm_90");
    app.add_flag("--compile", compile, "compile every variant (fills the kernel cache)");
    app.add_option("--ctx-size", ctx, "context length")->check(CLI::Range(0, 1 << 24));
    int batch = 0;
    app.add_option("--batch-prefill-size", batch, "also the batch phase's kernels, for chunks of this many rows")
        ->check(CLI::Range(0, 1 << 16));
    g.add(app);
    if (!parse_args(app, args)) return 0;
    g.check_ablate(true, false, true);
    auto m = load_model(model);
    const int n_ctx = ctx > 0 ? ctx : std::min(m->config.n_ctx_train, 4096);
    const Plan p = plan_build(*m, PlanOptions{n_ctx, std::min(batch, n_ctx), 1});
    int failures = 0;
    for (const auto& target : split_commas(targets)) {
        // both siblings of every gate, so every variant the model can get is listed / compiled
        std::vector<Variant> all;
        std::set<std::string> seen;
        for (int alt = 0; alt < 2; ++alt) {
            ScheduleOptions so = g.schedule();
            if (alt == 1) {
                so.force = {{"gemv.reduce", "tree"}, {"norm.reduce", "tree"}, {"attn.algo", "onepass"},
                            {"sample.reduce", "tree"}, {"gemm.mma", "simt"}, {"gemm.wgmma", "mma"},
                            {"attn.prefill", "rows"}, {"weights.layout", "blocks"}, {"launch.pdl", "serial"}};
                so.attn_ablate = 0;  // (the siblings' one-pass attention has no ablation)
            } else if (so.force.empty()) {
                so.force = {{"attn.algo", "split"}};
            }
            for (bool fuse : {true, false}) {
                ScheduleOptions sf = so;
                sf.fuse = fuse;
                if (!fuse) sf.force.erase("attn.fuse");  // (a fusion: --no-fuse has none to force)
                for (const auto& v : schedule_variants(cuda_schedule_for_target(p, target, sf)))
                    if (seen.insert(v.display_name()).second) all.push_back(v);
            }
        }
        std::printf("%s: %zu variants\n", target.c_str(), all.size());
        if (!compile) {
            for (const auto& v : all) std::printf("  %s\n", v.display_name().c_str());
            continue;
        }
        JitOptions jo;
        jo.cache.disk = !g.no_kernel_cache;
        jo.cache.dir = g.kernel_cache;
        JitCompiler jit(target, jo);
        std::vector<CompiledKernel> done;
        try {
            done = jit.compile_all(all);  // parallel
        } catch (const Error&) {
            done.clear();  // find out which ones fail, one by one
        }
        for (size_t i = 0; i < all.size(); ++i) {
            try {
                const CompiledKernel ck = done.empty() ? jit.compile(all[i]) : done[i];
                std::printf("  ok   %-50s regs %3d spill %d B\n", all[i].symbol.c_str(), ck.usage.registers,
                            std::max(0, ck.usage.spill_stores) + std::max(0, ck.usage.spill_loads));
            } catch (const Error& e) {
                ++failures;
                std::printf("  FAIL %s\n%s\n", all[i].display_name().c_str(), e.what());
            }
        }
        const auto st = jit.stats();
        std::printf("%s: %zu variants, %d compiled, %.0f ms wall\n", target.c_str(), all.size(), st.compiles, st.wall_ms);
    }
    if (failures) fail("{} kernel variant(s) failed to compile", failures);
    return 0;
}

}  // namespace jitllm::cli
