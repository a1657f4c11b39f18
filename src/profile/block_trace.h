// Block trace (`--block-trace FILE`): what each warp of every kernel of one decode step did when,
// from %globaltimer stamps the kernels write themselves (kernels/cuda/common/common.cuh, TRACE=1).
// Where the profiler times whole kernels, this shows the inside of the graph replay: when the
// blocks of a kernel land on the SMs relative to the previous kernel's end (PDL), how long the PDL
// hand-over and the x prologue take, when each warp issued its last weight copy and how far the
// warps' ends spread. Host data only: the CUDA backend collects the records, nothing here touches
// a device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jitllm {

// One warp's record, times in ns of the device's global timer (0: the kernel sets no such mark).
struct TraceRecord {
    uint32_t id = 0;     // TRACE_ID: the launch's kernel variant
    uint32_t block = 0;  // linear block index
    uint32_t warp = 0;
    uint32_t sm = 0;
    uint64_t start = 0, wait = 0, ready = 0, last_issue = 0, end = 0;
};

// One launch of the traced step, in launch order.
struct TraceLaunch {
    std::string symbol;
    int layer = -1;
    uint32_t id = 0;         // TRACE_ID of its variant
    size_t warps = 0;        // records it writes: blocks x warps per block
    uint64_t bytes = 0;      // bytes it moves at the traced position
};

// Per-launch figures in ns, relative to the previous launch's last warp end (`prev_end`).
struct TraceLaunchStats {
    size_t launch = 0;                     // index into the launches
    bool matched = false;                  // the launch's records were found
    double land_first = 0, land_last = 0;  // first / last warp start - prev_end (negative: landed before)
    double wait_first = 0, wait_last = 0;  // PDL wait released - prev_end (NaN without a wait mark)
    double ready_last = 0;                 // last warp's mark 2 - prev_end (NaN without)
    double drain_mean = 0;                 // mean over warps of end - last_issue (NaN without)
    double end_first = 0, end_last = 0;    // first / last warp end - prev_end
};

struct BlockTraceReport {
    std::vector<TraceLaunchStats> launches;  // in launch order
    std::vector<std::string> notes;          // kernels whose records did not match their launches
    double step_ns = 0;                      // first warp start to last warp end
    uint64_t timer_step_ns = 0;              // smallest nonzero difference between two stamps seen
    uint64_t origin = 0;                     // the step's first warp start
    std::vector<TraceRecord> records;        // every record, by variant then start
    std::vector<int> launch_of;              // records[i]'s launch (-1: unmatched)
};

// Assigns each kernel variant's records to its launches: sorted by start, the first `warps` to
// its first launch, the next to its second, ... (launches of one variant never overlap: other
// kernels run between them). A variant whose record count differs from its launches' sum is left
// unmatched and named in `notes`.
BlockTraceReport block_trace_analyze(const std::vector<TraceLaunch>& launches, std::vector<TraceRecord> records);

// Table per kernel symbol (means over its launches, µs): span (its share of the step: last end
// - the previous launch's last end), land (first warp's start relative to the previous launch's
// end), wait (first PDL release after it), ready (last warp's x ready), drain (last copy issued
// to warp end), end spread, GB/s over the span and % of `copy_bw_gb_s`.
std::string block_trace_table(const std::vector<TraceLaunch>& launches, const BlockTraceReport& r,
                              double copy_bw_gb_s);

// CSV, one row per record in launch order, times in ns from the step's first warp start (marks a
// kernel does not set: empty), with the launch index, symbol and layer it was assigned to (-1 /
// empty when unmatched).
std::string block_trace_csv(const std::vector<TraceLaunch>& launches, const BlockTraceReport& r);

}  // namespace jitllm
