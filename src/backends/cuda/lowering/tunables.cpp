// The tunables table (tunables.h): key, default, help, option, accepted values.
#include "backends/cuda/lowering/tunables.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.h"
#include "plan/task_kind.h"

namespace jitllm {
namespace {

using O = ScheduleOptions;

TuneValues range(int lo, int hi, int automatic = kNoAuto) { return {lo, hi, {}, {}, automatic}; }
TuneValues one_of(std::vector<int> only, int automatic = kNoAuto) { return {0, 0, std::move(only), {}, automatic}; }
TuneValues words(std::vector<std::string> w, int automatic = kNoAuto) { return {0, 0, {}, std::move(w), automatic}; }
TuneValues on_off() { return words({"off", "on"}); }

const std::vector<Tunable> kTable = {
    // gemv: decode's matrix-vector products (gemv.cu)
    {"gemv.block", "auto", "threads per gemv block for plain and split-layout weights: 128, 256, 512 or 1024",
     &O::gemv_block, one_of({128, 256, 512, 1024}, 0)},
    {"gemv.rows", "auto", "output rows per warp and pass, 1 to 8 (the q/k/v gemv with RoPE rounds an odd count up)",
     &O::gemv_rows, range(1, 8, 0)},
    {"gemv.min_blocks", "auto", "minimum resident gemv blocks per SM (__launch_bounds__), 1 to 32",
     &O::gemv_min_blocks, range(1, 32, 0)},
    {"gemv.prefetch", "0", "bytes of each weight row prefetched to L2 (0: none)", &O::gemv_prefetch, range(0, 1 << 20)},
    {"gemv.split_pipe", "auto", "split-layout gemv loads one step ahead: 0 or 1", &O::gemv_split_pipe, range(0, 1, -1)},
    {"gemv.split_units", "auto", "split-layout gemv 16-byte units per lane and step, 1 to 4",
     &O::gemv_split_units, range(1, 4, 0)},
    {"gemv.bulk_kb", "auto", "gemv.load=bulk: KiB of shared-memory rings per block (auto: 200, less the x copy)",
     &O::gemv_bulk_kb, range(1, 220, 0)},
    {"gemv.bulk_min_slots", "auto", "gemv.load=bulk: the ring item is the widest column chunk leaving this many slots (auto: 4)",
     &O::gemv_bulk_min_slots, range(1, 16, 0)},
    {"gemv.early_slots", "auto", "bulk gemv ring slots a warp fills before its PDL wait (auto: Q4_0 2, Q8_0 3, others all)",
     &O::gemv_early_slots, range(1, 99, 0)},
    {"gemv.early_slots.KIND", "auto", "gemv.early_slots for the bulk gemv whose first task is KIND (e.g. ffn_down)",
     &O::gemv_early_slots_for, range(1, 99)},
    {"gemv.fill_at_loads", "on", "the late ring slots go out once the x prologue's loads are issued (off: after it)",
     &O::gemv_fill_at_loads, on_off()},
    {"gemv.early_blocks", "on", "a bulk gemv after one on fewer blocks than SMs fills whole rings early on the SMs left free",
     &O::gemv_early_blocks, on_off()},
    {"gemv.early_blocks.KIND", "auto", "blocks 0 .. N-1 of the bulk gemv whose first task is KIND fill their ring early",
     &O::gemv_early_blocks_for, range(1, 4096)},
    {"gemv.grid.KIND", "auto", "the gemv whose first task is KIND on at most N blocks (auto: Q4_0 attn_output on 76 of 132 SMs)",
     &O::gemv_grid_for, range(1, 999)},
    {"gemv.cluster.KIND", "auto", "the decode gemv whose first task is KIND in thread-block clusters of N blocks",
     &O::gemv_cluster_for, range(1, 8)},
    {"gemv.rows.KIND", "auto", "gemv.rows for the gemv whose first task is KIND", &O::gemv_rows_for, range(1, 8)},
    {"gemv.norm_early", "auto", "normed Q4_0/Q8_0 gemvs load their norm weight before the PDL wait (auto: the lanes gemvs)",
     &O::gemv_norm_early, words({"off", "on"}, -1)},
    {"gemv.x_regs", "on", "bulk split-layout Q4_0/Q8_0 gemvs keep each lane's x units in registers where they fit",
     &O::gemv_x_regs, on_off()},
    {"gemv.q4_shift", "off", "split-layout Q4_0 dot products shift the high nibbles down, one dp4a chain",
     &O::gemv_q4_shift, on_off()},
    {"gemv.xq_norm", "off", "gemv.xq=producer: the normed gemvs take x quantized by the kernel before them too",
     &O::gemv_xq_norm, on_off()},
    {"gemv.xq_lag", "1", "gemv.xq=producer: the cluster leader quantizes a group after its own pass N groups later",
     &O::gemv_xq_lag, range(1, 8)},
    // moe: the mixture-of-experts kernels (moe.cu; the batch phase's grouped GEMMs, moe_group.cu)
    {"moe.router_warps", "8", "router rows per block of the MoE router and top-k, 1 to 8 (each block normalises x)",
     &O::moe_router_warps, range(1, 8)},
    {"moe.bm", "auto", "rows of a grouped expert GEMM tile (gate moe.batch): 32, 64 or 128 (auto: 64; SIMT: 64)",
     &O::moe_bm, one_of({32, 64, 128}, 0)},
    {"attn.xq", "on", "gemv.xq=producer: decode attention writes its output quantized for attn_output", &O::attn_xq,
     on_off()},
    {"kv.l2_prefetch", "off", "the q/k/v bulk gemv prefetches earlier K/V rows into L2: at its start or after its last copy",
     &O::kv_l2_prefetch, words({"off", "start", "last"})},
    // decode attention (attention_decode.cu, attention_decode_tma.cu)
    {"attn.chunk", "auto", "split-KV positions per chunk: 32, 64, 128 or 256 (auto: 128)", &O::attn_chunk,
     one_of({32, 64, 128, 256}, 0)},
    {"attn.splits", "auto", "split-KV blocks per query-head set along the context (auto: the resident blocks fill the SMs)",
     &O::attn_splits, range(1, 1024, 0)},
    {"attn.heads_per_block", "auto", "query heads per decode attention block, a divisor of the heads per kv head",
     &O::attn_heads_per_block, range(1, 256, 0)},
    {"attn.pipe", "auto", "split-KV blocks load their next chunk early: 0 off, 1 into a second register set, 2 in place",
     &O::attn_pipe, range(0, 2, -1)},
    {"attn.kv_stages", "0", "register kernel: K/V chunks through an N-deep cp.async ring (2 to 4); attn.kv=tma: its slots",
     &O::attn_kv_stages, range(0, 8)},
    {"attn.carveout", "auto", "preferred shared-memory carveout of the decode attention kernel, percent (-1: the driver's)",
     &O::attn_carveout, range(-1, 100, -2)},
    {"attn.tma_from", "auto", "attn.kv=tma: decode positions below N on a second graph with the register kernel (0: none)",
     &O::attn_tma_from, range(0, 1 << 30, -1)},
    {"attn.tma_stages", "auto", "attn.kv=tma's ring slots, 1 to 8 (auto: attn.kv_stages if set, else 2)",
     &O::attn_tma_stages, range(1, 8, 0)},
    {"attn.tma_cluster", "auto", "attn.kv=tma's splits of a kv head merged in one cluster (auto: where the device's fit)",
     &O::attn_tma_cluster, words({"off", "on"}, -1)},
    // batch phase (prompt chunks, the server's steps)
    {"gemm.bm", "auto", "rows of the tensor-core GEMM tile: 64 or 128", &O::gemm_bm, one_of({64, 128}, 0)},
    {"gemm.splits", "auto", "gate gemm.split_k: K splits of a step's wgmma GEMM, 2 to 32 (auto: the tiles fill the SMs)",
     &O::gemm_splits, range(2, 32, 0)},
    {"batch.small_rows", "8", "batch steps of up to N rows take the gemv list (gate batch.small)", &O::batch_small_rows,
     range(1, 64)},
    {"batch.xrows", "4", "gate batch.xrows: a block reads each Q4_0/Q8_0 weight row once for N of a step's rows (0: off)",
     &O::batch_xrows, one_of({0, 2, 4, 8})},
    {"batch.imma_from", "5", "gate batch.imma: its integer tensor-core list takes steps of N .. batch.imma_rows rows "
                             "(before the small-step gemv lists)",
     &O::batch_imma_from, range(1, 1024)},
    {"batch.imma_rows", "64", "gate batch.imma: its integer tensor-core list takes steps of batch.imma_from .. N rows",
     &O::batch_imma_rows, range(1, 1024)},
    {"gemm.imma_bm", "auto", "gate batch.imma: activation rows of an integer GEMM tile, 8 to 64 in steps of 8 (auto: "
                             "batch.imma_rows up to 32; a step of more rows takes more tiles, each reading the weights)",
     &O::imma_bm, one_of({8, 16, 24, 32, 40, 48, 56, 64}, 0)},
    {"gemm.imma_bn", "auto", "gate batch.imma: weight rows of an integer GEMM tile, 16 / 32 / 64 / 128 (auto: 64, halved "
                             "while the tiles number fewer than the SMs)",
     &O::imma_bn, one_of({16, 32, 64, 128}, 0)},
    {"gemm.imma_warps_k", "auto", "gate batch.imma: warps sharing each stage's columns, 1 / 2 / 4 / 8 (auto: 8 warps a block)",
     &O::imma_warps_k, one_of({1, 2, 4, 8}, 0)},
    {"gemm.imma_stages", "auto", "gate batch.imma: the integer GEMM's cp.async ring, 2 to 8 stages of 256 columns (auto: 4)",
     &O::imma_stages, range(2, 8, 0)},
    {"batch.bulk", "off", "the small-step gemv list (one-row steps beside gate batch.xrows) streams its weights "
                          "through decode's bulk rings",
     &O::batch_bulk, on_off()},
};

// `v` as `values` read it, or a usage error naming `key` and what it expects
int parse(const std::string& key, const std::string& v, const TuneValues& values) {
    const bool automatic = values.automatic != kNoAuto;
    if (v == "auto" && automatic) return values.automatic;
    const std::string or_auto = automatic ? " or auto" : "";
    if (!values.words.empty()) {
        for (size_t i = 0; i < values.words.size(); ++i)
            if (v == values.words[i]) return int(i);
        fail_usage("tune {}: expected {}{}, found '{}'", key, fmt::join(values.words, " or "), or_auto, v);
    }
    const bool neg = !v.empty() && v[0] == '-';
    const std::string digits = neg ? v.substr(1) : v;
    const bool ok = !digits.empty() && digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos;
    const int n = ok ? (neg ? -std::stoi(digits) : std::stoi(digits)) : 0;
    if (!values.only.empty()) {
        if (!ok || std::find(values.only.begin(), values.only.end(), n) == values.only.end())
            fail_usage("tune {}: expected one of {}{}, found '{}'", key, fmt::join(values.only, ", "), or_auto, v);
    } else if (!ok || n < values.lo || n > values.hi) {
        fail_usage("tune {}: expected an integer from {} to {}{}, found '{}'", key, values.lo, values.hi, or_auto, v);
    }
    return n;
}

// the table entry for `key`, and the task kind of a per-kernel key
const Tunable* find(const std::string& key, std::string* kind) {
    for (const Tunable& t : kTable) {
        const std::string k = t.key;
        if (k == key) return &t;
        const size_t star = k.find(".KIND");
        if (star != std::string::npos && star + 5 == k.size() && key.size() > star + 1 &&
            key.compare(0, star + 1, k, 0, star + 1) == 0) {
            *kind = key.substr(star + 1);
            if (!task_kind_from_name(*kind))
                fail_usage("tune {}: expected a task kind after '{}' (e.g. attn_output, ffn_down), found '{}'", key,
                           k.substr(0, star + 1), *kind);
            return &t;
        }
    }
    return nullptr;
}

// edit distance, for the close keys of a misspelt one
size_t distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

}  // namespace

const std::vector<Tunable>& tunables() { return kTable; }

void tune_apply(ScheduleOptions& o, const std::string& key_value) {
    const size_t eq = key_value.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == key_value.size())
        fail_usage("tune: expected KEY=VALUE (jitllm plan --list-tunables lists the keys), found '{}'", key_value);
    const std::string key = key_value.substr(0, eq), value = key_value.substr(eq + 1);
    std::string kind;
    const Tunable* t = find(key, &kind);
    if (!t) {
        // the keys within 3 edits, else those of the same part (the text before the first '.')
        std::vector<std::string> close;
        for (const Tunable& c : kTable)
            if (distance(key, c.key) <= 3) close.push_back(c.key);
        const size_t dot = key.find('.');
        if (close.empty() && dot != std::string::npos && dot > 0)
            for (const Tunable& c : kTable)
                if (std::string(c.key).compare(0, dot + 1, key, 0, dot + 1) == 0) close.push_back(c.key);
        if (close.empty())
            fail_usage("tune {}: unknown key (jitllm plan --list-tunables lists the keys)", key);
        fail_usage("tune {}: unknown key; close: {} (jitllm plan --list-tunables lists them all)", key,
                   fmt::join(close, ", "));
    }
    const int n = parse(key, value, t->values);
    if (auto* f = std::get_if<int O::*>(&t->field)) o.**f = n;
    if (auto* f = std::get_if<bool O::*>(&t->field)) o.**f = n != 0;
    if (auto* f = std::get_if<std::map<std::string, int> O::*>(&t->field)) (o.**f)[kind] = n;
}

std::string tunables_list() {
    std::string out = fmt::format("{:<24} {:<8} {}\n", "key (--tune KEY=VALUE)", "default", "changes");
    for (const Tunable& t : kTable) out += fmt::format("{:<24} {:<8} {}\n", t.key, t.dflt, t.help);
    out += "KIND: a task kind (attn_norm, attn_output, ffn_norm, ffn_down, output_norm, ...): the kernel whose first "
           "task it is\n";
    return out;
}

}  // namespace jitllm
