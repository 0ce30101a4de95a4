// The exact-angle machinery shared by sinusoidal, rope_cache and rope: the frequency split, SinCos
// and AngleWalker (compiled here for this binary's static Highway target).
#include "optimized/angles.h"

#include <gtest/gtest.h>
#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "optimized/math-inl.h"

namespace posenc::optimized::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

TEST(Angles, SplitFrequenciesGiveExactProductsUpTo2To24) {
  std::mt19937_64 rng(3);
  for (double base : {10000.0, 500000.0, 1.7, 0.3}) {
    const Angles& a = rope_angles(256, base, RopeScaling{});
    for (int64_t i = 0; i < a.count; ++i) {
      ASSERT_EQ(a.hi[i] + a.lo[i], std::pow(base, -2.0 * static_cast<double>(i) / 256)) << i;
      for (int64_t p : {int64_t{1}, kMaxPosition - 1, kMaxPosition,
                        std::uniform_int_distribution<int64_t>(0, kMaxPosition)(rng)}) {
        const double hi = static_cast<double>(p) * a.hi[i], lo = static_cast<double>(p) * a.lo[i];
        // Exact: the double products equal the long-double ones (64-bit mantissa).
        EXPECT_EQ(static_cast<long double>(hi), static_cast<long double>(p) * a.hi[i]);
        EXPECT_EQ(static_cast<long double>(lo), static_cast<long double>(p) * a.lo[i]);
      }
    }
  }
}

// sinusoidal_angles answers a repeat from its own last key, so it must notice every other change to
// the thread's one memo: a rope call in between, another base (by one ulp), another width.
TEST(Angles, SinusoidalAnglesFollowEveryChangeOfParameters) {
  const auto expect_angles = [](const Angles& a, int64_t d, double base) {
    ASSERT_EQ(a.count, d / 2);
    for (int64_t i = 0; i < a.count; ++i)
      ASSERT_EQ(a.hi[i] + a.lo[i], std::pow(base, -2.0 * static_cast<double>(i) / d)) << i;
  };
  expect_angles(sinusoidal_angles(64, 1e4), 64, 1e4);
  expect_angles(sinusoidal_angles(64, 1e4), 64, 1e4);
  rope_angles(128, 5e5, RopeScaling{});
  expect_angles(sinusoidal_angles(64, 1e4), 64, 1e4);
  const double next_base = std::nextafter(1e4, 2e4);
  expect_angles(sinusoidal_angles(64, next_base), 64, next_base);
  expect_angles(sinusoidal_angles(32, next_base), 32, next_base);
  expect_angles(sinusoidal_angles(64, 1e4), 64, 1e4);
}

TEST(Angles, SinCosIsAccurateUpTo2To27Radians) {
  const hn::ScalableTag<double> d;
  const size_t N = hn::Lanes(d);
  std::mt19937_64 rng(5);
  std::vector<double> hi(N), lo(N), s(N), c(N);
  double worst = 0;
  for (int round = 0; round < 20000; ++round) {
    for (size_t lane = 0; lane < N; ++lane) {
      // An exact product pair p·ω_hi, p·ω_lo, as ForEachAngleSinCos makes them.
      const double omega = std::uniform_real_distribution<double>(0, 8)(rng);
      const double omega_hi = std::ldexp(std::round(std::ldexp(omega, 24)), -24);
      const double p =
          static_cast<double>(std::uniform_int_distribution<int64_t>(0, kMaxPosition)(rng));
      hi[lane] = p * omega_hi;
      lo[lane] = p * std::ldexp(std::round(std::ldexp(omega - omega_hi, 48)), -48);
    }
    hn::Vec<decltype(d)> vs, vc;
    SinCos(d, hn::LoadU(d, hi.data()), hn::LoadU(d, lo.data()), vs, vc);
    hn::StoreU(vs, d, s.data());
    hn::StoreU(vc, d, c.data());
    for (size_t lane = 0; lane < N; ++lane) {
      const long double angle = static_cast<long double>(hi[lane]) + lo[lane];
      worst = std::max(worst, static_cast<double>(std::fabs(s[lane] - sinl(angle))));
      worst = std::max(worst, static_cast<double>(std::fabs(c[lane] - cosl(angle))));
    }
  }
  // long double's own angle reduction is good to about 2⁻⁶⁴·θ ≈ 2⁻³⁷ at θ = 2²⁷; ours is within it.
  EXPECT_LE(worst, std::ldexp(1.0, -36)) << "worst " << worst;
  std::printf("SinCos worst absolute error vs long double: 2^%.1f\n", std::log2(worst));
}

// Past kMaxVectorAngle (ω up to 1/base = 100 here, so θ up to 2³⁰·⁴ at 2²⁴) each lane is libm's:
// every lane's sin and cos against long double, whose θ = p·hi + p·lo is good to 2⁻³² there.
TEST(Angles, ForEachAngleSinCosPastTheVectorRange) {
  const hn::ScalableTag<double> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const Angles& angles = rope_angles(64, 0.01, RopeScaling{});
  for (int64_t p : {kMaxPosition, kMaxPosition - 12345}) {
    ASSERT_FALSE(angles.vector_range(p));
    ASSERT_EQ(angles.padded() % N, 0);
    std::vector<double> s(angles.padded()), c(angles.padded());
    ForEachAngleSinCos(d, angles, p, 0, angles.padded(), [&](int64_t i, auto vs, auto vc) {
      hn::StoreU(vs, d, s.data() + i);
      hn::StoreU(vc, d, c.data() + i);
    });
    for (int64_t i = 0; i < angles.padded(); ++i) {
      const double pd = static_cast<double>(p);
      const long double angle = static_cast<long double>(pd * angles.hi[i]) + pd * angles.lo[i];
      EXPECT_NEAR(s[i], sinl(angle), 0x1p-30) << "p=" << p << " i=" << i;
      EXPECT_NEAR(c[i], cosl(angle), 0x1p-30) << "p=" << p << " i=" << i;
    }
  }
}

// Positions with consecutive runs and breaks.
std::vector<int64_t> packed_positions(int64_t n) {
  std::vector<int64_t> p(n);
  for (int64_t t = 0; t < n; ++t) p[t] = t < 50 ? kMaxPosition - 49 + t : (t < 90 ? t - 50 : 7 * t);
  if (n > 120) p[120] = p[119] + 1;  // one more short run
  return p;
}

TEST(AngleWalker, StepsStayAccurateAndAnyStartGivesTheSameBits) {
  const hn::ScalableTag<double> d;
  const Angles& angles = rope_angles(64, 10000.0, RopeScaling{});
  const int64_t n = 160, width = angles.padded();
  const std::vector<int64_t> positions = packed_positions(n);
  const auto position = [&](int64_t t) { return positions[t]; };
  auto scratch = hwy::AllocateAligned<double>(4 * width);
  // One pass from item 0: the reference bits, and accuracy against long double.
  std::vector<double> sin_ref(n * width), cos_ref(n * width);
  AngleWalker walker(d, angles, scratch.get());
  double worst = 0;
  for (int64_t t = 0; t < n; ++t) {
    walker.At(t, position);
    std::memcpy(&sin_ref[t * width], walker.sin(), width * sizeof(double));
    std::memcpy(&cos_ref[t * width], walker.cos(), width * sizeof(double));
    for (int64_t i = 0; i < angles.count; ++i) {
      const long double angle =
          static_cast<long double>(positions[t]) * (angles.hi[i] + angles.lo[i]);
      worst = std::max(worst, static_cast<double>(std::fabs(walker.sin()[i] - sinl(angle))));
      worst = std::max(worst, static_cast<double>(std::fabs(walker.cos()[i] - cosl(angle))));
    }
  }
  EXPECT_LE(worst, std::ldexp(1.0, -38)) << "worst " << worst;  // long double: p·ω to 2⁻⁴⁰
  // A part may begin at any item, inside a chain or not: same bits.
  for (int64_t start = 1; start < n; ++start) {
    AngleWalker part(d, angles, scratch.get());
    for (int64_t t = start; t < std::min(n, start + 20); ++t) {
      part.At(t, position);
      ASSERT_EQ(std::memcmp(part.sin(), &sin_ref[t * width], width * sizeof(double)), 0)
          << "part starting at " << start << ", item " << t;
      ASSERT_EQ(std::memcmp(part.cos(), &cos_ref[t * width], width * sizeof(double)), 0)
          << "part starting at " << start << ", item " << t;
    }
  }
}

// SoftmaxExp (math-inl.h, attention's weights) against exp in double over every 61st f32 in
// [−87, 0] and the edges: within 1 ulp of e^x, exactly 1 at 0, and 0 below −87 (e^x < 2⁻¹²⁵).
TEST(SoftmaxExp, IsWithinOneUlpOnItsRange) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto exp_of = [&](float x) { return hn::GetLane(SoftmaxExp(d, hn::Set(d, x))); };
  EXPECT_EQ(exp_of(0.0f), 1.0f);
  EXPECT_EQ(exp_of(-0.0f), 1.0f);
  for (float x : {-87.0001f, -88.0f, -103.9f, -1e30f, -std::numeric_limits<float>::infinity()})
    EXPECT_EQ(exp_of(x), 0.0f) << x;
  uint32_t bits;
  const float lowest = -87.0f;
  std::memcpy(&bits, &lowest, sizeof(bits));
  double worst = 0;
  float worst_x = 0;
  std::vector<float> xs(static_cast<size_t>(N)), ys(static_cast<size_t>(N));
  for (uint32_t b = 0x80000000u; b <= bits;) {
    for (int64_t i = 0; i < N; ++i, b = std::min<uint32_t>(b + 61, bits))
      std::memcpy(&xs[static_cast<size_t>(i)], &b, sizeof(float));
    hn::StoreU(SoftmaxExp(d, hn::LoadU(d, xs.data())), d, ys.data());
    for (int64_t i = 0; i < N; ++i) {
      const double exact = std::exp(static_cast<double>(xs[i]));
      const float f = static_cast<float>(exact);
      const double ulp = std::nextafter(f, 2.0f) - f;
      const double error = std::fabs(ys[i] - exact) / ulp;
      if (error > worst) worst = error, worst_x = xs[i];
    }
    if (b == bits) break;
  }
  std::printf("SoftmaxExp: worst %.3f ulp at x = %.9g\n", worst, worst_x);
  EXPECT_LE(worst, 1.0) << worst_x;
}

}  // namespace
}  // namespace posenc::optimized::HWY_NAMESPACE
