#include "optimized/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "posenc/error.h"
#include "posenc/kernel.h"

namespace posenc::optimized {

Range partition(int64_t n, int parts, int index) {
  const int64_t base = n / parts, extra = n % parts;
  const int64_t begin = index * base + std::min<int64_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

int plan_parts(int requested_threads, int64_t items, double nanos_per_item) {
  POSENC_REQUIRE(requested_threads >= 0, "threads", requested_threads,
                 "must be >= 0 (0 picks the default)");
  const double work = static_cast<double>(items) * nanos_per_item;
  // Below two parts' worth of work the answer is 1 whatever the thread count: skip the getenv.
  if (items < 2 || work < 2 * kMinPartNanos) return 1;
  const int64_t by_work = static_cast<int64_t>(work / kMinPartNanos);
  const int64_t parts = std::min<int64_t>({resolve_threads(requested_threads), items, by_work});
  return static_cast<int>(std::clamp<int64_t>(parts, 1, kMaxParts));
}

namespace {

std::atomic<bool> g_serial{false};
thread_local bool t_inside_body = false;
thread_local int t_last_threaded_parts = 1;

// Workers wait for a job, then claim its parts one at a time; the caller runs part 0 and then
// claims any part no worker has started (a worker whose core is busy elsewhere does not hold the
// job up). Which thread runs a part never changes what the part computes. One job at a time.
class ThreadPool {
 public:
  static ThreadPool& instance() {
    static ThreadPool pool;
    return pool;
  }

  // False when another thread holds the pool: the caller then runs inline.
  bool try_acquire() { return busy_.try_lock(); }
  void release() { busy_.unlock(); }

  // Runs every part of `task`; call between try_acquire and release.
  void run(int parts, const std::function<void(int)>& task) {
    uint64_t job;
    {
      std::unique_lock lock(mutex_);
      while (static_cast<int>(workers_.size()) < parts - 1) {
        workers_.emplace_back([this] { work(); });
      }
      task_ = &task;
      parts_ = parts;
      next_part_ = 1;
      finished_ = 0;
      job = ++generation_;
    }
    wake_.notify_all();
    task(0);
    for (int part; (part = claim(job)) >= 0;) {
      task(part);
      finish();
    }
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return finished_ == parts_ - 1; });
    task_ = nullptr;
  }

  ~ThreadPool() {
    {
      std::unique_lock lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

 private:
  ThreadPool() = default;

  // The next unstarted part of job `generation`, or −1 when none is left (or the job is over).
  int claim(uint64_t generation) {
    std::unique_lock lock(mutex_);
    if (generation != generation_ || next_part_ >= parts_) return -1;
    return next_part_++;
  }

  void finish() {
    std::unique_lock lock(mutex_);
    if (++finished_ == parts_ - 1) done_.notify_one();
  }

  void work() {
    t_inside_body = true;  // a worker only ever runs bodies
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)>* task;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        task = task_;
      }
      for (int part; (part = claim(seen)) >= 0;) {
        (*task)(part);
        finish();
      }
    }
  }

  std::mutex busy_;  // held by the caller whose job owns the workers
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* task_ = nullptr;
  int parts_ = 0, next_part_ = 0, finished_ = 0;  // finished counts parts 1..parts−1
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace

namespace detail {

void note_inline() { t_last_threaded_parts = 1; }

void run_parts(int64_t n, int parts, const std::function<void(Range)>& body) {
  parts = static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(parts, n), 1, kMaxParts));
  std::vector<std::exception_ptr> errors(parts);
  const std::function<void(int)> task = [&](int index) {
    const bool outer = t_inside_body;
    t_inside_body = true;
    try {
      body(partition(n, parts, index));
    } catch (...) {
      errors[index] = std::current_exception();
    }
    t_inside_body = outer;
  };
  ThreadPool& pool = ThreadPool::instance();
  if (parts > 1 && !t_inside_body && !g_serial.load(std::memory_order_relaxed) &&
      pool.try_acquire()) {
    pool.run(parts, task);
    pool.release();
    t_last_threaded_parts = parts;
  } else {
    for (int i = 0; i < parts; ++i) task(i);
    t_last_threaded_parts = 1;
  }
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace detail

int last_threaded_parts() { return t_last_threaded_parts; }

void set_serial(bool serial) { g_serial.store(serial, std::memory_order_relaxed); }

}  // namespace posenc::optimized
