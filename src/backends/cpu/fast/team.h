// The fast CPU path's threads: a team that spins between jobs, so that handing a product or an
// attention call over costs a store and a cache line, not a wake-up through the kernel (a decode
// step hands over ~8 jobs a layer). Workers spin for a short while after each job and then sleep
// until the next; each is pinned to its own physical core where the process may run on enough of
// them (JITLLM_CPU_PIN=0 leaves them unpinned). A job is cut into parts that threads claim one at
// a time, so a worker the system has not scheduled (a loaded machine) holds no part up.
#pragma once

namespace jitllm::cpu::fast {

// Calls fn(ctx, i) for i in [0, parts) on up to `threads` threads (the caller one of them) and
// returns when every call has. Each part goes to the first thread to claim it. The team grows to
// `threads` on first use; a call made while another thread is running a job runs every part on
// its own thread. Allocates nothing once grown.
void team_run(int threads, int parts, void (*fn)(const void* ctx, int i), const void* ctx);

// team_run with a callable: f(i) for i in [0, parts)
template <class F>
void team_for(int threads, int parts, const F& f) {
    team_run(threads, parts, [](const void* c, int i) { (*static_cast<const F*>(c))(i); }, &f);
}

}  // namespace jitllm::cpu::fast
