// The OpenCL backend on the first OpenCL device (CI: PoCL's CPU device) against the CPU reference
// on tiny random-weight models: the weight types no golden file has (the golden suites cover F32,
// F16, Q8_0, Q4_0 and the K-quants; BF16, Q4_1, Q5_0 and Q5_1 here, within 1e-5), decode and batch
// steps (prompt chunks, several sequences), the program cache, and the command line (--opencl
// through run, eval, bench; the error without a driver). Skips where no OpenCL device opens.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "backends/opencl/opencl_backend.h"
#include "fixtures/test_support.h"
#include "opencl/cl_test_plans.h"
#include "quant/quant.h"
#include "unit/tiny_arch_model.h"

namespace jitllm {
namespace {

bool have_device(std::string* why) {
    try {
        return !cl_list_devices().empty();
    } catch (const Error& e) {
        *why = e.what();
        return false;
    }
}

// PoCL builds programs 3x faster without LLVM's optimisations (tests/opencl/CMakeLists.txt); the
// jitllm runs of the command-line tests inherit it
[[maybe_unused]] const bool kFastBuilds = [] { return setenv("JITLLM_OPENCL_BUILD_OPTIONS", "-cl-opt-disable", 0) == 0; }();

#define SKIP_WITHOUT_OPENCL()                                       \
    do {                                                            \
        std::string why_;                                           \
        if (!have_device(&why_)) GTEST_SKIP() << "no OpenCL: " << why_; \
    } while (0)

// A tiny model of `arch` with every matrix in type t (norms and biases F32), quantized on the host
// with quantize_row (the reference quantizers)
std::unique_ptr<Model> tiny_of_type(const std::string& arch, GgmlType t, int ff = 96) {
    test::TinySpec s;
    s.arch = arch;
    s.ff = ff;
    const auto f32 = test::tiny_reader(test::tiny_model(s));  // every tensor in F32
    const auto is_matrix = [](const std::vector<uint64_t>& dims, const std::string& name) {
        return dims.size() >= 2 && name.find("norm") == std::string::npos && name.find("gate_inp") == std::string::npos;
    };
    // the keys, norms and biases as they are; the matrices quantized from the same values
    GgufWriter q = test::tiny_model(s, [&](test::TinyTensor& x) { return !is_matrix(x.dims, x.name); });
    for (const GgufTensorInfo& info : f32->tensors()) {
        if (!is_matrix(info.dims, info.name)) continue;
        const auto* f = reinterpret_cast<const float*>(info.data);
        const uint64_t cols = info.dims[0], rows = info.n_elements / cols;
        std::vector<uint8_t> bytes(row_bytes(t, cols) * rows);
        for (uint64_t i = 0; i < rows; ++i)
            quantize_row(t, f + i * cols, bytes.data() + i * row_bytes(t, cols), int64_t(cols));
        q.add_tensor(info.name, t, info.dims, std::move(bytes));
    }
    return load_model(test::tiny_reader(q));
}

// the KV cache in float, so that the logits differ from the CPU's by the sums' order alone (the f16
// cache is the golden suites' part)
OpenClOptions options() {
    OpenClOptions o;
    o.schedule.kv_f32 = true;
    if (const char* d = std::getenv("JITLLM_TEST_OPENCL_DEVICE"); d && *d) o.device = std::atoi(d);
    return o;
}

double max_abs(const float* a, const float* b, int n) {
    double d = 0;
    for (int i = 0; i < n; ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
    return d;
}

// decode steps of both backends on the same plan: the OpenCL logits within `tol` of the CPU's
void expect_decode_like_cpu(const Plan& p, double tol, const OpenClOptions& o) {
    CpuBackend cpu(p, 1);
    OpenClBackend cl(p, o);
    const int V = p.config->n_vocab;
    const int32_t tokens[] = {1, 7, 3, 30, 12, 5, 9, 2};
    double worst = 0, mag = 0;
    for (int pos = 0; pos < 8; ++pos) {
        const float* a = cpu.decode(tokens[pos], pos);
        const float* b = cl.decode(tokens[pos], pos);
        for (int i = 0; i < V; ++i) mag = std::max(mag, double(std::fabs(a[i])));
        worst = std::max(worst, max_abs(a, b, V));
        EXPECT_LE(max_abs(a, b, V), tol) << "position " << pos;
        EXPECT_EQ(cl.sampled_token(), cpu.sampled_token()) << "position " << pos;
    }
    std::printf("[opencl] %s: max_abs vs the CPU %.3g (largest logit %.3g)\n", type_name(p.model->layers[0].attn_output->type),
                worst, mag);
}

struct TypeCase {
    GgmlType type;
    double tol;  // the sums' order (the x of Q4_0 / Q8_0 products quantized on both, integer block sums)
};

void PrintTo(const TypeCase& c, std::ostream* os) { *os << type_name(c.type); }

class EveryWeightType : public ::testing::TestWithParam<TypeCase> {};

TEST_P(EveryWeightType, DecodeLikeTheCpu) {
    SKIP_WITHOUT_OPENCL();
    // the experts' products (gemv_experts) of one type too
    for (const char* arch : {"llama", GetParam().type == GgmlType::Q4_1 ? "qwen2moe" : ""}) {
        if (!*arch) continue;
        SCOPED_TRACE(arch);
        auto m = tiny_of_type(arch, GetParam().type);
        const Plan p = plan_build(*m, 64);
        expect_decode_like_cpu(p, GetParam().tol, options());
    }
}

// (F32, F16, Q8_0, Q4_0 and the K-quants: the golden suites, in every architecture)
INSTANTIATE_TEST_SUITE_P(Types, EveryWeightType,
                         ::testing::Values(TypeCase{GgmlType::BF16, 1e-5}, TypeCase{GgmlType::Q4_1, 1e-5},
                                           TypeCase{GgmlType::Q5_0, 1e-5}, TypeCase{GgmlType::Q5_1, 1e-5}),
                         [](const auto& info) { return std::string(type_name(info.param.type)); });

// a plan of 64 positions with a batch phase of `rows` rows, as many sequences
Plan batch_plan(const Model& m, int rows) {
    PlanOptions po;
    po.n_ctx = 64;
    po.batch_rows = rows;
    po.n_seq = rows;
    return plan_build(m, po);
}

// A batch step of rows from two sequences (the first a prompt chunk, the second one token) with
// logits for every row, then a prompt's last chunk and decode on the caches it wrote: as the CPU,
// on both sides of gate batch.xrows (a weight row read for 4 activation rows, or for each)
class OpenClBatch : public ::testing::TestWithParam<const char*> {};

TEST_P(OpenClBatch, RowsOfSeveralSequencesLikeTheCpu) {
    SKIP_WITHOUT_OPENCL();
    auto m = tiny_of_type("qwen2", GgmlType::Q8_0);
    const Plan p = batch_plan(*m, 6);
    CpuBackend cpu(p, 1);
    OpenClOptions o = options();
    o.schedule.force["batch.xrows"] = GetParam();
    OpenClBackend cl(p, o);
    const int V = p.config->n_vocab;
    const int32_t tok[] = {1, 5, 9, 1, 7, 11}, pos[] = {0, 1, 2, 0, 3, 4}, seq[] = {0, 0, 0, 1, 0, 0};
    BatchStep b{.tokens = tok, .pos = pos, .seq = seq, .n = 6, .logits = true};
    cpu.batch(b);
    cl.batch(b);
    for (int r = 0; r < 6; ++r) {
        EXPECT_LE(max_abs(cpu.batch_logits(r), cl.batch_logits(r), V), 1e-5) << "row " << r;
        EXPECT_EQ(cpu.batch_sampled(r), cl.batch_sampled(r)) << "row " << r;
    }
    const int32_t tok2[] = {4, 8}, pos2[] = {5, 6}, seq2[] = {0, 0};
    BatchStep c{.tokens = tok2, .pos = pos2, .seq = seq2, .n = 2, .logits_last = true};
    cpu.batch(c);
    cl.batch(c);
    EXPECT_LE(max_abs(cpu.batch_logits(0), cl.batch_logits(0), V), 1e-5);
    // logits for the first rows only (the server's decode rows before a prompt chunk's)
    const int32_t tok3[] = {6, 2, 10}, pos3[] = {7, 1, 2}, seq3[] = {0, 1, 1};
    BatchStep f{.tokens = tok3, .pos = pos3, .seq = seq3, .n = 3, .logits_first = 2};
    cpu.batch(f);
    cl.batch(f);
    for (int r = 0; r < 2; ++r) {
        EXPECT_LE(max_abs(cpu.batch_logits(r), cl.batch_logits(r), V), 1e-5) << "row " << r;
        EXPECT_EQ(cpu.batch_sampled(r), cl.batch_sampled(r)) << "row " << r;
    }
    EXPECT_LE(max_abs(cpu.decode(3, 8), cl.decode(3, 8), V), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Xrows, OpenClBatch, ::testing::Values("shared", "per-row"));

// Products whose x does not fit local memory (gate gemv.x=tiles): llama3.1-8b's ffn_down, 14336
// columns of Q8_0, in the batch phase (x of 4 activation rows quantized: 64512 bytes) on a device of
// the H100's 48 KiB (--tune local.mem=49152) stage x in tiles of columns; decode's (16128 bytes)
// stays whole. Then every Q4_0 / Q8_0 product in tiles (forced) on a smaller device. As the CPU.
TEST(OpenClWideProducts, XInTilesWhereItDoesNotFitLocalMemory) {
    SKIP_WITHOUT_OPENCL();
    for (const GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0}) {
        SCOPED_TRACE(type_name(t));
        auto m = tiny_of_type("llama", t, 14336);
        const Plan p = batch_plan(*m, 6);
        for (const bool forced : {false, true}) {
            OpenClOptions o = options();
            o.schedule.tune.local_mem = forced ? 16384 : 49152;
            if (forced) o.schedule.force["gemv.x"] = "tiles";
            OpenClBackend cl(p, o);
            EXPECT_EQ(test::gate(cl.schedule(), "gemv.x"), "tiles");
            int tiled = 0;
            for (const auto* list : {&cl.schedule().decode, &cl.schedule().batch})
                for (const ClStep& k : *list) {
                    const std::string xt = test::define_of(k.variant, "XTILE");
                    const bool down = k.symbol.rfind("ffn_down", 0) == 0;
                    if (!xt.empty()) ++tiled;
                    if (down && list == &cl.schedule().batch) {  // 16 KiB: tiles of fewer units
                        ASSERT_NE(xt, "") << k.symbol;
                        if (!forced) {
                            EXPECT_EQ(std::stoi(xt) % std::stoi(test::define_of(k.variant, "WG")), 0) << k.symbol;
                        }
                    }
                    if (down && list == &cl.schedule().decode && !forced) {
                        EXPECT_EQ(xt, "") << k.symbol;
                    }
                }
            EXPECT_GE(tiled, forced ? 8 : 2);
            CpuBackend cpu(p, 1);
            const int V = p.config->n_vocab;
            const int32_t tok[] = {1, 5, 9, 1, 7, 11}, pos[] = {0, 1, 2, 0, 3, 4}, seq[] = {0, 0, 0, 1, 0, 0};
            BatchStep b{tok, pos, seq, 6, true, false};
            cpu.batch(b);
            cl.batch(b);
            // within the golden suites' tolerance for quantized files (0.1): Q8_0's batch rows differ
            // from the CPU's by about 0.012 here with x staged whole too (tiles of a multiple of WG
            // units give the same sums); likely a Q8_0 rounding of x among 14336 columns
            for (int r = 0; r < 6; ++r) EXPECT_LE(max_abs(cpu.batch_logits(r), cl.batch_logits(r), V), 5e-2) << "row " << r;
            EXPECT_LE(max_abs(cpu.decode(3, 5), cl.decode(3, 5), V), 5e-2);
        }
    }
    // forcing x whole where it does not fit is refused, naming what the device lacks
    auto m = tiny_of_type("llama", GgmlType::Q8_0, 14336);
    OpenClOptions o = options();
    o.schedule.tune.local_mem = 49152;
    o.schedule.force["gemv.x"] = "local";
    EXPECT_THROW(OpenClBackend(batch_plan(*m, 6), o), Error);
}

// --tune gemv.ahead: the F16 / BF16 gemvs load the raw words of 1, 2 or 4 chunks of every row first
// and give the bits of the default order (the same products in the same order), batch rows and a
// decode step; ffn_down's 14336 columns give a work-item 7 chunks (4 + 3: the last group partial)
TEST(OpenClTune, GemvAheadGivesTheBitsOfTheDefaultOrder) {
    SKIP_WITHOUT_OPENCL();
    for (const GgmlType t : {GgmlType::F16, GgmlType::BF16}) {
        SCOPED_TRACE(type_name(t));
        auto m = tiny_of_type("llama", t, 14336);
        const Plan p = batch_plan(*m, 6);
        const int V = p.config->n_vocab;
        std::vector<float> want;
        for (const int ahead : {0, 1, 2, 4}) {
            SCOPED_TRACE(ahead);
            OpenClOptions o = options();
            o.schedule.tune.gemv_ahead = ahead;
            OpenClBackend cl(p, o);
            int with = 0;
            for (const auto* list : {&cl.schedule().decode, &cl.schedule().batch})
                for (const ClStep& k : *list) with += test::define_of(k.variant, "AHEAD") == (ahead ? std::to_string(ahead) : "");
            EXPECT_GE(with, 4);
            const int32_t tok[] = {1, 5, 9, 1, 7, 11}, pos[] = {0, 1, 2, 0, 3, 4}, seq[] = {0, 0, 0, 1, 0, 0};
            BatchStep b{tok, pos, seq, 6, true, false};
            cl.batch(b);
            std::vector<float> got;
            for (int r = 0; r < 6; ++r) got.insert(got.end(), cl.batch_logits(r), cl.batch_logits(r) + V);
            const float* d = cl.decode(3, 5);
            got.insert(got.end(), d, d + V);
            if (ahead == 0) {
                want = got;
                continue;
            }
            EXPECT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4)) << "other bits than the default's";
        }
    }
}

// Batch steps of 16+ rows take the tiled products (gate batch.gemm, gemm.cl): 20 rows of two
// sequences with logits for every row, as the CPU; the float tiles (F16: SwiGLU of separate gate
// and up), the int8 tiles (Q8_0 with biases, Q4_0 with phi3's fused q/k/v and gate/up), partial
// tiles of output rows (32 logits) and of activation rows
struct TiledCase {
    const char* arch;
    GgmlType type;
};
void PrintTo(const TiledCase& c, std::ostream* os) { *os << c.arch << "_" << type_name(c.type); }

class OpenClTiled : public ::testing::TestWithParam<TiledCase> {};

TEST_P(OpenClTiled, BatchStepsOfManyRowsLikeTheCpu) {
    SKIP_WITHOUT_OPENCL();
    auto m = tiny_of_type(GetParam().arch, GetParam().type);
    const Plan p = batch_plan(*m, 20);
    CpuBackend cpu(p, 1);
    OpenClBackend cl(p, options());
    bool tiled = false;
    for (const ClStep& k : cl.schedule().batch) tiled = tiled || k.tiled.min_rows > 0;
    ASSERT_TRUE(tiled) << "no tiled products in the batch phase";
    std::vector<int32_t> tok, pos, seq;
    for (int r = 0; r < 20; ++r) {
        tok.push_back((7 * r + 3) % p.config->n_vocab);
        pos.push_back(r < 12 ? r : r - 12);
        seq.push_back(r < 12 ? 0 : 1);
    }
    BatchStep b{.tokens = tok.data(), .pos = pos.data(), .seq = seq.data(), .n = 20, .logits = true};
    cpu.batch(b);
    cl.batch(b);
    const int V = p.config->n_vocab;
    for (int r = 0; r < 20; ++r) {
        EXPECT_LE(max_abs(cpu.batch_logits(r), cl.batch_logits(r), V), 1e-5) << "row " << r;
        EXPECT_EQ(cpu.batch_sampled(r), cl.batch_sampled(r)) << "row " << r;
    }
}

INSTANTIATE_TEST_SUITE_P(Types, OpenClTiled,
                         ::testing::Values(TiledCase{"llama", GgmlType::F16}, TiledCase{"qwen2", GgmlType::Q8_0},
                                           TiledCase{"phi3", GgmlType::Q4_0}),
                         [](const auto& info) { return std::string(info.param.arch) + "_" + type_name(info.param.type); });

// Greedy decode steps queued ahead (Engine::queue_decode's pattern: the first with its token, the
// rest fed by the previous pick where it was made) pick the CPU's tokens, on both sides of gate
// sample.argmax (the host's side runs each step at once); then a step with logits as the CPU's
class OpenClRunAhead : public ::testing::TestWithParam<const char*> {};

TEST_P(OpenClRunAhead, QueuedGreedyStepsPickAsTheCpu) {
    SKIP_WITHOUT_OPENCL();
    auto m = tiny_of_type("llama", GgmlType::Q8_0);
    const Plan p = plan_build(*m, 64);
    CpuBackend cpu(p, 1);
    OpenClOptions o = options();
    o.schedule.force["sample.argmax"] = GetParam();
    OpenClBackend cl(p, o);
    cl.set_logits_needed(false);
    std::vector<int32_t> want;
    int32_t tok = 3;
    for (int pos = 0; pos < 12; ++pos) {
        cpu.decode(tok, pos);
        tok = cpu.sampled_token();
        want.push_back(tok);
    }
    std::vector<int32_t> got;
    cl.decode_queue(3, 0);
    for (int pos = 1; pos < 12; ++pos) {
        cl.decode_queue(-1, pos);  // two steps in flight
        got.push_back(cl.decode_collect());
    }
    got.push_back(cl.decode_collect());
    EXPECT_EQ(got, want);
    EXPECT_EQ(cl.sampled_token(), want.back());
    cl.set_logits_needed(true);
    EXPECT_LE(max_abs(cpu.decode(5, 12), cl.decode(5, 12), p.config->n_vocab), 1e-5);
    EXPECT_EQ(cl.sampled_token(), cpu.sampled_token());
}

INSTANTIATE_TEST_SUITE_P(Argmax, OpenClRunAhead, ::testing::Values("device", "host"));

// The second backend on the same cache directory builds nothing: every program binary comes back
TEST(OpenClPrograms, BinariesComeFromTheDiskCacheTheSecondTime) {
    SKIP_WITHOUT_OPENCL();
    auto m = tiny_of_type("llama", GgmlType::F16);
    const Plan p = plan_build(*m, 32);
    OpenClOptions o = options();
    o.cache.dir = testing::TempDir() + "/jitllm_cl_cache_" + std::to_string(::getpid());
    std::vector<float> first;
    {
        OpenClBackend a(p, o);
        EXPECT_GT(a.info().jit_compiled, 0);
        const float* l = a.decode(1, 0);
        first.assign(l, l + p.config->n_vocab);
    }
    OpenClBackend b(p, o);
    EXPECT_EQ(b.info().jit_compiled, 0);
    EXPECT_GT(b.info().jit_cached, 0);
    EXPECT_EQ(max_abs(first.data(), b.decode(1, 0), p.config->n_vocab), 0.0);
    std::string out;
    test::run_command("rm -rf '" + o.cache.dir + "'", &out, &out);
}

struct Outcome {
    int rc;
    std::string out, err;
};
Outcome jitllm(const std::string& args) {
    Outcome r;
    r.rc = test::run_command("'" + test::binary_path() + "' " + args + " </dev/null", &r.out, &r.err);
    return r;
}

TEST(OpenClCli, RunEvalPerplexityBenchAndTheInspection) {
    SKIP_WITHOUT_OPENCL();
    const Outcome d = jitllm("--list-devices");
    EXPECT_EQ(d.rc, 0);
    EXPECT_NE(d.out.find("OpenCL devices (--opencl-device N)"), std::string::npos) << d.out;
    // greedy text: the CPU's (stories260K, the bundled model)
    const Outcome cpu = jitllm("-p 'Once upon a time' -n 24 --temp 0");
    const Outcome cl = jitllm("-p 'Once upon a time' -n 24 --temp 0 --opencl --print-plan --print-threads");
    ASSERT_EQ(cl.rc, 0) << cl.err;
    EXPECT_EQ(cl.out, cpu.out);
    EXPECT_NE(cl.err.find("attn_norm_qkv__gemv_f32"), std::string::npos) << cl.err;
    EXPECT_NE(cl.err.find("global ("), std::string::npos) << cl.err;
    EXPECT_NE(cl.err.find("reduce"), std::string::npos) << "the gate report:\n" << cl.err;
    // sampled text: the host's sampler on the logits read back, the CPU's draws (a float KV cache)
    const char* sampled = "-p 'Once upon a time' -n 24 --temp 0.8 --top-k 20 --seed 7";
    const Outcome cpu_s = jitllm(sampled);
    const Outcome cl_s = jitllm(std::string(sampled) + " --opencl --kv-f32");
    ASSERT_EQ(cl_s.rc, 0) << cl_s.err;
    EXPECT_EQ(cl_s.out, cpu_s.out);
    const std::string dump = testing::TempDir() + "/jitllm_cl_eval.json";
    const Outcome e = jitllm("eval --opencl --tokens '1 403 407' --dump-logits '" + dump + "'");
    EXPECT_EQ(e.rc, 0) << e.err;
    EXPECT_NE(test::read_file(dump).find("\"n_vocab\":512"), std::string::npos);
    const Outcome b = jitllm("bench --opencl -p 8 -n 4 -r 1 -o csv");
    EXPECT_EQ(b.rc, 0) << b.err;
    EXPECT_NE(b.out.find("OpenCL"), std::string::npos) << b.out;
    const Outcome ppl = jitllm("perplexity --opencl --tokens '1 403 407 385 104 416 262' -c 4 --score all");
    EXPECT_EQ(ppl.rc, 0) << ppl.err;
    EXPECT_NE(ppl.out.find("perplexity"), std::string::npos) << ppl.out;
    const Outcome pk = jitllm("--opencl -n 1 --temp 0 --print-kernel");
    EXPECT_NE(pk.err.find("// ==== kernel attn_norm_qkv__gemv_f32"), std::string::npos) << pk.err;
    EXPECT_NE(pk.err.find("#define KERNEL_NAME attn_norm_qkv__gemv_f32"), std::string::npos) << pk.err;
    // a tunable: the kernels' geometry changes, not the text
    const Outcome tuned = jitllm("-p 'Once upon a time' -n 24 --temp 0 --opencl --tune gemv.rows=4 --tune gemv.wg=64 "
                                 "--print-plan --print-threads");
    EXPECT_EQ(tuned.out, cpu.out);
    EXPECT_NE(tuned.err.find("opencl tunables: gemv.rows=4 gemv.wg=64"), std::string::npos) << tuned.err;
    const Outcome pr = jitllm("--opencl -n 4 --temp 0 --profiler");
    EXPECT_EQ(pr.rc, 0) << pr.err;
    EXPECT_NE(pr.err.find("attn__attention"), std::string::npos) << "the profiler table:\n" << pr.err;
}

TEST(OpenClCli, RefusalsAreOneSentence) {
    // no driver: the loader finds no vendor file
    const Outcome none = jitllm("--opencl -n 2 2>&1; OCL_ICD_VENDORS=/nonexistent '" + test::binary_path() +
                            "' --opencl -n 2");
    EXPECT_EQ(none.rc, 1);
    EXPECT_NE(none.err.find("error: no OpenCL platform"), std::string::npos) << none.err;
    const Outcome gate = jitllm("--opencl --force-variant reduce=tree");
    EXPECT_EQ(gate.rc, 2);
    EXPECT_NE(gate.err.find("expected subgroup|local for gate 'reduce'"), std::string::npos) << gate.err;
    const Outcome tune = jitllm("--opencl --tune gemv.rpb=4");
    EXPECT_EQ(tune.rc, 2);
    EXPECT_NE(tune.err.find("expected one of the OpenCL backend's keys (gemv.rows, gemv.wg, gemv.groups, gemv.ahead, local.mem)"),
              std::string::npos) << tune.err;
    const Outcome wg = jitllm("--opencl --tune gemv.wg=48");
    EXPECT_EQ(wg.rc, 2);
    EXPECT_NE(wg.err.find("expected an integer from 32 to 1024 (a power of 2) for gemv.wg, found '48'"),
              std::string::npos) << wg.err;
}

}  // namespace
}  // namespace jitllm
