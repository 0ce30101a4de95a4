// The optimized mrope kernels against the reference, on every target: the smoke problems (Qwen2-VL
// and Qwen3-VL shapes in every dtype), the edges of the coefficient table (libm angles, a
// subnormal attention factor), and thread counts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "optimized/optimized.h"
#include "optimized/testing.h"
#include "optimized/thread_pool.h"
#include "posenc/registry.h"
#include "properties/harness.h"

namespace posenc::optimized {
namespace {

using harness::Arena;

struct Shape {
  int64_t tokens = 9, heads = 3, head_dim = 128;
  std::array<int64_t, 3> section{16, 24, 24};
  MropeConvention convention = MropeConvention::sectioned;
  RopeLayout layout = RopeLayout::half_split;
  DType dtype = DType::f32;
  double base = 1000000;
  RopeScaling scaling;
  int64_t max_position = 1 << 20;
};

harness::Problem<MropeCall> problem(const Shape& s, uint64_t seed) {
  const std::string label = fmt::format(
      "{} tokens={} heads={} head_dim={} {} [{}, {}, {}] {} base={} {}", dtype_name(s.dtype),
      s.tokens, s.heads, s.head_dim, convention_name(s.convention), s.section[0], s.section[1],
      s.section[2], layout_name(s.layout), s.base, s.scaling.describe());
  return {label, [=](Arena& arena) {
            harness::Values values(seed);
            MropeCall call{.rotary_dim = 2 * (s.section[0] + s.section[1] + s.section[2]),
                           .mrope_section = s.section,
                           .convention = s.convention,
                           .layout = s.layout,
                           .base = s.base,
                           .scaling = s.scaling};
            call.q = arena.alloc(s.dtype, {s.tokens, s.heads, s.head_dim});
            values.fill(call.q, -3, 3);
            call.q_out = arena.alloc(s.dtype, {s.tokens, s.heads, s.head_dim});
            call.k = arena.alloc(s.dtype, {s.tokens, 1, s.head_dim});
            values.fill(*call.k, -3, 3);
            call.k_out = *call.k;
            call.positions = arena.alloc(DType::i32, {s.tokens, 3});
            values.fill_index(call.positions, 0, s.max_position);
            return call;
          }};
}

TEST(OptimizedMrope, EveryTargetIsListedAndTheFallbackRunsHere) {
  expect_every_target_listed(optimized::mrope(), "mrope");
}

TEST(OptimizedMrope, SmokeProblemsOnEveryTarget) {
  for (const auto& p : harness::smoke_problems<MropeCall>())
    expect_every_target_matches(optimized::mrope(), p, true);
}

TEST(OptimizedMrope, BothConventionsLayoutsAndDtypesOnEveryTarget) {
  uint64_t seed = 1;
  for (auto convention : {MropeConvention::sectioned, MropeConvention::interleaved})
    for (auto layout : {RopeLayout::half_split, RopeLayout::interleaved})
      for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
        Shape s{.convention = convention, .layout = layout, .dtype = dtype};
        if (convention == MropeConvention::interleaved) s.section = {24, 20, 20};
        expect_every_target_matches(optimized::mrope(), problem(s, seed++));
      }
}

TEST(OptimizedMrope, LibmAnglesAndOddSectionsOnEveryTarget) {
  // ω up to 8 (linear factor ⅛) at positions near 2²⁴: angles past the vector sin/cos range.
  Shape s{.head_dim = 40,
          .section = {3, 7, 10},
          .base = 2,
          .scaling = {.kind = RopeScalingKind::linear, .factor = 0.125},
          .max_position = kMaxPosition};
  expect_every_target_matches(optimized::mrope(), problem(s, 7));
  s.convention = MropeConvention::interleaved;
  s.section = {8, 6, 6};
  expect_every_target_matches(optimized::mrope(), problem(s, 8));
}

TEST(OptimizedMrope, SubnormalAttentionFactorIsComputedExactly) {
  for (double f : {0x1p-130, 0x1p-149}) {
    Shape s{.scaling = {.kind = RopeScalingKind::yarn,
                        .factor = 4,
                        .original_max_position = 4096,
                        .attention_factor = f}};
    expect_every_target_matches(optimized::mrope(), problem(s, 9));
  }
}

TEST(OptimizedMrope, BitwiseIdenticalForEveryThreadCount) {
  // Enough work for 7 parts (thread_pool.h); the table does not depend on the dtype, and rope's own
  // tests cover its bf16 and f16 paths' thread counts.
  Shape s{.tokens = 1280, .heads = 8, .convention = MropeConvention::interleaved};
  s.section = {24, 20, 20};
  for (const auto& impl : runnable(optimized::mrope())) {
    expect_bitwise_for_thread_counts(impl, problem(s, 11));
  }
}

}  // namespace
}  // namespace posenc::optimized
