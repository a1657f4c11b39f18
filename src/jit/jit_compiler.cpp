// JitCompiler: key every variant, answer from memory, then disk, then NVRTC on a thread pool.
#include "jit/jit_compiler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <thread>

#include "core/error.h"

namespace jitllm {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

struct JitCompiler::Job {
    Variant variant;
    std::string arch;
    std::string expanded;
    VariantKey key;
    std::shared_ptr<const CompiledKernel> result;
    std::exception_ptr error;
    bool memory_hit = false;
};

JitCompiler::JitCompiler(std::string arch, JitOptions opts)
    : arch_(std::move(arch)), opts_(std::move(opts)), nvrtc_(Nvrtc::load()), disk_(opts_.cache) {
    const char* a = std::getenv("JITLLM_ASSERT_NO_COMPILE");
    assert_no_compile_ = a && *a && std::string(a) != "0";
}

std::vector<std::string> JitCompiler::all_options(const Variant& v, const std::string& arch) const {
    std::vector<std::string> o = base_options(v, arch);
    for (std::string& d : define_options(v)) o.push_back(std::move(d));
    if (!nvrtc_.include_dir().empty()) o.push_back("-I" + nvrtc_.include_dir());
    return o;
}

VariantKey JitCompiler::key(const Variant& v) const {
    const std::string arch = v.target_arch(arch_);
    return variant_key(expand_source(v), v, arch, nvrtc_.fingerprint());
}

std::string JitCompiler::entry_dir(const Variant& v) const {
    return disk_.entry_dir(v.target_arch(arch_), v, key(v));
}

JitStats JitCompiler::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
}

void JitCompiler::run_job(Job& job) {
    const Variant& v = job.variant;
    auto done = [&](CompiledKernel k, bool disk_hit) {
        k.usage = parse_ptxas_usage(k.log, v.symbol);
        auto p = std::make_shared<const CompiledKernel>(std::move(k));
        std::lock_guard<std::mutex> lock(mu_);
        memory_[{job.key.hi, job.key.lo}] = p;
        if (disk_hit) {
            ++stats_.disk_hits;
        } else {
            ++stats_.compiles;
            stats_.compile_ms += p->compile_ms;
        }
        job.result = p;
    };
    CompiledKernel k{v, job.arch, job.key, {}, false, 0, "", "", {}};
    if (auto hit = disk_.load(job.arch, v, job.key)) {
        k.cubin = std::move(hit->cubin);
        k.log = std::move(hit->log);
        k.from_cache = true;
        k.source_path = disk_.entry_dir(job.arch, v, job.key) + "/source.cu";
        return done(std::move(k), true);
    }
    if (assert_no_compile_)
        fail(
            "cuda: {} ({}) is not in the kernel cache ({}) and JITLLM_ASSERT_NO_COMPILE=1 forbids "
            "compiling it",
            v.display_name(), job.arch, disk_.enabled() ? disk_.dir() : "disabled");

    const std::vector<std::string> options = all_options(v, job.arch);
    const auto t0 = std::chrono::steady_clock::now();
    NvrtcOutput out = nvrtc_.compile(job.expanded, v.source, options);
    k.compile_ms = ms_since(t0);
    const CacheEntry entry{job.expanded, options, "nvrtc " + nvrtc_.fingerprint(), out.log,
                           out.cubin};
    const std::string dir = disk_.store(job.arch, v, job.key, entry);
    k.source_path = dir.empty() ? "" : dir + "/source.cu";
    if (!out.ok) {
        std::string hint;
        if (nvrtc_.include_dir().empty() && out.log.find("cuda_fp16.h") != std::string::npos)
            hint = "\nhint: no CUDA toolkit include dir with cuda_fp16.h was found next to " +
                   nvrtc_.library() + " or in /usr/local/cuda/include; set CUDA_HOME";
        fail("cuda: compiling {} failed (nvrtc {}, {})\n  source: {}\n{}{}", v.display_name(),
             nvrtc_.version(), job.arch, k.source_path, out.log, hint);
    }
    k.cubin = std::move(out.cubin);
    k.log = std::move(out.log);
    done(std::move(k), false);
}

std::vector<CompiledKernel> JitCompiler::compile_all(const std::vector<Variant>& variants) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Job> jobs;
    std::vector<size_t> job_of(variants.size());
    std::map<std::pair<uint64_t, uint64_t>, size_t> index;
    for (size_t i = 0; i < variants.size(); ++i) {
        Job j{variants[i], variants[i].target_arch(arch_), expand_source(variants[i]), {}, {}, {}};
        j.key = variant_key(j.expanded, j.variant, j.arch, nvrtc_.fingerprint());
        auto [it, fresh] = index.emplace(std::make_pair(j.key.hi, j.key.lo), jobs.size());
        if (fresh) jobs.push_back(std::move(j));
        job_of[i] = it->second;
    }
    std::vector<Job*> pending;
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (Job& j : jobs) {
            auto it = memory_.find({j.key.hi, j.key.lo});
            if (it == memory_.end()) {
                pending.push_back(&j);
                continue;
            }
            j.result = it->second;
            j.memory_hit = true;
            ++stats_.memory_hits;
        }
    }
    unsigned n_threads = opts_.threads > 0 ? opts_.threads : std::thread::hardware_concurrency();
    n_threads = std::max(1u, std::min<unsigned>(n_threads, pending.size()));
    std::atomic<size_t> next{0};
    auto worker = [&] {
        for (size_t i; (i = next++) < pending.size();) {
            try {
                run_job(*pending[i]);
            } catch (...) {
                pending[i]->error = std::current_exception();
            }
        }
    };
    if (!pending.empty()) {
        std::vector<std::thread> pool;
        for (unsigned t = 1; t < n_threads; ++t) pool.emplace_back(worker);
        worker();
        for (std::thread& t : pool) t.join();
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.wall_ms += ms_since(t0);
    }
    std::vector<CompiledKernel> out;
    out.reserve(variants.size());
    for (size_t i = 0; i < variants.size(); ++i) {
        const Job& j = jobs[job_of[i]];
        if (j.error) std::rethrow_exception(j.error);
        CompiledKernel k = *j.result;
        k.variant = variants[i];
        if (j.memory_hit) {
            k.from_cache = true;
            k.compile_ms = 0;
        }
        out.push_back(std::move(k));
    }
    return out;
}

CompiledKernel JitCompiler::compile(const Variant& v) {
    return std::move(compile_all({v})[0]);
}

}  // namespace jitllm
