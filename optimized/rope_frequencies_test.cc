// The optimized rope frequencies against the defining properties of each scaling
// (reference-values.md and Hugging Face's modeling_rope_utils.py).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "optimized/optimized.h"
#include "posenc/error.h"

namespace posenc::optimized {
namespace {

struct Result {
  std::vector<double> omega;
  double factor = 0;
};

Result frequencies(int64_t d, double base, const RopeScaling& scaling) {
  Result r{std::vector<double>(d / 2, -1.0), -1.0};
  rope_frequencies().front().run({.rotary_dim = d,
                                  .base = base,
                                  .scaling = scaling,
                                  .inv_freq = view(r.omega.data(), DType::f64, {d / 2}),
                                  .attention_factor = view(&r.factor, DType::f64, {1})});
  return r;
}

double unscaled(int64_t i, int64_t d, double base) {
  return std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
}

TEST(OptimizedRopeFrequencies, NoneIsTheGeometricSeries) {
  const Result r = frequencies(128, 10000, {});
  EXPECT_EQ(r.omega[0], 1.0);
  EXPECT_EQ(r.factor, 1.0);
  for (int64_t i = 1; i < 64; ++i) {
    EXPECT_NEAR(r.omega[i] / r.omega[i - 1], std::pow(10000.0, -2.0 / 128), 1e-15);
  }
  EXPECT_NEAR(r.omega[63], std::pow(10000.0, -126.0 / 128), 1e-18);
}

TEST(OptimizedRopeFrequencies, LinearDividesByTheFactor) {
  const Result r = frequencies(64, 10000, {.kind = RopeScalingKind::linear, .factor = 4});
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(r.omega[i], unscaled(i, 64, 10000) / 4);
}

TEST(OptimizedRopeFrequencies, NtkScalesTheBase) {
  const Result r = frequencies(64, 10000, {.kind = RopeScalingKind::ntk, .alpha = 8});
  const double base = 10000 * std::pow(8.0, 64.0 / 62.0);
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(r.omega[i], unscaled(i, 64, base));
}

TEST(OptimizedRopeFrequencies, DynamicNtkIsUnscaledUpToMaxPositionThenGrowsTheBase) {
  RopeScaling s{.kind = RopeScalingKind::dynamic_ntk, .factor = 4, .max_position = 2048};
  for (int64_t seq_len : {0, 100, 2048}) {
    s.seq_len = seq_len;
    const Result r = frequencies(64, 10000, s);
    for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(r.omega[i], unscaled(i, 64, 10000)) << seq_len;
  }
  s.seq_len = 4096;  // base' = base · (4·2 − 3)^(64/62)
  const Result r = frequencies(64, 10000, s);
  for (int64_t i = 1; i < 32; ++i) {
    EXPECT_NEAR(r.omega[i] / unscaled(i, 64, 10000 * std::pow(5.0, 64.0 / 62.0)), 1, 4e-16);
  }
}

TEST(OptimizedRopeFrequencies, YarnKeepsFastDimsInterpolatesSlowOnesAndScalesAttention) {
  const RopeScaling s{.kind = RopeScalingKind::yarn, .factor = 16, .original_max_position = 4096};
  const Result r = frequencies(128, 10000, s);
  // corr(n) = 128·ln(4096/(2πn))/(2 ln 10000): lo = ⌊corr(32)⌋ = 20, hi = ⌈corr(1)⌉ = 46.
  for (int64_t i = 0; i <= 20; ++i) EXPECT_EQ(r.omega[i], unscaled(i, 128, 10000)) << i;
  for (int64_t i = 46; i < 64; ++i) EXPECT_EQ(r.omega[i], unscaled(i, 128, 10000) / 16) << i;
  const double ramp = (33.0 - 20) / (46 - 20);  // i = 33, inside the ramp
  EXPECT_NEAR(r.omega[33] / unscaled(33, 128, 10000), ramp / 16 + (1 - ramp), 1e-15);
  EXPECT_NEAR(r.factor, 0.1 * std::log(16.0) + 1, 1e-15);
  RopeScaling both = s;
  both.mscale = 0.707;
  both.mscale_all_dim = 0.707;
  EXPECT_EQ(frequencies(128, 10000, both).factor, 1.0);
}

TEST(OptimizedRopeFrequencies, Llama3BandsFollowTheWavelength) {
  const RopeScaling s{.kind = RopeScalingKind::llama3,
                      .factor = 8,
                      .original_max_position = 8192,
                      .low_freq_factor = 1,
                      .high_freq_factor = 4};
  const Result r = frequencies(128, 500000, s);
  int kept = 0, divided = 0, smoothed = 0;
  for (int64_t i = 0; i < 64; ++i) {
    const double omega = unscaled(i, 128, 500000), wavelength = 2 * std::numbers::pi / omega;
    if (wavelength < 2048) {
      EXPECT_EQ(r.omega[i], omega) << i;
      ++kept;
    } else if (wavelength > 8192) {
      EXPECT_EQ(r.omega[i], omega / 8) << i;
      ++divided;
    } else {
      EXPECT_GT(r.omega[i], omega / 8) << i;
      EXPECT_LT(r.omega[i], omega) << i;
      ++smoothed;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(smoothed, 0);
  EXPECT_EQ(r.factor, 1.0);
}

TEST(OptimizedRopeFrequencies, LongropePicksFactorsBySequenceLength) {
  RopeScaling s{.kind = RopeScalingKind::longrope,
                .factor = 32,
                .original_max_position = 4096,
                .short_factor = std::vector<double>(8, 1.0),
                .long_factor = std::vector<double>(8, 4.0)};
  s.seq_len = 4096;
  Result r = frequencies(16, 10000, s);
  for (int64_t i = 0; i < 8; ++i) EXPECT_NEAR(r.omega[i], unscaled(i, 16, 10000), 1e-18);
  s.seq_len = 4097;
  r = frequencies(16, 10000, s);
  for (int64_t i = 0; i < 8; ++i) EXPECT_NEAR(r.omega[i], unscaled(i, 16, 10000) / 4, 1e-18);
  EXPECT_NEAR(r.factor, std::sqrt(1 + std::log(32.0) / std::log(4096.0)), 1e-15);
}

TEST(OptimizedRopeFrequencies, LongropeFactorsMayMakeOmegaSubnormal) {
  // Base 1e10, d = 16: ω_7 / 1e300 = 1.8e-309 is subnormal, and ext_7 · base^(14/16) = 7.5e308
  // overflows: the quotient must not become 0.
  const RopeScaling s{.kind = RopeScalingKind::longrope,
                      .original_max_position = 4096,
                      .short_factor = std::vector<double>(8, 1e300),
                      .long_factor = std::vector<double>(8, 1e300)};
  const Result r = frequencies(16, 1e10, s);
  for (int64_t i = 0; i < 8; ++i) {
    const double expected = unscaled(i, 16, 1e10) / 1e300;
    EXPECT_DOUBLE_EQ(r.omega[i], expected) << i;  // within 4 ulps, subnormal ones included
    EXPECT_GT(r.omega[i], 0) << i;
  }
}

TEST(OptimizedRopeFrequencies, ExplicitAttentionFactorWins) {
  const Result r = frequencies(32, 10000,
                               {.kind = RopeScalingKind::yarn,
                                .factor = 4,
                                .original_max_position = 64,
                                .attention_factor = 0.5});
  EXPECT_EQ(r.factor, 0.5);
}

TEST(OptimizedRopeFrequencies, RejectsBadScalingBeforeWriting) {
  std::vector<double> omega(4, -1.0);
  double factor = -1;
  try {
    rope_frequencies().front().run({.rotary_dim = 8,
                                    .scaling = {.kind = RopeScalingKind::linear, .factor = 0},
                                    .inv_freq = view(omega.data(), DType::f64, {4}),
                                    .attention_factor = view(&factor, DType::f64, {1})});
    FAIL() << "accepted factor 0";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "scaling.factor");
  }
  for (double w : omega) EXPECT_EQ(w, -1.0);
  EXPECT_EQ(factor, -1.0);
}

}  // namespace
}  // namespace posenc::optimized
