// The CUDA lowering of a Plan (schedule.h), inside: class Lowering walks a phase's tasks and emits
// kernel steps. Its parts live beside this header by concern: gates.cpp (capability gates),
// decode.cpp (the task walk of every phase, the decode lists), gemv.cpp, xq.cpp (gemv.xq's producer
// links), attention.cpp, batch.cpp (the batch phase's products: GEMM, row-batched gemv), build.cpp
// (schedule_build), accounting.cpp and describe.cpp (launch counts, --print-plan).
#pragma once

#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/gemm_variant.h"
#include "backends/cuda/lowering/gates.h"
#include "backends/cuda/schedule.h"

namespace jitllm::lowering {

using K = TaskKind;

inline std::string lowercase(std::string s) {
    for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// kernel-side weight type names (quant_blocks.cuh)
inline std::string wtype_define(GgmlType t) {
    std::string n = type_name(t);
    for (auto& c : n) c = char(std::toupper(static_cast<unsigned char>(c)));
    return n;  // F32 F16 BF16 Q8_0 Q4_0 ... Q4_K
}

// A float literal that round-trips: "0.125f", "1.0f", "1e-05f".
inline std::string fstr(float f) {
    std::string s = fmt::format("{:.9g}", f);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s + "f";
}

// a kernel step's integer define, or dflt when it is not set
inline int define_int(const KernelStep& k, const char* name, int dflt) {
    for (const auto& [n, v] : k.variant.defines)
        if (n == name) return std::atoi(v.c_str());
    return dflt;
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

    void lower(const std::vector<Task>& tasks, std::vector<KernelStep>& out);

    // A bulk gemv right after one on fewer blocks than SMs (8B Q4_0: gate/up after attn_output on 76
    // of 132): its first blocks land on the SMs that one leaves free, microseconds before its end, and
    // fill their whole ring before the PDL wait (gemv.cu BULK_PRE_B: the free SMs' count); the others
    // keep their early slots, so that x is not queued behind more copies where a block lands late.
    // gemv.early_blocks.KIND=B sets one bulk gemv's count (blocks 0 .. B-1), gemv.early_blocks=off
    // leaves the others at none
    void early_blocks(std::vector<KernelStep>& steps) const;

    void lower_decode_short(const Plan& plan);

    // sample.fuse=gemv: decode_greedy (and decode_short_greedy beside decode_short), the same
    // lowering with the pick in the output gemv
    void lower_decode_greedy(const Plan& plan);

    bool batch_small() const { return g_.batch_small; }
    bool batch_pdl() const { return g_.batch_pdl; }
    bool batch_xrows() const { return g_.batch_xrows; }
    bool batch_imma() const { return g_.batch_imma; }


    // gemv.load=bulk geometry (gemv.cu BULK): an item is `chunk` columns of a warp's `dr` rows
    // (quants, then scales; chunk: a multiple of 256 dividing the columns, at most 2048); each of
    // `warps` warps has a ring of `slots` items, 2 to 16, in gemv.bulk_kb (default 200 KiB of
    // rings per block, less what the x copy of `x_bytes` and 2 KiB of static shared memory leave
    // of the block's opt-in maximum). The largest chunk that still leaves 4 slots (3 items in
    // flight while one is read; gemv.bulk_min_slots=N: N slots), else the smallest.
    struct Bulk {
        int chunk = 0, slots = 0, ring_bytes = 0;
        bool fits = false;  // 2 slots of the smallest item at least (else the gemv keeps `lanes`)
    };
    // bytes of `c` columns of one row as the rings hold them: split Q4_0 / Q8_0 quants + f16
    // scales, or plain elements (gemv.cu BULK_RB, layer_tail.cu LT_RB)
    static int chunk_bytes(GgmlType t, int c) {
        return t == GgmlType::Q4_0 ? c / 2 + c / 16 : t == GgmlType::Q8_0 ? c + c / 16 : c * int(type_traits(t).type_size);
    }
    Bulk bulk_shape(GgmlType t, int cols, int dr, int warps, int64_t x_bytes, int kb = 0) const;

    // The rope kernels' angle argument: the frequency factors (rope.angles=computed: angles per
    // pair), or the host-filled (cos, sin) table (rope.angles=table, variant define ROPE_TABLE=1)
    KArg rope_angles(Variant& v, const WeightTensor* freq);

    // The batch phase: row-wise kernels (grid over rows) and matrix-matrix products; small: the
    // products as row-batched gemv kernels (the list for steps of up to batch.small_rows rows).
    // small: the small-step gemv list (gate batch.small); xrows > 1: its split-layout Q4_0/Q8_0
    // products read each weight row once for up to xrows of a step's rows (gate batch.xrows);
    // imma: the GEMM list for decode-sized steps, its split-layout Q4_0/Q8_0 products as integer
    // tensor-core GEMMs (gate batch.imma)
    void lower_batch(const std::vector<Task>& tasks, size_t body, std::vector<KernelStep>& out, size_t& out_body,
                     bool small = false, int xrows = 0, bool imma = false);

private:
    const Task& t(size_t i) const { return (*tasks_)[i]; }
    bool is(size_t i, K k) const { return i < tasks_->size() && t(i).kind == k; }
    // Whether the matrices of one kernel are in the split layout (all or none: same type/cols)
    bool split(const std::vector<const WeightTensor*>& ws) const;
    bool split(const std::vector<KArg>& ws) const;

    KernelStep& add(std::vector<size_t> idx, const std::string& algo, Variant v);

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

    // --- rms_norm: per_row rows of D floats (a row of each batch row), in place allowed ---
    void rms_norm(size_t i, Slot in, Slot outs, int per_row, int D, const WeightTensor* w, float eps);
    // its batch-phase part: the grid over the rows; 16-bit activations out where wgmma reads them next
    void rms_norm_rows(KernelStep& k, size_t i, Slot in, Slot outs, int per_row, int D, bool weighted);
    // the row-wise kernels of embedding, RoPE + KV store and the pick, in either phase
    void embed(size_t i);
    void rope(size_t i, const Task* qk_norm = nullptr);  // qk_norm: the attn_qk_norm folded in
    void sample(size_t i);

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
        // batch.xrows (the small-step list): each block multiplies the weight rows it reads with
        // up to this many activation rows (gemv.cu XROWS; split-layout Q4_0/Q8_0, no bulk rings)
        int xrows = 0;
        // rows it writes (SwiGLU: the gate rows) and weight rows it reads
        int out_rows() const { return epi == 2 ? rows[0] : all_rows(); }
        int weight_rows() const { return epi == 2 && rows.size() == 1 ? 2 * rows[0] : all_rows(); }
        int all_rows() const {
            int n = 0;
            for (int r : rows) n += r;
            return n;
        }
    };
    void gemv(std::vector<size_t> idx, const Gemv& g);

    // A gemv kernel's geometry (gemv_shape): what its matrices, the gates and the tunables decide
    // before any define is written.
    struct GemvShape {
        GgmlType type = GgmlType::F32;  // the matrices' weight type
        int cols = 0, n_mat = 0;
        int out_rows = 0;                // rows it writes (SwiGLU: the gate rows)
        bool warp = false;               // gemv.reduce=warp: a warp per row set (REDUCE)
        bool wsplit = false;             // split-layout Q4_0 / Q8_0 matrices (WSPLIT)
        bool plain_type = false;         // F32 / F16 / BF16 weights
        bool x_smem = false;             // x in shared memory beside the weight staging
        bool bias = false;
        int64_t bulk_x = 0;              // x in shared memory: one row's int8 copy (Q4_0 / Q8_0) or floats
        bool bulk = false;               // gemv.load=bulk, with its rings in `ring`
        Bulk ring;
        int xrows = 0;                   // batch.xrows: activation rows a block multiplies (0: one)
        int block = 0;                   // threads
        int rows = 0;                    // rows per warp (REDUCE=1) or block (REDUCE=0) and pass
        int rpb = 0;                     // rows per block pass (ROWS_PER_BLOCK)
        std::string kind;                // its first task's kind (the tunables' .KIND keys)
        bool plain() const { return plain_type || wsplit; }
    };
    GemvShape gemv_shape(const std::vector<size_t>& idx, const Gemv& g) const;
    // its defines: the shape and the epilogue (rope_arg: the angles argument of EPI=4)
    Variant gemv_variant(const Gemv& g, const GemvShape& s, KArg& rope_arg);
    // its defines of the load schedule: rings, early loads before the PDL wait, pipelines, prefetch
    void gemv_load_defines(Variant& v, const Gemv& g, const GemvShape& s) const;
    // grid, block and shared memory (after_attn: it follows decode attention)
    void gemv_launch(KernelStep& k, const Gemv& g, const GemvShape& s, bool after_attn) const;
    void gemv_args(KernelStep& k, const Gemv& g, const GemvShape& s, const KArg& rope_arg);
    uint64_t gemv_bytes(const Gemv& g, const GemvShape& s) const;
    // gemv.xq=producer: links the gemv just added at `at` with the kernel before it (its x quantized
    // there) and records whether it can produce for the next
    void gemv_xq_links(KernelStep& k, const Gemv& g, const GemvShape& s);

    // gemv.xq_norm (under gemv.xq=producer): `p`, the embedding or a residual gemv whose block pass
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
    void xq_norm_link(KernelStep& p, KernelStep& c, const NormProducer& x, GgmlType ctype, const WeightTensor* nw);

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
    void xq_link(KernelStep& p, KernelStep& c, const XqProducer& x, GgmlType ctype);

    // gemv.xq=producer's consumer c (gemv.cu XQ_IN): its x, `cols` values quantized, from the scratch
    // buffer `buf` (sized here), which it returns for the producer's argument; its early ring slots
    // below
    // (norm: the groups' sums of squares after them, xq8_group_store_norm; pre 0: the slots as they are)
    KArg xq_consume(KernelStep& c, const char* buf, int cols, GgmlType ctype, int pre, bool norm = false);

    // gemv.xq=producer's Q4_0 consumer: its x prologue is one bulk copy, so more of its ring goes out
    // before its PDL wait than the default 2 of 5 slots (`pre`: ffn_down 4, attn_output 3). Not where
    // gemv.early_slots(.KIND) says otherwise; Q8_0 consumers (gemv.xq forced) keep their 3
    void xq_consumer_slots(KernelStep& c, GgmlType ctype, int pre);

    // gemv.xq=producer: the decode attention `a` just before the gemv `c` whose x is attention's
    // output quantizes that output for it (attention_decode.cu / attention_decode_tma.cu XQ_OUT: the
    // warp that writes a group's 32 outputs from its registers, in every merge path) and c copies it
    // (gemv.cu XQ_IN) instead of quantizing x itself: the same bits. The split register kernel and
    // the tensor-map kernel
    void attn_xq_link(KernelStep& a, KernelStep& c, int cols, GgmlType ctype);

    // Decode attention with attn.kv=tma (attention_decode_tma.cu): a block per (kv head, split) of
    // attn.chunk / 16 warps (64: 4; 128: 8, default; 256: 16), tiles of that many positions through a
    // ring of attn.kv_stages slots (default 2: a block's whole work at depth 4096 with 16 splits),
    // the splits filling the SMs with the blocks the shared memory allows (attn.splits: fixed), at
    // most one a tile of the context.
    void tma_attention(size_t i, const Task& a);

    static KArg rows_arg() { KArg a; a.kind = KArg::Kind::Rows; return a; }
    // The batch phase's KV block tables (scratch "kv_table", i32 [n_seq][kv_blocks_per_seq], set by
    // the backend), and the defines of a kernel that reads through them (KV_BLOCK, KV_BPS).
    KArg kv_table();
    void kv_paged(Variant& v) const;
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
    void gemm(std::vector<size_t> idx, Gemm g);
    // gate batch.imma's list: a split-layout Q4_0/Q8_0 product as gemm.cu MMA=3 (x converted to
    // Q8_0 rows first); false (nothing added) where it does not qualify
    bool gemm_imma(const std::vector<size_t>& idx, Gemm& g);
    // the GEMM kernel's arguments after the launch geometry (gemm.cu's argument list)
    void gemm_args(KernelStep& k, const Gemm& g, KArg x);
    // The batch phase's product as a GEMM
    Gemm gemm_of(const Gemv& p);
    // wgmma's 16-bit activations: sets s's wgmma tile where it applies and returns x's argument (a
    // conversion kernel first unless the norm before wrote them)
    KArg gemm_x16(size_t i, GemmSpec& s, Slot x);
    // A row-wise conversion of x before a product (convert.cu with `def` beside N and BLOCK) into
    // scratch `out`, `out_row` bytes a row for up to `rows` rows; returns that scratch
    KArg convert_rows(size_t i, const std::string& algo, std::pair<const char*, int> def, int cols, int rows, Slot x,
                      const std::string& out, uint64_t out_row);
    // The batch phase's product as a row-batched gemv (the small-step lists; K not a multiple of 32)
    void gemv_rows(std::vector<size_t> idx, Gemv v);

    // Whether the matrices of the task at i share one weight type (one product kernel).
    bool one_type(size_t i) const;

    // Whether every matrix of the task at i would run on wgmma with 16-bit activations from Xb,
    // and their type (F16 or BF16).
    bool wgmma_all(size_t i, GgmlType* type) const;

    // The mixture-of-experts tasks at i (moe.cpp), with ffn_norm when it heads them; decode,
    // prefill and batch alike (batch_: grids over the rows). moe_at: whether task i is one.
    bool moe_at(size_t i) const;
    size_t lower_moe_at(size_t i);
    // The tasks an expert down product at i takes with it, in both lowerings: the shared expert's
    // down (at i + 1) and, fused, the residual after them
    struct MoeDownGroup {
        std::vector<size_t> idx;
        bool shared = false, resid = false;
    };
    MoeDownGroup moe_down_group(size_t i) const;
    // The batch phase's GEMM list (gate moe.batch=grouped; moe_batch.cpp): whether task i's layer
    // runs its experts as grouped GEMMs (its expert matrices suit gemm.cu; the router stays in
    // moe.cpp), and that lowering
    bool moe_grouped_at(size_t i) const;
    size_t lower_moe_grouped_at(size_t i);
    // the grouped GEMM of task i's layer: gate/up (epi 2) or down; its MMA level and tile rows are
    // the layer's (the group list's tiles serve both)
    GemmSpec moe_gemm_spec(size_t i, bool down) const;
    // the group list of task i's layer (moe_group.cu MG=0), a grouped GEMM, the weighted combine
    void moe_group_list(size_t i, const GemmSpec& s);
    void moe_gemm(std::vector<size_t> idx, const GemmSpec& s, KArg w0, KArg w1, KArg x, KArg y);
    void moe_combine(const std::vector<size_t>& idx, const GemmSpec& s, bool shared, bool resid);
    // Decode attention: the tensor-map kernel (gate attn.kv=tma) or the register kernel
    // (attention_decode.cu), split-KV (gate attn.algo=split) or one block per kv head.
    void decode_attention(size_t i, const Task& a);
    // The batch phase's causal attention: tensor-core tiles (gate attn.prefill=mma) or a block per
    // (kv head, row)
    void batch_attention(size_t i, const Task& a);

    // Emits the kernels starting at task i (either phase); returns the number of tasks consumed.
    size_t lower_at(size_t i);

    void fill_qkv(const Task& a, Gemv& g);

    // rope.fuse=gemv: attn_rope + attn_kv_store after the q/k/v task at iq go into its gemv (EPI=4)
    // when one launch serves all three matrices and RoPE pairs are adjacent (norm style, no
    // q/k norm in between). Adds the tasks to idx; returns how many it took (0 or 2).
    size_t fuse_rope(size_t iq, Gemv& g, std::vector<size_t>& idx);

    // A product: a gemv in decode / prefill; in the batch phase a GEMM, or a row-batched gemv.
    void product(std::vector<size_t> idx, const Gemv& g);
    // The products of one task (q/k/v, gate/up): one launch when their matrices share a weight type,
    // else one per matrix.
    void product_each(const std::vector<size_t>& idx, const Gemv& g);
    // The residual add (add.cu) and SwiGLU (swiglu.cu) of task i; in the batch phase over the rows.
    void pointwise(size_t i);

    void fill_gate_up(const Task& a, Gemv& g);
    // gate/up with SwiGLU in the epilogue (EPI=2): one output; one matrix where up rows follow gate rows
    void swiglu_out(Gemv& g) const;
    void fill_output(const Task& a, Gemv& g);

    // norm + following matmul(s) in one kernel (NORM_IN), with SwiGLU for the FFN.
    size_t lower_norm_matmul(size_t i);

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
    bool imma_ = false;   // lowering the integer tensor-core GEMM list (gate batch.imma)
    std::optional<XqProducer> xq_prev_;  // gemv.xq: the gemv just lowered, if it can produce for the next
    std::optional<NormProducer> norm_prev_;  // gemv.xq_norm: the kernel just lowered, if it can produce for a normed gemv
    bool x16_next_ = false, x16_now_ = false;  // the norm wrote 16-bit activations for the next task
};

}  // namespace jitllm::lowering
