// CUDA backend: lowers the plan to a schedule (backends/cuda/schedule.h), JIT-compiles every
// distinct kernel variant with NVRTC for the device's exact arch (in parallel, disk-cached),
// uploads the weights once in their GGUF representation, and runs a token as the schedule's
// launch sequence, captured once as a CUDA graph and replayed (position and token are read from
// device memory, so the same graph serves every token).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/schedule.h"
#include "jit/jit_compiler.h"
#include "profile/profiler.h"

namespace jitllm {

struct CudaOptions {
    int device = 0;
    ScheduleOptions schedule;
    CacheOptions cache;
    bool graphs = true;          // --no-cuda-graphs: launch kernel by kernel
    bool print_kernel = false;   // --print-kernel
    bool print_threads = false;  // --print-threads
    bool print_plan = false;     // --print-plan
    bool verbose_init = false;   // --verbose-init: memory plan, JIT statistics
    Profiler* profiler = nullptr;  // --profiler: time every launch with events (no graph replay)
    bool nvtx_tasks = false;       // --nvtx-tasks: one NVTX range per kernel launch
    // greedy decode queued one step ahead (Backend::decode_queue) when graphs replay and neither
    // logits nor profiling are wanted; --no-run-ahead: every step waits for its pick
    bool run_ahead = true;
};

struct CudaInitStats {
    double jit_wall_ms = 0;
    int jit_compiled = 0, jit_cached = 0;
    double upload_ms = 0;
    uint64_t weight_bytes = 0, kv_bytes = 0, scratch_bytes = 0;
};

class CudaBackend : public Backend {
public:
    CudaBackend(const Plan& plan, const CudaOptions& opt);
    ~CudaBackend() override;
    std::string name() const override { return "cuda"; }
    const float* decode(int32_t token, int pos) override;
    void prefill(int32_t token, int pos) override;
    int32_t sampled_token() const override { return token_out_; }
    void batch(const BatchStep& step) override;
    bool batch_logits_first() const override { return true; }
    const float* batch_logits(int row) override;
    int32_t batch_sampled(int row) const override;
    bool set_kv_blocks(int seq, const int32_t* blocks, int n) override;
    void set_logits_needed(bool needed) override { logits_needed_ = needed; }
    bool set_draw(const DrawParams* p) override;
    int draw_max_k() const override { return sched_.draw_max_k; }
    int batch_draw_max_k() const override { return host_draw_ ? sched_.draw_max_k : 0; }
    bool decode_masked(int32_t token, int pos, const std::function<const uint32_t*()>& mask) override;
    void decode_queue(int32_t token, int pos) override;
    int32_t decode_collect() override;
    bool decode_queues_ahead() const override {
        return opt_.run_ahead && opt_.graphs && !opt_.nvtx_tasks && !opt_.profiler;
    }
    BackendInfo info() const override;
    // Bytes our allocations hold now (weights + KV + scratch), the peak GPU memory of a run.
    uint64_t device_bytes() const override;
    std::string describe_launches(const RunShape& r, int warmup_tokens) const override;
    DecodeBytes decode_bytes() const override;
    // cuMemcpyDtoDAsync of `bytes` (0: 2 GiB, far beyond the L2) on the backend's stream, 9 timed copies
    double copy_bandwidth_gb_s(size_t bytes) override;

    CudaContext& context() { return *ctx_; }
    const Schedule& schedule() const { return sched_; }
    const CudaInitStats& init_stats() const { return init_; }
    // Device pointer of a slot (tests read activations through it).
    CUdeviceptr slot_ptr(Slot s) const { return slots_[size_t(s)]; }
    // Test hooks (tests/unit/backend_cuda_kernels_test.cpp): move one slot's floats or a layer's
    // KV rows between host and device, and run a single kernel of a phase's schedule.
    void upload_slot(Slot s, const float* src, size_t n);
    void download_slot(Slot s, float* dst, size_t n);
    void upload_kv(int layer, const float* k, const float* v, int n_pos);  // rows [0, n_pos)
    // ... the first `bytes` bytes of a named scratch buffer (the schedule's KArg::scratch names)
    void upload_scratch(const std::string& name, const void* src, size_t bytes);
    void download_scratch(const std::string& name, void* dst, size_t bytes);
    // (greedy_list: decode's step `index` of schedule().decode_greedy, the sample.fuse=gemv list)
    void run_step(Phase ph, size_t index, int32_t token, int pos, bool greedy_list = false);
    // ... step `index` of the batch phase's GEMM list (schedule().batch) for a step of `rows` rows
    void run_batch_step(size_t index, int rows);
    int32_t device_token_out();  // what the `sample` kernel wrote

private:
    struct Launch {
        CUfunction fn = nullptr;
        const KernelStep* step = nullptr;
        std::vector<uint64_t> vals;  // argument storage (pointers, floats, ints)
        std::vector<void*> ptrs;
        std::vector<size_t> rows_args;  // indices of KArg::Kind::Rows (set per batch step)
    };
    // Profiler records of the launches of a phase step just run (events_ recorded around each).
    // Batch steps: launches from `tail_from` on (the output tail) ran `tail_rows` rows.
    void record_profile(Phase ph, const std::vector<const Launch*>& seq, int rows, uint64_t pos_sum,
                        size_t tail_from = SIZE_MAX, int tail_rows = 0);
    void upload_weights();
    void fill_rope_table();  // rope.angles=table: the (cos, sin) scratch table, as cpu::rope computes them
    void encode_kv_maps();   // attn.kv=tma: the K/V caches' tensor maps
    void allocate_buffers();
    void compile_and_load();
    void bind(const std::vector<KernelStep>& steps, std::vector<Launch>& out);
    uint64_t resolve(const KArg& a) const;
    void run(Phase ph, int32_t token, int pos);

    const Plan& plan_;
    CudaOptions opt_;
    std::unique_ptr<CudaContext> ctx_;
    Schedule sched_;
    CudaInitStats init_;
    CUdeviceptr weights_base_ = 0;
    std::map<const WeightTensor*, CUdeviceptr> weight_ptr_;
    std::vector<CUdeviceptr> slots_;
    std::vector<CUdeviceptr> k_cache_, v_cache_;
    std::map<std::string, CUdeviceptr> scratch_;
    std::map<std::string, CUfunction> functions_;  // symbol -> function
    // The decode lists, each its own graph: 0 sched_.decode, 1 decode_short (attn.tma_from: positions
    // below it), 2 decode_greedy, 3 decode_short_greedy (sample.fuse=gemv: steps without a device
    // draw); the schedule's empty ones stay empty
    static constexpr int kDecodeLists = 4;
    std::vector<Launch> decode_lists_[kDecodeLists];
    int decode_list(int pos) const;  // the list a decode step at pos runs
    bool greedy_ = true;             // no device draw set (set_draw): greedy steps
    std::vector<Launch> prefill_launches_, batch_launches_;
    std::vector<Launch> batch_small_launches_;  // gate batch.small: steps of <= batch_small_rows rows
    std::vector<Launch> batch_xrows_launches_;  // gate batch.xrows: steps of 2 .. batch_small_rows rows
    std::vector<Launch> batch_imma_launches_;   // gate batch.imma: steps of batch_imma_from .. batch_imma_rows rows
    CUgraphExec decode_graph_[kDecodeLists] = {}, prefill_graph_ = nullptr;
    float* logits_ = nullptr;  // pinned: one row of logits (a pageable copy would stage through a driver buffer)
    size_t n_vocab_ = 0;
    int32_t token_out_ = 0;
    bool logits_needed_ = true;
    int32_t* host_io_ = nullptr;  // pinned: [token, pos, token_out]; [kPickRing, +4): the picks ring (step.advance)
    // step.advance=device: the pick kernels write the pick of position p to host_io_[kPickRing + p % 4]
    // (the kernels' `pos & 3`)
    static constexpr int kPickRing = 8;
    static int pick_ring_slot(int pos) { return kPickRing + (pos & 3); }
    // decode_queue: kQueue pinned slots [token, pos, pick, -] with an event each; queue_ holds
    // the queued steps oldest first: a slot index, or -(pick + 1) for a step run at once
    static constexpr int kQueue = 4;
    bool queue_async(int pos) const;
    // queued slot j's pick once its event completed: from the pinned ring (step.advance) or the copy
    int32_t queued_pick(int j) const;
    int32_t* host_q_ = nullptr;
    CUevent q_ev_[kQueue] = {};
    std::deque<int> queue_;
    int q_next_ = 0;  // the slot the next queued step takes
    // step.advance=device: the position the device's position slot holds (with the last pick in
    // the token slot) after the last decode step, or -1 when unknown (another phase ran since)
    int dev_pos_ = -1;
    // the position the device holds after a decode step at pos: pos + 1 when its pick kernel advanced
    // it (step.advance=device), else -1
    int advanced_pos(int pos) const { return sched_.decode_advance ? pos + 1 : -1; }
    std::vector<uint64_t*> count_ptrs_[3];
    int32_t* host_batch_ = nullptr;  // pinned: tokens, positions, sequences of a batch step
    int32_t* host_kv_table_ = nullptr;  // pinned: the block tables (scratch "kv_table"), n_seq rows
    int kv_dirty_lo_ = 1 << 30, kv_dirty_hi_ = -1;  // rows set since the last upload
    DrawParams* host_draw_ = nullptr;  // pinned, sample.draw=device: a batch step's n_seq rows of DrawParams
    int batch_n_ = 0;
    bool batch_logits_ = false;
    float* batch_logits_host_ = nullptr;  // pinned: n_seq rows of logits
    std::map<int64_t, CUgraphExec> batch_graphs_;  // by (rows, tail rows, mode)
    std::vector<int32_t> batch_tokens_out_;
    // decode_masked (cuda_backend_mask.cpp): the decode lists 0 and 1 but their pick kernel as
    // graphs, logit_mask.cu (compiled at the first masked step), the mask pinned and on the device
    void load_mask_kernel();
    CUgraphExec masked_graph_[2] = {};
    CUfunction mask_fn_ = nullptr;
    uint32_t* host_mask_ = nullptr;
    CUdeviceptr mask_dev_ = 0;
    // profiling: one event per launch + 1, the run's origin, step counters per phase
    std::vector<CUevent> events_;
    CUevent origin_ = nullptr;
    int steps_[3] = {0, 0, 0};
};

// Device-to-device copy bandwidth in GB/s (bytes read + written over time): the median of `reps`
// copies of `bytes` (at most a quarter of the free memory) after a warm-up, timed with events.
double cuda_copy_bandwidth_gb_s(CudaContext& ctx, size_t bytes, int reps);
// The same over 5 copies of 1 GiB, measured once per device and cached in the JIT cache directory.
double measure_copy_bandwidth_gb_s(CudaContext& ctx, const std::string& cache_dir);

// Offline: the schedule a device of `arch` would get (no GPU needed), for `jitllm plan --target`.
Schedule cuda_schedule_for_target(const Plan& plan, const std::string& arch, const ScheduleOptions& opt);

}  // namespace jitllm
