// `jitllm bench` measurement (see bench_runner.h). Method, as llama-bench: synthetic token ids,
// one warm-up run, -r timed repetitions; pp times Engine::feed of the prompt, tg fills the depth
// untimed and times the greedy decode loop only (tokenisation and sampling are not involved).
#include "bench/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <random>

#include "backends/cuda/cuda_backend.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/gguf_reader.h"

namespace jitllm {

namespace {

constexpr size_t kGpuCopyBytes = size_t(2) << 30;   // 2 GiB: far beyond the 60 MB L2
constexpr size_t kCpuCopyBytes = size_t(256) << 20;  // 256 MiB: far beyond any LLC
constexpr int kGpuCopyReps = 9;
constexpr int kCpuCopyReps = 5;

double median_of(std::vector<double> v) {
    JITLLM_CHECK(!v.empty(), "median of no samples");
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The one place bench turns its options into an Engine's (the prefill batch size also goes into
// BenchResult::n_batch / n_ubatch below).
EngineOptions bench_engine_options(const BenchOptions& o, const std::string& model, int threads,
                                   int n_ctx) {
    EngineOptions eo;
    eo.model_path = model;
    eo.n_ctx = n_ctx;
    eo.n_threads = threads;
    eo.gpu = o.gpu;
    eo.with_prefill_decode = o.with_prefill_decode;
    eo.batch_prefill_size = o.batch_prefill_size;
    eo.cuda = o.cuda;
    return eo;
}

std::string cpu_model_name() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) {
                const auto b = line.find_first_not_of(" \t", colon + 1);
                return b == std::string::npos ? std::string() : line.substr(b);
            }
        }
    return "unknown";
}

// llama.cpp's model description "<arch> <size> <ftype>". The ftype comes from general.file_type;
// without it, from the most common tensor type, marked "(guessed)" as llama.cpp does.
std::string model_type_of(const Model& m, uint64_t n_params) {
    const GgufReader& g = *m.gguf;
    const std::string size = g.get_string_opt("general.size_label").value_or(params_size_label(n_params));
    std::string ftype;
    if (auto ft = g.get_int_opt("general.file_type")) {
        ftype = ftype_name(*ft);
    } else {
        std::map<GgmlType, int> count;
        GgmlType top = GgmlType::F32;
        for (const auto& t : g.tensors())
            if (++count[t.type] > count[top]) top = t.type;
        static const std::map<GgmlType, int64_t> kFtypeOf = {
            {GgmlType::F32, 0},   {GgmlType::F16, 1},   {GgmlType::BF16, 32}, {GgmlType::Q4_0, 2},
            {GgmlType::Q4_1, 3},  {GgmlType::Q5_0, 8},  {GgmlType::Q5_1, 9},  {GgmlType::Q8_0, 7},
            {GgmlType::Q2_K, 10}, {GgmlType::Q3_K, 12}, {GgmlType::Q4_K, 15}, {GgmlType::Q5_K, 17},
            {GgmlType::Q6_K, 18},
        };
        const auto it = kFtypeOf.find(top);
        ftype = (it != kFtypeOf.end() ? ftype_name(it->second) : std::string(type_name(top))) + " (guessed)";
    }
    return fmt::format("{} {} {}", m.config.arch, size, ftype);
}

// The fields every result of one engine shares (model, backend, copy bandwidth).
BenchResult describe(Engine& e, const BenchOptions& o, const std::string& model, int threads) {
    BenchResult r;
#ifdef JITLLM_BUILD_COMMIT
    r.build_commit = JITLLM_BUILD_COMMIT;
#endif
    r.cpu_info = cpu_model_name();
    r.model_filename = model;
    for (const auto& t : e.model().gguf->tensors()) {
        r.model_size += t.n_bytes;
        r.model_n_params += t.n_elements;
    }
    r.model_type = model_type_of(e.model(), r.model_n_params);
    r.n_threads = threads;
    if (auto* cb = dynamic_cast<CudaBackend*>(&e.backend())) {
        const DeviceInfo& dev = cb->context().device();
        r.backends = "CUDA";
        r.gpu_info = dev.name;
        r.gpu_arch = dev.arch;
        r.n_gpu_layers = 99;  // llama-bench's "all layers"
        const std::string kv = cb->schedule().kv_type == "half" ? "f16" : "f32";
        r.type_k = r.type_v = kv;
        const CudaInitStats& s = cb->init_stats();
        r.jit_compile_ms = s.jit_wall_ms;
        r.kernel_cache = s.jit_compiled == 0 ? "hit" : s.jit_cached > 0 ? "partial" : "miss";
    } else {
        r.backends = "CPU";
    }
    r.copy_bw_gb_s = copy_bandwidth_gb_s(e, threads, o.copy_bytes);
    return r;
}

std::vector<int32_t> random_ids(std::mt19937_64& rng, int n, int n_vocab) {
    std::uniform_int_distribution<int32_t> dist(0, n_vocab - 1);
    std::vector<int32_t> ids(size_t(std::max(n, 0)));
    for (auto& id : ids) id = dist(rng);
    return ids;
}

// One run of a test; returns the timed nanoseconds (depth fill excluded).
uint64_t run_once(Engine& e, const BenchTest& t, std::mt19937_64& rng) {
    const int n_vocab = e.model().config.n_vocab;
    e.reset();
    if (t.n_depth > 0) e.feed(random_ids(rng, t.n_depth, n_vocab));
    const std::vector<int32_t> prompt = random_ids(rng, t.n_prompt, n_vocab);
    // tg from an empty context starts at BOS (or a random id when the vocabulary has none)
    int32_t tok = e.tokenizer().bos();
    if (tok < 0) tok = random_ids(rng, 1, n_vocab)[0];
    if (t.n_depth > 0) tok = e.backend().sampled_token();

    const auto t0 = std::chrono::steady_clock::now();
    if (!prompt.empty()) {
        e.feed(prompt);
        tok = e.backend().sampled_token();
    }
    for (int i = 0; i < t.n_gen; ++i) {
        e.feed({tok});
        tok = e.backend().sampled_token();
    }
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - t0).count();
    return uint64_t(std::max<int64_t>(ns, 1));
}

double cuda_copy_bandwidth_gb_s(CudaContext& ctx, size_t bytes) {
    size_t free_b = 0, total_b = 0;
    ctx.mem_info(&free_b, &total_b);
    bytes = std::min(bytes, free_b / 4) & ~((size_t(1) << 20) - 1);  // two buffers, room to spare
    if (bytes == 0)
        fail_device("bench: no room for the copy-bandwidth buffers: {} of {} free",
                    format_bytes(free_b), format_bytes(total_b));
    // buffers and events released on every path (a failed launch throws)
    struct Buffers {
        CudaContext& ctx;
        CUdeviceptr a = 0, b = 0;
        CUevent ev[2] = {nullptr, nullptr};
        ~Buffers() {
            for (CUevent e : ev)
                if (e) ctx.driver().cuEventDestroy(e);
            try {
                ctx.free(a);
                ctx.free(b);
            } catch (const Error&) {
            }
        }
    } buf{ctx};
    const CudaDriver& d = ctx.driver();
    buf.a = ctx.alloc(bytes, MemCategory::Other, "bench copy source");
    buf.b = ctx.alloc(bytes, MemCategory::Other, "bench copy destination");
    ctx.memset_async(buf.a, 1, bytes);
    ctx.memset_async(buf.b, 0, bytes);
    ctx.make_current();
    for (auto& e : buf.ev) JITLLM_CUDA_TRY(d, cuEventCreate(&e, CU_EVENT_DEFAULT));
    std::vector<double> gb_s;
    for (int i = 0; i <= kGpuCopyReps; ++i) {  // i == 0: warm-up
        JITLLM_CUDA_TRY(d, cuEventRecord(buf.ev[0], ctx.stream()));
        JITLLM_CUDA_TRY(d, cuMemcpyDtoDAsync(buf.b, buf.a, bytes, ctx.stream()));
        JITLLM_CUDA_TRY(d, cuEventRecord(buf.ev[1], ctx.stream()));
        JITLLM_CUDA_TRY(d, cuEventSynchronize(buf.ev[1]));
        float ms = 0;
        JITLLM_CUDA_TRY(d, cuEventElapsedTime(&ms, buf.ev[0], buf.ev[1]));
        if (i > 0 && ms > 0) gb_s.push_back(2.0 * double(bytes) / (double(ms) * 1e6));
    }
    if (gb_s.empty()) fail_device("bench: the copy-bandwidth copies reported no elapsed time");
    return median_of(gb_s);
}

}  // namespace

std::vector<BenchTest> bench_tests(const BenchOptions& o) {
    std::vector<BenchTest> tests;
    for (int d : o.n_depth) {
        for (int p : o.n_prompt)
            if (p > 0) tests.push_back({p, 0, d});
        for (int n : o.n_gen)
            if (n > 0) tests.push_back({0, n, d});
        for (const auto& [p, n] : o.pg)
            if (p > 0 || n > 0) tests.push_back({p, n, d});
    }
    if (tests.empty())
        fail_usage("bench: no tests to run: expected a positive value in -p, -n or -pg, found none");
    return tests;
}

DecodeBytes decode_bytes(Engine& e) {
    DecodeBytes b;
    if (auto* cb = dynamic_cast<CudaBackend*>(&e.backend())) {
        for (const auto& k : cb->schedule().decode) {
            b.fixed += k.bytes;
            b.per_pos += k.bytes_per_pos;
        }
        return b;
    }
    for (const auto& t : e.plan().decode) b.fixed += t.weight_bytes;
    const ModelConfig& c = e.model().config;
    b.per_pos = uint64_t(c.n_layers) * uint64_t(c.kv_dim() + c.v_dim()) * sizeof(float);
    return b;
}

uint64_t decode_bytes_per_token(const DecodeBytes& b, int n_depth, int n_gen) {
    const double attended = double(n_depth) + double(n_gen + 1) / 2.0;
    return b.fixed + uint64_t(std::llround(double(b.per_pos) * attended));
}

double cpu_copy_bandwidth_gb_s(int n_threads, size_t bytes) {
    n_threads = std::max(n_threads, 1);
    bytes = std::max<size_t>(bytes, size_t(n_threads) * 4096);
    std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);  // every page touched before timing
    ThreadPool pool(n_threads);
    const size_t chunk = (bytes + size_t(n_threads) - 1) / size_t(n_threads);
    std::vector<double> gb_s;
    volatile uint8_t sink = 0;
    for (int i = 0; i <= kCpuCopyReps; ++i) {  // i == 0: warm-up
        const auto t0 = std::chrono::steady_clock::now();
        pool.parallel_for(n_threads, [&](int k) {
            const size_t off = size_t(k) * chunk;
            if (off < bytes) std::memcpy(dst.data() + off, src.data() + off, std::min(chunk, bytes - off));
        });
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        sink = sink + dst[size_t(i) % bytes];
        if (i > 0 && s > 0) gb_s.push_back(2.0 * double(bytes) / s / 1e9);
    }
    (void)sink;
    return gb_s.empty() ? 0.0 : median_of(gb_s);
}

double copy_bandwidth_gb_s(Engine& e, int n_threads, size_t bytes) {
    if (auto* cb = dynamic_cast<CudaBackend*>(&e.backend()))
        return cuda_copy_bandwidth_gb_s(cb->context(), bytes > 0 ? bytes : kGpuCopyBytes);
    return cpu_copy_bandwidth_gb_s(n_threads, bytes > 0 ? bytes : kCpuCopyBytes);
}

void bench_run(const BenchOptions& o, const std::function<void(const BenchResult&)>& on_result,
               const std::function<void(int, const std::string&)>& log) {
    const auto say = [&](int level, const std::string& s) {
        if (log) log(level, s);
    };
    if (o.repetitions < 1)
        fail_usage("-r: expected at least 1 repetition, found {}", o.repetitions);
    const std::vector<BenchTest> tests = bench_tests(o);
    int needed = 0;
    for (const auto& t : tests) needed = std::max(needed, t.n_positions());
    if (o.n_ctx > 0 && o.n_ctx < needed)
        fail_usage("--ctx-size {}: the largest test needs {} positions (depth + prompt + generated); "
                   "hint: raise --ctx-size or leave it out", o.n_ctx, needed);
    const int n_ctx = o.n_ctx > 0 ? o.n_ctx : needed;

    for (const auto& model : o.models) {
        {
            const auto m = load_model(model);  // mmap + validation only; checks the context first
            if (n_ctx > m->config.n_ctx_train)
                fail("{}: the tests need {} positions but the model's context length is {}; "
                     "hint: lower -p, -n, -pg or -d", model, n_ctx, m->config.n_ctx_train);
        }
        for (int threads : o.n_threads) {
            Engine e(bench_engine_options(o, model, threads, n_ctx));
            // tokens come from the backend's greedy `sample` task: logits may stay on the device
            e.backend().set_logits_needed(false);
            BenchResult base = describe(e, o, model, threads);
            base.n_batch = base.n_ubatch = std::max(1, e.plan().batch_rows);
            const DecodeBytes db = decode_bytes(e);
            say(0, fmt::format("{}: {} backend, {} thread{}, n_ctx {}, load {:.0f} ms{}, copy bandwidth {:.1f} GB/s",
                            model, base.backends, threads, threads == 1 ? "" : "s", n_ctx, e.times().load_ms,
                            base.backends == "CUDA" ? fmt::format(" (JIT {:.0f} ms, cache {})",
                                                                  base.jit_compile_ms, base.kernel_cache)
                                                    : std::string(),
                            base.copy_bw_gb_s));
            std::mt19937_64 rng(o.seed);
            for (size_t ti = 0; ti < tests.size(); ++ti) {
                const BenchTest& t = tests[ti];
                say(1, fmt::format("test {}/{}: {}", ti + 1, tests.size(), t.name()));
                BenchResult r = base;
                r.n_prompt = t.n_prompt;
                r.n_gen = t.n_gen;
                r.n_depth = t.n_depth;
                r.test_time = iso8601_utc(int64_t(std::time(nullptr)));
                // bytes per token only for pure decode tests: prompt processing will be batched
                if (t.n_prompt == 0) r.bytes_per_token = decode_bytes_per_token(db, t.n_depth, t.n_gen);
                if (o.warmup) run_once(e, t, rng);
                for (int k = 0; k < o.repetitions; ++k) r.samples_ns.push_back(run_once(e, t, rng));
                on_result(r);
            }
        }
    }
}

}  // namespace jitllm
