// schedule_build (schedule.h): the gates, then each phase's lowering; the gates' names for --force-variant.
#include "backends/cuda/lowering/lowering.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>

#include "core/error.h"

namespace jitllm {

using lowering::Lowering;

std::vector<std::string> schedule_gate_choices() {
    std::vector<std::string> choices;
    for (const GateSpec& g : gate_table()) choices.push_back(fmt::format("{}={}|{}", g.name, g.variant, g.sibling));
    return choices;
}

std::vector<std::string> schedule_gate_names() {
    std::vector<std::string> names;
    for (const std::string& c : schedule_gate_choices()) names.push_back(c.substr(0, c.find('=')));
    return names;
}

Schedule schedule_build(const Plan& plan, const DeviceInfo& dev, const ScheduleOptions& opt) {
    for (const auto& [gate, v] : opt.force) {
        const auto names = schedule_gate_names();
        if (std::find(names.begin(), names.end(), gate) == names.end())
            fail_usage("--force-variant {}={}: unknown gate '{}'; gates: {}", gate, v, gate, fmt::join(names, ", "));
    }
    // kv.type: --kv-f32 or --force-variant kv.type=float|half (the cache type every kernel variant reads)
    ScheduleOptions o = opt;
    if (auto it = o.force.find("kv.type"); it != o.force.end()) {
        if (it->second != "half" && it->second != "float")
            fail_usage("--force-variant kv.type={}: expected half or float", it->second);
        if (opt.kv_f32 && it->second == "half")
            fail_usage("--force-variant kv.type=half: --kv-f32 asks for a float KV cache");
        o.kv_f32 = it->second == "float";
    }
    Schedule s;
    Lowering l(plan, dev, o, s);
    l.decide_gates();
    l.lower(plan.decode, s.decode);
    l.lower(plan.prefill, s.prefill);
    l.mark_pdl(s.decode);
    l.mark_pdl(s.prefill);
    l.lower_decode_short(plan);
    l.lower_decode_greedy(plan);
    if (!plan.batch.empty()) l.lower_batch(plan.batch, plan.batch_body, s.batch, s.batch_body);
    // gate batch.imma: the GEMM list with integer tensor-core products, for steps of batch.imma_from
    // .. batch.imma_rows rows (left empty when no product qualifies)
    if (!plan.batch.empty() && l.batch_imma()) {
        l.lower_batch(plan.batch, plan.batch_body, s.batch_imma, s.batch_imma_body, false, 0, true);
        const bool any = std::any_of(s.batch_imma.begin(), s.batch_imma.end(),
                                     [](const KernelStep& k) { return lowering::define_int(k, "MMA", 0) == 3; });
        if (any) {
            s.batch_imma_from = opt.batch_imma_from;
            s.batch_imma_rows = opt.batch_imma_rows;
        } else {
            s.batch_imma.clear();
            s.batch_imma_body = 0;
        }
    }
    if (!plan.batch.empty() && l.batch_small()) {
        l.lower_batch(plan.batch, plan.batch_body, s.batch_small, s.batch_small_body, true);
        s.batch_small_rows = std::max(1, opt.batch_small_rows);
        // gate batch.pdl: the gemv lists' kernels all wait (griddepcontrol.wait) before reading an
        // earlier kernel's output, as decode's do; the GEMM list's gemm.cu / convert.cu do not,
        // so it stays serial (a mixed step's gemv tail then waits for the GEMM body by itself)
        auto pdl_list = [&](std::vector<KernelStep>& ks) {
            if (!l.batch_pdl()) return;
            for (const KernelStep& k : ks)
                JITLLM_CHECK(k.variant.source != "cuda/gemm.cu" && k.variant.source != "cuda/convert.cu",
                             "batch.pdl: {} in the gemv list has no PDL wait", k.symbol);
            l.mark_pdl(ks);
        };
        pdl_list(s.batch_small);
        // gate batch.xrows: the same list with XROWS gemvs, for steps of 2 .. batch_small_rows rows
        // (left empty when no product qualifies: no split-layout Q4_0/Q8_0 weights)
        if (l.batch_xrows()) {
            l.lower_batch(plan.batch, plan.batch_body, s.batch_xrows, s.batch_xrows_body, true, opt.batch_xrows);
            const bool any = std::any_of(s.batch_xrows.begin(), s.batch_xrows.end(),
                                         [](const KernelStep& k) { return k.variant.has("XROWS"); });
            if (!any) {
                s.batch_xrows.clear();
                s.batch_xrows_body = 0;
            }
            pdl_list(s.batch_xrows);
        }
    }
    return s;
}

Schedule::List Schedule::batch_list(int rows) const {
    if (!batch_imma.empty() && rows >= batch_imma_from && rows <= batch_imma_rows) return List::Imma;
    if (!batch_small.empty() && rows <= batch_small_rows) return rows >= 2 && !batch_xrows.empty() ? List::Xrows : List::Small;
    return List::Gemm;
}

const std::vector<KernelStep>& Schedule::batch_steps(List l) const {
    return l == List::Small ? batch_small : l == List::Xrows ? batch_xrows : l == List::Imma ? batch_imma : batch;
}

size_t Schedule::batch_body_of(List l) const {
    return l == List::Small ? batch_small_body : l == List::Xrows ? batch_xrows_body : l == List::Imma ? batch_imma_body : batch_body;
}

unsigned KernelStep::smem_for_rows(int m) const {
    if (smem_n8.empty()) return smem;
    const size_t i = size_t(std::max(1, (m + 7) / 8));
    return smem_n8[std::min(i, smem_n8.size()) - 1];
}

Dim3 KernelStep::grid_for_rows(int m) const {
    Dim3 g = grid;
    if (!ksplit.empty()) {
        const size_t t = size_t(std::max(1, (m + ksplit_bm - 1) / ksplit_bm));
        g.z = unsigned(ksplit[std::min(t, ksplit.size()) - 1]);
    }
    if (rows_dim < 0) return g;
    const unsigned n = unsigned((int64_t(m) * rows_mul + rows_div - 1) / rows_div +
                                std::min<int64_t>(rows_add, int64_t(m) * rows_mul));
    (rows_dim == 0 ? g.x : rows_dim == 1 ? g.y : g.z) = std::max(1u, n);
    return g;
}

std::vector<Variant> schedule_variants(const Schedule& s) {
    std::vector<Variant> v;
    std::set<std::string> seen;
    for (const auto* ph : {&s.decode, &s.decode_short, &s.decode_greedy, &s.decode_short_greedy, &s.prefill, &s.batch,
                           &s.batch_small, &s.batch_xrows, &s.batch_imma})
        for (const auto& k : *ph) {
            const std::string id = k.variant.display_name();
            if (seen.insert(id).second) v.push_back(k.variant);
        }
    return v;
}

}  // namespace jitllm
