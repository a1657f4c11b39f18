// --print-plan and --print-threads for the OpenCL schedule (cl_schedule.h).
#include <map>

#include "backends/opencl/cl_schedule.h"

namespace jitllm {

namespace {

std::string sizes(const size_t (&v)[2]) { return fmt::format("({}, {})", v[0], v[1]); }

}  // namespace

std::string cl_schedule_describe(const Plan& plan, const ClSchedule& s, bool threads) {
    std::string out = "opencl gates:\n";
    for (const auto& g : s.gates)
        out += fmt::format("  {:<14} {:<9} (sibling {:<8}) {}\n", g.gate, g.chosen, g.sibling, g.reason);
    if (!s.tune.describe().empty()) out += fmt::format("opencl tunables: {}\n", s.tune.describe());
    out += fmt::format("opencl build options: {}\n", s.build_options);
    for (Phase ph : {Phase::Decode, Phase::Prefill, Phase::Batch}) {
        const auto& steps = s.phase(ph);
        if (steps.empty()) continue;
        const auto& tasks = plan.phase(ph);
        out += fmt::format("opencl {} phase: {} kernels{}\n", phase_name(ph), steps.size(),
                           ph == Phase::Batch ? fmt::format(" (the last {} only with logits)", steps.size() - s.batch_body)
                                              : std::string(" per token"));
        for (const ClStep& k : steps) {
            std::string tn;
            for (int ti : k.tasks) tn += (tn.empty() ? "" : "+") + tasks[size_t(ti)].name;
            out += fmt::format("  {:<40} {}", k.symbol, tn);
            if (threads && !k.host_sample) {
                out += fmt::format("  global {} local {}", sizes(k.global), sizes(k.local));
                if (ph == Phase::Batch)
                    out += fmt::format(" (dimension 1: rows x {} / {})", std::max(1, k.rows_mul), k.rows_div);
            }
            out += "\n";
            if (k.tiled.min_rows > 0) {
                out += fmt::format("    {:<38} steps of {}+ rows", k.tiled.variant.symbol, k.tiled.min_rows);
                if (threads)
                    out += fmt::format("  global ({}, rows / {}) local ({}, 1)", k.tiled.global0, k.tiled.rows_per_group,
                                       k.tiled.local0);
                out += "\n";
            }
        }
    }
    return out;
}

std::string cl_schedule_describe_launches(const ClSchedule& s, const RunShape& r) {
    const PhaseRuns pr = plan_phase_runs(r);
    std::map<std::string, int64_t> per_kernel;
    auto count = [&](const std::vector<ClStep>& steps, size_t from, size_t to, int64_t runs) {
        for (size_t i = from; i < to && i < steps.size(); ++i)
            if (!steps[i].host_sample) per_kernel[steps[i].symbol] += runs;
    };
    count(s.decode, 0, s.decode.size(), pr.decode);
    count(s.prefill, 0, s.prefill.size(), pr.prefill);
    count(s.batch, 0, s.batch_body, pr.batch);
    count(s.batch, s.batch_body, s.batch.size(), pr.batch_tail);
    int64_t total = 0;
    std::string out = "opencl kernel launches of the run:\n";
    for (const auto& [k, n] : per_kernel) {
        out += fmt::format("  {:<40} {}\n", k, n);
        total += n;
    }
    return out + fmt::format("  {:<40} {}\n", "total", total);
}

}  // namespace jitllm
