// posenc::check runs a user's callable through the same properties as `posenc validate`.
#include "properties/check.h"

#include <gtest/gtest.h>

#include <cmath>

#include "properties/selftest.h"

namespace posenc {
namespace {

check::Options few_cases(const std::string& name) {
  check::Options o;
  o.name = name;
  o.run.cases = 30;
  return o;
}

TEST(Check, TheReferenceRopePasses) {
  const Impl<RopeCall>& reference = reference_impl<RopeCall>();
  const auto result = check::rope(reference.run, few_cases("mine"));
  EXPECT_TRUE(result.passed()) << result.text();
  EXPECT_EQ(result.report.impl, "rope/mine");
  EXPECT_EQ(result.report.results.size(), harness::properties<RopeCall>().size());
}

TEST(Check, EveryBrokenRopeFailsItsProperty) {
  for (const auto& broken : harness::broken_implementations<RopeCall>()) {
    check::Options o = few_cases("broken");
    o.variants = broken.impl.variants;
    o.bound = broken.impl.bound;
    o.threaded = broken.impl.threaded;
    o.property = broken.caught_by;
    const auto result = check::rope(broken.impl.run, o);
    EXPECT_FALSE(result.passed()) << broken.impl.name << " (" << broken.bug << ")";
    EXPECT_NE(result.text().find(broken.caught_by + " FAILED"), std::string::npos) << result.text();
  }
}

// The reference sinusoidal, then every finite bf16 output `steps` steps of its last bit up:
// `steps` ulps of the output's magnitude, in the family's unit ulp(1 + |x|) at most 2·steps (an
// output that rounded up into the binade above 1 + |x|); f32 and f16 stay exact.
template <int steps>
void bf16_steps_off(const SinusoidalCall& call) {
  reference_impl<SinusoidalCall>().run(call);
  if (call.out.dtype != DType::bf16) return;
  for (int64_t t = 0; t < call.out.shape[0]; ++t)
    for (int64_t i = 0; i < call.out.shape[1]; ++i) {
      const int64_t at = call.out.offset(t, i);
      const double v = load(call.out, at);
      if (std::isfinite(v) && std::fabs(v) < 1e38) call.out.as<uint16_t>()[at] += steps;
    }
}

check::Options differential_only(const std::string& name) {
  check::Options o = few_cases(name);
  o.run.cases = 60;
  o.property = "differential";
  return o;
}

TEST(Check, AStatedBf16BoundIsTheOneBf16OutputsAreHeldTo) {
  // 2 ulps of most outputs: more than 1 unit, at most 4.
  const auto held_to_one = check::sinusoidal(bf16_steps_off<2>, differential_only("off"));
  EXPECT_FALSE(held_to_one.passed()) << held_to_one.text();
  check::Options o = differential_only("off");
  o.bound_bf16 = 4;
  const auto stated = check::sinusoidal(bf16_steps_off<2>, o);
  EXPECT_TRUE(stated.passed()) << stated.text();
  EXPECT_EQ(stated.report.bounds.of(DType::bf16), 4);
  EXPECT_EQ(stated.report.bounds.of(DType::f16), kLowPrecisionBound);
}

TEST(Check, ABoundAsLargeAsTheOutputsIsMeaninglessNotAPass) {
  check::Options o = differential_only("anything_goes");
  o.bound = 1 << 23;  // f32: one unit is at least 2^-23 of the magnitude it measures
  const auto result = check::sinusoidal(reference_impl<SinusoidalCall>().run, o);
  EXPECT_FALSE(result.passed()) << result.text();
  EXPECT_EQ(result.report.verdict(),
            "FAIL: meaningless bound (f32 bound 8.38861e+06 >= 2^23 units, the outputs' own "
            "magnitude)");
  o.bound = (1 << 23) - 1;
  EXPECT_TRUE(check::sinusoidal(reference_impl<SinusoidalCall>().run, o).passed());
  o.bound = 1;
  o.bound_f16 = 1024;  // f16: 11 significant bits
  EXPECT_NE(check::sinusoidal(reference_impl<SinusoidalCall>().run, o)
                .report.meaningless_bound()
                .find("f16 bound 1024 >= 2^10"),
            std::string::npos);
}

TEST(Check, TheTextReportShowsBandsEnvelopeAndPeerTolerances) {
  check::Options o = differential_only("exact");
  const auto result = check::sinusoidal(reference_impl<SinusoidalCall>().run, o);
  ASSERT_TRUE(result.passed()) << result.text();
  harness::ImplReport report = result.report;
  report.bands = harness::error_by_position(reference_impl<SinusoidalCall>());
  const std::string text = harness::format_properties(report);
  EXPECT_NE(text.find("worst error by position band"), std::string::npos) << text;
  EXPECT_NE(text.find("f32: meets bound 1 up to 2^24\n"), std::string::npos) << text;
  EXPECT_NE(text.find("bf16: meets bound 1 up to 2^24\n"), std::string::npos) << text;
  // The reference is exact, so it is within every peer's tolerance.
  EXPECT_NE(text.find("vLLM bf16 (atol 0.001 rtol 0.016): would pass"), std::string::npos) << text;
  EXPECT_NE(text.find("XNNPACK f32 (relative 0.0001): would pass"), std::string::npos) << text;
}

TEST(Check, APeerToleranceIsJudgedFromTheDifferentialsErrors) {
  // 3 bf16 steps at the bottom of a binade are 2.3% of the value: past vLLM's 1e-3 + 1.6% from
  // values of 0.15 up.
  check::Options o = differential_only("off");
  o.bound_bf16 = 6;
  const auto result = check::sinusoidal(bf16_steps_off<3>, o);
  const std::string text = harness::format_peers(result.report);
  EXPECT_NE(text.find("vLLM bf16 (atol 0.001 rtol 0.016): would FAIL"), std::string::npos) << text;
  EXPECT_NE(text.find("FlashInfer f16 (atol 0.001 rtol 0.001): would pass"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace posenc
