// The frequency domain: base >= 1 and every factor that divides ω >= 1/8, so ω <= 8 rad per
// position. Past it, angles outgrow the fp64 oracle's accuracy and ω can overflow a double (both
// found by fuzzing: a subnormal base, a llama3 factor of 6.5e-92).
#include <gtest/gtest.h>

#include <string>

#include "posenc/error.h"
#include "posenc/rope_frequencies.h"
#include "posenc/sinusoidal.h"

namespace posenc {
namespace {

std::string rejected_argument(const RopeScaling& s, double base = 10000, int64_t d = 8) {
  try {
    s.validate(d, base);
  } catch (const Error& e) {
    return e.argument();
  }
  return "";
}

TEST(Domain, BaseBelowOneIsRejected) {
  EXPECT_EQ(rejected_argument({}, 0.5), "base");
  EXPECT_EQ(rejected_argument({}, 1e-300), "base");
  EXPECT_EQ(rejected_argument({}, 1.0), "");
  float out[4];
  SinusoidalCall call{.out = view(out, DType::f32, {1, 4}), .base = 0.999};
  EXPECT_THROW(call.validate(), Error);
  call.base = 1;
  EXPECT_NO_THROW(call.validate());
}

TEST(Domain, FactorsThatDivideOmegaStopAtOneEighth) {
  using K = RopeScalingKind;
  for (K kind : {K::linear, K::yarn, K::llama3}) {
    RopeScaling s{.kind = kind, .factor = 0.125, .original_max_position = 4096};
    EXPECT_EQ(rejected_argument(s), "") << scaling_name(kind);
    s.factor = 0.124;
    EXPECT_EQ(rejected_argument(s), "scaling.factor") << scaling_name(kind);
  }
  EXPECT_EQ(rejected_argument({.kind = K::ntk, .alpha = 0.125}), "");
  EXPECT_EQ(rejected_argument({.kind = K::ntk, .alpha = 1e-92}), "scaling.alpha");
  RopeScaling longrope{.kind = K::longrope, .factor = 4, .original_max_position = 4096};
  longrope.short_factor = {1, 1, 1, 0.125};
  longrope.long_factor = {1, 0.1, 1, 1};
  EXPECT_EQ(rejected_argument(longrope), "scaling.long_factor[1]");
  // dynamic NTK only grows the base, and longrope's factor only sets the attention factor.
  EXPECT_EQ(rejected_argument({.kind = K::dynamic_ntk, .factor = 0.01, .max_position = 2048}), "");
  longrope.long_factor[1] = 1;
  longrope.factor = 0.01;
  EXPECT_EQ(rejected_argument(longrope), "");
}

}  // namespace
}  // namespace posenc
