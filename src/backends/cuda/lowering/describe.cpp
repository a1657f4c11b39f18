// The schedule as text: --print-plan / jitllm plan (kernels, tasks, gates), --print-threads (grid, block),
// and the gemv kernels' row balance.
#include "backends/cuda/lowering/lowering.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>

#include "core/error.h"

namespace jitllm {

using lowering::define_int;

namespace {
// Row sets of `rows` output rows, `opg` per set, over `nbx` blocks of `gpb` groups (warps): gemv.cu
// GEMV_O_FIRST's assignment (group g of block bx starts at set bx * gpb + g, or g * nbx + bx
// warp-major), passes of nbx * gpb sets.
GemvBalance balance(int rows, int opg, int nbx, int gpb, bool warp_major) {
    const int groups = nbx * gpb;
    GemvBalance b;
    b.sets = (rows + opg - 1) / opg;
    b.passes = (b.sets + groups - 1) / groups;
    std::vector<int> per(size_t(nbx), 0);
    for (int s = 0; s < b.sets; ++s) {
        const int slot = s % groups;
        ++per[size_t(warp_major ? slot % nbx : slot / gpb)];
    }
    b.max_per_block = *std::max_element(per.begin(), per.end());
    b.mean_per_block = double(b.sets) / double(nbx);
    return b;
}
}  // namespace

std::optional<GemvBalance> gemv_balance(const KernelStep& k) {
    if (k.variant.source != "cuda/gemv.cu" || k.rows_dim >= 0 || k.grid.y > 1) return std::nullopt;
    auto def = [&](const char* name, int dflt) { return define_int(k, name, dflt); };
    const int block = def("BLOCK", 0), rpb = def("ROWS_PER_BLOCK", 0), epi = def("EPI", 0), n_mat = def("N_MAT", 1);
    const int gpb = def("REDUCE", 0) ? block / 32 : 1;
    if (block <= 0 || rpb <= 0 || gpb <= 0 || rpb % gpb != 0 || k.grid.x == 0) return std::nullopt;
    const int opg = rpb / gpb;  // gemv.cu GEMV_OPG
    const int rows = epi == 2 ? def("ROWS0", 0)
                              : def("ROWS0", 0) + (n_mat > 1 ? def("ROWS1", 0) : 0) + (n_mat > 2 ? def("ROWS2", 0) : 0);
    return balance(rows, opg, int(k.grid.x), gpb, def("WARP_MAJOR", 0) != 0);
}

namespace {
// The step sizes (of 1 .. max_rows) whose steps run list l (Schedule::batch_list): "one row",
// "2 .. 4 rows"
std::string rows_taken(const Schedule& s, Schedule::List l, int max_rows) {
    std::string out;
    for (int r = 1; r <= max_rows; ++r) {
        if (s.batch_list(r) != l) continue;
        int e = r;
        while (e < max_rows && s.batch_list(e + 1) == l) ++e;
        out += (out.empty() ? "" : ", ") + (e == r ? std::to_string(r) : fmt::format("{} .. {}", r, e));
        r = e;
    }
    return out == "1" ? "one row" : (out.empty() ? "no" : out) + " rows";
}
}  // namespace

std::string schedule_describe(const Plan& plan, const Schedule& s, bool threads) {
    std::string out = "capability gates:\n";
    for (const auto& g : s.gates)
        out += fmt::format("  {:<14} {:<8} (sibling {:<8}) {}\n", g.gate, g.chosen, g.sibling, g.reason);
    for (int part = 0; part < 6; ++part) {
        const Phase ph = part == 0 ? Phase::Decode : part == 1 ? Phase::Prefill : Phase::Batch;
        const bool small = part == 3 || part == 4;  // the small-step lists of the batch phase (gates batch.small, batch.xrows)
        const auto& ks = part == 5 ? s.batch_imma : part == 4 ? s.batch_xrows : small ? s.batch_small : s.phase(ph);
        const auto& tasks = plan.phase(ph);
        if (ph == Phase::Batch && ks.empty()) continue;
        // launches per token by kernel symbol
        std::map<std::string, int> per_token;
        for (const auto& k : ks) per_token[k.symbol]++;
        const int R = std::max(1, plan.batch_rows);
        if (part == 5)
            out += fmt::format("phase batch, steps of {} (gate batch.imma): {} tasks -> {} kernel launches "
                               "({} in the body)\n",
                               rows_taken(s, Schedule::List::Imma, R), tasks.size(), ks.size(), s.batch_imma_body);
        else if (part == 4)
            out += fmt::format("phase batch, steps of {} (gate batch.xrows): {} tasks -> {} kernel launches "
                               "({} in the body)\n",
                               rows_taken(s, Schedule::List::Xrows, R), tasks.size(), ks.size(), s.batch_xrows_body);
        else if (small)
            out += fmt::format("phase batch, steps of {} (gate batch.small): {} tasks -> {} kernel launches "
                               "({} in the body; the output tail also for the logits row of a longer step)\n",
                               rows_taken(s, Schedule::List::Small, R), tasks.size(), ks.size(), s.batch_small_body);
        else if (ph == Phase::Batch)
            out += fmt::format("phase batch: {} tasks -> {} kernel launches per step of up to {} rows ({} per "
                               "prompt chunk; the output tail only when logits are asked)\n",
                               tasks.size(), ks.size(), plan.batch_rows, s.batch_body);
        else
            out += fmt::format("phase {}: {} tasks -> {} kernel launches per token\n", phase_name(ph),
                               tasks.size(), ks.size());
        for (const auto& k : ks) {
            if (k.layer > 0) continue;  // layers repeat: show the first one and the globals
            std::string tn;
            for (int ti : k.tasks) tn += (tn.empty() ? "" : " + ") + tasks[size_t(ti)].name;
            out += fmt::format("  {:<44} {}", k.symbol, tn);
            if (threads) out += fmt::format("  grid ({},{},{}) block ({},{},{}) smem {}", k.grid.x, k.grid.y,
                                            k.grid.z, k.block.x, k.block.y, k.block.z, k.smem);
            if (threads && !k.ksplit.empty()) {
                std::string z;
                for (size_t t = 0; t < k.ksplit.size(); ++t)
                    if (k.ksplit[t] > 1)
                        z += fmt::format("{}{} at <= {} rows", z.empty() ? "" : ", ", k.ksplit[t], (t + 1) * size_t(k.ksplit_bm));
                out += " grid.z (split-K) " + z;
            }
            if (threads && (k.cluster.x * k.cluster.y * k.cluster.z > 1))
                out += fmt::format(" cluster ({},{},{})", k.cluster.x, k.cluster.y, k.cluster.z);
            if (const auto b = threads ? gemv_balance(k) : std::nullopt;
                b && (b->passes > 1 || b->max_per_block > int(std::ceil(b->mean_per_block))))
                out += fmt::format(" row sets {} in {} passes, per block max {} mean {:.1f}", b->sets, b->passes,
                                   b->max_per_block, b->mean_per_block);
            out += "\n";
        }
        if (plan.config->n_layers > 1)
            out += fmt::format("  (blk.1 .. blk.{} repeat blk.0's kernels)\n", plan.config->n_layers - 1);
        out += ph == Phase::Batch ? "  launches per step by kernel:\n" : "  launches per token by kernel:\n";
        for (const auto& [sym, n] : per_token) out += fmt::format("    {:>5}  {}\n", n, sym);
    }
    if (!s.decode_short.empty()) {  // attn.tma_from: a second decode list (its own CUDA graph)
        out += fmt::format("phase decode at positions below {} (attn.tma_from): decode's kernels, these replaced:\n",
                           s.decode_short_below);
        for (size_t i = 0; i < s.decode_short.size() && i < s.decode.size(); ++i)
            if (s.decode_short[i].layer <= 0 && s.decode_short[i].symbol != s.decode[i].symbol)
                out += fmt::format("  {:<44} instead of {}\n", s.decode_short[i].symbol, s.decode[i].symbol);
    }
    if (!s.decode_greedy.empty()) {  // sample.fuse=gemv: greedy steps on their own list (and graph)
        std::set<std::string> in_greedy, in_decode;
        for (const auto& k : s.decode_greedy) in_greedy.insert(k.symbol);
        for (const auto& k : s.decode) in_decode.insert(k.symbol);
        out += fmt::format("phase decode, greedy steps (sample.fuse=gemv; {} kernel launches per token{}): decode's "
                           "kernels, these replaced:\n", s.decode_greedy.size(),
                           s.decode_short_greedy.empty() ? "" : ", a short-context list beside it too");
        for (const auto& sym : in_decode)
            if (!in_greedy.count(sym)) out += fmt::format("  - {}\n", sym);
        std::set<std::string> shown;
        for (const auto& k : s.decode_greedy)
            if (!in_decode.count(k.symbol) && shown.insert(k.symbol).second)
                out += threads ? fmt::format("  + {}  grid ({},{},{}) block ({},{},{}) smem {}\n", k.symbol, k.grid.x,
                                             k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z, k.smem)
                               : fmt::format("  + {}\n", k.symbol);
    }
    return out;
}

}  // namespace jitllm
