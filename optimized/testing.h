// GoogleTest helpers shared by the optimized kernels' unit tests: every target against the
// reference, and bitwise determinism across thread counts.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "optimized/thread_pool.h"
#include "properties/harness.h"

namespace posenc::optimized {

// The family's entries: the dispatched one first, then one per target, down to a fallback that
// runs anywhere.
template <class Call>
void expect_every_target_listed(const std::vector<Impl<Call>>& impls, const std::string& family) {
  ASSERT_GE(impls.size(), 3u);  // dispatched + at least one SIMD target + the fallback
  EXPECT_EQ(impls.front().name, family + "/optimized");
  const std::string& last = impls.back().name;
  EXPECT_TRUE(last == family + "/hwy:EMU128" || last == family + "/hwy:SCALAR") << last;
  EXPECT_EQ(impls.back().unavailable_reason(), "");
}

// Whether this CPU runs `impl`. A target it lacks (AVX-512 on an AVX2 machine) cannot run here:
// it is skipped, and said so once per test program. The dispatched entry and the fallback run
// everywhere (expect_every_target_listed).
template <class Call>
bool runs_here(const Impl<Call>& impl) {
  const std::string why = impl.unavailable_reason();
  if (why.empty()) return true;
  static std::set<std::string> told;
  if (told.insert(impl.name).second)
    std::printf("[ skipped  ] %s: %s\n", impl.name.c_str(), why.c_str());
  return false;
}

// The entries of `impls` this CPU runs (runs_here), in order: what a test loops over. They keep
// the dispatched entry and the fallback, which run everywhere: without them a loop could test
// nothing and pass.
template <class Call>
std::vector<Impl<Call>> runnable(std::vector<Impl<Call>> impls) {
  if (impls.size() < 2) {  // a family lists its dispatched entry and at least the fallback
    ADD_FAILURE() << impls.size() << " entries";
    return impls;
  }
  const std::string first = impls.front().name, last = impls.back().name;
  std::erase_if(impls, [](const Impl<Call>& impl) { return !runs_here(impl); });
  EXPECT_TRUE(impls.size() >= 2 && impls.front().name == first && impls.back().name == last)
      << first << " or " << last << " does not run here";
  return impls;
}

// Every entry of `impls` this CPU runs against the reference, within its bound. With `print`,
// each entry's worst error (in the family's unit) and element count go to stdout.
template <class Call>
void expect_every_target_matches(const std::vector<Impl<Call>>& impls,
                                 const harness::Problem<Call>& problem, bool print = false) {
  for (const auto& impl : runnable(impls)) {  // which fails the test without both ends
    const harness::Outcome o = harness::differential(impl, problem);
    EXPECT_TRUE(o.ok) << impl.name << " " << problem.label << ": " << o.failure;
    EXPECT_GT(o.comparison.checked, 0) << problem.label;
    if (print) {
      std::printf("[ worst    ] %s %s: %g (bound %g) over %lld elements\n", impl.name.c_str(),
                  problem.label.c_str(), o.comparison.worst, o.comparison.bound,
                  static_cast<long long>(o.comparison.checked));
    }
  }
}

// The bits of a call's outputs, in logical order (f32, or the 16 bits of bf16 and f16).
template <class Call>
std::vector<uint32_t> output_bits(const Call& call) {
  std::vector<uint32_t> bits;
  for (const Tensor& t : harness::outputs(call)) {
    const size_t size = dtype_size(t.dtype) == 2 ? 2 : 4;
    harness::for_each_offset(t, [&](int64_t offset) {
      uint32_t b = 0;
      std::memcpy(&b, static_cast<const char*>(t.data) + offset * dtype_size(t.dtype), size);
      bits.push_back(b);
    });
  }
  return bits;
}

// `impl` gives the same bits for each thread count, and really runs that many parts.
template <class Call>
void expect_bitwise_for_thread_counts(const Impl<Call>& impl, const harness::Problem<Call>& problem,
                                      std::initializer_list<int> thread_counts = {1, 2, 3, 7}) {
  std::vector<uint32_t> first;
  for (int threads : thread_counts) {
    harness::Arena arena;
    Call call = problem.build(arena);
    call.threads = threads;
    impl.run(call);
    EXPECT_EQ(last_threaded_parts(), threads) << problem.label << ": must really run threaded";
    if (first.empty()) {
      first = output_bits(call);
    } else {
      EXPECT_TRUE(output_bits(call) == first) << problem.label << ", " << threads << " threads";
    }
  }
}

// Every entry of `impls` this CPU runs gives the reference's bits (for large problems: no tolerance
// model).
template <class Call>
void expect_every_target_bitwise(const std::vector<Impl<Call>>& impls,
                                 const harness::Problem<Call>& problem) {
  harness::Arena ref_arena;
  const Call expected = problem.build(ref_arena);
  reference_impl<Call>().run(expected);
  const std::vector<uint32_t> want = output_bits(expected);
  for (const auto& impl : runnable(impls)) {
    harness::Arena arena;
    const Call got = problem.build(arena);
    impl.run(got);
    EXPECT_TRUE(output_bits(got) == want) << impl.name << " " << problem.label;
  }
}

}  // namespace posenc::optimized
