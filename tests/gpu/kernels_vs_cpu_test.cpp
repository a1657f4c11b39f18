// Every CUDA kernel of the schedule against the CPU reference of the tasks it covers, one launch
// at a time: the CPU state before the kernel is uploaded, the kernel runs, its output slots are
// compared with the CPU's after the same tasks. Odd shapes (rows not multiples of the block,
// vocab 1003, ff 352), head_dim 64 and 128, GQA ratios 1, 4 and 8, every architecture flag,
// weight types F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 (K-quants: the golden files on the GPU), and
// both siblings of every capability gate, fused and unfused. Needs a GPU: skipped without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cuda/cuda_backend.h"
#include "gguf/gguf_reader.h"
#include "jit/jit_compiler.h"
#include "core/fp16.h"
#include "quant/quant.h"
#include "fixtures/engine_factory.h"  // cuda_available
#include "unit/tiny_arch_model.h"
#include "gpu/kernels_vs_cpu_variants.h"

namespace {

using namespace jitllm;
using namespace jitllm::test;

struct Case {
    const char* name;
    TinySpec spec;
    GgmlType type;
    float emb_scale = 0, res_scale = 0, attn_scale = 0, logit_scale = 0;  // granite keys when > 0
    int window = 0;  // <arch>.attention.sliding_window when > 0
    int n_hist = 5;  // cached positions before the step under test
    int n_ctx = 64;  // the plan's context
    // mistral3's YaRN (factor 8 over an original context of 16, log multiplier 0.1) and attention
    // temperature (0.1: q scaled from position 16 on)
    bool yarn = false;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::unique_ptr<Model> build(const Case& c) {
    GgufWriter w = tiny_model(c.spec, [](TinyTensor&) { return false; });  // keys only
    uint64_t st = c.spec.seed * 0x9E3779B97F4A7C15ull + 7;
    auto next = [&]() {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        return float(double(st >> 40) / double(1ull << 24)) - 0.5f;
    };
    for (const TinyTensor& t : tiny_tensors(c.spec)) {
        uint64_t n = 1;
        for (auto d : t.dims) n *= d;
        std::vector<float> v(n);
        for (float& x : v) x = t.is_norm ? 1.0f + 0.1f * next() : 0.25f * next();
        // matrices and stacked experts take the case's type; vectors and the MoE router stay F32
        const bool matrix = t.dims.size() >= 2 && t.name.find("ffn_gate_inp") == std::string::npos;
        const GgmlType ty = matrix ? c.type : GgmlType::F32;
        std::vector<uint8_t> bytes(row_bytes(ty, t.dims[0]) * (n / t.dims[0]));
        for (uint64_t r = 0; r < n / t.dims[0]; ++r)
            quantize_row(ty, v.data() + r * t.dims[0], bytes.data() + r * row_bytes(ty, t.dims[0]), int64_t(t.dims[0]));
        w.add_tensor(t.name, ty, t.dims, std::move(bytes));
    }
    const std::string a = c.spec.arch;
    if (c.emb_scale > 0) w.set_f32(a + ".embedding_scale", c.emb_scale);
    if (c.res_scale > 0) w.set_f32(a + ".residual_scale", c.res_scale);
    if (c.attn_scale > 0) w.set_f32(a + ".attention.scale", c.attn_scale);
    if (c.logit_scale > 0) w.set_f32(a + ".logit_scale", c.logit_scale);
    if (c.window > 0) w.set_u32(a + ".attention.sliding_window", uint32_t(c.window));
    if (c.yarn) {
        w.set_string(a + ".rope.scaling.type", "yarn");
        w.set_f32(a + ".rope.scaling.factor", 8.0f);
        w.set_u32(a + ".rope.scaling.original_context_length", 16);
        w.set_f32(a + ".rope.scaling.yarn_log_multiplier", 0.1f);
        w.set_f32(a + ".attention.temperature_scale", 0.1f);
    }
    return load_model(GgufReader::from_bytes(w.to_bytes(), std::string(c.name) + ".gguf"));
}

size_t slot_len(const Plan& p, Slot s) {
    for (const auto& b : p.buffers)
        if (b.slot == s) {
            size_t n = 1;
            for (auto d : b.shape) n *= size_t(d);
            return n;
        }
    return 0;
}

// gate gemv.xq=producer: n activations quantized as the CPU quantizes a Q4_0 / Q8_0 product's x
// (quantize_act_q8: the spec), laid out as a split-layout bulk gemv's x prologue builds it
// (common/xq8_group.cuh): n int8 values (planes: Q4_0's, elements 0..15 of block b at 16 b, 16..31
// at n / 2 + 16 b), then per block the float pair (d, 8 * the sum of its values)
std::vector<uint8_t> xq8_layout(const float* x, size_t n, bool planes) {
    std::vector<int8_t> q(n);
    std::vector<float> d(n / 32);
    quantize_act_q8(x, int64_t(n), q.data(), d.data());
    std::vector<uint8_t> out(n + n / 32 * 8);
    for (size_t b = 0; b < n / 32; ++b) {
        int sum = 0;
        for (size_t i = 0; i < 32; ++i) {
            sum += q[32 * b + i];
            const size_t off = planes ? (i < 16 ? 16 * b + i : n / 2 + 16 * b + (i - 16)) : 32 * b + i;
            out[off] = uint8_t(q[32 * b + i]);
        }
        const float pair[2] = {d[b], 8.0f * float(sum)};
        std::memcpy(out.data() + n + 8 * b, pair, 8);
    }
    return out;
}

// common.cuh warp_sum on the host: lane 0's result of the xor butterfly over 32 lanes' values
float warp_sum_host(const float (&lanes)[32]) {
    float v[32];
    std::memcpy(v, lanes, sizeof v);
    for (int o = 16; o > 0; o >>= 1) {
        float nv[32];
        for (int l = 0; l < 32; ++l) nv[l] = v[l] + v[l ^ o];
        std::memcpy(v, nv, sizeof v);
    }
    return v[0];
}

// gemv.xq_norm: the residual stream h as its producer leaves it for a normed gemv whose norm weight
// is w (common/xq8_group.cuh xq8_group_store_norm): y = h * w quantized as above (the spec's values)
// but each d unrounded (max |y| / 127), then each group's sum of h^2 as the warp adds them (warp_sum)
std::vector<uint8_t> xq8_norm_layout(const float* h, const float* w, size_t n, bool planes) {
    std::vector<float> y(n);
    for (size_t i = 0; i < n; ++i) y[i] = h[i] * w[i];
    std::vector<uint8_t> out = xq8_layout(y.data(), n, planes);
    out.resize(n + n / 32 * 12);
    for (size_t b = 0; b < n / 32; ++b) {
        float amax = 0.0f, v[32];
        for (size_t i = 0; i < 32; ++i) {
            amax = std::max(amax, std::fabs(y[32 * b + i]));
            v[i] = h[32 * b + i] * h[32 * b + i];
        }
        const float d = amax / 127.0f, ss = warp_sum_host(v);
        std::memcpy(out.data() + n + 8 * b, &d, 4);
        std::memcpy(out.data() + n + n / 4 + 4 * b, &ss, 4);
    }
    return out;
}

// A gemv with XQ_IN: its x slot (its first task's first input), the scratch buffer it copies x from,
// whether that is Q4_0's layout, and (NORM_IN: gemv.xq_norm) its norm weight
struct XqInput {
    Slot x;
    std::string scratch;
    bool planes;
    const float* nw = nullptr;
};
XqInput xq_input(const Plan& p, const KernelStep& k) {
    bool planes = false, norm = false;
    for (const auto& [name, value] : k.variant.defines) {
        planes = planes || (name == "WTYPE" && value == "Q4_0");
        norm = norm || (name == "NORM_IN" && value == "1");
    }
    const Task& first = p.decode[size_t(k.tasks.front())];
    return {first.in.front(), k.args[9].scratch, planes, norm ? first.w.at(0)->f32() : nullptr};
}
std::vector<uint8_t> xq_bytes(const XqInput& xi, const float* x, size_t n) {
    return xi.nw ? xq8_norm_layout(x, xi.nw, n, xi.planes) : xq8_layout(x, n, xi.planes);
}

// gemv.xq_norm's numerics (no GPU): the producer's layout of the residual h and the norm weight w
// (y = h * w quantized, d unrounded, the groups' sums of h^2), scaled as the consumer scales it (1 / rms
// from the groups' sums in its order, d -> f16(d / rms)), is the CPU spec's quantization of rms_norm(h,
// w) up to the last bits of the products: a q value differs only at a tie within a few ulps (by one),
// a d only where its f16 rounding sits on such a tie (by one f16 step). So the consumer stays within
// kernels_vs_cpu's tolerance of the unchanged spec. Residual streams of several sizes, outlier columns.
TEST(XqNorm, ScaledGroupsAreTheSpecsQuantizationOfTheNormUpToTheLastBits) {
    constexpr size_t n = 4096;
    constexpr float eps = 1e-5f;
    uint64_t st = 20261204;
    auto next = [&] {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        return float(double(st >> 40) / double(1ull << 24)) - 0.5f;
    };
    size_t q_diff = 0, d_diff = 0, groups = 0, values = 0;
    for (int trial = 0; trial < 64; ++trial) {
        std::vector<float> h(n), w(n), xn(n);
        const float size = std::exp(6.0f * next());
        for (size_t i = 0; i < n; ++i) {
            h[i] = size * next() * (i % 97 == 0 ? 20.0f : 1.0f);
            w[i] = 1.0f + 0.4f * next();
        }
        cpu::rms_norm(h.data(), w.data(), xn.data(), int(n), eps);
        std::vector<int8_t> q(n);
        std::vector<float> d(n / 32);
        quantize_act_q8(xn.data(), int64_t(n), q.data(), d.data());  // the spec
        const std::vector<uint8_t> lay = xq8_norm_layout(h.data(), w.data(), n, false);
        ASSERT_EQ(lay.size(), n + n / 32 * 12);
        auto at = [&](size_t off) {
            float v;
            std::memcpy(&v, lay.data() + off, 4);
            return v;
        };
        float lane[32];  // common/xq8_group.cuh xq8_norm_inv: lane l sums groups l, l + 32, ..., then warp_sum
        for (int l = 0; l < 32; ++l) {
            lane[l] = 0.0f;
            for (size_t g = size_t(l); g < n / 32; g += 32) lane[l] += at(n + n / 4 + 4 * g);
        }
        const float inv = 1.0f / std::sqrt(warp_sum_host(lane) / float(n) + eps);
        for (size_t g = 0; g < n / 32; ++g, ++groups) {
            const float dg = fp16_to_fp32(fp32_to_fp16(at(n + 8 * g) * inv));  // xq8_norm_d
            if (dg == d[g]) continue;
            ++d_diff;
            EXPECT_NEAR(dg, d[g], d[g] / 1024.0f) << "group " << g << " of trial " << trial;
        }
        for (size_t i = 0; i < n; ++i, ++values) {
            const int qi = int(int8_t(lay[i]));
            if (qi == q[i]) continue;
            ++q_diff;
            EXPECT_EQ(std::abs(qi - int(q[i])), 1) << "value " << i << " of trial " << trial;
        }
    }
    std::printf("[xq-norm] %zu of %zu q values and %zu of %zu scales differ from the spec's\n", q_diff, values, d_diff,
                groups);
    EXPECT_LE(q_diff * 10000, values);  // ties within a few ulps: rare (here 2 of 262144)
    EXPECT_LE(d_diff * 500, groups);    // (here 4 of 8192)
}

// Whether a task after `last` reads slot s before any task writes it.
bool live_after(const std::vector<Task>& tasks, size_t last, Slot s) {
    for (size_t i = last + 1; i < tasks.size(); ++i) {
        for (Slot r : tasks[i].in)
            if (r == s) return true;
        for (Slot w : tasks[i].out)
            if (w == s) return false;
    }
    return false;
}

// The backend options of a variant for a case; false when the variant does not apply to it
// (heads per block that do not divide the case's query heads per kv head).
bool variant_options(const OptionSet& var, const Case& c, CudaOptions& o) {
    const int qpg = c.spec.n_heads / c.spec.n_kv_heads;
    const int hpb = var.s.attn_heads_per_block;
    if (hpb > 0 && qpg % hpb != 0) return false;
    o.schedule = var.s;
    if (hpb == kAllHeads) o.schedule.attn_heads_per_block = qpg;
    o.cache.disk = false;
    o.graphs = false;
    return true;
}

class KernelsVsCpu : public ::testing::TestWithParam<Case> {};

// Without a GPU (CI): every variant's schedule builds for sm_90 and sm_80 at every case (a
// variant the schedule refuses would otherwise only show on the GPU, in device time).
TEST_P(KernelsVsCpu, EveryVariantSchedulesWithoutAGpu) {
    const Case c = GetParam();
    auto m = build(c);
    const Plan plan = plan_build(*m, c.n_ctx);
    int built = 0;
    for (const OptionSet& var : kVariants) {
        SCOPED_TRACE(var.name);
        CudaOptions o;
        if (!variant_options(var, c, o)) continue;
        for (const char* target : {"sm_90", "sm_80"}) {
            if (var.sm90() && std::string(target) != "sm_90") continue;
            EXPECT_NO_THROW(schedule_build(plan, DeviceInfo::for_target(target), o.schedule)) << target;
        }
        ++built;
    }
    EXPECT_GE(built, int(std::size(kVariants)) - 3);
}

// Every variant's kernels compile for sm_90 (NVRTC, no GPU) on two cases: the 8B head shape with
// split-layout weights, and a windowed plain-type one; on the YaRN case, the kernels with its
// defines (computed YaRN angles, q's temperature). A GPU run once found that
// `gated+fused+bulk+rows1` did not compile (the q/k/v gemv with RoPE and one row per warp item):
// a kernel that does not compile now fails in CI. (The other cases share these kernels' code
// paths; the offline_kernels_compile_* tests cover the golden models and sm_80.)
TEST_P(KernelsVsCpu, EveryVariantCompilesWithoutAGpu) {
    const Case c = GetParam();
    const std::string name = c.name;
    if (name != "llama_gqa4_hd128_q4_0" && name != "phi3_window3_hd64_f16" && !c.yarn)
        GTEST_SKIP() << "compiled for three cases only (CI time)";
    auto m = build(c);
    const Plan plan = plan_build(*m, c.n_ctx);
    std::vector<jitllm::Variant> all;
    std::set<std::string> seen;
    for (const OptionSet& var : kVariants) {
        CudaOptions o;
        if (!variant_options(var, c, o)) continue;
        for (const auto& v : schedule_variants(schedule_build(plan, DeviceInfo::for_target("sm_90"), o.schedule)))
            if ((!c.yarn || v.has("YARN") || v.has("ATTN_TEMP")) && seen.insert(v.display_name()).second)
                all.push_back(v);
    }
    JitOptions jo;
    jo.cache.disk = false;
    JitCompiler jit("sm_90", jo);
    try {
        jit.compile_all(all);  // parallel
    } catch (const Error&) {
        for (const auto& v : all) {  // which ones
            try {
                jit.compile(v);
            } catch (const Error& e) {
                ADD_FAILURE() << v.display_name() << ": " << e.what();
            }
        }
    }
    std::printf("[compile] %s: %zu kernel variants for sm_90\n", c.name, all.size());
}

TEST_P(KernelsVsCpu, EveryKernelMatchesItsCpuTasks) {
    std::string why;
    if (!cuda_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    const Case c = GetParam();
    auto m = build(c);
    const Plan plan = plan_build(*m, c.n_ctx);
    const ModelConfig& cfg = m->config;
    const int n_hist = c.n_hist;
    const int cc_major = CudaContext(0).device().cc_major;
    // the cached positions, decoded once on the CPU (thousands of tokens for the long cases: use
    // the host's cores); each variant starts from a copy of their KV cache
    const int threads = int(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
    CpuBackend hist(plan, threads);
    for (int p = 0; p < n_hist; ++p) hist.decode(int32_t((p * 131 + 7) % cfg.n_vocab), p);
    const size_t kv_elems = size_t(n_hist) * size_t(cfg.kv_dim());
    // JITLLM_KVC_VARIANTS=TEXT[,TEXT...]: only the variants whose name contains one of the TEXTs
    // (a device call's time)
    std::vector<std::string> only;
    if (const char* e = std::getenv("JITLLM_KVC_VARIANTS"); e && *e) {
        std::string cur;
        for (const char* q = e;; ++q) {
            if (*q == ',' || *q == 0) {
                if (!cur.empty()) only.push_back(cur);
                cur.clear();
                if (*q == 0) break;
            } else {
                cur += *q;
            }
        }
    }
    for (const OptionSet& var : kVariants) {
        SCOPED_TRACE(var.name);
        if (!only.empty() && std::none_of(only.begin(), only.end(),
                                          [&](const std::string& t) { return std::strstr(var.name, t.c_str()); }))
            continue;
        CudaOptions o;
        if (!variant_options(var, c, o) || (var.sm90() && cc_major < 9)) continue;
        CudaBackend gpu(plan, o);
        // the CPU starts from the history's KV cache (decoded once, before the variants)
        CpuBackend cpu(plan, threads);
        for (int l = 0; l < cfg.n_layers; ++l)
            for (Slot kv : {Slot::KCache, Slot::VCache})
                std::copy_n(hist.slot(kv, l), kv_elems, cpu.slot(kv, l));
        for (int l = 0; l < cfg.n_layers; ++l)
            gpu.upload_kv(l, cpu.slot(Slot::KCache, l), cpu.slot(Slot::VCache, l), n_hist);
        const int32_t token = 1000 % cfg.n_vocab;
        const int pos = n_hist;
        // CPU: token_embd first, the GPU then follows kernel by kernel from the same state
        // (sample.fuse=gemv: the greedy steps' list, whose output gemv picks)
        const auto fs = var.s.force.find("sample.fuse");
        const bool fused_pick = fs != var.s.force.end() && fs->second == "gemv";
        ASSERT_TRUE(!fused_pick || !gpu.schedule().decode_greedy.empty()) << "sample.fuse=gemv without a greedy list";
        const auto& steps = fused_pick ? gpu.schedule().decode_greedy : gpu.schedule().decode;
        std::vector<float> got;
        size_t next_task = 0;
        for (size_t si = 0; si < steps.size(); ++si) {
            const KernelStep& k = steps[si];
            // upload every activation slot the kernel may read (once per task group: a later
            // launch of the same group reads what the earlier one wrote)
            const bool continues_group = si > 0 && steps[si - 1].tasks == k.tasks;
            if (!continues_group)
            for (Slot s : {Slot::X, Slot::Xb, Slot::Q, Slot::K, Slot::V, Slot::Att, Slot::Tmp, Slot::Hb, Slot::Hb2,
                           Slot::Logits, Slot::Router, Slot::ExpIds, Slot::ExpW, Slot::ExpHb, Slot::ExpHb2})
                if (slot_len(plan, s) > 0) gpu.upload_slot(s, cpu.slot(s), slot_len(plan, s));
            if (!continues_group)
                gpu.upload_kv(k.layer < 0 ? 0 : k.layer, cpu.slot(Slot::KCache, k.layer < 0 ? 0 : k.layer),
                              cpu.slot(Slot::VCache, k.layer < 0 ? 0 : k.layer), n_hist);
            // gemv.xq=producer's consumer: its x as it would have quantized the CPU's slot itself (the
            // producer's own bytes are checked after the producer, below)
            if (k.variant.has("XQ_IN")) {
                const XqInput xi = xq_input(plan, k);
                const std::vector<uint8_t> xq = xq_bytes(xi, cpu.slot(xi.x), slot_len(plan, xi.x));
                gpu.upload_scratch(xi.scratch, xq.data(), xq.size());
            }
            // CPU runs the tasks this kernel covers (a _reduce step covers none new)
            std::vector<Slot> outs;
            for (int ti : k.tasks) {
                if (size_t(ti) < next_task) continue;
                const Task& t = plan.decode[size_t(ti)];
                outs.insert(outs.end(), t.out.begin(), t.out.end());
            }
            if (si + 1 < steps.size() && steps[si + 1].tasks == k.tasks) {
                // several launches for one task group (split-KV partial + reduce; q-norm then
                // k-norm): run this one now, compare after the group's last launch
                gpu.run_step(Phase::Decode, si, token, pos, fused_pick);
                continue;
            }
            std::vector<int> todo;
            for (int ti : k.tasks)
                if (size_t(ti) >= next_task) todo.push_back(ti);
            cpu.run_tasks_at(plan.decode, todo, token, pos);
            if (!todo.empty()) next_task = size_t(todo.back()) + 1;
            gpu.run_step(Phase::Decode, si, token, pos, fused_pick);
            // gemv.xq=producer: the bytes it left for the next gemv are its own output quantized (its
            // output's floats against the CPU's: below)
            if (k.variant.has("XQ_OUT") || k.variant.has("ATT_XQ")) {
                ASSERT_TRUE(si + 1 < steps.size() && steps[si + 1].variant.has("XQ_IN")) << k.symbol << ": a producer without its consumer";
                const XqInput xi = xq_input(plan, steps[si + 1]);
                const size_t n = slot_len(plan, xi.x);
                got.resize(n);
                gpu.download_slot(xi.x, got.data(), n);
                const std::vector<uint8_t> want = xq_bytes(xi, got.data(), n);
                std::vector<uint8_t> have(want.size());
                gpu.download_scratch(xi.scratch, have.data(), have.size());
                size_t diff = 0;
                for (size_t i = 0; i < want.size(); ++i) diff += want[i] != have[i];
                EXPECT_EQ(diff, 0u) << k.symbol << ": bytes of " << xi.scratch << " unlike its output " << slot_name(xi.x)
                                    << " quantized (" << c.name << ")";
            }
            for (Slot s : outs) {
                if (s == Slot::KCache || s == Slot::VCache || s == Slot::Token) continue;
                // a fused kernel keeps intermediates on chip: compare only slots a later task
                // reads before rewriting them (live-out), plus the logits
                if (s != Slot::Logits && !live_after(plan.decode, size_t(k.tasks.back()), s)) continue;
                const size_t n = slot_len(plan, s);
                got.resize(n);
                gpu.download_slot(s, got.data(), n);
                const float* ref = cpu.slot(s);
                if (s == Slot::ExpIds) {  // int32 expert ids: the same choice, in the same order
                    EXPECT_EQ(std::memcmp(got.data(), ref, n * 4), 0) << k.symbol << " chose other experts (" << c.name << ")";
                    continue;
                }
                double err = 0, norm = 0;
                for (size_t i = 0; i < n; ++i) {
                    err += double(got[i] - ref[i]) * double(got[i] - ref[i]);
                    norm += double(ref[i]) * double(ref[i]);
                }
                const double rel = std::sqrt(err / std::max(norm, 1e-30));
                // float32 arithmetic in another order; half KV rounding in attention
                const bool attn = k.group == "attn" || (k.group.size() > 5 && k.group.compare(k.group.size() - 5, 5, "_attn") == 0);
                const double tol = attn ? 2e-3 : 1e-4;
                EXPECT_LE(rel, tol) << k.symbol << " slot " << slot_name(s) << " (" << c.name << ")";
            }
        }
        // sample: the device argmax (over the logits uploaded from the CPU) equals the CPU's; with
        // sample.fuse=gemv the pick is over the output gemv's own logits (equal to the CPU's within
        // the tolerance above, not bit for bit): the CPU's argmax of those
        if (fused_pick) {
            got.resize(slot_len(plan, Slot::Logits));
            gpu.download_slot(Slot::Logits, got.data(), got.size());
            EXPECT_EQ(gpu.device_token_out(), cpu::argmax(got.data(), cfg.n_vocab));
        } else {
            EXPECT_EQ(gpu.device_token_out(), cpu.sampled_token());
        }
    }
}

TinySpec spec(const char* arch, int dim, int ff, int heads, int kv, int hd, int vocab, int n_ctx = 64) {
    TinySpec s;
    s.arch = arch;
    s.dim = dim;
    s.ff = ff;
    s.n_heads = heads;
    s.n_kv_heads = kv;
    s.head_dim = hd;
    s.n_vocab = vocab;
    s.n_layers = 2;
    s.n_ctx = n_ctx;
    return s;
}

// a mixture-of-experts shape: n_expert experts of width eff, `used` a token, a shared expert of sff
TinySpec moe_spec(const char* arch, int dim, int heads, int kv, int hd, int n_expert, int used, int eff, int sff) {
    TinySpec s = spec(arch, dim, sff > 0 ? sff : 64, heads, kv, hd, 1003);  // ff: the dense key only
    s.n_expert = n_expert;
    s.n_expert_used = used;
    s.expert_ff = eff;
    s.shared_ff = sff;
    return s;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, KernelsVsCpu,
    ::testing::Values(
        Case{"llama_gqa1_hd64_f32", spec("llama", 256, 352, 4, 4, 64, 1003), GgmlType::F32},
        Case{"llama_gqa4_hd64_f16", spec("llama", 256, 352, 4, 1, 64, 1003), GgmlType::F16},
        Case{"llama_gqa8_hd64_q8_0", spec("llama", 512, 352, 8, 1, 64, 1003), GgmlType::Q8_0},
        Case{"llama_gqa4_hd128_q4_0", spec("llama", 512, 352, 4, 1, 128, 1003), GgmlType::Q4_0},
        Case{"qwen2_bias_hd128_bf16", spec("qwen2", 256, 352, 2, 2, 128, 1003), GgmlType::BF16},
        Case{"qwen3_qknorm_hd128_q5_1", spec("qwen3", 256, 352, 4, 1, 128, 1003), GgmlType::Q5_1},
        Case{"phi3_fused_hd64_q4_1", spec("phi3", 256, 352, 4, 4, 64, 1003), GgmlType::Q4_1},
        Case{"phi3_fused_split_hd64_q4_0", spec("phi3", 256, 512, 4, 4, 64, 1003), GgmlType::Q4_0},
        Case{"granite_scales_hd64_q5_0", spec("granite", 256, 352, 4, 1, 64, 1003), GgmlType::Q5_0,
             12.0f, 0.22f, 0.25f, 2.0f},
        Case{"phi3_window3_hd64_f16", spec("phi3", 256, 352, 4, 4, 64, 1003), GgmlType::F16, 0, 0, 0, 0, 3},
        // every matrix split-layout, rows of multiples of 256: Q4_0, and Q8_0 with granite's
        // residual scale
        Case{"llama_tail_hd64_q4_0", spec("llama", 512, 768, 8, 2, 64, 1003), GgmlType::Q4_0},
        Case{"granite_tail_hd64_q8_0", spec("granite", 512, 768, 8, 2, 64, 1003), GgmlType::Q8_0, 12.0f, 0.22f, 0.25f,
             2.0f},
        // split-KV with several active blocks: 2500 cached positions in chunks of 128 over 16
        // blocks per kv head (8 kv heads, 132 SMs), so some blocks take two chunks and the last
        // block combines 16 states; and a window of 200 starting in the 4th chunk (3 blocks)
        Case{"llama_mha8_hd64_f16_hist2500", spec("llama", 512, 352, 8, 8, 64, 1003, 4096), GgmlType::F16,
             0, 0, 0, 0, 0, 2500, 4096},
        Case{"phi3_window200_hd64_q8_0_hist700", spec("phi3", 256, 352, 4, 4, 64, 1003, 1024), GgmlType::Q8_0,
             0, 0, 0, 0, 200, 700, 1024},
        // grouped heads with several active blocks: 4 query heads per kv head, 300 positions in
        // 3 chunks (the heads-per-block variants combine per (kv head, head set))
        Case{"llama_gqa4_hd128_f16_hist300", spec("llama", 512, 352, 8, 2, 128, 1003, 1024), GgmlType::F16,
             0, 0, 0, 0, 0, 300, 1024},
        // the same with Q4_0 weights (split-layout gemvs around several active split blocks)
        Case{"llama_gqa4_hd128_q4_0_hist300", spec("llama", 512, 352, 8, 2, 128, 1003, 1024), GgmlType::Q4_0,
             0, 0, 0, 0, 0, 300, 1024},
        // mixture of experts (moe.cu): expert widths of 96 and 160 (an odd block count: rows only
        // 2-aligned in the stage), the shared expert of qwen2moe, a router over 40 experts (2 per lane)
        Case{"qwen3moe_e40k6_hd128_q4_0", moe_spec("qwen3moe", 256, 4, 1, 128, 40, 6, 96, 0), GgmlType::Q4_0},
        Case{"qwen2moe_e6k2_shared_q8_0", moe_spec("qwen2moe", 256, 4, 4, 64, 6, 2, 96, 160), GgmlType::Q8_0},
        Case{"qwen2moe_e8k4_shared_f16", moe_spec("qwen2moe", 256, 4, 2, 64, 8, 4, 160, 96), GgmlType::F16},
        Case{"qwen3moe_e4k2_hd64_bf16", moe_spec("qwen3moe", 256, 4, 2, 64, 4, 2, 96, 0), GgmlType::BF16},
        // mistral3: YaRN angles (the table, computed per pair, in rope.cu and the q/k/v gemv) and q's
        // temperature at position 40 (floor(40 / 16) = 2 steps)
        Case{"mistral3_yarn_temp_hd128_q8_0", spec("mistral3", 256, 352, 4, 2, 128, 1003), GgmlType::Q8_0,
             0, 0, 0, 0, 0, 40, 64, true}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
