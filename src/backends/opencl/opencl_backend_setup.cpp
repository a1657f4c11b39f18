// OpenCL backend set-up (opencl_backend.h): device, schedule, buffers, weights, programs, kernels.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>

#include "backends/opencl/opencl_backend.h"
#include "core/error.h"
#include "core/rope_theta.h"
#include "quant/quant.h"

namespace jitllm {

OpenClBackend::OpenClBackend(const Plan& plan, const OpenClOptions& opt) : plan_(plan), opt_(opt) {
    ctx_ = std::make_unique<ClContext>(opt.device, opt.profiler != nullptr);
    sched_ = cl_schedule_build(plan, ctx_->info(), opt.schedule);
    if (opt.verbose_init)
        std::fprintf(stderr, "[jitllm] opencl device %d (%s): %s\n", ctx_->info().index, ctx_->chosen_because().c_str(),
                     ctx_->info().summary().c_str());
    if (opt.print_plan || opt.print_threads)
        std::fprintf(stderr, "%s", cl_schedule_describe(plan, sched_, opt.print_threads).c_str());
    if (opt.print_kernel) print_kernels();
    if (opt.profiler) opt.profiler->set_copy_bandwidth(copy_bandwidth_gb_s(0), ctx_->info().name);
    allocate_and_upload();
    programs_ = std::make_unique<ClPrograms>(*ctx_, opt.cache, sched_.build_options);
    build_kernels();
    for (int ph = 0; ph < 3; ++ph)
        for (const Task& t : plan.phase(Phase(ph))) count_ptrs_[ph].push_back(&counts_[t.name]);
    for (auto& [k, v] : counts_) v = 0;
    logits_.assign(size_t(plan.n_seq) * size_t(plan.config->n_vocab), 0.0f);
    io_ = static_cast<int32_t*>(ctx_->alloc_host(sizeof(int32_t) * (2 + 3 * kQueue), "token and position staging"));
    for (int k = 0; k < kQueue; ++k) ring_[k].io = io_ + 2 + 3 * k;
    if (opt.verbose_init) {
        const ClProgramStats& s = programs_->stats();
        std::fprintf(stderr, "[jitllm] opencl: %.1f MiB on the device, weights uploaded in %.1f ms, %d programs built, "
                     "%d from the cache in %.1f ms\n",
                     double(ctx_->allocated()) / double(1 << 20), upload_ms_, s.built, s.cached, s.wall_ms);
    }
}

void OpenClBackend::allocate_and_upload() {
    const ModelConfig& c = *plan_.config;
    slots_.assign(size_t(Slot::Count), nullptr);
    for (const BufferDesc& b : plan_.buffers) {
        if (b.per_layer) continue;
        size_t n = 4;
        for (int64_t d : b.shape) n *= size_t(d);
        slots_[size_t(b.slot)] = ctx_->alloc(n, std::string("slot ") + slot_name(b.slot));
    }
    const size_t kv = size_t(plan_.n_seq) * size_t(plan_.n_ctx) * size_t(c.kv_dim()) * (sched_.kv_half ? 2 : 4);
    for (int l = 0; l < c.n_layers; ++l) {
        k_cache_.push_back(ctx_->alloc(kv, fmt::format("blk.{} K cache", l)));
        v_cache_.push_back(ctx_->alloc(kv, fmt::format("blk.{} V cache", l)));
    }
    for (const auto& [name, bytes] : sched_.scratch) scratch_[name] = ctx_->alloc(bytes, "scratch " + name);
    fill_rope_tables();
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto* list : {&sched_.decode, &sched_.prefill, &sched_.batch})
        for (const ClStep& k : *list)
            for (const ClArg& a : k.args)
                if (a.kind == ClArg::Kind::Weight && !weights_.count(a.w)) {
                    cl_mem m = ctx_->alloc(a.w->n_bytes, a.w->name);
                    if (sched_.split_weights.count(a.w)) {  // gate weights.layout=split
                        std::vector<uint8_t> split(a.w->n_bytes);
                        repack_split_rows(a.w->type, a.w->data, split.data(), int64_t(a.w->rows), int64_t(a.w->cols));
                        ctx_->upload(m, 0, split.data(), split.size());
                    } else {
                        ctx_->upload(m, 0, a.w->data, a.w->n_bytes);
                    }
                    weights_[a.w] = m;
                }
    upload_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// rope.angles=table: (cos, sin) of every (position, pair) with cpu::rope's own float steps
// (core/rope_theta.h); the attention temperature of every position
void OpenClBackend::fill_rope_tables() {
    const ModelConfig& c = *plan_.config;
    if (scratch_.count("rope_table")) {
        const int half = c.n_rot / 2;
        const WeightTensor* ffw = plan_.model->rope_factors(plan_.n_ctx);
        const float* ff = ffw ? ffw->f32() : nullptr;
        std::vector<float> t(size_t(plan_.n_ctx) * size_t(half) * 2);
        for (int p = 0; p < plan_.n_ctx; ++p)
            for (int i = 0; i < half; ++i) {
                const float theta = rope_theta(p, i, c.n_rot, c.rope_base, ff, c.rope_yarn);
                t[(size_t(p) * size_t(half) + size_t(i)) * 2] = std::cos(theta);
                t[(size_t(p) * size_t(half) + size_t(i)) * 2 + 1] = std::sin(theta);
            }
        ctx_->upload(scratch_.at("rope_table"), 0, t.data(), t.size() * 4);
    }
    if (scratch_.count("attn_temp")) {
        std::vector<float> t(size_t(plan_.n_ctx));
        for (int p = 0; p < plan_.n_ctx; ++p) t[size_t(p)] = attn_temperature(p, c.attn_temp_scale, c.n_ctx_orig);
        ctx_->upload(scratch_.at("attn_temp"), 0, t.data(), t.size() * 4);
    }
}

cl_mem OpenClBackend::resolve(const ClArg& a) const {
    switch (a.kind) {
        case ClArg::Kind::Slot: {
            cl_mem m = slots_[size_t(a.slot)];
            JITLLM_CHECK(m != nullptr, "slot {} has no buffer", slot_name(a.slot));
            return m;
        }
        case ClArg::Kind::Weight: return weights_.at(a.w);
        case ClArg::Kind::KCache: return k_cache_[size_t(a.layer)];
        case ClArg::Kind::VCache: return v_cache_[size_t(a.layer)];
        case ClArg::Kind::Scratch: return scratch_.at(a.scratch);
        default: return nullptr;
    }
}

cl_kernel OpenClBackend::make_kernel(const Variant& v, const std::string& symbol, const ClStep& k, int* rows_arg) {
    const ClApi& api = ctx_->api();
    cl_int r = CL_SUCCESS;
    cl_kernel kn = api.clCreateKernel(programs_->get(v), symbol.c_str(), &r);
    if (r != CL_SUCCESS) api.throw_error(("clCreateKernel " + symbol).c_str(), r);
    for (size_t i = 0; i < k.args.size(); ++i) {
        const ClArg& a = k.args[i];
        const cl_uint ai = cl_uint(i);
        if (a.kind == ClArg::Kind::F32) {
            JITLLM_CL_TRY(api, clSetKernelArg(kn, ai, sizeof(float), &a.f));
        } else if (a.kind == ClArg::Kind::I32 || a.kind == ClArg::Kind::Rows) {
            const cl_int val = a.kind == ClArg::Kind::Rows ? 1 : a.i;
            JITLLM_CL_TRY(api, clSetKernelArg(kn, ai, sizeof(cl_int), &val));
            if (a.kind == ClArg::Kind::Rows) *rows_arg = int(i);
        } else {
            const cl_mem m = resolve(a);
            JITLLM_CL_TRY(api, clSetKernelArg(kn, ai, sizeof(cl_mem), m ? &m : nullptr));
        }
    }
    return kn;
}

void OpenClBackend::bind(const std::vector<ClStep>& steps, std::vector<Launch>& out) {
    for (const ClStep& k : steps) {
        Launch l;
        l.step = &k;
        if (!k.host_sample) l.kernel = make_kernel(k.variant, k.symbol, k, &l.rows_arg);
        if (k.tiled.min_rows > 0) l.tiled = make_kernel(k.tiled.variant, k.tiled.variant.symbol, k, &l.rows_arg);
        out.push_back(l);
    }
}

void OpenClBackend::build_kernels() {
    bind(sched_.decode, launches_[0]);
    bind(sched_.prefill, launches_[1]);
    bind(sched_.batch, launches_[2]);
}

void OpenClBackend::print_kernels() const {
    std::set<std::string> shown;
    std::string gates;
    for (const auto& g : sched_.gates) gates += (gates.empty() ? "" : ", ") + g.gate + "=" + g.chosen;
    for (Phase ph : {Phase::Decode, Phase::Prefill, Phase::Batch})
        for (const ClStep& k : sched_.phase(ph)) {
            std::string tn;
            for (int ti : k.tasks) tn += (tn.empty() ? "" : "+") + plan_.phase(ph)[size_t(ti)].name;
            for (const Variant* v : {k.host_sample ? nullptr : &k.variant, k.tiled.min_rows ? &k.tiled.variant : nullptr}) {
                if (!v) continue;
                const std::string text = ClPrograms::unit_text(*v, sched_.build_options);
                if (!shown.insert(text).second) continue;
                std::fprintf(stderr, "// ==== kernel %s\n// variant: %s\n// tasks: %s (%s phase, first)\n// gates: %s\n%s\n",
                             v->symbol.c_str(), v->display_name().c_str(), tn.c_str(), phase_name(ph), gates.c_str(),
                             text.c_str());
            }
        }
}

}  // namespace jitllm
