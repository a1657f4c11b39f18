// OpenCL backend: running the schedule (opencl_backend.h); set-up in opencl_backend_setup.cpp.
#include "backends/opencl/opencl_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "backends/cpu/cpu_ops.h"
#include "core/error.h"

namespace jitllm {

OpenClBackend::~OpenClBackend() {
    if (!ctx_) return;
    if ((opt_.verbose_init || opt_.profiler) && host_steps_ > 0) {
        const double us = host_us_ / host_steps_;
        std::fprintf(stderr, "[jitllm] opencl host: %d decode steps of %zu launches, %.1f us a step enqueueing them "
                     "(%.2f us a launch)\n", host_steps_, launches_[0].size(), us, us / double(launches_[0].size()));
    }
    const ClApi& a = ctx_->api();
    a.clFinish(ctx_->queue());
    for (Queued& q : ring_)
        if (q.ev) a.clReleaseEvent(q.ev);
    for (auto& list : launches_)
        for (Launch& l : list)
            for (cl_kernel k : {l.kernel, l.tiled})
                if (k) a.clReleaseKernel(k);
    programs_.reset();
    for (auto& [w, m] : weights_) ctx_->release(m);
    for (cl_mem m : slots_) ctx_->release(m);
    for (cl_mem m : k_cache_) ctx_->release(m);
    for (cl_mem m : v_cache_) ctx_->release(m);
    for (auto& [n, m] : scratch_) ctx_->release(m);
}

void OpenClBackend::run(Phase ph, size_t from, size_t to, int rows, uint64_t pos_sum) {
    const ClApi& a = ctx_->api();
    const auto& list = launches_[int(ph)];
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Timed> evs;
    for (size_t i = from; i < to; ++i) {
        const ClStep& k = *list[i].step;
        for (int ti : k.tasks) ++*count_ptrs_[int(ph)][size_t(ti)];
        if (!list[i].kernel) {
            read_logits(rows);
            continue;
        }
        const bool tiled = list[i].tiled && rows >= k.tiled.min_rows;
        const cl_kernel kn = tiled ? list[i].tiled : list[i].kernel;
        const size_t m = size_t(rows) * size_t(k.rows_mul), dv = size_t(tiled ? k.tiled.rows_per_group : k.rows_div);
        const size_t g[2] = {tiled ? k.tiled.global0 : k.global[0], k.rows_mul ? (m + dv - 1) / dv : k.global[1]};
        const size_t tiled_local[2] = {k.tiled.local0, 1};
        int& rows_set = launches_[int(ph)][i].rows_set[tiled ? 1 : 0];
        if (list[i].rows_arg >= 0 && rows_set != rows) {  // decode: never (1, set with the arguments)
            const cl_int n = rows;
            JITLLM_CL_TRY(a, clSetKernelArg(kn, cl_uint(list[i].rows_arg), sizeof(n), &n));
            rows_set = rows;
        }
        cl_event ev = nullptr;
        JITLLM_CL_TRY(a, clEnqueueNDRangeKernel(ctx_->queue(), kn, 2, nullptr, g, tiled ? tiled_local : k.local, 0,
                                                nullptr, opt_.profiler ? &ev : nullptr));
        if (ev) evs.push_back({&k, tiled, ev});
    }
    if (ph == Phase::Decode) {  // the host's time enqueueing a decode step
        host_us_ += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        ++host_steps_;
    }
    if (opt_.profiler) {
        ctx_->finish();
        record_profile(ph, evs, rows, pos_sum);
    }
}

void OpenClBackend::read_logits(int rows) {
    const size_t V = size_t(plan_.config->n_vocab);
    ctx_->download(logits_.data(), slots_[size_t(Slot::Logits)], 0, size_t(rows) * V * 4);
    picks_rows_.resize(size_t(rows));
    for (int r = 0; r < rows; ++r) picks_rows_[size_t(r)] = cpu::argmax(logits_.data() + size_t(r) * V, int(V));
    token_out_ = picks_rows_[0];
}

void OpenClBackend::read_picks(Phase ph, int rows) {
    if (!sched_.device_argmax) return;  // the host's argmax read them in run()
    const size_t V = size_t(plan_.config->n_vocab);
    if (logits_needed_) ctx_->download(logits_.data(), slots_[size_t(Slot::Logits)], 0, size_t(rows) * V * 4);
    picks_rows_.resize(size_t(rows));
    ctx_->download(picks_rows_.data(), ph == Phase::Decode ? slots_[size_t(Slot::Token)] : scratch_.at("picks"), 0,
                   size_t(rows) * 4);
    token_out_ = picks_rows_[0];
}

void OpenClBackend::set_token(int32_t token, int pos) {
    JITLLM_CHECK(pos >= 0 && pos < plan_.n_ctx, "pos {} outside [0, {})", pos, plan_.n_ctx);
    JITLLM_CHECK(token >= 0 && token < plan_.config->n_vocab, "token {} outside vocab {}", token, plan_.config->n_vocab);
    // from pinned memory, not waited for: the step's pick read back (blocking) or clFinish ends
    // before io_ is written again
    io_[0] = token;
    io_[1] = pos;
    const ClApi& a = ctx_->api();
    JITLLM_CL_TRY(a, clEnqueueWriteBuffer(ctx_->queue(), slots_[size_t(Slot::Token)], CL_FALSE, 0, 4, &io_[0], 0, nullptr, nullptr));
    JITLLM_CL_TRY(a, clEnqueueWriteBuffer(ctx_->queue(), slots_[size_t(Slot::Pos)], CL_FALSE, 0, 4, &io_[1], 0, nullptr, nullptr));
}


const float* OpenClBackend::decode(int32_t token, int pos) {
    set_token(token, pos);
    run(Phase::Decode, 0, launches_[0].size(), 1, uint64_t(pos + 1));
    read_picks(Phase::Decode, 1);
    token_on_device_ = sched_.device_argmax;
    steps_[0]++;
    return logits_.data();
}

int32_t OpenClBackend::queued_pick(int k) {
    if (k < 0) return -k - 1;
    JITLLM_CL_TRY(ctx_->api(), clWaitForEvents(1, &ring_[k].ev));
    return ring_[k].io[2];
}

void OpenClBackend::decode_queue(int32_t token, int pos) {
    const bool ahead = sched_.device_argmax && !logits_needed_ && !opt_.profiler;
    int32_t t = token;
    if (t < 0 && !(ahead && token_on_device_)) t = queue_.empty() ? token_out_ : queued_pick(queue_.back());
    if (!ahead) {  // at once
        decode(t, pos);
        queue_.push_back(-(token_out_ + 1));
        return;
    }
    JITLLM_CHECK(pos >= 0 && pos < plan_.n_ctx, "pos {} outside [0, {})", pos, plan_.n_ctx);
    JITLLM_CHECK(t < plan_.config->n_vocab, "token {} outside vocab {}", t, plan_.config->n_vocab);
    JITLLM_CHECK(int(queue_.size()) < kQueue, "{} decode steps queued, at most {}", queue_.size(), kQueue);
    const int k = ring_next_;
    ring_next_ = (k + 1) % kQueue;
    Queued& q = ring_[k];
    JITLLM_CHECK(q.ev == nullptr, "decode ring entry {} still queued", k);
    q.io[0] = t;
    q.io[1] = pos;
    const ClApi& a = ctx_->api();
    const cl_command_queue cq = ctx_->queue();
    // t < 0: the previous step's argmax left its pick in the Token slot
    if (t >= 0) JITLLM_CL_TRY(a, clEnqueueWriteBuffer(cq, slots_[size_t(Slot::Token)], CL_FALSE, 0, 4, &q.io[0], 0, nullptr, nullptr));
    JITLLM_CL_TRY(a, clEnqueueWriteBuffer(cq, slots_[size_t(Slot::Pos)], CL_FALSE, 0, 4, &q.io[1], 0, nullptr, nullptr));
    run(Phase::Decode, 0, launches_[0].size(), 1, uint64_t(pos + 1));
    JITLLM_CL_TRY(a, clEnqueueReadBuffer(cq, slots_[size_t(Slot::Token)], CL_FALSE, 0, 4, &q.io[2], 0, nullptr, &q.ev));
    JITLLM_CL_TRY(a, clFlush(cq));
    token_on_device_ = true;
    steps_[0]++;
    queue_.push_back(k);
}

int32_t OpenClBackend::decode_collect() {
    JITLLM_CHECK(!queue_.empty(), "decode_collect with no queued decode step");
    const int k = queue_.front();
    queue_.pop_front();
    token_out_ = queued_pick(k);
    if (k >= 0) {
        ctx_->api().clReleaseEvent(ring_[k].ev);
        ring_[k].ev = nullptr;
    }
    return token_out_;
}

void OpenClBackend::prefill(int32_t token, int pos) {
    set_token(token, pos);
    run(Phase::Prefill, 0, launches_[1].size(), 1, uint64_t(pos + 1));
    ctx_->finish();
    token_on_device_ = false;
    steps_[1]++;
}

void OpenClBackend::batch(const BatchStep& b) {
    JITLLM_CHECK(plan_.batch_rows >= b.n && b.n >= 1, "batch of {} rows, plan has {}", b.n, plan_.batch_rows);
    JITLLM_CHECK(!b.logits || b.n <= plan_.n_seq, "batch logits for {} rows, plan has {} sequences", b.n, plan_.n_seq);
    JITLLM_CHECK(b.logits_first >= 0 && b.logits_first <= std::min(b.n, plan_.n_seq) && !(b.logits_first && b.logits),
                 "batch logits for the first {} of {} rows, plan has {} sequences", b.logits_first, b.n, plan_.n_seq);
    const size_t n = size_t(b.n);
    host_rows_.assign(b.tokens, b.tokens + n);
    host_rows_.insert(host_rows_.end(), b.pos, b.pos + n);
    host_rows_.insert(host_rows_.end(), b.seq, b.seq + n);
    ctx_->upload(slots_[size_t(Slot::Tokens)], 0, host_rows_.data(), n * 4);
    ctx_->upload(slots_[size_t(Slot::Positions)], 0, host_rows_.data() + n, n * 4);
    ctx_->upload(slots_[size_t(Slot::Seqs)], 0, host_rows_.data() + 2 * n, n * 4);
    uint64_t pos_sum = 0;
    for (size_t i = 0; i < n; ++i) pos_sum += uint64_t(b.pos[i] + 1);
    const size_t body = sched_.batch_body, all = launches_[2].size();
    run(Phase::Batch, 0, body, b.n, pos_sum);
    batch_n_ = b.n;
    batch_logits_ = b.logits;
    token_on_device_ = false;
    if (b.logits || b.logits_first > 0) {  // the output tail for rows [0, rows)
        const int rows = b.logits ? b.n : b.logits_first;
        run(Phase::Batch, body, all, rows, 0);
        read_picks(Phase::Batch, rows);
        batch_n_ = rows;
        batch_logits_ = true;
    } else if (b.logits_last) {
        // the output tail for the last row only: its residual stream moves to row 0
        const size_t xb = size_t(plan_.config->dim) * 4;
        if (n > 1) ctx_->copy(slots_[size_t(Slot::X)], 0, slots_[size_t(Slot::X)], (n - 1) * xb, xb);
        run(Phase::Batch, body, all, 1, 0);
        read_picks(Phase::Batch, 1);
        batch_n_ = 1;
        batch_logits_ = true;
    } else {
        ctx_->finish();
    }
    steps_[2]++;
}

const float* OpenClBackend::batch_logits(int r) {
    JITLLM_CHECK(r >= 0 && r < batch_n_ && batch_logits_, "batch row {} has no logits", r);
    return logits_.data() + size_t(r) * size_t(plan_.config->n_vocab);
}

int32_t OpenClBackend::batch_sampled(int r) const {
    JITLLM_CHECK(r >= 0 && r < batch_n_ && batch_logits_, "batch row {} has no pick", r);
    return picks_rows_[size_t(r)];
}

void OpenClBackend::record_profile(Phase ph, const std::vector<Timed>& evs, int rows, uint64_t pos_sum) {
    const ClApi& a = ctx_->api();
    const auto& tasks = plan_.phase(ph);
    for (const auto& [k, tiled, ev] : evs) {
        cl_ulong t0 = 0, t1 = 0;
        JITLLM_CL_TRY(a, clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, nullptr));
        JITLLM_CL_TRY(a, clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr));
        a.clReleaseEvent(ev);
        if (origin_ns_ < 0) origin_ns_ = double(t0);
        std::string tn;
        for (int ti : k->tasks) tn += (tn.empty() ? "" : "+") + tasks[size_t(ti)].name;
        LaunchRecord r;
        r.kernel = tiled ? k->tiled.variant.symbol : k->symbol;
        r.tasks = std::move(tn);
        r.phase = phase_name(ph);
        r.token = steps_[int(ph)];
        r.layer = k->layer;
        r.start_us = (double(t0) - origin_ns_) / 1e3;
        r.dur_us = double(t1 - t0) / 1e3;
        r.bytes = k->bytes_fixed + k->bytes * uint64_t(rows) + k->bytes_per_pos * pos_sum;
        r.flops = k->flops * uint64_t(rows);
        opt_.profiler->add(std::move(r));
    }
}

BackendInfo OpenClBackend::info() const {
    BackendInfo i;
    i.backends = "OpenCL";
    i.kv_type = sched_.kv_half ? "f16" : "f32";
    i.gpu = true;
    i.gpu_name = ctx_->info().name;
    i.gpu_arch = ctx_->info().version;
    i.jit = true;
    i.jit_wall_ms = programs_->stats().wall_ms;
    i.jit_compiled = programs_->stats().built;
    i.jit_cached = programs_->stats().cached;
    return i;
}

std::string OpenClBackend::describe_launches(const RunShape& r, int warmup_tokens) const {
    (void)warmup_tokens;
    return cl_schedule_describe_launches(sched_, r);
}

DecodeBytes OpenClBackend::decode_bytes() const { return launch_decode_bytes(sched_.decode); }

double OpenClBackend::copy_bandwidth_gb_s(size_t bytes) {
    if (bytes == 0) bytes = std::min<size_t>(size_t(256) << 20, ctx_->info().global_mem / 8);
    bytes = std::min<size_t>(bytes, ctx_->info().max_alloc);
    cl_mem src = ctx_->alloc(bytes, "copy bandwidth source"), dst = ctx_->alloc(bytes, "copy bandwidth target");
    std::vector<double> gb_s;
    for (int i = 0; i <= 5; ++i) {  // i == 0: warm-up
        ctx_->finish();
        const auto t0 = std::chrono::steady_clock::now();
        ctx_->copy(dst, 0, src, 0, bytes);
        ctx_->finish();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (i > 0 && s > 0) gb_s.push_back(2.0 * double(bytes) / s / 1e9);
    }
    ctx_->release(src);
    ctx_->release(dst);
    std::sort(gb_s.begin(), gb_s.end());
    return gb_s.empty() ? 0.0 : gb_s[gb_s.size() / 2];
}

}  // namespace jitllm
