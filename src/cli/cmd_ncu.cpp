// `jitllm ncu`: Nsight Compute on the kernel that runs one task at one layer and one token (or prompt
// chunk), in one command; `jitllm nsys`: an Nsight Systems timeline of a run with the NVTX task ranges.
// The run is the one `jitllm run` would make of the arguments after `--`; its plan and schedule are
// built here the same way (on the GPU's own figures, or --target's without one), the launch is found
// by walking the run's launches (schedule_for_each_launch) and ncu gets the anchored kernel name and
// the launches of that kernel before it as --launch-skip.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "backends/cuda/cuda_backend.h"
#include "cli/cli_util.h"
#include "cli/run_flags.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "jit/disk_cache.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace jitllm::cli {
namespace {

struct NcuFlags {
    std::string task, kernel, phase, target, out, tool;
    int layer = -1;
    int64_t token = -1;
    int chunk = -1;
    std::vector<std::string> sections;
    std::string set;
    bool print_command = false;
};

// argv before `--` (the command's own options) and after it (the run's)
std::pair<Args, Args> split_at_dashes(const Args& args, const char* cmd) {
    for (size_t i = 0; i < args.size(); ++i)
        if (args[i] == "--") return {Args(args.begin(), args.begin() + long(i)), Args(args.begin() + long(i) + 1, args.end())};
    for (const auto& a : args)
        if (a == "-h" || a == "--help") return {args, {}};
    fail_usage("jitllm {}: expected `--` and the run's arguments after it (e.g. `-- -m model.gguf --gpu`), found none",
               cmd);
}

// The tool's executable: --ncu / --nsys, else PATH, else /usr/local/cuda/bin; empty when none.
std::string find_tool(const std::string& given, const std::string& name) {
    if (!given.empty()) return given;
    if (const char* path = std::getenv("PATH")) {
        std::stringstream ss(path);
        for (std::string dir; std::getline(ss, dir, ':');)
            if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
    }
    const std::string cuda = "/usr/local/cuda/bin/" + name;
    return ::access(cuda.c_str(), X_OK) == 0 ? cuda : std::string();
}

std::string self_exe() {
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, size_t(n)) : std::string("jitllm");
}

std::string shell_quote(const std::string& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,@%+") ==
                          std::string::npos)
        return s;
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// Runs argv (stdout/stderr inherited; stdout to `out_file` when given); the exit status.
int spawn(const std::vector<std::string>& argv, const std::string& out_file = "") {
    const pid_t pid = ::fork();
    if (pid < 0) fail("fork failed: {}", std::strerror(errno));
    if (pid == 0) {
        if (!out_file.empty()) {
            const int fd = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) ::dup2(fd, 1);
        }
        std::vector<char*> a;
        for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
        a.push_back(nullptr);
        ::execv(a[0], a.data());
        std::fprintf(stderr, "error: cannot run %s: %s\n", a[0], std::strerror(errno));
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// What the wrapped run will be: its plan, schedule and shape.
struct PlannedRun {
    std::unique_ptr<Model> model;
    Plan plan;
    Schedule sched;
    RunShape shape;
    DeviceInfo dev;
    double copy_gb_s = 0;  // measured on the GPU (cached per device), 0 with --target
    RunFlags f;
};

PlannedRun plan_run(const Args& run_args, const std::string& target, const char* cmd) {
    PlannedRun r;
    CLI::App app{"the run's arguments", "jitllm run"};
    add_run_flags(app, r.f);
    try {
        if (!parse_args(app, run_args)) std::exit(0);  // --help after `--`: the run's flags
    } catch (const CLI::ParseError& e) {
        fail_usage("jitllm {}: the run's arguments after `--`: {}", cmd, e.what());
    }
    run_flags_finish(r.f);
    if (!r.f.gpu) fail_usage("jitllm {}: expected --gpu among the run's arguments (a CUDA run to profile), found none", cmd);
    r.model = load_model(r.f.model);
    const auto tok = Tokenizer::from_gguf(*r.model->gguf);
    const int model_ctx = r.model->config.n_ctx_train;
    const int n_ctx = r.f.ctx_size > 0 ? std::min(r.f.ctx_size, model_ctx) : std::min(model_ctx, 4096);
    const int chunk = prompt_chunk_rows(r.f.batch_prefill_size, true, r.f.with_prefill_decode);  // a GPU run's
    r.plan = plan_build(*r.model, PlanOptions{n_ctx, std::min(chunk, n_ctx), 1});
    if (!target.empty()) {
        r.dev = DeviceInfo::for_target(target);
    } else {
        std::string why;
        if (!CudaDriver::try_load(&why))
            fail_usage("jitllm {}: no CUDA device ({}); --print-command with --target sm_XX plans without one", cmd, why);
        CudaContext ctx(0);
        r.dev = ctx.device();
        r.copy_gb_s = measure_copy_bandwidth_gb_s(ctx, r.f.g.kernel_cache.empty() ? default_cache_dir() : r.f.g.kernel_cache);
    }
    r.sched = schedule_build(r.plan, r.dev, r.f.g.schedule());
    const auto ids = run_prompt_ids(r.f, *tok, *r.model->gguf, n_ctx);
    const int n_gen = r.f.max_tokens < 0 ? n_ctx - int(ids.size()) : std::min(r.f.max_tokens, n_ctx - int(ids.size()));
    const Sampler sampler(r.f.sp);
    r.shape = RunShape{int(ids.size()), n_gen, r.f.with_prefill_decode, r.plan.batch_rows,
                       sampler.device_drawable(r.plan.config->n_vocab, r.sched.draw_max_k)};
    return r;
}

// The launch asked for: the phase (given, or the one that runs --token / --chunk), the run of that
// phase, and the step whose tasks include the task (or whose symbol is the kernel) at the layer.
LaunchPick pick_launch(const PlannedRun& r, const NcuFlags& n) {
    const PhaseRuns pr = plan_phase_runs(r.shape);
    const int64_t p0 = int64_t(r.shape.n_prompt) + r.shape.n_gen - 1 - pr.decode;  // first decode position
    Phase phase = Phase::Decode;
    if (!n.phase.empty()) phase = n.phase == "prefill" ? Phase::Prefill : n.phase == "batch" ? Phase::Batch : Phase::Decode;
    else if (n.chunk >= 0) phase = Phase::Batch;
    else if (n.token >= 0 && n.token < p0) phase = pr.batch > 0 ? Phase::Batch : Phase::Prefill;
    // the run of that phase: --chunk, the one at --token, or the steady state (after the prompt and
    // two generated tokens; the first chunk or prefill step)
    int64_t run = 0;
    if (phase == Phase::Batch) {
        run = n.chunk >= 0 ? n.chunk : n.token >= 0 ? n.token / std::max(1, r.shape.batch_prefill) : 0;
        if (run >= pr.batch)
            fail_usage("--chunk {}: the prompt of {} tokens runs in {} chunk(s) of {} rows{}", run, r.shape.n_prompt,
                       pr.batch, r.shape.batch_prefill, pr.batch ? "" : " (no --batch-prefill-size among the run's arguments)");
    } else if (phase == Phase::Prefill) {
        run = n.token >= 0 ? n.token : 0;
        if (run >= pr.prefill)
            fail_usage("--token {}: prefill steps run at positions 0 to {} (--with-prefill-decode, prompt of {} tokens)", run,
                       pr.prefill - 1, r.shape.n_prompt);
    } else {
        run = n.token >= 0 ? n.token - p0 : pr.decode_in_prompt + 2;
        if (run < 0 || run >= pr.decode)
            fail_usage("--token {}: decode steps run at positions {} to {} (prompt of {} tokens, -n {})",
                       n.token >= 0 ? n.token : p0 + run, p0, p0 + pr.decode - 1, r.shape.n_prompt, r.shape.n_gen);
    }
    const auto& tasks = r.plan.phase(phase);
    // the task's full name: as given when it names a layer or a global task, else at --layer (0)
    std::string task = n.task;
    if (!task.empty() && task.rfind("blk.", 0) != 0) {
        bool global = false;
        for (const auto& t : tasks) global = global || (t.layer < 0 && t.name == task);
        if (!global) task = fmt::format("blk.{}.{}", std::max(0, n.layer), task);
    }
    auto covers = [&](const LaunchRef& l) {
        if (!n.kernel.empty()) return l.step->symbol == n.kernel && (n.layer < 0 || l.step->layer == n.layer);
        for (int ti : l.step->tasks)
            if (tasks[size_t(ti)].name == task) return true;
        return false;
    };
    auto p = schedule_pick_launch(r.sched, r.shape, [&](const LaunchRef& l) { return l.phase == phase && l.run == run && covers(l); });
    if (!p) {
        const std::string what = n.kernel.empty() ? "task " + task : "kernel " + n.kernel;
        fail_usage("{}: no launch of the {} phase runs it in run {} (see `jitllm --print-plan` for the tasks and kernels)",
                   what, phase_name(phase), run);
    }
    return *p;
}

std::string pick_description(const PlannedRun& r, const LaunchPick& p) {
    const auto& tasks = r.plan.phase(p.at.phase);
    std::string names;
    for (int ti : p.at.step->tasks) names += (names.empty() ? "" : " + ") + tasks[size_t(ti)].name;
    const std::string where = p.at.phase == Phase::Batch
                                  ? fmt::format("prompt chunk {} ({} rows from position {}{})", p.at.run, p.at.rows,
                                                p.at.position, p.at.tail ? ", output tail" : "")
                                  : fmt::format("{} step at position {}", phase_name(p.at.phase), p.at.position);
    return fmt::format("{} ({}), {}: launch {} of {} of this kernel (--launch-skip {}), grid ({}, {}, {}) block ({}, {}, {})",
                       p.at.step->symbol, names, where, p.skip + 1, p.total, p.skip,
                       p.at.step->grid_for_rows(p.at.rows).x, p.at.step->grid_for_rows(p.at.rows).y,
                       p.at.step->grid_for_rows(p.at.rows).z, p.at.step->block.x, p.at.step->block.y, p.at.step->block.z);
}

// bytes the kernel states for this launch (the profiler's accounting)
uint64_t stated_bytes(const LaunchPick& p) {
    const KernelStep& k = *p.at.step;
    const uint64_t m = uint64_t(std::max(1, p.at.rows));
    if (p.at.phase == Phase::Batch) return k.bytes_fixed + k.bytes * m + k.bytes_per_pos * uint64_t(p.at.position + 1) * m;
    return k.bytes + k.bytes_per_pos * uint64_t(p.at.position + 1);
}

std::vector<std::string> split_csv_line(const std::string& line) {
    std::vector<std::string> out;
    std::string cur;
    bool q = false;
    for (char c : line) {
        if (c == '"') q = !q;
        else if (c == ',' && !q) out.push_back(cur), cur.clear();
        else cur += c;
    }
    out.push_back(cur);
    return out;
}

// The summary of the report's one kernel: ncu --import ... --csv --page raw with base units.
void print_summary(const std::string& ncu, const std::string& report, const PlannedRun& r, const LaunchPick& p) {
    const std::string csv = report + ".csv";
    const std::vector<std::string> metrics = {"gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                                              "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                              "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__grid_size",
                                              "launch__block_size", "dram__bytes.sum"};
    std::string mlist;
    for (const auto& m : metrics) mlist += (mlist.empty() ? "" : ",") + m;
    if (spawn({ncu, "--import", report, "--csv", "--page", "raw", "--print-units", "base", "--metrics", mlist}, csv) != 0) {
        std::fprintf(stderr, "[jitllm] ncu --import %s failed: no summary\n", report.c_str());
        return;
    }
    std::ifstream in(csv);
    std::vector<std::vector<std::string>> rows;
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && line[0] == '"') rows.push_back(split_csv_line(line));
    if (rows.size() < 3) {
        std::fprintf(stderr, "[jitllm] the report has no kernel: the run ended before launch %lld of %s (an end "
                     "token before the position asked for?)\n", (long long)p.skip + 1, p.at.step->symbol.c_str());
        return;
    }
    auto col = [&](const std::string& name) -> std::optional<double> {
        for (size_t i = 0; i < rows[0].size(); ++i)
            if (rows[0][i] == name && i < rows[2].size()) {
                std::string v = rows[2][i];
                v.erase(std::remove(v.begin(), v.end(), ','), v.end());
                char* end = nullptr;
                const double d = std::strtod(v.c_str(), &end);
                if (end != v.c_str()) return d;
            }
        return std::nullopt;
    };
    std::string name;
    for (size_t i = 0; i < rows[0].size(); ++i)
        if (rows[0][i] == "Kernel Name" && i < rows[2].size()) name = rows[2][i];
    const double ns = col("gpu__time_duration.sum").value_or(0);
    const uint64_t bytes = stated_bytes(p);
    std::printf("kernel      %s%s\n", name.c_str(), name == p.at.step->symbol ? "" : "  (NOT the kernel planned: check the run's arguments)");
    std::printf("duration    %.2f us\n", ns / 1000.0);
    if (auto v = col("dram__throughput.avg.pct_of_peak_sustained_elapsed")) std::printf("DRAM        %.1f %% of peak\n", *v);
    if (auto v = col("sm__throughput.avg.pct_of_peak_sustained_elapsed")) std::printf("SM          %.1f %% of peak\n", *v);
    if (auto v = col("sm__warps_active.avg.pct_of_peak_sustained_active")) std::printf("occupancy   %.1f %% achieved\n", *v);
    if (auto g = col("launch__grid_size")) std::printf("grid        %.0f blocks (plan: %u)\n", *g,
                                                     p.at.step->grid_for_rows(p.at.rows).x * p.at.step->grid_for_rows(p.at.rows).y *
                                                         p.at.step->grid_for_rows(p.at.rows).z);
    if (auto d = col("dram__bytes.sum")) std::printf("DRAM bytes  %.0f measured, %llu stated by the kernel\n", *d, (unsigned long long)bytes);
    if (ns > 0) {
        const double gb_s = double(bytes) / ns;
        if (r.copy_gb_s > 0) std::printf("stated GB/s %.1f (%.1f %% of the measured copy bandwidth %.0f GB/s)\n", gb_s, 100.0 * gb_s / r.copy_gb_s, r.copy_gb_s);
        else std::printf("stated GB/s %.1f\n", gb_s);
    }
    std::printf("report      %s (ncu-ui %s; metrics as CSV in %s)\n", report.c_str(), report.c_str(), csv.c_str());
}

}  // namespace

int cmd_ncu(const Args& args) {
    const auto [own, run_args] = split_at_dashes(args, "ncu");
    CLI::App app{"jitllm ncu: Nsight Compute on the kernel that runs one task at one layer and token\n"
                 "  usage: jitllm ncu [--task NAME | --kernel SYMBOL] [--layer L] [--token T | --chunk C] -- RUN ARGUMENTS",
                 "jitllm ncu"};
    NcuFlags n;
    auto* task = app.add_option("--task", n.task, "a task name, with its layer (blk.3.ffn_down) or without (ffn_down, at --layer)");
    app.add_option("--kernel", n.kernel, "a kernel symbol (as --print-plan names it) instead of a task")->excludes(task);
    app.add_option("--layer", n.layer, "the layer (default 0)")->check(CLI::Range(0, 1 << 16));
    auto* tok = app.add_option("--token", n.token, "the token position (prompt tokens 0 .. P-1, then the generated ones; "
                                                    "default: the decode step after the prompt and two generated tokens)")
                    ->check(CLI::Range(int64_t(0), int64_t(1) << 40));
    app.add_option("--chunk", n.chunk, "the prompt chunk (--batch-prefill-size among the run's arguments)")
        ->check(CLI::Range(0, 1 << 30))->excludes(tok);
    app.add_option("--phase", n.phase, "decode, prefill or batch (default: the phase that runs --token / --chunk)")
        ->check(CLI::IsMember({"decode", "prefill", "batch"}));
    auto* sec = app.add_option("--sections", n.sections, "ncu sections, comma-separated (default SpeedOfLight,LaunchStats,Occupancy)")
                    ->delimiter(',');
    app.add_option("--set", n.set, "an ncu section set instead (e.g. full)")->excludes(sec);
    app.add_option("--out", n.out, "the report's path without .ncu-rep (default jitllm-<kernel>-<launch>)");
    app.add_option("--ncu", n.tool, "the ncu executable (default: PATH, then /usr/local/cuda/bin/ncu)");
    app.add_flag("--print-command", n.print_command, "print the ncu command and the launch it profiles; run nothing");
    app.add_option("--target", n.target, "plan for this CUDA arch instead of the GPU's (sm_80, sm_90, ...): with --print-command");
    if (!parse_args(app, own)) return 0;
    if (n.task.empty() && n.kernel.empty()) fail_usage("jitllm ncu: expected --task NAME or --kernel SYMBOL, found neither");
    if (!n.target.empty() && !n.print_command)
        fail_usage("jitllm ncu: --target plans for a GPU that is not here: expected --print-command with it");
    const PlannedRun r = plan_run(run_args, n.target, "ncu");
    const LaunchPick p = pick_launch(r, n);
    const std::string ncu = find_tool(n.tool, "ncu");
    const std::string report = !n.out.empty() ? n.out : fmt::format("jitllm-{}-{}", p.at.step->symbol, p.skip + 1);
    std::vector<std::string> cmd = {ncu.empty() ? std::string("ncu") : ncu, "--clock-control", "none", "--kernel-name",
                                    "regex:^" + p.at.step->symbol + "$", "--launch-skip", std::to_string(p.skip),
                                    "--launch-count", "1"};
    if (!n.set.empty()) cmd.insert(cmd.end(), {"--set", n.set});
    for (const auto& s : n.sections.empty() ? std::vector<std::string>{"SpeedOfLight", "LaunchStats", "Occupancy"} : n.sections)
        if (n.set.empty()) cmd.insert(cmd.end(), {"--section", s});
    cmd.insert(cmd.end(), {"-f", "-o", report, self_exe()});
    cmd.insert(cmd.end(), run_args.begin(), run_args.end());
    std::string line;
    for (const auto& a : cmd) line += (line.empty() ? "" : " ") + shell_quote(a);
    std::printf("profiles   %s\n", pick_description(r, p).c_str());
    std::printf("command    %s\n", line.c_str());
    std::fflush(stdout);
    if (n.print_command) return 0;
    if (ncu.empty()) fail("jitllm ncu: expected ncu on PATH or in /usr/local/cuda/bin (or --ncu PATH), found none");
    if (const int rc = spawn(cmd); rc != 0) fail("jitllm ncu: ncu exited with status {}", rc);
    print_summary(cmd[0], report + ".ncu-rep", r, p);
    return 0;
}

int cmd_nsys(const Args& args) {
    const auto [own, run_args] = split_at_dashes(args, "nsys");
    CLI::App app{"jitllm nsys: an Nsight Systems timeline of a run, one NVTX range per task launch\n"
                 "  usage: jitllm nsys [--out FILE] -- RUN ARGUMENTS",
                 "jitllm nsys"};
    std::string out = "jitllm-timeline", tool;
    bool print_command = false;
    app.add_option("--out", out, "the report's path without .nsys-rep (default jitllm-timeline)");
    app.add_option("--nsys", tool, "the nsys executable (default: PATH, then /usr/local/cuda/bin/nsys)");
    app.add_flag("--print-command", print_command, "print the nsys command; run nothing");
    if (!parse_args(app, own)) return 0;
    const std::string nsys = find_tool(tool, "nsys");
    std::vector<std::string> cmd = {nsys.empty() ? std::string("nsys") : nsys, "profile", "--trace", "cuda,nvtx",
                                    "--force-overwrite", "true", "-o", out, self_exe()};
    cmd.insert(cmd.end(), run_args.begin(), run_args.end());
    cmd.push_back("--nvtx-tasks");
    std::string line;
    for (const auto& a : cmd) line += (line.empty() ? "" : " ") + shell_quote(a);
    std::printf("command    %s\n", line.c_str());
    std::fflush(stdout);
    if (print_command) return 0;
    if (nsys.empty()) fail("jitllm nsys: expected nsys on PATH or in /usr/local/cuda/bin (or --nsys PATH), found none");
    if (const int rc = spawn(cmd); rc != 0) fail("jitllm nsys: nsys exited with status {}", rc);
    std::printf("timeline   %s.nsys-rep (nsys-ui %s.nsys-rep; tasks are the NVTX ranges)\n", out.c_str(), out.c_str());
    return 0;
}

}  // namespace jitllm::cli
