// The OpenCL lowering's capability gates as one table, as the CUDA one (backends/cuda/lowering/
// gates.h): each gate has a name, a variant and its sibling, a predicate over what the device
// reports (extensions, OpenCL C features), the model and the options, and a one-line reason
// (the gate report of --print-plan). `--force-variant GATE=VARIANT` overrides a choice; forcing a
// side whose requirement the device lacks is refused with that requirement named.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "backends/opencl/cl_schedule.h"

namespace jitllm {

// batch.xrows=shared: activation rows a batch-phase gemv multiplies each weight row it reads with
constexpr int kClXrows = 4;
// batch.gemm=tiled: batch steps of this many rows or more run the products as tiled matrix products
constexpr int kClGemmRows = 16;
// gate gemv.sum: sub-group sums where the residual stream is at most this wide (the whole-row
// products' columns); wider, the work-group's sums
constexpr int kClSgsumMaxDim = 2048;
// gate gemv.grid=capped: work-groups a compute unit, the work-group's sums / the sub-groups' (gemv.sum)
constexpr int kClGemvGroups = 8;
constexpr int kClGemvGroupsSg = 4;
// The local memory of a gemv (gemv.cl) of work-groups of wg work-items summing `sums` values each
// through local memory (weight rows of a row block x activation rows; gemv.sum=subgroup: the norm's
// one) and taking xr activation rows, Q4_0 / Q8_0 x staged `units` 32-element units at a time (36
// bytes each: 32 int8 and a float scale; xq: whether x is staged at all)
inline uint64_t cl_gemv_local_bytes(int sums, int xr, int wg, bool xq, int units) {
    return 4ull * uint64_t(sums) * uint64_t(wg) + (xq ? 36ull * uint64_t(xr) * uint64_t(units) : 0);
}

// The gates' choices, read by the lowering.
struct ClGates {
    bool subgroups = false;  // reduce=subgroup: sub-group builtins in every work-group reduction
    int subgroup_ext = 0;    // ... spelt as 1 cl_khr_subgroups, 2 cl_intel_subgroups, 3 __opencl_c_subgroups,
                             // 4 NVIDIA's warps through inline PTX
    bool sgsum = false;      // gemv.sum=subgroup: each sub-group sums row blocks of its own (no work-group barrier)
    bool idot = false;       // gemv.idot=dot4: Q4_0 / Q8_0 products sum 4 int8 products an instruction
    int idot_ext = 0;        // ... spelt as 1 cl_khr_integer_dot_product, 2 NVIDIA's dp4a through inline PTX
    bool fp16 = false;       // fp16=half: half values read through cl_khr_fp16's types
    bool kv_half = true;     // kv.type=half: the KV cache in f16 (vstore_half / vload_half)
    bool vec = true;         // gemv.vec=vec8: 8-wide loads of plain-type weights and x
    bool wide = true;        // gemv.align=wide: 16-byte loads of weight and x rows that start 16-byte aligned
    bool gemv_cap = true;    // gemv.grid=capped: 2 work-groups per compute unit, each looping over row blocks
    bool xrows = false;      // batch.xrows=shared: the batch phase's products read a weight row for 4 activation rows
    bool gemm = false;       // batch.gemm=tiled: batch steps of kClGemmRows+ rows take tiled products
    bool rope_table = true;  // rope.angles=table: (cos, sin) from the host-filled table
    bool device_argmax = true;  // sample.argmax=device: the pick made on the device, the logits left there
    bool split = false;      // weights.layout=split: the candidates below repacked (quant.h repack_split_rows)
    bool x_whole = true;     // gemv.x=local: Q4_0 / Q8_0 products stage all of x (quantized) in local memory;
                             // tiles: those whose x does not fit stage it in tiles of columns
    bool x_forced = false;   // ... forced: every such product (tiles) or none (local) in tiles
    std::set<const WeightTensor*> split_candidates;  // Q4_0 / Q8_0 matrices only products read, rows of 64k
};

struct ClGateInputs {
    const Plan& plan;
    const ClDeviceInfo& dev;
    const ClScheduleOptions& opt;
};

// What a predicate says: the first variant wanted or not and why; what either side needs and the
// device lacks (empty: nothing), which refuses forcing that side.
struct ClGateVerdict {
    bool want = false;
    std::string reason;
    std::string first_missing, sibling_missing;
};

struct ClGateSpec {
    const char* name;
    const char* variant;
    const char* sibling;
    ClGateVerdict (*decide)(const ClGateInputs& in, ClGates& g);
    bool ClGates::* flag;
};

const std::vector<ClGateSpec>& cl_gate_table();

// Decides every gate in table order into s.gates; throws a usage Error for a refused force.
ClGates cl_decide_gates(const ClGateInputs& in, ClSchedule& s);

}  // namespace jitllm
