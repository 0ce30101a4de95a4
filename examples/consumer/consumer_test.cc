// A user's GoogleTest suite holding its own kernel to posenc's properties with posenc::check,
// built against the installed tree (ctest install.consumer).
#include <gtest/gtest.h>
#include <posenc/properties/check.h>

#include <cmath>

namespace {

using posenc::SinusoidalCall;

// The user's kernel: out = x + PE[positions], PE[p, 2i] = sin(p·ω_i), PE[p, 2i+1] = cos(p·ω_i),
// ω_i = base^(-2i/d). Angle is the type the angle p·ω is formed in.
template <class Angle>
void my_sinusoidal(const SinusoidalCall& c) {
  c.validate();  // posenc's own argument checks: posenc::Error naming the argument, nothing written
  const int64_t tokens = c.out.shape[0], d = c.out.shape[1];
  for (int64_t t = 0; t < tokens; ++t) {
    const auto p = static_cast<Angle>(
        c.positions ? posenc::load_index(*c.positions, t * c.positions->strides[0]) : t);
    for (int64_t j = 0; j < d; ++j) {
      const auto omega = static_cast<Angle>(std::pow(c.base, -2.0 * (j / 2) / d));
      const Angle angle = p * omega;
      const double pe = j % 2 ? std::cos(angle) : std::sin(angle);
      const double x = c.x ? posenc::load(*c.x, t * c.x->strides[0] + j * c.x->strides[1]) : 0.0;
      posenc::store(c.out, t * c.out.strides[0] + j * c.out.strides[1], x + pe);
    }
  }
}

posenc::check::Options options(const char* name) {
  posenc::check::Options o;
  o.name = name;
  o.variants = posenc::variant::f32 | posenc::variant::strided | posenc::variant::in_place |
               posenc::variant::sinusoidal_add | posenc::variant::sinusoidal_positions;
  o.bound = 1;
  o.run.cases = 100;
  return o;
}

TEST(MySinusoidal, HoldsPosencsProperties) {
  const auto result = posenc::check::sinusoidal(my_sinusoidal<double>, options("double_angles"));
  EXPECT_TRUE(result.passed()) << result.text();
  EXPECT_EQ(result.report.impl, "sinusoidal/double_angles");
  EXPECT_GT(result.report.cases(), 0);
}

TEST(MySinusoidal, FloatAnglesAreCaught) {
  const auto result = posenc::check::sinusoidal(my_sinusoidal<float>, options("float_angles"));
  EXPECT_FALSE(result.passed());
  EXPECT_NE(result.text().find("sinusoidal.differential FAILED for sinusoidal/float_angles"),
            std::string::npos)
      << result.text();
  // The reproduce value it prints replays that one failing case.
  const posenc::harness::PropertyResult* failed = nullptr;
  for (const auto& r : result.report.results)
    if (r.failed() && !failed) failed = &r;
  ASSERT_NE(failed, nullptr);
  auto replay = options("float_angles");
  replay.reproduce = failed->reproduce;
  const auto again = posenc::check::sinusoidal(my_sinusoidal<float>, replay);
  EXPECT_FALSE(again.passed());
  EXPECT_EQ(again.report.cases(), 1);
}

}  // namespace
