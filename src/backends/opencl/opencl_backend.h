// OpenCL backend: lowers the plan to a schedule of OpenCL C kernels (cl_schedule.h) chosen by what
// the device reports, builds each distinct variant with clBuildProgram (program binaries cached on
// disk, cl_program.h), uploads the weights once in their GGUF representation, and runs a token as
// the schedule's NDRange launches on one in-order queue. The `sample` task's argmax runs on the
// device (or on the logits read back, gate sample.argmax); with the pick on the device, greedy
// decode steps are queued ahead of the host (decode_queue), as the CUDA backend's run-ahead. Runs on any OpenCL 1.2+ device: PoCL's CPU device in CI, a GPU's
// driver elsewhere (docs/opencl.md).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/opencl/cl_device.h"
#include "backends/opencl/cl_program.h"
#include "backends/opencl/cl_schedule.h"
#include "profile/profiler.h"

namespace jitllm {

struct OpenClOptions {
    int device = -1;              // --opencl-device N (jitllm --list-devices); -1: cl_default_device's
    ClScheduleOptions schedule;   // --no-fuse, --kv-f32, --force-variant
    CacheOptions cache;           // --kernel-cache, --no-kernel-cache
    bool print_kernel = false;    // --print-kernel: each program's unit text
    bool print_threads = false;   // --print-threads: global and local work sizes
    bool print_plan = false;      // --print-plan: gates and kernels
    bool verbose_init = false;    // --verbose-init: device, memory, builds
    Profiler* profiler = nullptr; // --profiler: every launch timed with OpenCL events
};

class OpenClBackend : public Backend {
public:
    OpenClBackend(const Plan& plan, const OpenClOptions& opt);
    ~OpenClBackend() override;
    std::string name() const override { return "opencl"; }
    const float* decode(int32_t token, int pos) override;
    void prefill(int32_t token, int pos) override;
    int32_t sampled_token() const override { return token_out_; }
    void set_logits_needed(bool needed) override { logits_needed_ = needed; }
    // with the argmax on the device and no logits wanted: the step is queued (its token written,
    // or the previous step's pick left in the Token slot) and its pick read back behind it
    void decode_queue(int32_t token, int pos) override;
    int32_t decode_collect() override;
    bool decode_queues_ahead() const override { return sched_.device_argmax && !opt_.profiler; }
    void batch(const BatchStep& step) override;
    const float* batch_logits(int row) override;
    int32_t batch_sampled(int row) const override;
    BackendInfo info() const override;
    uint64_t device_bytes() const override { return ctx_->allocated(); }
    std::string describe_launches(const RunShape& r, int warmup_tokens) const override;
    DecodeBytes decode_bytes() const override;
    // clEnqueueCopyBuffer of `bytes` (0: 256 MiB, at most an eighth of the device's memory), median of 5
    double copy_bandwidth_gb_s(size_t bytes) override;

    const ClSchedule& schedule() const { return sched_; }
    const ClDeviceInfo& device() const { return ctx_->info(); }

private:
    struct Launch {
        cl_kernel kernel = nullptr;  // null: the host's argmax (`sample`)
        cl_kernel tiled = nullptr;   // the step's tiled kernel (ClTiled), for steps of its rows
        const ClStep* step = nullptr;
        int rows_arg = -1;  // the index of its ClArg::Kind::Rows argument
        int rows_set[2] = {1, 1};  // the value it holds in kernel, tiled (set again only when a step's differ)
    };
    // a launch's event for the profiler, and whether its tiled kernel ran
    struct Timed {
        const ClStep* step;
        bool tiled;
        cl_event ev;
    };
    void allocate_and_upload();
    void fill_rope_tables();
    void build_kernels();
    void bind(const std::vector<ClStep>& steps, std::vector<Launch>& out);
    // a kernel of `symbol` from the program of v with k's arguments; *rows_arg: its Rows argument
    cl_kernel make_kernel(const Variant& v, const std::string& symbol, const ClStep& k, int* rows_arg);
    cl_mem resolve(const ClArg& a) const;
    void print_kernels() const;
    // launches [from, to) of a phase for `rows` rows; host argmax steps read the logits of `rows` rows
    void run(Phase ph, size_t from, size_t to, int rows, uint64_t pos_sum);
    void read_logits(int rows);
    // after a step whose `sample` ran on the device: its picks, and the logits where wanted
    void read_picks(Phase ph, int rows);
    int32_t queued_pick(int k);  // waits for ring entry k's step and returns its pick
    void set_token(int32_t token, int pos);  // the Token and Pos slots of a decode / prefill step
    void record_profile(Phase ph, const std::vector<Timed>& evs, int rows, uint64_t pos_sum);

    const Plan& plan_;
    OpenClOptions opt_;
    std::unique_ptr<ClContext> ctx_;
    ClSchedule sched_;
    std::unique_ptr<ClPrograms> programs_;
    std::map<const WeightTensor*, cl_mem> weights_;
    std::vector<cl_mem> slots_;
    std::vector<cl_mem> k_cache_, v_cache_;
    std::map<std::string, cl_mem> scratch_;
    std::vector<Launch> launches_[3];
    std::vector<uint64_t*> count_ptrs_[3];
    // pinned host memory (ClContext::alloc_host): io_[0, 2) the token and position of a decode /
    // prefill step, then the ring's entries (their token, position and pick)
    int32_t* io_ = nullptr;
    std::vector<int32_t> host_rows_;  // a batch step's tokens, positions, sequences
    std::vector<float> logits_;       // n_seq rows
    std::vector<int32_t> picks_rows_;
    int32_t token_out_ = 0;
    bool logits_needed_ = true;
    bool token_on_device_ = false;  // the Token slot holds the last decode step's pick
    // decode steps queued ahead: ring entries (their token and position written from io, the pick
    // read back into pick, done when ev is), and the queue: an entry's index, or -(pick + 1) for a
    // step that ran at once
    static constexpr int kQueue = 4;
    struct Queued {
        int32_t* io = nullptr;  // token, position, pick: pinned memory (io_)
        cl_event ev = nullptr;
    } ring_[kQueue];
    // the host's side of decode steps: their count and the time spent enqueueing them (--verbose-init
    // and --profiler report it at the end)
    int host_steps_ = 0;
    double host_us_ = 0;
    std::deque<int> queue_;
    int ring_next_ = 0;
    int batch_n_ = 0;
    bool batch_logits_ = false;
    double upload_ms_ = 0;
    double origin_ns_ = -1;  // profiling: the run's first event start
    int steps_[3] = {0, 0, 0};
};

}  // namespace jitllm
