// The batch phase's grouped mixture-of-experts kernels (gate moe.batch=grouped: moe_group.cu's group
// list and combine, gemm.cu GROUPED; lowering/moe_batch.cpp) on a one-layer tiny model:
//  - MoeGroupSchedule (no GPU): the GEMM list's kernels, their grids for steps of 1 .. 512 rows, the
//    scratch, the siblings (moe.batch=rows, gemm.mma=simt, --no-fuse, moe.bm) and the small-step
//    list keeping moe.cu's rows kernels.
//  - MoeGroupCompile (no GPU): every weight type's grouped GEMM (MMA 0 / 1, gathered and in-order x,
//    tile rows 32 / 64 / 128), the group list and the combine compile for sm_80 and sm_90 without spills.
//  - MoeGroupVsCpu (GPU, skipped without one): steps of 1, 7, 64 and 512 rows (the siblings 7 and
//    512), qwen3moe-like (no shared expert) and qwen2moe-like (a shared expert) layers in Q4_0, Q8_0,
//    F16, BF16 and Q4_K, the default and each sibling above: the layer's kernels one launch at a time, each checked from the device's own
//    inputs against the CPU (the router's choices exactly; the group list exactly against a stable
//    sort; each product against cpu::matvec with float x: relative error 5e-3 on tensor cores, 2.5e-2
//    with BF16, 1e-4 on SIMT; the combine against the CPU's arithmetic in the same order: 1e-5), then the
//    layer's output against the CPU backend's (its Q4_0 / Q8_0 products take x quantized to 8 bits,
//    the GEMMs 16-bit x: 4e-2, else 1e-2, relative to the layer's change of x).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/gemm_variant.h"
#include "fixtures/engine_factory.h"  // cuda_available
#include "gguf/gguf_reader.h"
#include "gpu/random_weights.h"
#include "jit/jit_compiler.h"
#include "unit/tiny_arch_model.h"

namespace {

using namespace jitllm;
using namespace jitllm::test;

constexpr int kRows = 512;  // the plan's batch rows

struct MoeCase {
    const char* name;
    const char* arch;
    int n_expert, used, eff, sff;  // experts, used a row, expert width, shared expert width (0: none)
    GgmlType type;                 // the experts' (and the shared expert's) matrices
};
void PrintTo(const MoeCase& c, std::ostream* os) { *os << c.name; }

// One layer: the expert matrices (and the shared expert's) of the case's type from random values, the
// router and every other tensor F32
std::unique_ptr<Model> build(const MoeCase& c) {
    TinySpec s;
    s.arch = c.arch;
    s.dim = 256;
    s.ff = c.sff > 0 ? c.sff : 64;
    s.n_heads = 4;
    s.n_kv_heads = 2;
    s.head_dim = 64;
    s.n_vocab = 64;
    s.n_layers = 1;
    s.n_ctx = 64;
    s.n_expert = c.n_expert;
    s.n_expert_used = c.used;
    s.expert_ff = c.eff;
    s.shared_ff = c.sff;
    GgufWriter w = tiny_model(s, [](TinyTensor&) { return false; });  // keys only
    std::mt19937 rng(uint32_t(c.n_expert * 131 + c.eff));
    auto uni = [&] { return std::uniform_real_distribution<float>(-0.5f, 0.5f)(rng); };
    for (const TinyTensor& t : tiny_tensors(s)) {
        uint64_t n = 1;
        for (auto d : t.dims) n *= d;
        const bool expert = t.dims.size() >= 2 && (t.name.find("_exps.") != std::string::npos ||
                                                   t.name.find("_shexp.") != std::string::npos);
        if (expert) {
            const int cols = int(t.dims[0]), rows = int(n / t.dims[0]);
            w.add_tensor(t.name, c.type, t.dims, random_weights(c.type, rows, cols, rng));
            continue;
        }
        std::vector<uint8_t> bytes(n * 4);
        for (uint64_t i = 0; i < n; ++i) {
            const float v = t.is_norm ? 1.0f + 0.2f * uni() : 0.5f * uni();
            std::memcpy(bytes.data() + 4 * i, &v, 4);
        }
        w.add_tensor(t.name, GgmlType::F32, t.dims, std::move(bytes));
    }
    return load_model(GgufReader::from_bytes(w.to_bytes(), std::string(c.name) + ".gguf"));
}

Plan plan_of(const Model& m) { return plan_build(m, PlanOptions{64, kRows, 1}); }

std::string define(const KernelStep& k, const char* name) {
    for (const auto& [n, v] : k.variant.defines)
        if (n == name) return v;
    return "";
}
bool has(const KernelStep& k, const char* text) { return k.symbol.find(text) != std::string::npos; }

// the layer's batch tasks from ffn_norm to ffn_residual
std::pair<size_t, size_t> ffn_range(const Plan& p) {
    size_t lo = p.batch.size(), hi = 0;
    for (size_t i = 0; i < p.batch.size(); ++i) {
        if (p.batch[i].kind == TaskKind::FfnNorm) lo = i;
        if (p.batch[i].kind == TaskKind::FfnResidual) hi = i;
    }
    return {lo, hi};
}

const Task& task(const Plan& p, TaskKind k) {
    for (const Task& t : p.batch)
        if (t.kind == k) return t;
    ADD_FAILURE() << "no task " << task_kind_name(k);
    return p.batch.front();
}

const MoeCase kQwen3 = {"qwen3moe_e40k6_q4_0", "qwen3moe", 40, 6, 96, 0, GgmlType::Q4_0};
const MoeCase kQwen2 = {"qwen2moe_e16k4_shared_q8_0", "qwen2moe", 16, 4, 160, 224, GgmlType::Q8_0};

// ------------------------------------------------------------------------------ no GPU
TEST(MoeGroupSchedule, GemmListGroupsTheExpertsAndTheSmallListKeepsTheRowsKernels) {
    for (const MoeCase& c : {kQwen3, kQwen2}) {
        SCOPED_TRACE(c.name);
        auto m = build(c);
        const Plan p = plan_of(*m);
        const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), {});
        const KernelStep *sort = nullptr, *gate_up = nullptr, *down = nullptr, *combine = nullptr;
        int shexp_gemms = 0;
        for (const KernelStep& k : s.batch) {
            EXPECT_FALSE(has(k, "moe_gate_up_rows") || has(k, "moe_down_rows")) << k.symbol;
            if (has(k, "__moe_group")) sort = &k;
            if (has(k, "_grouped_")) (k.group == "ffn_exp_down" ? down : gate_up) = &k;
            if (has(k, "__moe_combine")) combine = &k;
            if (k.group.rfind("ffn_shexp", 0) == 0 && has(k, "__gemm_")) ++shexp_gemms;
        }
        ASSERT_TRUE(sort && gate_up && down && combine);
        EXPECT_EQ(gate_up->group, "ffn_exp_gate_up_exp_act");
        EXPECT_EQ(combine->group, c.sff ? "ffn_exp_down_shexp_down_residual" : "ffn_exp_down_residual");
        EXPECT_EQ(shexp_gemms, c.sff ? 2 : 0);
        EXPECT_EQ(define(*sort, "BM"), "64");
        EXPECT_EQ(define(*gate_up, "GROUPED"), "1");
        EXPECT_EQ(define(*down, "GROUPED"), "2");
        EXPECT_EQ(define(*gate_up, "MMA"), "1");
        // grid.x: at most one tile per BM entries plus one partial tile per expert, never more tiles
        // than entries bring (one expert each)
        const int K = c.used;
        for (int rows : {1, 7, 64, 512}) {
            const unsigned want = unsigned((rows * K + 63) / 64 + std::min(c.n_expert, rows * K));
            EXPECT_EQ(gate_up->grid_for_rows(rows).x, want) << rows;
            EXPECT_EQ(down->grid_for_rows(rows).x, want) << rows;
            EXPECT_EQ(combine->grid_for_rows(rows).y, unsigned(rows));
            EXPECT_EQ(sort->grid_for_rows(rows).x, 1u);
        }
        EXPECT_EQ(gate_up->grid.y, unsigned(2 * c.eff + 127) / 128);
        EXPECT_EQ(down->grid.y, 2u);  // dim 256 over 128-row tiles
        // scratch: the list for 512 rows (tiles, entries, positions), the down products
        const size_t tiles = size_t((kRows * K + 63) / 64 + c.n_expert);
        EXPECT_EQ(s.scratch.at("moe_group"), 16 + 16 * tiles + 8 * size_t(kRows) * size_t(K));
        EXPECT_EQ(s.scratch.at("moe_y"), size_t(kRows) * size_t(K) * 256 * 4);
        EXPECT_EQ(sort->args[2].offset, 16 + 16 * tiles);
        // bytes: every expert's matrices once (which ones a step uses is known on the device only)
        const Task& gu = task(p, TaskKind::FfnExpGateUp);
        EXPECT_EQ(gate_up->bytes_fixed, gu.w[0]->n_bytes + gu.w[1]->n_bytes);
        EXPECT_EQ(gate_up->flops, gu.flops);
        // the small-step list keeps moe.cu's rows kernels
        bool rows_kernels = false;
        for (const KernelStep& k : s.batch_small) {
            EXPECT_FALSE(has(k, "_grouped_") || has(k, "__moe_group") || has(k, "__moe_combine")) << k.symbol;
            rows_kernels = rows_kernels || has(k, "moe_gate_up_rows");
        }
        EXPECT_TRUE(rows_kernels);
    }
}

TEST(MoeGroupSchedule, SiblingsAndTunables) {
    auto m = build(kQwen2);
    const Plan p = plan_of(*m);
    auto count = [](const Schedule& s, const char* text) {
        int n = 0;
        for (const KernelStep& k : s.batch) n += has(k, text);
        return n;
    };
    const DeviceInfo dev = DeviceInfo::for_target("sm_90");
    ScheduleOptions rows;
    rows.force["moe.batch"] = "rows";
    const Schedule sr = schedule_build(p, dev, rows);
    EXPECT_EQ(count(sr, "_grouped_") + count(sr, "__moe_group") + count(sr, "__moe_combine"), 0);
    EXPECT_EQ(count(sr, "moe_gate_up_rows"), 1);
    ScheduleOptions simt;
    simt.force["gemm.mma"] = "simt";
    simt.moe_bm = 32;  // (SIMT tiles: 64 rows only)
    const Schedule ss = schedule_build(p, dev, simt);
    EXPECT_EQ(count(ss, "gemm_simt_grouped_q8_0"), 2);
    for (const KernelStep& k : ss.batch) {
        if (has(k, "__moe_group")) {
            EXPECT_EQ(define(k, "BM"), "64");
        }
    }
    ScheduleOptions bm32;
    bm32.moe_bm = 32;
    for (const KernelStep& k : schedule_build(p, dev, bm32).batch) {
        if (has(k, "_grouped_") || has(k, "__moe_group")) {
            EXPECT_EQ(define(k, "BM"), "32") << k.symbol;
        }
    }
    ScheduleOptions unfused;
    unfused.fuse = false;
    const Schedule su = schedule_build(p, dev, unfused);
    for (const KernelStep& k : su.batch)
        if (has(k, "__moe_combine")) {
            EXPECT_EQ(k.group, "ffn_exp_down_shexp_down");
            EXPECT_EQ(define(k, "RESID"), "0");
            EXPECT_EQ(k.args[5].slot, Slot::Tmp);
        }
    EXPECT_EQ(count(su, "add_rows"), 2);  // both residuals of the layer on their own
    // sm_80: mma.sync tiles too
    EXPECT_EQ(count(schedule_build(p, DeviceInfo::for_target("sm_80"), {}), "gemm_mma_grouped_q8_0"), 2);
}

TEST(MoeGroupCompile, EveryTypeAndTileCompilesForSm80AndSm90WithoutSpills) {
    const GgmlType types[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                              GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                              GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
    std::vector<Variant> vs;
    for (GgmlType t : types)
        for (int mma : {1, 0})
            for (int bm : {32, 64, 128}) {
                if ((!mma && bm != 64) || (mma && t == GgmlType::F32)) continue;
                for (int down : {0, 1}) {
                    GemmSpec s;
                    s.wtype = t;
                    s.cols = down ? 768 : 2048;
                    s.rows[0] = down ? 2048 : 768;
                    s.rows[1] = down ? 0 : 768;
                    s.n_mat = down ? 1 : 2;
                    s.epi = down ? 0 : 2;
                    s.mma = mma;
                    s.bm = bm;
                    s.grouped = down ? 2 : 1;
                    s.group_k = 8;
                    s.groups = 128;
                    vs.push_back(gemm_variant(s, fmt::format("test_{}_{}_bm{}_{}", down ? "down" : "gate_up",
                                                             mma ? "mma" : "simt", bm, type_name(t))));
                }
            }
    for (int resid : {0, 1})
        for (int shared : {0, 1}) {
            Variant v("cuda/moe_group.cu", fmt::format("test_combine_r{}_s{}", resid, shared));
            v.set("MG", 1).set("NE", 60).set("K", 4).set("DIM", 2048).set("NR", 61).set("SHARED", shared).set("RESID", resid);
            if (resid) v.set("RES_SCALE", "0.5f");
            vs.push_back(v);
        }
    for (int ne : {128, 60, 512}) {
        Variant v("cuda/moe_group.cu", fmt::format("test_group_ne{}", ne));
        v.set("MG", 0).set("NE", ne).set("K", 8).set("BM", 64).set("WARPS", ne == 512 ? 20 : 32);
        vs.push_back(v);
    }
    for (const char* arch : {"sm_80", "sm_90"}) {
        JitCompiler jit(arch, JitOptions{{false, ""}, 0});
        for (const CompiledKernel& k : jit.compile_all(vs)) {
            SCOPED_TRACE(k.variant.display_name() + " " + k.arch);
            EXPECT_FALSE(k.cubin.empty());
            EXPECT_EQ(k.usage.spill_stores, 0) << k.log;
            EXPECT_EQ(k.usage.spill_loads, 0);
        }
    }
}

// ------------------------------------------------------------------------------ GPU
// got against ref as `rows` rows of `width`: the relative error of the whole, and of each row against
// the rows' rms norm (a wrong row stands out even among 3072)
void expect_close(const std::string& what, const float* got, const float* ref, size_t rows, size_t width, double tol) {
    double err = 0, norm = 0;
    std::vector<double> row_err(rows);
    for (size_t r = 0; r < rows; ++r)
        for (size_t i = 0; i < width; ++i) {
            const double d = double(got[r * width + i]) - double(ref[r * width + i]);
            row_err[r] += d * d;
            norm += double(ref[r * width + i]) * double(ref[r * width + i]);
        }
    for (double e : row_err) err += e;
    const double rel = std::sqrt(err / std::max(norm, 1e-30)), rms_row = std::sqrt(norm / double(rows));
    EXPECT_LE(rel, tol) << what;
    int bad = 0;
    for (size_t r = 0; r < rows; ++r) {
        const double e = std::sqrt(row_err[r]) / std::max(rms_row, 1e-30);
        if (!(e <= 4 * tol) && bad++ < 3) ADD_FAILURE() << what << ": row " << r << " off by " << e << " of a row's norm";
    }
}

// expert e's matrix of a stacked tensor
const uint8_t* expert(const WeightTensor* w, int e) { return w->data + size_t(e) * (w->n_bytes / w->stack); }
// rows x cols matrix mat (of w's type) times x with float x: the GEMMs' arithmetic up to rounding
void matvec(const WeightTensor* w, const uint8_t* mat, int rows, int cols, const float* x, float* y) {
    cpu::matvec(w->type, mat, w->row_bytes, rows, cols, x, y, 1, cpu::XNumerics::Float);
}

// The group list the CPU expects from the choices ids (n entries): the entries sorted by expert,
// stably; each entry's position; the tiles (expert, first, count) of at most bm
struct GroupList {
    std::vector<int> ent, pos, tiles;
};
GroupList group_list(const std::vector<int>& ids, int bm) {
    GroupList g;
    g.ent.resize(ids.size());
    std::iota(g.ent.begin(), g.ent.end(), 0);
    std::stable_sort(g.ent.begin(), g.ent.end(), [&](int a, int b) { return ids[size_t(a)] < ids[size_t(b)]; });
    g.pos.resize(ids.size());
    for (size_t p = 0; p < ids.size(); ++p) g.pos[size_t(g.ent[p])] = int(p);
    for (size_t p = 0; p < ids.size();) {
        size_t q = p;
        while (q < ids.size() && ids[size_t(g.ent[q])] == ids[size_t(g.ent[p])] && q - p < size_t(bm)) ++q;
        g.tiles.insert(g.tiles.end(), {ids[size_t(g.ent[p])], int(p), int(q - p), 0});
        p = q;
    }
    return g;
}

// the default and the siblings: moe.bm, gemm.mma=simt, --no-fuse
struct Variants {
    const char* name;
    int bm;
    bool simt, fuse;
    ScheduleOptions options() const {
        ScheduleOptions o;
        o.moe_bm = bm;
        if (simt) o.force["gemm.mma"] = "simt";
        o.fuse = fuse;
        return o;
    }
};
const Variants kVariants[] = {
    {"grouped", 0, false, true}, {"bm32", 32, false, true}, {"bm128", 128, false, true},
    {"simt", 0, true, true},     {"unfused", 0, false, false},
};

// One step of m rows through the layer's kernels of the GEMM list, each checked as the header says.
class LayerRun {
public:
    LayerRun(const Plan& p, CudaBackend& gpu, int m) : p_(p), c_(*p.config), gpu_(gpu), m_(m) {}

    void run(const MoeCase& c) {
        const auto [lo, hi] = ffn_range(p_);
        const int D = c_.dim, K = c_.n_expert_used;
        std::mt19937 rng{uint32_t(m_)};
        std::vector<float> x(size_t(m_) * size_t(D));
        for (float& v : x) v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
        // the CPU backend's layer on the same rows
        CpuBackend cpu(p_, 8);
        std::copy(x.begin(), x.end(), cpu.slot(Slot::X));
        std::vector<int32_t> zeros(size_t(m_), 0);
        BatchStep step;
        step.tokens = zeros.data();
        step.pos = zeros.data();
        step.seq = zeros.data();
        step.n = m_;
        std::vector<int> todo(hi - lo + 1);
        std::iota(todo.begin(), todo.end(), int(lo));
        cpu.run_batch_tasks_at(todo, step);
        gpu_.upload_slot(Slot::X, x.data(), x.size());
        const auto& steps = gpu_.schedule().batch;
        for (size_t si = 0; si < steps.size(); ++si) {
            const KernelStep& k = steps[si];
            if (size_t(k.tasks.front()) < lo || size_t(k.tasks.back()) > hi) continue;
            SCOPED_TRACE(k.symbol);
            gpu_.run_batch_step(si, m_);
            check(k, cpu, x);
        }
        // the layer against the CPU backend's, relative to the change of x
        std::vector<float> got = download(Slot::X, size_t(m_) * size_t(D)), want(got.size());
        for (size_t i = 0; i < got.size(); ++i) {
            got[i] -= x[i];
            want[i] = cpu.slot(Slot::X)[i] - x[i];
        }
        const bool q8x = c.type == GgmlType::Q4_0 || c.type == GgmlType::Q8_0;
        expect_close("the layer's output", got.data(), want.data(), size_t(m_), size_t(D), q8x ? 4e-2 : 1e-2);
        (void)K;
    }

private:
    std::vector<float> download(Slot s, size_t n) {
        std::vector<float> v(n);
        gpu_.download_slot(s, v.data(), n);
        return v;
    }
    std::vector<int> download_ints(Slot s, size_t n) {
        std::vector<int> v(n);
        gpu_.download_slot(s, reinterpret_cast<float*>(v.data()), n);
        return v;
    }
    template <class T>
    std::vector<T> scratch(const std::string& name, uint64_t off, size_t n) {
        std::vector<uint8_t> b(off + n * sizeof(T));
        gpu_.download_scratch(name, b.data(), b.size());
        std::vector<T> v(n);
        std::memcpy(v.data(), b.data() + off, n * sizeof(T));
        return v;
    }
    double tol(const KernelStep& k) const {
        if (define(k, "MMA") == "0") return 1e-4;
        return define(k, "WTYPE") == "BF16" ? 2.5e-2 : 5e-3;
    }

    void check(const KernelStep& k, CpuBackend& cpu, const std::vector<float>& x0);
    void check_products(const KernelStep& k);
    void check_combine(const KernelStep& k, const std::vector<float>& x0);

    const Plan& p_;
    const ModelConfig& c_;
    CudaBackend& gpu_;
    int m_;
    GroupList list_;         // from the group list step
    std::vector<float> sh_;  // the shared expert's down product
};

void LayerRun::check(const KernelStep& k, CpuBackend& cpu, const std::vector<float>& x0) {
    const size_t n = size_t(m_) * size_t(c_.n_expert_used);
    if (has(k, "__moe_router")) {  // the same choices as the CPU, in the same order
        const std::vector<int> ids = download_ints(Slot::ExpIds, n);
        EXPECT_EQ(std::memcmp(ids.data(), cpu.slot(Slot::ExpIds), n * 4), 0) << "other experts chosen";
        return;
    }
    if (has(k, "__moe_group")) {  // exactly the stable sort
        const std::vector<int> ids = download_ints(Slot::ExpIds, n);
        list_ = group_list(ids, std::stoi(define(k, "BM")));
        const int count = scratch<int>("moe_group", 0, 1)[0];
        ASSERT_EQ(size_t(count) * 4, list_.tiles.size());
        std::vector<int> tiles = scratch<int>("moe_group", 16, list_.tiles.size());
        for (size_t i = 3; i < tiles.size(); i += 4) tiles[i] = 0;  // (padding)
        EXPECT_EQ(tiles, list_.tiles);
        EXPECT_EQ(scratch<int>("moe_group", k.args[2].offset, n), list_.ent);
        EXPECT_EQ(scratch<int>("moe_group", k.args[3].offset, n), list_.pos);
        return;
    }
    if (has(k, "__moe_combine")) return check_combine(k, x0);
    if (has(k, "__gemm_")) check_products(k);
}

// a product's output from the device's own input, against cpu::matvec with float x
void LayerRun::check_products(const KernelStep& k) {
    const int D = c_.dim, K = c_.n_expert_used, FF = c_.expert_ff, SFF = c_.shared_expert_ff;
    const size_t n = size_t(m_) * size_t(K);
    std::vector<float> a(size_t(std::max(D, 2 * std::max(FF, SFF)))), b(a.size());
    if (k.group == "ffn_exp_gate_up_exp_act") {  // exp_hb in group order
        const Task& t = task(p_, TaskKind::FfnExpGateUp);
        const std::vector<int> ids = download_ints(Slot::ExpIds, n);
        const std::vector<float> xb = download(Slot::Xb, size_t(m_) * size_t(D)), got = download(Slot::ExpHb, n * size_t(FF));
        std::vector<float> want(got.size());
        for (size_t p = 0; p < n; ++p) {
            const int e = list_.ent[p], id = ids[size_t(e)];
            const float* xr = xb.data() + size_t(e / K) * size_t(D);
            matvec(t.w[0], expert(t.w[0], id), FF, D, xr, a.data());
            matvec(t.w[1], expert(t.w[1], id), FF, D, xr, b.data());
            cpu::swiglu(a.data(), b.data(), want.data() + p * size_t(FF), FF);
        }
        expect_close("exp_hb", got.data(), want.data(), n, size_t(FF), tol(k));
    } else if (k.group == "ffn_exp_down") {  // moe_y in group order, from exp_hb
        const Task& t = task(p_, TaskKind::FfnExpDown);
        const std::vector<int> ids = download_ints(Slot::ExpIds, n);
        const std::vector<float> hb = download(Slot::ExpHb, n * size_t(FF));
        const std::vector<float> got = scratch<float>("moe_y", 0, n * size_t(D));
        std::vector<float> want(got.size());
        for (size_t p = 0; p < n; ++p)
            matvec(t.w[0], expert(t.w[0], ids[size_t(list_.ent[p])]), D, FF, hb.data() + p * size_t(FF),
                   want.data() + p * size_t(D));
        expect_close("moe_y", got.data(), want.data(), n, size_t(D), tol(k));
    } else if (k.group == "ffn_shexp_gate_up_shexp_act") {  // hb
        const Task& t = task(p_, TaskKind::FfnShexpGateUp);
        const std::vector<float> xb = download(Slot::Xb, size_t(m_) * size_t(D)), got = download(Slot::Hb, size_t(m_) * size_t(SFF));
        std::vector<float> want(got.size());
        for (int r = 0; r < m_; ++r) {
            matvec(t.w[0], t.w[0]->data, SFF, D, xb.data() + size_t(r) * size_t(D), a.data());
            matvec(t.w[1], t.w[1]->data, SFF, D, xb.data() + size_t(r) * size_t(D), b.data());
            cpu::swiglu(a.data(), b.data(), want.data() + size_t(r) * size_t(SFF), SFF);
        }
        expect_close("hb", got.data(), want.data(), size_t(m_), size_t(SFF), tol(k));
    } else if (k.group == "ffn_shexp_down") {  // tmp
        const Task& t = task(p_, TaskKind::FfnShexpDown);
        const std::vector<float> hb = download(Slot::Hb, size_t(m_) * size_t(SFF)), got = download(Slot::Tmp, size_t(m_) * size_t(D));
        std::vector<float> want(got.size());
        for (int r = 0; r < m_; ++r)
            matvec(t.w[0], t.w[0]->data, D, SFF, hb.data() + size_t(r) * size_t(SFF), want.data() + size_t(r) * size_t(D));
        expect_close("shared expert's down", got.data(), want.data(), size_t(m_), size_t(D), tol(k));
        sh_ = got;  // (the combine overwrites tmp where the residual is not fused)
    }
}

// the combine from the device's down products, in cpu_moe.cpp's order and rounding
void LayerRun::check_combine(const KernelStep& k, const std::vector<float>& x0) {
    const int D = c_.dim, K = c_.n_expert_used, NE = c_.n_expert, NR = NE + (c_.shared_expert_ff > 0);
    const size_t n = size_t(m_) * size_t(K), nd = size_t(m_) * size_t(D);
    const bool shared = define(k, "SHARED") == "1", resid = define(k, "RESID") == "1";
    const std::vector<float> y = scratch<float>("moe_y", 0, n * size_t(D)), w = download(Slot::ExpW, n);
    const std::vector<float> router = download(Slot::Router, size_t(m_) * size_t(NR));
    const Slot out = resid ? Slot::X : Slot::Tmp;
    std::vector<float> want(nd);
    const float scale = resid ? task(p_, TaskKind::FfnResidual).scale : 1.0f;
    for (int r = 0; r < m_; ++r)
        for (int i = 0; i < D; ++i) {
            float acc = 0.0f;
            for (int j = 0; j < K; ++j) {
                const float v = y[size_t(list_.pos[size_t(r * K + j)]) * size_t(D) + size_t(i)] * w[size_t(r * K + j)];
                acc = j == 0 ? v : acc + v;
            }
            if (shared) acc += sh_[size_t(r) * size_t(D) + size_t(i)] * (1.0f / (1.0f + std::exp(-router[size_t(r * NR + NE)])));
            const size_t o = size_t(r) * size_t(D) + size_t(i);
            want[o] = resid ? x0[o] + scale * acc : acc;
        }
    expect_close("the combine", download(out, nd).data(), want.data(), size_t(m_), size_t(D), 1e-5);
}

class MoeGroupVsCpu : public ::testing::TestWithParam<MoeCase> {};

TEST_P(MoeGroupVsCpu, EveryKernelMatchesTheCpu) {
    std::string why;
    if (!cuda_available(&why)) GTEST_SKIP() << "no GPU: " << why;
    const MoeCase c = GetParam();
    auto m = build(c);
    const Plan p = plan_of(*m);
    for (const Variants& var : kVariants) {
        SCOPED_TRACE(var.name);
        CudaOptions o;
        o.schedule = var.options();
        o.graphs = false;
        CudaBackend gpu(p, o);
        // (the siblings at two step sizes: the test binary's time on the GPU host)
        for (int rows : std::string(var.name) == "grouped" ? std::vector<int>{1, 7, 64, kRows} : std::vector<int>{7, kRows}) {
            SCOPED_TRACE(fmt::format("{} rows", rows));
            LayerRun(p, gpu, rows).run(c);
        }
    }
}

// expert widths of 96 and 160 (3 and 5 K steps; gate/up tiles half full), a shared expert of 224 and
// 160, 4 experts for 512 rows (several tiles an expert), K-quant rows of 256
INSTANTIATE_TEST_SUITE_P(
    Cases, MoeGroupVsCpu,
    ::testing::Values(kQwen3, kQwen2, MoeCase{"qwen2moe_e8k2_shared_f16", "qwen2moe", 8, 2, 96, 160, GgmlType::F16},
                      MoeCase{"qwen3moe_e4k2_bf16", "qwen3moe", 4, 2, 160, 0, GgmlType::BF16},
                      MoeCase{"qwen3moe_e32k8_q4_k", "qwen3moe", 32, 8, 256, 0, GgmlType::Q4_K}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
