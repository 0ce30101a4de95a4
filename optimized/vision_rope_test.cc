// The optimized vision_rope kernels against the reference, on every target: the smoke problems
// (Qwen2.5-VL, Pixtral and Llama 4 shapes in every dtype), every convention, axis order and pair
// layout, long positions, and thread counts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "optimized/optimized.h"
#include "optimized/testing.h"
#include "optimized/thread_pool.h"
#include "posenc/registry.h"
#include "properties/harness.h"

namespace posenc::optimized {
namespace {

using harness::Arena;

struct Shape {
  int64_t tokens = 9, heads = 3, head_dim = 80, rotary_dim = 80;
  VisionRopeConvention convention = VisionRopeConvention::axial;
  VisionAxisOrder order = VisionAxisOrder::row_first;
  int64_t offset = 0;
  RopeLayout layout = RopeLayout::half_split;
  DType dtype = DType::f32;
  double base = 10000;
  int64_t max_position = 1 << 12;
};

harness::Problem<VisionRopeCall> problem(const Shape& s, uint64_t seed) {
  const std::string label =
      fmt::format("{} tokens={} heads={} head_dim={} rotary_dim={} {} {} offset={} {} base={}",
                  dtype_name(s.dtype), s.tokens, s.heads, s.head_dim, s.rotary_dim,
                  convention_name(s.convention), axis_order_name(s.order), s.offset,
                  layout_name(s.layout), s.base);
  return {label, [=](Arena& arena) {
            harness::Values values(seed);
            VisionRopeCall call{.rotary_dim = s.rotary_dim,
                                .convention = s.convention,
                                .axis_order = s.order,
                                .position_offset = s.offset,
                                .layout = s.layout,
                                .base = s.base};
            call.q = arena.alloc(s.dtype, {s.tokens, s.heads, s.head_dim});
            values.fill(call.q, -3, 3);
            call.q_out = arena.alloc(s.dtype, {s.tokens, s.heads, s.head_dim});
            call.k = arena.alloc(s.dtype, {s.tokens, 1, s.head_dim});
            values.fill(*call.k, -3, 3);
            call.k_out = *call.k;
            call.positions = arena.alloc(DType::i32, {s.tokens, 2});
            values.fill_index(call.positions, std::max<int64_t>(0, -s.offset),
                              s.max_position - std::max<int64_t>(0, s.offset));
            return call;
          }};
}

TEST(OptimizedVisionRope, EveryTargetIsListedAndTheFallbackRunsHere) {
  expect_every_target_listed(optimized::vision_rope(), "vision_rope");
}

TEST(OptimizedVisionRope, SmokeProblemsOnEveryTarget) {
  for (const auto& p : harness::smoke_problems<VisionRopeCall>())
    expect_every_target_matches(optimized::vision_rope(), p, true);
}

TEST(OptimizedVisionRope, EveryConventionOrderLayoutAndDtypeOnEveryTarget) {
  uint64_t seed = 1;
  for (auto convention : {VisionRopeConvention::axial, VisionRopeConvention::pixtral})
    for (auto order : {VisionAxisOrder::row_first, VisionAxisOrder::column_first})
      for (auto layout : {RopeLayout::half_split, RopeLayout::interleaved})
        for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
          Shape s{.convention = convention, .order = order, .layout = layout, .dtype = dtype};
          if (order == VisionAxisOrder::column_first) s.offset = 1;
          expect_every_target_matches(optimized::vision_rope(), problem(s, seed++));
        }
}

TEST(OptimizedVisionRope, LongPositionsNegativeOffsetAndPartialRotationOnEveryTarget) {
  // Positions near 2²⁴ with base 1.0001 (every ω near 1), then pixtral, base 2, offset −5.
  Shape s{.head_dim = 44, .rotary_dim = 40, .base = 1.0001, .max_position = kMaxPosition};
  expect_every_target_matches(optimized::vision_rope(), problem(s, 7));
  s.convention = VisionRopeConvention::pixtral;
  s.base = 2;
  s.offset = -5;
  expect_every_target_matches(optimized::vision_rope(), problem(s, 8));
}

TEST(OptimizedVisionRope, InfiniteInputsWhereSinVanishesInF32OnEveryTarget) {
  // Base 1e300, d = 8: ω = 1, 1e−75, 1e−150, 1e−225, so sin θ of the last three pairs is below
  // f32's range. The reference's ∞·sin θ is ±∞; a sin rounded to 0 would make it NaN.
  const Shape s{.tokens = 5,
                .heads = 2,
                .head_dim = 10,
                .rotary_dim = 8,
                .layout = RopeLayout::interleaved,
                .base = 1e300};
  const harness::Problem<VisionRopeCall> finite = problem(s, 12);
  const harness::Problem<VisionRopeCall> infinite{
      finite.label + ", ±∞ in every pair's second element", [=](Arena& arena) {
        VisionRopeCall call = finite.build(arena);
        for (int64_t t = 0; t < s.tokens; ++t)
          for (int64_t h = 0; h < s.heads; ++h)
            for (int64_t i = 0; i < s.rotary_dim / 2; ++i)
              store(call.q, call.q.offset(t, h, 2 * i + 1), (t + h + i) % 2 ? INFINITY : -INFINITY);
        return call;
      }};
  expect_every_target_matches(optimized::vision_rope(), infinite);
}

TEST(OptimizedVisionRope, BitwiseIdenticalForEveryThreadCount) {
  // Enough work for 7 parts (thread_pool.h); rope's own tests cover its dtypes' thread counts.
  Shape s{.tokens = 1280,
          .heads = 8,
          .head_dim = 128,
          .rotary_dim = 128,
          .convention = VisionRopeConvention::pixtral};
  for (const auto& impl : runnable(optimized::vision_rope())) {
    expect_bitwise_for_thread_counts(impl, problem(s, 11));
  }
}

}  // namespace
}  // namespace posenc::optimized
