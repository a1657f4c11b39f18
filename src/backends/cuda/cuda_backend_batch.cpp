// CUDA backend (see cuda_backend.h), the batch phase: a step of several rows (prompt chunks and
// the server's batched decode) through the batch kernel lists.
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

void CudaBackend::batch(const BatchStep& b) {
    dev_pos_ = -1;
    const ModelConfig& c = *plan_.config;
    JITLLM_CHECK(plan_.batch_rows >= b.n && b.n >= 1, "batch of {} rows, plan has {}", b.n, plan_.batch_rows);
    JITLLM_CHECK(!b.logits || b.n <= plan_.n_seq, "batch logits for {} rows, plan has {} sequences", b.n, plan_.n_seq);
    JITLLM_CHECK(b.logits_first >= 0 && b.logits_first <= std::min(b.n, plan_.n_seq) && !(b.logits_first && b.logits),
                 "batch logits for the first {} of {} rows, plan has {} sequences", b.logits_first, b.n, plan_.n_seq);
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
    if (kv_dirty_hi_ >= 0) {  // the block tables set since the last step (rows lo..hi)
        const size_t per = size_t(plan_.kv_blocks_per_seq()), lo = size_t(kv_dirty_lo_);
        const size_t n = (size_t(kv_dirty_hi_) + 1 - lo) * per;
        JITLLM_CUDA_TRY(d, cuMemcpyHtoDAsync(scratch_.at("kv_table") + lo * per * 4, host_kv_table_ + lo * per, n * 4, st));
        kv_dirty_lo_ = 1 << 30, kv_dirty_hi_ = -1;
    }
    // the output tail: every row (logits), the first rows (logits_first), the last row moved to
    // row 0 (logits_last), or none
    const bool last_only = b.logits_last && !b.logits && b.logits_first == 0;
    const int tail_rows = b.logits ? b.n : b.logits_first > 0 ? b.logits_first : last_only ? 1 : 0;
    if (host_draw_ && tail_rows) {  // the draw_rows kernel reads every tail row's parameters
        for (int i = 0; i < tail_rows; ++i) {
            const DrawParams* p = (b.logits || b.logits_first) && b.draw ? &b.draw[i] : nullptr;
            const bool drawn = p && draw_in_bounds(*p, c.n_vocab, sched_.draw_max_k);
            host_draw_[i] = drawn ? *p : DrawParams{};  // temperature 0: the argmax
        }
        JITLLM_CUDA_TRY(d, cuMemcpyHtoDAsync(scratch_.at("draw_rows_params"), host_draw_,
                                             size_t(tail_rows) * sizeof(DrawParams), st));
    }
    // the launch sequence: the body and the output tail each from the list their rows choose
    // (Schedule::batch_list: the small-step gemv lists, the integer GEMM list, the GEMM list)
    auto list_for = [&](int rows) -> std::pair<std::vector<Launch>*, size_t> {
        const Schedule::List l = sched_.batch_list(rows);
        std::vector<Launch>* v = l == Schedule::List::Small   ? &batch_small_launches_
                                 : l == Schedule::List::Xrows ? &batch_xrows_launches_
                                 : l == Schedule::List::Imma  ? &batch_imma_launches_
                                                              : &batch_launches_;
        return {v, sched_.batch_body_of(l)};
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
    NvtxRange range(fmt::format("batch {} ({} rows from pos {})", steps_[iph], b.n, b.pos[0]), NvtxColor::Prefill);
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
            if (i == tail_from && last_only && b.n > 1) {  // logits_last: X row n-1 -> row 0
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
        CUgraphExec& g = batch_graphs_[(int64_t(b.n) << 32) | (int64_t(tail_rows) << 2) | (last_only ? 2 : 0)];
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
    if (last_only) token_out_ = batch_tokens_out_[0];
    const size_t n_tasks = tail_rows ? plan_.batch.size() : plan_.batch_body;
    for (size_t i = 0; i < n_tasks; ++i) ++*count_ptrs_[iph][i];
    if (prof) record_profile(Phase::Batch, std::vector<const Launch*>(seq.begin(), seq.end()), b.n, pos_sum, tail_from,
                             tail_rows);
    steps_[iph]++;
}

void CudaBackend::run_batch_step(size_t index, int rows) {
    JITLLM_CHECK(index < batch_launches_.size(), "batch step {} of {}", index, batch_launches_.size());
    JITLLM_CHECK(rows >= 1 && rows <= plan_.batch_rows, "batch of {} rows, plan has {}", rows, plan_.batch_rows);
    dev_pos_ = -1;
    Launch& l = batch_launches_[index];
    for (size_t a : l.rows_args) {
        l.vals[a] = 0;
        std::memcpy(&l.vals[a], &rows, 4);
    }
    ctx_->launch(l.fn, l.step->grid_for_rows(rows), l.step->block, l.step->smem_for_rows(rows), l.ptrs.data(), l.step->pdl,
                 l.step->cluster);
    ctx_->synchronize();
}

bool CudaBackend::set_kv_blocks(int seq, const int32_t* blocks, int n) {
    const int per = plan_.kv_blocks_per_seq();
    JITLLM_CHECK(seq >= 0 && seq < plan_.n_seq && n >= 0 && n <= per, "kv blocks: sequence {}, {} blocks", seq, n);
    if (!host_kv_table_) return false;  // no batch phase: nothing reads a table
    // (the previous step's upload is done: every batch step ends synchronized)
    int32_t* t = host_kv_table_ + size_t(seq) * size_t(per);
    for (int b = 0; b < per; ++b) {
        t[b] = b < n ? blocks[b] : -1;
        JITLLM_CHECK(t[b] < plan_.kv_blocks, "kv blocks: block {} outside the pool of {}", t[b], plan_.kv_blocks);
    }
    kv_dirty_lo_ = std::min(kv_dirty_lo_, seq);
    kv_dirty_hi_ = std::max(kv_dirty_hi_, seq);
    return true;
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
