// `jitllm bench`: llama-bench-style benchmark matrix (-m, -p, -n, -pg, -d, -r, -t, -o) with
// llama-bench's field names, plus bytes per token, achieved GB/s and % of the copy bandwidth
// measured in the same run. Results on stdout (streamed), progress on stderr. See docs/bench.md.
#include <cctype>
#include <charconv>
#include <cstdio>
#include <thread>

#include "bench/batched_bench.h"
#include "bench/bench_output.h"
#include "bench/bench_runner.h"
#include "backends/cpu/fast/fast_ops.h"
#include "cli/cli_util.h"
#include "cli/gpu_flags.h"
#include "core/error.h"
#include "profile/profiler.h"

namespace jitllm::cli {

namespace {

constexpr int kMaxListValue = 1 << 24;
constexpr size_t kMaxListLength = 1000;

int parse_int(const std::string& s, const std::string& flag, const std::string& item) {
    int v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0 || v > kMaxListValue)
        fail_usage("{}: expected a number in [0, {}] or a range first-last[+step|*mult], found '{}'",
                   flag, kMaxListValue, item);
    return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    size_t b = 0;
    for (size_t e; (e = s.find(sep, b)) != std::string::npos; b = e + 1) out.push_back(s.substr(b, e - b));
    out.push_back(s.substr(b));
    return out;
}

// llama-bench's list syntax: values separated by commas or given by repeating the flag, and
// ranges first-last (step 1), first-last+step, first-last*mult.
std::vector<int> parse_int_list(const std::vector<std::string>& vals, const std::string& flag) {
    std::vector<int> out;
    for (const auto& v : vals)
        for (const auto& item : split(v, ',')) {
            const auto dash = item.find('-', 1);
            if (dash == std::string::npos) {
                out.push_back(parse_int(item, flag, item));
                continue;
            }
            const int first = parse_int(item.substr(0, dash), flag, item);
            std::string rest = item.substr(dash + 1);
            char op = '+';
            int step = 1;
            if (const auto o = rest.find_first_of("+*"); o != std::string::npos) {
                op = rest[o];
                step = parse_int(rest.substr(o + 1), flag, item);
                rest = rest.substr(0, o);
            }
            const int last = parse_int(rest, flag, item);
            if (last < first || (op == '+' && step < 1) || (op == '*' && (step < 2 || first < 1)))
                fail_usage("{}: range '{}': expected first <= last and a step >= 1 (or a "
                           "multiplier >= 2 from a first value >= 1)", flag, item);
            for (int64_t x = first; x <= last; x = op == '+' ? x + step : x * step) {
                out.push_back(int(x));
                if (out.size() > kMaxListLength)
                    fail_usage("{}: more than {} values", flag, kMaxListLength);
            }
        }
    return out;
}

struct BenchFlags : EngineFlags {
    std::vector<std::string> models, n_prompt{"512"}, n_gen{"128"}, pg, n_depth{"0"}, threads;
    std::vector<std::string> npp, ntg, npl;  // llama-batched-bench's tests
    int repetitions = 5;
    std::string output = "md", output_err = "none";
    bool no_warmup = false;
    bool progress = false;
    uint64_t seed = 1234;
    std::string sql_table = "test";
};

void add_bench_flags(CLI::App& app, BenchFlags& f) {
    app.add_option("-m,--model", f.models, "GGUF model file(s), comma-separated or repeated "
                   "(default: bundled stories260K)")->delimiter(',');
    app.add_option("-p,--n-prompt", f.n_prompt, "prompt lengths of the pp tests (0 = none)")->default_str("512");
    app.add_option("-n,--n-gen", f.n_gen, "generated lengths of the tg tests (0 = none)")->default_str("128");
    app.add_option("--pg", f.pg, "-pg P,N: a prompt of P then N generated tokens, timed together; repeatable");
    app.add_option("-d,--n-depth,--depth", f.n_depth, "KV positions filled (untimed) before each test")->default_str("0");
    app.add_option("-r,--repetitions", f.repetitions, "timed repetitions per test")->check(CLI::Range(1, 100000))->default_str("5");
    app.add_option("-t,--threads", f.threads, "CPU threads, a list (default: all physical cores)");
    app.add_option("-o,--output,--output-format", f.output, "md | csv | json | jsonl | sql (-npl: md | jsonl)")
        ->default_str("md");
    app.add_option("--output-err", f.output_err, "-oe FORMAT: also print this format to stderr (none)");
    app.add_option("-c,--ctx-size", f.ctx_size, "context length (default: what the largest test needs); with -npl: "
                   "KV positions of all sequences together (tests needing more are skipped)")
        ->check(CLI::Range(0, 1 << 24));
    app.add_option("--npp", f.npp, "-npp P,...: batched bench (llama-batched-bench): prompt tokens per sequence "
                   "(default 128 when -ntg or -npl is given)");
    app.add_option("--ntg", f.ntg, "-ntg T,...: batched bench: tokens generated per sequence (default 128)");
    app.add_option("--npl", f.npl, "-npl B,...: batched bench: sequences decoded together (default 1)");
    add_gpu_and_prompt_flags(app, f.gpu, f.with_prefill_decode, f.batch_prefill_size, "-b,--batch-prefill-size");
    add_cpu_exact_flag(app, f.cpu_exact);
    app.add_flag("--no-warmup", f.no_warmup, "skip the unreported warm-up run of each test");
    app.add_flag("--progress", f.progress, "print each test on stderr as it starts");
    app.add_option("--seed", f.seed, "seed of the synthetic token ids")->default_str("1234");
    app.add_option("--sql-table", f.sql_table, "table name of -o sql")->default_str("test");
    f.g.add(app);
}

// -npp / -ntg / -npl: llama-batched-bench's measurement and output (src/bench/batched_bench.h)
int batched_bench(const CLI::App& app, BenchFlags& f) {
    for (const char* flag : {"--n-prompt", "--n-gen", "--pg", "--n-depth", "--repetitions", "--output-err",
                             "--with-prefill-decode", "--sql-table"})
        if (app.count(flag) > 0)
            fail_usage("{}: not a flag of the batched bench (-npp/-ntg/-npl); expected the flags of "
                       "llama-batched-bench", flag);
    if (f.output != "md" && f.output != "jsonl")
        fail_usage("-o: the batched bench prints md or jsonl, found '{}'", f.output);
    if (f.models.size() > 1) fail_usage("-m: the batched bench takes one model, found {}", f.models.size());
    BatchedBenchOptions o;
    o.model = f.models.empty() ? default_model_path() : f.models[0];
    if (o.model.empty()) fail_usage("-m: expected a model path, found an empty one");
    if (!f.npp.empty()) o.n_pp = parse_int_list(f.npp, "-npp");
    if (!f.ntg.empty()) o.n_tg = parse_int_list(f.ntg, "-ntg");
    if (!f.npl.empty()) o.n_pl = parse_int_list(f.npl, "-npl");
    const std::vector<int> threads = f.threads.empty() ? std::vector<int>{} : parse_int_list(f.threads, "-t");
    if (threads.size() > 1) fail_usage("-t: the batched bench takes one thread count, found {}", threads.size());
    o.n_threads = threads.empty() ? cpu::fast::physical_cores() : threads[0];
    if (o.n_threads < 1 || o.n_threads > 1024) fail_usage("-t: expected threads in [1, 1024], found {}", o.n_threads);
    o.n_kv_max = f.ctx_size;
    o.batch_rows = f.batch_prefill_size == kAutoPromptChunks ? 0 : f.batch_prefill_size;  // 0: the bench's default
    o.gpu = f.gpu;
    o.warmup = !f.no_warmup;
    o.seed = f.seed;
    f.g.check();
    Profiler profiler;
    o.cuda = f.g.cuda(false, &profiler);
    batched_bench_check(o);  // usage errors before the model loads
    const bool jsonl = f.output == "jsonl";
    BatchedBenchSetup setup;
    const auto emit = [](const std::string& s) {
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fflush(stdout);
    };
    batched_bench_run(
        o,
        [&](const BatchedBenchSetup& s) {
            setup = s;
            if (!jsonl) emit(batched_md_head(s));
        },
        [&](const BatchedBenchResult& r) { emit(jsonl ? batched_jsonl(setup, r) : batched_md_row(r)); },
        [&](int level, const std::string& msg) {
            if (level == 0 || f.progress) std::fprintf(stderr, "[jitllm] bench: %s\n", msg.c_str());
        });
    if (!jsonl) emit("\n");
    if (!profiler.records().empty()) std::fprintf(stderr, "%s", profiler.table().c_str());
    return 0;
}

}  // namespace

int cmd_bench(const Args& args_in) {
    CLI::App app{"jitllm bench: llama-bench-style prompt (pp) and generation (tg) speed, with "
                 "bytes per token, GB/s and % of the copy bandwidth (results on stdout)", "jitllm bench"};
    BenchFlags f;
    add_bench_flags(app, f);
    // llama-bench's two-letter short flags (CLI11 short flags are one character)
    Args args = args_in;
    for (auto& a : args) {
        if (a == "-pg") a = "--pg";
        if (a == "-oe") a = "--output-err";
        if (a == "-npp" || a == "-ntg" || a == "-npl") a = "-" + a;
    }
    if (!parse_args(app, args)) return 0;
    if (!f.npp.empty() || !f.ntg.empty() || !f.npl.empty()) return batched_bench(app, f);

    BenchOptions o;
    o.models = f.models.empty() ? std::vector<std::string>{default_model_path()} : f.models;
    for (const auto& m : o.models)
        if (m.empty()) fail_usage("-m: expected a model path, found an empty one");
    o.n_prompt = parse_int_list(f.n_prompt, "-p");
    o.n_gen = parse_int_list(f.n_gen, "-n");
    o.n_depth = parse_int_list(f.n_depth, "-d");
    for (const auto& v : f.pg) {
        const auto parts = split(v, ',');
        if (parts.size() != 2) fail_usage("-pg: expected P,N (prompt, generated), found '{}'", v);
        o.pg.emplace_back(parse_int(parts[0], "-pg", v), parse_int(parts[1], "-pg", v));
    }
    o.n_threads = f.threads.empty()
                      ? std::vector<int>{cpu::fast::physical_cores()}
                      : parse_int_list(f.threads, "-t");
    for (int t : o.n_threads)
        if (t < 1 || t > 1024) fail_usage("-t: expected threads in [1, 1024], found {}", t);
    o.repetitions = f.repetitions;
    o.warmup = !f.no_warmup;
    Profiler profiler;  // --profiler: per-kernel table of every timed and warm-up run (no graphs)
    f.apply_engine(o, false, &profiler);
    o.seed = f.seed;

    const BenchFormat out_fmt = bench_format_from_name(f.output, "-o");
    std::unique_ptr<BenchPrinter> err_printer;
    PrintOptions po;
    po.gpu = o.gpu || o.opencl;
    po.sql_table = f.sql_table;
    if (po.sql_table.empty() || !(std::isalpha(uint8_t(po.sql_table[0])) || po.sql_table[0] == '_') ||
        po.sql_table.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
            std::string::npos)
        fail_usage("--sql-table: expected an SQL identifier ([A-Za-z_][A-Za-z0-9_]*), found '{}'", po.sql_table);
    if (f.output_err != "none") err_printer = BenchPrinter::make(bench_format_from_name(f.output_err, "-oe"), po);
    bench_tests(o);  // a usage error before any model is loaded

    auto printer = BenchPrinter::make(out_fmt, po);
    const auto emit = [](std::FILE* fp, const std::string& s) {
        std::fwrite(s.data(), 1, s.size(), fp);
        std::fflush(fp);
    };
    emit(stdout, printer->begin());
    if (err_printer) emit(stderr, err_printer->begin());
    bench_run(
        o,
        [&](const BenchResult& r) {
            emit(stdout, printer->row(r));
            if (err_printer) emit(stderr, err_printer->row(r));
        },
        [&](int level, const std::string& msg) {
            if (level == 0 || f.progress) std::fprintf(stderr, "[jitllm] bench: %s\n", msg.c_str());
        });
    emit(stdout, printer->end());
    if (err_printer) emit(stderr, err_printer->end());
    if (!profiler.records().empty()) {
        std::fprintf(stderr, "%s", profiler.table().c_str());
        if (!f.g.profiler_dump_dir.empty()) {
            profiler.dump(f.g.profiler_dump_dir);
            std::fprintf(stderr, "[jitllm] profile written to %s/profile.json and trace.json\n",
                         f.g.profiler_dump_dir.c_str());
        }
    }
    return 0;
}

}  // namespace jitllm::cli
