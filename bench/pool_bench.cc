// The thread pool's hand-off latency: one parallel_for of two near-empty parts, from post to join,
// where the caller's part waits until the other part has started (so a worker must take it, not
// the caller once it is free). "back_to_back" repeats it at once (a worker that is still spinning
// takes the part); "after_idle" sleeps 1 ms before each timed call (the worker has gone to sleep
// and must be woken). The pool/plain rows time the same for an OpenMP parallel region (libgomp).
// threads:1 runs both parts inline on the caller.
#include <atomic>
#include <thread>

#include "bench/bench.h"
#include "optimized/thread_pool.h"

namespace posenc::bench {
namespace {

void pool_pass(int threads) {
  static std::atomic<uint64_t> started{0};
  const uint64_t call = started.load(std::memory_order_relaxed) + 1;
  optimized::parallel_for(2, threads, [call](optimized::Range r) {
    if (r.begin == 1) started.store(call, std::memory_order_release);
    if (r.end == 1) wait_for_part(started, call);  // part 0 of 2
  });
}

}  // namespace

void register_pool_rows() {
  for (bool idle : {false, true}) {
    for (bool omp : {false, true}) {
      for (int threads : kThreadCounts) {
        const std::string name = std::string("pool/") + (omp ? "plain" : "handoff") + "/" +
                                 (idle ? "after_idle" : "back_to_back") +
                                 "/threads:" + std::to_string(threads);
        auto* b = benchmark::RegisterBenchmark(name.c_str(), [idle, omp,
                                                              threads](benchmark::State& state) {
          state.SetLabel("baseline");  // for report.py: a measurement, not a kernel
          auto pass = [&] { omp ? omp_handoff(threads) : pool_pass(threads); };
          pass();  // starts the workers
          for (auto _ : state) {
            if (!idle) {
              pass();
              continue;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            const auto start = std::chrono::steady_clock::now();
            pass();
            state.SetIterationTime(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
          }
        });
        if (idle)
          b->UseManualTime()->Iterations(smoke() ? 3 : 300);
        else
          b->UseRealTime();
      }
    }
  }
}

}  // namespace posenc::bench
