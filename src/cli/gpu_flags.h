// The GPU flags shared by `run`, `plan`, `kernels`, `bench`, `perplexity` and `serve`: declared once here.
// Tuning alternatives to the defaults go through `--tune KEY=VALUE` (backends/cuda/lowering/tunables.h;
// `jitllm plan --list-tunables`), every gate's sibling through `--force-variant GATE=VARIANT`.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/lowering/tunables.h"
#include "core/error.h"

namespace jitllm::cli {

struct GpuFlags {
    std::vector<std::string> force;  // GATE=VARIANT
    std::vector<std::string> tune;   // KEY=VALUE
    bool no_fuse = false, kv_f32 = false;
    std::string kernel_cache;
    bool no_kernel_cache = false;
    bool no_graphs = false, no_run_ahead = false;
    bool print_kernel = false, print_threads = false, verbose_init = false;
    bool profiler = false, nvtx_tasks = false;
    std::string profiler_dump_dir;

    void add(CLI::App& app) {
        const auto group = "GPU and inspection";
        app.add_option("--force-variant", force,
                       fmt::format("override a capability gate: GATE=VARIANT ({}); repeatable",
                                   fmt::join(schedule_gate_choices(), ", ")))
            ->group(group);
        app.add_option("--tune", tune,
                       "a tuning alternative to the defaults, KEY=VALUE (jitllm plan --list-tunables lists the keys "
                       "and their defaults); repeatable")
            ->group(group);
        app.add_flag("--no-fuse", no_fuse, "one kernel per task (no fusion)")->group(group);
        app.add_flag("--kv-f32", kv_f32, "GPU KV cache in float32 (default half)")->group(group);
        app.add_option("--kernel-cache", kernel_cache, "JIT cache directory (default $XDG_CACHE_HOME/jitllm)")->group(group);
        app.add_flag("--no-kernel-cache", no_kernel_cache, "compile every kernel, read and write no cache")->group(group);
        app.add_flag("--no-cuda-graphs", no_graphs, "launch kernel by kernel instead of replaying a graph")->group(group);
        app.add_flag("--no-run-ahead", no_run_ahead,
                     "greedy decode waits for each step's pick before queuing the next (default: the step fed "
                     "by the next pick is queued while the host reads this one)")
            ->group(group);
        app.add_flag("--print-kernel", print_kernel,
                     "print each kernel as the unit NVRTC compiles (options, defines, source), with its tasks and gates")
            ->group(group);
        app.add_flag("--print-threads", print_threads, "print the grid and block of every kernel")->group(group);
        app.add_flag("--verbose-init", verbose_init, "print the device, GPU memory plan and JIT statistics")->group(group);
        app.add_flag("--profiler", profiler, "time every kernel launch; print a per-kernel table at the end")->group(group);
        app.add_option("--profiler-dump-dir", profiler_dump_dir, "write profile.json and trace.json (Chrome trace) here")
            ->group(group);
        app.add_flag("--nvtx-tasks", nvtx_tasks, "one NVTX range per kernel launch (for nsys / ncu --nvtx)")->group(group);
    }

    // --force-variant GATE=VARIANT, checked here so that a misspelt gate is refused on the CPU too
    // (the schedule checks whether the device can run the variant)
    static void apply_force(ScheduleOptions& s, const std::string& f) {
        const auto eq = f.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == f.size())
            fail_usage("--force-variant: expected GATE=VARIANT, found '{}'", f);
        const std::string gate = f.substr(0, eq), variant = f.substr(eq + 1);
        std::string choices;
        for (const std::string& c : schedule_gate_choices())
            if (c.compare(0, gate.size() + 1, gate + "=") == 0) choices = c.substr(gate.size() + 1);
        if (choices.empty())
            fail_usage("--force-variant {}: unknown gate '{}'; gates: {}", f, gate, fmt::join(schedule_gate_names(), ", "));
        if (variant != choices.substr(0, choices.find('|')) && variant != choices.substr(choices.find('|') + 1))
            fail_usage("--force-variant {}: expected {} for gate '{}', found '{}'", f, choices, gate, variant);
        s.force[gate] = variant;
    }

    ScheduleOptions schedule() const {
        ScheduleOptions s;
        s.fuse = !no_fuse;
        s.kv_f32 = kv_f32;
        for (const auto& f : force) apply_force(s, f);
        for (const auto& t : tune) tune_apply(s, t);
        return s;
    }

    // --force-variant and --tune checked before any model is loaded (also for a CPU run, which
    // ignores them)
    void check() const { (void)schedule(); }

    CudaOptions cuda(bool print_plan, Profiler* prof = nullptr) const {
        CudaOptions o;
        o.profiler = (profiler || !profiler_dump_dir.empty()) ? prof : nullptr;
        o.nvtx_tasks = nvtx_tasks;
        o.schedule = schedule();
        o.cache.disk = !no_kernel_cache;
        o.cache.dir = kernel_cache;
        o.graphs = !no_graphs;
        o.run_ahead = !no_run_ahead;
        o.print_kernel = print_kernel;
        o.print_threads = print_threads;
        o.print_plan = print_plan;
        o.verbose_init = verbose_init;
        return o;
    }
};

}  // namespace jitllm::cli
