// CUDA backend (see cuda_backend.h): memory plan, JIT, argument binding, graph capture/replay.
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

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

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
    bind(sched_.decode_short, decode_lists_[1]);         // (--attn-tma-from; empty otherwise)
    bind(sched_.decode_greedy, decode_lists_[2]);        // (sample.fuse=gemv; empty otherwise)
    bind(sched_.decode_short_greedy, decode_lists_[3]);  // (both)
    bind(sched_.prefill, prefill_launches_);
    bind(sched_.batch, batch_launches_);
    bind(sched_.batch_small, batch_small_launches_);
    bind(sched_.batch_xrows, batch_xrows_launches_);
    for (int ph = 0; ph < 3; ++ph)
        for (const auto& t : plan.phase(Phase(ph))) count_ptrs_[ph].push_back(&counts_[t.name]);
    for (auto& [k, v] : counts_) v = 0;
    if (opt.profiler) {
        const double bw = measure_copy_bandwidth_gb_s(*ctx_, opt.cache.dir.empty() ? default_cache_dir() : opt.cache.dir);
        opt.profiler->set_copy_bandwidth(bw, dev.name);
        // (a batch step may take its body from one batch list and its tail from the other)
        const size_t n = std::max({sched_.decode.size(), sched_.prefill.size(),
                                   sched_.batch.size() + sched_.batch_small.size(),
                                   sched_.batch_xrows.size()}) + 1;
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
    if (host_draw_) d.cuMemFreeHost(host_draw_);
}

void CudaBackend::compile_and_load() {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<Variant> variants = schedule_variants(sched_);
    JitOptions jo;
    jo.cache = opt_.cache;
    JitCompiler jit(ctx_->device().arch, jo);
    const auto compiled = jit.compile_all(variants);
    init_.jit_wall_ms = ms_since(t0);
    std::set<std::string> printed;
    for (const auto& ck : compiled) {
        (ck.from_cache ? init_.jit_cached : init_.jit_compiled)++;
        const std::string id = ck.variant.display_name();
        CUmodule m = ctx_->load_module(ck.cubin, id);
        functions_[id] = ctx_->function(m, ck.variant.symbol);
        // entries beside the main one (attention split-KV reduce)
        for (const auto* list : {&sched_.decode, &sched_.decode_short, &sched_.decode_greedy, &sched_.decode_short_greedy})
            for (const auto& k : *list)
                if (k.variant.display_name() == id && k.symbol != ck.variant.symbol)
                    functions_[id + "#" + k.symbol] = ctx_->function(m, k.symbol);
        if (opt_.print_kernel && printed.insert(id).second) {
            std::string tasks;
            for (const auto& k : sched_.decode)
                if (k.variant.display_name() == id && tasks.find(k.group) == std::string::npos)
                    tasks += (tasks.empty() ? "" : ", ") + k.group;
            std::string gates;
            for (const auto& g : sched_.gates) gates += fmt::format("{}={} ", g.gate, g.chosen);
            std::fprintf(stderr, "// ==== kernel %s\n// variant: %s\n// tasks: %s\n// gates: %s\n// cache: %s\n%s\n",
                         ck.variant.symbol.c_str(), id.c_str(), tasks.c_str(), gates.c_str(),
                         ck.source_path.empty() ? "(disabled)" : ck.source_path.c_str(),
                         unit_source(ck.variant, ck.arch).c_str());
        }
    }
}

void CudaBackend::allocate_buffers() {
    const ModelConfig& c = *plan_.config;
    slots_.assign(size_t(Slot::Count), 0);
    // token and pos share one allocation so one 8-byte copy sets both
    const CUdeviceptr io = ctx_->alloc(kAlign, MemCategory::Scratch, "token/pos");
    slots_[size_t(Slot::Token)] = io;
    slots_[size_t(Slot::Pos)] = io + 4;
    uint64_t scratch = kAlign;
    for (const auto& b : plan_.buffers) {
        if (b.per_layer || b.slot == Slot::Token || b.slot == Slot::Pos) continue;
        size_t n = 4;
        for (auto d : b.shape) n *= size_t(d);
        slots_[size_t(b.slot)] = ctx_->alloc(align_up(n), MemCategory::Scratch, slot_name(b.slot));
        ctx_->memset_async(slots_[size_t(b.slot)], 0, align_up(n));
        scratch += align_up(n);
    }
    const size_t kv_elem = sched_.kv_type == "float" ? 4 : 2;
    const size_t kv_bytes = size_t(plan_.n_seq) * size_t(plan_.n_ctx) * size_t(c.kv_dim()) * kv_elem;
    for (int l = 0; l < c.n_layers; ++l) {
        k_cache_.push_back(ctx_->alloc(align_up(kv_bytes), MemCategory::Kv, fmt::format("blk.{}.k_cache", l)));
        v_cache_.push_back(ctx_->alloc(align_up(kv_bytes), MemCategory::Kv, fmt::format("blk.{}.v_cache", l)));
        ctx_->memset_async(k_cache_.back(), 0, align_up(kv_bytes));
        ctx_->memset_async(v_cache_.back(), 0, align_up(kv_bytes));
    }
    init_.kv_bytes = 2 * uint64_t(c.n_layers) * align_up(kv_bytes);
    for (const auto& [name, bytes] : sched_.scratch) {
        scratch_[name] = ctx_->alloc(align_up(bytes), MemCategory::Scratch, name);
        ctx_->memset_async(scratch_[name], 0, align_up(bytes));
        scratch += align_up(bytes);
    }
    init_.scratch_bytes = scratch;
    static_assert((kPickRing + 4) * 4 <= 64, "host_io_: the picks ring inside the 64 pinned bytes");
    JITLLM_CUDA_TRY(ctx_->driver(), cuMemAllocHost(reinterpret_cast<void**>(&host_io_), 64));
    n_vocab_ = size_t(c.n_vocab);
    JITLLM_CUDA_TRY(ctx_->driver(), cuMemAllocHost(reinterpret_cast<void**>(&logits_), n_vocab_ * 4));
    JITLLM_CUDA_TRY(ctx_->driver(), cuMemAllocHost(reinterpret_cast<void**>(&host_q_), kQueue * 4 * 4));
    for (auto& e : q_ev_) JITLLM_CUDA_TRY(ctx_->driver(), cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    if (plan_.batch_rows > 0) {
        JITLLM_CUDA_TRY(ctx_->driver(), cuMemAllocHost(reinterpret_cast<void**>(&host_batch_),
                                                       size_t(plan_.batch_rows) * 3 * 4));
        JITLLM_CUDA_TRY(ctx_->driver(), cuMemAllocHost(reinterpret_cast<void**>(&batch_logits_host_),
                                                       size_t(plan_.n_seq) * size_t(c.n_vocab) * 4));
        if (sched_.draw_max_k > 0 && scratch_.count("draw_rows_params"))  // the batch tail's draw_rows kernel
            JITLLM_CUDA_TRY(ctx_->driver(), cuMemAllocHost(reinterpret_cast<void**>(&host_draw_),
                                                           size_t(plan_.n_seq) * sizeof(DrawParams)));
    }
    ctx_->synchronize();
}

namespace {
// Two pinned host buffers for the weight upload: piece k is copied (or repacked) into buffer k % 2
// by the host's threads while piece k - 1's DMA runs. (A pageable cuMemcpyHtoD stages through the
// driver's own pinned memory on the calling thread and returns when the copy is done: one core
// and no overlap.)
// Without pinned memory (the driver refused it) the buffers are pageable and each piece is a
// synchronous copy, as before.
class UploadStaging {
public:
    UploadStaging(const CudaContext& ctx, size_t bytes) : ctx_(ctx) {
        const CudaDriver& d = ctx.driver();
        try {
            for (int i = 0; i < 2; ++i) {
                JITLLM_CUDA_TRY(d, cuMemAllocHost(reinterpret_cast<void**>(&buf_[i]), bytes));
                JITLLM_CUDA_TRY(d, cuEventCreate(&ev_[i], CU_EVENT_DISABLE_TIMING));
            }
        } catch (const Error& e) {
            release();
            std::fprintf(stderr, "[jitllm] weights upload: no pinned staging (%s); pageable copies\n", e.what());
            for (int i = 0; i < 2; ++i) {
                pageable_[i].resize(bytes);
                buf_[i] = nullptr;
            }
        }
    }
    ~UploadStaging() { release(); }
    UploadStaging(const UploadStaging&) = delete;
    UploadStaging& operator=(const UploadStaging&) = delete;
    // buffer i, once the DMA that last read it is done
    uint8_t* wait(int i) {
        if (sent_[i]) JITLLM_CUDA_TRY(ctx_.driver(), cuEventSynchronize(ev_[i]));
        sent_[i] = false;
        return buf_[i] ? buf_[i] : pageable_[i].data();
    }
    // the first n bytes of buffer i to dst, behind the stream's earlier work
    void send(int i, CUdeviceptr dst, size_t n) {
        if (!buf_[i]) {
            ctx_.upload(dst, pageable_[i].data(), n);
            return;
        }
        const CudaDriver& d = ctx_.driver();
        JITLLM_CUDA_TRY(d, cuMemcpyHtoDAsync(dst, buf_[i], n, ctx_.stream()));
        JITLLM_CUDA_TRY(d, cuEventRecord(ev_[i], ctx_.stream()));
        sent_[i] = true;
    }

private:
    void release() noexcept {  // (errors ignored: also runs while an exception unwinds)
        const CudaDriver& d = ctx_.driver();
        for (int i = 0; i < 2; ++i) {
            if (ev_[i]) {
                if (sent_[i]) d.cuEventSynchronize(ev_[i]);  // the DMA still reads buf_[i]
                d.cuEventDestroy(ev_[i]);
                ev_[i] = nullptr;
            }
            if (buf_[i]) d.cuMemFreeHost(buf_[i]);
            buf_[i] = nullptr;
        }
    }
    const CudaContext& ctx_;
    uint8_t* buf_[2] = {nullptr, nullptr};
    std::vector<uint8_t> pageable_[2];
    CUevent ev_[2] = {nullptr, nullptr};
    bool sent_[2] = {false, false};
};
}  // namespace

void CudaBackend::upload_weights() {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<const WeightTensor*> ws;
    std::set<const WeightTensor*> seen;
    for (const auto* tasks : {&plan_.decode, &plan_.prefill})
        for (const auto& t : *tasks)
            for (auto* w : t.w)
                if (w && seen.insert(w).second) ws.push_back(w);
    size_t total = 0;
    for (auto* w : ws) total += align_up(w->n_bytes);
    weights_base_ = ctx_->alloc(total, MemCategory::Weights, "weights");
    const bool tty = ::isatty(2);
    // pieces of about 64 MiB (whole rows for the split layout's repacking), so the progress bar
    // moves on big tensors and the staging buffers stay small
    auto piece_of = [&](const WeightTensor* w) {
        return sched_.split_weights.count(w) > 0 ? std::max<size_t>(1, (64u << 20) / w->row_bytes) * w->row_bytes
                                                 : size_t(64u << 20);
    };
    size_t staging = 0;
    for (auto* w : ws) staging = std::max(staging, std::min(w->n_bytes, piece_of(w)));
    ctx_->make_current();
    UploadStaging stage(*ctx_, std::max<size_t>(staging, 1));
    ThreadPool& pool = ThreadPool::global();
    // weights of an opened file come out of it by pread (GgufReader::copy_out), not through the
    // mapping, whose first touch runs at page-fault speed; bytes in memory by memcpy
    const GgufReader* gguf = plan_.model ? plan_.model->gguf.get() : nullptr;
    auto copy_out = [&](const uint8_t* p, size_t n, uint8_t* to) {
        if (gguf && gguf->holds(p, n))
            gguf->copy_out(p, n, to);
        else
            std::memcpy(to, p, n);
    };
    std::vector<std::vector<uint8_t>> raw_rows(size_t(std::max(1, pool.size())));
    size_t off = 0, done = 0;
    int last_pct = -1, k = 0;
    for (auto* w : ws) {
        weight_ptr_[w] = weights_base_ + off;
        const bool split = sched_.split_weights.count(w) > 0;
        JITLLM_CHECK(!split || w->n_bytes == w->rows * w->row_bytes, "split weight {}: {} bytes", w->name, w->n_bytes);
        const size_t piece = piece_of(w);
        for (size_t p = 0; p < w->n_bytes; p += piece, ++k) {
            const size_t n = std::min(w->n_bytes - p, piece);
            JITLLM_CHECK(n <= staging, "upload piece of {} bytes over the {}-byte staging buffer", n, staging);
            const uint8_t* src = w->data + p;
            uint8_t* dst = stage.wait(k % 2);
            // the host's threads fill the buffer: split-layout rows repacked, others copied
            const int64_t units = split ? int64_t(n / w->row_bytes) : int64_t((n + 4095) / 4096);
            const int nt = std::max(1, std::min<int>(pool.size(), int(units / 64)));
            const int64_t per = (units + nt - 1) / nt;
            // split rows through a per-thread buffer of a few MiB, then repacked
            pool.parallel_for(nt, [&](int i) {
                const int64_t u0 = std::min(units, i * per), u1 = std::min(units, (i + 1) * per);
                if (u1 <= u0) return;
                if (split) {
                    std::vector<uint8_t>& raw = raw_rows[size_t(i)];
                    const int64_t step = std::max<int64_t>(1, int64_t((4u << 20) / w->row_bytes));
                    raw.resize(size_t(std::min(step, u1 - u0)) * w->row_bytes);
                    for (int64_t r0 = u0; r0 < u1; r0 += step) {
                        const int64_t m = std::min(step, u1 - r0);
                        copy_out(src + size_t(r0) * w->row_bytes, size_t(m) * w->row_bytes, raw.data());
                        repack_split_rows(w->type, raw.data(), dst + size_t(r0) * w->row_bytes, m, int64_t(w->cols));
                    }
                } else {
                    const size_t b0 = size_t(u0) * 4096, b1 = std::min(n, size_t(u1) * 4096);
                    copy_out(src + b0, b1 - b0, dst + b0);
                }
            });
            stage.send(k % 2, weights_base_ + off + p, n);
            done += n;
            const int pct = int(100.0 * double(done) / double(std::max<size_t>(total, 1)));
            if (tty && total > (256u << 20) && pct != last_pct) {
                std::fprintf(stderr, "\r[jitllm] uploading weights %3d%% (%s of %s)", pct, gib(done).c_str(),
                             gib(total).c_str());
                last_pct = pct;
            }
        }
        off += align_up(w->n_bytes);
    }
    ctx_->synchronize();  // every piece is on the device before the staging buffers go
    if (tty && total > (256u << 20)) std::fprintf(stderr, "\n");
    init_.weight_bytes = total;
    init_.upload_ms = ms_since(t0);
}

// Gate attn.kv=tma: every layer's K and V cache as a 2-D f16 tensor [rows][kv_dim] (rows: every
// sequence's positions), boxes of 64 halves x kv_map_rows rows, 128-byte swizzle (the box's inner
// extent), rows past the cache zero filled; 256 bytes a layer (K's map, then V's) in scratch
// "attn_kv_maps", which attention_decode_tma.cu reads from global memory.
void CudaBackend::encode_kv_maps() {
    const int rows = sched_.kv_map_rows;
    if (rows == 0) return;
    const ModelConfig& c = *plan_.config;
    JITLLM_CHECK(sched_.kv_type == "half", "attn.kv=tma: a half KV cache");
    static_assert(sizeof(CUtensorMap) == 128, "CUtensorMap: 128 bytes");
    std::vector<CUtensorMap> maps(2 * size_t(c.n_layers));
    const cuuint64_t dims[2] = {cuuint64_t(c.kv_dim()), cuuint64_t(plan_.n_seq) * cuuint64_t(plan_.n_ctx)};
    const cuuint64_t strides[1] = {cuuint64_t(c.kv_dim()) * 2};
    const cuuint32_t box[2] = {64, cuuint32_t(rows)};
    const cuuint32_t elem[2] = {1, 1};
    const CudaDriver& d = ctx_->driver();
    for (int l = 0; l < c.n_layers; ++l)
        for (int kv = 0; kv < 2; ++kv)
            JITLLM_CUDA_TRY(d, cuTensorMapEncodeTiled(&maps[2 * size_t(l) + size_t(kv)], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                                                      reinterpret_cast<void*>(kv ? v_cache_[size_t(l)] : k_cache_[size_t(l)]),
                                                      dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    ctx_->upload(scratch_.at("attn_kv_maps"), maps.data(), maps.size() * sizeof(CUtensorMap));
}

void CudaBackend::fill_rope_table() {
    const auto& rt = sched_.rope_table;
    if (rt.n_pos == 0) return;
    const int half = rt.n_rot / 2;
    const float* ff = nullptr;
    if (rt.freq_factors) {
        JITLLM_CHECK(rt.freq_factors->type == GgmlType::F32 && int(rt.freq_factors->cols * rt.freq_factors->rows) >= half,
                     "{}: rope frequency factors", rt.freq_factors->name);
        ff = reinterpret_cast<const float*>(rt.freq_factors->data);
    }
    std::vector<float> t(size_t(rt.n_pos) * size_t(half) * 2);
    ThreadPool& pool = ThreadPool::global();  // 131072 positions x 64 pairs: ~8 M angles
    const int nt = std::max(1, std::min(pool.size(), rt.n_pos / 256));
    const int per = (rt.n_pos + nt - 1) / nt;
    pool.parallel_for(nt, [&](int w) {
        for (int p = w * per; p < std::min(rt.n_pos, (w + 1) * per); ++p)
            for (int i = 0; i < half; ++i) {
                const float theta = rope_theta(p, i, rt.n_rot, rt.base, ff);  // cpu::rope's angle
                t[(size_t(p) * half + i) * 2] = std::cos(theta);
                t[(size_t(p) * half + i) * 2 + 1] = std::sin(theta);
            }
    });
    ctx_->upload(scratch_.at("rope_table"), t.data(), t.size() * 4);
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
        // more than 8 blocks a cluster (--attn-tma-cluster): the non-portable size (sm_90: up to 16),
        // allowed per function
        if (k.cluster.x * k.cluster.y * k.cluster.z > 8) ctx_->allow_non_portable_clusters(l.fn);
        // thread-block clusters (attn.merge=cluster, --attn-tma-cluster): say so once per kernel when
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
        // --attn-overlap: the gemv after a register-capped attention kernel should fit an SM beside
        // attention's two blocks; say what the compiled kernels give (first layer only)
        if (i > 0 && k.layer <= 0 && steps[i - 1].variant.has("MAX_REGS")) {
            const KernelStep& pk = steps[i - 1];
            const FuncAttributes fa = ctx_->attributes(out[i - 1].fn), fb = ctx_->attributes(l.fn);
            const BlockDemand a{int(pk.block.x * pk.block.y * pk.block.z), fa.registers, fa.static_shared + int(pk.smem)};
            const BlockDemand b{int(k.block.x * k.block.y * k.block.z), fb.registers, static_smem + int(k.smem)};
            const int fit = blocks_beside(ctx_->device(), a, 2, b);
            if (fit < 1 || opt_.verbose_init)
                std::fprintf(stderr, "[jitllm] --attn-overlap: %s (%d registers, %d bytes, 2 blocks an SM) leaves room "
                             "for %d block(s) of %s (%d registers, %d threads, %d bytes)%s\n", pk.symbol.c_str(),
                             fa.registers, a.shared, fit, k.symbol.c_str(), fb.registers, b.threads, b.shared,
                             fit < 1 ? ": no overlap" : "");
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
    // decode: the list for the position (--attn-tma-from) and the pick (sample.fuse=gemv)
    const int li = ph == Phase::Decode ? decode_list(pos) : 0;
    auto& launches = ph == Phase::Decode ? decode_lists_[li] : prefill_launches_;
    const int iph = int(ph);
    NvtxRange range(fmt::format("{} {}", phase_name(ph), steps_[iph]),
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

DecodeBytes CudaBackend::decode_bytes() const {
    DecodeBytes b;
    for (const auto& k : sched_.decode) {
        b.fixed += k.bytes;
        b.per_pos += k.bytes_per_pos;
    }
    return b;
}

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
    return opt_.run_ahead && opt_.graphs && !opt_.nvtx_tasks && !opt_.profiler && !logits_needed_ &&
           decode_graph_[decode_list(pos)] != nullptr;
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

namespace jitllm {

void CudaBackend::batch(const BatchStep& b) {
    dev_pos_ = -1;
    const ModelConfig& c = *plan_.config;
    JITLLM_CHECK(plan_.batch_rows >= b.n && b.n >= 1, "batch of {} rows, plan has {}", b.n, plan_.batch_rows);
    JITLLM_CHECK(!b.logits || b.n <= plan_.n_seq, "batch logits for {} rows, plan has {} sequences", b.n, plan_.n_seq);
    uint64_t pos_sum = 0;
    for (int i = 0; i < b.n; ++i) {
        JITLLM_CHECK(b.pos[i] >= 0 && b.pos[i] < plan_.n_ctx, "row {}: pos {} outside [0, {})", i, b.pos[i], plan_.n_ctx);
        JITLLM_CHECK(b.tokens[i] >= 0 && b.tokens[i] < c.n_vocab, "row {}: token {} outside vocab", i, b.tokens[i]);
        JITLLM_CHECK(b.seq[i] >= 0 && b.seq[i] < plan_.n_seq, "row {}: sequence {} outside [0, {})", i, b.seq[i],
                     plan_.n_seq);
        pos_sum += uint64_t(b.pos[i]) + 1;
    }
    const CudaDriver& d = ctx_->driver();
    const CUstream st = ctx_->stream();
    const int R = plan_.batch_rows;
    std::memcpy(host_batch_, b.tokens, size_t(b.n) * 4);
    std::memcpy(host_batch_ + R, b.pos, size_t(b.n) * 4);
    std::memcpy(host_batch_ + 2 * R, b.seq, size_t(b.n) * 4);
    JITLLM_CUDA_TRY(d, cuMemcpyHtoDAsync(slots_[size_t(Slot::Tokens)], host_batch_, size_t(b.n) * 4, st));
    JITLLM_CUDA_TRY(d, cuMemcpyHtoDAsync(slots_[size_t(Slot::Positions)], host_batch_ + R, size_t(b.n) * 4, st));
    JITLLM_CUDA_TRY(d, cuMemcpyHtoDAsync(slots_[size_t(Slot::Seqs)], host_batch_ + 2 * R, size_t(b.n) * 4, st));
    // the output tail: every row (logits), the last row moved to row 0 (logits_last), or none
    const int tail_rows = b.logits ? b.n : b.logits_last ? 1 : 0;
    if (host_draw_ && tail_rows) {  // the draw_rows kernel reads every tail row's parameters
        for (int i = 0; i < tail_rows; ++i) {
            const DrawParams* p = b.logits && b.draw ? &b.draw[i] : nullptr;
            const bool drawn = p && draw_in_bounds(*p, c.n_vocab, sched_.draw_max_k);
            host_draw_[i] = drawn ? *p : DrawParams{};  // temperature 0: the argmax
        }
        JITLLM_CUDA_TRY(d, cuMemcpyHtoDAsync(scratch_.at("draw_rows_params"), host_draw_,
                                             size_t(tail_rows) * sizeof(DrawParams), st));
    }
    // the launch sequence: the body and the output tail each from a small-step gemv list when their
    // rows allow (gate batch.small; 2 or more rows: gate batch.xrows's list where it exists), else
    // from the GEMM list
    auto list_for = [&](int rows) -> std::pair<std::vector<Launch>*, size_t> {
        if (rows > sched_.batch_small_rows) return {&batch_launches_, sched_.batch_body};
        if (rows >= 2 && !batch_xrows_launches_.empty()) return {&batch_xrows_launches_, sched_.batch_xrows_body};
        return {&batch_small_launches_, sched_.batch_small_body};
    };
    std::vector<Launch*> seq;
    {
        const auto [lb, body] = list_for(b.n);
        for (size_t i = 0; i < body; ++i) seq.push_back(&(*lb)[i]);
    }
    const size_t tail_from = seq.size();
    if (tail_rows) {
        const auto [lt, body] = list_for(tail_rows);
        for (size_t i = body; i < lt->size(); ++i) seq.push_back(&(*lt)[i]);
    }
    const size_t n_launch = seq.size();
    const int iph = int(Phase::Batch);
    NvtxRange range(fmt::format("batch {} ({} rows)", steps_[iph], b.n), NvtxColor::Prefill);
    Profiler* prof = opt_.profiler;
    if (prof && !origin_) {
        JITLLM_CUDA_TRY(d, cuEventCreate(&origin_, CU_EVENT_DEFAULT));
        JITLLM_CUDA_TRY(d, cuEventRecord(origin_, st));
    }
    // grids and the row-count argument depend on the rows: one CUDA graph per (rows, logits),
    // captured on first use; with the profiler or --nvtx-tasks, launched one by one
    auto launch_all = [&] {
        for (size_t i = 0; i < n_launch; ++i) {
            Launch& l = *seq[i];
            const int rows = i < tail_from ? b.n : tail_rows;
            if (i == tail_from && !b.logits && b.n > 1) {  // logits_last: X row n-1 -> row 0
                const size_t row_bytes = size_t(c.dim) * 4;
                JITLLM_CUDA_TRY(d, cuMemcpyDtoDAsync(slots_[size_t(Slot::X)], slots_[size_t(Slot::X)] + (b.n - 1) * row_bytes,
                                                     row_bytes, st));
            }
            for (size_t a : l.rows_args) {
                l.vals[a] = 0;
                std::memcpy(&l.vals[a], &rows, 4);
            }
            if (prof) JITLLM_CUDA_TRY(d, cuEventRecord(events_[i], st));
            const Dim3 grid = l.step->grid_for_rows(rows);
            if (opt_.nvtx_tasks) {
                NvtxRange t(l.step->symbol, NvtxColor::Task);
                ctx_->launch(l.fn, grid, l.step->block, l.step->smem, l.ptrs.data(), l.step->pdl, l.step->cluster);
            } else {
                ctx_->launch(l.fn, grid, l.step->block, l.step->smem, l.ptrs.data(), l.step->pdl, l.step->cluster);
            }
        }
        if (prof) JITLLM_CUDA_TRY(d, cuEventRecord(events_[n_launch], st));
    };
    if (!opt_.graphs || prof || opt_.nvtx_tasks) {
        launch_all();
    } else {
        CUgraphExec& g = batch_graphs_[3 * b.n + (b.logits ? 1 : b.logits_last ? 2 : 0)];
        if (!g) {
            CUgraph graph = nullptr;
            JITLLM_CUDA_TRY(d, cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_RELAXED));
            launch_all();
            JITLLM_CUDA_TRY(d, cuStreamEndCapture(st, &graph));
            JITLLM_CUDA_TRY(d, cuGraphInstantiateWithFlags(&g, graph, 0));
            d.cuGraphDestroy(graph);
        }
        JITLLM_CUDA_TRY(d, cuGraphLaunch(g, st));
    }
    batch_n_ = tail_rows ? tail_rows : b.n;
    batch_logits_ = tail_rows > 0;
    if (tail_rows) {
        batch_tokens_out_.resize(size_t(tail_rows));
        if (logits_needed_)
            JITLLM_CUDA_TRY(d, cuMemcpyDtoHAsync(batch_logits_host_, slots_[size_t(Slot::Logits)],
                                                 size_t(tail_rows) * size_t(c.n_vocab) * 4, st));
        JITLLM_CUDA_TRY(d, cuMemcpyDtoHAsync(batch_tokens_out_.data(), slots_[size_t(Slot::Tokens)],
                                             size_t(tail_rows) * 4, st));
    }
    ctx_->synchronize();
    if (b.logits_last && !b.logits) token_out_ = batch_tokens_out_[0];
    const size_t n_tasks = tail_rows ? plan_.batch.size() : plan_.batch_body;
    for (size_t i = 0; i < n_tasks; ++i) ++*count_ptrs_[iph][i];
    if (prof) record_profile(Phase::Batch, std::vector<const Launch*>(seq.begin(), seq.end()), b.n, pos_sum, tail_from,
                             tail_rows);
    steps_[iph]++;
}

const float* CudaBackend::batch_logits(int row) {
    // without set_logits_needed the rows are not copied back (greedy picks on the device): stale
    JITLLM_CHECK(batch_logits_ && row >= 0 && row < batch_n_, "batch row {} has no logits", row);
    return batch_logits_host_ + size_t(row) * size_t(plan_.config->n_vocab);
}

int32_t CudaBackend::batch_sampled(int row) const {
    JITLLM_CHECK(batch_logits_ && row >= 0 && row < batch_n_, "batch row {} has no pick", row);
    return batch_tokens_out_[size_t(row)];
}

}  // namespace jitllm
