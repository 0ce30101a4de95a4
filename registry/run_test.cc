// posenc::run and posenc::reference::run (posenc/run.h), every family on its smoke problems:
// run() gives the bits of the registry's "<family>/optimized" entry, which supports every one of
// them; reference::run() the bits of "<family>/reference".
#include "posenc/run.h"

#include <gtest/gtest.h>

#include <string>

#include "posenc/registry.h"
#include "properties/harness.h"

namespace posenc {
namespace {

template <class Call>
const Impl<Call>* optimized_entry() {
  const std::string name = std::string(family_name(Call::kFamily)) + "/optimized";
  for (const auto& impl : implementations<Call>())
    if (impl.name == name) return &impl;
  return nullptr;
}

// Runs `entry` and `direct` on two builds of `problem`; bound 0: the same bits.
template <class Call, class Direct>
harness::Comparison same_bits(const harness::Problem<Call>& problem, const Impl<Call>& entry,
                              Direct direct) {
  harness::Arena expected_arena, got_arena;
  const Call expected = problem.build(expected_arena);
  entry.run(expected);
  const Call got = problem.build(got_arena);
  direct(got);
  return harness::compare_outputs(problem, expected, got, 0);
}

template <class Call>
class Run : public testing::Test {};
using Families = AllCalls::apply<testing::Types>;
TYPED_TEST_SUITE(Run, Families);

TYPED_TEST(Run, IsTheOptimizedEntry) {
  using Call = TypeParam;
  // A family without an optimized kernel yet runs its reference (posenc/run.h).
  const Impl<Call>* optimized = optimized_entry<Call>();
  const Impl<Call>& entry = optimized ? *optimized : reference_impl<Call>();
  const auto problems = harness::smoke_problems<Call>();
  ASSERT_FALSE(problems.empty());
  for (const auto& problem : problems) {
    harness::Arena arena;
    EXPECT_TRUE(supports(entry, problem.build(arena))) << entry.name << ", " << problem.label;
    const auto c = same_bits(problem, entry, [](const Call& call) { run(call); });
    EXPECT_TRUE(c.ok) << problem.label << " against " << entry.name << ": " << c.describe();
  }
}

TYPED_TEST(Run, ReferenceRunIsTheReference) {
  using Call = TypeParam;
  for (const auto& problem : harness::smoke_problems<Call>()) {
    const auto c =
        same_bits(problem, reference_impl<Call>(), [](const Call& call) { reference::run(call); });
    EXPECT_TRUE(c.ok) << problem.label << ": " << c.describe();
  }
}

TEST(Run, BadInputIsAnErrorNamingTheArgument) {
  float out[4] = {7, 7, 7, 7};
  SinusoidalCall call;
  call.out = view(out, DType::f32, {1, 4});
  call.base = -1;
  EXPECT_THROW(run(call), Error);
  EXPECT_THROW(reference::run(call), Error);
  for (float v : out) EXPECT_EQ(v, 7);
}

}  // namespace
}  // namespace posenc
