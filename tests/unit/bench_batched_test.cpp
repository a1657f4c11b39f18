// `jitllm bench -npp/-ntg/-npl` (llama-batched-bench's measurement): its md rows and jsonl lines
// for hand-made results against hand-written text, and real runs on the bundled stories260K (in
// process and through the built binary): the columns, N_KV = B * (PP + TG), the test order and
// the skipped tests. No timing assertions.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/batched_bench.cpp"
#include "core/error.h"
#include "fixtures/engine_factory.h"
#include "fixtures/test_support.h"

namespace jitllm {
namespace {

std::string bundled_model() { return test::source_dir() + "/models/stories260K.gguf"; }

// pp 128, tg 128 at 8 sequences: 1024 prompt tokens in 0.5 s = 2048 t/s, 1024 generated in 2 s =
// 512 t/s; 2048 tokens in 2.5 s = 819.2 t/s.
BatchedBenchResult eight() {
    BatchedBenchResult r;
    r.pp = 128, r.tg = 128, r.pl = 8, r.n_kv = 2048;
    r.t_pp = 0.5;
    r.t_tg = 2.0;
    return r;
}

TEST(BatchedBench, md_row_and_head) {
    EXPECT_EQ(batched_md_row(eight()),
              "|   128 |    128 |    8 |   2048 |    0.500 |  2048.00 |    2.000 |   512.00 |    2.500 |   819.20 |\n");
    BatchedBenchSetup s;
    s.n_kv_max = 4096, s.n_batch = 512, s.n_gpu_layers = 99, s.n_threads = 4;
    const std::string head = batched_md_head(s);
    EXPECT_NE(head.find("n_kv_max = 4096, n_batch = 512, n_ubatch = 512,"), std::string::npos) << head;
    EXPECT_NE(head.find("n_gpu_layers = 99, n_threads = 4, n_threads_batch = 4\n"), std::string::npos) << head;
    EXPECT_NE(head.find("|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s "
                        "|    S t/s |\n|-------|--------|------|--------|----------|----------|----------|----------|"
                        "----------|----------|\n"),
              std::string::npos)
        << head;
}

TEST(BatchedBench, jsonl_keys_in_llama_batched_bench_order) {
    BatchedBenchSetup s;
    s.n_kv_max = 4096, s.n_batch = 512, s.n_gpu_layers = 0, s.n_threads = 2;
    EXPECT_EQ(batched_jsonl(s, eight()),
              "{\"n_kv_max\": 4096, \"n_batch\": 512, \"n_ubatch\": 512, \"flash_attn\": 0, \"is_pp_shared\": 0, "
              "\"n_gpu_layers\": 0, \"n_threads\": 2, \"n_threads_batch\": 2, \"pp\": 128, \"tg\": 128, \"pl\": 8, "
              "\"n_kv\": 2048, \"t_pp\": 0.500000, \"speed_pp\": 2048.000000, \"t_tg\": 2.000000, "
              "\"speed_tg\": 512.000000, \"t\": 2.500000, \"speed\": 819.200000}\n");
    BatchedBenchResult none = eight();
    none.tg = 0, none.t_tg = 0;
    EXPECT_EQ(none.speed_tg(), 0.0);  // no generation: no rate (llama-batched-bench divides by zero)
}

TEST(BatchedBench, run_on_bundled_model_in_test_order) {
    BatchedBenchOptions o;
    o.model = bundled_model();
    o.n_pp = {8, 5};
    o.n_tg = {4};
    o.n_pl = {1, 2, 3};
    o.n_kv_max = 40;  // 3 sequences of pp 8 + tg 4 take 3 blocks of 16 positions: skipped
    o.gpu = test::backend_is_gpu();
    o.cuda = test::cuda_options_from_env();
    BatchedBenchSetup setup;
    std::vector<BatchedBenchResult> rs;
    std::vector<std::string> log;
    batched_bench_run(o, [&](const BatchedBenchSetup& s) { setup = s; },
                      [&](const BatchedBenchResult& r) { rs.push_back(r); },
                      [&](int, const std::string& m) { log.push_back(m); });
    const int want[][3] = {{8, 4, 1}, {8, 4, 2}, {5, 4, 1}, {5, 4, 2}};
    ASSERT_EQ(rs.size(), 4u);
    for (size_t i = 0; i < rs.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(rs[i].pp, want[i][0]);
        EXPECT_EQ(rs[i].tg, want[i][1]);
        EXPECT_EQ(rs[i].pl, want[i][2]);
        EXPECT_EQ(rs[i].n_kv, rs[i].pl * (rs[i].pp + rs[i].tg));
        EXPECT_GT(rs[i].t_pp, 0.0);
        EXPECT_GT(rs[i].t_tg, 0.0);
        EXPECT_GT(rs[i].speed_tg(), 0.0);
    }
    EXPECT_EQ(setup.n_kv_max, 48);  // -c 40 in whole blocks of 16
    EXPECT_GE(setup.n_batch, 2);
    int skipped = 0;
    for (const auto& m : log)
        skipped += m.find("tg 4 pl 3: skipped, N_KV 36 (48 in blocks of 16) exceeds -c 40") != std::string::npos ||
                   m.find("tg 4 pl 3: skipped, N_KV 27 (48 in blocks of 16) exceeds -c 40") != std::string::npos;
    EXPECT_EQ(skipped, 2);
}

TEST(BatchedBenchCli, md_and_jsonl_of_the_binary) {
    const std::string base = test::binary_path() + " bench -m " + bundled_model() + " -t 1 -npp 8 -ntg 4 -npl 1,2,4" +
                             (test::backend_is_gpu() ? " --gpu" : "");
    std::string out, err;
    ASSERT_EQ(test::run_command(base + " -o jsonl", &out, &err), 0) << err;
    std::istringstream lines(out);
    std::string line;
    int n = 0;
    const char* keys[] = {"n_kv_max", "n_batch", "n_ubatch", "flash_attn", "is_pp_shared", "n_gpu_layers", "n_threads",
                          "n_threads_batch", "pp", "tg", "pl", "n_kv", "t_pp", "speed_pp", "t_tg", "speed_tg", "t", "speed"};
    while (std::getline(lines, line)) {
        const auto j = nlohmann::json::parse(line);
        for (const char* k : keys) EXPECT_TRUE(j.contains(k)) << k;
        EXPECT_EQ(j.size(), std::size(keys));
        EXPECT_EQ(j["pp"].get<int>(), 8);
        EXPECT_EQ(j["tg"].get<int>(), 4);
        EXPECT_EQ(j["pl"].get<int>(), n == 0 ? 1 : 2 * n);
        EXPECT_EQ(j["n_kv"].get<int>(), j["pl"].get<int>() * 12);
        EXPECT_EQ(j["n_threads"].get<int>(), 1);
        EXPECT_GT(j["speed_tg"].get<double>(), 0.0);
        ++n;
    }
    EXPECT_EQ(n, 3);
    ASSERT_EQ(test::run_command(base, &out, &err), 0) << err;
    EXPECT_NE(out.find("|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |"),
              std::string::npos) << out;
    EXPECT_NE(out.find("|     8 |      4 |    4 |     48 |"), std::string::npos) << out;
    EXPECT_NE(out.find("|     8 |      4 |    2 |     24 |"), std::string::npos) << out;
}

TEST(BatchedBenchCli, bad_flags_exit_with_usage_errors) {
    std::string out, err;
    const std::string base = test::binary_path() + " bench -m " + bundled_model() + " ";
    EXPECT_EQ(test::run_command(base + "-npl 0", &out, &err), 2);
    EXPECT_NE(err.find("-npl: expected values of at least 1, found 0"), std::string::npos) << err;
    EXPECT_EQ(test::run_command(base + "-npl 2 -p 8", &out, &err), 2);
    EXPECT_NE(err.find("--n-prompt: not a flag of the batched bench"), std::string::npos) << err;
    EXPECT_EQ(test::run_command(base + "-npl 2 -o csv", &out, &err), 2);
    EXPECT_NE(err.find("-o: the batched bench prints md or jsonl, found 'csv'"), std::string::npos) << err;
    EXPECT_EQ(test::run_command(base + "-npl 2 -npp 8 -ntg 4 -c 10", &out, &err), 2);
    EXPECT_NE(err.find("-c 10: no test fits"), std::string::npos) << err;
}

}  // namespace
}  // namespace jitllm
