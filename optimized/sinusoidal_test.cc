// The optimized sinusoidal kernels against a straightforward long-double loop, on every target.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "optimized/optimized.h"
#include "optimized/testing.h"
#include "optimized/thread_pool.h"
#include "properties/compare.h"
#include "properties/testing.h"

namespace posenc::optimized {
namespace {

using harness::Arena;
using harness::Layout;
using harness::ulp_f32;

// PE[p, c] in long double (its angle error is p·2⁻⁶⁴ rad, far below an f32 ulp).
long double exact_pe(int64_t p, int64_t c, int64_t d, double base) {
  const double omega = std::pow(base, -2.0 * static_cast<double>(c / 2) / static_cast<double>(d));
  const long double angle = static_cast<long double>(p) * omega;
  return c % 2 == 0 ? sinl(angle) : cosl(angle);
}

struct Problem {
  int64_t tokens, d;
  double base = 10000.0;
  std::vector<float> x, out;
  std::vector<int64_t> positions;
  // Random positions in [max_position − 1000, max_position], or (consecutive) the run ending at
  // max_position, which takes the rotation-step path.
  Problem(int64_t tokens_, int64_t d_, int64_t max_position, uint64_t seed,
          bool consecutive = false)
      : tokens(tokens_), d(d_), x(tokens * d), out(tokens * d, -3.0f), positions(tokens) {
    std::mt19937_64 rng(seed);
    for (float& v : x) v = std::uniform_real_distribution<float>(-2, 2)(rng);
    for (int64_t t = 0; t < tokens; ++t) {
      positions[t] = consecutive ? max_position - (tokens - 1 - t)
                                 : std::uniform_int_distribution<int64_t>(max_position - 1000,
                                                                          max_position)(rng);
    }
  }
  SinusoidalCall call(int threads = 1) {
    return {.out = view(out.data(), DType::f32, {tokens, d}),
            .x = view(x.data(), DType::f32, {tokens, d}),
            .positions = view(positions.data(), DType::i64, {tokens}),
            .base = base,
            .threads = threads};
  }
  // Worst |out − (x + PE)| in ulp_f32(1 + |x|), the family's unit.
  double worst_error() const {
    double worst = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t c = 0; c < d; ++c) {
        const long double want = x[t * d + c] + exact_pe(positions[t], c, d, base);
        const double err = std::fabs(static_cast<double>(out[t * d + c] - want));
        worst = std::max(worst, err / ulp_f32(1 + std::fabs(x[t * d + c])));
      }
    }
    return worst;
  }
};

TEST(OptimizedSinusoidal, EveryTargetIsAccurateUpToPosition2To24) {
  // Rounded once from a near-exact double: within half an ulp of the output plus 2⁻²⁰ or so.
  for (const auto& impl : runnable(sinusoidal())) {
    for (int64_t d : {2, 6, 10, 34, 128, 130, 1100}) {  // vector tails; 1100: angle blocks
      Problem p(7, d, kMaxPosition, static_cast<uint64_t>(d));
      impl.run(p.call());
      EXPECT_LE(p.worst_error(), 0.5001) << impl.name << " d=" << d;
    }
  }
}

// Consecutive positions ending at 2²⁴: the rows at the end of each 64-row chain carry 63 rotation
// steps' drift (sinusoidal.cc's error budget: under 5·10⁻⁵ ulp before the final rounding).
TEST(OptimizedSinusoidal, EveryTargetIsAccurateAtTheEndOfRotationChains) {
  for (const auto& impl : runnable(sinusoidal())) {
    double worst = 0;
    for (int64_t d : {2, 34, 130, 1100}) {
      Problem p(192, d, kMaxPosition, static_cast<uint64_t>(d), /*consecutive=*/true);
      impl.run(p.call());
      worst = std::max(worst, p.worst_error());
    }
    std::printf("[ worst    ] %s chains to 2^24: %.6f ulp\n", impl.name.c_str(), worst);
    EXPECT_LE(worst, 0.5001) << impl.name;
  }
}

// The hardest arguments: with base 1 every ω is 1, so the angle is p itself; the p below are
// numerators of π's continued-fraction convergents and their multiples (p − kπ/2 from 4·10⁻³ down
// to 4·10⁻⁸: one of sin p, cos p tiny, the other ±1 − tiny) up to 2²⁴, and 2²⁴ − 1, 2²⁴; each is
// reached both as a fresh anchor (a run starting at p) and after 63 rotation steps (a run ending at
// p). Base 10⁹ adds ω down to 10⁻⁹·10^(9/d) (tiny angles), base 10⁴ the usual spread.
TEST(OptimizedSinusoidal, HardestArgumentsNearMultiplesOfHalfPi) {
  const std::vector<int64_t> hard = {
      1,      2,      3,      11,      22,      44,      355,      710,      103993,      104348,
      208341, 312689, 833719, 1146408, 4272943, 5419351, 10838702, 16777215, kMaxPosition};
  std::vector<int64_t> positions;
  for (int64_t h : hard) {
    for (int64_t k = 63; k >= 0; --k)
      positions.push_back(std::max<int64_t>(h - k, 0));  // ends at h
    for (int64_t k = 0; k < 64; ++k) positions.push_back(std::min(h + k, kMaxPosition));
  }
  const int64_t tokens = static_cast<int64_t>(positions.size());
  for (const auto& impl : runnable(sinusoidal())) {
    for (double base : {1.0, 1e4, 1e9})
      for (int64_t d : {2, 64}) {
        Problem p(tokens, d, kMaxPosition, 7);
        p.positions = positions;
        p.base = base;
        impl.run(p.call());
        EXPECT_LE(p.worst_error(), 0.5001) << impl.name << " base=" << base << " d=" << d;
      }
  }
}

TEST(OptimizedSinusoidal, TableWithoutXMatchesTheFormula) {
  for (const auto& impl : runnable(sinusoidal())) {
    const int64_t rows = 33, d = 22;
    std::vector<float> pe(rows * d);
    impl.run({.out = view(pe.data(), DType::f32, {rows, d})});
    for (int64_t p = 0; p < rows; ++p) {
      for (int64_t c = 0; c < d; ++c) {
        const double err = std::fabs(static_cast<double>(pe[p * d + c] - exact_pe(p, c, d, 1e4)));
        ASSERT_LE(err, 0.5001 * ulp_f32(1)) << impl.name << " PE[" << p << ", " << c << "]";
      }
    }
    EXPECT_EQ(pe[0], 0.0f);  // sin 0
    EXPECT_EQ(pe[1], 1.0f);  // cos 0
  }
}

TEST(OptimizedSinusoidal, StridedViewsAndInPlaceGiveTheContiguousAnswer) {
  for (const auto& impl : runnable(sinusoidal())) {
    Problem p(5, 12, 5000, 1);
    impl.run(p.call());
    const std::vector<float> want = p.out;
    for (Layout layout : {Layout::padded, Layout::permuted}) {
      Arena arena;
      SinusoidalCall call{.out = arena.alloc(DType::f32, {p.tokens, p.d}, layout),
                          .x = arena.alloc(DType::f32, {p.tokens, p.d}, layout),
                          .positions = arena.alloc(DType::i32, {p.tokens}, layout)};
      for (int64_t t = 0; t < p.tokens; ++t) {
        for (int64_t c = 0; c < p.d; ++c) store(*call.x, call.x->offset(t, c), p.x[t * p.d + c]);
        static_cast<int32_t*>(call.positions->data)[call.positions->offset(t)] =
            static_cast<int32_t>(p.positions[t]);
      }
      arena.snapshot();
      impl.run(call);
      EXPECT_FALSE(arena.stray_write({call.out})) << impl.name;
      for (int64_t t = 0; t < p.tokens; ++t) {
        for (int64_t c = 0; c < p.d; ++c) {
          ASSERT_EQ(load(call.out, call.out.offset(t, c)), want[t * p.d + c])
              << impl.name << " " << harness::layout_name(layout);
        }
      }
    }
    SinusoidalCall in_place = p.call();
    in_place.out = *in_place.x;
    impl.run(in_place);
    EXPECT_EQ(std::memcmp(p.x.data(), want.data(), want.size() * sizeof(float)), 0) << impl.name;
  }
}

// bf16 and f16 tables and adds (strided, in place and not, positions up to 2²⁴) on every target,
// within 1 ulp of the output dtype (kernel.h).
TEST(OptimizedSinusoidal, HalfPrecisionOnEveryTarget) {
  for (DType dtype : {DType::bf16, DType::f16})
    for (int mode = 0; mode < 3; ++mode) {  // table, add, add in place
      const harness::Problem<SinusoidalCall> problem{
          std::string(dtype_name(dtype)) + " mode " + std::to_string(mode),
          [=](harness::Arena& arena) {
            harness::Values values(5);
            const int64_t tokens = 9, d = 46;
            SinusoidalCall call{.out = arena.alloc(dtype, {tokens, d}, harness::Layout::padded)};
            if (mode > 0) {
              call.x = mode == 2 ? call.out : arena.alloc(dtype, {tokens, d});
              values.fill(*call.x, -3, 3);
              call.positions = arena.alloc(DType::i64, {tokens});
              values.fill_index(*call.positions, 0, kMaxPosition);
            }
            return call;
          }};
      expect_every_target_matches(sinusoidal(), problem);
    }
}

// Many bf16 and f16 rows on the vector path (contiguous; widths with and without a vector tail):
// tables of consecutive positions ending at 2²⁴ (the rotation-step path) and adds at random
// positions, within 1 ulp of the output dtype on every target; prints each target's worst error.
TEST(OptimizedSinusoidal, HalfPrecisionManyRowsWithinOneUlp) {
  for (DType dtype : {DType::bf16, DType::f16})
    for (int64_t d : {64, 46})
      for (bool add : {false, true}) {
        const harness::Problem<SinusoidalCall> problem{
            std::string(dtype_name(dtype)) + " d=" + std::to_string(d) + (add ? " add" : " table"),
            [=](harness::Arena& arena) {
              harness::Values values(31);
              const int64_t tokens = 1500;
              SinusoidalCall call{.out = arena.alloc(dtype, {tokens, d})};
              call.positions = arena.alloc(DType::i64, {tokens});
              if (add) {
                call.x = arena.alloc(dtype, {tokens, d});
                values.fill(*call.x, -3, 3);
                values.fill_index(*call.positions, 0, kMaxPosition);
              } else {
                for (int64_t t = 0; t < tokens; ++t)
                  static_cast<int64_t*>(call.positions->data)[t] = kMaxPosition - tokens + 1 + t;
              }
              return call;
            }};
        expect_every_target_matches(sinusoidal(), problem, /*print=*/true);
      }
}

// bf16 and f16 tables are x + PE rounded once: every cell is PE rounded to nearest even, except
// within 2⁻³⁸ of a midpoint between two neighbours (the double sum's own error). The cells within
// half an f32 ulp of a midpoint are those a double rounding through f32 (or a truncation to f32
// without round-to-odd's last bit) gets wrong; the table holds a few hundred of them.
TEST(OptimizedSinusoidal, HalfPrecisionIsRoundedOnce) {
  const int64_t tokens = 2048, d = 512;
  for (DType dtype : {DType::bf16, DType::f16}) {
    const int kept = dtype == DType::bf16 ? 7 : 10, least = dtype == DType::bf16 ? -126 : -14;
    for (const auto& impl : runnable(sinusoidal())) {
      std::vector<uint16_t> out(tokens * d);
      const Tensor table = view(out.data(), dtype, {tokens, d});
      impl.run({.out = table});
      int64_t checked = 0, hard = 0;
      for (int64_t p = 0; p < tokens; ++p) {
        for (int64_t c = 0; c < d; ++c) {
          const long double v = exact_pe(p, c, d, 1e4);
          const int e = std::max(std::ilogb(static_cast<double>(v)), least);
          const long double ulp = std::ldexp(1.0L, e - kept), q = v / ulp;
          const long double to_midpoint = std::fabs(q - std::floor(q) - 0.5L) * ulp;
          if (to_midpoint < 0x1p-38L) continue;
          ++checked;
          hard += to_midpoint < std::ldexp(1.0L, e - 24);  // half an f32 ulp
          const double want = static_cast<double>(std::nearbyint(q) * ulp);
          ASSERT_EQ(load(table, table.offset(p, c)), want)
              << impl.name << " " << dtype_name(dtype) << " PE[" << p << ", " << c << "]";
        }
      }
      std::printf("[ rounded  ] %s %s: %lld cells, %lld within half an f32 ulp of a midpoint\n",
                  impl.name.c_str(), dtype_name(dtype), static_cast<long long>(checked),
                  static_cast<long long>(hard));
      EXPECT_GT(hard, 10);
    }
  }
}

TEST(OptimizedSinusoidal, HalfPrecisionBitwiseIdenticalForEveryThreadCount) {
  for (DType dtype : {DType::bf16, DType::f16}) {
    const harness::Problem<SinusoidalCall> problem{
        dtype_name(dtype), [=](harness::Arena& arena) {
          harness::Values values(8);
          SinusoidalCall call{.out = arena.alloc(dtype, {4096, 512})};
          call.x = arena.alloc(dtype, {4096, 512});
          values.fill(*call.x, -3, 3);
          return call;  // positions 0 … 4095: rotation steps
        }};
    expect_bitwise_for_thread_counts(sinusoidal().front(), problem);
  }
}

TEST(OptimizedSinusoidal, BitwiseIdenticalForEveryThreadCount) {
  for (bool with_positions : {true, false}) {  // without: position t, every row a rotation step
    Problem p(4096, 512, kMaxPosition, 9);
    std::vector<float> first;
    for (int threads : {1, 2, 3, 7}) {
      std::fill(p.out.begin(), p.out.end(), 0.0f);
      SinusoidalCall call = p.call(threads);
      if (!with_positions) call.positions.reset();
      sinusoidal().front().run(call);
      EXPECT_EQ(last_threaded_parts(), threads);
      if (first.empty()) first = p.out;
      EXPECT_EQ(std::memcmp(p.out.data(), first.data(), first.size() * sizeof(float)), 0)
          << threads << " threads";
    }
  }
}

TEST(OptimizedSinusoidal, RejectsAPositionPast2To24BeforeWriting) {
  for (const auto& impl : runnable(sinusoidal())) {
    Arena arena;
    SinusoidalCall call{.out = arena.alloc(DType::f32, {3, 8}),
                        .positions = arena.alloc(DType::i64, {3})};
    int64_t* pos = static_cast<int64_t*>(call.positions->data);
    pos[0] = 0;
    pos[1] = kMaxPosition + 1;
    pos[2] = 5;
    harness::expect_rejected(impl.run, call, arena, "positions[1]");
  }
}

}  // namespace
}  // namespace posenc::optimized
