// CUDA backend (see cuda_backend.h), its setup: JIT compile and load, the memory plan (slots,
// KV cache, scratch), weight upload (the split layout repacked on the way), tensor maps, RoPE table.
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
    const size_t kv_bytes = size_t(plan_.kv_blocks) * size_t(plan_.kv_block) * size_t(c.kv_dim()) * kv_elem;
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
        if (scratch_.count("kv_table")) {
            // the block tables: sequence s has blocks s * per_seq + b where the pool holds them
            const size_t n = size_t(plan_.n_seq) * size_t(plan_.kv_blocks_per_seq());
            JITLLM_CUDA_TRY(ctx_->driver(), cuMemAllocHost(reinterpret_cast<void**>(&host_kv_table_), n * 4));
            for (size_t i = 0; i < n; ++i) host_kv_table_[i] = int64_t(i) < plan_.kv_blocks ? int32_t(i) : -1;
            ctx_->upload(scratch_.at("kv_table"), host_kv_table_, n * 4);
        }
    }
    ctx_->synchronize();
}

namespace {
// Two pinned host buffers for the weight upload: piece k is copied (or repacked) into buffer k % 2
// by the host's threads while piece k - 1's DMA runs. (A pageable copy stages through the driver's
// own pinned memory on the calling thread: one core and no overlap.)
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

// Gate attn.kv=tma: every layer's K and V cache as a 2-D f16 tensor [rows][kv_dim] (rows: the
// pool's; decode reads sequence 0's first n_ctx), boxes of 64 halves x kv_map_rows rows, 128-byte
// swizzle (the box's inner extent), rows past the cache zero filled; 256 bytes a layer (K's map,
// then V's) in scratch "attn_kv_maps", which attention_decode_tma.cu reads from global memory.
void CudaBackend::encode_kv_maps() {
    const int rows = sched_.kv_map_rows;
    if (rows == 0) return;
    const ModelConfig& c = *plan_.config;
    JITLLM_CHECK(sched_.kv_type == "half", "attn.kv=tma: a half KV cache");
    static_assert(sizeof(CUtensorMap) == 128, "CUtensorMap: 128 bytes");
    std::vector<CUtensorMap> maps(2 * size_t(c.n_layers));
    const cuuint64_t dims[2] = {cuuint64_t(c.kv_dim()), cuuint64_t(plan_.kv_blocks) * cuuint64_t(plan_.kv_block)};
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
                const float theta = rope_theta(p, i, rt.n_rot, rt.base, ff, rt.yarn);  // cpu::rope's angle
                t[(size_t(p) * half + i) * 2] = std::cos(theta);
                t[(size_t(p) * half + i) * 2 + 1] = std::sin(theta);
            }
    });
    ctx_->upload(scratch_.at("rope_table"), t.data(), t.size() * 4);
}

}  // namespace jitllm
