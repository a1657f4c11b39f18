// CUDA backend (see cuda_backend.h): argument binding, graph capture/replay, decode and its queue
// (setup in cuda_backend_setup.cpp, the batch phase in cuda_backend_batch.cpp).
#include "backends/cuda/cuda_backend.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <set>

#include "core/error.h"
#include "core/fp16.h"
#include "core/rope_theta.h"
#include "core/thread_pool.h"
#include "gguf/gguf_reader.h"
#include "jit/disk_cache.h"
#include "model/model.h"
#include "quant/quant.h"
#include "profile/nvtx.h"

#include <algorithm>

namespace jitllm {
namespace {

std::string gib(uint64_t b) { return fmt::format("{:.2f} GiB", double(b) / double(1ull << 30)); }

}  // namespace

Schedule cuda_schedule_for_target(const Plan& plan, const std::string& arch, const ScheduleOptions& opt) {
    return schedule_build(plan, DeviceInfo::for_target(arch), opt);
}

CudaBackend::CudaBackend(const Plan& plan, const CudaOptions& opt) : plan_(plan), opt_(opt) {
    ctx_ = std::make_unique<CudaContext>(opt.device);
    const DeviceInfo& dev = ctx_->device();
    sched_ = schedule_build(plan, dev, opt.schedule);
    if (opt.verbose_init) std::fprintf(stderr, "[jitllm] device: %s\n", dev.summary().c_str());
    if (opt.print_plan || opt.print_threads)
        std::fprintf(stderr, "%s", schedule_describe(plan, sched_, opt.print_threads).c_str());
    {
        NvtxRange r("jit compile", NvtxColor::Jit);
        compile_and_load();
    }
    allocate_buffers();
    upload_weights();
    fill_rope_table();
    encode_kv_maps();
    bind(sched_.decode, decode_lists_[0]);
    bind(sched_.decode_short, decode_lists_[1]);         // (attn.tma_from; empty otherwise)
    bind(sched_.decode_greedy, decode_lists_[2]);        // (sample.fuse=gemv; empty otherwise)
    bind(sched_.decode_short_greedy, decode_lists_[3]);  // (both)
    bind(sched_.prefill, prefill_launches_);
    bind(sched_.batch, batch_launches_);
    bind(sched_.batch_small, batch_small_launches_);
    bind(sched_.batch_xrows, batch_xrows_launches_);
    bind(sched_.batch_imma, batch_imma_launches_);
    for (int ph = 0; ph < 3; ++ph)
        for (const auto& t : plan.phase(Phase(ph))) count_ptrs_[ph].push_back(&counts_[t.name]);
    for (auto& [k, v] : counts_) v = 0;
    if (opt.profiler) {
        const double bw = measure_copy_bandwidth_gb_s(*ctx_, opt.cache.dir.empty() ? default_cache_dir() : opt.cache.dir);
        opt.profiler->set_copy_bandwidth(bw, dev.name);
        // (a batch step may take its body from one batch list and its tail from the other)
        const size_t n = std::max({sched_.decode.size(), sched_.prefill.size(),
                                   sched_.batch.size() + sched_.batch_small.size(),
                                   sched_.batch_xrows.size(), sched_.batch_imma.size() + sched_.batch_small.size()}) + 1;
        events_.resize(n);
        for (auto& e : events_) JITLLM_CUDA_TRY(ctx_->driver(), cuEventCreate(&e, CU_EVENT_DEFAULT));
    }
    if (opt.verbose_init) {
        size_t free_b = 0, total_b = 0;
        ctx_->mem_info(&free_b, &total_b);
        std::fprintf(stderr,
                     "[jitllm] gpu memory plan: weights %s, kv cache %s (%s, %d positions), scratch %s; "
                     "%s free of %s\n",
                     gib(init_.weight_bytes).c_str(), gib(init_.kv_bytes).c_str(), sched_.kv_type.c_str(),
                     plan.n_ctx, gib(init_.scratch_bytes).c_str(), gib(free_b).c_str(), gib(total_b).c_str());
        std::fprintf(stderr, "[jitllm] jit: %d variants compiled, %d from cache, %.1f ms; weights uploaded in %.1f ms\n",
                     init_.jit_compiled, init_.jit_cached, init_.jit_wall_ms, init_.upload_ms);
    }
}

CudaBackend::~CudaBackend() {
    const CudaDriver& d = ctx_->driver();
    ctx_->make_current();
    if (!queue_.empty()) d.cuStreamSynchronize(ctx_->stream());  // queued steps still copy into host_q_
    for (auto& g : decode_graph_)
        if (g) d.cuGraphExecDestroy(g);
    if (prefill_graph_) d.cuGraphExecDestroy(prefill_graph_);
    for (auto& g : masked_graph_)
        if (g) d.cuGraphExecDestroy(g);
    if (host_mask_) d.cuMemFreeHost(host_mask_);
    for (auto& [key, g] : batch_graphs_) d.cuGraphExecDestroy(g);
    if (batch_logits_host_) d.cuMemFreeHost(batch_logits_host_);
    for (auto& e : events_) d.cuEventDestroy(e);
    if (origin_) d.cuEventDestroy(origin_);
    if (host_io_) d.cuMemFreeHost(host_io_);
    if (logits_) d.cuMemFreeHost(logits_);
    for (auto& e : q_ev_)
        if (e) d.cuEventDestroy(e);
    if (host_q_) d.cuMemFreeHost(host_q_);
    if (host_batch_) d.cuMemFreeHost(host_batch_);
    if (host_kv_table_) d.cuMemFreeHost(host_kv_table_);
    if (host_draw_) d.cuMemFreeHost(host_draw_);
}

uint64_t CudaBackend::resolve(const KArg& a) const {
    switch (a.kind) {
        case KArg::Kind::Null: return 0;
        case KArg::Kind::Slot: return slots_[size_t(a.slot)] + a.offset;
        case KArg::Kind::Weight: return weight_ptr_.at(a.w) + a.offset;
        case KArg::Kind::KCache: return k_cache_[size_t(a.layer)];
        case KArg::Kind::VCache: return v_cache_[size_t(a.layer)];
        case KArg::Kind::Scratch: return scratch_.at(a.scratch) + a.offset;
        case KArg::Kind::F32: {
            uint64_t v = 0;
            std::memcpy(&v, &a.f, 4);
            return v;
        }
        case KArg::Kind::I32: {
            uint64_t v = 0;
            std::memcpy(&v, &a.i, 4);
            return v;
        }
        case KArg::Kind::Rows: return 0;  // set per batch step (Launch::rows_args)
        case KArg::Kind::HostRing: return reinterpret_cast<uint64_t>(host_io_ + kPickRing);  // (unified addressing)
        case KArg::Kind::KvMaps: return scratch_.at("attn_kv_maps") + uint64_t(a.layer) * 256;
    }
    return 0;
}

void CudaBackend::bind(const std::vector<KernelStep>& steps, std::vector<Launch>& out) {
    out.resize(steps.size());
    for (size_t i = 0; i < steps.size(); ++i) {
        const KernelStep& k = steps[i];
        Launch& l = out[i];
        l.step = &k;
        const std::string id = k.variant.display_name();
        auto it = functions_.find(k.symbol == k.variant.symbol ? id : id + "#" + k.symbol);
        JITLLM_CHECK(it != functions_.end(), "no function for {}", k.symbol);
        l.fn = it->second;
        // static (staging) + dynamic shared memory above 48 KiB needs the per-function opt-in
        const int static_smem = ctx_->attributes(l.fn).static_shared;
        if (k.smem > 0 && static_smem + int(k.smem) > 48 * 1024) {
            const int optin = ctx_->device().max_shared_per_block_optin;
            if (static_smem + int(k.smem) > optin)
                fail_device("cuda: kernel {} needs {} bytes of shared memory, the device allows {}",
                            k.symbol, static_smem + int(k.smem), optin);
            ctx_->set_max_dynamic_shared(l.fn, int(k.smem));
        }
        if (k.carveout >= 0) ctx_->set_carveout(l.fn, k.carveout);
        // more than 8 blocks a cluster (attn.tma_cluster): the non-portable size (sm_90: up to 16),
        // allowed per function
        if (k.cluster.x * k.cluster.y * k.cluster.z > 8) ctx_->allow_non_portable_clusters(l.fn);
        // thread-block clusters (attn.tma_cluster, gemv.xq's pairs): say so once per kernel when
        // its clusters do not all fit at once (the rest wait for a second wave: the gate then costs
        // time), or with --verbose-init how many fit
        if (const unsigned per = k.cluster.x * k.cluster.y * k.cluster.z; per > 1 && k.layer <= 0) {
            const unsigned want = k.grid.x * k.grid.y * k.grid.z / per;
            const int fit = ctx_->max_active_clusters(l.fn, k.grid, k.block, k.smem, k.cluster);
            if (opt_.verbose_init && fit >= int(want))
                std::fprintf(stderr, "[jitllm] %s: all %u thread-block clusters of (%u,%u,%u) resident at once (%d fit)\n",
                             k.symbol.c_str(), want, k.cluster.x, k.cluster.y, k.cluster.z, fit);
            if (fit < int(want))
                std::fprintf(stderr, "[jitllm] %s: %d of its %u thread-block clusters of (%u,%u,%u) resident at once; "
                             "the others wait for a second wave\n", k.symbol.c_str(), fit, want, k.cluster.x,
                             k.cluster.y, k.cluster.z);
        }
        l.vals.resize(k.args.size());
        for (size_t a = 0; a < k.args.size(); ++a) {
            l.vals[a] = resolve(k.args[a]);
            if (k.args[a].kind == KArg::Kind::Rows) l.rows_args.push_back(a);
        }
        l.ptrs.resize(k.args.size());
        for (size_t a = 0; a < k.args.size(); ++a) l.ptrs[a] = &l.vals[a];
    }
}

void CudaBackend::run(Phase ph, int32_t token, int pos) {
    JITLLM_CHECK(pos >= 0 && pos < plan_.n_ctx, "pos {} outside [0, {})", pos, plan_.n_ctx);
    const CudaDriver& d = ctx_->driver();
    const CUstream st = ctx_->stream();
    host_io_[0] = token;
    host_io_[1] = pos;
    JITLLM_CUDA_TRY(d, cuMemcpyHtoDAsync(slots_[size_t(Slot::Token)], host_io_, 8, st));
    // decode: the list for the position (attn.tma_from) and the pick (sample.fuse=gemv)
    const int li = ph == Phase::Decode ? decode_list(pos) : 0;
    auto& launches = ph == Phase::Decode ? decode_lists_[li] : prefill_launches_;
    const int iph = int(ph);
    NvtxRange range(fmt::format("{} {} (pos {})", phase_name(ph), steps_[iph], pos),
                    ph == Phase::Decode ? NvtxColor::Decode : NvtxColor::Prefill);
    Profiler* prof = opt_.profiler;
    bool capturing = false;
    // inside a stream capture an event record becomes a graph node only with the EXTERNAL flag
    auto record = [&](CUevent e) {
        if (capturing)
            JITLLM_CUDA_TRY(d, cuEventRecordWithFlags(e, st, CU_EVENT_RECORD_EXTERNAL));
        else
            JITLLM_CUDA_TRY(d, cuEventRecord(e, st));
    };
    auto launch_all = [&] {
        for (size_t i = 0; i < launches.size(); ++i) {
            const Launch& l = launches[i];
            if (prof) record(events_[i]);
            if (opt_.nvtx_tasks) {
                NvtxRange t(l.step->symbol, NvtxColor::Task);
                ctx_->launch(l.fn, l.step->grid, l.step->block, l.step->smem, const_cast<void**>(l.ptrs.data()), l.step->pdl,
                             l.step->cluster);
            } else {
                ctx_->launch(l.fn, l.step->grid, l.step->block, l.step->smem, const_cast<void**>(l.ptrs.data()), l.step->pdl,
                             l.step->cluster);
            }
        }
        if (prof) record(events_[launches.size()]);
    };
    CUgraphExec& g = ph == Phase::Decode ? decode_graph_[li] : prefill_graph_;
    if (prof && !origin_) {
        JITLLM_CUDA_TRY(d, cuEventCreate(&origin_, CU_EVENT_DEFAULT));
        JITLLM_CUDA_TRY(d, cuEventRecord(origin_, st));
    }
    // With the profiler the graph holds an event record node before every kernel (and one after
    // the last), so the timed run is the same graph replay as an unprofiled one.
    if (!opt_.graphs || opt_.nvtx_tasks) {  // the same kernels, launched one by one
        launch_all();
    } else {
        if (!g) {
            CUgraph graph = nullptr;
            JITLLM_CUDA_TRY(d, cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_RELAXED));
            capturing = true;
            launch_all();
            capturing = false;
            JITLLM_CUDA_TRY(d, cuStreamEndCapture(st, &graph));
            JITLLM_CUDA_TRY(d, cuGraphInstantiateWithFlags(&g, graph, 0));
            d.cuGraphDestroy(graph);
        }
        JITLLM_CUDA_TRY(d, cuGraphLaunch(g, st));
    }
    if (ph == Phase::Decode) {
        if (logits_needed_)
            JITLLM_CUDA_TRY(d, cuMemcpyDtoHAsync(logits_, slots_[size_t(Slot::Logits)], n_vocab_ * 4, st));
        JITLLM_CUDA_TRY(d, cuMemcpyDtoHAsync(host_io_ + 2, scratch_.at("token_out"), 4, st));
    }
    ctx_->synchronize();
    if (ph == Phase::Decode) token_out_ = host_io_[2];
    // step.advance=device: the decode graph's last kernel left the pick and pos + 1 in the slots
    dev_pos_ = ph == Phase::Decode ? advanced_pos(pos) : -1;
    for (auto* c : count_ptrs_[iph]) ++*c;
    if (prof) {
        std::vector<const Launch*> seq;
        for (const Launch& l : launches) seq.push_back(&l);
        record_profile(ph, seq, 1, uint64_t(pos + 1));
    }
    steps_[iph]++;
}

void CudaBackend::record_profile(Phase ph, const std::vector<const Launch*>& seq, int rows, uint64_t pos_sum,
                                 size_t tail_from, int tail_rows) {
    const CudaDriver& d = ctx_->driver();
    const int iph = int(ph);
    const auto& tasks = plan_.phase(ph);
    for (size_t i = 0; i < seq.size(); ++i) {
        float t0 = 0, dur = 0;
        JITLLM_CUDA_TRY(d, cuEventElapsedTime(&t0, origin_, events_[i]));
        JITLLM_CUDA_TRY(d, cuEventElapsedTime(&dur, events_[i], events_[i + 1]));
        const KernelStep& k = *seq[i]->step;
        std::string tn;
        for (int ti : k.tasks) tn += (tn.empty() ? "" : "+") + tasks[size_t(ti)].name;
        LaunchRecord r;
        r.kernel = k.symbol;
        r.tasks = std::move(tn);
        r.phase = phase_name(ph);
        r.token = steps_[iph];
        r.layer = k.layer;
        r.start_us = double(t0) * 1e3;
        r.dur_us = double(dur) * 1e3;
        // batch steps: per-row bytes and flops times the rows the launch ran (the output tail: the
        // rows with logits), plus what does not depend on them
        const uint64_t m = uint64_t(i >= tail_from ? tail_rows : rows);
        r.bytes = k.bytes_fixed + k.bytes * m + k.bytes_per_pos * pos_sum;
        r.flops = k.flops * m + k.flops_per_pos * pos_sum;
        opt_.profiler->add(std::move(r));
    }
}

void CudaBackend::upload_slot(Slot s, const float* src, size_t n) {
    if (s == Slot::Token || s == Slot::Pos) dev_pos_ = -1;
    ctx_->upload(slots_[size_t(s)], src, n * 4);
}

void CudaBackend::download_slot(Slot s, float* dst, size_t n) { ctx_->download(dst, slots_[size_t(s)], n * 4); }

void CudaBackend::upload_scratch(const std::string& name, const void* src, size_t bytes) {
    JITLLM_CHECK(scratch_.count(name) && bytes <= sched_.scratch.at(name), "scratch {}: {} bytes", name, bytes);
    ctx_->upload(scratch_.at(name), src, bytes);
}

void CudaBackend::download_scratch(const std::string& name, void* dst, size_t bytes) {
    JITLLM_CHECK(scratch_.count(name) && bytes <= sched_.scratch.at(name), "scratch {}: {} bytes", name, bytes);
    ctx_->download(dst, scratch_.at(name), bytes);
}

void CudaBackend::upload_kv(int layer, const float* k, const float* v, int n_pos) {
    const size_t n = size_t(n_pos) * size_t(plan_.config->kv_dim());
    if (sched_.kv_type == "float") {
        ctx_->upload(k_cache_[size_t(layer)], k, n * 4);
        ctx_->upload(v_cache_[size_t(layer)], v, n * 4);
        return;
    }
    std::vector<uint16_t> hk(n), hv(n);
    for (size_t i = 0; i < n; ++i) {
        hk[i] = fp32_to_fp16(k[i]);
        hv[i] = fp32_to_fp16(v[i]);
    }
    ctx_->upload(k_cache_[size_t(layer)], hk.data(), n * 2);
    ctx_->upload(v_cache_[size_t(layer)], hv.data(), n * 2);
}

void CudaBackend::run_step(Phase ph, size_t index, int32_t token, int pos, bool greedy_list) {
    dev_pos_ = -1;
    host_io_[0] = token;
    host_io_[1] = pos;
    ctx_->upload(slots_[size_t(Slot::Token)], host_io_, 8);
    JITLLM_CHECK(!greedy_list || (ph == Phase::Decode && !decode_lists_[2].empty()), "run_step: no greedy decode list");
    auto& launches = ph == Phase::Decode ? decode_lists_[greedy_list ? 2 : 0] : prefill_launches_;
    JITLLM_CHECK(index < launches.size(), "step {} of {}", index, launches.size());
    const Launch& l = launches[index];
    ctx_->launch(l.fn, l.step->grid, l.step->block, l.step->smem, const_cast<void**>(l.ptrs.data()), l.step->pdl,
                             l.step->cluster);
    // the attention split-KV main kernel's partial results are combined by the next launch
    ctx_->synchronize();
}

bool CudaBackend::set_draw(const DrawParams* p) {
    if (sched_.draw_max_k == 0) return p == nullptr;  // sample.draw=host: only the argmax
    if (p && !draw_in_bounds(*p, plan_.config->n_vocab, sched_.draw_max_k)) return false;
    JITLLM_CHECK(queue_.empty(), "set_draw with {} decode steps queued", queue_.size());
    static_assert(sizeof(DrawParams) == 32, "argmax.cu DrawParams: 32 bytes");
    const DrawParams greedy{};  // temperature 0: the argmax
    ctx_->upload(scratch_.at("draw_params"), p ? p : &greedy, sizeof(DrawParams));
    greedy_ = p == nullptr;  // (sample.fuse=gemv: greedy steps replay the list with the pick in the output gemv)
    return true;
}

int32_t CudaBackend::device_token_out() {
    int32_t t = -1;
    ctx_->download(&t, scratch_.at("token_out"), 4);
    return t;
}

BackendInfo CudaBackend::info() const {
    BackendInfo i;
    const DeviceInfo& dev = ctx_->device();
    i.backends = "CUDA";
    i.kv_type = sched_.kv_type == "half" ? "f16" : "f32";
    i.gpu = true;
    i.gpu_name = dev.name;
    i.gpu_arch = dev.arch;
    i.pci_bus_id = dev.pci_bus_id;
    i.jit = true;
    i.jit_wall_ms = init_.jit_wall_ms;
    i.jit_compiled = init_.jit_compiled;
    i.jit_cached = init_.jit_cached;
    return i;
}

std::string CudaBackend::describe_launches(const RunShape& r, int warmup_tokens) const {
    return schedule_describe_launches(sched_, r, warmup_tokens);
}

DecodeBytes CudaBackend::decode_bytes() const { return launch_decode_bytes(sched_.decode); }

double CudaBackend::copy_bandwidth_gb_s(size_t bytes) {
    return cuda_copy_bandwidth_gb_s(*ctx_, bytes > 0 ? bytes : size_t(2) << 30, 9);
}

uint64_t CudaBackend::device_bytes() const {
    return ctx_->allocated(MemCategory::Weights) + ctx_->allocated(MemCategory::Kv) +
           ctx_->allocated(MemCategory::Scratch) + ctx_->allocated(MemCategory::Other);
}

const float* CudaBackend::decode(int32_t token, int pos) {
    run(Phase::Decode, token, pos);
    return logits_;
}

void CudaBackend::prefill(int32_t token, int pos) { run(Phase::Prefill, token, pos); }

// Steps are queued without waiting once the decode graph exists (the first decode captures it)
// and when nothing needs the host between steps: no logits, no per-launch profiling, no
// launch-by-launch mode.
bool CudaBackend::queue_async(int pos) const {
    return decode_queues_ahead() && !logits_needed_ && decode_graph_[decode_list(pos)] != nullptr;
}

int CudaBackend::decode_list(int pos) const {
    const int short_list = pos < sched_.decode_short_below ? 1 : 0;
    return short_list + (greedy_ && !sched_.decode_greedy.empty() ? 2 : 0);
}

void CudaBackend::decode_queue(int32_t token, int pos) {
    JITLLM_CHECK(pos >= 0 && pos < plan_.n_ctx, "pos {} outside [0, {})", pos, plan_.n_ctx);
    if (!queue_async(pos)) {  // at once; with token < 0 the newest queued step's pick (or the last)
        int32_t t = token;
        if (t < 0 && queue_.empty()) t = token_out_;
        if (t < 0 && queue_.back() < 0) t = -queue_.back() - 1;
        if (t < 0) {
            JITLLM_CUDA_TRY(ctx_->driver(), cuEventSynchronize(q_ev_[queue_.back()]));
            t = queued_pick(queue_.back());
        }
        run(Phase::Decode, t, pos);
        queue_.push_back(-(token_out_ + 1));
        return;
    }
    JITLLM_CHECK(int(queue_.size()) < kQueue, "{} decode steps queued, at most {}", queue_.size(), kQueue);
    const CudaDriver& d = ctx_->driver();
    const CUstream st = ctx_->stream();
    const int k = q_next_;
    q_next_ = (q_next_ + 1) % kQueue;
    int32_t* io = host_q_ + 4 * k;  // free: its last step was collected (at most kQueue queued)
    // the ring slot pos % 4 must not hold an uncollected pick (positions 4 apart in the queue: only
    // after a rewind): read that pick now into its own slot
    for (int j : queue_)
        if (j >= 0 && host_q_[4 * j + 3] == 1 && pick_ring_slot(host_q_[4 * j + 1]) == pick_ring_slot(pos)) {
            JITLLM_CUDA_TRY(d, cuEventSynchronize(q_ev_[j]));
            host_q_[4 * j + 2] = queued_pick(j);
            host_q_[4 * j + 3] = 0;
        }
    io[1] = pos;
    const CUdeviceptr tok = slots_[size_t(Slot::Token)], tok_out = scratch_.at("token_out");
    if (token >= 0) {
        io[0] = token;
        JITLLM_CUDA_TRY(d, cuMemcpyHtoDAsync(tok, io, 8, st));
    } else if (pos != dev_pos_) {  // the previous step's pick, device to device, behind it in the stream
        JITLLM_CUDA_TRY(d, cuMemcpyHtoDAsync(tok + 4, io + 1, 4, st));
        JITLLM_CUDA_TRY(d, cuMemcpyDtoDAsync(tok, tok_out, 4, st));
    }  // else (step.advance=device): the previous step's last kernel wrote both already
    const int li = decode_list(pos);
    JITLLM_CUDA_TRY(d, cuGraphLaunch(decode_graph_[li], st));
    dev_pos_ = advanced_pos(pos);
    // step.advance=device: the pick kernel also wrote the pick into the pinned ring at pos % 4, so
    // no copy back either (io[3] = 1: collect reads the ring)
    io[3] = dev_pos_ >= 0 ? 1 : 0;
    if (!io[3]) JITLLM_CUDA_TRY(d, cuMemcpyDtoHAsync(io + 2, tok_out, 4, st));
    JITLLM_CUDA_TRY(d, cuEventRecord(q_ev_[k], st));
    for (auto* c : count_ptrs_[int(Phase::Decode)]) ++*c;
    steps_[int(Phase::Decode)]++;
    queue_.push_back(k);
}

int32_t CudaBackend::decode_collect() {
    JITLLM_CHECK(!queue_.empty(), "decode_collect with no queued decode step");
    const int k = queue_.front();
    queue_.pop_front();
    if (k < 0) {
        token_out_ = -k - 1;
    } else {
        JITLLM_CUDA_TRY(ctx_->driver(), cuEventSynchronize(q_ev_[k]));
        token_out_ = queued_pick(k);
    }
    return token_out_;
}

int32_t CudaBackend::queued_pick(int j) const {
    const int32_t* io = host_q_ + 4 * j;
    return io[3] == 1 ? reinterpret_cast<volatile int32_t*>(host_io_)[pick_ring_slot(io[1])] : io[2];
}

}  // namespace jitllm
