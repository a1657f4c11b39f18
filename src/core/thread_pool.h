// A small persistent thread pool for data-parallel loops (the CPU backend splits matrix rows).
// parallel_for blocks until every chunk is done; the calling thread takes chunk 0.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace jitllm {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    int size() const { return int(workers_.size()) + 1; }
    // Calls fn(i) for i in [0, n_chunks) across the pool; returns when all are done.
    void parallel_for(int n_chunks, const std::function<void(int)>& fn);
    // Process-wide pool used by the CPU backend (resized by set_threads).
    static ThreadPool& global();
    static void set_global_threads(int n);

private:
    void worker_loop(int index);
    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable cv_start_, cv_done_;
    const std::function<void(int)>* fn_ = nullptr;
    int n_chunks_ = 0;
    int next_chunk_ = 0;
    int pending_ = 0;
    uint64_t generation_ = 0;
    bool stop_ = false;
};

}  // namespace jitllm
