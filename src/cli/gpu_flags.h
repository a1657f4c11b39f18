// The GPU flags shared by `run`, `plan`, `kernels`, `bench`, `eval`, `perplexity` and `serve`: declared once
// here, --opencl and --opencl-device (the OpenCL backend) among them.
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
#include "backends/opencl/opencl_backend.h"
#include "core/error.h"
#include "runtime/engine.h"

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
    bool opencl = false;
    int opencl_device = -1;  // -1: the first GPU, else device 0; --opencl not implied

    void add(CLI::App& app) {
        const auto group = "GPU and inspection";
        app.add_flag("--opencl", opencl, "run on an OpenCL device (kernels built by its driver; jitllm --list-devices)")
            ->group(group);
        app.add_option("--opencl-device", opencl_device, "the OpenCL device N of jitllm --list-devices (implies --opencl)")
            ->check(CLI::Range(0, 1 << 16))
            ->group(group);
        app.add_option("--force-variant", force,
                       fmt::format("override a capability gate: GATE=VARIANT ({}; with --opencl: {}); repeatable",
                                   fmt::join(schedule_gate_choices(), ", "), fmt::join(cl_gate_choices(), ", ")))
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

    // --force-variant GATE=VARIANT against a backend's gates ("gate=variant|sibling" each), checked here so
    // that a misspelt gate is refused on the CPU too (the schedule checks whether the device can run it)
    static void apply_force(std::map<std::string, std::string>& force, const std::string& f,
                            const std::vector<std::string>& gates) {
        const auto eq = f.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == f.size())
            fail_usage("--force-variant: expected GATE=VARIANT, found '{}'", f);
        const std::string gate = f.substr(0, eq), variant = f.substr(eq + 1);
        std::string choices;
        std::vector<std::string> names;
        for (const std::string& c : gates) {
            names.push_back(c.substr(0, c.find('=')));
            if (c.compare(0, gate.size() + 1, gate + "=") == 0) choices = c.substr(gate.size() + 1);
        }
        if (choices.empty()) fail_usage("--force-variant {}: unknown gate '{}'; gates: {}", f, gate, fmt::join(names, ", "));
        if (variant != choices.substr(0, choices.find('|')) && variant != choices.substr(choices.find('|') + 1))
            fail_usage("--force-variant {}: expected {} for gate '{}', found '{}'", f, choices, gate, variant);
        force[gate] = variant;
    }

    bool use_opencl() const { return opencl || opencl_device >= 0; }

    ScheduleOptions schedule() const {
        ScheduleOptions s;
        s.fuse = !no_fuse;
        s.kv_f32 = kv_f32;
        for (const auto& f : force) apply_force(s.force, f, schedule_gate_choices());
        for (const auto& t : tune) tune_apply(s, t);
        return s;
    }

    // --force-variant and --tune checked before any model is loaded (also for a CPU run, which
    // ignores them)
    void check() const {
        if (use_opencl()) (void)opencl_options(false);
        else (void)schedule();
    }

    // --opencl: the OpenCL backend's options (its gates for --force-variant, its tunables for --tune)
    OpenClOptions opencl_options(bool print_plan, Profiler* prof = nullptr) const {
        OpenClOptions o;
        for (const auto& t : tune) cl_tune_apply(o.schedule.tune, t);
        o.device = opencl_device;  // -1: the first GPU (cl_default_device)
        o.schedule.fuse = !no_fuse;
        o.schedule.kv_f32 = kv_f32;
        for (const auto& f : force) apply_force(o.schedule.force, f, cl_gate_choices());
        o.cache.disk = !no_kernel_cache;
        o.cache.dir = kernel_cache;
        o.print_kernel = print_kernel;
        o.print_threads = print_threads;
        o.print_plan = print_plan;
        o.verbose_init = verbose_init;
        o.profiler = (profiler || !profiler_dump_dir.empty()) ? prof : nullptr;
        return o;
    }

    // a LoadOptions' (EngineOptions') device backend from these flags: --opencl, else --gpu (gpu);
    // it refuses what check() refuses
    template <class O>
    void apply(O& o, bool gpu, bool print_plan, Profiler* prof) const {
        o.gpu = gpu;
        o.opencl = use_opencl();
        if (o.opencl) o.cl = opencl_options(print_plan, prof);
        else o.cuda = cuda(print_plan, prof);
    }

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

// The flags that set up the Engine of `run` (and its wrappers) and of each `bench` test: the
// context, the backend, the prompt path. Each command declares their options (its own help).
struct EngineFlags {
    int ctx_size = 0;
    bool gpu = false;
    bool cpu_exact = false;
    bool with_prefill_decode = false;
    int batch_prefill_size = kAutoPromptChunks;
    GpuFlags g;

    // Into o (EngineOptions, BenchOptions).
    template <class O>
    void apply_engine(O& o, bool print_plan, Profiler* prof) const {
        o.n_ctx = ctx_size;
        o.with_prefill_decode = with_prefill_decode;
        o.batch_prefill_size = batch_prefill_size;
        o.cpu_exact = cpu_exact;
        g.apply(o, gpu, print_plan, prof);
    }
};

// The Engine of a command that scores given tokens (eval, perplexity): -m, -t, -c, --cpu-exact,
// --gpu and the GPU flags g; prompts go through the Engine's default path.
inline EngineOptions scoring_engine_options(const std::string& model, int threads, int ctx, bool cpu_exact, bool gpu,
                                            const GpuFlags& g) {
    EngineOptions eo;
    eo.model_path = model;
    eo.n_threads = threads;
    eo.n_ctx = ctx;
    eo.cpu_exact = cpu_exact;
    g.apply(eo, gpu, false, nullptr);
    return eo;
}

}  // namespace jitllm::cli
