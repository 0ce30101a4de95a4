// posenc::check runs a user's callable through the same properties as `posenc validate`.
#include "properties/check.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace posenc
