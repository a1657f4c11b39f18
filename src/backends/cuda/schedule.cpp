// Schedule building: fusion of consecutive tasks, capability gates, launch geometry, arguments.
#include "backends/cuda/schedule.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <set>

#include "backends/cuda/gemm_variant.h"
#include "core/error.h"
#include "quant/quant.h"

namespace jitllm {
namespace {

using K = TaskKind;

std::string lowercase(std::string s) {
    for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// kernel-side weight type names (quant_blocks.cuh)
std::string wtype_define(GgmlType t) {
    std::string n = type_name(t);
    for (auto& c : n) c = char(std::toupper(static_cast<unsigned char>(c)));
    return n;  // F32 F16 BF16 Q8_0 Q4_0 ... Q4_K
}

// A float literal that round-trips: "0.125f", "1.0f", "1e-05f".
std::string fstr(float f) {
    std::string s = fmt::format("{:.9g}", f);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s + "f";
}

// a kernel step's integer define, or dflt when it is not set
int define_int(const KernelStep& k, const char* name, int dflt) {
    for (const auto& [n, v] : k.variant.defines)
        if (n == name) return std::atoi(v.c_str());
    return dflt;
}

// attn_norm + attn_qkv -> "attn_norm_qkv"; ffn_norm + ffn_gate_up + ffn_act -> "ffn_norm_gate_up_act"
std::string group_name(const std::vector<const Task*>& ts) {
    std::string first(task_kind_name(ts[0]->kind));
    const size_t us = first.find('_');
    const std::string prefix = us == std::string::npos ? first + "_" : first.substr(0, us + 1);
    std::string g = first;
    for (size_t i = 1; i < ts.size(); ++i) {
        std::string n(task_kind_name(ts[i]->kind));
        if (n.rfind(prefix, 0) == 0) n = n.substr(prefix.size());
        g += "_" + n;
    }
    return g;
}

struct Gates {
    bool gemv_warp, norm_warp, attn_split, sample_warp;
    bool gemm_mma = false;  // tensor-core matrix-matrix kernels in the batch phase
    bool gemm_wgmma = false;  // Hopper warpgroup MMA for F16/BF16 weights
    bool attn_prefill_mma = false;  // batch-phase causal attention on tensor cores
    bool attn_vh2 = false;          // attn.vsum=half2: decode attention's V sums in f16 pairs per tile
    bool attn_tma = false;          // attn.kv=tma: split-KV decode attention fed by tensor-map copies, on tensor cores
    bool batch_small = false;  // batch steps of few rows through the gemv kernels
    bool batch_pdl = false;    // ... launched with PDL (gate batch.pdl)
    bool batch_xrows = false;  // a third list for steps of 2+ rows (gate batch.xrows)
    bool rope_table = false;   // rope.angles=table: (cos, sin) read from the host-filled table
    bool rope_fuse = false;    // rope.fuse=gemv: RoPE + KV store in the q/k/v gemv's epilogue
    // gemv.early=load: the first weight step before griddepcontrol.wait; by default for the
    // split-layout gemvs only (forced: every gemv)
    bool gemv_early = false, gemv_early_all = false;
    // gemv.grid=capped: at most 2 blocks per SM, each looping over its row groups; by default for
    // split-layout gemvs of >= 4096 columns only (forced: every gemv)
    bool gemv_cap = false, gemv_cap_all = false;
    // gemv.load=bulk: decode's split-layout gemvs stream rows by cp.async.bulk into smem rings; by
    // default for those of >= 4096 columns and rows (forced: every split-layout decode gemv and the
    // plain-type ones with x in shared memory)
    bool gemv_bulk = false, gemv_bulk_all = false;
    // gemv.trigger=start: split-layout bulk gemvs trigger their PDL dependents at their start
    // (forced: every gemv)
    bool gemv_trigger = false, gemv_trigger_all = false;
    // gemv.xq=producer: a SwiGLU bulk gemv quantizes its output for the split-layout bulk gemv
    // after it (gemv.cu XQ_OUT / XQ_IN; a pair of blocks a cluster completes each group of 32)
    bool gemv_xq = false, gemv_xq_all = false;  // (by default where the consumer is Q4_0; forced: Q8_0 too)
    // attn.early=kv: the split SIMT decode kernel loads its first chunk before the PDL wait
    bool attn_early = false;
    // sample.fuse=gemv: decode's greedy pick inside the output gemv (gemv.cu ARGMAX)
    bool sample_fuse = false;
    // step.advance=device: decode's pick kernel advances the token and position slots itself
    bool step_advance = false;
    // sample.draw=device: decode's pick kernel also draws when the host's parameters say so (argmax.cu DRAW)
    bool sample_draw = false;
};

class Lowering {
public:
    Lowering(const Plan& p, const DeviceInfo& d, const ScheduleOptions& o, Schedule& s)
        : p_(p), c_(*p.config), d_(d), o_(o), s_(s) {}

    void decide_gates() {
        auto forced = [&](const std::string& gate, const std::string& a, const std::string& b,
                          bool want_a, const std::string& reason) {
            bool pick_a = want_a;
            std::string why = reason;
            if (auto it = o_.force.find(gate); it != o_.force.end()) {
                if (it->second != a && it->second != b)
                    fail_usage("--force-variant {}={}: expected {} or {}", gate, it->second, a, b);
                pick_a = it->second == a;
                why = "forced by --force-variant";
            }
            s_.gates.push_back({gate, pick_a ? a : b, pick_a ? b : a, why});
            return pick_a;
        };
        // A gate whose side `a` needs what `missing` names (empty: nothing is missing): side b then,
        // and forcing side a is refused with that sentence.
        auto forced_if = [&](const std::string& gate, const std::string& a, const std::string& b, bool want_a,
                             const std::string& missing, const std::string& reason) {
            const bool pick_a = forced(gate, a, b, want_a && missing.empty(), missing.empty() ? reason : missing);
            if (pick_a && !missing.empty()) fail_usage("--force-variant {}={}: {}", gate, a, missing);
            return pick_a;
        };
        const bool warp32 = d_.warp_size == 32;
        const std::string wr = warp32 ? "warp size 32: lanes reduce with __shfl_xor_sync"
                                      : fmt::format("warp size {} != 32: shared-memory tree", d_.warp_size);
        g_.gemv_warp = forced("gemv.reduce", "warp", "tree", warp32, wr);
        g_.norm_warp = forced("norm.reduce", "warp", "tree", warp32, wr);
        g_.sample_warp = forced("sample.reduce", "warp", "tree", warp32, wr);
        // Split-KV when one block per kv head leaves most SMs idle, at any context: below one
        // chunk the split kernel still runs one block per query head (onepass: one per kv head).
        // H200 tg128 at n_ctx 128 (bench's default for -p 0 -n 128), session 12: 8B Q8_0 onepass
        // 417.8 against split 439.5 (n_ctx 1024), 1B Q4_0 2100.0 against 2180.0
        const bool split = c_.n_kv_heads * 4 < d_.sm_count;
        g_.attn_split = forced("attn.algo", "split", "onepass", split,
                               fmt::format("{} kv heads on {} SMs, context {}: {}", c_.n_kv_heads,
                                           d_.sm_count, p_.n_ctx,
                                           split ? "split the context across blocks (one block per query head "
                                                   "below a chunk)"
                                                 : "one block per kv head fills the device"));
        // Tensor-core gate for the batched-prefill matrix-matrix products (prefill issue): decided
        // and printed now so the gate exists before any kernel uses it.
        {
            const int cc = d_.cc();
            std::string why;
            const bool mma = gemm_mma_supported(GgmlType::F16, cc, &why);
            g_.gemm_mma = forced("gemm.mma", "mma", "simt", mma,
                                 mma ? fmt::format("compute capability {}.{}: mma.sync m16n8k16 tensor cores for the "
                                                   "batch phase's matrix products (F32 weights stay SIMT: f32 precision)",
                                                   d_.cc_major, d_.cc_minor)
                                     : why);
        }
        {
            const int cc = d_.cc();
            const bool wg = g_.gemm_mma && gemm_mma_level(GgmlType::F16, cc) >= 2;
            g_.gemm_wgmma = forced("gemm.wgmma", "wgmma", "mma", wg,
                                   wg ? "sm_90: wgmma.mma_async from shared memory (sm_90a) for F16/BF16 and quantized "
                                        "weights (dequantized to f16 in shared memory), activations in 16 bits"
                                      : fmt::format("compute capability {}.{}{}: no wgmma", d_.cc_major, d_.cc_minor,
                                                    g_.gemm_mma ? "" : " (and gemm.mma=simt)"));
        }
        {
            // Batch-phase attention: flash-attention-2 style tiles on mma.sync (attention_prefill.cu)
            // or one block per (kv head, row) on SIMT units (attention_decode.cu BATCH=1)
            const int cc = d_.cc();
            const int qpg = c_.n_heads / std::max(1, c_.n_kv_heads);
            std::string why;
            if (cc < 80) why = fmt::format("compute capability {}.{}: no mma.sync f16 / cp.async", d_.cc_major, d_.cc_minor);
            else if (o_.kv_f32) why = "--kv-f32: the mma kernel reads a half KV cache";
            else if (c_.head_dim % 16 != 0 || c_.head_dim > 256) why = fmt::format("head_dim {} not a multiple of 16 <= 256", c_.head_dim);
            else if (qpg > 64) why = fmt::format("{} query heads per kv head > 64", qpg);
            g_.attn_prefill_mma = forced_if("attn.prefill", "mma", "rows", true, why,
                                            fmt::format("compute capability {}.{}: causal tiles of rows on mma.sync "
                                                        "m16n8k16, K/V shared by the rows of a sequence",
                                                        d_.cc_major, d_.cc_minor));
        }
        {
            // attn.vsum=half2 (sm_80+): the SIMT decode kernel sums a tile's weighted V rows in f16
            // pairs (fma.rn.f16x2, the weights rounded to f16) and adds them to its f32 output once
            // per tile, instead of converting every V element and FMA-ing in f32: 4 instructions per
            // position and 8 dims instead of ~25 (the kernel is issue-bound at depth: 0.47 issued
            // warps per scheduler, session 9). H200, 8B Q8_0 tg128 (session 10, one machine): depth
            // 4096 379.55 -> 382.45 (depth 0 426.48 -> 423.93, noise: one block per head there);
            // with the one-trip merge 383.16 against 380.61 (depth 0 425.84 / 426.89).
            const int cc = d_.cc();
            std::string why;
            if (cc < 80) why = fmt::format("compute capability {}.{}: no cvt.rn.f16x2.f32", d_.cc_major, d_.cc_minor);
            else if (o_.kv_f32) why = "--kv-f32: V is read as floats";
            else if (!g_.norm_warp) why = "norm.reduce=tree: the half2 sum sits in the shuffle-reduction loop";
            g_.attn_vh2 = forced_if("attn.vsum", "half2", "float", true, why,
                                    "a tile's weighted V rows summed in f16 pairs, once per tile into the f32 output "
                                    "(H200, 8B Q8_0 at depth 4096: +0.8 % tok/s)");
        }
        {
            // attn.early=kv (attention_decode.cu EARLY_KV): each split-KV block reads the position
            // and loads its first chunk's K/V rows before griddepcontrol.wait, so those loads run
            // while the q/k/v gemv drains; the current position's row (that gemv's store) after
            // it. Needs the position and the earlier rows final before a step's first kernel (the
            // host copies the position before the step's launches or graph). H200, tg128, same
            // machine (session 13): 8B Q8_0 450.21 -> 455.43, Q4_0 677.32 -> 695.78; depth 4096
            // 399.60 -> 399.96 (depth 0 445.38 -> 456.16 in that run).
            std::string why;
            if (!g_.attn_split) why = "attn.algo=onepass: one block per kv head reads the position first";
            g_.attn_early = forced_if("attn.early", "kv", "wait", true, why,
                                      "split-KV blocks load their first chunk of K/V before waiting for the q/k/v gemv "
                                      "(H200: 8B Q8_0 +1.2 %, Q4_0 +2.7 % tok/s; the SIMT kernel with --attn-pipe 2, "
                                      "no sliding window)");
        }
        {
            // attn.kv=tma (attention_decode_tma.cu, sm_90): each split-KV block (kv head, split) has
            // its K/V tiles (TP = --attn-chunk positions: 64, 128 or 256) copied into a shared-memory
            // ring by tensor-map copies (one cp.async.bulk.tensor a 64-dim box, issued by one thread,
            // before the PDL wait; the current row patched after it), and serves every query head of
            // its kv head with mma.sync from there (ldmatrix from 128-byte-swizzled boxes). No thread
            // holds a K/V load and the arithmetic is 32 mma a warp per 16 positions for the whole
            // group. Where it runs, the attention gates above (attn.decode, attn.stage, attn.merge,
            // attn.vsum, attn.kdot, attn.early) describe the register kernel, which does not.
            const int cc = d_.cc();
            const int qpg = c_.n_heads / std::max(1, c_.n_kv_heads);
            std::string why;
            if (!g_.attn_split) why = "attn.algo=onepass: the tensor-map kernel is split-KV";
            else if (cc < 90)
                why = fmt::format("compute capability {}.{}: no tensor-map copies (sm_90+)", d_.cc_major, d_.cc_minor);
            else if (o_.kv_f32) why = "--kv-f32: the tensor-map kernel reads a half KV cache";
            else if (!g_.norm_warp) why = "norm.reduce=tree: the tensor-map kernel's softmax uses warp shuffles";
            else if (c_.head_dim != 64 && c_.head_dim != 128) why = fmt::format("head_dim {}: 64 or 128", c_.head_dim);
            else if (qpg > 8) why = fmt::format("{} query heads per kv head > 8 (the mma rows)", qpg);
            else if (o_.attn_pipe > 0 || o_.attn_heads_per_block > 0)
                why = "attn.pipe and attn.heads_per_block are the register kernel's";
            else if (const int tp = o_.attn_chunk > 0 ? o_.attn_chunk : 128; tp != 64 && tp != 128 && tp != 256)
                why = fmt::format("--attn-chunk {}: the tensor-map kernel's tiles are 64, 128 or 256 positions", tp);
            else if (const int st = tma_stages();
                     st > 8 || tma_smem(tp, st) > d_.max_shared_block())
                why = fmt::format("--attn-kv-stages {} of {} positions: the tensor-map kernel's ring takes 1 to 8 slots of at most "
                                  "{} bytes in all (found {})", st, tp, d_.max_shared_block(), tma_smem(tp, st));
            // Default where the plan's context exceeds two 128-position tiles. H200, tg128, one machine
            // (session 27, 128-position tiles through 2 slots): 8B Q8_0 at depth 4096 417.02 / 416.84 ->
            // 431.65 (16 splits) / 433.07 (12), at depth 0 480.06 / 480.65 -> 471.90 / 473.15 (-1.5 %);
            // 8B Q4_0 603.35 -> 639.08 at depth 4096 (+5.9 %), 741.78 -> 742.86 at depth 0. A context
            // that stays within two tiles gains nothing from it, so short plans keep the register kernel.
            // Head dim 64 keeps the register kernel: H200, 1B Q4_0 (32 x 64 heads, 8 kv), one machine
            // (session 28): depth 4096 1869.97 tok/s with it against 1734.11 with the tensor-map kernel,
            // depth 0 2239.46 against 2229.78.
            const bool long_ctx = p_.n_ctx > 256, hd128 = c_.head_dim == 128;
            g_.attn_tma = forced_if("attn.kv", "tma", "ld", long_ctx && hd128, why,
                                    !long_ctx ? fmt::format("context {} <= 256: within two tiles, the register kernel (the "
                                                            "tensor-map kernel: H200 8B Q8_0 -1.5 % at depth 0)", p_.n_ctx)
                                    : !hd128  ? fmt::format("head_dim {}: the register kernel (H200 1B Q4_0 at depth 4096: "
                                                            "1870.0 tok/s against 1734.1 with the tensor-map kernel)", c_.head_dim)
                                              : fmt::format("context {} > 256: K/V tiles by tensor-map copies before the PDL "
                                                            "wait, the group's heads on mma.sync (H200 at depth 4096: 8B Q8_0 "
                                                            "+3.9 %, Q4_0 +5.9 %; depth 0: Q8_0 -1.5 %, Q4_0 +0.1 %){}",
                                                            p_.n_ctx,
                                                            tma_from() > 0 ? fmt::format("; positions below {} on a second graph "
                                                                                         "with the register kernel (--attn-tma-from)",
                                                                                         std::min(tma_from(), p_.n_ctx))
                                                                           : std::string()));
        }
        {
            // Batch steps of up to --batch-small-rows rows (a server with one or a few active slots;
            // the logits row after a prompt chunk): the matrix products as gemv kernels over the
            // rows instead of GEMM tiles built for many rows (measured: perf-notes session 22).
            g_.batch_small = forced("batch.small", "gemv", "gemm", true,
                                    "batch steps of up to --batch-small-rows (8) rows through the gemv kernels: the weights "
                                    "streamed once for the rows (H200, jitllm serve, greedy: 8B Q8_0 one client 350.8 tok/s "
                                    "against 68.6 with the GEMM, 8 clients 777.4 against 529.6; 1B Q4_0 1680.6 against 261.4, "
                                    "3626.4 against 2007.6; at 32 rows a step the GEMM is faster)");
        }
        {
            // Steps of 2 .. --batch-small-rows rows (a server's concurrent slots) through a third batch
            // list whose split-layout Q4_0/Q8_0 gemvs take --batch-xrows (4) rows a block: each weight
            // row read once for them instead of once a row (gemv.cu XROWS); one-row steps keep the
            // small-step list. H200, jitllm serve, greedy, 8 clients (session 23): 8B Q8_0 1501.4 tok/s
            // (1547.2 with 8 rows a block) against 771.9, 1B Q4_0 4877.6 (4576.4) against 3592.0
            std::string why;
            if (!g_.batch_small) why = "batch.small=gemm: no gemv list for small steps";
            else if (o_.batch_xrows < 2) why = "--batch-xrows 0: each row of a step reads the weights";
            g_.batch_xrows = forced_if("batch.xrows", "shared", "per-row", true, why,
                                       fmt::format("steps of 2 or more rows: split-layout Q4_0/Q8_0 gemvs read each weight "
                                                   "row once for {} rows (H200 serve, 8 clients: 8B Q8_0 1501.4 tok/s "
                                                   "against 771.9, 1B Q4_0 4877.6 against 3592.0)", o_.batch_xrows));
        }
        {
            // Q4_0/Q8_0 matrices in the split device layout: their 18/34-byte blocks are only
            // 2-aligned, so 16-byte loads need the quants and the scales in separate runs. Every
            // weight a matrix product reads qualifies when its rows are whole 256-element
            // multiples (both runs 16-byte aligned); the embedding table keeps GGUF blocks
            // (embed.cu reads rows of it; a tied output projection then reads blocks too).
            std::set<const WeightTensor*> embed, mats;
            for (const auto* ph : {&p_.decode, &p_.prefill, &p_.batch})
                for (const Task& tk : *ph)
                    for (const WeightTensor* w : tk.w)
                        if (w) (tk.kind == K::TokenEmbd ? embed : mats).insert(w);
            std::set<const WeightTensor*> split;
            for (const WeightTensor* w : mats)
                if (split_layout_type(w->type) && w->cols % 256 == 0 && w->rows > 1 && !embed.count(w)) split.insert(w);
            const bool any = !split.empty();
            const bool use = forced("weights.layout", "split", "blocks", any,
                                    any ? fmt::format("{} Q4_0/Q8_0 matrices with rows of a multiple of 256 elements: quants "
                                                      "and f16 scales in separate 16-byte-aligned runs per row (16-byte "
                                                      "loads, no shared-memory staging); the embedding table keeps GGUF blocks",
                                                      split.size())
                                        : "no Q4_0/Q8_0 matrix with rows of a multiple of 256 elements: GGUF blocks");
            if (use) s_.split_weights = std::move(split);
        }
        {
            // H200, tg128, same machine (docs/perf-notes.md): PDL +2-3 % for F16 models; with the
            // split-layout quantized gemv it was -3 to -5 % until the int8-x gemv and the coherent
            // activation loads (2026-12-01), now +2.9 to +3.6 % (8B Q4_0/Q8_0, 1B Q4_0/Q8_0)
            const bool sm90 = d_.cc_major >= 9;
            const bool want = sm90;
            pdl_ = forced("launch.pdl", "pdl", "serial", want,
                          want ? fmt::format("compute capability {}.{}: decode kernels launched with programmatic stream "
                                             "serialization, each waits (griddepcontrol.wait) before reading its inputs, "
                                             "so launch and prologue overlap the previous kernel",
                                             d_.cc_major, d_.cc_minor)
                               : fmt::format("compute capability {}.{}: no programmatic dependent launch (sm_90+)",
                                             d_.cc_major, d_.cc_minor));
            if (pdl_ && !sm90) fail_usage("--force-variant launch.pdl=pdl: needs compute capability 9.0+");
        }
        {
            // The server's small steps (the batch.small gemv list) launched with PDL as decode is:
            // every kernel of that list waits before reading an earlier kernel's output. The GEMM
            // list stays serial (gemm.cu / convert.cu have no PDL wait). H200, jitllm serve, greedy
            // (session 23): 8B Q8_0 one client 362.4 tok/s against 352.5 serial, 8 clients 777.6
            // against 775.1; 1B Q4_0 1788.4 against 1666.0, 3550.0 against 3579.3
            std::string why;
            if (!g_.batch_small) why = "batch.small=gemm: no gemv list for small steps";
            else if (!pdl_) why = "launch.pdl=serial: no programmatic dependent launch";
            g_.batch_pdl = forced_if("batch.pdl", "pdl", "serial", true, why,
                                     "the small-step gemv list launched with PDL as decode (H200 serve, one client: "
                                     "8B Q8_0 362.4 tok/s against 352.5, 1B Q4_0 1788.4 against 1666.0; 8 clients "
                                     "the same within 1 %)");
        }
        {
            // H200, tg128, same machine (docs/perf-notes.md, session 6): with the table 1B F16
            // +1.2 %, 1B Q4_0 +4.2 %; with the table and rope.fuse=gemv +1.4 to +4.5 % on all six
            // shapes (the fused epilogue without the table: +0.7 / -0.8 %, its per-pair double pow
            // + sincos sat on the kernel's tail)
            const size_t bytes = rope_table_bytes();
            const size_t cap = size_t(256) << 20;
            const bool want = c_.n_rot > 0 && bytes <= cap;
            g_.rope_table = forced("rope.angles", "table", "computed", want,
                                   want ? fmt::format("RoPE (cos, sin) of every (position, pair) computed once on the host as "
                                                      "the CPU computes them, {} x {} pairs ({:.1f} MiB), read by the rope kernels",
                                                      p_.n_ctx, c_.n_rot / 2, double(bytes) / double(1 << 20))
                                        : fmt::format("a table of {} x {} pairs would take {:.1f} MiB (> 256): angles computed per pair",
                                                      p_.n_ctx, c_.n_rot / 2, double(bytes) / double(1 << 20)));
            const bool fuse = o_.fuse && g_.rope_table;
            g_.rope_fuse = forced("rope.fuse", "gemv", "kernel", fuse,
                                  fuse ? "RoPE and the KV-cache store in the q/k/v gemv's epilogue (angles from the table) where one "
                                         "launch serves q, k and v and RoPE pairs are adjacent: one launch per layer less"
                                       : !o_.fuse ? "--no-fuse" : "angles computed per pair: the epilogue would carry them");
        }
        {
            // H200, tg128, same machine (session 6): early first load with PDL +1.6 % 1B Q4_0,
            // +6.7 % 1B Q8_0; on 8B -4.6 % Q4_0 / -0.7 % Q8_0 alone but +3.3 % / +2.6 % together
            // with the grid cap; F16 gemvs -16 % (1B) / -13 % (8B): they wait. The cap alone: +2.4 %
            // 1B Q4_0, -3 % with the early load on 1B Q8_0 (2048 columns), -3 to -5 % on F16.
            const bool any_split = !s_.split_weights.empty();
            const bool early = pdl_ && any_split;
            g_.gemv_early = forced("gemv.early", "load", "wait", early,
                                   early ? "PDL: the split-layout (Q4_0/Q8_0) gemvs load their first weight step before "
                                           "griddepcontrol.wait, so the weight stream starts while the previous kernel drains "
                                           "(plain F16/F32 gemvs wait: measured slower)"
                                         : !pdl_ ? "no programmatic dependent launch: nothing to overlap"
                                                 : "no split-layout matrix (plain F16/F32 gemvs wait: measured slower)");
            g_.gemv_early_all = g_.gemv_early && o_.force.count("gemv.early");
            bool wide = false;
            for (const WeightTensor* w : s_.split_weights) wide = wide || w->cols >= kCapCols;
            g_.gemv_cap = forced("gemv.grid", "capped", "full", wide,
                                 wide ? "split-layout gemvs of >= 4096 columns: at most 2 blocks per SM, each quantizes x once "
                                        "and loops over its row groups"
                                      : "no split-layout matrix of >= 4096 columns: one block per row group");
            g_.gemv_cap_all = g_.gemv_cap && o_.force.count("gemv.grid");
        }
        {
            // gemv.load=bulk (sm_90: cp.async.bulk + mbarrier transaction counts): decode's split-layout
            // gemvs get their weights through per-warp shared-memory rings filled by bulk copies
            // (gemv.cu BULK), one block per SM, instead of 16-byte loads into registers (`lanes`).
            // H200, tg128, same machine (session 7): 8B Q4_0 530 -> 618 tok/s, 8B Q8_0 366 -> 410 with
            // 16 warps and ~200 KiB of rings per block (8 warps: 509 / 391; 96 KiB: 476 / 335); the
            // bytes in flight per SM are what the registers could not hold. By default for split
            // gemvs of >= 4096 columns and rows (forced: every split gemv); 1B (2048-row matrices)
            // keeps `lanes`: 32 rows per block pass would leave half the SMs idle.
            // Plain F16 / BF16 / F32 matrices too, whatever their size (session 11, same machine,
            // 5 repetitions: 8B F16 248.99 -> 251.23 and 245.38 -> 248.96 / 250.40 tok/s on two
            // machines; 1B F16 1192.2-1197.0 -> 1199.5-1204.8, where the split types' 2048-row
            // matrices lost: their row sets per SM are too few for the rings; plain rows carry
            // 2-4x the bytes).
            const bool sm90 = d_.cc_major >= 9;
            bool wide = false, plain = false;
            for (const WeightTensor* w : s_.split_weights) wide = wide || (w->cols >= kCapCols && w->rows >= kCapCols);
            for (const Task& tk : p_.decode)
                for (const WeightTensor* w : tk.w)
                    plain = plain || (w && tk.kind != K::TokenEmbd && w->rows > 1 && is_plain(w->type) && w->cols % 256 == 0);
            g_.gemv_bulk = forced("gemv.load", "bulk", "lanes", sm90 && (wide || plain),
                                  !sm90 ? fmt::format("compute capability {}.{}: no cp.async.bulk", d_.cc_major, d_.cc_minor)
                                  : !(wide || plain)
                                      ? "no split-layout (Q4_0/Q8_0) matrix of >= 4096 columns and rows, no F16/BF16/F32 "
                                        "matrix of 256-column multiples: 16-byte loads into registers"
                                      : "sm_90: split-layout (Q4_0/Q8_0) gemvs of >= 4096 columns and rows and F16/BF16/F32 "
                                        "gemvs stream their rows by cp.async.bulk into per-warp shared-memory rings (~200 KiB "
                                        "per block, 16 warps, one block per SM), the first items before the PDL wait");
            g_.gemv_bulk_all = g_.gemv_bulk && o_.force.count("gemv.load");
            if (g_.gemv_bulk && !sm90) fail_usage("--force-variant gemv.load=bulk: needs compute capability 9.0+");
            // gemv.trigger=start (gemv.cu TRIGGER_EARLY): a split-layout bulk gemv lets the next
            // kernel launch at its own start instead of once each warp's last copy is out. H200,
            // tg128, same machine (session 12): 8B Q8_0 447.09 -> 451.48, Q4_0 674.46 -> 680.15;
            // depth 4096 (8B Q8_0) 395.91 -> 399.49. On the F16 bulk gemvs and 1B's `lanes` gemvs
            // (forced: every gemv) slower: 8B F16 263.22 -> 261.60, 1B F16 1290.4 -> 1271.3, 1B
            // Q8_0 1732.3 -> 1718.8, 1B Q4_0 2183.3 -> 2127.8, so those keep `loads`.
            const bool start = pdl_ && g_.gemv_bulk && wide;
            g_.gemv_trigger = forced_if("gemv.trigger", "start", "loads", start,
                                        pdl_ ? "" : "no programmatic dependent launch: nothing to trigger",
                                        start ? "PDL: split-layout bulk gemvs let the next kernel launch at their start "
                                                "(its blocks take the SMs as this one's leave them; measured +1.0 % on 8B "
                                                "Q8_0, +0.8 % on Q4_0); other gemvs trigger once their last loads are out"
                                              : "no split-layout bulk gemv: every gemv triggers once its last loads are out "
                                                "(the start trigger measured slower on F16 bulk and lanes gemvs)");
            g_.gemv_trigger_all = g_.gemv_trigger && o_.force.count("gemv.trigger");
            // gemv.xq=producer (gemv.cu XQ_OUT / XQ_IN): the SwiGLU gate/up gemv also writes its
            // output quantized to Q8_0 blocks in the layout ffn_down's prologue builds (the same
            // bits), each group of 32 rows completed by the pair of blocks (one thread-block
            // cluster) whose warps computed it, by asynchronous stores into the leader's shared
            // memory; ffn_down's prologue is then one bulk copy of 18 KB instead of 57 KB of f32
            // through registers, quantized again by every block. H200, 8B tg128 (session 30): that
            // prologue alone (--gemv-ablate xpre-down, timing only) Q4_0 749.1 -> 789.2 tok/s; the
            // producer 758.6 / 758.6 against 752.6 / 752.2, and 770.1 / 770.3 with the gemv before
            // it in clusters of 2 too (whole TPCs: gate/up's pairs land on the free ones); Q8_0 478.0
            // against 479.9: by default where ffn_down is Q4_0 (forced: Q8_0 too). The decode
            // attention does the same for attn_output (attn_xq_link; session 31, the groups' max and
            // sum by redux.sync: 771.0 / 771.5 against 764.9 / 764.9 with --no-attn-xq, the sibling
            // 748.0 / 747.9)
            bool q4 = false;
            for (const WeightTensor* w : s_.split_weights) q4 = q4 || w->type == GgmlType::Q4_0;
            std::string why_xq;
            if (!sm90) why_xq = fmt::format("compute capability {}.{}: no thread-block clusters", d_.cc_major, d_.cc_minor);
            else if (!g_.gemv_bulk) why_xq = "gemv.load=lanes: the producer's pairs are the bulk gemvs' blocks";
            else if (d_.clusters_1pm[2] > 0 && 2 * d_.clusters_1pm[2] < d_.sm_count)
                why_xq = fmt::format("only {} clusters of 2 blocks fit at once on {} SMs", d_.clusters_1pm[2], d_.sm_count);
            g_.gemv_xq = forced_if("gemv.xq", "producer", "block", q4, why_xq,
                                   q4 ? "sm_90: the SwiGLU gemv quantizes its output for the Q4_0 split-layout gemv after it "
                                        "(each group of 32 rows completed by a cluster of 2 blocks through distributed shared "
                                        "memory; the gemv before it in clusters of 2 too), the decode attention its output for "
                                        "attn_output; those gemvs' x prologue is one bulk copy (H200 8B Q4_0: +3.1 %)" +
                                        std::string(o_.gemv_xq_norm ? "; --gemv-xq-norm: the embedding and the residual gemvs "
                                                                      "quantize the residual stream times the next norm weight "
                                                                      "for the normed gemvs too"
                                                                    : "")
                                      : "no Q4_0 split-layout matrix: each block quantizes x (the producer measured -0.4 % on "
                                        "8B Q8_0)");
            g_.gemv_xq_all = g_.gemv_xq && o_.force.count("gemv.xq");
        }
        {
            // sample.fuse=gemv: decode's greedy pick (argmax over the vocabulary) inside the output
            // gemv: every thread keeps the best (value, row) it writes, each block's best goes to one
            // 64-bit atomicMax and the last block (ticket) writes the token (gemv.cu ARGMAX), instead
            // of an argmax kernel after it (one launch and a read of the logits less a token). The
            // logits are still written (the host reads them when asked). In one list, measured on the H200
            // (session 15, tg128): 1B Q8_0 1751.50 -> 1690.97 tok/s, 8B Q8_0 454.35 -> 454.60, 8B
            // Q4_0 694.66 -> 694.92: the fused gemv's grid (<= 2 blocks an SM, bounded atomics)
            // streams the head slower than the argmax launch it saves.
            // (with --no-fuse every task keeps its own kernel, this one included)
            // Session 34 (H200, tg128, one machine, two rounds): where the output head is a split-layout bulk gemv
            // the fused pick gains a little: 8B Q4_0 790.71 / 790.75 against 788.24 / 787.56, again 791.14 /
            // 790.94 against 788.14 / 788.35 (session 33: +0.3 %); 8B Q8_0 480.81 against 480.51. It took only
            // the argmax, so sample.draw fell back to the host. Since session 35 the fused pick is a second
            // decode list (Schedule::decode_greedy, its own graph) that greedy steps replay while sampled
            // steps keep the draw kernel's list: both gates hold together.
            // Session 36 (H100, tg128, one machine, the two lists alternated in one call): where the output
            // head is a bulk gemv it gains, where it is a quantized lanes gemv it loses: 8B Q4_0 620.36 /
            // 620.55 / 620.32 -> 621.33 / 621.36 / 621.38, 8B Q8_0 357.21 -> 357.41, 8B F16 193.26 ->
            // 193.42, 1B F16 1061.97 -> 1072.37 (bulk heads); 1B Q4_0 2181.09 -> 2151.30, 1B Q8_0
            // 1548.29 -> 1515.23 (lanes heads of 2048 columns). So on by default where decode's output
            // gemv is lowered with the bulk rings: decided here as `gemv` when nothing is missing, and
            // settled by lower_decode_greedy() from the lowered output step (sample_fuse_auto_).
            std::string why;
            if (!g_.gemv_warp) why = "gemv.reduce=tree: the pick reduces with warp shuffles";
            sample_fuse_auto_ = why.empty() && !o_.force.count("sample.fuse");
            g_.sample_fuse = forced_if("sample.fuse", "gemv", "kernel", true, why, kFusePickBulk);
        }
        {
            // sample.draw=device: decode's pick kernel reads the sampling parameters from a device
            // buffer and, at a temperature > 0, draws (top-k by per-block sorts and a one-warp merge,
            // then top-p, min-p, temperature and the seeded draw of runtime/sampler.cpp in double):
            // a sampled decode keeps its logits on the device and runs ahead like a greedy one (the
            // host path copies 4 x n_vocab bytes a token and sorts on the host). One kernel for both,
            // so one captured graph serves greedy and sampled requests; at temperature 0 it is the
            // argmax. The largest top-k is what the last block's shared memory holds (<= 64).
            std::string why;
            const int parts = sample_parts();
            const int64_t p2 = int64_t(pow2_at_least(sample_chunk(parts)));
            const int64_t room = int64_t(d_.max_shared_block()) - 64 * 32 - 1024;  // static: the k best, 3 terms each
            draw_kmax_ = int(std::min<int64_t>(64, room / (8 * int64_t(parts))));
            if (!warp32) why = fmt::format("warp size {} != 32: the merge is one warp's shuffles", d_.warp_size);
            else if (draw_kmax_ < 1 || 8 * p2 > room)
                why = fmt::format("{} logits a block: the sort needs more shared memory than {} bytes", p2,
                                  d_.max_shared_block());
            g_.sample_draw = forced_if("sample.draw", "device", "host", true, why,
                                       fmt::format("sampled decode (temperature > 0, top-k 1..{}, no penalties) draws "
                                                   "on the device: no logits to the host, steps queued ahead",
                                                   draw_kmax_));
            s_.draw_max_k = g_.sample_draw ? draw_kmax_ : 0;
        }
        {
            // step.advance=device: decode's pick kernel (argmax.cu FUSE_ADVANCE, or the fused gemv's
            // ARGMAX_ADVANCE) also writes the pick into the token slot and adds one to the position,
            // so a queued greedy step (decode_queue with the previous pick, the next position) goes
            // out as the graph launch alone: without the position copy and the device-to-device copy
            // of the pick that each step's launch waits for now. Steps with a host token or another
            // position still copy both first. On: measured on the H200 (session 15, tg128): 8B Q8_0
            // 454.35 -> 456.19 tok/s, 8B Q4_0 694.66 -> 700.76, 1B Q8_0 1751.50 -> 1791.25.
            g_.step_advance = forced("step.advance", "device", "host", true,
                                     "the pick kernel writes the pick into the token slot and advances the position: "
                                     "a queued greedy step is the graph launch alone (H200 tg128: 8B Q4_0 700.8 "
                                     "against 694.7 tok/s, 1B Q8_0 1791.3 against 1751.5)");
            s_.decode_advance = g_.step_advance;
        }
        s_.kv_type = o_.kv_f32 ? "float" : "half";
        s_.gates.push_back({"kv.type", s_.kv_type, o_.kv_f32 ? "half" : "float",
                            !o_.kv_f32        ? "half KV halves attention bytes"
                            : o_.force.count("kv.type") ? "--force-variant kv.type=float"
                                                        : "--kv-f32"});
    }

    // launch.pdl: every decode / prefill kernel calls griddepcontrol.wait before it reads what an
    // earlier kernel wrote (common.cuh), so all of them may be launched programmatically
    void mark_pdl(std::vector<KernelStep>& steps) const {
        if (!pdl_) return;
        for (KernelStep& k : steps) {
            k.pdl = true;
            k.variant.set("PDL", 1);
        }
    }

    void lower(const std::vector<Task>& tasks, std::vector<KernelStep>& out) {
        out_ = &out;
        tasks_ = &tasks;
        batch_ = false;
        xq_prev_.reset();  // (indices into the previous list)
        norm_prev_.reset();
        for (size_t i = 0; i < tasks.size();) i += lower_at(i);
        early_blocks(out);
    }

    // A bulk gemv right after one on fewer blocks than SMs (8B Q4_0: gate/up after attn_output on 76
    // of 132): its first blocks land on the SMs that one leaves free, microseconds before its end, and
    // fill their whole ring before the PDL wait (gemv.cu BULK_PRE_B: the free SMs' count); the others
    // keep their early slots, so that x is not queued behind more copies where a block lands late.
    // H100, 8B Q4_0 tg128, session 38, one machine, two rounds: gate/up's 32 631.01 / 630.67 against
    // 625.87 / 625.44; ffn_down's first 96 of 128 617.9, q/k/v's 110 618.9 (slower: those land
    // progressively, not on idle SMs); with attn_output on 76 SMs (gate/up's 56) 649.0 / 649.1.
    // H200, session 39, one machine: 820.4 against 801.8 with --no-gemv-early-blocks.
    // --gemv-early-blocks-for KIND=B sets one bulk gemv's count (blocks 0 .. B-1), --no-gemv-early-blocks
    // leaves the others at none
    void early_blocks(std::vector<KernelStep>& steps) const {
        if (batch_) return;
        for (size_t i = 0; i < steps.size(); ++i) {
            KernelStep& k = steps[i];
            if (k.variant.source != "cuda/gemv.cu" || !k.variant.has("BULK")) continue;
            const std::string kind(task_kind_name(t(size_t(k.tasks[0])).kind));
            if (const auto eb = o_.gemv_early_blocks_for.find(kind); eb != o_.gemv_early_blocks_for.end()) {
                if (eb->second > 0) k.variant.set("BULK_PRE_B", eb->second);
                continue;
            }
            if (i == 0 || !o_.gemv_early_blocks || !k.variant.has("BULK_PRE")) continue;
            const KernelStep& before = steps[i - 1];
            if (before.variant.source == "cuda/gemv.cu" && before.variant.has("BULK") && int(before.grid.x) < d_.sm_count)
                k.variant.set("BULK_PRE_B", d_.sm_count - int(before.grid.x));
        }
    }

    // --attn-tma-from N: decode's list again with the register kernel's attention, for the positions
    // below N (the tensor-map kernel loses ~1.5 % at depth 0 on 8B Q8_0 where the plan's context is
    // long: session 27). Not with --block-trace (its ids name one decode list).
    // By default (attn.kv=tma not forced) the positions below kTmaFromAuto, where the two kernels cross:
    // H200, 8B Q8_0, n_ctx 4224, tg128 (session 28), the tensor-map kernel against the register kernel:
    // depth 0 472.2 / 480.4 tok/s, 256 455.1 / 460.7, 512 455.8 / 459.1 (another machine), 1024 447.2 /
    // 441.1, 2048 440.8 / 434.0, 4096 432.3 / 416.8; with --attn-tma-from 2048: 481.0 at depth 0, 431.5
    // at 4096 (the crossover, interpolated: ~690 positions).
    static constexpr int kTmaFromAuto = 768;
    int tma_from() const {
        if (o_.attn_tma_from >= 0) return o_.attn_tma_from;
        return o_.force.count("attn.kv") ? 0 : kTmaFromAuto;
    }
    void lower_decode_short(const Plan& plan) {
        if (tma_from() <= 0 || !g_.attn_tma) return;
        g_.attn_tma = false;
        lower(plan.decode, s_.decode_short);
        g_.attn_tma = true;
        mark_pdl(s_.decode_short);
        JITLLM_CHECK(s_.decode_short.size() == s_.decode.size(), "--attn-tma-from: {} kernels against {}",
                     s_.decode_short.size(), s_.decode.size());
        s_.decode_short_below = std::min(tma_from(), p_.n_ctx);
    }

    // sample.fuse=gemv: decode_greedy (and decode_short_greedy beside decode_short), the same
    // lowering with the pick in the output gemv
    void lower_decode_greedy(const Plan& plan) {
        if (sample_fuse_auto_) {  // the default: the fused pick where decode's output gemv is bulk
            const KernelStep* head = nullptr;
            for (const KernelStep& k : s_.decode)
                for (int ti : k.tasks)
                    if (plan.decode[size_t(ti)].kind == K::Output) head = &k;
            g_.sample_fuse = o_.fuse && head && head->variant.has("BULK");
            for (GateDecision& d : s_.gates)
                if (d.gate == "sample.fuse" && !g_.sample_fuse) {
                    d.chosen = "kernel";
                    d.sibling = "gemv";
                    d.reason = o_.fuse ? kFusePickLanes : "--no-fuse: the pick keeps its own kernel";
                }
        }
        if (!g_.sample_fuse || !o_.fuse) return;  // (--no-fuse: no fused pick, so no second list either)
        greedy_list_ = true;
        lower(plan.decode, s_.decode_greedy);
        mark_pdl(s_.decode_greedy);
        if (!s_.decode_short.empty()) {
            g_.attn_tma = false;
            lower(plan.decode, s_.decode_short_greedy);
            g_.attn_tma = true;
            mark_pdl(s_.decode_short_greedy);
        }
        greedy_list_ = false;
        JITLLM_CHECK(s_.decode_greedy.size() + 1 == s_.decode.size(), "sample.fuse=gemv: {} kernels against {}",
                     s_.decode_greedy.size(), s_.decode.size());
        JITLLM_CHECK(s_.decode_short_greedy.size() == s_.decode_greedy.size() || s_.decode_short.empty(),
                     "sample.fuse=gemv: {} short kernels against {}", s_.decode_short_greedy.size(), s_.decode_greedy.size());
    }

    bool batch_small() const { return g_.batch_small; }
    bool batch_pdl() const { return g_.batch_pdl; }
    bool batch_xrows() const { return g_.batch_xrows; }

    // gate rope.angles=table: (cos, sin) floats for every (position, pair)
    size_t rope_table_bytes() const { return size_t(p_.n_ctx) * size_t(std::max(0, c_.n_rot / 2)) * 8; }
    // gate gemv.grid=capped: split-layout gemvs of at least this many columns
    static constexpr int kCapCols = 4096;
    // gate sample.fuse's reasons (its default is settled once decode's output step is lowered)
    static constexpr const char* kFusePickBulk =
        "greedy steps replay a second graph whose bulk output gemv picks the token (the argmax kernel's launch and "
        "logits read saved); sampled steps keep decode's list and its draw kernel (H100: 8B Q4_0 621.4 against "
        "620.4 tok/s, 1B F16 1072.4 against 1062.0)";
    static constexpr const char* kFusePickLanes =
        "decode's greedy pick in its own kernel after the output gemv, which also draws sampled tokens (the output "
        "gemv is not a bulk one: the fused pick's lanes grid streams it slower; H100: 1B Q8_0 1515.2 against "
        "1548.3 tok/s with --force-variant sample.fuse=gemv)";

    // gemv.load=bulk geometry (gemv.cu BULK): an item is `chunk` columns of a warp's `dr` rows
    // (quants, then scales; chunk: a multiple of 256 dividing the columns, at most 2048); each of
    // `warps` warps has a ring of `slots` items, 2 to 16, in --gemv-bulk-kb (default 200 KiB of
    // rings per block, less what the x copy of `x_bytes` and 2 KiB of static shared memory leave
    // of the block's opt-in maximum). The largest chunk that still leaves 4 slots (3 items in
    // flight while one is read; --gemv-bulk-min-slots N: N), else the smallest.
    struct Bulk {
        int chunk = 0, slots = 0, ring_bytes = 0;
        bool fits = false;  // 2 slots of the smallest item at least (else the gemv keeps `lanes`)
    };
    static bool is_plain(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16; }
    // bytes of `c` columns of one row as the rings hold them: split Q4_0 / Q8_0 quants + f16
    // scales, or plain elements (gemv.cu BULK_RB, layer_tail.cu LT_RB)
    static int chunk_bytes(GgmlType t, int c) {
        return t == GgmlType::Q4_0 ? c / 2 + c / 16 : t == GgmlType::Q8_0 ? c + c / 16 : c * int(type_traits(t).type_size);
    }
    Bulk bulk_shape(GgmlType t, int cols, int dr, int warps, int64_t x_bytes, int kb = 0) const {
        const int64_t room = int64_t(d_.max_shared_block()) -
                             (x_bytes + 127) / 128 * 128 - 2048;
        if (kb <= 0) kb = o_.gemv_bulk_kb > 0 ? o_.gemv_bulk_kb : 200;
        const int min_slots = o_.gemv_bulk_min_slots > 0 ? o_.gemv_bulk_min_slots : 4;  // --gemv-bulk-min-slots
        const int budget = int(std::min<int64_t>(room, int64_t(kb) * 1024));
        auto item = [&](int c) { return dr * chunk_bytes(t, c); };
        Bulk b;
        for (int c = 256; c <= std::min(cols, 2048); c += 256)
            if (cols % c == 0 && (b.chunk == 0 || budget / (warps * item(c)) >= min_slots)) b.chunk = c;
        if (b.chunk == 0) return b;  // columns not a multiple of 256
        b.slots = std::clamp(budget / (warps * item(b.chunk)), 2, 16);
        b.ring_bytes = warps * b.slots * item(b.chunk);
        b.fits = int64_t(b.ring_bytes) <= room;
        return b;
    }

    // The rope kernels' angle argument: the frequency factors (rope.angles=computed: angles per
    // pair), or the host-filled (cos, sin) table (rope.angles=table, variant define ROPE_TABLE=1)
    KArg rope_angles(Variant& v, const WeightTensor* freq) {
        if (!g_.rope_table) return weight(freq);
        auto& rt = s_.rope_table;
        JITLLM_CHECK(rt.n_pos == 0 || rt.freq_factors == freq, "one rope table per model");
        rt.n_pos = p_.n_ctx;
        rt.n_rot = c_.n_rot;
        rt.base = c_.rope_base;
        rt.freq_factors = freq;
        s_.scratch["rope_table"] = rope_table_bytes();
        v.set("ROPE_TABLE", 1);
        return scratch("rope_table");
    }

    // The batch phase: row-wise kernels (grid over rows) and matrix-matrix products; small: the
    // products as row-batched gemv kernels (the list for steps of up to --batch-small-rows rows).
    // small: the small-step gemv list (gate batch.small); xrows > 1: its split-layout Q4_0/Q8_0
    // products read each weight row once for up to xrows of a step's rows (gate batch.xrows)
    void lower_batch(const std::vector<Task>& tasks, size_t body, std::vector<KernelStep>& out, size_t& out_body,
                     bool small = false, int xrows = 0) {
        small_ = small;
        xrows_ = small ? xrows : 0;
        x16_next_ = x16_now_ = false;
        out_ = &out;
        tasks_ = &tasks;
        batch_ = true;
        xq_prev_.reset();
        norm_prev_.reset();
        out_body = 0;
        for (size_t i = 0; i < tasks.size();) {
            if (i == body) out_body = out.size();
            i += lower_batch_at(i);
        }
        if (body >= tasks.size()) out_body = out.size();
        JITLLM_CHECK(norm_i_ == SIZE_MAX, "a norm was not fused into a product");
        batch_ = false;
        small_ = false;
        xrows_ = 0;
    }

private:
    const Task& t(size_t i) const { return (*tasks_)[i]; }
    bool is(size_t i, K k) const { return i < tasks_->size() && t(i).kind == k; }
    bool pdl_ = false;
    int draw_kmax_ = 0;  // sample.draw=device: argmax.cu KMAX
    // decode's pick kernel: one block per SM, each a chunk of the logits (argmax.cu CHUNK)
    int sample_parts() const { return std::max(1, std::min(1024, d_.sm_count)); }
    int sample_chunk(int parts) const { return ((c_.n_vocab + parts - 1) / parts + 3) / 4 * 4; }
    static int64_t pow2_at_least(int64_t n) {
        int64_t p = 1;
        while (p < n) p *= 2;
        return p;
    }
    // Whether the matrices of one kernel are in the split layout (all or none: same type/cols)
    bool split(const std::vector<const WeightTensor*>& ws) const {
        int n = 0, in = 0;
        for (const WeightTensor* w : ws)
            if (w) { ++n; in += int(s_.split_weights.count(w)); }
        JITLLM_CHECK(in == 0 || in == n, "kernel mixes split and block layouts ({} of {})", in, n);
        return n > 0 && in == n;
    }
    bool split(const std::vector<KArg>& ws) const {
        std::vector<const WeightTensor*> v;
        for (const KArg& a : ws) v.push_back(a.kind == KArg::Kind::Weight ? a.w : nullptr);
        return split(v);
    }

    KernelStep& add(std::vector<size_t> idx, const std::string& algo, Variant v) {
        std::vector<const Task*> ts;
        for (size_t i : idx) ts.push_back(&t(i));
        KernelStep k;
        k.group = group_name(ts);
        k.symbol = k.group + "__" + algo;
        v.symbol = k.symbol;
        k.variant = std::move(v);
        for (size_t i : idx) {
            k.tasks.push_back(int(i));
            k.flops += t(i).flops;
        }
        k.layer = t(idx[0]).layer;
        out_->push_back(std::move(k));
        return out_->back();
    }

    // the attn_output matrix of task i's layer after task i (null: none)
    const WeightTensor* attn_output_after(size_t i) const {
        for (size_t j = i + 1; j < tasks_->size() && t(j).layer == t(i).layer; ++j)
            if (t(j).kind == K::AttnOutput && !t(j).w.empty()) return t(j).w[0];
        return nullptr;
    }

    // whether that attn_output matrix has 8 bits a weight or more (split-KV attention then leaves a
    // quarter of the SMs to the gemv's blocks: both decode attention kernels' split counts)
    bool wide_attn_output_after(size_t i) const {
        const WeightTensor* wo = attn_output_after(i);
        return wo && type_traits(wo->type).type_size >= type_traits(wo->type).block_size;
    }

    // attention sees only the last sliding_window positions (fewer than the cache holds)
    bool windowed() const { return c_.sliding_window > 0 && c_.sliding_window < p_.n_ctx; }

    static KArg slot(Slot s, uint64_t off = 0) { KArg a; a.kind = KArg::Kind::Slot; a.slot = s; a.offset = off; return a; }
    static KArg weight(const WeightTensor* w, uint64_t off = 0) {
        KArg a;
        if (!w) return a;
        a.kind = KArg::Kind::Weight; a.w = w; a.offset = off; return a;
    }
    static KArg f32(float f) { KArg a; a.kind = KArg::Kind::F32; a.f = f; return a; }
    static KArg scratch(const std::string& n) { KArg a; a.kind = KArg::Kind::Scratch; a.scratch = n; return a; }
    static KArg null() { return KArg{}; }
    static KArg host_ring() { KArg a; a.kind = KArg::Kind::HostRing; return a; }

    // --- rms_norm: rows of D floats, in place allowed ---
    void rms_norm(size_t i, Slot in, Slot outs, int rows, int D, const WeightTensor* w, float eps, int tag) {
        const int block = D >= 1024 ? 256 : 128;
        Variant v("cuda/rms_norm.cu", "");
        v.set("D", D).set("BLOCK", block).set("REDUCE", int(g_.norm_warp)).set("HAS_WEIGHT", int(w != nullptr));
        auto& k = add({i}, std::string("rms_norm_") + (g_.norm_warp ? "warp" : "tree"), v);
        k.grid = Dim3(unsigned(rows)); k.block = Dim3(unsigned(block));
        k.args = {slot(in), weight(w), slot(outs), f32(eps)};
        k.bytes = uint64_t(rows) * D * 8 + (w ? uint64_t(D) * 4 : 0);
        (void)tag;
    }

    // --- gemv with fusions ---
    struct Gemv {
        std::vector<const WeightTensor*> w;     // matrices (may point into one tensor)
        std::vector<uint64_t> w_off;            // byte offsets
        std::vector<int> rows;                  // rows per matrix
        std::vector<const WeightTensor*> bias;  // per matrix or null
        std::vector<Slot> y;                    // outputs
        Slot x = Slot::Xb;
        const WeightTensor* norm_w = nullptr;   // NORM_IN
        float eps = 0;
        int epi = 0;                            // 0 plain, 1 residual, 2 swiglu, 3 scale
        float scale = 1.0f;
        int up_offset_rows = 0;
        // EPI=4 (q/k/v only): RoPE on q and k, k and v into this layer's cache (attn_rope +
        // attn_kv_store fused into the q/k/v product)
        bool rope = false;
        int rope_layer = -1;
        const WeightTensor* rope_freqs = nullptr;
        // sample.fuse=gemv (the output gemv, decode): the greedy pick too (gemv.cu ARGMAX)
        bool argmax = false;
        // --batch-xrows (the small-step list): each block multiplies the weight rows it reads with
        // up to this many activation rows (gemv.cu XROWS; split-layout Q4_0/Q8_0, no bulk rings)
        int xrows = 0;
    };
    void gemv(std::vector<size_t> idx, const Gemv& g) {
        const WeightTensor* w0 = g.w[0];
        const int cols = int(w0->cols);
        const int n_mat = int(g.w.size());
        const bool warp = g_.gemv_warp;
        const bool wsplit = split(g.w);
        const bool plain = is_plain(w0->type) || wsplit;
        const int out_rows = g.epi == 2 ? g.rows[0] : g.rows[0] + (n_mat > 1 ? g.rows[1] : 0) + (n_mat > 2 ? g.rows[2] : 0);
        // x in shared memory when it fits beside the kernel's up-to-40 KiB weight staging
        const bool x_smem = int64_t(cols) * 4 + 40 * 1024 <=
                            int64_t(d_.max_shared_block());
        // gemv.load=bulk: decode's gemvs (a warp per row set) stream their rows into per-warp
        // shared-memory rings, one block per SM; by default the split-layout gemvs of >= 4096
        // columns and rows and every plain-type one with x in shared memory and whole 256-column
        // chunks; forced: every split-layout gemv too; where x and the smallest rings fit
        const bool plain_type = is_plain(w0->type);
        const int64_t bulk_x = act_q8_type(w0->type) ? int64_t(cols) + cols / 32 * 8 : int64_t(cols) * 4;
        // (--batch-bulk: the batch phase's gemv list too; each row of a step its own blocks)
        const bool bulk_able = warp && (!batch_ || (small_ && o_.batch_bulk)) &&
                               (wsplit || (plain_type && x_smem && cols % 256 == 0)) &&
                               bulk_shape(w0->type, cols, 2, 16, bulk_x).fits;
        // --gemv-lanes-for KIND: this kernel keeps the lanes loop (by its first task's kind)
        const std::string first_kind(task_kind_name(t(idx[0]).kind));
        const bool bulk = g_.gemv_bulk && bulk_able &&
                          (g_.gemv_bulk_all || plain_type || (wsplit && cols >= kCapCols && out_rows >= kCapCols));
        // --batch-xrows: a block reads each weight row once for up to xrows activation rows, their
        // int8 copies side by side in shared memory
        // (as many rows as fit shared memory beside 2 KiB of static: halved from --batch-xrows until
        // they do; none below 2: each row reads the weights then)
        // (bulk_x: one row's int8 copy, gemv.cu GEMV_XQB)
        int xrows = g.xrows > 1 && batch_ && wsplit && act_q8_type(w0->type) && warp && !bulk ? g.xrows : 0;
        while (xrows > 1 && xrows * bulk_x + 2048 > int64_t(d_.max_shared_block())) xrows /= 2;
        const bool xr = xrows > 1;
        // --gemv-block: threads per block for the plain-type and split loops (the staged
        // quantized loops size their staging by it: they keep 256); bulk: 16 warps (H200: 8B
        // Q4_0 618 tok/s with 512 threads, 509 with 256, 569 with 1024)
        const bool after_attn = !batch_ && !out_->empty() && !out_->back().tasks.empty() &&
                                t(size_t(out_->back().tasks.back())).kind == K::Attn;
        const int block = o_.gemv_block > 0 && plain ? o_.gemv_block : !bulk && !xr ? 256 : 512;
        // rows per block pass: each warp takes R rows (REDUCE=1) or the block takes R (REDUCE=0);
        // bulk: 2 weight rows per warp item (gate/up: one output row)
        // (RoPE in the epilogue: an even count, the rotation pairs (2i, 2i + 1) within a pass;
        // --gemv-rows 1 and 3 become 2 and 4 there)
        int r = o_.gemv_rows > 0 ? o_.gemv_rows : bulk && g.epi == 2 ? 1 : 2;
        // --gemv-rows-for KIND=N: this kernel's own count (e.g. ffn_down=4: x's shared-memory reads a row halved)
        if (const auto rf = o_.gemv_rows_for.find(first_kind); rf != o_.gemv_rows_for.end()) r = rf->second;
        if (g.rope && r % 2 != 0) ++r;
        const int rpb = warp ? (block / 32) * r : r;
        const bool bias = !g.bias.empty() && g.bias[0];
        Variant v("cuda/gemv.cu", "");
        v.set("WTYPE", wtype_define(w0->type)).set("COLS", cols).set("N_MAT", n_mat);
        if (wsplit) v.set("WSPLIT", 1);
        v.set("ROWS0", g.rows[0]);
        if (n_mat > 1) v.set("ROWS1", g.rows[1]);
        if (n_mat > 2) v.set("ROWS2", g.rows[2]);
        v.set("BLOCK", block).set("ROWS_PER_BLOCK", rpb).set("REDUCE", int(warp));
        v.set("X_SMEM", int(x_smem && !act_q8_type(w0->type)));  // Q4_0/Q8_0: int8 x in smem
        v.set("NORM_IN", int(g.norm_w != nullptr)).set("HAS_BIAS", int(bias)).set("EPI", g.epi);
        if (g.rope) {
            JITLLM_CHECK(n_mat == 3 && g.epi == 0, "rope fusion needs the three q/k/v matrices");
            v.set("EPI", 4).set("HEAD_DIM", c_.head_dim).set("N_ROT", c_.n_rot)
                .set("HAS_FREQ_FACTORS", int(g.rope_freqs != nullptr)).set("KV_T", s_.kv_type);
        }
        const KArg rope_arg = g.rope ? rope_angles(v, g.rope_freqs) : null();
        if (g.epi == 1) v.set("RES_SCALE", fstr(g.scale));
        if (g.epi == 3) v.set("OUT_SCALE", fstr(g.scale));
        if (g.up_offset_rows) v.set("UP_OFFSET_ROWS", g.up_offset_rows);
        if (xr) v.set("XROWS", xrows);
        // Register cap: 2 resident blocks per SM doubles the bytes in flight of the plain-type
        // loops (measured on the H200: 1B F16 723 -> 1085 tok/s, 8B F16 179 -> 235 tok/s); the
        // staged quantized loops lose a little with it, so they keep the compiler's choice.
        // (512 resident threads per SM: 2 blocks of 256, 1 of 512, 4 of 128)
        const int min_blocks = o_.gemv_min_blocks > 0 ? o_.gemv_min_blocks : (plain ? std::max(1, 512 / block) : 0);
        if (min_blocks > 0) v.set("MIN_BLOCKS", min_blocks);
        if (o_.gemv_prefetch > 0) v.set("PREFETCH", o_.gemv_prefetch);
        int bulk_ring = 0;
        if (bulk) {
            const Bulk b = bulk_shape(w0->type, cols, g.epi == 2 ? 2 * r : r, block / 32, bulk_x);
            if (!b.fits)
                fail_usage("gemv.load=bulk with {} threads and {} rows per warp: {} bytes of rings beside x do not fit "
                           "the {} bytes of shared memory per block (lower --gemv-block or --gemv-rows)",
                           block, r, b.ring_bytes, d_.max_shared_block());
            v.set("BULK", 1).set("BULK_CH", b.chunk).set("BULK_S", b.slots);
            // slots a warp fills before its PDL wait (--gemv-early-slots; the rest after the x
            // prologue). The block trace (session 24) showed the prologue's x loads queued 2-3 µs
            // behind the ring's first fill. H200, 8B Q4_0 tg128, two rounds: 4 of 5 slots first
            // 727.1 / 726.9 tok/s, 3: 725.0 / 725.0, all 5: 711.5 / 711.4 (2: 714.6, 1: 699.9);
            // 8B Q8_0 with 3: 455.7 against 456.6 with all (2: 446.0, 1: 433.8).
            // With the late slots issued as soon as the x prologue's loads are out
            // (BULK_FILL_AT_LOADS, --gemv-fill-at-loads, session 25, two rounds): Q4_0 2 slots
            // 742.1 / 741.7 against 723.7 / 724.0 with 4 and no hook (3: 721.4, 4: 706.7); Q8_0 3
            // slots 475.1 / 474.9 against 458.3 / 457.6 with all (2: 468.9, 4: 463.0)
            // (--gemv-early-slots-for KIND=N: this kernel's own count, by its first task's kind)
            const bool early_default = !batch_ && o_.gemv_fill_at_loads;
            const auto for_kind = o_.gemv_early_slots_for.find(first_kind);
            const int pre = for_kind != o_.gemv_early_slots_for.end()           ? for_kind->second
                            : o_.gemv_early_slots > 0                             ? o_.gemv_early_slots
                            : early_default && w0->type == GgmlType::Q4_0 ? 2
                            : early_default && w0->type == GgmlType::Q8_0 ? 3
                                                                          : 0;
            if (pre > 0 && pre < b.slots) {
                v.set("BULK_PRE", pre);
                if (o_.gemv_fill_at_loads) v.set("BULK_FILL_AT_LOADS", 1);
            }
            // each lane's x units of every chunk in registers (gemv.cu XREG; --no-gemv-x-regs: off) where
            // they take at most ~40 registers: 4 units of Q4_0 (two int8 planes and (d, 8 * sum)), 8 of
            // Q8_0. The same bits. H100, tg128, session 37: 8B Q4_0 627.80 / 627.76 against 622.18 /
            // 622.28 tok/s (+0.9 %), 8B Q8_0 358.94 against 358.10
            if (o_.gemv_x_regs && wsplit && !batch_ && !xr && act_q8_type(w0->type)) {
                const bool q4 = w0->type == GgmlType::Q4_0;
                const int units = (q4 ? b.chunk / 2 : b.chunk) / 16;  // 16-byte units of a row chunk
                const int nx = static_cast<int>(cols / b.chunk) * ((units + 31) / 32);
                if (nx <= (q4 ? 4 : 8)) v.set("XREG", 1);
            }
            bulk_ring = b.ring_bytes;
        } else if (!xr && (g_.gemv_early_all || (g_.gemv_early && wsplit))) {
            v.set("EARLY_LOAD", 1);
        }
        // The norm weight of a normed Q4_0 / Q8_0 gemv's x prologue loaded before the PDL wait (gemv.cu NW_EARLY):
        // by default with gemv.early=load for the gemvs that keep the lanes loop (H200, tg128, session 34, one
        // machine: 1B Q4_0 2400.44 against 2276.76 tok/s); the bulk gemvs only with --gemv-norm-early (8B Q4_0
        // 779.21 / 779.24 against 788.14 / 788.35, Q8_0 480.56 against 480.51)
        if (g.norm_w && act_q8_type(w0->type) && !xr && !batch_ &&
            (o_.gemv_norm_early > 0 || (o_.gemv_norm_early < 0 && g_.gemv_early && !bulk)))
            v.set("NW_EARLY", 1);
        if (wsplit && o_.gemv_split_pipe >= 0 && !xr) v.set("GEMV_SPLIT_PIPE", o_.gemv_split_pipe);
        // row sets round the blocks first: --gemv-warp-major, and by default for plain-type bulk
        // gemvs (session 11, 8B F16 on two machines: 247.60 -> 248.07 and 251.23 -> 252.76 tok/s;
        // for the split types it measured +0.4 % on Q8_0 and -3.0 % on Q4_0, session 10)
        // (--batch-xrows: too; its blocks are one an SM)
        if ((bulk && plain_type) || xr) v.set("WARP_MAJOR", 1);
        if (o_.gemv_q4_shift && wsplit && w0->type == GgmlType::Q4_0) v.set("GEMV_Q4_SHIFT", 1);
        if (g.argmax) {
            JITLLM_CHECK(n_mat == 1 && (g.epi == 0 || g.epi == 3) && warp && !batch_, "the fused pick needs the decode output gemv");
            v.set("ARGMAX", 1);
            if (g_.step_advance) v.set("ARGMAX_ADVANCE", 1);
            s_.scratch["argmax_key"] = 16;
            s_.scratch["token_out"] = 16;
        }
        if (g_.gemv_trigger && (g_.gemv_trigger_all || (bulk && wsplit))) v.set("TRIGGER_EARLY", 1);
        // --kv-l2-prefetch: the q/k/v gemv (RoPE + KV store) prefetches the earlier K/V rows into
        // L2 for the attention after it (gemv.cu KV_PF; decode, whole-cache attention only). H200,
        // 8B Q8_0 at depth 4096 (session 13): 396.70 -> 396.91 (last) / 392.74 (start): off
        if (o_.kv_l2_prefetch > 0 && g.rope && bulk && !batch_ && !windowed())
            v.set("KV_PF", o_.kv_l2_prefetch);
        if (wsplit && o_.gemv_split_units > 0) v.set("GEMV_SPLIT_U", o_.gemv_split_units);
        const std::string algo = std::string("gemv_") + (warp ? "warp_" : "tree_") + lowercase(type_name(w0->type)) +
                                 (wsplit ? "_split" : "") + (bulk ? "_bulk" : "");
        auto& k = add(idx, algo, v);
        k.grid = Dim3(unsigned((out_rows + rpb - 1) / rpb));
        // bulk: one block per SM
        if (bulk) k.grid.x = std::min(k.grid.x, unsigned(d_.sm_count));
        // gemv.grid=capped: at most 2 blocks per SM, each looping over its passes (one x prologue per
        // block instead of one per ROWS_PER_BLOCK rows)
        if (g_.gemv_cap_all || (g_.gemv_cap && wsplit && cols >= kCapCols))
            k.grid.x = std::min(k.grid.x, unsigned(2 * d_.sm_count));
        // --gemv-grid-for KIND=N: this kernel on at most N blocks (e.g. attn_output on half the SMs,
        // the next kernel's blocks landing on the other half while it runs). Default: a Q4_0 bulk
        // gemv right after decode attention (attn_output: one partial pass, its rows prefetched
        // beside attention) on 76 of every 132 SMs, so gate/up's blocks land on the others at
        // attention's end and (early_blocks) fill their whole rings there. H200, 8B Q4_0 tg128, one
        // machine (session 26, before early_blocks): 100 SMs 752.2 against 745.2 / 745.3 on all 132
        // (92: 747.3, 96: 748.3, 104: 751.1, 108: 746.0, 116: 744.5, 124: 743.5, 66: 732.8); 8B Q8_0
        // 478.9 against 479.6 / 480.2: not applied. H100, session 38, with early_blocks, one machine,
        // two rounds: 76 SMs 648.97 / 649.07 against 635.69 / 635.28 on 100 (84: 644.9 / 644.8, 92:
        // 639.4 / 639.4, 66: 646.3 / 646.0); H200, session 39, one machine: 820.4 against 809.3 on 100
        if (const auto gf = o_.gemv_grid_for.find(first_kind); gf != o_.gemv_grid_for.end())
            k.grid.x = std::min(k.grid.x, unsigned(gf->second));
        else if (bulk && after_attn && w0->type == GgmlType::Q4_0)
            k.grid.x = std::min(k.grid.x, unsigned(std::max(1, d_.sm_count * 76 / 132)));
        // --gemv-cluster-for KIND=N: clusters of N blocks the kernel does not use, so its blocks hold
        // whole TPCs and leave whole ones to the next kernel's clusters (gemv.xq's pairs)
        if (const auto cf = o_.gemv_cluster_for.find(first_kind); cf != o_.gemv_cluster_for.end() && cf->second > 1) {
            k.grid.x = std::max(1u, k.grid.x / unsigned(cf->second)) * unsigned(cf->second);
            k.cluster = Dim3(unsigned(cf->second), 1, 1);
        }
        // sample.fuse=gemv: one atomicMax and one ticket a block, so at most 2 blocks an SM (looping)
        if (g.argmax) k.grid.x = std::min(k.grid.x, unsigned(2 * d_.sm_count));
        // --batch-xrows: one block an SM (x of every row in shared memory, the accumulators of
        // every row in registers), each looping over its passes
        if (xr) k.grid.x = std::min(k.grid.x, unsigned(d_.sm_count));
        k.block = Dim3(unsigned(block));
        // Q4_0 / Q8_0: x quantized to Q8_0 blocks in shared memory (gemv.cu GEMV_XQ8; XROWS: a copy a row)
        k.smem = act_q8_type(w0->type) ? unsigned(cols) + unsigned(cols / 32) * 8 : x_smem ? unsigned(cols) * 4 : 0;
        if (xr) k.smem *= unsigned(xrows);
        if (bulk) k.smem = unsigned((k.smem + 127) / 128 * 128) + unsigned(bulk_ring);  // gemv.cu BULK_XBYTES + rings
        k.args.clear();
        for (int m = 0; m < 3; ++m)
            k.args.push_back(m < n_mat ? weight(g.w[size_t(m)], g.w_off[size_t(m)]) : null());
        for (int m = 0; m < 3; ++m) k.args.push_back(m < n_mat && bias ? weight(g.bias[size_t(m)]) : null());
        for (int m = 0; m < 3; ++m) k.args.push_back(m < int(g.y.size()) ? slot(g.y[size_t(m)]) : null());
        k.args.push_back(slot(g.x));
        k.args.push_back(weight(g.norm_w));
        k.args.push_back(g.epi == 1 ? slot(g.y[0]) : null());
        k.args.push_back(f32(g.eps));
        k.args.push_back(g.rope ? slot(Slot::Pos) : null());
        k.args.push_back(g.rope ? kcache(g.rope_layer) : null());
        k.args.push_back(g.rope ? vcache(g.rope_layer) : null());
        k.args.push_back(rope_arg);
        k.args.push_back(f32(g.rope ? c_.rope_base : 0.0f));
        if (xr) k.args.push_back(rows_arg());  // n_rows: the step's
        if (g.argmax) {  // y1: the pick's key and ticket, y2: the token (gemv.cu ARGMAX)
            k.args[7] = scratch("argmax_key");
            k.args[8] = scratch("token_out");
            if (g_.step_advance) {  // ARGMAX_ADVANCE: pos_ptr the position slot, k_cache the token slot,
                k.args[13] = slot(Slot::Pos);  // v_cache the host's pinned ring of picks
                k.args[14] = slot(Slot::Token);
                k.args[15] = host_ring();
            }
        }
        uint64_t b = uint64_t(cols) * 4 + uint64_t(out_rows) * 4;
        const int w_rows = g.epi == 2 && n_mat == 1 ? 2 * g.rows[0] : g.rows[0] + (n_mat > 1 ? g.rows[1] : 0) + (n_mat > 2 ? g.rows[2] : 0);
        b += uint64_t(w_rows) * w0->row_bytes;
        if (g.norm_w) b += uint64_t(cols) * 4;
        if (g.epi == 1 || bias) b += uint64_t(out_rows) * 4;
        if (g.rope) b += 2 * uint64_t(c_.kv_dim()) * (o_.kv_f32 ? 4 : 2);  // the cache rows
        k.bytes = b;
        // gate gemv.xq=producer: this gemv's x quantized by the SwiGLU gemv just before it
        const bool block_major = !k.variant.has("WARP_MAJOR") && !k.variant.has("LAST_SPREAD");
        const size_t at = out_->size() - 1;
        const bool xq_consumer = g_.gemv_xq && (w0->type == GgmlType::Q4_0 || g_.gemv_xq_all) && !batch_ && bulk &&
                                 wsplit && act_q8_type(w0->type) && !xr && !g.norm_w && !k.variant.has("XQ_IN");
        if (xq_consumer && xq_prev_ && xq_prev_->at + 1 == at && xq_prev_->y == g.x && xq_prev_->rows == cols)
            xq_link((*out_)[at - 1], k, *xq_prev_, w0->type);
        else if (xq_consumer && at > 0 && g.x == Slot::Att && !o_.no_attn_xq && cols == c_.n_heads * c_.head_dim)
            attn_xq_link((*out_)[at - 1], k, cols, w0->type);
        xq_prev_.reset();
        if (bulk && warp && !batch_ && !xr && g.epi == 2 && block_major && !g.argmax && g.y.size() == 1)
            xq_prev_ = XqProducer{at, g.y[0], g.rows[0], rpb};
        // --gemv-xq-norm: a normed gemv (q/k/v, gate/up, the output head) whose x, the residual stream,
        // the kernel just before it wrote (the embedding, or a residual gemv whose block pass is one
        // group of 32 rows: 8B attn_output and ffn_down) takes x quantized from there
        const bool norm_consumer = g_.gemv_xq && o_.gemv_xq_norm && (w0->type == GgmlType::Q4_0 || g_.gemv_xq_all) &&
                                   !batch_ && bulk && wsplit && act_q8_type(w0->type) && !xr && g.norm_w &&
                                   !k.variant.has("XQ_IN");
        if (norm_consumer && norm_prev_ && norm_prev_->at + 1 == at && norm_prev_->y == g.x && norm_prev_->rows == cols)
            xq_norm_link((*out_)[at - 1], k, *norm_prev_, w0->type, g.norm_w);
        norm_prev_.reset();
        if (bulk && warp && !batch_ && !xr && g.epi == 1 && n_mat == 1 && block_major && !g.argmax && rpb == 32 &&
            out_rows % 32 == 0 && !k.variant.has("XQ_OUT"))
            norm_prev_ = NormProducer{at, g.y[0], out_rows, false};
    }

    // --gemv-xq-norm (under gemv.xq=producer): `p`, the embedding or a residual gemv whose block pass
    // is one group of 32 rows, writes the residual stream times the norm weight `nw` of the normed gemv
    // `c` after it quantized, and each group's sum of squares (common/xq8_group.cuh
    // xq8_group_store_norm: embed.cu XQ_OUT, gemv.cu XQ_NORM); c (gemv.cu XQ_IN with NORM_IN) copies it,
    // sums the groups' sums for its rms and scales each group's d. Left as they are where the producer
    // has more than 4 passes (its two slot arrays beside the rings' static shared memory)
    struct NormProducer {
        size_t at;   // index in out_
        Slot y;      // its output (the residual stream)
        int rows;    // its output rows (the consumer's columns)
        bool embed;  // embed.cu (else gemv.cu)
    };
    void xq_norm_link(KernelStep& p, KernelStep& c, const NormProducer& x, GgmlType ctype, const WeightTensor* nw) {
        const int planes = int(ctype == GgmlType::Q4_0);
        if (x.embed) {
            if (p.grid.y != 1) return;
            p.variant.set("XQ_OUT", 1).set("XQ_PLANES", planes);
            p.args[3] = weight(nw);
            p.args[4] = xq_consume(c, "norm_xq", x.rows, ctype, 0, true);
            return;
        }
        const int np = (x.rows + int(p.grid.x) * 32 - 1) / (int(p.grid.x) * 32);
        if (np > 4) return;
        p.variant.set("XQ_OUT", 1).set("XQ_NORM", 1).set("XQ_CL", 1).set("XQ_NP", np).set("XQ_C", x.rows)
            .set("XQ_PLANES", planes);
        p.args[10] = weight(nw);                                            // norm_w: the consumer's
        p.args[7] = xq_consume(c, "norm_xq", x.rows, ctype, 0, true);  // y1
    }

    // gemv.xq=producer: the SwiGLU gemv `p` (the XqProducer) quantizes its output for `c`, whose x it
    // is: p gets XQ_OUT (its y1 the scratch buffer; a cluster of XQ_CL blocks covers a group of 32
    // rows a pass), c gets XQ_IN (its x the same buffer). Left as they are where the shapes do not
    // allow it (a pass of a block not a divisor of 32 rows, more than 8 passes: the leader's slots
    // beside the 2 KiB of static shared memory the rings leave)
    struct XqProducer {
        size_t at;   // index in out_
        Slot y;      // its output
        int rows;    // its output rows (the consumer's columns)
        int rpb;     // output rows a block pass
    };
    void xq_link(KernelStep& p, KernelStep& c, const XqProducer& x, GgmlType ctype) {
        if (x.rpb <= 0 || 32 % x.rpb != 0 || x.rows % 32 != 0) return;
        // a block's pass of 32 rows: a group a pass; 16 (gate/up): a cluster of 2 blocks a group of
        // each pass (16 + 16 rows, the other block's by asynchronous stores into the leader's shared
        // memory)
        const int cl = 32 / x.rpb;
        if (cl > 2 || int(p.grid.x) % cl != 0) return;
        const int per_pass = int(p.grid.x) * x.rpb;
        const int np = (x.rows + per_pass - 1) / per_pass;
        if (np > 8) return;
        if (cl > 1 && d_.clusters_1pm[size_t(cl)] > 0 && d_.clusters_1pm[size_t(cl)] * cl < int(p.grid.x)) return;
        p.variant.set("XQ_OUT", 1).set("XQ_CL", cl).set("XQ_NP", np).set("XQ_C", x.rows)
            .set("XQ_PLANES", int(ctype == GgmlType::Q4_0));
        if (cl > 1) {
            p.cluster = Dim3(unsigned(cl), 1, 1);
            // the kernel before it (8B Q4_0: attn_output on 76 of 132 SMs) in clusters of 2 as well,
            // which it does not use: its blocks then hold whole TPCs and the pairs land on the free
            // ones (H200 8B Q4_0 tg128, session 30: 770.1 / 770.3 against 758.7 / 758.6); not where
            // --gemv-cluster-for names that kernel's kind
            if (x.at > 0) {
                KernelStep& before = (*out_)[x.at - 1];
                const auto kind = task_kind_name(t(size_t(before.tasks[0])).kind);
                if (before.variant.source == "cuda/gemv.cu" && before.cluster.x * before.cluster.y * before.cluster.z == 1 &&
                    before.grid.x % 2 == 0 && int(before.grid.x) < d_.sm_count && before.layer == p.layer &&
                    !o_.gemv_cluster_for.count(std::string(kind)))
                    before.cluster = Dim3(2, 1, 1);
            }
        }
        if (o_.gemv_xq_lag != 1) p.variant.set("XQ_LAG", o_.gemv_xq_lag);  // --gemv-xq-lag
        p.args[7] = xq_consume(c, "gemv_xq", x.rows, ctype, 4);  // y1
    }

    // gemv.xq=producer's consumer c (gemv.cu XQ_IN): its x, `cols` values quantized, from the scratch
    // buffer `buf` (sized here), which it returns for the producer's argument; its early ring slots
    // below
    // (norm: the groups' sums of squares after them, xq8_group_store_norm; pre 0: the slots as they are)
    KArg xq_consume(KernelStep& c, const char* buf, int cols, GgmlType ctype, int pre, bool norm = false) {
        const uint64_t bytes = (uint64_t(cols) + uint64_t(cols / 32) * (norm ? 12 : 8) + 15) / 16 * 16;
        auto& sz = s_.scratch[buf];
        sz = std::max<uint64_t>(sz, bytes);
        c.variant.set("XQ_IN", 1);
        c.args[9] = scratch(buf);  // x
        xq_consumer_slots(c, ctype, pre);
        return scratch(buf);
    }

    // gemv.xq=producer's Q4_0 consumer: its x prologue is one bulk copy, so more of its ring goes out
    // before its PDL wait than the default 2 of 5 slots: ffn_down 4, attn_output 3 (H200, 8B Q4_0
    // tg128, session 31, two rounds on one machine: 785.3 / 785.2 against 770.7 / 770.9 with 2 and
    // 2; ffn_down 3 + attn_output 3: 784.5 / 784.4; ffn_down 4 alone 779.1 / 779.4, 3 alone 780.8 /
    // 781.0; ffn_down 5 + attn_output 3: 776.8 / 776.5; attn_output 4 alone 762.9 / 762.8; at depth
    // 4096: 670.3 against 661.4). Not where --gemv-early-slots(-for) says otherwise; Q8_0 consumers
    // (gemv.xq forced) keep their 3 (not measured)
    void xq_consumer_slots(KernelStep& c, GgmlType ctype, int pre) {
        const std::string kind(task_kind_name(t(size_t(c.tasks[0])).kind));
        if (pre <= 0 || ctype != GgmlType::Q4_0 || o_.gemv_early_slots > 0 || o_.gemv_early_slots_for.count(kind) ||
            !c.variant.has("BULK_PRE") || pre >= define_int(c, "BULK_S", 0))
            return;
        c.variant.set("BULK_PRE", pre);
    }

    // gemv.xq=producer: the decode attention `a` just before the gemv `c` whose x is attention's
    // output quantizes that output for it (attention_decode.cu / attention_decode_tma.cu XQ_OUT: the
    // warp that writes a group's 32 outputs from its registers, in every merge path) and c copies it
    // (gemv.cu XQ_IN) instead of quantizing x itself: the same bits. The split SIMT kernel and the
    // tensor-map kernel; not the mma or staged siblings, nor a timing ablation
    void attn_xq_link(KernelStep& a, KernelStep& c, int cols, GgmlType ctype) {
        if (a.tasks.empty() || t(size_t(a.tasks.back())).kind != K::Attn) return;
        if (t(size_t(a.tasks[0])).kind != K::Attn) return;
        const bool regs = a.variant.source == "cuda/attention_decode.cu" && g_.attn_split && !a.variant.has("BATCH");
        const bool tma = a.variant.source == "cuda/attention_decode_tma.cu";
        if (!regs && !tma) return;
        a.variant.set("XQ_OUT", 1).set("XQ_PLANES", int(ctype == GgmlType::Q4_0));
        a.args.back() = xq_consume(c, "attn_xq", cols, ctype, 3);  // xq (the kernels' last parameter)
    }

    // Decode attention with attn.kv=tma (attention_decode_tma.cu): a block per (kv head, split) of
    // --attn-chunk / 16 warps (64: 4; 128: 8, default; 256: 16), tiles of that many positions through a
    // ring of --attn-kv-stages slots (default 2: a block's whole work at depth 4096 with 16 splits),
    // the splits filling the SMs with the blocks the shared memory allows (--attn-splits: fixed), at
    // most one a tile of the context. H200, 8B Q8_0, depth 0 / 4096 (session 27, one machine): 64-position
    // tiles, 4 slots 462.26 / 419.49; 128, 2 slots 471.18 / 427.13; 128, 1 slot (33 splits) 471.22 /
    // 401.88; 256, 1 slot 458.71 / 416.23; 64, 2 slots (49 splits) 442.47 / 363.47.
    // attention_decode_tma.cu's shared memory: 1024 bytes of alignment slack, `stages` slots of a
    // tile's K and V (`tp` rows of head_dim halves each)
    int tma_smem(int tp, int stages) const { return 1024 + stages * 2 * c_.head_dim * tp * 2; }
    // its ring slots: --attn-tma-stages (its own), else --attn-kv-stages (shared with the register kernel), else 2
    int tma_stages() const { return o_.attn_tma_stages > 0 ? o_.attn_tma_stages : o_.attn_kv_stages > 0 ? o_.attn_kv_stages : 2; }
    void tma_attention(size_t i, const Task& a) {
        const int hd = c_.head_dim;
        // (chunk and slots checked by the gate: attn.kv=ld where they do not fit, forcing tma refused)
        const int tp = o_.attn_chunk > 0 ? o_.attn_chunk : 128;
        const int stages = tma_stages();
        const int smem = tma_smem(tp, stages);
        // the blocks shared memory allows fill the SMs once, or three quarters of them before an 8-bit or
        // wider attn_output gemv (as the register kernel: its blocks keep SMs to land on). H200, 8B Q8_0
        // at depth 4096 (session 27): 12 splits 433.07, 16: 431.65; Q4_0 16 splits 639.08
        const int per_sm = std::max(1, std::max(1, d_.max_shared_per_sm) / (smem + 2048));
        const int fill = std::max(1, per_sm * d_.sm_count * (wide_attn_output_after(i) ? 3 : 4) / 4 / c_.n_kv_heads);
        int n_splits = std::max(1, std::min(o_.attn_splits > 0 ? o_.attn_splits : fill, (p_.n_ctx + tp - 1) / tp));
        // the merge of a kv head's splits: one thread-block cluster (CLUSTER: the states through distributed
        // shared memory after a cluster barrier) or the ticket (scratch, a fence, an atomic, the last block's
        // L2 round trips: ~5 us a layer after the last tile at depth 4096, session 29's trace). By default
        // (--attn-tma-cluster -1) a cluster where the device's GPCs hold all kv heads' clusters at once
        // (DeviceInfo::clusters_1pm, probed on the device: unknown offline, then the ticket): the largest
        // such size up to the splits wanted, if at least half of them. H200 at depth 4096 (session 29, same
        // machine): 8B Q8_0 12 splits by ticket 432.10 / 432.00 -> 9 in a cluster 433.37, another machine
        // 426.49 -> 429.09; 8B Q4_0 16 by ticket 634.60 -> 9 in a cluster 647.48 (+2.0 %); clusters of
        // 10-16 (7 of 8 resident) 406.86 (12) / 399.01 (16)
        bool cluster = o_.attn_tma_cluster == 1 && n_splits > 1;
        if (o_.attn_tma_cluster < 0 && n_splits > 1) {
            int best = 0;
            for (int k = 2; k <= std::min(n_splits, 16); ++k)
                if (d_.clusters_1pm[size_t(k)] >= c_.n_kv_heads) best = k;
            if (o_.attn_splits > 0 ? best == n_splits : 2 * best >= n_splits) {
                n_splits = best;
                cluster = true;
            }
        }
        Variant v("cuda/attention_decode_tma.cu", "");
        v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", hd)
            .set("SCALE", fstr(a.scale)).set("N_SPLITS", n_splits).set("WARPS", tp / 16).set("STAGES", stages);
        if (windowed()) v.set("WINDOW", c_.sliding_window);
        if (cluster && n_splits > 16)
            fail_usage("--attn-tma-cluster with {} splits: a cluster holds at most 16 blocks (--attn-splits)", n_splits);
        if (cluster) v.set("CLUSTER", 1);
        auto& k = add({i}, "split_kv_tma_f16", v);
        if (cluster) k.cluster = Dim3(1, unsigned(n_splits));
        k.grid = Dim3(unsigned(c_.n_kv_heads), unsigned(n_splits));
        k.block = Dim3(unsigned(2 * tp));
        k.smem = unsigned(smem);
        // the full carveout (--attn-carveout: another), as the bulk gemvs around it
        k.carveout = o_.attn_carveout >= -1 ? o_.attn_carveout : 100;
        JITLLM_CHECK(s_.kv_map_rows == 0 || s_.kv_map_rows == tp, "one tensor-map box height per schedule");
        s_.kv_map_rows = tp;
        s_.scratch["attn_kv_maps"] = std::max<size_t>(s_.scratch["attn_kv_maps"], size_t(c_.n_layers) * 256);
        KArg maps;
        maps.kind = KArg::Kind::KvMaps;
        maps.layer = a.layer;
        k.args = {slot(Slot::Q), kcache(a.layer), vcache(a.layer), maps, slot(Slot::Pos), slot(Slot::Att), scratch("attn_split"),
                  scratch("attn_tickets"), null()};  // xq: gemv.xq=producer (attn_xq_link)
        k.bytes = 2 * uint64_t(c_.n_heads) * hd * 4;
        k.bytes_per_pos = uint64_t(c_.n_kv_heads) * hd * 2 * 2;
        split_scratch(n_splits, c_.n_kv_heads);
    }

    static KArg rows_arg() { KArg a; a.kind = KArg::Kind::Rows; return a; }
    static KArg kcache(int layer) { KArg a; a.kind = KArg::Kind::KCache; a.layer = layer; return a; }
    static KArg vcache(int layer) { KArg a; a.kind = KArg::Kind::VCache; a.layer = layer; return a; }
    // split-KV decode attention's scratch: every query head's partial state per split (head_dim + 4
    // floats: 16-byte rows) and `counters` zeroed ticket counters (attention_decode.cu and
    // attention_decode_staged.cu: the last block of a head set combines the states)
    void split_scratch(int n_splits, int counters) {
        const size_t sb = size_t(c_.n_heads) * size_t(n_splits) * size_t(c_.head_dim + 4) * 4;
        s_.scratch["attn_split"] = std::max(s_.scratch["attn_split"], sb);
        s_.scratch["attn_tickets"] = std::max(s_.scratch["attn_tickets"], size_t(counters) * 4);
    }

    // The last kernel's grid dimension `dim` scales with the batch rows: ceil(m * mul / div).
    void rows_grid(KernelStep& k, int dim, int mul = 1, int div = 1) {
        k.rows_dim = dim;
        k.rows_mul = mul;
        k.rows_div = div;
        k.grid = k.grid_for_rows(std::max(1, p_.batch_rows));
    }

    struct Gemm {
        GemmSpec spec;
        std::vector<KArg> w, bias, y;  // 3 each (null when unused)
        Slot x = Slot::Xb;
        KArg resid;
    };
    void gemm(std::vector<size_t> idx, Gemm g) {
        GemmSpec& s = g.spec;
        // gemm.cu's K step is 32: the row-batched gemv takes the rest, and every product of the
        // small-step list (gate batch.small)
        if (s.cols % 32 != 0 || small_) {
            Gemv v;
            for (int m = 0; m < s.n_mat; ++m) {
                v.w.push_back(g.w[size_t(m)].w);
                v.w_off.push_back(g.w[size_t(m)].offset);
                v.rows.push_back(s.rows[m]);
                v.bias.push_back(s.has_bias ? g.bias[size_t(m)].w : nullptr);
            }
            for (const KArg& y : g.y) v.y.push_back(y.slot);
            v.x = g.x;
            if (small_ && norm_i_ != SIZE_MAX) {  // the norm before, fused in (NORM_IN), as in decode
                JITLLM_CHECK(g.x == Slot::Xb, "a fused norm feeds Xb");
                idx.insert(idx.begin(), norm_i_);
                v.norm_w = t(norm_i_).w[0];
                v.eps = t(norm_i_).eps;
                v.x = Slot::X;
                norm_i_ = SIZE_MAX;
            }
            v.epi = s.epi;
            v.scale = s.epi == 1 ? s.res_scale : s.out_scale;
            v.up_offset_rows = s.up_offset_rows;
            v.xrows = xrows_;  // (0 outside the small-step lists)
            gemv(idx, v);
            KernelStep& k = out_->back();
            const bool xr = k.variant.has("XROWS");
            k.symbol += xr ? "_xrows" : "_rows";
            k.variant.symbol = k.symbol;
            if (xr) {
                // --batch-xrows: grid.y = the step's rows in groups of XROWS, each block reading
                // its weight rows once for the group (n_rows: the Rows argument)
                k.grid.y = 1;
                rows_grid(k, 1, 1, define_int(k, "XROWS", 1));
            } else if (small_) {
                // the step's rows innermost in grid.x (gemv.cu ROWS_INNER): a row group's blocks
                // for every row run side by side and share its weights through L2
                const unsigned nb = k.grid.x;
                k.variant.set("ROWS_INNER", int(nb));
                k.grid.y = 1;
                rows_grid(k, 0, int(nb), 1);
            } else {
                k.grid.y = unsigned(std::max(1, p_.batch_rows));
                rows_grid(k, 1);
            }
            k.bytes_fixed = k.bytes;  // weights re-read per row mostly hit L2: count them once
            k.bytes = uint64_t(s.cols) * 4 + uint64_t(gemm_out_rows(s)) * 4;
            return;
        }
        const bool f32w = s.wtype == GgmlType::F32;
        const int cc = d_.cc();
        s.wsplit = split(g.w);
        s.mma = g_.gemm_mma && !f32w && gemm_mma_supported(s.wtype, cc) ? 1 : 0;
        KArg x = slot(g.x);
        const bool quant_w = s.wtype != GgmlType::F16 && s.wtype != GgmlType::BF16;
        const bool wg_ok = gemm_mma_level(s.wtype, cc) >= 2 && (!quant_w || s.cols % 64 == 0);  // raw ring: 4-aligned rows
        if (s.mma && g_.gemm_wgmma && wg_ok && x16_now_ && g.x == Slot::Xb) {
            // the norm before wrote the 16-bit activations already (rms_norm OUT16)
            s.mma = 2;
            s.x_f16 = true;
            s.bm = 128;
            const int out_w = s.epi == 2 ? 2 * s.rows[0] : gemm_out_rows(s);
            s.bn = out_w >= 16384 && !quant_w ? 256 : 128;
            x = scratch("x16");
        } else if (s.mma && g_.gemm_wgmma && wg_ok) {
            // wgmma reads 16-bit activations: a row-wise conversion first (6 bytes per element,
            // small beside the product), then 128 x BN tiles (256 for wide outputs; quantized
            // weights 128: the producer's raw weight registers beside 128 accumulators spill)
            s.mma = 2;
            s.x_f16 = true;
            s.bm = 128;
            const int out_w = s.epi == 2 ? 2 * s.rows[0] : gemm_out_rows(s);
            s.bn = out_w >= 16384 && !quant_w ? 256 : 128;
            const int R = std::max(1, p_.batch_rows);
            Variant cv("cuda/convert.cu", "");
            cv.set("N", s.cols).set("BLOCK", 256).set("BF16_OUT", int(s.wtype == GgmlType::BF16));
            auto& c = add({idx[0]}, s.wtype == GgmlType::BF16 ? "to_bf16_rows" : "to_f16_rows", cv);
            c.grid = Dim3(unsigned((s.cols / 4 + 255) / 256), unsigned(R));
            c.block = Dim3(256);
            rows_grid(c, 1);
            c.args = {slot(g.x), scratch("x16")};
            c.bytes = uint64_t(s.cols) * 6;
            c.flops = 0;
            s_.scratch["x16"] = std::max(s_.scratch["x16"], size_t(R) * size_t(s.cols) * 2);
            x = scratch("x16");
        }
        // 64-row tiles when 128-row tiles would leave the SMs with fewer than two blocks each
        if (s.mma == 1) {
            const int R = std::max(1, p_.batch_rows);
            const int out_w = s.epi == 2 ? 2 * s.rows[0] : gemm_out_rows(s);
            const int tiles128 = ((R + 127) / 128) * ((out_w + 127) / 128);
            s.bm = o_.gemm_bm > 0 ? o_.gemm_bm : (tiles128 < 2 * d_.sm_count ? 64 : 128);
        }
        const std::string algo = std::string("gemm_") + (s.mma == 2 ? "wgmma_" : s.mma ? "mma_" : "simt_") +
                                 lowercase(type_name(s.wtype)) + (s.wsplit ? "_split" : "");
        auto& k = add(idx, algo, gemm_variant(s, ""));
        k.variant.symbol = k.symbol;
        const GemmLaunch l = gemm_launch(s, 1 << 20);
        const int bm = int((1u << 20) / l.grid.x);
        JITLLM_CHECK(gemm_launch(s, bm).grid.x == 1, "gemm tile rows {}", bm);
        k.block = l.block;
        k.smem = l.smem;
        k.grid = l.grid;
        rows_grid(k, 0, 1, bm);
        for (int m = 0; m < 3; ++m) k.args.push_back(m < int(g.w.size()) ? g.w[size_t(m)] : null());
        for (int m = 0; m < 3; ++m) k.args.push_back(m < int(g.bias.size()) ? g.bias[size_t(m)] : null());
        for (int m = 0; m < 3; ++m) k.args.push_back(m < int(g.y.size()) ? g.y[size_t(m)] : null());
        k.args.push_back(x);
        k.args.push_back(g.resid);
        k.args.push_back(rows_arg());
        k.bytes_fixed = gemm_bytes(s, 0);
        k.bytes = gemm_bytes(s, 1) - k.bytes_fixed;
        k.flops = gemm_flops(s, 1);
    }

    // Whether the matrices of the task at i share one weight type (one product kernel).
    bool one_type(size_t i) const {
        const WeightTensor* first = nullptr;
        for (const WeightTensor* w : t(i).w) {
            if (!w || w->rows <= 1) continue;  // biases are not matrices
            if (first && w->type != first->type) return false;
            if (!first) first = w;
        }
        return first != nullptr;
    }

    // Whether every matrix of the task at i would run on wgmma with 16-bit activations from Xb,
    // and their type (F16 or BF16).
    bool wgmma_all(size_t i, GgmlType* type) const {
        if (small_) return false;  // gemv products read float activations
        if (!is(i, K::AttnQkv) && !is(i, K::FfnGateUp) && !is(i, K::Output)) return false;
        if (!g_.gemm_mma || !g_.gemm_wgmma) return false;
        const int cc = d_.cc();
        const WeightTensor* first = nullptr;
        for (size_t j = 0; j < 3 && j < t(i).w.size(); ++j) {
            const WeightTensor* w = t(i).w[j];
            if (!w) continue;
            if (first && w->type != first->type) return false;
            first = w;
        }
        if (!first || first->cols % 32 != 0 || gemm_mma_level(first->type, cc) < 2) return false;
        const bool quant = first->type != GgmlType::F16 && first->type != GgmlType::BF16;
        if (quant && first->cols % 64 != 0) return false;  // as gemm(): the raw weight ring
        *type = first->type;
        return true;
    }

    void rms_norm_rows(size_t i, Slot in, Slot outs, int per_row, int D, const WeightTensor* w, float eps) {
        GgmlType wt = GgmlType::F16;
        const bool out16 = in == Slot::X && outs == Slot::Xb && wgmma_all(i + 1, &wt);
        rms_norm(i, in, outs, std::max(1, p_.batch_rows) * per_row, D, w, eps, 0);
        KernelStep& k = out_->back();
        if (out16) {  // the next products read 16-bit activations: write them here, not Xb
            k.variant.set("OUT16", wt == GgmlType::BF16 ? 2 : 1);
            k.symbol += wt == GgmlType::BF16 ? "_to_bf16" : "_to_f16";
            k.args[2] = scratch("x16");
            s_.scratch["x16"] = std::max(s_.scratch["x16"], size_t(std::max(1, p_.batch_rows)) * size_t(D) * 2);
            x16_next_ = true;
        }
        k.symbol += "_rows";
        k.variant.symbol = k.symbol;
        rows_grid(k, 0, per_row, 1);
        k.bytes = uint64_t(per_row) * D * (out16 ? 6 : 8);
        k.bytes_fixed = w ? uint64_t(D) * 4 : 0;
    }

    // Matrix (or row range of one) as a gemm weight argument.
    static KArg wrange(const WeightTensor* w, uint64_t off) { return weight(w, off); }

    size_t lower_batch_at(size_t i) {
        const Task& a = t(i);
        x16_now_ = x16_next_;  // set by the norm just before this task
        x16_next_ = false;
        const bool fuse = o_.fuse;
        const int R = std::max(1, p_.batch_rows);
        switch (a.kind) {
            case K::TokenEmbd: {
                const WeightTensor* e = a.w[0];
                Variant v("cuda/embed.cu", "");
                v.set("WTYPE", wtype_define(e->type)).set("D", c_.dim).set("N_VOCAB", c_.n_vocab)
                    .set("EMB_SCALE", fstr(a.scale)).set("BLOCK", 256);
                auto& k = add({i}, "embed_rows_" + lowercase(type_name(e->type)), v);
                k.grid = Dim3(unsigned((c_.dim + 255) / 256), unsigned(R)); k.block = Dim3(256);
                rows_grid(k, 1);
                k.args = {weight(e), slot(Slot::Tokens), slot(Slot::X), null(), null()};  // nw, xq: decode only
                k.bytes = e->row_bytes + uint64_t(c_.dim) * 4;
                return 1;
            }
            case K::AttnNorm:
            case K::FfnNorm:
            case K::OutputNorm: {
                // small-step list: into the next product when that is one gemv reading Xb
                const K next = a.kind == K::AttnNorm ? K::AttnQkv : a.kind == K::FfnNorm ? K::FfnGateUp : K::Output;
                if (small_ && fuse && is(i + 1, next) && one_type(i + 1)) {
                    norm_i_ = i;
                    return 1;
                }
                rms_norm_rows(i, Slot::X, Slot::Xb, 1, c_.dim, a.w[0], a.eps);
                return 1;
            }
            case K::AttnQkv: {
                Gemv q;
                fill_qkv(a, q);
                const bool same = q.w[0]->type == q.w[1]->type && q.w[1]->type == q.w[2]->type;
                for (int m0 = 0; m0 < 3; m0 += same ? 3 : 1) {
                    const int n = same ? 3 : 1;
                    Gemm g;
                    g.spec.wtype = q.w[size_t(m0)]->type;
                    g.spec.cols = int(q.w[0]->cols);
                    g.spec.n_mat = n;
                    for (int j = 0; j < n; ++j) {
                        g.spec.rows[j] = q.rows[size_t(m0 + j)];
                        g.w.push_back(wrange(q.w[size_t(m0 + j)], q.w_off[size_t(m0 + j)]));
                        g.y.push_back(slot(q.y[size_t(m0 + j)]));
                        if (!q.bias.empty()) g.bias.push_back(weight(q.bias[size_t(m0 + j)]));
                    }
                    g.spec.has_bias = !q.bias.empty();
                    gemm({i}, g);
                }
                return 1;
            }
            case K::AttnQkNorm:
                rms_norm_rows(i, Slot::Q, Slot::Q, c_.n_heads, c_.head_dim, a.w[0], a.eps);
                rms_norm_rows(i, Slot::K, Slot::K, c_.n_kv_heads, c_.head_dim, a.w[1], a.eps);
                return 1;
            case K::AttnRope: {
                JITLLM_CHECK(is(i + 1, K::AttnKvStore), "attn_rope must precede attn_kv_store");
                Variant v("cuda/rope.cu", "");
                v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", c_.head_dim)
                    .set("N_ROT", c_.n_rot).set("PAIRING", int(c_.rope_style == RopeStyle::NeoX))
                    .set("HAS_FREQ_FACTORS", int(a.w[0] != nullptr)).set("KV_T", s_.kv_type)
                    .set("BATCH", 1).set("N_CTX", p_.n_ctx);
                const KArg angles = rope_angles(v, a.w[0]);
                auto& k = add({i, i + 1}, c_.rope_style == RopeStyle::NeoX ? "rope_neox_rows" : "rope_norm_rows", v);
                k.grid = Dim3(unsigned(c_.n_heads + c_.n_kv_heads), unsigned(R)); k.block = Dim3(unsigned(c_.head_dim / 2));
                rows_grid(k, 1);
                k.args = {slot(Slot::Q), slot(Slot::K), slot(Slot::V), kcache(a.layer), vcache(a.layer),
                          slot(Slot::Positions), angles, f32(c_.rope_base), slot(Slot::Seqs)};
                const uint64_t kvsz = o_.kv_f32 ? 4 : 2;
                k.bytes = uint64_t(c_.n_heads + 2 * c_.n_kv_heads) * c_.head_dim * 8 + 2 * uint64_t(c_.kv_dim()) * kvsz;
                return 2;
            }
            case K::Attn: {
                const int hd = c_.head_dim;
                const int group = c_.n_heads / c_.n_kv_heads;
                const uint64_t kvsz = o_.kv_f32 ? 4 : 2;
                if (g_.attn_prefill_mma) {
                    // a block per (kv head, tile of br rows): K/V tiles shared by the tile's rows of
                    // one sequence; with several sequences (server), their distinct sequences spread
                    // over seq_split blocks (grid.z) so one row per sequence keeps one block each
                    const int warps = 4, bc = 64;
                    const int br = 16 * warps / group;
                    const int seq_split = p_.n_seq > 1 ? std::min(br, p_.n_seq) : 1;
                    Variant v("cuda/attention_prefill.cu", "");
                    v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", hd)
                        .set("KV_T", s_.kv_type).set("SCALE", fstr(a.scale)).set("N_CTX", p_.n_ctx)
                        .set("WARPS", warps).set("BC", bc).set("SEQ_SPLIT", seq_split);
                    if (windowed()) v.set("WINDOW", c_.sliding_window);
                    auto& k = add({i}, "flash_mma_f16", v);
                    k.grid = Dim3(unsigned(c_.n_kv_heads), unsigned((R + br - 1) / br), unsigned(seq_split));
                    k.block = Dim3(unsigned(32 * warps));
                    k.smem = unsigned(4 * bc * (2 * hd + 16));
                    rows_grid(k, 1, 1, br);
                    k.args = {slot(Slot::Q), kcache(a.layer), vcache(a.layer), slot(Slot::Positions), slot(Slot::Att),
                              slot(Slot::Seqs), rows_arg()};
                    // q in, out: per row; K/V from L2 once per block of br rows and cached position
                    // (DRAM: once per kv head and sequence); flops: QK^T and PV per attended position
                    k.bytes = 2 * uint64_t(c_.n_heads) * hd * 4 + 8;
                    k.bytes_per_pos = uint64_t(c_.n_kv_heads) * hd * 2 * kvsz / uint64_t(br);
                    k.flops_per_pos = 4 * uint64_t(c_.n_heads) * hd;
                    return 1;
                }
                Variant v("cuda/attention_decode.cu", "");
                v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", hd)
                    .set("KV_T", s_.kv_type).set("SCALE", fstr(a.scale)).set("ALGO", 1).set("N_SPLITS", 1)
                    .set("BLOCK", 128).set("REDUCE", int(g_.norm_warp)).set("TILE", group > 2 ? 2 : 4)
                    .set("BATCH", 1).set("N_CTX", p_.n_ctx);
                if (windowed()) v.set("WINDOW", c_.sliding_window);
                const std::string kvt = o_.kv_f32 ? "f32" : "f16";
                auto& k = add({i}, "causal_rows_" + kvt, v);
                k.grid = Dim3(unsigned(c_.n_kv_heads), 1, unsigned(R));
                k.block = Dim3(128);
                rows_grid(k, 2);
                k.args = {slot(Slot::Q), kcache(a.layer), vcache(a.layer), slot(Slot::Positions), slot(Slot::Att),
                          null(), slot(Slot::Seqs), null(), null(), null()};
                k.bytes = 2 * uint64_t(c_.n_heads) * hd * 4;
                k.bytes_per_pos = uint64_t(c_.n_kv_heads) * hd * 2 * kvsz;
                k.flops_per_pos = 4 * uint64_t(c_.n_heads) * hd;
                return 1;
            }
            case K::AttnOutput:
            case K::FfnDown: {
                const K res = a.kind == K::AttnOutput ? K::AttnResidual : K::FfnResidual;
                Gemm g;
                g.spec.wtype = a.w[0]->type;
                g.spec.cols = int(a.w[0]->cols);
                g.spec.rows[0] = int(a.w[0]->rows);
                g.w = {weight(a.w[0])};
                g.x = a.kind == K::AttnOutput ? Slot::Att : Slot::Hb;
                if (fuse && is(i + 1, res)) {
                    g.spec.epi = 1;
                    g.spec.res_scale = t(i + 1).scale;
                    g.y = {slot(Slot::X)};
                    g.resid = slot(Slot::X);
                    gemm({i, i + 1}, g);
                    return 2;
                }
                g.y = {slot(Slot::Tmp)};
                gemm({i}, g);
                return 1;
            }
            case K::AttnResidual:
            case K::FfnResidual: {
                Variant v("cuda/add.cu", "");
                v.set("N", c_.dim).set("BLOCK", 256);
                auto& k = add({i}, "add_rows", v);
                k.grid = Dim3(unsigned((c_.dim + 1023) / 1024), unsigned(R)); k.block = Dim3(256);
                rows_grid(k, 1);
                k.args = {slot(Slot::X), slot(Slot::Tmp), f32(a.scale)};
                k.bytes = uint64_t(c_.dim) * 12;
                return 1;
            }
            case K::FfnGateUp: {
                Gemv gu;
                fill_gate_up(a, gu);
                const bool same = gu.w[0]->type == gu.w[1]->type;
                if (fuse && same && is(i + 1, K::FfnAct)) {
                    Gemm g;
                    g.spec.wtype = gu.w[0]->type;
                    g.spec.cols = int(gu.w[0]->cols);
                    g.spec.epi = 2;
                    g.spec.rows[0] = c_.hidden_dim;
                    if (gu.w[0] == gu.w[1]) {  // one matrix: up rows follow the gate rows
                        g.spec.n_mat = 1;
                        g.spec.up_offset_rows = c_.hidden_dim;
                        g.w = {weight(gu.w[0])};
                    } else {
                        g.spec.n_mat = 2;
                        g.spec.rows[1] = c_.hidden_dim;
                        g.w = {weight(gu.w[0]), weight(gu.w[1])};
                    }
                    g.y = {slot(Slot::Hb)};
                    gemm({i, i + 1}, g);
                    return 2;
                }
                for (int m0 = 0; m0 < 2; m0 += same ? 2 : 1) {
                    const int n = same ? 2 : 1;
                    Gemm g;
                    g.spec.wtype = gu.w[size_t(m0)]->type;
                    g.spec.cols = int(gu.w[0]->cols);
                    g.spec.n_mat = n;
                    for (int j = 0; j < n; ++j) {
                        g.spec.rows[j] = c_.hidden_dim;
                        g.w.push_back(wrange(gu.w[size_t(m0 + j)], gu.w_off[size_t(m0 + j)]));
                        g.y.push_back(slot(m0 + j == 0 ? Slot::Hb : Slot::Hb2));
                    }
                    gemm({i}, g);
                }
                return 1;
            }
            case K::FfnAct: {
                Variant v("cuda/swiglu.cu", "");
                v.set("N", c_.hidden_dim).set("BLOCK", 256);
                auto& k = add({i}, "swiglu_rows", v);
                k.grid = Dim3(unsigned((c_.hidden_dim + 255) / 256), unsigned(R)); k.block = Dim3(256);
                rows_grid(k, 1);
                k.args = {slot(Slot::Hb), slot(Slot::Hb2), slot(Slot::Hb)};
                k.bytes = uint64_t(c_.hidden_dim) * 12;
                return 1;
            }
            case K::Output: {
                Gemm g;
                g.spec.wtype = a.w[0]->type;
                g.spec.cols = int(a.w[0]->cols);
                g.spec.rows[0] = int(a.w[0]->rows);
                g.spec.epi = a.scale != 1.0f ? 3 : 0;
                g.spec.out_scale = a.scale;
                g.w = {weight(a.w[0])};
                g.y = {slot(Slot::Logits)};
                gemm({i}, g);
                return 1;
            }
            case K::Sample: {
                // sample.draw=device: each logits row's pick drawn with its own parameters (the
                // host's per-row DrawParams; temperature 0: the argmax), decode's block count a row
                const int parts = g_.sample_draw ? sample_parts() : 8;
                Variant v("cuda/argmax.cu", "");
                v.set("N", c_.n_vocab).set("BLOCK", 256).set("REDUCE", int(g_.sample_warp))
                    .set("N_PARTS", parts).set("FUSE_ADVANCE", 0);
                if (g_.sample_draw) v.set("DRAW", 1).set("KMAX", draw_kmax_);
                auto& k = add({i}, g_.sample_draw ? "draw_rows" : "argmax_rows", v);
                k.grid = Dim3(unsigned(parts), unsigned(R)); k.block = Dim3(256);
                rows_grid(k, 1);
                k.args = {slot(Slot::Logits), scratch("argmax_rows_val"), scratch("argmax_rows_idx"),
                          scratch("argmax_rows_counter"), slot(Slot::Tokens), slot(Slot::Positions), null(), null(),
                          g_.sample_draw ? scratch("draw_rows_params") : null(),
                          g_.sample_draw ? scratch("draw_rows_keys") : null()};
                if (g_.sample_draw) {  // logits rows: at most n_seq (CudaBackend::batch checks)
                    const size_t rows = size_t(std::max(1, p_.n_seq));
                    s_.scratch["draw_rows_params"] = rows * 32;  // DrawParams
                    s_.scratch["draw_rows_keys"] = rows * size_t(parts) * size_t(draw_kmax_) * 8;
                    k.smem = unsigned(8 * std::max<int64_t>(pow2_at_least(sample_chunk(parts)),
                                                            int64_t(parts) * draw_kmax_));
                }
                s_.scratch["argmax_rows_val"] = size_t(R) * parts * 4;
                s_.scratch["argmax_rows_idx"] = size_t(R) * parts * 4;
                s_.scratch["argmax_rows_counter"] = size_t(R) * 4;
                k.bytes = uint64_t(c_.n_vocab) * 4 + 8 * uint64_t(parts);
                return 1;
            }
            case K::AttnKvStore:
            case K::Count:
                break;
        }
        JITLLM_CHECK(false, "task {} has no CUDA batch lowering", a.name);
    }
    // Decode attention: the tensor-map kernel (gate attn.kv=tma) or the register kernel
    // (attention_decode.cu), split-KV (gate attn.algo=split) or one block per kv head.
    void decode_attention(size_t i, const Task& a) {
        if (g_.attn_tma) {
            tma_attention(i, a);
            return;
        }
        const int hd = c_.head_dim;
        const int group = c_.n_heads / c_.n_kv_heads;
        // split: 256 threads, chunks of up to 128 positions (TILE loads of K and of V in flight per
        // thread), so a context of <= 128 positions is one block's single round trip and needs no
        // combine; the N_SPLITS blocks per query-head set fill the SMs once for long contexts.
        // Query heads per block (attn.heads_per_block): one for split, so a kv head's QPG blocks read
        // its positions, the later ones from L2; onepass: all of them.
        const int hpb = o_.attn_heads_per_block > 0 ? o_.attn_heads_per_block : g_.attn_split ? 1 : group;
        if (group % hpb != 0)
            fail_usage("tune attn.heads_per_block: expected a divisor of the {} query heads per kv head, found {}",
                       group, hpb);
        const int hsplit = group / hpb;
        // KV_LOAD: bytes of K (and of V) per thread and position; 8 with a half cache and more than 4
        // heads per block (halves the registers holding q and the output)
        const int kv_bytes = o_.kv_f32 ? 4 : 2;
        const int kv_load = hpb > 4 && kv_bytes == 2 ? 8 : 16;
        // the next chunk loaded before this one is used (attn.pipe; auto: 2 for the split kernel, none
        // beside the cp.async ring)
        const int pipe = !g_.attn_split ? 0 : o_.attn_pipe >= 0 ? o_.attn_pipe : o_.attn_kv_stages > 0 ? 0 : 2;
        int block = 128, tile = hpb > 2 ? 2 : 4, n_splits = 1;
        int ch = 0, per_sm = 1;  // split: positions per chunk, resident blocks per SM
        if (g_.attn_split) {
            block = 256;
            const int vec = kv_load / kv_bytes;
            const int ng = block / (hd / vec);
            // attn.chunk: positions per chunk (TILE = chunk / NG, at most 8)
            const int chunk = o_.attn_chunk > 0 ? o_.attn_chunk : 128;
            tile = std::max(1, std::min(8, chunk / ng));
            if (!g_.norm_warp) tile = std::max(1, std::min(tile, 8192 / (hpb * block)));  // tree: smem
            ch = ng * tile;
            // about two resident blocks per SM for 1-2 heads per block (<= 128 registers), one for more
            per_sm = hpb <= 2 ? 2 : 1;
            // attn.splits: blocks per query-head set along the context, at most one per chunk. Default:
            // the resident blocks fill the SMs once when the attn_output gemv after it has weights
            // narrower than 8 bits, else three quarters of them (~1.5 blocks an SM, so the gemvs before
            // and after it keep SMs to drain and to start their weight streams on)
            const int fill = per_sm * d_.sm_count * (!wide_attn_output_after(i) ? 4 : 3) / 4;
            const int splits = std::max(1, fill / (c_.n_kv_heads * hsplit));
            n_splits = std::max(1, std::min(o_.attn_splits > 0 ? o_.attn_splits : splits, (p_.n_ctx + ch - 1) / ch));
        }
        Variant v("cuda/attention_decode.cu", "");
        v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", hd)
            .set("KV_T", s_.kv_type).set("SCALE", fstr(a.scale)).set("ALGO", g_.attn_split ? 2 : 1)
            .set("N_SPLITS", n_splits).set("BLOCK", block)
            .set("REDUCE", int(g_.norm_warp)).set("TILE", tile).set("KV_LOAD", kv_load);
        if (g_.attn_split) v.set("N_CTX", p_.n_ctx);  // bounds the chunk-0 preload
        // attn.vsum=half2: where the transposed reduction runs (TILE a power of two <= lanes per position)
        const int gs = hd / (kv_load / kv_bytes);
        if (g_.attn_vh2 && kv_load == 16 && tile >= 2 && tile <= gs && (tile & (tile - 1)) == 0) v.set("VH2", 1);
        // the ticket merge reads every split's state in one round trip
        if (g_.attn_split && n_splits <= 16) v.set("MERGE1", 1);
        if (windowed()) v.set("WINDOW", c_.sliding_window);
        if (hsplit > 1) v.set("HPB", hpb);
        if (pipe > 0) v.set("PIPE", pipe);
        // attn.kv_stages N: K/V chunks through an N-deep cp.async ring in shared memory
        int kv_stages = 0;
        if (o_.attn_kv_stages > 0 && g_.attn_split) {
            if (o_.attn_kv_stages < 2 || o_.attn_kv_stages > 4)
                fail_usage("tune attn.kv_stages: expected 2 to 4 for the register kernel, found {}", o_.attn_kv_stages);
            if (d_.cc() < 80)
                fail_usage("tune attn.kv_stages: expected compute capability 8.0+ (cp.async), found {}.{}", d_.cc_major,
                           d_.cc_minor);
            if (o_.attn_pipe > 0) fail_usage("tune attn.kv_stages and attn.pipe: expected one of them, found both");
            if (kv_load != 16)
                fail_usage("tune attn.kv_stages: expected 16-byte K/V loads (at most 4 query heads per block with a "
                           "half cache), found {} heads per block", hpb);
            kv_stages = o_.attn_kv_stages;
            v.set("KV_STAGES", kv_stages);
        }
        // attn.early=kv: each block's first chunk of K/V rows goes out before the PDL wait
        // (attention_decode.cu EARLY_KV), where the kernel is the split one with attn.pipe 2 and no
        // sliding window (others keep their loads)
        if (g_.attn_early && g_.attn_split && !windowed() && pipe == 2 && kv_stages == 0) v.set("EARLY_KV", 1);
        const std::string kvt = o_.kv_f32 ? "f32" : "f16";
        auto& k = add({i}, (g_.attn_split ? "split_kv_" : "onepass_") + kvt, v);
        k.grid = Dim3(unsigned(c_.n_kv_heads * hsplit), unsigned(n_splits));
        k.block = Dim3(unsigned(block));
        // attention_decode.cu KV_STAGES: 2 x TILE 16-byte entries a thread and slot
        if (kv_stages > 0) k.smem = unsigned(kv_stages * 2 * tile * block * 16);
        if (o_.attn_carveout >= -1) k.carveout = o_.attn_carveout;
        k.args = {slot(Slot::Q), kcache(a.layer), vcache(a.layer), slot(Slot::Pos), slot(Slot::Att),
                  g_.attn_split ? scratch("attn_split") : null(), null(),
                  g_.attn_split ? scratch("attn_tickets") : null(), null(),
                  null()};  // xq: gemv.xq=producer (attn_xq_link)
        const uint64_t kvsz = o_.kv_f32 ? 4 : 2;
        k.bytes = 2 * uint64_t(c_.n_heads) * hd * 4;
        k.bytes_per_pos = uint64_t(c_.n_kv_heads) * hd * 2 * kvsz;
        // partial states per split; the last block of each head set combines them (a ticket counter
        // per block x, zeroed at allocation); their traffic is left out of the byte count
        if (g_.attn_split) split_scratch(n_splits, c_.n_kv_heads * hsplit);
    }

    // Emits the kernels starting at task i; returns the number of tasks consumed.
    size_t lower_at(size_t i) {
        const Task& a = t(i);
        const bool fuse = o_.fuse;
        switch (a.kind) {
            case K::TokenEmbd: {
                const WeightTensor* e = a.w[0];
                Variant v("cuda/embed.cu", "");
                v.set("WTYPE", wtype_define(e->type)).set("D", c_.dim).set("N_VOCAB", c_.n_vocab)
                    .set("EMB_SCALE", fstr(a.scale)).set("BLOCK", 256);
                auto& k = add({i}, "embed_" + lowercase(type_name(e->type)), v);
                k.grid = Dim3(unsigned((c_.dim + 255) / 256)); k.block = Dim3(256);
                k.args = {weight(e), slot(Slot::Token), slot(Slot::X), null(), null()};  // nw, xq: embed.cu XQ_OUT
                k.bytes = e->row_bytes + uint64_t(c_.dim) * 4;
                // --gemv-xq-norm: the first layer's q/k/v gemv may take the row quantized from here
                norm_prev_.reset();
                if (c_.dim % 32 == 0) norm_prev_ = NormProducer{out_->size() - 1, Slot::X, c_.dim, true};
                return 1;
            }
            case K::AttnNorm:
            case K::FfnNorm:
            case K::OutputNorm: {
                const K next = a.kind == K::AttnNorm ? K::AttnQkv : a.kind == K::FfnNorm ? K::FfnGateUp : K::Output;
                if (fuse && is(i + 1, next)) return lower_norm_matmul(i);
                rms_norm(i, Slot::X, Slot::Xb, 1, c_.dim, a.w[0], a.eps, 0);
                return 1;
            }
            case K::AttnQkv: {
                Gemv g;
                fill_qkv(a, g);
                std::vector<size_t> idx{i};
                const size_t extra = fuse_rope(i, g, idx);
                lower_qkv(i, idx, g);
                return 1 + extra;
            }
            case K::AttnQkNorm:
                rms_norm(i, Slot::Q, Slot::Q, c_.n_heads, c_.head_dim, a.w[0], a.eps, 0);
                rms_norm(i, Slot::K, Slot::K, c_.n_kv_heads, c_.head_dim, a.w[1], a.eps, 1);
                return 1;
            case K::AttnRope: {
                JITLLM_CHECK(is(i + 1, K::AttnKvStore), "attn_rope must precede attn_kv_store");
                Variant v("cuda/rope.cu", "");
                v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", c_.head_dim)
                    .set("N_ROT", c_.n_rot).set("PAIRING", int(c_.rope_style == RopeStyle::NeoX))
                    .set("HAS_FREQ_FACTORS", int(a.w[0] != nullptr)).set("KV_T", s_.kv_type);
                const KArg angles = rope_angles(v, a.w[0]);
                auto& k = add({i, i + 1}, c_.rope_style == RopeStyle::NeoX ? "rope_neox" : "rope_norm", v);
                k.grid = Dim3(unsigned(c_.n_heads + c_.n_kv_heads)); k.block = Dim3(unsigned(c_.head_dim / 2));
                k.args = {slot(Slot::Q), slot(Slot::K), slot(Slot::V), kcache(a.layer), vcache(a.layer), slot(Slot::Pos),
                          angles, f32(c_.rope_base), null()};
                const uint64_t kvsz = o_.kv_f32 ? 4 : 2;
                k.bytes = uint64_t(c_.n_heads + 2 * c_.n_kv_heads) * c_.head_dim * 8 + 2 * uint64_t(c_.kv_dim()) * kvsz;
                return 2;
            }
            case K::Attn:
                decode_attention(i, a);
                return 1;
            case K::AttnOutput:
            case K::FfnDown: {
                const K res = a.kind == K::AttnOutput ? K::AttnResidual : K::FfnResidual;
                const Slot x = a.kind == K::AttnOutput ? Slot::Att : Slot::Hb;
                Gemv g;
                g.w = {a.w[0]}; g.w_off = {0}; g.rows = {int(a.w[0]->rows)}; g.x = x;
                if (fuse && is(i + 1, res)) {
                    g.y = {Slot::X}; g.epi = 1; g.scale = t(i + 1).scale;
                    gemv({i, i + 1}, g);
                    return 2;
                }
                g.y = {Slot::Tmp};
                gemv({i}, g);
                return 1;
            }
            case K::AttnResidual:
            case K::FfnResidual: {
                Variant v("cuda/add.cu", "");
                v.set("N", c_.dim).set("BLOCK", 256);
                auto& k = add({i}, "add", v);
                k.grid = Dim3(unsigned((c_.dim + 1023) / 1024)); k.block = Dim3(256);
                k.args = {slot(Slot::X), slot(Slot::Tmp), f32(a.scale)};
                k.bytes = uint64_t(c_.dim) * 12;
                return 1;
            }
            case K::FfnGateUp: {
                Gemv g;
                fill_gate_up(a, g);
                g.y = {Slot::Hb, Slot::Hb2};
                lower_gate_up_unfused(i, {i}, g);
                return 1;
            }
            case K::FfnAct: {
                Variant v("cuda/swiglu.cu", "");
                v.set("N", c_.hidden_dim).set("BLOCK", 256);
                auto& k = add({i}, "swiglu", v);
                k.grid = Dim3(unsigned((c_.hidden_dim + 255) / 256)); k.block = Dim3(256);
                k.args = {slot(Slot::Hb), slot(Slot::Hb2), slot(Slot::Hb)};
                k.bytes = uint64_t(c_.hidden_dim) * 12;
                return 1;
            }
            case K::Output: {
                Gemv g;
                g.w = {a.w[0]}; g.w_off = {0}; g.rows = {int(a.w[0]->rows)}; g.y = {Slot::Logits};
                g.epi = a.scale != 1.0f ? 3 : 0; g.scale = a.scale;
                g.argmax = fuse && greedy_list_ && is(i + 1, K::Sample);  // sample.fuse=gemv
                if (g.argmax) {
                    gemv({i, i + 1}, g);
                    return 2;
                }
                gemv({i}, g);
                return 1;
            }
            case K::Sample: {
                const int parts = sample_parts();
                Variant v("cuda/argmax.cu", "");
                v.set("N", c_.n_vocab).set("BLOCK", 256).set("REDUCE", int(g_.sample_warp))
                    .set("N_PARTS", parts).set("FUSE_ADVANCE", int(g_.step_advance));  // step.advance=device
                if (g_.sample_draw) v.set("DRAW", 1).set("KMAX", draw_kmax_);        // sample.draw=device
                auto& k = add({i}, g_.sample_draw ? "draw" : "argmax", v);
                k.grid = Dim3(unsigned(parts)); k.block = Dim3(256);
                k.args = {slot(Slot::Logits), scratch("argmax_val"), scratch("argmax_idx"),
                          scratch("argmax_counter"), scratch("token_out"), slot(Slot::Pos), slot(Slot::Token),
                          g_.step_advance ? host_ring() : null(),  // step.advance=device: the pick for the host too
                          g_.sample_draw ? scratch("draw_params") : null(), g_.sample_draw ? scratch("draw_keys") : null()};
                if (g_.sample_draw) {
                    s_.scratch["draw_params"] = 32;  // DrawParams
                    s_.scratch["draw_keys"] = size_t(parts) * size_t(draw_kmax_) * 8;
                    k.smem = unsigned(8 * std::max<int64_t>(pow2_at_least(sample_chunk(parts)),
                                                            int64_t(parts) * draw_kmax_));
                }
                s_.scratch["argmax_val"] = size_t(parts) * 4;
                s_.scratch["argmax_idx"] = size_t(parts) * 4;
                s_.scratch["argmax_counter"] = 16;
                s_.scratch["token_out"] = 16;
                k.bytes = uint64_t(c_.n_vocab) * 4 + 8 * uint64_t(parts);
                return 1;
            }
            case K::AttnKvStore:
            case K::Count:
                break;
        }
        JITLLM_CHECK(false, "task {} has no CUDA lowering here", a.name);
    }

    void fill_qkv(const Task& a, Gemv& g) {
        if (a.w[1] == nullptr) {  // fused attn_qkv: row ranges of one matrix
            const WeightTensor* w = a.w[0];
            g.w = {w, w, w};
            g.w_off = {0, uint64_t(c_.q_dim()) * w->row_bytes, uint64_t(c_.q_dim() + c_.kv_dim()) * w->row_bytes};
        } else {
            g.w = {a.w[0], a.w[1], a.w[2]};
            g.w_off = {0, 0, 0};
        }
        g.rows = {c_.q_dim(), c_.kv_dim(), c_.kv_dim()};
        if (a.w.size() > 3 && a.w[3]) g.bias = {a.w[3], a.w[4], a.w[5]};
        g.y = {Slot::Q, Slot::K, Slot::V};
    }

    // rope.fuse=gemv: attn_rope + attn_kv_store after the q/k/v task at iq go into its gemv (EPI=4)
    // when one launch serves all three matrices and RoPE pairs are adjacent (norm style, no
    // q/k norm in between). Adds the tasks to idx; returns how many it took (0 or 2).
    size_t fuse_rope(size_t iq, Gemv& g, std::vector<size_t>& idx) {
        if (!o_.fuse || !g_.rope_fuse || batch_) return 0;
        if (!is(iq + 1, K::AttnRope) || !is(iq + 2, K::AttnKvStore)) return 0;
        if (c_.rope_style == RopeStyle::NeoX || c_.head_dim % 2 != 0 || c_.n_rot % 2 != 0) return 0;
        if (g.w.size() != 3 || g.w[0]->type != g.w[1]->type || g.w[1]->type != g.w[2]->type) return 0;
        g.rope = true;
        g.rope_layer = t(iq + 1).layer;
        g.rope_freqs = t(iq + 1).w[0];
        idx.push_back(iq + 1);
        idx.push_back(iq + 2);
        return 2;
    }

    // QKV: one launch when the three matrices share a type, else one per matrix.
    void lower_qkv(size_t i, std::vector<size_t> idx, const Gemv& g) {
        if (g.w[0]->type == g.w[1]->type && g.w[1]->type == g.w[2]->type) {
            gemv(idx, g);
            return;
        }
        for (size_t m = 0; m < 3; ++m) {
            Gemv one = g;
            one.w = {g.w[m]}; one.w_off = {g.w_off[m]}; one.rows = {g.rows[m]}; one.y = {g.y[m]};
            one.bias = g.bias.empty() ? std::vector<const WeightTensor*>{} : std::vector<const WeightTensor*>{g.bias[m]};
            gemv(idx, one);
        }
        (void)i;
    }

    void fill_gate_up(const Task& a, Gemv& g) {
        if (a.w[0] == nullptr) {  // phi3: ffn_up holds gate rows then up rows
            const WeightTensor* w = a.w[1];
            g.w = {w, w};
            g.w_off = {0, uint64_t(c_.hidden_dim) * w->row_bytes};
        } else {
            g.w = {a.w[0], a.w[1]};
            g.w_off = {0, 0};
        }
        g.rows = {c_.hidden_dim, c_.hidden_dim};
    }

    void lower_gate_up_unfused(size_t i, std::vector<size_t> idx, Gemv g) {
        if (g.w[0]->type == g.w[1]->type) {
            gemv(idx, g);
            return;
        }
        for (size_t m = 0; m < 2; ++m) {
            Gemv one = g;
            one.w = {g.w[m]}; one.w_off = {g.w_off[m]}; one.rows = {g.rows[m]}; one.y = {g.y[m]};
            gemv(idx, one);
        }
        (void)i;
    }

    // norm + following matmul(s) in one kernel (NORM_IN), with SwiGLU for the FFN.
    size_t lower_norm_matmul(size_t i) {
        const Task& n = t(i);
        const Task& m = t(i + 1);
        Gemv g;
        g.x = Slot::X;
        g.norm_w = n.w[0];
        g.eps = n.eps;
        if (m.kind == K::AttnQkv) {
            fill_qkv(m, g);
            g.x = Slot::X;
            std::vector<size_t> idx{i, i + 1};
            const size_t extra = fuse_rope(i + 1, g, idx);
            lower_qkv(i, idx, g);
            return 2 + extra;
        }
        if (m.kind == K::Output) {
            g.w = {m.w[0]}; g.w_off = {0}; g.rows = {int(m.w[0]->rows)}; g.y = {Slot::Logits};
            g.epi = m.scale != 1.0f ? 3 : 0; g.scale = m.scale;
            // sample.fuse=gemv: the greedy pick after it goes into it
            g.argmax = greedy_list_ && !batch_ && is(i + 2, K::Sample);
            if (g.argmax) {
                gemv({i, i + 1, i + 2}, g);
                return 3;
            }
            gemv({i, i + 1}, g);
            return 2;
        }
        // ffn_norm + ffn_gate_up (+ ffn_act)
        fill_gate_up(m, g);
        if (is(i + 2, K::FfnAct) && g.w[0]->type == g.w[1]->type) {
            g.epi = 2;
            g.y = {Slot::Hb};
            if (g.w[0] == g.w[1]) {  // one matrix: up rows follow the gate rows
                g.w = {g.w[0]}; g.w_off = {0}; g.rows = {c_.hidden_dim};
                g.up_offset_rows = c_.hidden_dim;
            }
            gemv({i, i + 1, i + 2}, g);
            return 3;
        }
        g.y = {Slot::Hb, Slot::Hb2};
        lower_gate_up_unfused(i, {i, i + 1}, g);
        return 2;
    }

    const Plan& p_;
    const ModelConfig& c_;
    const DeviceInfo& d_;
    const ScheduleOptions& o_;
    Schedule& s_;
    Gates g_{};
    std::vector<KernelStep>* out_ = nullptr;
    const std::vector<Task>* tasks_ = nullptr;
    bool batch_ = false;
    bool greedy_list_ = false;  // lowering decode_greedy (gate sample.fuse): the pick in the output gemv
    bool sample_fuse_auto_ = false;  // gate sample.fuse at its default: settled by lower_decode_greedy()
    bool small_ = false;  // lowering the small-step batch list (gate batch.small)
    int xrows_ = 0;       // ... with XROWS gemvs (gate batch.xrows)
    std::optional<XqProducer> xq_prev_;  // gemv.xq: the gemv just lowered, if it can produce for the next
    std::optional<NormProducer> norm_prev_;  // --gemv-xq-norm: the kernel just lowered, if it can produce for a normed gemv
    size_t norm_i_ = SIZE_MAX;  // small-step list: a norm task waiting to be fused into the next gemv
    bool x16_next_ = false, x16_now_ = false;  // the norm wrote 16-bit activations for the next task
};

}  // namespace

std::vector<std::string> schedule_gate_choices() {
    return {"gemv.reduce=warp|tree", "norm.reduce=warp|tree", "attn.algo=split|onepass", "sample.reduce=warp|tree",
            "gemm.mma=mma|simt", "gemm.wgmma=wgmma|mma", "attn.prefill=mma|rows", "weights.layout=split|blocks",
            "launch.pdl=pdl|serial", "batch.small=gemv|gemm", "batch.pdl=pdl|serial", "batch.xrows=shared|per-row",
            "rope.angles=table|computed", "rope.fuse=gemv|kernel", "gemv.early=load|wait", "gemv.grid=capped|full",
            "gemv.load=bulk|lanes", "gemv.trigger=start|loads", 
            "attn.vsum=half2|float", 
            "attn.early=kv|wait", "attn.kv=tma|ld", "sample.fuse=gemv|kernel",
            "sample.draw=device|host", "step.advance=device|host", "gemv.xq=producer|block", 
            "kv.type=half|float"};
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

Dim3 KernelStep::grid_for_rows(int m) const {
    Dim3 g = grid;
    if (rows_dim < 0) return g;
    const unsigned n = unsigned((int64_t(m) * rows_mul + rows_div - 1) / rows_div);
    (rows_dim == 0 ? g.x : rows_dim == 1 ? g.y : g.z) = std::max(1u, n);
    return g;
}

std::vector<KernelLaunchCount> schedule_launch_accounting(const Schedule& s, const RunShape& r, int warmup) {
    const PhaseRuns pr = plan_phase_runs(r);
    // decode runs take the run's last pr.decode positions; with a second decode list (--attn-tma-from)
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

std::vector<Variant> schedule_variants(const Schedule& s) {
    std::vector<Variant> v;
    std::set<std::string> seen;
    for (const auto* ph : {&s.decode, &s.decode_short, &s.decode_greedy, &s.decode_short_greedy, &s.prefill, &s.batch,
                           &s.batch_small, &s.batch_xrows})
        for (const auto& k : *ph) {
            const std::string id = k.variant.display_name();
            if (seen.insert(id).second) v.push_back(k.variant);
        }
    return v;
}

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

std::string schedule_describe(const Plan& plan, const Schedule& s, bool threads) {
    std::string out = "capability gates:\n";
    for (const auto& g : s.gates)
        out += fmt::format("  {:<14} {:<8} (sibling {:<8}) {}\n", g.gate, g.chosen, g.sibling, g.reason);
    for (int part = 0; part < 5; ++part) {
        const Phase ph = part == 0 ? Phase::Decode : part == 1 ? Phase::Prefill : Phase::Batch;
        const bool small = part >= 3;  // the small-step lists of the batch phase (gates batch.small, batch.xrows)
        const auto& ks = part == 4 ? s.batch_xrows : small ? s.batch_small : s.phase(ph);
        const auto& tasks = plan.phase(ph);
        if (ph == Phase::Batch && ks.empty()) continue;
        // launches per token by kernel symbol
        std::map<std::string, int> per_token;
        for (const auto& k : ks) per_token[k.symbol]++;
        if (part == 4)
            out += fmt::format("phase batch, steps of 2 .. {} rows (gate batch.xrows): {} tasks -> {} kernel launches "
                               "({} in the body)\n",
                               s.batch_small_rows, tasks.size(), ks.size(), s.batch_xrows_body);
        else if (small)
            out += fmt::format("phase batch, steps of {} (gate batch.small): {} tasks -> {} kernel launches "
                               "({} in the body; the output tail also for the logits row of a longer step)\n",
                               s.batch_xrows.empty() ? fmt::format("<= {} rows", s.batch_small_rows) : std::string("one row"),
                               tasks.size(), ks.size(), s.batch_small_body);
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
    if (!s.decode_short.empty()) {  // --attn-tma-from: a second decode list (its own CUDA graph)
        out += fmt::format("phase decode at positions below {} (--attn-tma-from): decode's kernels, these replaced:\n",
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
