// Calls found by fuzzing, or by generalizing a fuzz finding, that the corpus cannot carry
// compactly: each runs through every registered implementation (fuzz/corpus/ holds the rest).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "properties/decode.h"

namespace posenc::harness {
namespace {

constexpr int64_t kHuge = int64_t{1} << 62;

// Every available implementation that supports `call` must run it without throwing.
template <class Call>
void expect_every_impl_runs(const Call& call) {
  for (const Impl<Call>& impl : implementations<Call>()) {
    if (!impl.unavailable_reason().empty() || !supports(impl, call)) continue;
    EXPECT_NO_THROW(impl.run(call)) << impl.name << " on " << describe(call);
  }
}

// fuzz/corpus/sinusoidal/regression-empty-call-huge-d: no token, so nothing to write, but a
// model dim of 2⁶² made the optimized kernel size a frequency table by it (std::length_error).
// Its rope siblings: no token (no row) with a rotary dim of 2⁶².
TEST(FuzzRegression, EmptyCallsWithHugeDimsWriteNothingAndDoNotThrow) {
  SinusoidalCall sinusoidal{.out = view(nullptr, DType::f32, {0, kHuge})};
  ASSERT_NO_THROW(sinusoidal.validate());
  expect_every_impl_runs(sinusoidal);

  RopeCacheCall cache{.rotary_dim = kHuge,
                      .cos = view(nullptr, DType::f32, {0, kHuge / 2}),
                      .sin = view(nullptr, DType::f32, {0, kHuge / 2})};
  ASSERT_NO_THROW(cache.validate());
  expect_every_impl_runs(cache);

  int64_t position = 0;
  RopeCall rope{.q = view(nullptr, DType::f32, {0, 1, kHuge}),
                .q_out = view(nullptr, DType::f32, {0, 1, kHuge}),
                .positions = view(&position, DType::i64, {0}),
                .rotary_dim = kHuge};
  ASSERT_NO_THROW(rope.validate());
  expect_every_impl_runs(rope);
}

}  // namespace
}  // namespace posenc::harness
