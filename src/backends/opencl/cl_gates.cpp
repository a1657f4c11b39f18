// The OpenCL gates table (cl_gates.h): what decides each gate, in one place.
#include "backends/opencl/cl_gates.h"

#include "core/error.h"

namespace jitllm {

namespace {

// The spelling of sub-group support the device reports (0: none); 4: NVIDIA's driver, whose warps
// of 32 exchange values through inline PTX (it reports no sub-groups)
int subgroup_ext(const ClDeviceInfo& d) {
    if (d.has("cl_khr_subgroups")) return 1;
    if (d.has("cl_intel_subgroups")) return 2;
    if (d.c_std == "CL3.0" && d.has("__opencl_c_subgroups")) return 3;
    if (d.nv_warp == 32) return 4;
    return 0;
}

// The spelling of packed 4 x int8 dot products (0: none): 1 cl_khr_integer_dot_product (OpenCL C
// 2.0 and later), 2 NVIDIA's dp4a through inline PTX (compute capability 6.1 and later)
int idot_ext(const ClDeviceInfo& d) {
    if (d.has("cl_khr_integer_dot_product") && d.c_std != "CL1.2" && d.c_std != "CL1.1") return 1;
    if (d.nv_warp == 32 && d.nv_cc >= 61) return 2;
    return 0;
}

ClGateVerdict reduce_gate(const ClGateInputs& in, ClGates&) {
    const int e = subgroup_ext(in.dev);
    if (e == 0)
        return {false, "no sub-groups reported: work-group sums through local-memory trees",
                "cl_khr_subgroups, cl_intel_subgroups, __opencl_c_subgroups or NVIDIA's warps "
                "(cl_nv_device_attribute_query)",
                ""};
    if (e == 4)
        return {true, "NVIDIA's driver, warp size 32: warp sums through inline PTX shfl.sync, then local memory "
                      "across the warps", "", ""};
    const char* name = e == 1 ? "cl_khr_subgroups" : e == 2 ? "cl_intel_subgroups" : "__opencl_c_subgroups";
    return {true, fmt::format("{}: sub_group_reduce_add / _max, then local memory across the sub-groups", name), "",
            ""};
}

// decided after reduce: the sub-group sums it found, where rows are short enough
ClGateVerdict sum_gate(const ClGateInputs& in, ClGates& g) {
    if (!g.subgroups)
        return {false, "no sub-group sums (reduce=local): the work-group sums each row block together",
                "sub-group sums (reduce=subgroup)", ""};
    const int dim = in.plan.config ? in.plan.config->dim : 0;
    if (dim > kClSgsumMaxDim)
        return {false,
                fmt::format("residual width {} > {}: the work-group sums each row block together (its work-items' "
                            "loads of the block's rows in flight at once; a sub-group's block of a row keeps fewer)",
                            dim, kClSgsumMaxDim),
                "", ""};
    return {true,
            fmt::format("residual width {} <= {}: each sub-group sums row blocks of its own, its lanes across the row, "
                        "no work-group barrier between blocks (the experts' weighted sum and x in tiles keep the "
                        "work-group's)",
                        dim, kClSgsumMaxDim),
            "", ""};
}

ClGateVerdict idot_gate(const ClGateInputs& in, ClGates&) {
    const int e = idot_ext(in.dev);
    if (e == 0)
        return {false, "no packed int8 dot product reported: Q4_0 / Q8_0 quants widened to int, 16 at a time",
                "cl_khr_integer_dot_product (OpenCL C 2.0+) or NVIDIA's dp4a (compute capability 6.1+)", ""};
    return {true,
            e == 1 ? "cl_khr_integer_dot_product: Q4_0 / Q8_0 blocks summed 4 int8 products an instruction "
                     "(dot_4x8packed_ss_int)"
                   : "NVIDIA's driver: Q4_0 / Q8_0 blocks summed 4 int8 products an instruction (PTX dp4a)",
            "", ""};
}

ClGateVerdict fp16_gate(const ClGateInputs& in, ClGates&) {
    if (!in.dev.has("cl_khr_fp16"))
        return {false, "no cl_khr_fp16: half values read with vload_half (core OpenCL)", "cl_khr_fp16", ""};
    return {true, "cl_khr_fp16: half values read as half vectors and converted (the same floats)", "", ""};
}

ClGateVerdict kv_gate(const ClGateInputs& in, ClGates&) {
    if (in.opt.kv_f32) return {false, "--kv-f32: the KV cache in float32", "", ""};
    return {true, "the KV cache in f16 (vstore_half_rte, vload_half): half the bytes attention reads", "", ""};
}

ClGateVerdict vec_gate(const ClGateInputs& in, ClGates&) {
    return {true,
            fmt::format("8-wide loads of plain-type weights and x (the device prefers {}-wide floats)",
                        in.dev.pref_vector_float),
            "", ""};
}

ClGateVerdict align_gate(const ClGateInputs&, ClGates&) {
    return {true,
            "products whose weight rows, offsets and x rows are multiples of 16 bytes read 16-byte pieces as one "
            "load each (vloadn promises a driver only the element's alignment)",
            "", ""};
}

ClGateVerdict grid_gate(const ClGateInputs& in, ClGates&) {
    return {true,
            fmt::format("at most {} work-groups per compute unit ({} units): x's prologue (the norm, the Q8_0 "
                        "quantization) once for every row block a work-group takes",
                        in.opt.tune.gemv_groups ? fmt::format("{}", in.opt.tune.gemv_groups)
                                                : fmt::format("{} ({} with gemv.sum=subgroup)", kClGemvGroups,
                                                              kClGemvGroupsSg),
                        in.dev.compute_units),
            "", ""};
}

// Q4_0 / Q8_0 matrices only products read (the embedding table keeps GGUF blocks: embed.cl reads
// its rows, and so does a tied output projection), rows of a multiple of 64 elements (4-byte aligned)
ClGateVerdict layout_gate(const ClGateInputs& in, ClGates& g) {
    std::set<const WeightTensor*> embed, mats;
    for (const auto* ph : {&in.plan.decode, &in.plan.prefill, &in.plan.batch})
        for (const Task& tk : *ph)
            for (const WeightTensor* w : tk.w)
                if (w) (tk.kind == TaskKind::TokenEmbd ? embed : mats).insert(w);
    g.split_candidates.clear();
    for (const WeightTensor* w : mats)
        if ((w->type == GgmlType::Q4_0 || w->type == GgmlType::Q8_0) && w->cols % 64 == 0 && !embed.count(w))
            g.split_candidates.insert(w);
    if (g.split_candidates.empty()) return {false, "no Q4_0 / Q8_0 matrix with rows of a multiple of 64: GGUF blocks", "", ""};
    return {true,
            fmt::format("{} Q4_0 / Q8_0 matrices repacked at upload, a row's quants then its f16 scales: 4-byte loads "
                        "of the quants (GGUF's 18 / 34-byte blocks are 2-byte aligned)",
                        g.split_candidates.size()),
            "", ""};
}

ClGateVerdict xrows_gate(const ClGateInputs& in, ClGates&) {
    if (in.plan.batch_rows < 2) return {false, "no batch phase of 2+ rows: one activation row a work-group", "", ""};
    return {true,
            fmt::format("the batch phase's products (not the experts'): each work-group reads a weight row once for "
                        "{} activation rows (their x, quantized for Q4_0 / Q8_0, in local memory)",
                        kClXrows),
            "", ""};
}

// the widest Q4_0 / Q8_0 product x, as its gemv would stage it whole (the batch phase's: kClXrows
// activation rows with batch.xrows=shared), against the device's local memory
ClGateVerdict x_gate(const ClGateInputs& in, ClGates& g) {
    g.x_forced = in.opt.force.count("gemv.x") > 0;
    const int wg = int(std::min<uint64_t>(in.dev.max_work_group, 256));
    uint64_t need = 0;
    std::string what;
    for (const auto* ph : {&in.plan.decode, &in.plan.prefill, &in.plan.batch})
        for (const Task& tk : *ph) {
            if (tk.kind == TaskKind::TokenEmbd || tk.w.empty()) continue;
            const WeightTensor* w = tk.w[0] ? tk.w[0] : tk.w.size() > 1 ? tk.w[1] : nullptr;
            if (!w || (w->type != GgmlType::Q4_0 && w->type != GgmlType::Q8_0) || w->cols < 32) continue;
            const bool experts = w->stack > 1;
            const int xr = ph == &in.plan.batch && g.xrows && !experts ? kClXrows : 1;
            const uint64_t b = cl_gemv_local_bytes(xr, xr, wg, true, int(w->cols / 32));
            if (b > need) {
                need = b;
                what = fmt::format("{} ({} columns x {} row{})", tk.name, w->cols, xr, xr > 1 ? "s" : "");
            }
        }
    if (need == 0) return {true, "no Q4_0 / Q8_0 product: x is read from global memory", "", ""};
    if (need <= in.dev.local_mem)
        return {true,
                fmt::format("x staged whole: the widest, {}, needs {} of the {} bytes of local memory", what, need,
                            in.dev.local_mem),
                "", ""};
    return {false,
            fmt::format("{} needs {} bytes of local memory staged whole, the device has {}: products whose x does not "
                        "fit stage it in tiles of columns, each quantized, then its sums",
                        what, need, in.dev.local_mem),
            fmt::format("local memory for x of {} ({} bytes, the device has {})", what, need, in.dev.local_mem), ""};
}

ClGateVerdict gemm_gate(const ClGateInputs& in, ClGates&) {
    if (in.plan.batch_rows < kClGemmRows)
        return {false, fmt::format("no batch phase of {}+ rows: the products as gemvs", kClGemmRows), "", ""};
    return {true,
            fmt::format("batch steps of {}+ rows: the products (not the experts') as tiled matrix products, 64 weight "
                        "rows x 64 activation rows a work-group through local memory (fewer rows: the gemvs)",
                        kClGemmRows),
            "", ""};
}

ClGateVerdict rope_gate(const ClGateInputs& in, ClGates&) {
    const bool fp64 = in.dev.has("cl_khr_fp64") || in.dev.has("__opencl_c_fp64");
    return {true, "(cos, sin) filled on the host with cpu::rope's float steps: no fp64 on the device", "",
            fp64 ? "" : "cl_khr_fp64 (the angles in double)"};
}

ClGateVerdict argmax_gate(const ClGateInputs&, ClGates&) {
    return {true,
            "the argmax of the logits on the device: the pick stays there for the next step (decode steps queued "
            "ahead of the host), 4 bytes read back instead of the logits",
            "", ""};
}

}  // namespace

const std::vector<ClGateSpec>& cl_gate_table() {
    static const std::vector<ClGateSpec> t = {
        {"reduce", "subgroup", "local", reduce_gate, &ClGates::subgroups},
        {"fp16", "half", "float", fp16_gate, &ClGates::fp16},
        {"gemv.sum", "subgroup", "group", sum_gate, &ClGates::sgsum},
        {"gemv.idot", "dot4", "int", idot_gate, &ClGates::idot},
        {"kv.type", "half", "float", kv_gate, &ClGates::kv_half},
        {"gemv.vec", "vec8", "scalar", vec_gate, &ClGates::vec},
        {"gemv.align", "wide", "narrow", align_gate, &ClGates::wide},
        {"gemv.grid", "capped", "full", grid_gate, &ClGates::gemv_cap},
        {"weights.layout", "split", "blocks", layout_gate, &ClGates::split},
        {"batch.xrows", "shared", "per-row", xrows_gate, &ClGates::xrows},
        {"batch.gemm", "tiled", "gemv", gemm_gate, &ClGates::gemm},
        {"gemv.x", "local", "tiles", x_gate, &ClGates::x_whole},
        {"rope.angles", "table", "computed", rope_gate, &ClGates::rope_table},
        {"sample.argmax", "device", "host", argmax_gate, &ClGates::device_argmax},
    };
    return t;
}

std::vector<std::string> cl_gate_choices() {
    std::vector<std::string> v;
    for (const ClGateSpec& g : cl_gate_table()) v.push_back(fmt::format("{}={}|{}", g.name, g.variant, g.sibling));
    return v;
}

ClGates cl_decide_gates(const ClGateInputs& in, ClSchedule& s) {
    ClGates g;
    for (const ClGateSpec& spec : cl_gate_table()) {
        ClGateVerdict v = spec.decide(in, g);
        bool first = v.want && v.first_missing.empty();
        if (!v.first_missing.empty()) v.reason = v.reason.empty() ? "needs " + v.first_missing : v.reason;
        if (auto f = in.opt.force.find(spec.name); f != in.opt.force.end()) {
            const bool want_first = f->second == spec.variant;
            if (!want_first && f->second != spec.sibling)
                fail_usage("--force-variant {}={}: expected {} or {} for gate '{}'", spec.name, f->second, spec.variant,
                           spec.sibling, spec.name);
            const std::string& missing = want_first ? v.first_missing : v.sibling_missing;
            if (!missing.empty())
                fail_usage("--force-variant {}={}: the device {} lacks {}", spec.name, f->second, in.dev.name, missing);
            first = want_first;
            v.reason = "forced (--force-variant)";
        }
        g.*spec.flag = first;
        s.gates.push_back({spec.name, first ? spec.variant : spec.sibling, first ? spec.sibling : spec.variant, v.reason});
    }
    g.subgroup_ext = g.subgroups ? subgroup_ext(in.dev) : 0;
    g.idot_ext = g.idot ? idot_ext(in.dev) : 0;
    if (g.split) s.split_weights = g.split_candidates;
    return g;
}

}  // namespace jitllm
