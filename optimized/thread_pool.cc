#include "optimized/thread_pool.h"

#include <algorithm>
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
  require(requested_threads >= 0, "threads", requested_threads,
          "must be >= 0 (0 picks the default)");
  const double work = static_cast<double>(items) * nanos_per_item;
  // Below two parts' worth of work the answer is 1 whatever the thread count: skip the getenv.
  if (items < 2 || work < 2 * kMinPartNanos) return 1;
  const int64_t by_work = static_cast<int64_t>(work / kMinPartNanos);
  const int64_t parts = std::min<int64_t>({resolve_threads(requested_threads), items, by_work});
  return static_cast<int>(std::clamp<int64_t>(parts, 1, kMaxParts));
}

namespace {

thread_local bool t_inside_body = false;
thread_local int t_last_threaded_parts = 1;

// Workers wait for a job; each runs the parts whose index it owns. One job at a time.
class ThreadPool {
 public:
  static ThreadPool& instance() {
    static ThreadPool pool;
    return pool;
  }

  // False when another thread holds the pool: the caller then runs inline.
  bool try_acquire() { return busy_.try_lock(); }
  void release() { busy_.unlock(); }

  // Runs parts [1, parts) on workers while the caller runs part 0; call between try_acquire and
  // release.
  void run(int parts, const std::function<void(int)>& task) {
    {
      std::unique_lock lock(mutex_);
      while (static_cast<int>(workers_.size()) < parts - 1) {
        const int index = static_cast<int>(workers_.size()) + 1;
        workers_.emplace_back([this, index] { work(index); });
      }
      task_ = &task;
      parts_ = parts;
      pending_ = parts - 1;
      ++generation_;
    }
    wake_.notify_all();
    task(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
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

  void work(int index) {
    t_inside_body = true;  // a worker only ever runs bodies
    uint64_t seen = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= parts_) continue;
      const std::function<void(int)>* task = task_;
      lock.unlock();
      (*task)(index);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex busy_;  // held by the caller whose job owns the workers
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* task_ = nullptr;
  int parts_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace

void parallel_for(int64_t n, int parts, const std::function<void(Range)>& body) {
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
  if (parts > 1 && !t_inside_body && pool.try_acquire()) {
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

int last_threaded_parts() { return t_last_threaded_parts; }

}  // namespace posenc::optimized
