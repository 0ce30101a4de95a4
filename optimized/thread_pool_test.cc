#include "optimized/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "posenc/error.h"

namespace posenc::optimized {
namespace {

TEST(Partition, CoversEveryItemOnceInOrderWithBalancedSizes) {
  for (int64_t n : {0, 1, 2, 3, 5, 7, 8, 63, 64, 65, 1000, 4097}) {
    for (int parts : {1, 2, 3, 4, 7, 8, 13, 64, 256}) {
      int64_t next = 0, smallest = n, largest = 0;
      for (int i = 0; i < parts; ++i) {
        const Range r = partition(n, parts, i);
        ASSERT_EQ(r.begin, next) << "n=" << n << " parts=" << parts << " part " << i;
        ASSERT_GE(r.end, r.begin);
        smallest = std::min(smallest, r.end - r.begin);
        largest = std::max(largest, r.end - r.begin);
        next = r.end;
      }
      EXPECT_EQ(next, n) << "n=" << n << " parts=" << parts;
      EXPECT_LE(largest - smallest, 1) << "n=" << n << " parts=" << parts;
    }
  }
}

TEST(ParallelFor, RunsEveryItemExactlyOnceOnAtMostOneThreadPerPart) {
  for (int64_t n : {1, 2, 3, 10, 100, 1001}) {
    for (int parts : {1, 2, 3, 7, 16}) {
      std::vector<std::atomic<int>> hits(n);
      std::vector<std::thread::id> owner(n);
      parallel_for(n, parts, [&](Range r) {
        for (int64_t i = r.begin; i < r.end; ++i) {
          hits[i]++;
          owner[i] = std::this_thread::get_id();
        }
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << "n=" << n << " parts=" << parts;
      const int used = static_cast<int>(std::min<int64_t>(parts, n));
      EXPECT_EQ(last_threaded_parts(), used);
      EXPECT_EQ(owner[0], std::this_thread::get_id());  // part 0 runs on the caller
      std::vector<std::thread::id> threads(owner.begin(), owner.end());
      std::sort(threads.begin(), threads.end());
      EXPECT_LE(std::unique(threads.begin(), threads.end()) - threads.begin(), used);
    }
  }
}

TEST(ParallelFor, WorkersTakePartsWhileTheCallerIsBusy) {
  // Part 0 waits until some other thread has run another part: proof the pool really runs parts
  // concurrently (it would time out if only the caller ran them).
  std::atomic<bool> other_ran{false};
  std::atomic<bool> timed_out{false};
  parallel_for(4, 4, [&](Range r) {
    if (r.begin != 0) {
      other_ran = true;
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!other_ran) {
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        return;
      }
      std::this_thread::yield();
    }
  });
  EXPECT_FALSE(timed_out);
}

TEST(ParallelFor, BackToBackAndIdleCallsWithEveryPartCountCoverEverything) {
  // Calls come back to back (workers still spinning) and after pauses longer than the spin (they
  // sleep), with part counts that grow and shrink, so a worker late for one job meets the next:
  // each item must still run exactly once, and a lost wake-up would hang (the ctest timeout).
  constexpr int64_t kItems = 97;
  for (int round = 0; round < 600; ++round) {
    const int parts = 2 + round % 7;
    std::vector<std::atomic<int>> hits(kItems);
    parallel_for(kItems, parts, [&](Range r) {
      for (int64_t i = r.begin; i < r.end; ++i) ++hits[i];
    });
    for (int64_t i = 0; i < kItems; ++i)
      ASSERT_EQ(hits[i], 1) << "round " << round << " item " << i;
    if (round % 50 == 49) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

TEST(ParallelFor, EmptyRangeRunsOnePartOfNothing) {
  int calls = 0;
  parallel_for(0, 4, [&](Range r) {
    EXPECT_EQ(r.begin, r.end);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST(ParallelFor, NestedCallsRunInlineAndCoverEverything) {
  constexpr int64_t kOuter = 6, kInner = 50;
  std::vector<std::atomic<int>> hits(kOuter * kInner);
  parallel_for(kOuter, 3, [&](Range outer) {
    for (int64_t i = outer.begin; i < outer.end; ++i) {
      const std::thread::id self = std::this_thread::get_id();
      parallel_for(kInner, 4, [&](Range inner) {
        EXPECT_EQ(std::this_thread::get_id(), self);  // nested: inline on this thread
        for (int64_t j = inner.begin; j < inner.end; ++j) hits[i * kInner + j]++;
      });
      EXPECT_EQ(last_threaded_parts(), 1);
    }
  });
  for (auto& h : hits) ASSERT_EQ(h, 1);
}

TEST(ParallelFor, ConcurrentCallersEachGetTheirOwnResult) {
  constexpr int kCallers = 4, kRounds = 50;
  constexpr int64_t kItems = 1000;
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < kRounds; ++round) {
        std::vector<int64_t> out(kItems, -1);
        parallel_for(kItems, 3, [&](Range r) {
          for (int64_t i = r.begin; i < r.end; ++i) out[i] = i * (c + 1);
        });
        for (int64_t i = 0; i < kItems; ++i) failures += out[i] != i * (c + 1);
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures, 0);
}

TEST(ParallelFor, RethrowsTheLowestPartsExceptionAfterAllPartsRan) {
  std::vector<std::atomic<int>> ran(8);
  try {
    parallel_for(8, 8, [&](Range r) {
      ran[r.begin]++;
      if (r.begin == 5) throw std::runtime_error("part 5");
      if (r.begin == 2) throw std::runtime_error("part 2");
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 2");
  }
  for (auto& r : ran) EXPECT_EQ(r, 1);
  // The pool is still usable.
  std::atomic<int> sum{0};
  parallel_for(4, 4, [&](Range r) { sum += static_cast<int>(r.begin); });
  EXPECT_EQ(sum, 0 + 1 + 2 + 3);
}

TEST(PlanParts, SmallWorkStaysOnTheCallingThread) {
  EXPECT_EQ(plan_parts(8, 1, 1e9), 1);  // one item cannot be split
  EXPECT_EQ(plan_parts(8, 1000, 1), 1);
  EXPECT_EQ(plan_parts(8, 1000, 2 * kAwakeMinPartNanos / 1000 * 0.99), 1);
  EXPECT_EQ(plan_parts(8, 1000, 2 * kMinPartNanos / 1000 * 0.99, kMinPartNanos), 1);
}

TEST(PlanParts, LargeWorkUsesTheRequestedThreadsCappedByWork) {
  EXPECT_EQ(plan_parts(7, 1 << 20, 1000), 7);
  EXPECT_EQ(plan_parts(1, 1 << 20, 1000), 1);
  EXPECT_EQ(plan_parts(64, 100, 3 * kMinPartNanos / 100, kMinPartNanos), 3);
  EXPECT_EQ(plan_parts(64, 100, 3 * kAwakeMinPartNanos / 100, kAwakeMinPartNanos), 3);
  EXPECT_EQ(plan_parts(4, 3, 1e9), 3);  // never more parts than items
  EXPECT_EQ(plan_parts(1000, 1 << 20, 1e6), kMaxParts);
}

TEST(PlanParts, SplitsFinerOnlyWhenTheHandOffIsFast) {
  constexpr int64_t kLongAgo = int64_t{1} << 40;
  EXPECT_TRUE(detail::hands_off_fast(2, 1, kLongAgo, false));  // a worker spins for part 1
  EXPECT_TRUE(detail::hands_off_fast(3, 2, kLongAgo, false));
  EXPECT_FALSE(detail::hands_off_fast(3, 1, kLongAgo, false));  // part 2 would wait for a wake-up
  EXPECT_FALSE(detail::hands_off_fast(2, 0, kLongAgo, false));  // an isolated call: no wake-up
  EXPECT_FALSE(detail::hands_off_fast(2, 0, 10'000'000, false));
  EXPECT_TRUE(detail::hands_off_fast(2, 0, 1000, false));  // back to back: wakes them for the next
  EXPECT_FALSE(detail::hands_off_fast(2, 1, 1000, true));  // oversubscribed: nobody spins
}

TEST(PlanParts, MarksACallItSplitsLessThanItCould) {
  const double nanos = 2.4 * kAwakeMinPartNanos / 1000;  // 2.4 awake parts, under 2 sleeping ones
  ASSERT_EQ(plan_parts(2, 1000, nanos, kMinPartNanos), 1);
  ASSERT_EQ(plan_parts(2, 1000, nanos, kAwakeMinPartNanos), 2);
  // After 5 ms without a call the workers sleep and the call is declined (unless the VM has not
  // yet run a worker to its sleep): either way the mark says which.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int parts = plan_parts(2, 1000, nanos);
  EXPECT_EQ(detail::t_declined, parts == 1) << parts << " parts";
  parallel_for(1000, parts, [](Range) {});
  EXPECT_FALSE(detail::t_declined);
}

TEST(PlanParts, ADeclinedCallRecordsWhenItEnds) {
  const auto now = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  detail::t_declined = true;
  int64_t before = 0;
  parallel_for(1, 1, [&](Range) { before = now(); });
  const int64_t after = now();
  EXPECT_FALSE(detail::t_declined);
  EXPECT_GE(detail::declined_call_ended(), before);  // at the call's end, not its start
  EXPECT_LE(detail::declined_call_ended(), after);
}

TEST(PlanParts, ZeroThreadsReadsTheEnvironment) {
  ASSERT_EQ(setenv("POSENC_NUM_THREADS", "3", 1), 0);
  EXPECT_EQ(plan_parts(0, 1 << 20, 1000), 3);
  ASSERT_EQ(unsetenv("POSENC_NUM_THREADS"), 0);
}

TEST(PlanParts, NegativeThreadsIsABadArgumentEvenForSmallWork) {
  for (int64_t items : {int64_t{1}, int64_t{1} << 20}) {
    try {
      plan_parts(-1, items, 1000);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.argument(), "threads");
    }
  }
}

}  // namespace
}  // namespace posenc::optimized
