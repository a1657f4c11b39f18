// The spinning team of the fast CPU path (team.h) and the physical cores it runs on.
#include "backends/cpu/fast/team.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/cpu/fast/fast_ops.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define JITLLM_SPIN_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define JITLLM_SPIN_PAUSE() __asm__ __volatile__("yield")
#else
#define JITLLM_SPIN_PAUSE() std::atomic_signal_fence(std::memory_order_seq_cst)
#endif

namespace jitllm::cpu::fast {
namespace {

// One CPU of each physical core this process may run on (the lowest numbered hardware thread of
// the core), in core order; the allowed CPUs themselves where the topology cannot be read
std::vector<int> core_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> allowed;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) allowed.push_back(c);
    }
    std::map<std::pair<std::string, std::string>, int> first;  // (package, core) -> CPU
    for (int c : allowed) {
        const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
        std::ifstream pkg(dir + "physical_package_id"), core(dir + "core_id");
        std::string p, k;
        if (!(pkg >> p) || !(core >> k)) return allowed;
        first.emplace(std::make_pair(p, k), c);  // keeps the lowest: `allowed` ascends
    }
    std::vector<int> cpus;
    for (const auto& [key, c] : first) cpus.push_back(c);
    std::sort(cpus.begin(), cpus.end());
    return cpus;
}

const std::vector<int>& cores() {
    static const std::vector<int> c = core_cpus();
    return c;
}

// How long a worker spins for the next job before it sleeps, and how long the caller spins for
// parts still running before it yields its core between checks
constexpr auto kWorkerSpin = std::chrono::microseconds(2000);
constexpr auto kCallerSpin = std::chrono::microseconds(500);

inline bool spin_until(std::chrono::steady_clock::time_point t0, unsigned spins, std::chrono::microseconds limit) {
    JITLLM_SPIN_PAUSE();
    return (spins & 255) == 255 && std::chrono::steady_clock::now() - t0 > limit;
}

// The parts of a job go to whichever thread claims them first (the caller included), so a worker
// the system has not scheduled holds nothing up unless it took a part.
class Team {
public:
    static constexpr int kMaxThreads = 255;
    static constexpr int kMaxParts = (1 << 20) - 1;
    explicit Team(int n) {
        n = std::min(n, kMaxThreads);
        const char* pin = std::getenv("JITLLM_CPU_PIN");
        const bool pinned = !(pin && std::string(pin) == "0") && n <= int(cores().size());
        for (int i = 1; i < n; ++i) {
            workers_.emplace_back([this, i] { loop(i); });
            if (pinned) {
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(cores()[size_t(i)], &set);
                pthread_setaffinity_np(workers_.back().native_handle(), sizeof(set), &set);
            }
        }
    }
    ~Team() {
        job_.store(kStop, std::memory_order_seq_cst);
        job_.notify_all();
        for (auto& w : workers_) w.join();
    }
    int size() const { return int(workers_.size()) + 1; }

    // fn(ctx, i) for i in [0, parts), on this thread and the first threads - 1 workers
    void run(int threads, int parts, void (*fn)(const void*, int), const void* ctx) {
        fn_ = fn;
        ctx_ = ctx;
        done_.store(0, std::memory_order_relaxed);
        const uint64_t g = (gen_ = (gen_ + 1) & kGenMask);
        state_.store(g << 40 | uint64_t(parts) << 20, std::memory_order_release);
        job_.store(uint32_t(g) << 8 | uint32_t(threads), std::memory_order_seq_cst);
        if (sleepers_.load(std::memory_order_seq_cst) > 0) job_.notify_all();
        work(g);
        const auto t0 = std::chrono::steady_clock::now();
        for (unsigned spins = 0; done_.load(std::memory_order_acquire) < parts; ++spins)
            if (spin_until(t0, spins, kCallerSpin)) std::this_thread::yield();
    }

private:
    // job_ (the word a sleeping worker waits on): generation << 8 | threads, or kStop;
    // state_: generation << 40 | parts << 20 | the next part to claim
    static constexpr uint32_t kStop = 0x80000000u;
    static constexpr uint64_t kGenMask = (1u << 23) - 1;

    // Claims and runs parts of job g until none is left (or a later job has begun)
    void work(uint64_t g) {
        uint64_t s = state_.load(std::memory_order_acquire);
        for (;;) {
            const uint64_t next = s & kMaxParts, parts = (s >> 20) & kMaxParts;
            if ((s >> 40) != g || next >= parts) return;
            if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
                fn_(ctx_, int(next));
                done_.fetch_add(1, std::memory_order_release);
                s = state_.load(std::memory_order_acquire);
            }
        }
    }

    void loop(int i) {
        uint32_t seen = 0;  // the word the team starts with (a job may be posted before this runs)
        for (;;) {
            uint32_t j = job_.load(std::memory_order_acquire);
            const auto t0 = std::chrono::steady_clock::now();
            for (unsigned spins = 0; j == seen; ++spins) {
                if (spin_until(t0, spins, kWorkerSpin)) {
                    sleepers_.fetch_add(1, std::memory_order_seq_cst);
                    job_.wait(seen, std::memory_order_seq_cst);
                    sleepers_.fetch_sub(1, std::memory_order_relaxed);
                }
                j = job_.load(std::memory_order_acquire);
            }
            seen = j;
            if (j == kStop) return;
            if (uint32_t(i) < (j & 0xFF)) work(j >> 8);
        }
    }

    std::vector<std::thread> workers_;
    uint64_t gen_ = 0;  // (the caller's)
    std::atomic<uint32_t> job_{0};
    std::atomic<int> sleepers_{0};
    alignas(64) std::atomic<uint64_t> state_{0};
    alignas(64) std::atomic<int> done_{0};
    void (*fn_)(const void*, int) = nullptr;
    const void* ctx_ = nullptr;
};

std::mutex& team_mutex() {
    static std::mutex m;
    return m;
}

}  // namespace

int physical_cores() {
    static const int n = std::max(1, int(cores().size()));
    return n;
}

void team_run(int threads, int parts, void (*fn)(const void*, int), const void* ctx) {
    auto serial = [&] {
        for (int i = 0; i < parts; ++i) fn(ctx, i);
    };
    if (threads <= 1 || parts <= 1 || parts > Team::kMaxParts) return serial();
    std::unique_lock<std::mutex> lk(team_mutex(), std::try_to_lock);
    if (!lk.owns_lock()) return serial();
    threads = std::min(threads, Team::kMaxThreads);
    static std::unique_ptr<Team> team;
    if (!team || team->size() < threads) {
        team.reset();  // (joins the old workers before the new ones start)
        team = std::make_unique<Team>(threads);
    }
    team->run(threads, parts, fn, ctx);
}

}  // namespace jitllm::cpu::fast
