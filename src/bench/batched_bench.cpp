// `jitllm bench -npp/-ntg/-npl` (see batched_bench.h).
#include "bench/batched_bench.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "core/error.h"
#include "runtime/slots.h"

namespace jitllm {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One test: the prompts of `pl` sequences (logits for each one's last token), then `tg` steps of
// one token per sequence, each fed the sequence's pick of the step before. Returns the two times.
BatchedBenchResult run_test(SequenceBatch& b, int pp, int tg, int pl, std::mt19937_64& rng) {
    std::uniform_int_distribution<int32_t> id(0, b.n_vocab() - 1);
    for (int s = 0; s < pl; ++s) b.reset(s);
    std::vector<SeqStep> steps(static_cast<size_t>(pl));
    for (int s = 0; s < pl; ++s) {
        SeqStep& st = steps[size_t(s)];
        st.seq = s;
        st.tokens.resize(size_t(pp));
        for (auto& t : st.tokens) t = id(rng);
        st.pos = 0;
        st.host_logits = false;  // the backend's greedy pick only (the logits stay on the device)
    }
    BatchedBenchResult r;
    r.pp = pp, r.tg = tg, r.pl = pl;
    r.n_kv = pl * (pp + tg);
    const auto t0 = Clock::now();
    b.run(steps);
    r.t_pp = seconds_since(t0);
    const auto t1 = Clock::now();
    for (int i = 0; i < tg; ++i) {
        for (auto& st : steps) {
            st.tokens.assign(1, st.argmax);
            st.pos = pp + i;
            st.ahead = i + 1 < tg;  // (a lone sequence's next step queued ahead, as `jitllm --gpu`)
        }
        b.run(steps);
    }
    r.t_tg = seconds_since(t1);
    return r;
}

}  // namespace

void batched_bench_check(const BatchedBenchOptions& o) {
    auto check = [](const std::vector<int>& v, const char* flag, int lo) {
        if (v.empty()) fail_usage("{}: expected at least one value, found none", flag);
        for (int x : v)
            if (x < lo) fail_usage("{}: expected values of at least {}, found {}", flag, lo, x);
    };
    check(o.n_pp, "-npp", 1);
    check(o.n_tg, "-ntg", 0);
    check(o.n_pl, "-npl", 1);
    if (o.n_kv_max < 0) fail_usage("-c: expected at least 0 positions, found {}", o.n_kv_max);
    if (o.batch_rows < 0) fail_usage("-b: expected at least 0 rows, found {}", o.batch_rows);
}

void batched_bench_run(const BatchedBenchOptions& o, const std::function<void(const BatchedBenchSetup&)>& on_setup,
                       const std::function<void(const BatchedBenchResult&)>& on_result,
                       const std::function<void(int, const std::string&)>& log) {
    const auto say = [&](int level, const std::string& s) {
        if (log) log(level, s);
    };
    batched_bench_check(o);
    // the tests that fit the pool (llama-batched-bench skips the others)
    struct Test {
        int pp, tg, pl;
    };
    std::vector<Test> tests;
    int n_ctx = 0, n_seq = 0;
    int64_t pool = 0;  // KV positions: -c, else what the largest test takes
    for (int pp : o.n_pp)
        for (int tg : o.n_tg)
            for (int pl : o.n_pl) {
                // N_KV in whole blocks of the pool: each sequence's own
                const int64_t n_kv = int64_t(pl) * ((pp + tg + kKvBlockTokens - 1) / kKvBlockTokens) * kKvBlockTokens;
                if (o.n_kv_max > 0 && n_kv > o.n_kv_max) {
                    say(0, fmt::format("pp {} tg {} pl {}: skipped, N_KV {} ({} in blocks of {}) exceeds -c {}", pp,
                                       tg, pl, pl * (pp + tg), n_kv, kKvBlockTokens, o.n_kv_max));
                    continue;
                }
                tests.push_back({pp, tg, pl});
                n_ctx = std::max(n_ctx, pp + tg);
                n_seq = std::max(n_seq, pl);
                pool = std::max(pool, n_kv);
            }
    if (tests.empty()) fail_usage("-c {}: no test fits; the smallest needs more positions", o.n_kv_max);
    if (o.n_kv_max > 0) pool = o.n_kv_max;

    SequenceBatchOptions so;
    so.model_path = o.model;
    so.n_ctx = n_ctx;
    so.n_threads = o.n_threads;
    so.gpu = o.gpu;
    so.cuda = o.cuda;
    so.n_seq = n_seq;
    so.batch_rows = o.batch_rows > 0 ? o.batch_rows : std::max(n_seq, 512);
    so.kv_pool_tokens = pool;
    so.prefix_reuse = false;  // random prompts: nothing to share, and nothing to look up
    SequenceBatch b(so);
    BatchedBenchSetup setup;
    setup.n_kv_max = int(b.kv_pool_tokens());
    setup.n_batch = b.plan().batch_rows;
    setup.n_gpu_layers = o.gpu ? 99 : 0;
    setup.n_threads = o.n_threads;
    say(0, fmt::format("{}: {} backend, {} sequences of up to {} positions, a KV pool of {}, {} rows a batch step, "
                       "load {:.0f} ms", o.model, b.backend_name(), b.n_seq(), b.n_ctx(), setup.n_kv_max, setup.n_batch,
                       b.load_ms()));
    on_setup(setup);
    std::mt19937_64 rng(o.seed);
    int warm_pl = -1;
    for (size_t i = 0; i < tests.size(); ++i) {
        const Test& t = tests[i];
        say(1, fmt::format("test {}/{}: pp {} tg {} pl {}", i + 1, tests.size(), t.pp, t.tg, t.pl));
        // an untimed short run per sequence count: the step shapes of the test (prompt chunks, the
        // logits step of pl rows) compiled or captured before the clock runs
        if (o.warmup && t.pl != warm_pl) {
            run_test(b, t.pp, std::min(t.tg, 2), t.pl, rng);
            warm_pl = t.pl;
        }
        on_result(run_test(b, t.pp, t.tg, t.pl, rng));
    }
}

std::string batched_md_head(const BatchedBenchSetup& s) {
    std::string out = fmt::format(
        "\nbatched bench: n_kv_max = {}, n_batch = {}, n_ubatch = {}, flash_attn = 0, is_pp_shared = 0, "
        "is_tg_separate = 0, n_gpu_layers = {}, n_threads = {}, n_threads_batch = {}\n\n",
        s.n_kv_max, s.n_batch, s.n_batch, s.n_gpu_layers, s.n_threads, s.n_threads);
    out += fmt::format("|{:>6} | {:>6} | {:>4} | {:>6} | {:>8} | {:>8} | {:>8} | {:>8} | {:>8} | {:>8} |\n", "PP", "TG",
                       "B", "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s");
    const std::string d6(6, '-'), d4(4, '-'), d8(8, '-');
    out += fmt::format("|{0}-|-{0}-|-{1}-|-{0}-|-{2}-|-{2}-|-{2}-|-{2}-|-{2}-|-{2}-|\n", d6, d4, d8);
    return out;
}

std::string batched_md_row(const BatchedBenchResult& r) {
    return fmt::format("|{:>6} | {:>6} | {:>4} | {:>6} | {:>8.3f} | {:>8.2f} | {:>8.3f} | {:>8.2f} | {:>8.3f} | {:>8.2f} |\n",
                       r.pp, r.tg, r.pl, r.n_kv, r.t_pp, r.speed_pp(), r.t_tg, r.speed_tg(), r.t(), r.speed());
}

std::string batched_jsonl(const BatchedBenchSetup& s, const BatchedBenchResult& r) {
    return fmt::format(
        "{{\"n_kv_max\": {}, \"n_batch\": {}, \"n_ubatch\": {}, \"flash_attn\": 0, \"is_pp_shared\": 0, "
        "\"n_gpu_layers\": {}, \"n_threads\": {}, \"n_threads_batch\": {}, \"pp\": {}, \"tg\": {}, \"pl\": {}, "
        "\"n_kv\": {}, \"t_pp\": {:.6f}, \"speed_pp\": {:.6f}, \"t_tg\": {:.6f}, \"speed_tg\": {:.6f}, "
        "\"t\": {:.6f}, \"speed\": {:.6f}}}\n",
        s.n_kv_max, s.n_batch, s.n_batch, s.n_gpu_layers, s.n_threads, s.n_threads, r.pp, r.tg, r.pl, r.n_kv, r.t_pp,
        r.speed_pp(), r.t_tg, r.speed_tg(), r.t(), r.speed());
}

}  // namespace jitllm
