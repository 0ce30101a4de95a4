// Calls found by fuzzing, or by generalizing a fuzz finding, that the corpus cannot carry
// compactly: each runs through every registered implementation (fuzz/corpus/ holds the rest).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "fuzz/decode.h"

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

// fuzz/corpus/rope/regression-overflow-to-inf: Highway's EMU128 and SCALAR DemoteTo clamp values
// past the f32 range, and ∞ itself, to ±FLT_MAX where the reference (and x86) round to ±∞.
// Its siblings: x = ±∞ added to the sinusoidal table, a cos/sin cache scaled past f32 by an
// attention factor of 10³⁰⁰.
template <class Call>
void expect_every_impl_agrees(const Problem<Call>& problem) {
  for (const Impl<Call>& impl : implementations<Call>()) {
    Arena probe;
    if (!impl.unavailable_reason().empty() || !supports(impl, problem.build(probe))) continue;
    const Outcome outcome = differential(impl, problem);
    EXPECT_TRUE(outcome.ok) << impl.name << " on " << problem.label << ": " << outcome.failure;
  }
}

TEST(FuzzRegression, ValuesPastTheF32RangeRoundToInfinity) {
  const double edges[] = {INFINITY, -INFINITY, 0x1.fffffep127, -0x1.fffffep127, 1, -1, 0, 3e38};
  expect_every_impl_agrees<SinusoidalCall>({"x = ±inf, ±FLT_MAX", [&](Arena& arena) {
                                              SinusoidalCall c;
                                              c.out = arena.alloc(DType::f32, {3, 8});
                                              c.x = arena.alloc(DType::f32, {3, 8});
                                              int k = 0;
                                              fill(*c.x, [&] { return edges[k++ % 8]; });
                                              return c;
                                            }});
  expect_every_impl_agrees<RopeCacheCall>({"attention_factor = 1e300", [](Arena& arena) {
                                             RopeCacheCall c{.rotary_dim = 16};
                                             c.scaling.attention_factor = 1e300;
                                             c.cos = arena.alloc(DType::f32, {5, 8});
                                             c.sin = arena.alloc(DType::f32, {5, 8});
                                             return c;
                                           }});
}

}  // namespace
}  // namespace posenc::harness
