#include "optimized/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
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

namespace {

// `threads` (resolved) capped at one part per item, at one per `min_part_nanos` of `work`, and at
// kMaxParts.
int parts_within(int64_t threads, int64_t items, double work, double min_part_nanos) {
  const int64_t by_work = static_cast<int64_t>(work / min_part_nanos);
  return static_cast<int>(
      std::clamp<int64_t>(std::min<int64_t>({threads, items, by_work}), 1, kMaxParts));
}

}  // namespace

int plan_parts(int requested_threads, int64_t items, double nanos_per_item, double min_part_nanos) {
  POSENC_REQUIRE(requested_threads >= 0, "threads", requested_threads,
                 "must be >= 0 (0 picks the default)");
  const double work = static_cast<double>(items) * nanos_per_item;
  // Below two parts' worth of work the answer is 1 whatever the thread count: skip the getenv.
  if (items < 2 || work < 2 * min_part_nanos) return 1;
  return parts_within(resolve_threads(requested_threads), items, work, min_part_nanos);
}

namespace {

std::atomic<bool> g_serial{false};
thread_local bool t_inside_body = false;
thread_local int t_last_threaded_parts = 1;

// Tells the core it is spinning, so its sibling (and power) is not starved.
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long a worker spins for the next job, and the caller for its parts to finish, before
// sleeping on a condition variable: waking a sleeping thread costs a median 20–40 µs on these VMs
// (p90 over 200 µs), a spinning one sees a job in well under a microsecond. Back-to-back calls
// (a model's layers) thus hand off fast, and an idle pool burns at most this much CPU per call.
constexpr int64_t kSpinNanos = 30'000;
// Spinning only pays while the spinner keeps its core. On an oversubscribed machine a spinning
// worker is preempted and then waits for the scheduler (milliseconds), where a sleeping one would
// have been woken at once: a spinner that sees a gap this long in its own clock, or a job posted
// this long ago, was not running, and the pool stops spinning for kBackoffNanos. Far above the
// 20–50 µs stalls a vCPU takes here while its thread runs alone (159 seen in 3 s of back-to-back
// calls, over 100 a second once the back-offs' own blind 10 ms are taken out; a 10 µs threshold
// mistook them for preemption and kept the pool parked most of the time), far below a
// scheduler's time slice.
constexpr int64_t kLateNanos = 200'000;
constexpr int64_t kBackoffNanos = 10'000'000;

int64_t now_nanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One job's parts: task(i) runs part i. A plain function and its context rather than a
// std::function, so posting a job allocates nothing.
struct PartTask {
  void (*run)(const void* context, int part);
  const void* context;
  void operator()(int part) const { run(context, part); }
};

// Workers wait for a job, then claim its parts one at a time; the caller runs part 0 and then
// claims any part no worker has started (a worker whose core is busy elsewhere does not hold the
// job up). Which thread runs a part never changes what the part computes. One job at a time.
//
// The job's generation, part count and next unclaimed part live in one atomic word, so a claim is
// one compare-exchange and a worker that wakes late for a finished job cannot claim a part of the
// next one. Sleepers are counted, and both sides of each wait use sequentially consistent
// operations (publish, then look for sleepers; announce sleeping, then look for the job), so no
// wake-up is lost and a call with every worker spinning makes no system call.
class ThreadPool {
 public:
  static ThreadPool& instance() {
    static ThreadPool pool;
    return pool;
  }

  // Workers started and not asleep.
  int awake_workers() const {
    return spawned_.load(std::memory_order_relaxed) - sleepers_.load(std::memory_order_relaxed);
  }

  // Whether nobody spins now: a spinner found it was not running (the machine is oversubscribed).
  bool backing_off(int64_t now) const { return now < spin_from_.load(std::memory_order_relaxed); }

  // When the last call that plan_parts declined to split finer ended, from any thread.
  int64_t declined_call_ended() const {
    return declined_call_ended_.load(std::memory_order_relaxed);
  }
  void note_declined_call_ended(int64_t now) {
    declined_call_ended_.store(now, std::memory_order_relaxed);
  }

  // False when another thread holds the pool: the caller then runs inline.
  bool try_acquire() { return busy_.try_lock(); }
  void release() { busy_.unlock(); }

  // Runs every part of `task`; call between try_acquire and release.
  void run(int parts, const PartTask& task) {
    while (static_cast<int>(workers_.size()) < parts - 1) {
      workers_.emplace_back([this] { work(); });
      spawned_.fetch_add(1, std::memory_order_relaxed);
    }
    task_.store(&task, std::memory_order_relaxed);
    finished_.store(0, std::memory_order_relaxed);
    const uint32_t job = ++generation_;
    posted_at_.store(now_nanos(), std::memory_order_relaxed);
    caller_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
    state_.store(pack(job, parts, 1));  // seq_cst: before the look for sleepers
    if (sleepers_.load() > 0) notify(wake_);
    task(0);
    for (int part; (part = claim(job)) >= 0;) {
      task(part);
      finish(parts);
    }
    // Parts still running on workers: spin, then sleep.
    const auto done = [&] { return finished_.load() == parts - 1; };
    if (!spin_until(done, /*worker=*/false)) {
      std::unique_lock lock(mutex_);
      caller_sleeping_.store(true);  // seq_cst: before done() looks at finished_
      done_.wait(lock, done);
      caller_sleeping_.store(false, std::memory_order_relaxed);
    }
    task_.store(nullptr, std::memory_order_relaxed);
  }

  ~ThreadPool() {
    stop_.store(true);
    state_.store(pack(generation_ + 1, 0, 0));
    notify(wake_);
    for (std::thread& t : workers_) t.join();
  }

 private:
  ThreadPool() = default;

  // state_: generation (bits 32–63), part count (16–31), next unclaimed part (0–15).
  static uint64_t pack(uint32_t generation, int parts, int next) {
    return uint64_t{generation} << 32 | static_cast<uint64_t>(parts) << 16 |
           static_cast<uint64_t>(next);
  }
  static uint32_t generation_of(uint64_t s) { return static_cast<uint32_t>(s >> 32); }

  // The next unstarted part of job `generation`, or −1 when none is left (or the job is over).
  int claim(uint32_t generation) {
    uint64_t s = state_.load(std::memory_order_acquire);
    for (;;) {
      const int parts = static_cast<int>(s >> 16 & 0xffff), next = static_cast<int>(s & 0xffff);
      if (generation_of(s) != generation || next >= parts) return -1;
      if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) return next;
    }
  }

  // A part other than the caller's own part 0 is done: the last one wakes a sleeping caller.
  void finish(int parts) {
    if (finished_.fetch_add(1) + 1 == parts - 1 && caller_sleeping_.load()) notify(done_);
  }

  // Locking the mutex orders the notification after a waiter's check of its condition.
  void notify(std::condition_variable& cv) {
    { std::lock_guard lock(mutex_); }
    cv.notify_all();
  }

  // Spins until ready() or kSpinNanos have passed (at once while backing off); returns ready().
  // A worker also stops spinning on the caller's core; the caller, always there, does not.
  template <class Ready>
  bool spin_until(Ready&& ready, bool worker) {
    int64_t last = now_nanos();
    if (last < spin_from_.load(std::memory_order_relaxed)) return ready();
    const int64_t deadline = last + kSpinNanos;
    for (int spin = 1;; ++spin) {
      if (ready()) return true;
      if (spin % 32 == 0) {
        const int64_t now = now_nanos();
        if (now - last > kLateNanos) back_off(now);
        // A woken worker often lands on its waker's core, where spinning only keeps the caller
        // from running: it sleeps at once instead.
        if (now - last > kLateNanos || now > deadline ||
            (worker && sched_getcpu() == caller_cpu_.load(std::memory_order_relaxed)))
          return ready();
        last = now;
      }
      relax();
    }
  }

  void back_off(int64_t now) { spin_from_.store(now + kBackoffNanos, std::memory_order_relaxed); }

  void work() {
    t_inside_body = true;  // a worker only ever runs bodies
    uint32_t seen = 0;
    for (;;) {
      const auto posted = [&] { return generation_of(state_.load()) != seen; };
      const int64_t waiting_since = now_nanos();
      if (spin_until(posted, /*worker=*/true)) {
        // Posted while this worker was spinning, yet seen late: it was not running.
        const int64_t now = now_nanos(), posted_at = posted_at_.load(std::memory_order_relaxed);
        if (posted_at > waiting_since && now - posted_at > kLateNanos) back_off(now);
      } else {
        std::unique_lock lock(mutex_);
        sleepers_.fetch_add(1);  // seq_cst: before posted() looks at state_
        wake_.wait(lock, posted);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
      if (stop_.load()) return;
      const uint64_t s = state_.load(std::memory_order_acquire);
      seen = generation_of(s);
      const int parts = static_cast<int>(s >> 16 & 0xffff);
      // A successful claim means the job is not over, so task_ is still its task.
      for (int part; (part = claim(seen)) >= 0;) {
        (*task_.load(std::memory_order_relaxed))(part);
        finish(parts);
      }
    }
  }

  std::mutex busy_;   // held by the caller whose job owns the workers
  std::mutex mutex_;  // only for sleeping and waking
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;  // touched by the caller holding busy_ only
  std::atomic<const PartTask*> task_{nullptr};
  std::atomic<uint64_t> state_{0};
  std::atomic<int> finished_{0};  // parts 1..parts−1 done
  std::atomic<int> sleepers_{0}, spawned_{0};
  std::atomic<bool> caller_sleeping_{false}, stop_{false};
  std::atomic<int64_t> posted_at_{0};  // steady-clock ns of the last job's post
  std::atomic<int64_t> spin_from_{0};  // no thread spins before this steady-clock ns
  std::atomic<int> caller_cpu_{-1};    // the core the last job was posted from
  uint32_t generation_ = 0;            // the caller's count of jobs posted
  // Steady-clock ns when the last call plan_parts declined ended (long ago at first).
  std::atomic<int64_t> declined_call_ended_{INT64_MIN / 2};
};

}  // namespace

int plan_parts(int requested_threads, int64_t items, double nanos_per_item) {
  const double work = static_cast<double>(items) * nanos_per_item;
  // Too little for two parts even while the workers spin, the common small call: no getenv and no
  // clock read (the four-argument form checks the thread count and answers 1).
  if (items < 2 || work < 2 * kAwakeMinPartNanos) {
    return plan_parts(requested_threads, items, nanos_per_item, kMinPartNanos);
  }
  const int64_t threads = resolve_threads(requested_threads);  // checks it, once
  const int parts =
      work < 2 * kMinPartNanos ? 1 : parts_within(threads, items, work, kMinPartNanos);
  const int finer = parts_within(threads, items, work, kAwakeMinPartNanos);
  if (finer == parts) return parts;
  ThreadPool& pool = ThreadPool::instance();
  const int64_t now = now_nanos();
  if (detail::hands_off_fast(finer, pool.awake_workers(), now - pool.declined_call_ended(),
                             pool.backing_off(now))) {
    return finer;
  }
  detail::t_declined = true;
  return parts;
}

namespace detail {

bool hands_off_fast(int parts, int awake_workers, int64_t nanos_since_declined, bool backing_off) {
  return !backing_off && (awake_workers >= parts - 1 || nanos_since_declined < kSpinNanos);
}

void note_declined_call_ended() {
  t_declined = false;
  ThreadPool::instance().note_declined_call_ended(now_nanos());
}

int64_t declined_call_ended() { return ThreadPool::instance().declined_call_ended(); }

void note_inline() { t_last_threaded_parts = 1; }

void run_parts(int64_t n, int parts, const std::function<void(Range)>& body) {
  parts = static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(parts, n), 1, kMaxParts));
  // Each part's exception, if any; on the stack for the usual part counts.
  std::array<std::exception_ptr, 8> few;
  std::vector<std::exception_ptr> many(parts > 8 ? parts : 0);
  std::exception_ptr* errors = parts > 8 ? many.data() : few.data();
  const auto run = [&](int index) {
    const bool outer = t_inside_body;
    t_inside_body = true;
    try {
      body(partition(n, parts, index));
    } catch (...) {
      errors[index] = std::current_exception();
    }
    t_inside_body = outer;
  };
  const PartTask task{
      [](const void* context, int index) { (*static_cast<const decltype(run)*>(context))(index); },
      &run};
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
  for (int i = 0; i < parts; ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
  }
}

}  // namespace detail

int last_threaded_parts() { return t_last_threaded_parts; }

void set_serial(bool serial) { g_serial.store(serial, std::memory_order_relaxed); }

}  // namespace posenc::optimized
