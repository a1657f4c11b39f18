// The OpenCL lowering's task walk and row kernels (cl_lowering.h), and cl_schedule_build.
#include "backends/opencl/cl_lowering.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"

namespace jitllm {
namespace cl_lowering {

namespace {

int pow2_at_least(int n) {
    int p = 1;
    while (p < n) p *= 2;
    return p;
}

}  // namespace

std::string fstr(float f) {
    std::string s = fmt::format("{:.9g}", f);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s + "f";
}

std::string wtype_define(GgmlType t) {
    std::string n = type_name(t);
    for (auto& ch : n) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    return n;
}

std::string type_suffix(GgmlType t) {
    std::string n = type_name(t);
    for (auto& ch : n) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return n;
}

ClStep& Lowering::add(const std::vector<size_t>& idx, const std::string& algo, Variant v) {
    ClStep k;
    k.group = task_group_name(*tasks_, idx);
    k.symbol = k.group + "__" + algo;
    v.symbol = k.symbol;
    if (g_.subgroups) v.set("REDUCE", 1).set("SUBGROUP_EXT", g_.subgroup_ext);
    if (g_.fp16) v.set("FP16", 1);
    k.variant = std::move(v);
    for (size_t i : idx) {
        k.tasks.push_back(int(i));
        k.flops += t(i).flops;
    }
    k.layer = t(idx[0]).layer;
    k.rows_mul = batch_ ? 1 : 0;
    out_->push_back(std::move(k));
    return out_->back();
}

void Lowering::lower(const std::vector<Task>& tasks, std::vector<ClStep>& out, bool batch) {
    tasks_ = &tasks;
    out_ = &out;
    batch_ = batch;
    for (size_t i = 0; i < tasks.size();) {
        if (batch && i == p_.batch_body) s_.batch_body = out.size();
        i += lower_at(i);
    }
    if (batch && p_.batch_body >= tasks.size()) s_.batch_body = out.size();
}

size_t Lowering::lower_at(size_t i) {
    const Task& a = t(i);
    switch (a.kind) {
        case K::TokenEmbd:
            embed(i);
            return 1;
        case K::AttnNorm:
        case K::FfnNorm:
        case K::OutputNorm: {
            const K next = a.kind == K::AttnNorm ? K::AttnQkv : a.kind == K::FfnNorm ? K::FfnGateUp : K::Output;
            if (fuse_ && i + 1 < tasks_->size() && t(i + 1).kind == next) return product(i, i + 1);
            norm(i, Slot::X, Slot::Xb, 1, c_.dim, a.w[0], a.eps);
            return 1;
        }
        case K::AttnQkv:
        case K::AttnOutput:
        case K::FfnGateUp:
        case K::FfnDown:
        case K::Output:
            return product(SIZE_MAX, i);
        case K::AttnQkNorm:
            norm(i, Slot::Q, Slot::Q, c_.n_heads, c_.head_dim, a.w[0], a.eps);
            norm(i, Slot::K, Slot::K, c_.n_kv_heads, c_.head_dim, a.w[1], a.eps);
            return 1;
        case K::AttnRope:
            if (fuse_ && has(i + 1, K::AttnKvStore)) {
                rope({i, i + 1}, true, true);
                return 2;
            }
            rope({i}, true, false);
            return 1;
        case K::AttnKvStore:
            rope({i}, false, true);
            return 1;
        case K::Attn:
            attention(i);
            return 1;
        case K::AttnResidual:
        case K::FfnResidual:
            residual(i);
            return 1;
        case K::FfnAct:
            swiglu(i, Slot::Hb, Slot::Hb2, c_.hidden_dim);
            return 1;
        case K::Sample:
            sample(i);
            return 1;
        case K::Count:
            break;
        default:
            if (is_moe_task(a.kind)) return moe(i);
    }
    JITLLM_CHECK(false, "task {} has no OpenCL lowering", a.name);
    return 1;
}

void Lowering::embed(size_t i) {
    const Task& a = t(i);
    const WeightTensor* w = a.w[0];
    Variant v("opencl/embed.cl", "");
    v.set("WTYPE", wtype_define(w->type)).set("D", c_.dim);
    if (a.scale != 1.0f) v.set("HAS_SCALE", 1).set("EMB_SCALE", fstr(a.scale));
    ClStep& k = add({i}, "embed_" + type_suffix(w->type), v);
    k.global[0] = size_t((c_.dim + 63) / 64 * 64);
    k.local[0] = 64;
    k.args = {weight(w), slot(batch_ ? Slot::Tokens : Slot::Token), slot(Slot::X)};
    k.bytes = w->row_bytes + uint64_t(c_.dim) * 4;
}

void Lowering::norm(size_t i, Slot in, Slot out, int heads, int D, const WeightTensor* w, float eps) {
    const int wg = std::min(256, std::max(32, pow2_at_least(D / 4)));
    Variant v("opencl/rms_norm.cl", "");
    v.set("D", D).set("WG", wg).set("HAS_WEIGHT", int(w != nullptr)).set("HEADS", heads).set("ROW_STRIDE", rows_of(in));
    ClStep& k = add({i}, "rms_norm", v);
    k.global[0] = size_t(heads) * size_t(wg);
    k.local[0] = size_t(wg);
    k.args = {slot(in), weight(w), slot(out), f32(eps)};
    k.bytes = uint64_t(heads) * uint64_t(D) * 8 + (w ? uint64_t(D) * 4 : 0);
}

void Lowering::rope(const std::vector<size_t>& idx, bool rotate, bool store) {
    const Task& a = t(idx[0]);
    Variant v("opencl/rope.cl", "");
    v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", c_.head_dim).set("N_ROT", c_.n_rot);
    v.set("PAIRING", int(c_.rope_style != RopeStyle::Norm)).set("ROPE", int(rotate)).set("STORE", int(store));
    v.set("KV_HALF", int(g_.kv_half));
    const WeightTensor* ff = rotate && a.kind == K::AttnRope ? a.w[0] : nullptr;
    ClArg table = null(), temp = null();
    if (rotate) {
        if (g_.rope_table) {
            s_.scratch["rope_table"] = size_t(p_.n_ctx) * size_t(c_.n_rot / 2) * 8;
            table = scratch("rope_table");
        } else {
            v.set("ANGLES", 1).set("HAS_FREQ_FACTORS", int(ff != nullptr));
            if (c_.rope_yarn.active())
                v.set("YARN", 1).set("YARN_FREQ_SCALE", fstr(c_.rope_yarn.freq_scale))
                    .set("YARN_LOW", fstr(c_.rope_yarn.low)).set("YARN_HIGH", fstr(c_.rope_yarn.high));
        }
        if (c_.attn_temp_scale != 0.0f) {
            v.set("ATTN_TEMP", 1);
            s_.scratch["attn_temp"] = size_t(p_.n_ctx) * 4;
            temp = scratch("attn_temp");
        }
    }
    std::vector<size_t> tasks = idx;
    ClStep& k = add(tasks, rotate ? "rope" : "kv_store", v);
    k.global[0] = size_t(c_.n_heads + c_.n_kv_heads) * size_t(c_.head_dim / 2);
    k.local[0] = size_t(c_.head_dim / 2);
    const Slot pos = batch_ ? Slot::Positions : Slot::Pos;
    k.args = {slot(Slot::Q), slot(Slot::K), slot(Slot::V), cache(true, a.layer), cache(false, a.layer), slot(pos),
              batch_ ? slot(Slot::Seqs) : null(), table, g_.rope_table ? null() : weight(ff), temp,
              f32(c_.rope_base), i32(p_.n_ctx)};
    const uint64_t kvb = g_.kv_half ? 2 : 4;
    k.bytes = 4ull * uint64_t(c_.head_dim) * uint64_t(2 * c_.n_heads + 3 * c_.n_kv_heads) +
              2ull * uint64_t(c_.kv_dim()) * kvb;
}

void Lowering::attention(size_t i) {
    const Task& a = t(i);
    JITLLM_CHECK(c_.head_dim % 8 == 0, "head_dim {}", c_.head_dim);
    const int wg = 64;
    Variant v("opencl/attention.cl", "");
    v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", c_.head_dim);
    v.set("SCALE", fstr(a.scale)).set("KV_HALF", int(g_.kv_half)).set("WG", wg);
    if (c_.sliding_window > 0 && c_.sliding_window < p_.n_ctx) v.set("WINDOW", c_.sliding_window);
    ClStep& k = add({i}, "attention", v);
    k.global[0] = size_t(c_.n_heads) * wg;
    k.local[0] = wg;
    k.args = {slot(Slot::Q), cache(true, a.layer), cache(false, a.layer), slot(batch_ ? Slot::Positions : Slot::Pos),
              batch_ ? slot(Slot::Seqs) : null(), slot(Slot::Att), i32(p_.n_ctx)};
    k.bytes = 8ull * uint64_t(c_.q_dim());
    k.bytes_per_pos = 2ull * uint64_t(c_.n_heads) * uint64_t(c_.head_dim) * (g_.kv_half ? 2 : 4);
}

void Lowering::residual(size_t i) {
    Variant v("opencl/add.cl", "");
    v.set("N", c_.dim).set("SCALE", fstr(t(i).scale));
    ClStep& k = add({i}, "add", v);
    k.global[0] = size_t((c_.dim + 255) / 256 * 256);
    k.local[0] = 256;
    k.args = {slot(Slot::X), slot(Slot::Tmp)};
    k.bytes = 12ull * uint64_t(c_.dim);
}

void Lowering::swiglu(size_t i, Slot g, Slot u, int n) {
    Variant v("opencl/swiglu.cl", "");
    v.set("N", n).set("ROW_STRIDE", rows_of(g));
    ClStep& k = add({i}, "swiglu", v);
    k.global[0] = size_t((n + 255) / 256 * 256);
    k.local[0] = 256;
    k.args = {slot(g), slot(u)};
    k.bytes = 12ull * uint64_t(n);
}

void Lowering::topk(size_t i) {
    Variant v("opencl/moe_topk.cl", "");
    v.set("NE", c_.n_expert).set("K", c_.n_expert_used).set("RENORM", int(t(i).renorm))
        .set("ROUTER_STRIDE", rows_of(Slot::Router));
    ClStep& k = add({i}, "moe_topk", v);
    k.args = {slot(Slot::Router), slot(Slot::ExpIds), slot(Slot::ExpW)};
    k.bytes = 4ull * uint64_t(c_.n_expert) + 8ull * uint64_t(c_.n_expert_used);
}

void Lowering::sample(size_t i) {
    if (g_.device_argmax) {  // the pick into the Token slot (decode) or the batch rows' picks
        const int wg = int(std::min<uint64_t>(d_.max_work_group, 256));
        Variant v("opencl/argmax.cl", "");
        v.set("N", c_.n_vocab).set("WG", wg).set("ROW_STRIDE", rows_of(Slot::Logits));
        ClStep& k = add({i}, "argmax", v);
        k.global[0] = k.local[0] = size_t(wg);
        if (batch_) s_.scratch["picks"] = size_t(std::max(1, p_.n_seq)) * 4;
        k.args = {slot(Slot::Logits), batch_ ? scratch("picks") : slot(Slot::Token)};
        k.bytes = uint64_t(c_.n_vocab) * 4;
        return;
    }
    ClStep k;
    k.group = "sample";
    k.symbol = "sample__host_argmax";
    k.tasks = {int(i)};
    k.host_sample = true;
    k.bytes = uint64_t(c_.n_vocab) * 4;
    out_->push_back(std::move(k));
}

}  // namespace cl_lowering

ClSchedule cl_schedule_build(const Plan& plan, const ClDeviceInfo& device, const ClScheduleOptions& opt) {
    ClDeviceInfo dev = device;  // --tune local.mem: the lowering as for a device with less local memory
    if (opt.tune.local_mem > 0) dev.local_mem = std::min<uint64_t>(dev.local_mem, uint64_t(opt.tune.local_mem));
    ClSchedule s;
    const ClGates g = cl_decide_gates({plan, dev, opt}, s);
    s.kv_half = g.kv_half;
    s.tune = opt.tune;
    s.device_argmax = g.device_argmax;
    s.build_options = "-cl-std=" + dev.c_std;
    if (dev.fp32_correct_div_sqrt) s.build_options += " -cl-fp32-correctly-rounded-divide-sqrt";
    // more options for the driver (the tests' -cl-opt-disable: PoCL builds 3x faster); part of the cache key
    if (const char* e = std::getenv("JITLLM_OPENCL_BUILD_OPTIONS"); e && *e) s.build_options += std::string(" ") + e;
    cl_lowering::Lowering l(plan, dev, g, s, opt.fuse);
    l.lower(plan.decode, s.decode, false);
    l.lower(plan.prefill, s.prefill, false);
    if (plan.batch_rows > 0) l.lower(plan.batch, s.batch, true);
    return s;
}

std::vector<Variant> cl_schedule_variants(const ClSchedule& s) {
    std::vector<Variant> v;
    auto add = [&](const Variant& k) {
        const bool seen = std::any_of(v.begin(), v.end(), [&](const Variant& x) {
            return x.symbol == k.symbol && x.source == k.source && x.defines == k.defines;
        });
        if (!seen) v.push_back(k);
    };
    for (const auto* list : {&s.decode, &s.prefill, &s.batch})
        for (const ClStep& k : *list) {
            if (k.host_sample) continue;
            add(k.variant);
            if (k.tiled.min_rows > 0) add(k.tiled.variant);
        }
    return v;
}

}  // namespace jitllm
