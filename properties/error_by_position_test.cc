#include "properties/error_by_position.h"

#include <gtest/gtest.h>

#include <cmath>

namespace posenc::harness {
namespace {

// Sinusoidal with the angle p·ω in float: right at small positions, wrong at long ones.
void float_angle_sinusoidal(const SinusoidalCall& call) {
  call.validate();
  const int64_t d = call.out.shape[1];
  for (int64_t t = 0; t < call.out.shape[0]; ++t)
    for (int64_t i = 0; i < d / 2; ++i) {
      const float omega = static_cast<float>(std::pow(call.base, -2.0 * i / d));
      const float angle = static_cast<float>(call.position(t)) * omega;
      const double x0 = call.x ? load(*call.x, call.x->offset(t, 2 * i)) : 0;
      const double x1 = call.x ? load(*call.x, call.x->offset(t, 2 * i + 1)) : 0;
      store(call.out, call.out.offset(t, 2 * i), x0 + std::sin(angle));
      store(call.out, call.out.offset(t, 2 * i + 1), x1 + std::cos(angle));
    }
}

TEST(ErrorByPosition, TheReferenceIsExactInEveryBand) {
  const auto bands = error_by_position(reference_impl<SinusoidalCall>());
  ASSERT_EQ(bands.size(), 25u);  // [0, 1], [1, 2], ..., [2^23, 2^24]
  EXPECT_EQ(bands.front().lo, 0);
  EXPECT_EQ(bands.back().hi, kMaxPosition);
  for (const auto& band : bands) {
    EXPECT_TRUE(band.ok) << band.lo << ": " << band.failure;
    EXPECT_EQ(band.worst, 0);
  }
  const auto rope = error_by_position(reference_impl<RopeCall>());
  EXPECT_EQ(rope.size(), 25u);
  for (const auto& band : rope) EXPECT_EQ(band.worst, 0) << band.lo;
}

TEST(ErrorByPosition, ShowsWhereFloatAnglesBreak) {
  const Impl<SinusoidalCall> impl{.name = "sinusoidal/float_angles",
                                  .variants = kAllVariants,
                                  .bound = 1,
                                  .run = float_angle_sinusoidal};
  const auto bands = error_by_position(impl);
  ASSERT_EQ(bands.size(), 25u);
  EXPECT_TRUE(bands[0].ok) << bands[0].failure;  // positions 0 and 1: exact angles
  EXPECT_FALSE(bands.back().ok);
  EXPECT_GT(bands.back().worst, 1e4 * std::max(bands[1].worst, 1.0));
}

TEST(ErrorByPosition, IsEmptyWithoutPositionsToVary) {
  const Impl<SinusoidalCall> table_only{.name = "sinusoidal/table",
                                        .variants = variant::f32,
                                        .bound = 0,
                                        .run = float_angle_sinusoidal};
  EXPECT_TRUE(error_by_position(table_only).empty());
  EXPECT_TRUE(error_by_position(reference_impl<AbsoluteCall>()).empty());
}

}  // namespace
}  // namespace posenc::harness
