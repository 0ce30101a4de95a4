// Uses its own properties/compare.h and posenc's harness, whose harness.h includes posenc's
// compare.h: if that include found this project's file instead, posenc::harness::Comparison and
// compare_scalar would be undeclared and neither harness.h nor this file would compile.
#include <posenc/properties/harness.h>

#include <cstdio>

#include "properties/compare.h"

int main() {
  static_assert(mine::kCompareVersion == 7);
  if (!posenc::harness::compare_scalar("x", 1.0, 1.0, 0, 1).ok) return 3;
  int cases = 0;
  for (const auto& problem : posenc::harness::smoke_problems<posenc::SinusoidalCall>()) {
    if (!posenc::harness::differential(posenc::reference_impl<posenc::SinusoidalCall>(), problem)
             .ok)
      return 1;
    ++cases;
  }
  std::printf("consumer_own_headers: %d cases passed\n", cases);
  return cases > 0 ? 0 : 2;
}
