// Schedule building: fusion of consecutive tasks, capability gates, launch geometry, arguments.
#include "backends/cuda/schedule.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <set>

#include "backends/cuda/gemm_variant.h"
#include "backends/cuda/lowering/gates.h"
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

class Lowering {
public:
    Lowering(const Plan& p, const DeviceInfo& d, const ScheduleOptions& o, Schedule& s)
        : p_(p), c_(*p.config), d_(d), o_(o), s_(s) {}

    void decide_gates() { g_ = jitllm::decide_gates({p_, c_, d_, o_}, s_); }

    // launch.pdl: every decode / prefill kernel calls griddepcontrol.wait before it reads what an
    // earlier kernel wrote (common.cuh), so all of them may be launched programmatically
    void mark_pdl(std::vector<KernelStep>& steps) const {
        if (!g_.pdl) return;
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

    void lower_decode_short(const Plan& plan) {
        if (tma_from(o_) <= 0 || !g_.attn_tma) return;
        g_.attn_tma = false;
        lower(plan.decode, s_.decode_short);
        g_.attn_tma = true;
        mark_pdl(s_.decode_short);
        JITLLM_CHECK(s_.decode_short.size() == s_.decode.size(), "--attn-tma-from: {} kernels against {}",
                     s_.decode_short.size(), s_.decode.size());
        s_.decode_short_below = std::min(tma_from(o_), p_.n_ctx);
    }

    // sample.fuse=gemv: decode_greedy (and decode_short_greedy beside decode_short), the same
    // lowering with the pick in the output gemv
    void lower_decode_greedy(const Plan& plan) {
        if (g_.sample_fuse_auto) {  // the default: the fused pick where decode's output gemv is bulk
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
        s_.scratch["rope_table"] = rope_table_bytes(p_, c_);
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
    void tma_attention(size_t i, const Task& a) {
        const int hd = c_.head_dim;
        // (chunk and slots checked by the gate: attn.kv=ld where they do not fit, forcing tma refused)
        const int tp = o_.attn_chunk > 0 ? o_.attn_chunk : 128;
        const int stages = tma_stages(o_);
        const int smem = tma_smem(c_, tp, stages);
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
                const int parts = g_.sample_draw ? sample_parts(d_) : 8;
                Variant v("cuda/argmax.cu", "");
                v.set("N", c_.n_vocab).set("BLOCK", 256).set("REDUCE", int(g_.sample_warp))
                    .set("N_PARTS", parts).set("FUSE_ADVANCE", 0);
                if (g_.sample_draw) v.set("DRAW", 1).set("KMAX", g_.draw_kmax);
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
                    s_.scratch["draw_rows_keys"] = rows * size_t(parts) * size_t(g_.draw_kmax) * 8;
                    k.smem = unsigned(8 * std::max<int64_t>(pow2_at_least(sample_chunk(c_, parts)),
                                                            int64_t(parts) * g_.draw_kmax));
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
                const int parts = sample_parts(d_);
                Variant v("cuda/argmax.cu", "");
                v.set("N", c_.n_vocab).set("BLOCK", 256).set("REDUCE", int(g_.sample_warp))
                    .set("N_PARTS", parts).set("FUSE_ADVANCE", int(g_.step_advance));  // step.advance=device
                if (g_.sample_draw) v.set("DRAW", 1).set("KMAX", g_.draw_kmax);        // sample.draw=device
                auto& k = add({i}, g_.sample_draw ? "draw" : "argmax", v);
                k.grid = Dim3(unsigned(parts)); k.block = Dim3(256);
                k.args = {slot(Slot::Logits), scratch("argmax_val"), scratch("argmax_idx"),
                          scratch("argmax_counter"), scratch("token_out"), slot(Slot::Pos), slot(Slot::Token),
                          g_.step_advance ? host_ring() : null(),  // step.advance=device: the pick for the host too
                          g_.sample_draw ? scratch("draw_params") : null(), g_.sample_draw ? scratch("draw_keys") : null()};
                if (g_.sample_draw) {
                    s_.scratch["draw_params"] = 32;  // DrawParams
                    s_.scratch["draw_keys"] = size_t(parts) * size_t(g_.draw_kmax) * 8;
                    k.smem = unsigned(8 * std::max<int64_t>(pow2_at_least(sample_chunk(c_, parts)),
                                                            int64_t(parts) * g_.draw_kmax));
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
    bool small_ = false;  // lowering the small-step batch list (gate batch.small)
    int xrows_ = 0;       // ... with XROWS gemvs (gate batch.xrows)
    std::optional<XqProducer> xq_prev_;  // gemv.xq: the gemv just lowered, if it can produce for the next
    std::optional<NormProducer> norm_prev_;  // --gemv-xq-norm: the kernel just lowered, if it can produce for a normed gemv
    size_t norm_i_ = SIZE_MAX;  // small-step list: a norm task waiting to be fused into the next gemv
    bool x16_next_ = false, x16_now_ = false;  // the norm wrote 16-bit activations for the next task
};

}  // namespace

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
