// The tunables table (tunables.h): key, default, help, setter.
#include "backends/cuda/lowering/tunables.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "plan/task_kind.h"

namespace jitllm {
namespace {

constexpr int kNoAuto = -1000;

// An integer from lo to hi; "auto" gives `automatic` where the key has an automatic choice.
int num(const std::string& key, const std::string& v, int lo, int hi, int automatic = kNoAuto) {
    if (v == "auto" && automatic != kNoAuto) return automatic;
    const bool neg = !v.empty() && v[0] == '-';
    const std::string digits = neg ? v.substr(1) : v;
    const bool ok = !digits.empty() && digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos;
    const int n = ok ? (neg ? -std::stoi(digits) : std::stoi(digits)) : 0;
    if (!ok || n < lo || n > hi)
        fail_usage("tune {}: expected an integer from {} to {}{}, found '{}'", key, lo, hi,
                   automatic != kNoAuto ? " or auto" : "", v);
    return n;
}

// One of the listed integers (or "auto").
int num_of(const std::string& key, const std::string& v, const std::vector<int>& allowed, int automatic = kNoAuto) {
    const int n = v == "auto" && automatic != kNoAuto ? automatic : num(key, v, -(1 << 30), 1 << 30, automatic);
    if (n != automatic && std::find(allowed.begin(), allowed.end(), n) == allowed.end())
        fail_usage("tune {}: expected one of {}{}, found '{}'", key, fmt::join(allowed, ", "),
                   automatic != kNoAuto ? " or auto" : "", v);
    return n;
}

// One of the listed words; returns its index.
int word(const std::string& key, const std::string& v, const std::vector<std::string>& words) {
    for (size_t i = 0; i < words.size(); ++i)
        if (v == words[i]) return int(i);
    fail_usage("tune {}: expected {}, found '{}'", key, fmt::join(words, " or "), v);
}

bool on(const std::string& key, const std::string& v) { return word(key, v, {"off", "on"}) == 1; }

using O = ScheduleOptions;
using S = const std::string&;

const std::vector<Tunable> kTable = {
    // gemv: decode's matrix-vector products (gemv.cu)
    {"gemv.block", "auto", "threads per gemv block for plain and split-layout weights: 128, 256, 512 or 1024",
     [](O& o, S k, S, S v) { o.gemv_block = num_of(k, v, {128, 256, 512, 1024}, 0); }},
    {"gemv.rows", "auto", "output rows per warp and pass, 1 to 8 (the q/k/v gemv with RoPE rounds an odd count up)",
     [](O& o, S k, S, S v) { o.gemv_rows = num(k, v, 1, 8, 0); }},
    {"gemv.min_blocks", "auto", "minimum resident gemv blocks per SM (__launch_bounds__), 1 to 32",
     [](O& o, S k, S, S v) { o.gemv_min_blocks = num(k, v, 1, 32, 0); }},
    {"gemv.prefetch", "0", "bytes of each weight row prefetched to L2 (0: none)",
     [](O& o, S k, S, S v) { o.gemv_prefetch = num(k, v, 0, 1 << 20); }},
    {"gemv.split_pipe", "auto", "split-layout gemv loads one step ahead: 0 or 1",
     [](O& o, S k, S, S v) { o.gemv_split_pipe = num(k, v, 0, 1, -1); }},
    {"gemv.split_units", "auto", "split-layout gemv 16-byte units per lane and step, 1 to 4",
     [](O& o, S k, S, S v) { o.gemv_split_units = num(k, v, 1, 4, 0); }},
    {"gemv.bulk_kb", "auto", "gemv.load=bulk: KiB of shared-memory rings per block (auto: 200, less the x copy)",
     [](O& o, S k, S, S v) { o.gemv_bulk_kb = num(k, v, 1, 220, 0); }},
    {"gemv.bulk_min_slots", "auto", "gemv.load=bulk: the ring item is the widest column chunk leaving this many slots (auto: 4)",
     [](O& o, S k, S, S v) { o.gemv_bulk_min_slots = num(k, v, 1, 16, 0); }},
    {"gemv.early_slots", "auto", "bulk gemv ring slots a warp fills before its PDL wait (auto: Q4_0 2, Q8_0 3, others all)",
     [](O& o, S k, S, S v) { o.gemv_early_slots = num(k, v, 1, 99, 0); }},
    {"gemv.early_slots.KIND", "auto", "gemv.early_slots for the bulk gemv whose first task is KIND (e.g. ffn_down)",
     [](O& o, S k, S kind, S v) { o.gemv_early_slots_for[kind] = num(k, v, 1, 99); }},
    {"gemv.fill_at_loads", "on", "the late ring slots go out once the x prologue's loads are issued (off: after it)",
     [](O& o, S k, S, S v) { o.gemv_fill_at_loads = on(k, v); }},
    {"gemv.early_blocks", "on", "a bulk gemv after one on fewer blocks than SMs fills whole rings early on the SMs left free",
     [](O& o, S k, S, S v) { o.gemv_early_blocks = on(k, v); }},
    {"gemv.early_blocks.KIND", "auto", "blocks 0 .. N-1 of the bulk gemv whose first task is KIND fill their ring early",
     [](O& o, S k, S kind, S v) { o.gemv_early_blocks_for[kind] = num(k, v, 1, 4096); }},
    {"gemv.grid.KIND", "auto", "the gemv whose first task is KIND on at most N blocks (auto: Q4_0 attn_output on 76 of 132 SMs)",
     [](O& o, S k, S kind, S v) { o.gemv_grid_for[kind] = num(k, v, 1, 999); }},
    {"gemv.cluster.KIND", "auto", "the decode gemv whose first task is KIND in thread-block clusters of N blocks",
     [](O& o, S k, S kind, S v) { o.gemv_cluster_for[kind] = num(k, v, 1, 8); }},
    {"gemv.rows.KIND", "auto", "gemv.rows for the gemv whose first task is KIND",
     [](O& o, S k, S kind, S v) { o.gemv_rows_for[kind] = num(k, v, 1, 8); }},
    {"gemv.norm_early", "auto", "normed Q4_0/Q8_0 gemvs load their norm weight before the PDL wait (auto: the lanes gemvs)",
     [](O& o, S k, S, S v) { o.gemv_norm_early = word(k, v, {"off", "on", "auto"}) == 2 ? -1 : word(k, v, {"off", "on", "auto"}); }},
    {"gemv.x_regs", "on", "bulk split-layout Q4_0/Q8_0 gemvs keep each lane's x units in registers where they fit",
     [](O& o, S k, S, S v) { o.gemv_x_regs = on(k, v); }},
    {"gemv.q4_shift", "off", "split-layout Q4_0 dot products shift the high nibbles down, one dp4a chain",
     [](O& o, S k, S, S v) { o.gemv_q4_shift = on(k, v); }},
    {"gemv.xq_norm", "off", "gemv.xq=producer: the normed gemvs take x quantized by the kernel before them too",
     [](O& o, S k, S, S v) { o.gemv_xq_norm = on(k, v); }},
    {"gemv.xq_lag", "1", "gemv.xq=producer: the cluster leader quantizes a group after its own pass N groups later",
     [](O& o, S k, S, S v) { o.gemv_xq_lag = num(k, v, 1, 8); }},
    {"attn.xq", "on", "gemv.xq=producer: decode attention writes its output quantized for attn_output",
     [](O& o, S k, S, S v) { o.no_attn_xq = !on(k, v); }},
    {"kv.l2_prefetch", "off", "the q/k/v bulk gemv prefetches earlier K/V rows into L2: at its start or after its last copy",
     [](O& o, S k, S, S v) { o.kv_l2_prefetch = word(k, v, {"off", "start", "last"}); }},
    // decode attention (attention_decode.cu, attention_decode_tma.cu)
    {"attn.chunk", "auto", "split-KV positions per chunk: 32, 64, 128 or 256 (auto: 128)",
     [](O& o, S k, S, S v) { o.attn_chunk = num_of(k, v, {32, 64, 128, 256}, 0); }},
    {"attn.splits", "auto", "split-KV blocks per query-head set along the context (auto: the resident blocks fill the SMs)",
     [](O& o, S k, S, S v) { o.attn_splits = num(k, v, 1, 1024, 0); }},
    {"attn.heads_per_block", "auto", "query heads per decode attention block, a divisor of the heads per kv head",
     [](O& o, S k, S, S v) { o.attn_heads_per_block = num(k, v, 1, 256, 0); }},
    {"attn.pipe", "auto", "split-KV blocks load their next chunk early: 0 off, 1 into a second register set, 2 in place",
     [](O& o, S k, S, S v) { o.attn_pipe = num(k, v, 0, 2, -1); }},
    {"attn.kv_stages", "0", "register kernel: K/V chunks through an N-deep cp.async ring (2 to 4); attn.kv=tma: its slots",
     [](O& o, S k, S, S v) { o.attn_kv_stages = num(k, v, 0, 8); }},
    {"attn.carveout", "auto", "preferred shared-memory carveout of the decode attention kernel, percent (-1: the driver's)",
     [](O& o, S k, S, S v) { o.attn_carveout = num(k, v, -1, 100, -2); }},
    {"attn.tma_from", "auto", "attn.kv=tma: decode positions below N on a second graph with the register kernel (0: none)",
     [](O& o, S k, S, S v) { o.attn_tma_from = num(k, v, 0, 1 << 30, -1); }},
    {"attn.tma_stages", "auto", "attn.kv=tma's ring slots, 1 to 8 (auto: attn.kv_stages if set, else 2)",
     [](O& o, S k, S, S v) { o.attn_tma_stages = num(k, v, 1, 8, 0); }},
    {"attn.tma_cluster", "auto", "attn.kv=tma's splits of a kv head merged in one cluster (auto: where the device's fit)",
     [](O& o, S k, S, S v) { o.attn_tma_cluster = word(k, v, {"off", "on", "auto"}) == 2 ? -1 : word(k, v, {"off", "on", "auto"}); }},
    // batch phase (prompt chunks, the server's steps)
    {"gemm.bm", "auto", "rows of the tensor-core GEMM tile: 64 or 128",
     [](O& o, S k, S, S v) { o.gemm_bm = num_of(k, v, {64, 128}, 0); }},
    {"batch.small_rows", "8", "batch steps of up to N rows take the gemv list (gate batch.small)",
     [](O& o, S k, S, S v) { o.batch_small_rows = num(k, v, 1, 64); }},
    {"batch.xrows", "4", "gate batch.xrows: a block reads each Q4_0/Q8_0 weight row once for N of a step's rows (0: off)",
     [](O& o, S k, S, S v) { o.batch_xrows = num_of(k, v, {0, 2, 4, 8}); }},
    {"batch.bulk", "off", "the batch phase's gemv list streams its weights through decode's bulk rings",
     [](O& o, S k, S, S v) { o.batch_bulk = on(k, v); }},
};

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
    t->set(o, key, kind, value);
}

std::string tunables_list() {
    std::string out = fmt::format("{:<24} {:<8} {}\n", "key (--tune KEY=VALUE)", "default", "changes");
    for (const Tunable& t : kTable) out += fmt::format("{:<24} {:<8} {}\n", t.key, t.dflt, t.help);
    out += "KIND: a task kind (attn_norm, attn_output, ffn_norm, ffn_down, output_norm, ...): the kernel whose first "
           "task it is\n";
    return out;
}

}  // namespace jitllm
