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
  ASSERT_EQ(bands.size(), 75u);  // [0, 1], [1, 2], ..., [2^23, 2^24] in f32, bf16 and f16
  EXPECT_EQ(bands.front().lo, 0);
  EXPECT_EQ(bands[24].hi, kMaxPosition);
  for (size_t i = 0; i < bands.size(); ++i) {
    const DType dtype = i < 25 ? DType::f32 : i < 50 ? DType::bf16 : DType::f16;
    EXPECT_EQ(bands[i].dtype, dtype) << i;
    EXPECT_TRUE(bands[i].ok) << bands[i].lo << ": " << bands[i].failure;
    EXPECT_EQ(bands[i].worst, 0);
  }
  const auto rope = error_by_position(reference_impl<RopeCall>());
  EXPECT_EQ(rope.size(), 75u);
  for (const auto& band : rope) EXPECT_EQ(band.worst, 0) << band.lo;
  const auto alibi = error_by_position(reference_impl<AlibiCall>());
  EXPECT_EQ(alibi.size(), 75u);
  for (const auto& band : alibi) EXPECT_TRUE(band.ok && band.worst == 0) << band.lo << band.failure;
  const auto t5 = error_by_position(reference_impl<T5Call>());
  EXPECT_EQ(t5.size(), 75u);
  for (const auto& band : t5) EXPECT_TRUE(band.ok && band.worst == 0) << band.lo << band.failure;
  for (const auto& band : rope) EXPECT_EQ(band.worst, 0) << band.lo;
}

TEST(ErrorByPosition, ShowsWhereFloatAnglesBreak) {
  const Impl<SinusoidalCall> impl{.name = "sinusoidal/float_angles",
                                  .variants = kAllVariants,
                                  .bound = 1,
                                  .run = float_angle_sinusoidal};
  auto bands = error_by_position(impl);
  ASSERT_EQ(bands.size(), 75u);
  bands.resize(25);                              // f32's
  EXPECT_TRUE(bands[0].ok) << bands[0].failure;  // positions 0 and 1: exact angles
  EXPECT_FALSE(bands.back().ok);
  EXPECT_GT(bands.back().worst, 1e4 * std::max(bands[1].worst, 1.0));
  const auto env = envelopes(bands, impl.bound);
  ASSERT_EQ(env.size(), 1u);
  EXPECT_GE(env[0].meets_up_to, 1);
  EXPECT_LT(env[0].meets_up_to, kMaxPosition);
  ASSERT_FALSE(env[0].needs.empty());
  EXPECT_EQ(env[0].needs.back().up_to, kMaxPosition);
  EXPECT_EQ(env[0].needs.back().bound, bands.back().worst);
}

// Bands of one dtype with the worst errors of ggml's float running-product angles (issue 16).
std::vector<PositionBand> ggml_like_bands() {
  std::vector<PositionBand> bands;
  for (int64_t lo = 0, hi = 1; hi <= kMaxPosition; lo = hi, hi *= 2) {
    const double worst = hi <= 8      ? 0.5
                         : hi <= 4096 ? 2.9e3 * double(hi) / 4096
                                      : 9e6 * double(hi) / kMaxPosition;
    bands.push_back({lo, hi, worst, worst <= 1, worst <= 1 ? "" : "out of bound", DType::f32});
  }
  return bands;
}

TEST(Envelope, SaysUpToWhereTheBoundHoldsAndWhatLongerPositionsNeed) {
  const auto env = envelopes(ggml_like_bands(), Bound(1));
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0].meets_up_to, 8);
  EXPECT_EQ(
      describe(env[0]),
      "meets bound 1 up to 2^3; needs 2.9e+03 up to 2^12, 7e+04 up to 2^17, 9e+06 up to 2^24");
}

TEST(Envelope, ABandThatFailedWithinTheBoundHoldsNone) {
  // A NaN or a throw fails a band whose measured worst may be small: no bound makes it hold.
  std::vector<PositionBand> bands = {{0, 1, 0, true, "", DType::bf16},
                                     {1, 2, 0, false, "threw: boom", DType::bf16}};
  const auto env = envelopes(bands, Bound(1, 3, std::nullopt));
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0].dtype, DType::bf16);
  EXPECT_EQ(env[0].bound, 3);
  EXPECT_EQ(env[0].meets_up_to, 1);
  EXPECT_FALSE(env[0].complete);
  EXPECT_EQ(describe(env[0]), "meets bound 3 up to 2^0; needs inf up to 2^1 (measured no further)");
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
