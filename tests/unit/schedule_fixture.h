// Helpers of the schedule tests (kernels_schedule_*_test.cpp): a tiny llama model of a chosen weight
// type built in memory, and lookups of a schedule's gates, kernel steps and defines.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda/schedule.h"
#include "gguf/gguf_reader.h"
#include "quant/quant.h"
#include "unit/tiny_arch_model.h"

namespace jitllm::test {

// dim 512 (q/k/v, attn_output, gate/up read rows of 512: split), ff 352 (ffn_down rows of 352:
// blocks; or ff), token_embd of type `emb`, every matrix of type `t`
inline std::unique_ptr<Model> tiny(GgmlType t, GgmlType emb, bool tied, int dim = 512, int ff = 352, int head_dim = 64) {
    TinySpec s;
    s.arch = "llama";
    s.dim = dim;
    s.ff = ff;
    s.n_heads = dim / head_dim;
    s.n_kv_heads = 2;
    s.head_dim = head_dim;
    s.n_vocab = 64;
    GgufWriter w = tiny_model(s, [](TinyTensor&) { return false; });  // keys only
    for (const TinyTensor& x : tiny_tensors(s)) {
        if (tied && x.name == "output.weight") continue;
        const GgmlType ty = x.dims.size() != 2 ? GgmlType::F32 : x.name == "token_embd.weight" ? emb : t;
        uint64_t n = 1;
        for (auto d : x.dims) n *= d;
        std::vector<float> v(n, x.is_norm ? 1.0f : 0.01f);
        std::vector<uint8_t> bytes(row_bytes(ty, x.dims[0]) * (n / x.dims[0]));
        for (uint64_t r = 0; r < n / x.dims[0]; ++r)
            quantize_row(ty, v.data() + r * x.dims[0], bytes.data() + r * row_bytes(ty, x.dims[0]), int64_t(x.dims[0]));
        w.add_tensor(x.name, ty, x.dims, std::move(bytes));
    }
    return load_model(GgufReader::from_bytes(w.to_bytes(), "tiny.gguf"));
}

inline std::string gate(const Schedule& s, const std::string& name) {
    for (const auto& g : s.gates)
        if (g.gate == name) return g.chosen;
    return "";
}

inline bool has_define(const Variant& v, const std::string& name, const std::string& val) {
    for (const auto& [k, x] : v.defines)
        if (k == name && x == val) return true;
    return false;
}

inline std::string define_value(const Variant& v, const std::string& name) {
    for (const auto& [k, x] : v.defines)
        if (k == name) return x;
    return "";
}

inline bool defines(const Variant& v, const std::string& name) {
    for (const auto& [k, x] : v.defines)
        if (k == name) return true;
    return false;
}

// the task kind of a decode kernel's first task (the key of the per-kernel tunables, gemv.*.KIND)
inline std::string_view first_kind(const Plan& p, const KernelStep& k) { return task_kind_name(p.decode[size_t(k.tasks[0])].kind); }

inline const KernelStep* step(const std::vector<KernelStep>& ks, const std::string& group) {
    for (const auto& k : ks)
        if (k.group == group) return &k;
    return nullptr;
}

// the step of a group that must exist (gtest reports the exception as a failure)
inline const KernelStep& at(const std::vector<KernelStep>& ks, const std::string& group) {
    if (const KernelStep* k = step(ks, group)) return *k;
    throw std::runtime_error("no kernel for task group " + group);
}

// Decode attention's step (a copy: the schedule is a temporary) with split-KV forced unless o says
// otherwise, on the tiny F16 model (8 query heads over 2 kv heads, head dim 64) with n_ctx positions.
// (the register kernel unless the options force attn.kv: the tensor-map kernel is the sm_90 default
// beyond 256 positions of context)
inline KernelStep split_attn(int n_ctx, ScheduleOptions o, const char* target = "sm_90", GgmlType w = GgmlType::F16) {
    auto m = tiny(w, GgmlType::F16, false);
    const Plan p = plan_build(*m, PlanOptions{n_ctx, 16, 1});
    o.force.emplace("attn.algo", "split");
    o.force.emplace("attn.kv", "ld");
    return at(schedule_build(p, DeviceInfo::for_target(target), o).decode, "attn");
}

}  // namespace jitllm::test
