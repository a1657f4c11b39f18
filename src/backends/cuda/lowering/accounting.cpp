// Launch accounting (schedule.h): launches per kernel and phase, and ncu's --launch-skip.
#include "backends/cuda/lowering/lowering.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>

#include "core/error.h"

namespace jitllm {

std::vector<KernelLaunchCount> schedule_launch_accounting(const Schedule& s, const RunShape& r, int warmup) {
    const PhaseRuns pr = plan_phase_runs(r);
    // launches a step shown: decode's from the list the steady state's position takes (a second
    // decode list, attn.tma_from, below decode_short_below; sample.fuse=gemv: runs without a device
    // draw replay decode_greedy / decode_short_greedy); the batch phase's from the GEMM list
    const int64_t p0 = int64_t(r.n_prompt) + r.n_gen - 1 - pr.decode;
    const bool greedy = !r.device_draw && !s.decode_greedy.empty();
    const auto& main_list = greedy ? s.decode_greedy : s.decode;
    const auto& short_list = greedy ? s.decode_short_greedy : s.decode_short;
    const int64_t warm = pr.decode_in_prompt + warmup;  // decode runs before the steady state
    const bool steady_short = !short_list.empty() && p0 + warm < s.decode_short_below;
    std::map<std::string, std::pair<int, int>> per;  // launches a decode step: (decode, decode_short)
    for (const auto& k : main_list) per[k.symbol].first++;
    for (const auto& k : short_list) per[k.symbol].second++;
    std::map<std::string, KernelLaunchCount> m;
    for (const auto& [sym, n] : per) m[sym].per_decode = steady_short ? n.second : n.first;
    for (const auto& k : s.prefill) m[k.symbol].per_prefill++;
    for (size_t i = 0; i < s.batch.size(); ++i) {
        if (i < s.batch_body) m[s.batch[i].symbol].per_chunk++;
        else m[s.batch[i].symbol].per_tail++;
    }
    // totals and skips from the launch walk (the batch phase's chunks take their list by rows).
    // A skip is the launches before the phase's steady state: decode run `warm`, prefill run and
    // prompt chunk `warmup` (or the phase's end when the run has fewer)
    auto order = [](Phase p) { return p == Phase::Prefill ? 0 : p == Phase::Batch ? 1 : 2; };
    const Phase phases[3] = {Phase::Prefill, Phase::Batch, Phase::Decode};
    const int64_t steady[3] = {warmup, warmup, warm};
    std::map<std::string, int64_t> seen, at[3];
    bool got[3] = {false, false, false};
    schedule_for_each_launch(s, r, [&](const LaunchRef& l) {
        for (int i = 0; i < 3; ++i)
            if (!got[i] && (order(l.phase) > i || (l.phase == phases[i] && l.run >= steady[i]))) got[i] = true, at[i] = seen;
        ++seen[l.step->symbol];
        return true;
    });
    for (int i = 0; i < 3; ++i)
        if (!got[i]) at[i] = seen;
    if (pr.prefill == 0) at[0].clear();  // a phase the run never enters: no skip
    if (pr.batch == 0) at[1].clear();
    for (const auto& [sym, n] : seen) m[sym].kernel = sym;  // a kernel of the small-step lists only
    auto count = [](const std::map<std::string, int64_t>& c, const std::string& k) { return c.count(k) ? c.at(k) : 0; };
    std::vector<KernelLaunchCount> out;
    for (auto& [sym, c] : m) {
        c.kernel = sym;
        c.total = count(seen, sym);
        c.skip_prefill = count(at[0], sym);
        c.skip_chunk = count(at[1], sym);
        c.skip_decode = count(at[2], sym);
        out.push_back(c);
    }
    return out;
}

std::string schedule_describe_launches(const Schedule& s, const RunShape& r, int warmup) {
    const PhaseRuns pr = plan_phase_runs(r);
    const std::string mode = r.batch_prefill > 0 ? fmt::format("--batch-prefill-size {}", r.batch_prefill)
                             : r.prefill_decode    ? std::string("--with-prefill-decode")
                                                   : std::string("single-token");
    std::string o = fmt::format(
        "launch accounting: prompt {} tokens, -n {}, mode {}: prefill runs {}, prompt chunks {} (+{} output tail), "
        "decode runs {} ({} on prompt tokens); warm-up launches: 0 (JIT and upload launch nothing; the CUDA graph is "
        "captured, not run, on first use)\n",
        r.n_prompt, r.n_gen, mode, pr.prefill, pr.batch, pr.batch_tail, pr.decode, pr.decode_in_prompt);
    o += fmt::format("  {:<46} {:>10} {:>11} {:>9} {:>7} {:>8} {:>22} {:>22} {:>22}\n", "kernel", "per decode",
                     "per prefill", "per chunk", "warm-up", "total", "--launch-skip decode", "--launch-skip prefill",
                     "--launch-skip chunk");
    for (const auto& c : schedule_launch_accounting(s, r, warmup))
        o += fmt::format("  {:<46} {:>10} {:>11} {:>9} {:>7} {:>8} {:>22} {:>22} {:>22}\n", c.kernel, c.per_decode,
                         c.per_prefill, c.per_chunk ? std::to_string(c.per_chunk) : c.per_tail ? "tail " + std::to_string(c.per_tail) : "0",
                         c.warmup, c.total,
                         c.per_decode ? std::to_string(c.skip_decode) : "-",
                         c.per_prefill && pr.prefill > 0 ? std::to_string(c.skip_prefill) : "-",
                         c.per_chunk && pr.batch > 0 ? std::to_string(c.skip_chunk) : "-");
    o += fmt::format("  (steady state = after the prompt and {} generated tokens; ncu counts launches of the kernels its "
                     "--kernel-name filter matches)\n", warmup);
    return o;
}

void schedule_for_each_launch(const Schedule& s, const RunShape& r, const std::function<bool(const LaunchRef&)>& f) {
    const PhaseRuns pr = plan_phase_runs(r);
    auto each = [&](const std::vector<KernelStep>& list, size_t from, size_t to, LaunchRef ref) {
        for (size_t i = from; i < to; ++i) {
            ref.step = &list[i];
            ref.index = i;
            if (!f(ref)) return false;
        }
        return true;
    };
    for (int64_t k = 0; k < pr.prefill; ++k)
        if (!each(s.prefill, 0, s.prefill.size(), {Phase::Prefill, k, k})) return;
    // the batch phase's list for a step of `rows` rows (CudaBackend::batch's list_for)
    auto list_for = [&](int rows) -> std::pair<const std::vector<KernelStep>*, size_t> {
        const Schedule::List l = s.batch_list(rows);
        return {&s.batch_steps(l), s.batch_body_of(l)};
    };
    for (int64_t c = 0; c < pr.batch; ++c) {
        const int64_t first = c * r.batch_prefill;
        const int rows = int(std::min<int64_t>(r.batch_prefill, r.n_prompt - first));
        const auto [body_list, body] = list_for(rows);
        if (!each(*body_list, 0, body, {Phase::Batch, c, first, nullptr, 0, rows})) return;
        if (c + 1 == pr.batch && pr.batch_tail > 0) {
            const auto [tail_list, tail_from] = list_for(1);
            if (!each(*tail_list, tail_from, tail_list->size(), {Phase::Batch, c, r.n_prompt - 1, nullptr, 0, 1, true}))
                return;
        }
    }
    // decode steps at the run's last pr.decode positions; the list as schedule_launch_accounting says
    const int64_t p0 = int64_t(r.n_prompt) + r.n_gen - 1 - pr.decode;
    const bool greedy = !r.device_draw && !s.decode_greedy.empty();
    const auto& main_list = greedy ? s.decode_greedy : s.decode;
    const auto& short_list = greedy ? s.decode_short_greedy : s.decode_short;
    for (int64_t k = 0; k < pr.decode; ++k) {
        const int64_t pos = p0 + k;
        const auto& list = !short_list.empty() && pos < s.decode_short_below ? short_list : main_list;
        if (!each(list, 0, list.size(), {Phase::Decode, k, pos})) return;
    }
}

std::optional<LaunchPick> schedule_pick_launch(const Schedule& s, const RunShape& r,
                                               const std::function<bool(const LaunchRef&)>& want) {
    std::optional<LaunchPick> pick;
    std::map<std::string, int64_t> seen;  // launches so far per symbol
    schedule_for_each_launch(s, r, [&](const LaunchRef& l) {
        int64_t& n = seen[l.step->symbol];
        if (!pick && want(l)) pick = LaunchPick{l, n, 0};
        ++n;
        return true;
    });
    if (pick) pick->total = seen[pick->at.step->symbol];
    return pick;
}

}  // namespace jitllm
