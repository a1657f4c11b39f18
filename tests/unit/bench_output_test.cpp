// `jitllm bench`: the output formats of a fixed, hand-made result set against hand-written text
// (md, csv, json, jsonl, sql), the statistics and naming helpers against hand-computed values, and
// a tiny real run on the bundled stories260K (in process and through the built binary) whose
// fields must exist and be positive. No timing assertions.
//
// src/bench is compiled into the jitllm executable, not a library, so its sources are compiled
// into this test directly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/bench_output.cpp"
#include "bench/bench_result.cpp"
#include "bench/bench_runner.cpp"
#include "core/error.h"
#include "fixtures/engine_factory.h"
#include "fixtures/test_support.h"

namespace jitllm {
namespace {

// tg128 on the CPU: per-repetition rates 200, 500 and 800 tok/s (128e9 / ns), so avg_ts = 500,
// stddev_ts = 300; avg_ns = 352000000, stddev_ns = sqrt(64512e12) = 253992125.86 -> 253992126.
// 2e9 bytes per token at 500 tok/s = 1000 GB/s = 25 % of 4000 GB/s.
BenchResult cpu_tg() {
    BenchResult r;
    r.build_commit = "abc1234";
    r.cpu_info = "Test CPU";
    r.backends = "CPU";
    r.model_filename = "m.gguf";
    r.model_type = "llama 8B Q4_0";
    r.model_size = 3221225472ull;  // 3.00 GiB
    r.model_n_params = 8030261248ull;
    r.n_threads = 4;
    r.n_gen = 128;
    r.test_time = "2026-12-01T10:00:00Z";
    r.samples_ns = {640000000, 256000000, 160000000};
    r.bytes_per_token = 2000000000ull;
    r.copy_bw_gb_s = 4000.0;
    return r;
}

// pp512 at depth 4096: 512 tokens in 1 s twice; no bytes per token (not a decode test). The file
// name carries both quote characters to exercise csv and sql escaping.
BenchResult cpu_pp_depth() {
    BenchResult r = cpu_tg();
    r.model_filename = "o'k \"m\".gguf";
    r.n_prompt = 512;
    r.n_gen = 0;
    r.n_depth = 4096;
    r.samples_ns = {1000000000, 1000000000};
    r.bytes_per_token = 0;
    return r;
}

// tg128 at depth 4096 on the GPU: 128 tokens in 80 ms = 1600 tok/s; 2.25e9 B/token -> 3600 GB/s,
// 3600 / 4300 = 83.72 %.
BenchResult gpu_tg_depth() {
    BenchResult r;
    r.build_commit = "abc1234";
    r.cpu_info = "Test CPU";
    r.gpu_info = "NVIDIA H200";
    r.backends = "CUDA";
    r.model_filename = "1b.gguf";
    r.model_type = "llama 1B F16";
    r.model_size = 2469606195ull;  // 2.30 GiB
    r.model_n_params = 1235814400ull;
    r.n_gpu_layers = 99;
    r.type_k = r.type_v = "f16";
    r.n_gen = 128;
    r.n_depth = 4096;
    r.test_time = "2026-12-01T10:00:00Z";
    r.samples_ns = {80000000, 80000000};
    r.bytes_per_token = 2250000000ull;
    r.copy_bw_gb_s = 4300.0;
    r.jit_compile_ms = 812.5;
    r.kernel_cache = "miss";
    r.gpu_arch = "sm_90";
    return r;
}

TEST(BenchResult, statistics_follow_llama_bench) {
    const BenchResult r = cpu_tg();
    const std::vector<double> ts = r.samples_ts();
    ASSERT_EQ(ts.size(), 3u);
    EXPECT_DOUBLE_EQ(ts[0], 200.0);
    EXPECT_DOUBLE_EQ(ts[1], 500.0);
    EXPECT_DOUBLE_EQ(ts[2], 800.0);
    EXPECT_EQ(r.avg_ns(), 352000000u);
    EXPECT_EQ(r.stddev_ns(), 253992126u);
    EXPECT_DOUBLE_EQ(r.avg_ts(), 500.0);  // mean of rates, not 128e9 / avg_ns (363.6)
    EXPECT_DOUBLE_EQ(r.stddev_ts(), 300.0);
    EXPECT_DOUBLE_EQ(r.bw_gb_s(), 1000.0);
    EXPECT_DOUBLE_EQ(r.pct_copy_bw(), 25.0);
    BenchResult one = r;
    one.samples_ns = {1000};
    EXPECT_EQ(one.stddev_ns(), 0u);
    EXPECT_DOUBLE_EQ(one.stddev_ts(), 0.0);
}

TEST(BenchResult, test_names_match_llama_bench) {
    EXPECT_EQ((BenchTest{512, 0, 0}.name()), "pp512");
    EXPECT_EQ((BenchTest{0, 128, 0}.name()), "tg128");
    EXPECT_EQ((BenchTest{512, 128, 0}.name()), "pp512+tg128");
    EXPECT_EQ((BenchTest{0, 128, 4096}.name()), "tg128 @ d4096");
    EXPECT_EQ((BenchTest{0, 128, 4096}.n_positions()), 4224);
}

TEST(BenchResult, naming_helpers) {
    EXPECT_EQ(ftype_name(0), "all F32");
    EXPECT_EQ(ftype_name(1), "F16");
    EXPECT_EQ(ftype_name(2), "Q4_0");
    EXPECT_EQ(ftype_name(7), "Q8_0");
    EXPECT_EQ(ftype_name(15), "Q4_K - Medium");
    EXPECT_EQ(ftype_name(32), "BF16");
    EXPECT_EQ(ftype_name(99), "ftype 99");
    EXPECT_EQ(params_size_label(8030261248ull), "8B");
    EXPECT_EQ(params_size_label(1235814400ull), "1B");
    EXPECT_EQ(params_size_label(134515008ull), "135M");
    EXPECT_EQ(params_size_label(260000ull), "260K");
    EXPECT_EQ(params_size_label(999ull), "999");
    EXPECT_EQ(iso8601_utc(0), "1970-01-01T00:00:00Z");
    EXPECT_EQ(iso8601_utc(1796119200), "2026-12-01T10:00:00Z");
}

TEST(BenchRunner, decode_bytes_are_the_mean_over_the_generated_positions) {
    // positions 4..6 attend 5, 6, 7 cached positions: mean 6 = depth 4 + (3 + 1) / 2
    EXPECT_EQ(decode_bytes_per_token({1000, 10}, 4, 3), 1060u);
    EXPECT_EQ(decode_bytes_per_token({1000, 10}, 0, 1), 1010u);
    EXPECT_EQ(decode_bytes_per_token({1000, 0}, 4096, 128), 1000u);
}

TEST(BenchRunner, test_matrix_order_and_empty_matrix) {
    BenchOptions o;
    o.n_prompt = {0, 16};
    o.n_gen = {4};
    o.pg = {{16, 4}};
    o.n_depth = {0, 32};
    const auto t = bench_tests(o);
    std::vector<std::string> names;
    for (const auto& x : t) names.push_back(x.name());
    EXPECT_EQ(names, (std::vector<std::string>{"pp16", "tg4", "pp16+tg4", "pp16 @ d32", "tg4 @ d32",
                                               "pp16+tg4 @ d32"}));
    o.n_prompt = {0};
    o.n_gen = {0};
    o.pg.clear();
    EXPECT_THROW(bench_tests(o), Error);
}

TEST(BenchOutput, format_names) {
    EXPECT_EQ(bench_format_from_name("jsonl", "-o"), BenchFormat::Jsonl);
    try {
        bench_format_from_name("xml", "-o");
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Usage);
        EXPECT_STREQ(e.what(), "-o: unknown output format: expected md, csv, json, jsonl or sql, found 'xml'");
    }
}

TEST(BenchOutput, md_table) {
    const std::string want =
        "| model                          |       size |     params | backend  | threads |             test |                  t/s |      GB/s | % copy bw |\n"
        "| :----------------------------- | ---------: | ---------: | :------- | ------: | ---------------: | -------------------: | --------: | --------: |\n"
        "| llama 8B Q4_0                  |   3.00 GiB |     8.03 B | CPU      |       4 |            tg128 |      500.00 ± 300.00 |   1000.00 |      25.0 |\n"
        "| llama 8B Q4_0                  |   3.00 GiB |     8.03 B | CPU      |       4 |    pp512 @ d4096 |        512.00 ± 0.00 |         - |         - |\n"
        "\n"
        "build: abc1234 (0)\n"
        "copy bandwidth: 4000.00 GB/s (CPU, 4 threads)\n";
    EXPECT_EQ(bench_format({cpu_tg(), cpu_pp_depth()}, BenchFormat::Md, {}), want);
}

TEST(BenchOutput, md_table_gpu_has_ngl_column) {
    PrintOptions po;
    po.gpu = true;
    const std::string want =
        "| model                          |       size |     params | backend  |     ngl |             test |                  t/s |      GB/s | % copy bw |     W | % capped |\n"
        "| :----------------------------- | ---------: | ---------: | :------- | ------: | ---------------: | -------------------: | --------: | --------: | ----: | -------: |\n"
        "| llama 1B F16                   |   2.30 GiB |     1.24 B | CUDA     |      99 |    tg128 @ d4096 |       1600.00 ± 0.00 |   3600.00 |      83.7 |     - |        - |\n"
        "\n"
        "build: abc1234 (0)\n"
        "copy bandwidth: 4300.00 GB/s (CUDA, NVIDIA H200)\n";
    EXPECT_EQ(bench_format({gpu_tg_depth()}, BenchFormat::Md, po), want);
}

// NVML's figures in the md table's last two columns (mean watts, % of the time at the power cap)
TEST(BenchOutput, md_table_gpu_power_columns) {
    PrintOptions po;
    po.gpu = true;
    BenchResult r = gpu_tg_depth();
    r.power_source = "nvml";
    r.power_w = 622.4;
    r.power_capped_pct = 12.34;
    r.energy_j_per_token = 0.389;
    const std::string out = bench_format({r}, BenchFormat::Md, po);
    EXPECT_NE(out.find("|   3600.00 |      83.7 |   622 |     12.3 |\n"), std::string::npos) << out;
    const auto j = nlohmann::json::parse(bench_format({r}, BenchFormat::Jsonl, {}));
    EXPECT_EQ(j["power_source"], "nvml");
    EXPECT_DOUBLE_EQ(j["power_w"].get<double>(), 622.4);
    EXPECT_DOUBLE_EQ(j["energy_j_per_token"].get<double>(), 0.389);
    EXPECT_DOUBLE_EQ(j["power_capped_pct"].get<double>(), 12.34);
}

// counters 2.5 s apart: 1556 J (622.4 W), 0.25 s at the power cap (10 %)
TEST(BenchPower, use_between_two_readings) {
    const PowerCounters a{1000000, 5000000000ull, 10.0}, b{2556000, 5250000000ull, 12.5};
    const PowerUse u = power_use(a, b);
    EXPECT_DOUBLE_EQ(u.seconds, 2.5);
    EXPECT_DOUBLE_EQ(u.joules, 1556.0);
    EXPECT_DOUBLE_EQ(u.watts(), 622.4);
    EXPECT_DOUBLE_EQ(u.capped_pct(), 10.0);
    // counters that went backwards (a driver reload) or no time: nothing
    EXPECT_EQ(power_use(b, a).seconds, 0.0);
    EXPECT_EQ(power_use(a, PowerCounters{2556000, 5250000000ull, 10.0}).watts(), 0.0);
    // capped time beyond the interval (counters read at different moments) stays at 100 %
    EXPECT_DOUBLE_EQ(power_use(a, PowerCounters{2556000, 8000000000ull, 12.5}).capped_pct(), 100.0);
    // summed intervals (bench: the timed part of each repetition): watts and % over the sum
    PowerUse sum = u;
    sum += power_use(PowerCounters{0, 0, 0.0}, PowerCounters{444000, 0, 2.5});  // 444 J, no cap
    EXPECT_DOUBLE_EQ(sum.seconds, 5.0);
    EXPECT_DOUBLE_EQ(sum.watts(), 400.0);
    EXPECT_DOUBLE_EQ(sum.capped_pct(), 5.0);
}

// without a GPU driver here: NVML is either absent or finds no board by a made-up bus id; both
// say why and give no meter
TEST(BenchPower, open_without_the_board_says_why) {
    std::string why;
    EXPECT_EQ(NvmlPower::open("", &why), nullptr);
    EXPECT_EQ(why, "no PCI bus id for the device");
    why.clear();
    EXPECT_EQ(NvmlPower::open("0000:ff:1f.7", &why), nullptr);
    EXPECT_FALSE(why.empty());
}

TEST(BenchOutput, md_small_model_sizes_in_mib_and_millions) {
    BenchResult r = cpu_tg();
    r.model_size = 1048576 + 524288;  // 1.50 MiB
    r.model_n_params = 292352;        // 0.29 M
    const std::string out = bench_format({r}, BenchFormat::Md, {});
    EXPECT_NE(out.find("|   1.50 MiB |     0.29 M |"), std::string::npos) << out;
}

const char* kCsvHeader =
    "build_commit,build_number,cpu_info,gpu_info,backends,model_filename,model_type,model_size,"
    "model_n_params,n_batch,n_ubatch,n_threads,cpu_mask,cpu_strict,poll,type_k,type_v,"
    "n_gpu_layers,split_mode,main_gpu,no_kv_offload,flash_attn,tensor_split,use_mmap,embeddings,"
    "n_prompt,n_gen,n_depth,test_time,avg_ns,stddev_ns,avg_ts,stddev_ts,bytes_per_token,bw_gb_s,"
    "copy_bw_gb_s,pct_copy_bw,jit_compile_ms,kernel_cache,gpu_arch,power_source,power_w,"
    "energy_j_per_token,power_capped_pct\n";

TEST(BenchOutput, csv_quotes_every_value) {
    const std::string want =
        std::string(kCsvHeader) +
        "\"abc1234\",\"0\",\"Test CPU\",\"\",\"CPU\",\"m.gguf\",\"llama 8B Q4_0\",\"3221225472\","
        "\"8030261248\",\"1\",\"1\",\"4\",\"0x0\",\"0\",\"50\",\"f32\",\"f32\",\"0\",\"none\",\"0\","
        "\"0\",\"0\",\"0.00\",\"1\",\"0\",\"0\",\"128\",\"0\",\"2026-12-01T10:00:00Z\",\"352000000\","
        "\"253992126\",\"500.000000\",\"300.000000\",\"2000000000\",\"1000.000000\",\"4000.000000\","
        "\"25.000000\",\"0.000000\",\"\",\"\",\"\",\"0.000000\",\"0.000000\",\"0.000000\"\n"
        "\"abc1234\",\"0\",\"Test CPU\",\"\",\"CPU\",\"o'k \"\"m\"\".gguf\",\"llama 8B Q4_0\",\"3221225472\","
        "\"8030261248\",\"1\",\"1\",\"4\",\"0x0\",\"0\",\"50\",\"f32\",\"f32\",\"0\",\"none\",\"0\","
        "\"0\",\"0\",\"0.00\",\"1\",\"0\",\"512\",\"0\",\"4096\",\"2026-12-01T10:00:00Z\",\"1000000000\","
        "\"0\",\"512.000000\",\"0.000000\",\"0\",\"0.000000\",\"4000.000000\","
        "\"0.000000\",\"0.000000\",\"\",\"\",\"\",\"0.000000\",\"0.000000\",\"0.000000\"\n";
    EXPECT_EQ(bench_format({cpu_tg(), cpu_pp_depth()}, BenchFormat::Csv, {}), want);
}

TEST(BenchOutput, json_array_with_samples) {
    const std::string want = R"([
  {
    "build_commit": "abc1234",
    "build_number": 0,
    "cpu_info": "NVIDIA-free \"CPU\"",
    "gpu_info": "NVIDIA H200",
    "backends": "CUDA",
    "model_filename": "1b.gguf",
    "model_type": "llama 1B F16",
    "model_size": 2469606195,
    "model_n_params": 1235814400,
    "n_batch": 1,
    "n_ubatch": 1,
    "n_threads": 1,
    "cpu_mask": "0x0",
    "cpu_strict": false,
    "poll": 50,
    "type_k": "f16",
    "type_v": "f16",
    "n_gpu_layers": 99,
    "split_mode": "none",
    "main_gpu": 0,
    "no_kv_offload": false,
    "flash_attn": false,
    "tensor_split": "0.00",
    "use_mmap": true,
    "embeddings": false,
    "n_prompt": 0,
    "n_gen": 128,
    "n_depth": 4096,
    "test_time": "2026-12-01T10:00:00Z",
    "avg_ns": 80000000,
    "stddev_ns": 0,
    "avg_ts": 1600.0,
    "stddev_ts": 0.0,
    "bytes_per_token": 2250000000,
    "bw_gb_s": 3600.0,
    "copy_bw_gb_s": 4300.0,
    "pct_copy_bw": 83.72093023255815,
    "jit_compile_ms": 812.5,
    "kernel_cache": "miss",
    "gpu_arch": "sm_90",
    "power_source": "",
    "power_w": 0.0,
    "energy_j_per_token": 0.0,
    "power_capped_pct": 0.0,
    "samples_ns": [
      80000000,
      80000000
    ],
    "samples_ts": [
      1600.0,
      1600.0
    ]
  }
]
)";
    BenchResult r = gpu_tg_depth();
    r.cpu_info = "NVIDIA-free \"CPU\"";
    EXPECT_EQ(bench_format({r}, BenchFormat::Json, {}), want);
    EXPECT_EQ(bench_format({}, BenchFormat::Json, {}), "[]\n");
    // two results: separated by a comma, still one valid array
    const auto two = nlohmann::json::parse(bench_format({r, r}, BenchFormat::Json, {}));
    ASSERT_TRUE(two.is_array());
    EXPECT_EQ(two.size(), 2u);
}

TEST(BenchOutput, jsonl_one_object_per_line) {
    const std::string want =
        R"({"build_commit":"abc1234","build_number":0,"cpu_info":"Test CPU","gpu_info":"","backends":"CPU",)"
        R"("model_filename":"m.gguf","model_type":"llama 8B Q4_0","model_size":3221225472,)"
        R"("model_n_params":8030261248,"n_batch":1,"n_ubatch":1,"n_threads":4,"cpu_mask":"0x0",)"
        R"("cpu_strict":false,"poll":50,"type_k":"f32","type_v":"f32","n_gpu_layers":0,)"
        R"("split_mode":"none","main_gpu":0,"no_kv_offload":false,"flash_attn":false,)"
        R"("tensor_split":"0.00","use_mmap":true,"embeddings":false,"n_prompt":0,"n_gen":128,)"
        R"("n_depth":0,"test_time":"2026-12-01T10:00:00Z","avg_ns":352000000,"stddev_ns":253992126,)"
        R"("avg_ts":500.0,"stddev_ts":300.0,"bytes_per_token":2000000000,"bw_gb_s":1000.0,)"
        R"("copy_bw_gb_s":4000.0,"pct_copy_bw":25.0,"jit_compile_ms":0.0,"kernel_cache":"",)"
        R"("gpu_arch":"","power_source":"","power_w":0.0,"energy_j_per_token":0.0,"power_capped_pct":0.0,)"
        R"("samples_ns":[640000000,256000000,160000000],"samples_ts":[200.0,500.0,800.0]})"
        "\n";
    EXPECT_EQ(bench_format({cpu_tg()}, BenchFormat::Jsonl, {}), want);
}

TEST(BenchOutput, sql_create_and_insert) {
    const std::string want =
        "CREATE TABLE IF NOT EXISTS llama_bench (\n"
        "  build_commit TEXT,\n  build_number INTEGER,\n  cpu_info TEXT,\n  gpu_info TEXT,\n"
        "  backends TEXT,\n  model_filename TEXT,\n  model_type TEXT,\n  model_size INTEGER,\n"
        "  model_n_params INTEGER,\n  n_batch INTEGER,\n  n_ubatch INTEGER,\n  n_threads INTEGER,\n"
        "  cpu_mask TEXT,\n  cpu_strict INTEGER,\n  poll INTEGER,\n  type_k TEXT,\n  type_v TEXT,\n"
        "  n_gpu_layers INTEGER,\n  split_mode TEXT,\n  main_gpu INTEGER,\n  no_kv_offload INTEGER,\n"
        "  flash_attn INTEGER,\n  tensor_split TEXT,\n  use_mmap INTEGER,\n  embeddings INTEGER,\n"
        "  n_prompt INTEGER,\n  n_gen INTEGER,\n  n_depth INTEGER,\n  test_time TEXT,\n"
        "  avg_ns INTEGER,\n  stddev_ns INTEGER,\n  avg_ts REAL,\n  stddev_ts REAL,\n"
        "  bytes_per_token INTEGER,\n  bw_gb_s REAL,\n  copy_bw_gb_s REAL,\n  pct_copy_bw REAL,\n"
        "  jit_compile_ms REAL,\n  kernel_cache TEXT,\n  gpu_arch TEXT,\n  power_source TEXT,\n"
        "  power_w REAL,\n  energy_j_per_token REAL,\n  power_capped_pct REAL\n"
        ");\n"
        "INSERT INTO llama_bench (build_commit, build_number, cpu_info, gpu_info, backends, "
        "model_filename, model_type, model_size, model_n_params, n_batch, n_ubatch, n_threads, "
        "cpu_mask, cpu_strict, poll, type_k, type_v, n_gpu_layers, split_mode, main_gpu, "
        "no_kv_offload, flash_attn, tensor_split, use_mmap, embeddings, n_prompt, n_gen, n_depth, "
        "test_time, avg_ns, stddev_ns, avg_ts, stddev_ts, bytes_per_token, bw_gb_s, copy_bw_gb_s, "
        "pct_copy_bw, jit_compile_ms, kernel_cache, gpu_arch, power_source, power_w, energy_j_per_token, "
        "power_capped_pct) VALUES ('abc1234', 0, 'Test CPU', '', "
        "'CPU', 'o''k \"m\".gguf', 'llama 8B Q4_0', 3221225472, 8030261248, 1, 1, 4, '0x0', 0, 50, "
        "'f32', 'f32', 0, 'none', 0, 0, 0, '0.00', 1, 0, 512, 0, 4096, '2026-12-01T10:00:00Z', "
        "1000000000, 0, 512.000000, 0.000000, 0, 0.000000, 4000.000000, 0.000000, 0.000000, '', '', '', "
        "0.000000, 0.000000, 0.000000);\n";
    PrintOptions po;
    po.sql_table = "llama_bench";
    EXPECT_EQ(bench_format({cpu_pp_depth()}, BenchFormat::Sql, po), want);
}

// --- a tiny real run on the bundled model ---

std::string bundled_model() { return test::source_dir() + "/models/stories260K.gguf"; }

TEST(BenchRun, tiny_run_on_bundled_model_has_positive_fields) {
    BenchOptions o;
    o.models = {bundled_model()};
    o.n_prompt = {8};
    o.n_gen = {4};
    o.n_depth = {0, 16};
    o.repetitions = 2;
    o.gpu = test::backend_is_gpu();
    o.copy_bytes = size_t(16) << 20;
    std::vector<BenchResult> results;
    bench_run(o, [&](const BenchResult& r) { results.push_back(r); });
    ASSERT_EQ(results.size(), 4u);  // pp8, tg4, pp8 @ d16, tg4 @ d16
    const char* names[] = {"pp8", "tg4", "pp8 @ d16", "tg4 @ d16"};
    for (size_t i = 0; i < results.size(); ++i) {
        const BenchResult& r = results[i];
        SCOPED_TRACE(r.test().name());
        EXPECT_EQ(r.test().name(), names[i]);
        EXPECT_EQ(r.samples_ns.size(), 2u);
        for (uint64_t ns : r.samples_ns) EXPECT_GT(ns, 0u);
        EXPECT_GT(r.avg_ns(), 0u);
        EXPECT_GT(r.avg_ts(), 0.0);
        EXPECT_GT(r.copy_bw_gb_s, 0.0);
        EXPECT_GT(r.model_size, 0u);
        EXPECT_GT(r.model_n_params, 0u);
        EXPECT_EQ(r.model_type.rfind("llama ", 0), 0u) << r.model_type;
        EXPECT_EQ(r.model_filename, bundled_model());
        EXPECT_EQ(r.backends, o.gpu ? "CUDA" : "CPU");
        EXPECT_EQ(r.test_time.size(), 20u) << r.test_time;  // 2026-12-01T10:00:00Z
        if (r.n_prompt == 0) {
            EXPECT_GT(r.bytes_per_token, 0u);
            EXPECT_GT(r.bw_gb_s(), 0.0);
            EXPECT_GT(r.pct_copy_bw(), 0.0);
        } else {
            EXPECT_EQ(r.bytes_per_token, 0u);
        }
    }
    if (!o.gpu) {
        // stories260K: 5 layers, 4 KV heads x 8 dims for K and for V, float32 on the CPU:
        // 5 * (32 + 32) * 4 = 1280 bytes per cached position; 16 more positions at depth 16.
        EXPECT_EQ(results[3].bytes_per_token - results[1].bytes_per_token, 1280u * 16);
    }
}

TEST(BenchRun, context_too_small_is_a_usage_error) {
    BenchOptions o;
    o.models = {bundled_model()};
    o.n_prompt = {8};
    o.n_gen = {4};
    o.n_ctx = 6;  // pp8 alone needs 8
    try {
        bench_run(o, [](const BenchResult&) {});
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Usage);
        EXPECT_NE(std::string(e.what()).find("--ctx-size 6: the largest test needs 8 positions"),
                  std::string::npos) << e.what();
    }
    o.n_ctx = 0;
    o.n_depth = {1 << 20};  // beyond the model's context length
    try {
        bench_run(o, [](const BenchResult&) {});
        FAIL() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("the tests need 1048584 positions but the model's context "
                                             "length is"), std::string::npos) << e.what();
    }
}

TEST(BenchCli, json_output_of_the_binary) {
    std::string out, err;
    const std::string cmd = test::binary_path() + " bench -m " + bundled_model() +
                            " -p 8 -n 4 -pg 4,2 -r 2 -t 1 -o json -oe md" +
                            (test::backend_is_gpu() ? " --gpu" : "");
    ASSERT_EQ(test::run_command(cmd, &out, &err), 0) << err;
    const auto j = nlohmann::json::parse(out);
    ASSERT_TRUE(j.is_array());
    ASSERT_EQ(j.size(), 3u);
    const char* tests[][2] = {{"8", "0"}, {"0", "4"}, {"4", "2"}};
    for (size_t i = 0; i < j.size(); ++i) {
        const auto& r = j[i];
        for (const auto& f : bench_fields(BenchResult{})) EXPECT_TRUE(r.contains(f.name)) << f.name;
        EXPECT_EQ(r["n_prompt"].get<int>(), std::stoi(tests[i][0]));
        EXPECT_EQ(r["n_gen"].get<int>(), std::stoi(tests[i][1]));
        EXPECT_EQ(r["samples_ns"].size(), 2u);
        EXPECT_GT(r["avg_ts"].get<double>(), 0.0);
        EXPECT_GT(r["copy_bw_gb_s"].get<double>(), 0.0);
        EXPECT_EQ(r["n_threads"].get<int>(), 1);
    }
    EXPECT_GT(j[1]["bytes_per_token"].get<uint64_t>(), 0u);
    EXPECT_GT(j[1]["pct_copy_bw"].get<double>(), 0.0);
    // -oe md: the table on stderr, with the pp+tg test name
    EXPECT_NE(err.find("| model "), std::string::npos) << err;
    EXPECT_NE(err.find("pp4+tg2"), std::string::npos) << err;
}

TEST(BenchCli, bad_flags_exit_with_usage_errors) {
    std::string out, err;
    const std::string base = test::binary_path() + " bench -m " + bundled_model() + " -r 1 ";
    EXPECT_EQ(test::run_command(base + "-o xml", &out, &err), 2);
    EXPECT_NE(err.find("unknown output format"), std::string::npos) << err;
    EXPECT_EQ(test::run_command(base + "-p 0 -n 0", &out, &err), 2);
    EXPECT_EQ(test::run_command(base + "-pg 512", &out, &err), 2);
    EXPECT_NE(err.find("-pg: expected P,N"), std::string::npos) << err;
    EXPECT_EQ(test::run_command(base + "-p 8-4", &out, &err), 2);
}

}  // namespace
}  // namespace jitllm
