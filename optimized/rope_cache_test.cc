// The optimized rope_cache kernels against a straightforward long-double loop, on every target.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "optimized/optimized.h"
#include "optimized/testing.h"
#include "optimized/thread_pool.h"
#include "properties/compare.h"
#include "properties/testing.h"

namespace posenc::optimized {
namespace {

using harness::Arena;
using harness::Layout;
using harness::ulp_f32;

// Worst |got − a·cos(p·ω)| (and sin) over a table, in ulp_f32(a), against long double.
double worst_error(const float* cos, const float* sin, int64_t first_row, int64_t rows,
                   int64_t half, double base, double a) {
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      const double omega = std::pow(base, -2.0 * static_cast<double>(i) / (2.0 * half));
      const long double angle = static_cast<long double>(first_row + r) * omega;
      worst = std::max(worst, static_cast<double>(std::fabs(cos[r * half + i] - a * cosl(angle))));
      worst = std::max(worst, static_cast<double>(std::fabs(sin[r * half + i] - a * sinl(angle))));
    }
  }
  return worst / ulp_f32(a);
}

TEST(OptimizedRopeCache, EveryTargetIsAccurateOverTheWholeTableIncludingTails) {
  for (const auto& impl : runnable(rope_cache())) {
    for (int64_t rotary_dim : {2, 6, 18, 34, 128, 1100}) {  // vector tails; 1100: angle blocks
      const int64_t rows = 100;
      std::vector<float> cos(rows * rotary_dim / 2), sin(cos.size());
      impl.run({.rotary_dim = rotary_dim,
                .cos = view(cos.data(), DType::f32, {rows, rotary_dim / 2}),
                .sin = view(sin.data(), DType::f32, {rows, rotary_dim / 2})});
      // Rounded once from a value within ~2⁻⁴⁵ of exact: half an ulp, a hair more.
      EXPECT_LE(worst_error(cos.data(), sin.data(), 0, rows, rotary_dim / 2, 10000, 1), 0.5001)
          << impl.name << " rotary_dim=" << rotary_dim;
    }
  }
}

TEST(OptimizedRopeCache, AccurateAtRowsNear2To24WithTheAttentionFactor) {
  // The whole [2²⁴ + 1, 1] table (128 MiB for cos and sin), on the dispatched target: rows near
  // 2²⁴ come from fresh sin/cos every 16 rows and rotation steps between. (The other targets run
  // the same code on the small tables above, and rope_test checks them near 2²⁴.)
  const int64_t rows = kMaxPosition + 1;
  std::vector<float> cos(rows), sin(rows);
  const RopeScaling yarn{.kind = RopeScalingKind::yarn, .factor = 4, .original_max_position = 64};
  rope_cache().front().run({.rotary_dim = 2,
                            .scaling = yarn,
                            .cos = view(cos.data(), DType::f32, {rows, 1}),
                            .sin = view(sin.data(), DType::f32, {rows, 1})});
  const double a = 0.1 * std::log(4.0) + 1;  // yarn's attention factor; ω_0 = 1 stays
  const int64_t first = rows - 4000;
  EXPECT_LE(worst_error(&cos[first], &sin[first], first, 4000, 1, 10000, a), 0.5001);
}

TEST(OptimizedRopeCache, StridedViewsGiveTheContiguousAnswer) {
  for (const auto& impl : runnable(rope_cache())) {
    const int64_t rows = 37, half = 9;
    std::vector<float> cos(rows * half), sin(cos.size());
    impl.run({.rotary_dim = 2 * half,
              .cos = view(cos.data(), DType::f32, {rows, half}),
              .sin = view(sin.data(), DType::f32, {rows, half})});
    for (Layout layout : {Layout::padded, Layout::permuted}) {
      Arena arena;
      RopeCacheCall call{.rotary_dim = 2 * half,
                         .cos = arena.alloc(DType::f32, {rows, half}, layout),
                         .sin = arena.alloc(DType::f32, {rows, half}, layout)};
      arena.snapshot();
      impl.run(call);
      EXPECT_FALSE(arena.stray_write({call.cos, call.sin})) << impl.name;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < half; ++i) {
          ASSERT_EQ(load(call.cos, call.cos.offset(r, i)), cos[r * half + i]) << impl.name;
          ASSERT_EQ(load(call.sin, call.sin.offset(r, i)), sin[r * half + i]) << impl.name;
        }
      }
    }
    // vLLM's layout: one [rows, 2·half] buffer, cos in the first half of each row.
    std::vector<float> packed(rows * 2 * half);
    impl.run({.rotary_dim = 2 * half,
              .cos = view(packed.data(), DType::f32, {rows, half}, {2 * half, 1}),
              .sin = view(packed.data() + half, DType::f32, {rows, half}, {2 * half, 1})});
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_EQ(std::memcmp(&packed[r * 2 * half], &cos[r * half], half * 4), 0) << impl.name;
      EXPECT_EQ(std::memcmp(&packed[r * 2 * half + half], &sin[r * half], half * 4), 0);
    }
  }
}

TEST(OptimizedRopeCache, BitwiseIdenticalForEveryThreadCount) {
  const int64_t rows = 1 << 17, half = 64;  // 128K rows: parts start inside rotation-step chains
  std::vector<float> first_cos;
  for (int threads : {1, 2, 3, 7}) {
    std::vector<float> cos(rows * half), sin(cos.size());
    rope_cache().front().run(
        {.rotary_dim = 2 * half,
         .scaling = {.kind = RopeScalingKind::llama3, .factor = 8, .original_max_position = 8192},
         .cos = view(cos.data(), DType::f32, {rows, half}),
         .sin = view(sin.data(), DType::f32, {rows, half}),
         .threads = threads});
    EXPECT_EQ(last_threaded_parts(), threads);
    if (first_cos.empty()) first_cos = cos;
    EXPECT_EQ(std::memcmp(cos.data(), first_cos.data(), cos.size() * 4), 0) << threads;
  }
}

TEST(OptimizedRopeCache, RejectsBadScalingBeforeWriting) {
  for (const auto& impl : runnable(rope_cache())) {
    Arena arena;
    RopeCacheCall call{.rotary_dim = 8,
                       .scaling = {.kind = RopeScalingKind::linear, .factor = -1},
                       .cos = arena.alloc(DType::f32, {4, 4}),
                       .sin = arena.alloc(DType::f32, {4, 4})};
    harness::expect_rejected(impl.run, call, arena, "scaling.factor");
  }
}

}  // namespace
}  // namespace posenc::optimized
