// Persistent thread pool (see thread_pool.h).
#include "core/thread_pool.h"

#include <memory>

namespace jitllm {

ThreadPool::ThreadPool(int n_threads) {
    for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    cv_start_.notify_all();
    for (auto& w : workers_) w.join();
}

void ThreadPool::worker_loop(int) {
    uint64_t seen = 0;
    for (;;) {
        std::unique_lock<std::mutex> lk(mu_);
        cv_start_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        while (next_chunk_ < n_chunks_) {
            const int i = next_chunk_++;
            lk.unlock();
            (*fn_)(i);
            lk.lock();
            if (--pending_ == 0) cv_done_.notify_all();
        }
    }
}

void ThreadPool::parallel_for(int n_chunks, const std::function<void(int)>& fn) {
    if (n_chunks <= 0) return;
    if (workers_.empty() || n_chunks == 1) {
        for (int i = 0; i < n_chunks; ++i) fn(i);
        return;
    }
    std::unique_lock<std::mutex> lk(mu_);
    fn_ = &fn;
    n_chunks_ = n_chunks;
    next_chunk_ = 0;
    pending_ = n_chunks;
    ++generation_;
    cv_start_.notify_all();
    while (next_chunk_ < n_chunks_) {
        const int i = next_chunk_++;
        lk.unlock();
        fn(i);
        lk.lock();
        --pending_;
    }
    cv_done_.wait(lk, [&] { return pending_ == 0; });
    fn_ = nullptr;
}

namespace {
std::unique_ptr<ThreadPool>& global_slot() {
    static std::unique_ptr<ThreadPool> p = std::make_unique<ThreadPool>(1);
    return p;
}
}  // namespace

ThreadPool& ThreadPool::global() { return *global_slot(); }

void ThreadPool::set_global_threads(int n) {
    if (n < 1) n = 1;
    if (global_slot()->size() != n) global_slot() = std::make_unique<ThreadPool>(n);
}

}  // namespace jitllm
