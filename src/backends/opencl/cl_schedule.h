// ClSchedule: the OpenCL lowering of a Plan. As the CUDA schedule (backends/cuda/schedule.h):
// consecutive tasks grouped into kernels, each with a variant of an embedded OpenCL C source
// (src/kernels/opencl; defines specialise it), a launch geometry (global and local work sizes)
// and symbolic arguments; every gate records its choice and why. Kernel names follow the same
// rule: <task group>__<algorithm>[_<type>] (attn_norm + attn_qkv -> attn_norm_qkv__gemv_q8_0).
// The `sample` task: an argmax kernel (gate sample.argmax=device), or the argmax of the logits
// read back, on the host.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/opencl/cl_device.h"
#include "jit/variant.h"
#include "plan/plan.h"

namespace jitllm {

// A kernel argument, resolved to a buffer or a value by the backend.
struct ClArg {
    // Null: a null buffer; Slot / Weight / KCache / VCache / Scratch: a buffer (Weight: the tensor's
    // own buffer; the kernel adds offsets from its defines); F32 / I32: a value; Rows: the step's batch
    // rows (an int set at each launch; 1 in decode)
    enum class Kind { Null, Slot, Weight, KCache, VCache, Scratch, F32, I32, Rows } kind = Kind::Null;
    Slot slot = Slot::X;
    int layer = -1;
    const WeightTensor* w = nullptr;
    std::string scratch;
    float f = 0.0f;
    int i = 0;
};

// A batch-phase product's tiled kernel (gate batch.gemm=tiled: gemm.cl), run instead of the step's
// own (gemv.cl) for steps of min_rows rows or more; the same arguments
struct ClTiled {
    Variant variant;  // its symbol: <group>__gemm_<type>
    size_t global0 = 0, local0 = 256;
    int rows_per_group = 64;  // dimension 1: ceil(rows / rows_per_group)
    int min_rows = 0;         // 0: none
};

struct ClStep {
    std::string symbol;  // the kernel's name (the naming rule above)
    std::string group;   // task group, e.g. "attn_norm_qkv"
    Variant variant;     // source "opencl/<file>.cl", defines
    std::vector<int> tasks;  // indices into the phase's task list
    int layer = -1;
    size_t global[2] = {1, 1}, local[2] = {1, 1};  // work sizes: dimension 1 is the batch rows
    // dimension 1 of the global size for a batch step of m rows: ceil(m * rows_mul / rows_div) (rows_mul
    // 0: not scaled)
    int rows_mul = 0, rows_div = 1;
    std::vector<ClArg> args;
    uint64_t bytes = 0;          // bytes moved per launch at position 0 (batch: per row)
    uint64_t bytes_per_pos = 0;  // plus this many per cached position (attention)
    uint64_t bytes_fixed = 0;    // batch: bytes independent of the rows (weights)
    uint64_t flops = 0;
    bool host_sample = false;  // the `sample` task on the host: the argmax of the logits read back
    ClTiled tiled;
};

struct ClGateDecision {
    std::string gate, chosen, sibling, reason;
};

// Tuning alternatives to the gemv's defaults (--tune KEY=VALUE with --opencl; 0: the default)
struct ClTunables {
    int gemv_rows = 0;    // gemv.rows: weight rows a work-group takes per pass over x [16]
    int gemv_wg = 0;      // gemv.wg: the largest work-group, a power of 2 from 32 to 1024 [256]
    int gemv_groups = 0;  // gemv.groups: work-groups per compute unit with gemv.grid=capped [8; 4 with gemv.sum=subgroup]
    // gemv.ahead: F16 / BF16 gemvs load the raw words of N chunks of every row a work-item takes
    // before they multiply the first (gemv.cl AHEAD) [0: each chunk loaded and used in turn]
    int gemv_ahead = 0;
    // local.mem: bytes of local memory the lowering assumes at most [the device's
    // CL_DEVICE_LOCAL_MEM_SIZE]; a smaller device's choices (gate gemv.x) on a larger one
    int local_mem = 0;
    std::string describe() const;  // "gemv.rows=8 ..." (the ones set), or "" for the defaults
};
// Sets one KEY=VALUE; a usage Error names the key or value when it is not one of the above.
void cl_tune_apply(ClTunables& t, const std::string& key_value);

struct ClScheduleOptions {
    bool fuse = true;                          // --no-fuse: one kernel per task
    bool kv_f32 = false;                       // --kv-f32: the KV cache in float (gate kv.type)
    std::map<std::string, std::string> force;  // --force-variant GATE=VARIANT
    ClTunables tune;                           // --tune KEY=VALUE
};

struct ClSchedule {
    std::vector<ClStep> decode, prefill, batch;
    size_t batch_body = 0;  // batch[0, batch_body): every step; the rest: steps with logits
    std::vector<ClGateDecision> gates;
    std::map<std::string, size_t> scratch;  // name -> bytes ("rope_table", "attn_temp")
    bool kv_half = true;
    // gate sample.argmax=device: decode's pick left in the Token slot, the batch rows' in scratch "picks"
    bool device_argmax = false;
    // gate weights.layout=split: matrices the backend repacks at upload (quant.h repack_split_rows);
    // their gemvs read them with WSPLIT=1
    std::set<const WeightTensor*> split_weights;
    std::string build_options;  // clBuildProgram's options besides the defines
    ClTunables tune;
    const std::vector<ClStep>& phase(Phase p) const {
        return p == Phase::Decode ? decode : p == Phase::Prefill ? prefill : batch;
    }
};

// The gates --force-variant accepts, "gate=variant|sibling", and their names.
std::vector<std::string> cl_gate_choices();
// The schedule for a device (its extensions decide the gates). Throws a usage Error when a
// forced variant needs what the device lacks.
ClSchedule cl_schedule_build(const Plan& plan, const ClDeviceInfo& dev, const ClScheduleOptions& opt);
// Every distinct variant of the schedule, in first-use order.
std::vector<Variant> cl_schedule_variants(const ClSchedule& s);
// --print-plan: gates, then each phase's kernels with their tasks; threads: global / local sizes.
std::string cl_schedule_describe(const Plan& plan, const ClSchedule& s, bool threads);
// The kernel launches of a run of shape r per phase (--print-plan's accounting).
std::string cl_schedule_describe_launches(const ClSchedule& s, const RunShape& r);

}  // namespace jitllm
