// target_impls: one entry per compiled target, unavailable ones say so and never run.
#include "optimized/targets.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace posenc::optimized {
namespace {

struct Call {
  int* ran;
};

void simd_kernel(int* ran) { *ran = 1; }
void fallback_kernel(int* ran) { *ran = 2; }
void run(const Call& call, void (*kernel)(int*)) { kernel(call.ran); }

TEST(TargetImpls, ListsEveryCompiledTargetAndDispatchesToTheBestSupported) {
  // NEON stands for a target this x86 CPU cannot run; a null entry is a target not compiled.
  const TargetTable<void(int*)> table(
      {{HWY_NEON, &simd_kernel}, {HWY_AVX3_DL, nullptr}, {HWY_SCALAR, &fallback_kernel}});
  ASSERT_EQ(table.compiled().size(), 2u);
  const auto impls = target_impls<Call>("fam", 7, 2.5, true, table, run);
  ASSERT_EQ(impls.size(), 3u);
  EXPECT_EQ(impls[0].name, "fam/optimized");
  EXPECT_EQ(impls[2].name, "fam/hwy:SCALAR");
  for (const auto& impl : impls) {
    EXPECT_EQ(impl.variants, 7u);
    EXPECT_EQ(impl.bound, 2.5);
    EXPECT_TRUE(impl.threaded);
  }

  int ran = 0;
  impls[0].run({&ran});  // dispatch skips the target this CPU lacks
  EXPECT_EQ(ran, 2);

  EXPECT_NE(impls[1].unavailable_reason(), "");  // said, never silent
  ran = 0;
  EXPECT_THROW(impls[1].run({&ran}), std::runtime_error);
  EXPECT_EQ(ran, 0);  // and never ran

  EXPECT_EQ(impls[2].unavailable_reason(), "");
  impls[2].run({&ran});
  EXPECT_EQ(ran, 2);
}

TEST(TargetImpls, TheFallbackIsAlwaysSupported) {
  EXPECT_TRUE(cpu_supports(HWY_SCALAR));
  EXPECT_TRUE(cpu_supports(HWY_EMU128));
  EXPECT_FALSE(cpu_supports(HWY_NEON));  // an Arm target on x86
}

}  // namespace
}  // namespace posenc::optimized
