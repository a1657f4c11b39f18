// The CUDA lowering's capability gates as one table: each gate has a name, the variant it chooses and
// its sibling, a predicate over the device, the model and the options (what it wants, what would be
// missing for the first variant), and a one-line reason printed by `jitllm plan`. `--force-variant
// GATE=VARIANT` overrides any gate's choice; forcing a variant whose requirement is missing is refused.
// Gates are decided in table order: a later gate may read an earlier one's choice.
// (Measurements behind the defaults: docs/performance.md.)
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "backends/cuda/schedule.h"

namespace jitllm {

// The gates' choices, read by the lowering.
struct Gates {
    bool gemv_warp = false, norm_warp = false, attn_split = false, sample_warp = false;
    bool gemm_mma = false;          // tensor-core matrix-matrix kernels in the batch phase
    bool gemm_wgmma = false;        // Hopper warpgroup MMA for F16/BF16 weights
    bool gemm_split_k = false;      // gemm.split_k=split: a step of one tile row splits the wgmma GEMM's K over grid.z
    bool attn_prefill_mma = false;  // batch-phase causal attention on tensor cores
    bool attn_vh2 = false;          // attn.vsum=half2: decode attention's V sums in f16 pairs per tile
    bool attn_tma = false;          // attn.kv=tma: split-KV decode attention fed by tensor-map copies, on tensor cores
    bool batch_small = false;       // batch steps of few rows through the gemv kernels
    bool batch_pdl = false;         // ... launched with PDL (gate batch.pdl)
    bool batch_xrows = false;       // a third list for steps of 2+ rows (gate batch.xrows)
    bool batch_imma = false;        // a GEMM list of integer tensor-core products for decode-sized steps (gate batch.imma)
    bool moe_group = false;         // moe.batch=grouped: the GEMM list's experts as grouped GEMMs
    bool rope_table = false;        // rope.angles=table: (cos, sin) read from the host-filled table
    bool rope_fuse = false;         // rope.fuse=gemv: RoPE + KV store in the q/k/v gemv's epilogue
    bool pdl = false;               // launch.pdl=pdl: decode / prefill kernels launched programmatically
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
    bool attn_early = false;        // attn.early=kv: the split SIMT decode kernel loads its first chunk before the PDL wait
    bool sample_fuse = false;       // sample.fuse=gemv: decode's greedy pick inside the output gemv (gemv.cu ARGMAX)
    bool sample_fuse_auto = false;  // sample.fuse at its default: settled once decode's output step is lowered
    bool step_advance = false;      // step.advance=device: decode's pick kernel advances the token and position slots
    bool sample_draw = false;       // sample.draw=device: decode's pick kernel also draws (argmax.cu DRAW)
    int draw_kmax = 0;              // sample.draw=device: argmax.cu KMAX
    std::set<const WeightTensor*> split_candidates;  // weights.layout: the matrices the split layout fits
};

// What a gate's predicate reads: the plan (model and context), the device, the options, and the
// gates decided before it.
struct GateInputs {
    const Plan& plan;
    const ModelConfig& cfg;
    const DeviceInfo& dev;
    const ScheduleOptions& opt;
};

// A predicate's answer. `missing` (non-empty) names what the first variant needs and this device,
// model or option set lacks: the sibling then, with that as the reason, and forcing the first variant
// is refused with it. `refuse` refuses forcing the first variant without changing the reason.
struct GateVerdict {
    GateVerdict(bool w, std::string r, std::string m = {}, std::string f = {})
        : want(w), reason(std::move(r)), missing(std::move(m)), refuse(std::move(f)) {}
    bool want = false;
    std::string reason;
    std::string missing;
    std::string refuse;
};

struct GateSpec {
    using Decide = GateVerdict (*)(const GateInputs& in, Gates& g, const Schedule& s);
    using Set = void (*)(const GateInputs& in, Gates& g, Schedule& s, bool first);
    // a gate whose choice is one flag of Gates (`all`: set too where the first variant is forced,
    // which then applies beyond the default's scope)
    GateSpec(const char* n, const char* v, const char* sib, Decide d, bool Gates::* f, bool Gates::* a = nullptr)
        : name(n), variant(v), sibling(sib), decide(d), flag(f), all(a) {}
    // a gate whose choice sets more than a flag
    GateSpec(const char* n, const char* v, const char* sib, Decide d, Set st, bool own = false)
        : name(n), variant(v), sibling(sib), decide(d), set(st), own_force(own) {}
    const char* name;     // e.g. "gemv.reduce"
    const char* variant;  // the first variant, e.g. "warp"
    const char* sibling;  // e.g. "tree"
    Decide decide;
    bool Gates::* flag = nullptr;  // true: `variant`
    bool Gates::* all = nullptr;
    Set set = nullptr;       // records the choice (true: `variant`)
    bool own_force = false;  // the force resolved into the options before (kv.type): no override here
};

const std::vector<GateSpec>& gate_table();

// Decides every gate in table order into `s.gates` (and the schedule fields gates own).
Gates decide_gates(const GateInputs& in, Schedule& s);

// Figures the gates and the lowering share.
constexpr int kCapCols = 4096;  // gate gemv.grid=capped: split-layout gemvs of at least this many columns
// decode's pick kernel after the output gemv keeps its reason (sample.fuse settled by the lowering)
extern const char* const kFusePickLanes;
inline bool is_plain(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16; }
inline int64_t pow2_at_least(int64_t n) {
    int64_t p = 1;
    while (p < n) p *= 2;
    return p;
}
// gate rope.angles=table: (cos, sin) floats for every (position, pair)
inline size_t rope_table_bytes(const Plan& p, const ModelConfig& c) {
    return size_t(p.n_ctx) * size_t(std::max(0, c.n_rot / 2)) * 8;
}
// decode's pick kernel: one block per SM, each a chunk of the logits (argmax.cu CHUNK)
inline int sample_parts(const DeviceInfo& d) { return std::max(1, std::min(1024, d.sm_count)); }
inline int sample_chunk(const ModelConfig& c, int parts) { return ((c.n_vocab + parts - 1) / parts + 3) / 4 * 4; }
// attention_decode_tma.cu's shared memory: 1024 bytes of alignment slack, `stages` slots of a
// tile's K and V (`tp` rows of head_dim halves each)
inline int tma_smem(const ModelConfig& c, int tp, int stages) { return 1024 + stages * 2 * c.head_dim * tp * 2; }
// its ring slots: attn.tma_stages (its own), else attn.kv_stages (shared with the register kernel), else 2
inline int tma_stages(const ScheduleOptions& o) {
    return o.attn_tma_stages > 0 ? o.attn_tma_stages : o.attn_kv_stages > 0 ? o.attn_kv_stages : 2;
}
// With attn.kv=tma, decode positions below this take a second graph with the register kernel's
// attention (the two kernels cross near there on 8B Q8_0); 0 where attn.kv is forced.
constexpr int kTmaFromAuto = 768;
inline int tma_from(const ScheduleOptions& o) {
    if (o.attn_tma_from >= 0) return o.attn_tma_from;
    return o.force.count("attn.kv") ? 0 : kTmaFromAuto;
}

}  // namespace jitllm
