// A small persistent thread pool with static partitioning. A kernel splits its items (tokens,
// rows) into contiguous parts whose bounds depend only on the item count and the part count, and
// computes every item the same way whichever part it falls in, so its output is bitwise identical
// for every thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

namespace posenc::optimized {

// Items [begin, end) of one part.
struct Range {
  int64_t begin = 0, end = 0;
};

// Part `index` of [0, n) split into `parts` contiguous ranges whose sizes differ by at most one.
Range partition(int64_t n, int parts, int index);

// A part must carry at least this much estimated work before a second thread is worth it while
// the pool's workers sleep. Measured here (pool/handoff rows, AMD EPYC VM): to a sleeping worker
// the caller pays ~4–6 µs (the wake-up system call) and the worker starts 20–35 µs later, so the
// caller then runs the part itself (the call costs its one-thread time plus those few µs). 16 µs
// per part bounds that loss to about a third of a part.
inline constexpr double kMinPartNanos = 16000;
// The same while the workers are awake (spinning after a job, when calls come back to back): a
// hand-off to a spinning worker costs 0.7–3.4 µs from post to join (pool/handoff/back_to_back:
// 1.5 µs on an Intel Xeon VM, as OpenMP's), so 5 µs per part bounds it to about a third too.
inline constexpr double kAwakeMinPartNanos = 5000;
// The largest number of parts a call uses (more threads than this would only add wake-ups).
inline constexpr int kMaxParts = 256;

// How many parts to split `items` into: `requested_threads` resolved by posenc::resolve_threads
// (0: POSENC_NUM_THREADS, else the hardware's concurrency), capped at one part per item, at
// kMaxParts, and at one part per `min_part_nanos` of estimated work (`nanos_per_item` each), so
// small problems run on the calling thread alone. Throws posenc::Error for a negative thread count.
int plan_parts(int requested_threads, int64_t items, double nanos_per_item, double min_part_nanos);

// plan_parts at kMinPartNanos per part, or at kAwakeMinPartNanos when that gives more parts and
// the pool hands off fast (detail::hands_off_fast): its workers are awake, or calls come back to
// back (the last call it declined, which ran on its caller alone because they slept, ended within
// a worker's spin; this one wakes them and the calls after it find them spinning), and it is not
// backing off (oversubscribed). An isolated small call never pays a wake-up. The choice never
// changes a kernel's output (bitwise identical for every part count).
int plan_parts(int requested_threads, int64_t items, double nanos_per_item);

// Runs body(partition(n, parts, i)) for every part i and returns when all are done. Part 0 runs on
// the calling thread, the others on the persistent pool (the caller takes any part no worker has
// started by the time it is free). If bodies throw, every part still runs
// and the exception of the lowest-index part that threw is rethrown. A call made from inside a
// body, or while another thread is using the pool, runs all its parts on the calling thread in
// order: same ranges, same results.
template <class Body>
void parallel_for(int64_t n, int parts, Body&& body);

// Parts the last parallel_for on this thread handed to the pool (1 when it ran inline); lets tests
// check that a determinism test really split its work.
int last_threaded_parts();

// While set, every parallel_for runs its parts in order on the calling thread: the same ranges and
// results, but no code path that depends on which thread ran a part or when. For reproducible
// fuzzing (fuzz/fuzz.h, POSENC_FUZZ_SERIAL=1); off by default.
void set_serial(bool serial);

namespace detail {
// plan_parts' test for its finer plan: `parts` parts hand off fast when `awake_workers` can take
// parts 1…parts − 1, or when the last call it declined ended `nanos_since_declined` ago, within a
// worker's spin time; never while the pool is `backing_off` (a spinner found it was not running:
// on an oversubscribed machine a hand-off waits for the scheduler).
bool hands_off_fast(int parts, int awake_workers, int64_t nanos_since_declined, bool backing_off);
// Whether plan_parts declined a finer plan on this thread and the call has not ended yet.
inline constinit thread_local bool t_declined = false;
void note_declined_call_ended();
// When the last declined call ended, in steady-clock nanoseconds since its epoch.
int64_t declined_call_ended();
void note_inline();
void run_parts(int64_t n, int parts, const std::function<void(Range)>& body);
}  // namespace detail

template <class Body>
void parallel_for(int64_t n, int parts, Body&& body) {
  if (parts <= 1 || n <= 1) {  // the common small call: no std::function, no allocation
    detail::note_inline();
    body(Range{0, n});
    if (detail::t_declined) detail::note_declined_call_ended();
    return;
  }
  detail::run_parts(n, parts, std::ref(body));
}

}  // namespace posenc::optimized
