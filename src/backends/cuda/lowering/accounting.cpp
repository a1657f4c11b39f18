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
    // decode runs take the run's last pr.decode positions; with a second decode list (attn.tma_from)
    // those below decode_short_below run it: n_short(k) of the first k decode runs
    // (sample.fuse=gemv: runs without a device draw replay decode_greedy / decode_short_greedy instead)
    const int64_t p0 = int64_t(r.n_prompt) + r.n_gen - 1 - pr.decode;
    const bool greedy = !r.device_draw && !s.decode_greedy.empty();
    const auto& main_list = greedy ? s.decode_greedy : s.decode;
    const auto& short_list = greedy ? s.decode_short_greedy : s.decode_short;
    auto n_short = [&](int64_t k) {
        if (short_list.empty()) return int64_t(0);
        return std::clamp<int64_t>(int64_t(s.decode_short_below) - p0, 0, std::max<int64_t>(0, k));
    };
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
    std::vector<KernelLaunchCount> out;
    for (auto& [sym, c] : m) {
        c.kernel = sym;
        const auto pd = per.count(sym) ? per.at(sym) : std::pair<int, int>{0, 0};
        auto decode_launches = [&](int64_t k) {  // this kernel's launches in the first k decode runs
            return int64_t(pd.first) * (k - n_short(k)) + int64_t(pd.second) * n_short(k);
        };
        c.total = decode_launches(pr.decode) + int64_t(c.per_prefill) * pr.prefill +
                  int64_t(c.per_chunk) * pr.batch + int64_t(c.per_tail) * pr.batch_tail;
        // prefill steps or prompt chunks run first (every prompt token but the last), then decode
        c.skip_prefill = int64_t(c.per_prefill) * std::min<int64_t>(warmup, pr.prefill);
        c.skip_chunk = int64_t(c.per_chunk) * std::min<int64_t>(warmup, pr.batch);
        c.skip_decode = int64_t(c.per_prefill) * pr.prefill + int64_t(c.per_chunk) * pr.batch +
                        int64_t(c.per_tail) * pr.batch_tail + decode_launches(warm);
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

}  // namespace jitllm
