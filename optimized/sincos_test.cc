// SinCos (math-inl.h) on every Highway target this CPU runs. Each target compiles its own
// reduction and polynomials; sinusoidal's and rope's tests see them only through whole kernels,
// so a target whose SinCos broke would show up there as some family's failure, not as its own.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimized/sincos_test.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "optimized/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace posenc::optimized::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The worst absolute error of SinCos below 4π, where long double is exact to 2⁻⁶², so it sees the
// polynomials' own error (2⁻⁴⁶·⁸ for cos, 2⁻⁵⁰·² for sin, math-inl.h) plus the roundings, across
// every reduced r in [−π/2, π/2]: dense angles and the ones just past each multiple of π/2, where
// |r| is largest.
double SinCosWorstBelow4Pi() {
  const hn::ScalableTag<double> d;
  const size_t N = hn::Lanes(d);
  std::vector<double> angles;
  for (int i = 0; i <= 1 << 16; ++i) angles.push_back(4 * M_PI * i / (1 << 16));
  for (int q = 1; q < 8; ++q) {
    for (double eps : {-1e-9, -1e-12, 0.0, 1e-12, 1e-9}) angles.push_back(q * M_PI_2 + eps);
  }
  while (angles.size() % N != 0) angles.push_back(0);
  std::vector<double> s(N), c(N);
  double worst = 0;
  for (size_t i = 0; i < angles.size(); i += N) {
    hn::Vec<decltype(d)> vs, vc;
    SinCos(d, hn::LoadU(d, angles.data() + i), hn::Zero(d), vs, vc);
    hn::StoreU(vs, d, s.data());
    hn::StoreU(vc, d, c.data());
    for (size_t lane = 0; lane < N; ++lane) {
      const long double angle = angles[i + lane];
      worst = std::max(worst, static_cast<double>(std::fabs(s[lane] - sinl(angle))));
      worst = std::max(worst, static_cast<double>(std::fabs(c[lane] - cosl(angle))));
    }
  }
  return worst;
}

}  // namespace posenc::optimized::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <gtest/gtest.h>

#include <cstdio>

#include "optimized/targets.h"

namespace posenc::optimized {
namespace {

TEST(SinCos, PolynomialsAreWithin2ToMinus46OnEveryTarget) {
  const auto table = POSENC_TARGET_TABLE(SinCosWorstBelow4Pi);
  int checked = 0;
  for (const auto& entry : table.compiled()) {
    if (!cpu_supports(entry.target)) continue;
    const double worst = entry.fn();
    std::printf("%s: SinCos worst absolute error below 4 pi 2^%.2f\n",
                hwy::TargetName(entry.target), std::log2(worst));
    EXPECT_LE(worst, std::ldexp(1.0, -46)) << hwy::TargetName(entry.target) << " worst " << worst;
    ++checked;
  }
  EXPECT_GE(checked, 2) << "a SIMD target and the fallback, at least";
}

}  // namespace
}  // namespace posenc::optimized
#endif  // HWY_ONCE
