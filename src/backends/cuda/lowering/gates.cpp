// The capability gates' table (gates.h) and their decision in table order.
#include "backends/cuda/lowering/gates.h"

#include <fmt/format.h>

#include "backends/cuda/gemm_variant.h"
#include "core/error.h"
#include "quant/quant.h"

namespace jitllm {

const char* const kFusePickLanes =
    "decode's greedy pick in its own kernel after the output gemv, which also draws sampled tokens (the output "
    "gemv is not a bulk one: the fused pick's lanes grid streams it slower)";

namespace {

using K = TaskKind;
using In = const GateInputs&;

std::string cc_text(const DeviceInfo& d) { return fmt::format("compute capability {}.{}", d.cc_major, d.cc_minor); }

// warp-shuffle reductions (gemv.reduce, norm.reduce, sample.reduce)
GateVerdict warp_reduce(In in, Gates&, const Schedule&) {
    const bool warp32 = in.dev.warp_size == 32;
    return {warp32, warp32 ? "warp size 32: lanes reduce with __shfl_xor_sync"
                           : fmt::format("warp size {} != 32: shared-memory tree", in.dev.warp_size)};
}

// Split-KV when one block per kv head leaves most SMs idle, at any context: below one chunk the
// split kernel still runs one block per query head (onepass: one per kv head).
GateVerdict attn_algo(In in, Gates&, const Schedule&) {
    const bool split = in.cfg.n_kv_heads * 4 < in.dev.sm_count;
    return {split, fmt::format("{} kv heads on {} SMs, context {}: {}", in.cfg.n_kv_heads, in.dev.sm_count,
                               in.plan.n_ctx,
                               split ? "split the context across blocks (one block per query head below a chunk)"
                                     : "one block per kv head fills the device")};
}

// Tensor cores for the batch phase's matrix-matrix products.
GateVerdict gemm_mma(In in, Gates&, const Schedule&) {
    std::string why;
    const bool mma = gemm_mma_supported(GgmlType::F16, in.dev.cc(), &why);
    return {mma, mma ? cc_text(in.dev) + ": mma.sync m16n8k16 tensor cores for the batch phase's matrix products "
                                         "(F32 weights stay SIMT: f32 precision)"
                     : why};
}

GateVerdict gemm_wgmma(In in, Gates& g, const Schedule&) {
    const bool wg = g.gemm_mma && gemm_mma_level(GgmlType::F16, in.dev.cc()) >= 2;
    return {wg, wg ? "sm_90: wgmma.mma_async from shared memory (sm_90a) for F16/BF16 and quantized weights "
                     "(dequantized to f16 in shared memory), activations in 16 bits"
                   : cc_text(in.dev) + ": no wgmma" + (g.gemm_mma ? "" : " (and gemm.mma=simt)")};
}

// A step of one tile row (up to 128 rows: the server's batched decode) has as many wgmma tiles as
// its output has 128-row groups, 32 for a 4096-wide product; a 1B model's 512-row prompt chunk 4 x
// 16 for its 2048-wide products: most SMs would idle while each busy one walks the whole K range.
// The K steps are split over grid.z instead until the blocks come near the SM count; the last
// block of a tile sums the parts in split order (deterministic).
GateVerdict gemm_split_k(In, Gates& g, const Schedule&) {
    return {true, "steps whose wgmma tiles number fewer than the SMs (batched decode; a small model's prompt "
                  "chunks): K split over grid.z until the blocks fill the SMs (8 K steps of 64 a split at least), "
                  "the last block of a tile adds the splits' partial sums in order",
            g.gemm_wgmma ? "" : "gemm.wgmma=mma: split-K is the wgmma kernel's"};
}

// Batch-phase attention: flash-attention-2 style tiles on mma.sync (attention_prefill.cu) or one
// block per (kv head, row) on SIMT units (attention_decode.cu BATCH=1).
GateVerdict attn_prefill(In in, Gates&, const Schedule&) {
    const ModelConfig& c = in.cfg;
    const int qpg = c.n_heads / std::max(1, c.n_kv_heads);
    std::string why;
    if (in.dev.cc() < 80) why = cc_text(in.dev) + ": no mma.sync f16 / cp.async";
    else if (in.opt.kv_f32) why = "--kv-f32: the mma kernel reads a half KV cache";
    else if (c.head_dim % 16 != 0 || c.head_dim > 256) why = fmt::format("head_dim {} not a multiple of 16 <= 256", c.head_dim);
    else if (qpg > 64) why = fmt::format("{} query heads per kv head > 64", qpg);
    return {true, cc_text(in.dev) + ": causal tiles of rows on mma.sync m16n8k16, K/V shared by the rows of a sequence", why};
}

// The SIMT decode kernel sums a tile's weighted V rows in f16 pairs (fma.rn.f16x2, the weights
// rounded to f16) and adds them to its f32 output once per tile: fewer instructions per position in
// a kernel that is issue-bound at depth.
GateVerdict attn_vsum(In in, Gates& g, const Schedule&) {
    std::string why;
    if (in.dev.cc() < 80) why = cc_text(in.dev) + ": no cvt.rn.f16x2.f32";
    else if (in.opt.kv_f32) why = "--kv-f32: V is read as floats";
    else if (!g.norm_warp) why = "norm.reduce=tree: the half2 sum sits in the shuffle-reduction loop";
    return {true, "a tile's weighted V rows summed in f16 pairs, once per tile into the f32 output", why};
}

// attention_decode.cu EARLY_KV: each split-KV block reads the position and loads its first chunk's
// K/V rows before griddepcontrol.wait, the current position's row (the q/k/v gemv's store) after it.
// Needs the position and the earlier rows final before a step's first kernel.
GateVerdict attn_early(In, Gates& g, const Schedule&) {
    return {true,
            "split-KV blocks load their first chunk of K/V before waiting for the q/k/v gemv (the SIMT kernel, no "
            "sliding window)",
            g.attn_split ? "" : "attn.algo=onepass: one block per kv head reads the position first"};
}

// attention_decode_tma.cu (sm_90): each split-KV block (kv head, split) has its K/V tiles copied
// into a shared-memory ring by tensor-map copies before the PDL wait and serves every query head of
// its kv head with mma.sync from there. By default where the plan's context exceeds two 128-position
// tiles and head_dim is 128 (head_dim 64 keeps the register kernel).
GateVerdict attn_kv(In in, Gates& g, const Schedule&) {
    const ModelConfig& c = in.cfg;
    const ScheduleOptions& o = in.opt;
    const DeviceInfo& d = in.dev;
    const int qpg = c.n_heads / std::max(1, c.n_kv_heads);
    std::string why;
    if (!g.attn_split) why = "attn.algo=onepass: the tensor-map kernel is split-KV";
    else if (d.cc() < 90) why = cc_text(d) + ": no tensor-map copies (sm_90+)";
    else if (o.kv_f32) why = "--kv-f32: the tensor-map kernel reads a half KV cache";
    else if (!g.norm_warp) why = "norm.reduce=tree: the tensor-map kernel's softmax uses warp shuffles";
    else if (c.head_dim != 64 && c.head_dim != 128) why = fmt::format("head_dim {}: 64 or 128", c.head_dim);
    else if (qpg > 8) why = fmt::format("{} query heads per kv head > 8 (the mma rows)", qpg);
    else if (o.attn_pipe > 0 || o.attn_heads_per_block > 0) why = "attn.pipe and attn.heads_per_block are the register kernel's";
    else if (const int tp = o.attn_chunk > 0 ? o.attn_chunk : 128; tp != 64 && tp != 128 && tp != 256)
        why = fmt::format("attn.chunk={}: the tensor-map kernel's tiles are 64, 128 or 256 positions", tp);
    else if (const int st = tma_stages(o); st > 8 || tma_smem(c, tp, st) > d.max_shared_block())
        why = fmt::format("attn.kv_stages={} of {} positions: the tensor-map kernel's ring takes 1 to 8 slots of at most "
                          "{} bytes in all (found {})", st, tp, d.max_shared_block(), tma_smem(c, tp, st));
    const int n_ctx = in.plan.n_ctx;
    const bool long_ctx = n_ctx > 256, hd128 = c.head_dim == 128;
    const int from = tma_from(o);
    return {long_ctx && hd128,
            !long_ctx ? fmt::format("context {} <= 256: within two tiles, the register kernel (the tensor-map kernel "
                                    "is slower at depth 0)", n_ctx)
            : !hd128  ? fmt::format("head_dim {}: the register kernel (faster than the tensor-map kernel there)", c.head_dim)
                      : fmt::format("context {} > 256: K/V tiles by tensor-map copies before the PDL wait, the group's "
                                    "heads on mma.sync{}", n_ctx,
                                    from > 0 ? fmt::format("; positions below {} on a second graph with the register "
                                                           "kernel (attn.tma_from)", std::min(from, n_ctx))
                                             : std::string()),
            why};
}

// Batch steps of up to batch.small_rows rows (a server with one or a few active slots; the logits
// row after a prompt chunk): the matrix products as gemv kernels over the rows instead of GEMM tiles
// built for many rows.
GateVerdict batch_small(In, Gates&, const Schedule&) {
    return {true, "batch steps of up to batch.small_rows (8) rows through the gemv kernels: the weights "
                  "streamed once for the rows (at 32 rows a step the GEMM is faster)"};
}

// Steps of 2 .. batch.small_rows rows (a server's concurrent slots) through a third batch list whose
// split-layout Q4_0/Q8_0 gemvs take batch.xrows rows a block: each weight row read once for them
// (gemv.cu XROWS); one-row steps keep the small-step list.
GateVerdict batch_xrows(In in, Gates& g, const Schedule&) {
    std::string why;
    if (!g.batch_small) why = "batch.small=gemm: no gemv list for small steps";
    else if (in.opt.batch_xrows < 2) why = "batch.xrows=0: each row of a step reads the weights";
    return {true, fmt::format("steps of 2 or more rows: split-layout Q4_0/Q8_0 gemvs read each weight row once for {} rows",
                              in.opt.batch_xrows),
            why};
}

// The batch phase's GEMM list runs a step's mixture-of-experts layers as grouped GEMMs: the rows
// sorted by expert (moe_group.cu), each expert's rows as tensor-core tiles over its matrices
// (gemm.cu GROUPED), then the weighted combine; a layer whose expert matrices gemm.cu cannot take
// keeps the rows kernels, and so do the small-step lists (moe.cu: each row reads its experts' rows).
GateVerdict moe_batch(In in, Gates&, const Schedule&) {
    const ModelConfig& c = in.cfg;
    if (!c.moe()) return {false, "no mixture-of-experts layers"};
    std::string why;
    if (c.dim % 32 != 0 || c.expert_ff % 32 != 0)
        why = fmt::format("dim {} and expert width {}: gemm.cu takes multiples of 32", c.dim, c.expert_ff);
    return {true, "the GEMM list's experts as grouped GEMMs: a step's rows sorted by expert, each expert's rows as "
                  "tensor-core tiles over its matrices (moe.bm rows), then the weighted combine; the small-step lists "
                  "keep the rows kernels",
            why};
}

// Q4_0/Q8_0 matrices in the split device layout: their 18/34-byte blocks are only 2-aligned, so
// 16-byte loads need the quants and the scales in separate runs. Every weight a matrix product reads
// qualifies when its rows are whole 256-element multiples (both runs 16-byte aligned); the embedding
// table keeps GGUF blocks (embed.cu reads rows of it; a tied output projection then reads blocks too),
// and so do the mixture-of-experts weights (moe.cu stages GGUF blocks).
GateVerdict weights_layout(In in, Gates& g, const Schedule&) {
    std::set<const WeightTensor*> embed, mats;
    for (const auto* ph : {&in.plan.decode, &in.plan.prefill, &in.plan.batch})
        for (const Task& tk : *ph)
            for (const WeightTensor* w : tk.w)
                if (w) (tk.kind == K::TokenEmbd || is_moe_task(tk.kind) ? embed : mats).insert(w);
    g.split_candidates.clear();
    for (const WeightTensor* w : mats)
        if (split_layout_type(w->type) && w->cols % 256 == 0 && w->rows > 1 && !embed.count(w)) g.split_candidates.insert(w);
    const bool any = !g.split_candidates.empty();
    return {any, any ? fmt::format("{} Q4_0/Q8_0 matrices with rows of a multiple of 256 elements: quants and f16 scales "
                                   "in separate 16-byte-aligned runs per row (16-byte loads, no shared-memory staging); "
                                   "the embedding table keeps GGUF blocks",
                                   g.split_candidates.size())
                     : "no Q4_0/Q8_0 matrix with rows of a multiple of 256 elements: GGUF blocks"};
}

// Steps of batch.imma_from .. batch.imma_rows rows (a server's concurrent slots) through a GEMM list
// whose split-layout Q4_0/Q8_0 products run on integer tensor cores (gemm.cu MMA=3: x as Q8_0 rows,
// the weights' quants straight into mma.sync m16n8k32 s8, each block's sum scaled in f32), tiles of
// 32 rows instead of the 128-row f16 tiles built for prompt chunks; before the small-step lists where
// both take a step. The bounds, 5 and 64 by default: on the H100 the x-rows gemvs win at 2 and 4
// rows, this list at 8 to 64 (docs/performance.md).
GateVerdict batch_imma(In in, Gates&, const Schedule& s) {
    if (in.plan.batch.empty()) return {false, "no batch phase"};
    if (s.split_weights.empty()) return {false, "no split-layout Q4_0/Q8_0 matrix (weights.layout)"};
    const ScheduleOptions& o = in.opt;
    std::string why;
    if (gemm_mma_supported(GgmlType::Q4_0, in.dev.cc(), &why, 3) && o.batch_imma_rows < o.batch_imma_from)
        why = fmt::format("batch.imma_rows={} < batch.imma_from={}: no step for the list", o.batch_imma_rows,
                          o.batch_imma_from);
    return {true, fmt::format("steps of {} .. {} rows: split-layout Q4_0/Q8_0 products on integer tensor cores "
                              "(mma.sync m16n8k32 s8, x as Q8_0 rows), tiles of up to 32 rows",
                              o.batch_imma_from, o.batch_imma_rows),
            why};
}

GateVerdict launch_pdl(In in, Gates&, const Schedule&) {
    const bool sm90 = in.dev.cc_major >= 9;
    return {sm90,
            sm90 ? cc_text(in.dev) + ": decode kernels launched with programmatic stream serialization, each waits "
                                     "(griddepcontrol.wait) before reading its inputs, so launch and prologue overlap "
                                     "the previous kernel"
                 : cc_text(in.dev) + ": no programmatic dependent launch (sm_90+)",
            "", sm90 ? "" : "needs compute capability 9.0+"};
}

// The server's small steps (the batch.small gemv list) launched with PDL as decode is: every kernel
// of that list waits before reading an earlier kernel's output. The GEMM list stays serial
// (gemm.cu / convert.cu have no PDL wait).
GateVerdict batch_pdl(In, Gates& g, const Schedule&) {
    std::string why;
    if (!g.batch_small) why = "batch.small=gemm: no gemv list for small steps";
    else if (!g.pdl) why = "launch.pdl=serial: no programmatic dependent launch";
    return {true, "the small-step gemv list launched with PDL as decode", why};
}

GateVerdict rope_angles(In in, Gates&, const Schedule&) {
    const size_t bytes = rope_table_bytes(in.plan, in.cfg);
    const size_t cap = size_t(256) << 20;
    const bool want = in.cfg.n_rot > 0 && bytes <= cap;
    const double mib = double(bytes) / double(1 << 20);
    return {want, want ? fmt::format("RoPE (cos, sin) of every (position, pair) computed once on the host as the CPU "
                                     "computes them, {} x {} pairs ({:.1f} MiB), read by the rope kernels",
                                     in.plan.n_ctx, in.cfg.n_rot / 2, mib)
                       : fmt::format("a table of {} x {} pairs would take {:.1f} MiB (> 256): angles computed per pair",
                                     in.plan.n_ctx, in.cfg.n_rot / 2, mib)};
}

GateVerdict rope_fuse(In in, Gates& g, const Schedule&) {
    const bool fuse = in.opt.fuse && g.rope_table;
    return {fuse, fuse ? "RoPE and the KV-cache store in the q/k/v gemv's epilogue (angles from the table) where one "
                         "launch serves q, k and v and RoPE pairs are adjacent: one launch per layer less"
                  : !in.opt.fuse ? "--no-fuse"
                                 : "angles computed per pair: the epilogue would carry them"};
}

// With PDL the split-layout gemvs load their first weight step before the wait; plain F16/F32
// gemvs were slower that way and wait.
GateVerdict gemv_early(In, Gates& g, const Schedule& s) {
    const bool early = g.pdl && !s.split_weights.empty();
    return {early, early ? "PDL: the split-layout (Q4_0/Q8_0) gemvs load their first weight step before "
                           "griddepcontrol.wait, so the weight stream starts while the previous kernel drains "
                           "(plain F16/F32 gemvs wait: measured slower)"
                   : !g.pdl ? "no programmatic dependent launch: nothing to overlap"
                            : "no split-layout matrix (plain F16/F32 gemvs wait: measured slower)"};
}

GateVerdict gemv_grid(In, Gates&, const Schedule& s) {
    bool wide = false;
    for (const WeightTensor* w : s.split_weights) wide = wide || w->cols >= kCapCols;
    return {wide, wide ? "split-layout gemvs of >= 4096 columns: at most 2 blocks per SM, each quantizes x once "
                         "and loops over its row groups"
                       : "no split-layout matrix of >= 4096 columns: one block per row group"};
}

// split-layout matrices of >= 4096 columns and rows (gemv.load, gemv.trigger)
bool wide_split(const Schedule& s) {
    bool wide = false;
    for (const WeightTensor* w : s.split_weights) wide = wide || (w->cols >= kCapCols && w->rows >= kCapCols);
    return wide;
}

// sm_90 (cp.async.bulk + mbarrier transaction counts): decode's split-layout gemvs get their weights
// through per-warp shared-memory rings filled by bulk copies (gemv.cu BULK), one block per SM. By
// default for split gemvs of >= 4096 columns and rows (smaller matrices have too few row sets per SM
// for the rings) and plain F16 / BF16 / F32 matrices of any size.
GateVerdict gemv_load(In in, Gates&, const Schedule& s) {
    const bool sm90 = in.dev.cc_major >= 9;
    const bool wide = wide_split(s);
    bool plain = false;
    for (const Task& tk : in.plan.decode)
        for (const WeightTensor* w : tk.w)
            plain = plain || (w && tk.kind != K::TokenEmbd && w->rows > 1 && is_plain(w->type) && w->cols % 256 == 0);
    return {sm90 && (wide || plain),
            !sm90 ? cc_text(in.dev) + ": no cp.async.bulk"
            : !(wide || plain)
                ? "no split-layout (Q4_0/Q8_0) matrix of >= 4096 columns and rows, no F16/BF16/F32 matrix of 256-column "
                  "multiples: 16-byte loads into registers"
                : "sm_90: split-layout (Q4_0/Q8_0) gemvs of >= 4096 columns and rows and F16/BF16/F32 gemvs stream their "
                  "rows by cp.async.bulk into per-warp shared-memory rings (~200 KiB per block, 16 warps, one block per "
                  "SM), the first items before the PDL wait",
            "", sm90 ? "" : "needs compute capability 9.0+"};
}

// gemv.cu TRIGGER_EARLY: a split-layout bulk gemv lets the next kernel launch at its own start
// instead of once each warp's last copy is out (slower on the F16 bulk and the lanes gemvs).
GateVerdict gemv_trigger(In, Gates& g, const Schedule& s) {
    const bool start = g.pdl && g.gemv_bulk && wide_split(s);
    return {start,
            start ? "PDL: split-layout bulk gemvs let the next kernel launch at their start (its blocks take the SMs as "
                    "this one's leave them); other gemvs trigger once their last loads are out"
                  : "no split-layout bulk gemv: every gemv triggers once its last loads are out (the start trigger "
                    "measured slower on F16 bulk and lanes gemvs)",
            g.pdl ? "" : "no programmatic dependent launch: nothing to trigger"};
}

// gemv.cu XQ_OUT / XQ_IN: the SwiGLU gate/up gemv also writes its output quantized to Q8_0 blocks
// in the layout ffn_down's prologue builds, each group of 32 rows completed by the pair of blocks
// (one cluster) whose warps computed it; ffn_down's prologue is then one bulk copy. By default where
// ffn_down is Q4_0 (forced: Q8_0 too). The decode attention does the same for attn_output.
GateVerdict gemv_xq(In in, Gates& g, const Schedule& s) {
    const DeviceInfo& d = in.dev;
    bool q4 = false;
    for (const WeightTensor* w : s.split_weights) q4 = q4 || w->type == GgmlType::Q4_0;
    std::string why;
    if (d.cc_major < 9) why = cc_text(d) + ": no thread-block clusters";
    else if (!g.gemv_bulk) why = "gemv.load=lanes: the producer's pairs are the bulk gemvs' blocks";
    else if (d.clusters_1pm[2] > 0 && 2 * d.clusters_1pm[2] < d.sm_count)
        why = fmt::format("only {} clusters of 2 blocks fit at once on {} SMs", d.clusters_1pm[2], d.sm_count);
    return {q4,
            q4 ? "sm_90: the SwiGLU gemv quantizes its output for the Q4_0 split-layout gemv after it (each group of 32 "
                 "rows completed by a cluster of 2 blocks through distributed shared memory; the gemv before it in "
                 "clusters of 2 too), the decode attention its output for attn_output; those gemvs' x prologue is one "
                 "bulk copy" +
                     std::string(in.opt.gemv_xq_norm ? "; gemv.xq_norm=on: the embedding and the residual gemvs quantize "
                                                       "the residual stream times the next norm weight for the normed "
                                                       "gemvs too"
                                                     : "")
               : "no Q4_0 split-layout matrix: each block quantizes x (the producer measured slower on 8B Q8_0)",
            why};
}

// Decode's greedy pick inside the output gemv (gemv.cu ARGMAX): a second decode list that greedy
// steps replay, while sampled steps keep the pick kernel's list. It gains where the output gemv is a
// bulk one and loses on the lanes gemvs, so by default the lowering settles it from decode's lowered
// output step (Gates::sample_fuse_auto).
GateVerdict sample_fuse(In in, Gates& g, const Schedule&) {
    std::string why;
    if (!g.gemv_warp) why = "gemv.reduce=tree: the pick reduces with warp shuffles";
    g.sample_fuse_auto = why.empty() && !in.opt.force.count("sample.fuse");
    return {true,
            "greedy steps replay a second graph whose bulk output gemv picks the token (the argmax kernel's launch and "
            "logits read saved); sampled steps keep decode's list and its draw kernel",
            why};
}

// Decode's pick kernel reads the sampling parameters from a device buffer and, at a temperature > 0,
// draws (top-k by per-block sorts and a one-warp merge, then top-p, min-p, temperature and the seeded
// draw of runtime/sampler.cpp): sampled decode keeps its logits on the device and runs ahead like
// greedy. The largest top-k is what the last block's shared memory holds (<= 64).
GateVerdict sample_draw(In in, Gates& g, const Schedule&) {
    const DeviceInfo& d = in.dev;
    const int parts = sample_parts(d);
    const int64_t p2 = int64_t(pow2_at_least(sample_chunk(in.cfg, parts)));
    const int64_t room = int64_t(d.max_shared_block()) - 64 * 32 - 1024;  // static: the k best, 3 terms each
    g.draw_kmax = int(std::min<int64_t>(64, room / (8 * int64_t(parts))));
    std::string why;
    if (d.warp_size != 32) why = fmt::format("warp size {} != 32: the merge is one warp's shuffles", d.warp_size);
    else if (g.draw_kmax < 1 || 8 * p2 > room)
        why = fmt::format("{} logits a block: the sort needs more shared memory than {} bytes", p2, d.max_shared_block());
    return {true,
            fmt::format("sampled decode (temperature > 0, top-k 1..{}, no penalties) draws on the device: no logits to "
                        "the host, steps queued ahead",
                        g.draw_kmax),
            why};
}

// Decode's pick kernel (argmax.cu FUSE_ADVANCE, or the fused gemv's ARGMAX_ADVANCE) also writes the
// pick into the token slot and adds one to the position: a queued greedy step needs no copies first.
GateVerdict step_advance(In, Gates&, const Schedule&) {
    return {true, "the pick kernel writes the pick into the token slot and advances the position: a queued greedy "
                  "step is the graph launch alone"};
}

// --kv-f32 or --force-variant kv.type (resolved into the options by schedule_build)
GateVerdict kv_type(In in, Gates&, const Schedule&) {
    const ScheduleOptions& o = in.opt;
    return {!o.kv_f32, !o.kv_f32                  ? "half KV halves attention bytes"
                       : o.force.count("kv.type") ? "--force-variant kv.type=float"
                                                  : "--kv-f32"};
}

}  // namespace

const std::vector<GateSpec>& gate_table() {
    using G = Gates;
    static const std::vector<GateSpec> table = {
        {"gemv.reduce", "warp", "tree", warp_reduce, &G::gemv_warp},
        {"norm.reduce", "warp", "tree", warp_reduce, &G::norm_warp},
        {"sample.reduce", "warp", "tree", warp_reduce, &G::sample_warp},
        {"attn.algo", "split", "onepass", attn_algo, &G::attn_split},
        {"gemm.mma", "mma", "simt", gemm_mma, &G::gemm_mma},
        {"gemm.wgmma", "wgmma", "mma", gemm_wgmma, &G::gemm_wgmma},
        {"gemm.split_k", "split", "whole", gemm_split_k, &G::gemm_split_k},
        {"attn.prefill", "mma", "rows", attn_prefill, &G::attn_prefill_mma},
        {"attn.vsum", "half2", "float", attn_vsum, &G::attn_vh2},
        {"attn.early", "kv", "wait", attn_early, &G::attn_early},
        {"attn.kv", "tma", "ld", attn_kv, &G::attn_tma},
        {"batch.small", "gemv", "gemm", batch_small, &G::batch_small},
        {"batch.xrows", "shared", "per-row", batch_xrows, &G::batch_xrows},
        {"moe.batch", "grouped", "rows", moe_batch, &G::moe_group},
        {"weights.layout", "split", "blocks", weights_layout,
         [](In, Gates& g, Schedule& s, bool f) {
             if (f) s.split_weights = std::move(g.split_candidates);
         }},
        {"batch.imma", "imma", "gemm", batch_imma, &G::batch_imma},
        {"launch.pdl", "pdl", "serial", launch_pdl, &G::pdl},
        {"batch.pdl", "pdl", "serial", batch_pdl, &G::batch_pdl},
        {"rope.angles", "table", "computed", rope_angles, &G::rope_table},
        {"rope.fuse", "gemv", "kernel", rope_fuse, &G::rope_fuse},
        {"gemv.early", "load", "wait", gemv_early, &G::gemv_early, &G::gemv_early_all},
        {"gemv.grid", "capped", "full", gemv_grid, &G::gemv_cap, &G::gemv_cap_all},
        {"gemv.load", "bulk", "lanes", gemv_load, &G::gemv_bulk, &G::gemv_bulk_all},
        {"gemv.trigger", "start", "loads", gemv_trigger, &G::gemv_trigger, &G::gemv_trigger_all},
        {"gemv.xq", "producer", "block", gemv_xq, &G::gemv_xq, &G::gemv_xq_all},
        {"sample.fuse", "gemv", "kernel", sample_fuse, &G::sample_fuse},
        {"sample.draw", "device", "host", sample_draw,
         [](In, Gates& g, Schedule& s, bool f) {
             g.sample_draw = f;
             s.draw_max_k = f ? g.draw_kmax : 0;
         }},
        {"step.advance", "device", "host", step_advance,
         [](In, Gates& g, Schedule& s, bool f) {
             g.step_advance = f;
             s.decode_advance = f;
         }},
        {"kv.type", "half", "float", kv_type, [](In, Gates&, Schedule& s, bool f) { s.kv_type = f ? "half" : "float"; },
         true},
    };
    return table;
}

Gates decide_gates(const GateInputs& in, Schedule& s) {
    Gates g;
    for (const GateSpec& spec : gate_table()) {
        const GateVerdict v = spec.decide(in, g, s);
        const std::string a = spec.variant, b = spec.sibling;
        bool first = v.want && v.missing.empty();
        std::string why = v.missing.empty() ? v.reason : v.missing;
        if (auto it = in.opt.force.find(spec.name); !spec.own_force && it != in.opt.force.end()) {
            if (it->second != a && it->second != b)
                fail_usage("--force-variant {}={}: expected {} or {}", spec.name, it->second, a, b);
            first = it->second == a;
            why = "forced by --force-variant";
        }
        s.gates.push_back({spec.name, first ? a : b, first ? b : a, why});
        if (first && !v.missing.empty()) fail_usage("--force-variant {}={}: {}", spec.name, a, v.missing);
        if (first && !v.refuse.empty()) fail_usage("--force-variant {}={}: {}", spec.name, a, v.refuse);
        if (spec.flag) g.*spec.flag = first;
        if (spec.all) g.*spec.all = first && in.opt.force.count(spec.name);
        if (spec.set) spec.set(in, g, s, first);
    }
    return g;
}

}  // namespace jitllm
