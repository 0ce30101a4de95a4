// The optimized rope kernels against a straightforward long-double loop, on every target. Over
// 600 lines: one suite for the family's optimized kernel, every target, layout, scaling and dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "optimized/optimized.h"
#include "optimized/testing.h"
#include "optimized/thread_pool.h"
#include "posenc/registry.h"
#include "properties/compare.h"
#include "properties/harness.h"
#include "properties/testing.h"

namespace posenc::optimized {
namespace {

using harness::Arena;
using harness::Layout;
using harness::ulp_f32;

struct Shape {
  int64_t tokens = 5, heads = 3, head_dim = 16, rotary_dim = 16, k_heads = 0;
  RopeLayout layout = RopeLayout::half_split;
  bool inverse = false;
  double factor = 1;  // attention factor, through linear scaling with factor 1
  int64_t min_position = 0, max_position = 1000;
  // Packed sequences instead of random positions: the first third counts up from min_position,
  // the rest ends at max_position (consecutive positions take the rotation-step path).
  bool consecutive = false;
};

struct Problem {
  Shape shape;
  std::vector<float> q, q_out, k, k_out;
  std::vector<int64_t> positions;

  Problem(const Shape& s, uint64_t seed)
      : shape(s),
        q(s.tokens * s.heads * s.head_dim),
        q_out(q.size(), -5.0f),
        k(s.tokens * s.k_heads * s.head_dim),
        k_out(k.size(), -5.0f),
        positions(s.tokens) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-3, 3);
    for (float& v : q) v = u(rng);
    for (float& v : k) v = u(rng);
    for (int64_t t = 0; t < s.tokens; ++t) {
      if (!s.consecutive) {
        positions[t] = std::uniform_int_distribution<int64_t>(s.min_position, s.max_position)(rng);
      } else {
        positions[t] = t < s.tokens / 3 ? s.min_position + t : s.max_position - (s.tokens - 1 - t);
      }
    }
  }
  RopeCall call(int threads = 1) {
    const Shape& s = shape;
    RopeCall c{.q = view(q.data(), DType::f32, {s.tokens, s.heads, s.head_dim}),
               .q_out = view(q_out.data(), DType::f32, {s.tokens, s.heads, s.head_dim}),
               .positions = view(positions.data(), DType::i64, {s.tokens}),
               .rotary_dim = s.rotary_dim,
               .layout = s.layout,
               .inverse = s.inverse,
               .scaling = {.kind = RopeScalingKind::linear, .factor = 1},
               .threads = threads};
    if (s.factor != 1) c.scaling.attention_factor = s.factor;
    if (s.k_heads > 0) {
      c.k = view(k.data(), DType::f32, {s.tokens, s.k_heads, s.head_dim});
      c.k_out = view(k_out.data(), DType::f32, {s.tokens, s.k_heads, s.head_dim});
    }
    return c;
  }
};

// Pair partner index and sign of element j of a rotated head.
struct PairIndex {
  int64_t first, second, frequency;
};
PairIndex pair_of(int64_t j, const Shape& s) {
  const int64_t half = s.rotary_dim / 2;
  if (s.layout == RopeLayout::interleaved) return {j & ~int64_t{1}, j | 1, j / 2};
  return {j % half, j % half + half, j % half};
}

// Worst error of every rotated element against the long-double rotation, in ulp_f32(f·‖pair‖);
// also checks the pass-through tail is bit-exact. `vs_rounded`: against the exact value rounded to
// f32 (what the fp64 reference stores) instead of the exact value.
double worst_error(const Shape& s, const std::vector<float>& in, const std::vector<float>& out,
                   int64_t heads, const std::vector<int64_t>& positions, bool vs_rounded) {
  double worst = 0;
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* x = &in[(t * heads + h) * s.head_dim];
      const float* y = &out[(t * heads + h) * s.head_dim];
      for (int64_t j = 0; j < s.head_dim; ++j) {
        if (j >= s.rotary_dim) {
          EXPECT_EQ(std::memcmp(&x[j], &y[j], 4), 0) << "pass-through element " << j;
          continue;
        }
        const PairIndex pi = pair_of(j, s);
        const double omega = std::pow(
            10000.0, -2.0 * static_cast<double>(pi.frequency) / static_cast<double>(s.rotary_dim));
        const long double angle = static_cast<long double>(positions[t]) * omega;
        const long double c = s.factor * cosl(angle),
                          sn = (s.inverse ? -1 : 1) * s.factor * sinl(angle);
        const long double a = x[pi.first], b = x[pi.second];
        const long double exact = j == pi.first ? a * c - b * sn : b * c + a * sn;
        const double want = vs_rounded ? static_cast<float>(exact) : static_cast<double>(exact);
        const double unit =
            ulp_f32(s.factor * std::hypot(static_cast<double>(a), static_cast<double>(b)));
        worst = std::max(worst, std::fabs(y[j] - want) / unit);
      }
    }
  }
  return worst;
}

TEST(OptimizedRope, EveryTargetIsWithinTwoUnitsAtPositionsNear2To24) {
  double worst_seen = 0, worst_exact = 0;
  for (const auto& impl : runnable(rope())) {
    for (RopeLayout layout : {RopeLayout::half_split, RopeLayout::interleaved}) {
      for (double factor : {1.0, 1.3371}) {
        Shape s{.tokens = 64,
                .heads = 4,
                .head_dim = 128,
                .rotary_dim = 128,
                .layout = layout,
                .factor = factor,
                .min_position = kMaxPosition - 4096,
                .max_position = kMaxPosition,
                .consecutive = factor != 1.0};  // random positions, then packed sequences
        Problem p(s, 7);
        impl.run(p.call());
        const double exact = worst_error(s, p.q, p.q_out, s.heads, p.positions, false);
        const double rounded = worst_error(s, p.q, p.q_out, s.heads, p.positions, true);
        EXPECT_LE(exact, 2.0) << impl.name << " " << layout_name(layout) << " f=" << factor;
        EXPECT_LE(rounded, 2.0) << impl.name << " " << layout_name(layout) << " f=" << factor;
        worst_seen = std::max(worst_seen, rounded);
        worst_exact = std::max(worst_exact, exact);
      }
    }
  }
  std::printf("worst error: %.3f units vs the rounded exact rotation, %.3f vs the exact one\n",
              worst_seen, worst_exact);
}

TEST(OptimizedRope, TailsPartialRotaryInverseAndKeysOnEveryTarget) {
  for (const auto& impl : runnable(rope())) {
    for (RopeLayout layout : {RopeLayout::half_split, RopeLayout::interleaved}) {
      for (int64_t rotary_dim : {2, 6, 18, 34, 66}) {
        for (int64_t extra : {0, 3, 11}) {
          Shape s{.tokens = 3,
                  .heads = 2,
                  .head_dim = rotary_dim + extra,
                  .rotary_dim = rotary_dim,
                  .k_heads = 3,
                  .layout = layout,
                  .inverse = extra == 3,
                  .max_position = kMaxPosition};
          Problem p(s, static_cast<uint64_t>(rotary_dim * 16 + extra));
          impl.run(p.call());
          EXPECT_LE(worst_error(s, p.q, p.q_out, s.heads, p.positions, true), 2.0)
              << impl.name << " q rotary_dim=" << rotary_dim << " head_dim=" << s.head_dim;
          EXPECT_LE(worst_error(s, p.k, p.k_out, s.k_heads, p.positions, true), 2.0)
              << impl.name << " k rotary_dim=" << rotary_dim << " head_dim=" << s.head_dim;
        }
      }
    }
  }
}

TEST(OptimizedRope, PassThroughIsBitExactEvenForNaNPayloads) {
  Shape s{.tokens = 2, .heads = 2, .head_dim = 12, .rotary_dim = 8};
  for (const auto& impl : runnable(rope())) {
    Problem p(s, 3);
    const uint32_t payload = 0x7fa00123;  // a signalling NaN with a payload
    std::memcpy(&p.q[9], &payload, 4);
    std::memcpy(&p.q[12 + 11], &payload, 4);
    impl.run(p.call());
    EXPECT_EQ(std::memcmp(&p.q_out[9], &payload, 4), 0) << impl.name;
    EXPECT_EQ(std::memcmp(&p.q_out[12 + 11], &payload, 4), 0) << impl.name;
  }
}

TEST(OptimizedRope, InPlaceStridedAndInt32PositionsGiveTheContiguousAnswer) {
  for (const auto& impl : runnable(rope())) {
    for (RopeLayout layout : {RopeLayout::half_split, RopeLayout::interleaved}) {
      Shape s{.tokens = 4,
              .heads = 3,
              .head_dim = 20,
              .rotary_dim = 14,
              .k_heads = 2,
              .layout = layout,
              .max_position = 70000};
      Problem p(s, 5);
      impl.run(p.call());
      for (Layout mem : {Layout::padded, Layout::permuted}) {
        Arena arena;
        RopeCall call = p.call();
        call.q = arena.alloc(DType::f32, {s.tokens, s.heads, s.head_dim}, mem);
        call.q_out = arena.alloc(DType::f32, {s.tokens, s.heads, s.head_dim}, mem);
        call.k = arena.alloc(DType::f32, {s.tokens, s.k_heads, s.head_dim}, mem);
        call.k_out = arena.alloc(DType::f32, {s.tokens, s.k_heads, s.head_dim}, mem);
        call.positions = arena.alloc(DType::i32, {s.tokens}, mem);
        for (int64_t t = 0; t < s.tokens; ++t) {
          static_cast<int32_t*>(call.positions.data)[call.positions.offset(t)] =
              static_cast<int32_t>(p.positions[t]);
          for (int64_t j = 0; j < s.head_dim; ++j) {
            for (int64_t h = 0; h < s.heads; ++h) {
              store(call.q, call.q.offset(t, h, j), p.q[(t * s.heads + h) * s.head_dim + j]);
            }
            for (int64_t h = 0; h < s.k_heads; ++h) {
              store(*call.k, call.k->offset(t, h, j), p.k[(t * s.k_heads + h) * s.head_dim + j]);
            }
          }
        }
        arena.snapshot();
        impl.run(call);
        EXPECT_FALSE(arena.stray_write({call.q_out, *call.k_out})) << impl.name;
        for (int64_t t = 0; t < s.tokens; ++t) {
          for (int64_t j = 0; j < s.head_dim; ++j) {
            for (int64_t h = 0; h < s.heads; ++h) {
              ASSERT_EQ(load(call.q_out, call.q_out.offset(t, h, j)),
                        p.q_out[(t * s.heads + h) * s.head_dim + j])
                  << impl.name << " " << harness::layout_name(mem);
            }
            for (int64_t h = 0; h < s.k_heads; ++h) {
              ASSERT_EQ(load(*call.k_out, call.k_out->offset(t, h, j)),
                        p.k_out[(t * s.k_heads + h) * s.head_dim + j])
                  << impl.name << " " << harness::layout_name(mem);
            }
          }
        }
      }
      RopeCall in_place = p.call();
      in_place.q_out = in_place.q;
      in_place.k_out = in_place.k;
      impl.run(in_place);
      EXPECT_EQ(std::memcmp(p.q.data(), p.q_out.data(), p.q.size() * 4), 0) << impl.name;
      EXPECT_EQ(std::memcmp(p.k.data(), p.k_out.data(), p.k.size() * 4), 0) << impl.name;
    }
  }
}

TEST(OptimizedRope, CachedAgreesWithOnTheFlyThroughTheOptimizedCache) {
  // rope_cache rounds f·cos θ and f·sin θ as the on-the-fly path does (their double values differ
  // by a few 2⁻⁵³ when one stepped and the other did not), so both are within 2 units of the exact
  // rotation and within 4 of each other; a sign or factor mixed up would be off by millions.
  const RopeScaling yarn{.kind = RopeScalingKind::yarn, .factor = 8, .original_max_position = 2048};
  const auto impls = rope();
  const auto caches = rope_cache();  // the same targets, in the same order
  ASSERT_EQ(impls.size(), caches.size());
  for (size_t target = 0; target < impls.size(); ++target) {
    const auto& impl = impls[target];
    if (!runs_here(impl)) continue;
    for (bool inverse : {false, true}) {
      Shape s{.tokens = 16,
              .heads = 2,
              .head_dim = 64,
              .rotary_dim = 48,
              .inverse = inverse,
              .max_position = 99999};
      Problem p(s, 8);
      RopeCall call = p.call();
      call.scaling = yarn;
      impl.run(call);
      const std::vector<float> on_the_fly = p.q_out;
      std::vector<float> cos(100000 * 24), sin(cos.size());
      caches[target].run({.rotary_dim = 48,
                          .scaling = yarn,
                          .cos = view(cos.data(), DType::f32, {100000, 24}),
                          .sin = view(sin.data(), DType::f32, {100000, 24})});
      call.cos = view(cos.data(), DType::f32, {100000, 24});
      call.sin = view(sin.data(), DType::f32, {100000, 24});
      std::fill(p.q_out.begin(), p.q_out.end(), 0.0f);
      impl.run(call);
      for (size_t j = 0; j < on_the_fly.size(); ++j) {
        const int64_t head_offset = static_cast<int64_t>(j) % s.head_dim;
        if (head_offset >= s.rotary_dim) {
          ASSERT_EQ(std::memcmp(&p.q_out[j], &on_the_fly[j], 4), 0) << impl.name;
          continue;
        }
        const int64_t base = static_cast<int64_t>(j) - head_offset;
        const int64_t i = head_offset % (s.rotary_dim / 2);
        const double a = p.q[base + i], b = p.q[base + i + s.rotary_dim / 2];
        const double f = 0.1 * std::log(8.0) + 1;  // yarn's attention factor for factor 8
        const double unit = ulp_f32(f * std::hypot(a, b));
        ASSERT_LE(std::fabs(p.q_out[j] - on_the_fly[j]), 4 * unit)
            << impl.name << (inverse ? " inverse" : "") << " element " << j;
      }
    }
  }
}

TEST(OptimizedRope, InfinityAndNaNFollowTheDoubleFormula) {
  for (const auto& impl : runnable(rope())) {
    Shape s{.tokens = 1, .heads = 1, .head_dim = 4, .rotary_dim = 4};
    Problem p(s, 1);
    p.positions[0] = 3;
    const float inf = std::numeric_limits<float>::infinity();
    p.q = {inf, 2.0f, 1.0f, std::nanf("")};  // pairs (inf, 1) and (2, NaN)
    impl.run(p.call());
    const double c = std::cos(3.0), sn = std::sin(3.0);
    EXPECT_EQ(p.q_out[0], static_cast<float>(inf * c - 1.0 * sn)) << impl.name;
    EXPECT_EQ(p.q_out[2], static_cast<float>(1.0 * c + inf * sn)) << impl.name;
    EXPECT_TRUE(std::isnan(p.q_out[1]) && std::isnan(p.q_out[3])) << impl.name;
  }
}

// Calls whose f32 arithmetic can overflow where the reference's fp64 does not (or not the same
// way): a huge attention factor, inputs near FLT_MAX, a coefficient that underflows to 0 in f32
// against an infinite input, a cache with entries above 1. Every target must match the reference
// under the tolerance model (non-finite outputs exactly), in every layout, strided and in place.
struct OverflowCase {
  const char* label;
  double factor;  // attention factor; with a cache, its entries are factor·(cos, sin)
  std::function<float(std::mt19937_64&)> value;
  bool cached = false;
};

float uniform(std::mt19937_64& rng, double lo, double hi) {
  return static_cast<float>(std::uniform_real_distribution<double>(lo, hi)(rng));
}

std::vector<OverflowCase> overflow_cases() {
  const float inf = std::numeric_limits<float>::infinity(), big = 0x1.fffffep127f;
  const auto near_max = [=](std::mt19937_64& rng) {
    return (rng() & 1 ? 1 : -1) * uniform(rng, 0.5, 1.0) * big;
  };
  const auto moderate = [](std::mt19937_64& rng) { return uniform(rng, -3, 3); };
  const auto some_infinite = [=](std::mt19937_64& rng) {
    switch (rng() % 8) {
      case 0:
        return inf;
      case 1:
        return -inf;
      default:
        return uniform(rng, -3, 3);
    }
  };
  return {{"fuzz finding: factor 1.5e300", 1.5e300, moderate},
          {"factor 1e300", 1e300, moderate},
          {"factor 1.5, inputs near FLT_MAX", 1.5, near_max},
          {"factor 1, inputs near FLT_MAX", 1.0, near_max},
          {"factor 1e-300, infinite inputs", 1e-300, some_infinite},
          {"factor 1e-40 (subnormal f32 coefficients), inputs near FLT_MAX", 1e-40, near_max},
          {"cache entries up to 1.5, inputs near FLT_MAX", 1.5, near_max, true},
          {"cache entries up to 1e30, inputs up to 1e10", 1e30,
           [](std::mt19937_64& rng) { return uniform(rng, -1e10, 1e10); }, true}};
}

// One call of `c` in `arena`, filled from `seed` (the same seed builds the same call).
RopeCall overflow_call(Arena& arena, const OverflowCase& c, RopeLayout layout, Layout mem,
                       uint64_t seed, int64_t kTokens = 5, int64_t kRotary = 34) {
  constexpr int64_t kHeads = 3, kHeadDim = 40, kRows = 2000;
  std::mt19937_64 rng(seed);
  RopeCall call{.q = arena.alloc(DType::f32, {kTokens, kHeads, kHeadDim}, mem),
                .q_out = arena.alloc(DType::f32, {kTokens, kHeads, kHeadDim}, mem),
                .k = arena.alloc(DType::f32, {kTokens, 1, kHeadDim}, mem),
                .k_out = arena.alloc(DType::f32, {kTokens, 1, kHeadDim}, mem),
                .positions = arena.alloc(DType::i64, {kTokens}, mem),
                .rotary_dim = kRotary,
                .layout = layout,
                .inverse = (seed & 1) != 0};
  for (int64_t t = 0; t < kTokens; ++t) {
    static_cast<int64_t*>(call.positions.data)[call.positions.offset(t)] =
        t == 0 ? 0 : static_cast<int64_t>(rng() % kRows);
    for (int64_t j = 0; j < kHeadDim; ++j) {
      for (int64_t h = 0; h < kHeads; ++h) store(call.q, call.q.offset(t, h, j), c.value(rng));
      store(*call.k, call.k->offset(t, 0, j), c.value(rng));
    }
  }
  if (c.cached) {
    call.cos = arena.alloc(DType::f32, {kRows, kRotary / 2}, mem);
    call.sin = arena.alloc(DType::f32, {kRows, kRotary / 2}, mem);
    for (int64_t p = 0; p < kRows; ++p) {
      for (int64_t i = 0; i < kRotary / 2; ++i) {
        const double angle = static_cast<double>(p) * std::pow(1e4, -2.0 * i / kRotary);
        store(*call.cos, call.cos->offset(p, i), c.factor * std::cos(angle));
        store(*call.sin, call.sin->offset(p, i), c.factor * std::sin(angle));
      }
    }
  } else {
    call.scaling.attention_factor = c.factor;
  }
  return call;
}

TEST(OptimizedRope, OverflowingProductsAndUnderflowingCoefficientsMatchTheReference) {
  const auto& reference = reference_impl<RopeCall>();
  int64_t checked = 0, non_finite = 0;
  for (const OverflowCase& c : overflow_cases()) {
    for (RopeLayout layout : {RopeLayout::half_split, RopeLayout::interleaved}) {
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        Arena fresh, expected_arena;
        const RopeCall input = overflow_call(fresh, c, layout, Layout::contiguous, seed);
        const RopeCall expected =
            overflow_call(expected_arena, c, layout, Layout::contiguous, seed);
        reference.run(expected);
        for (int64_t e = 0; e < expected.q_out.numel(); ++e) {
          non_finite += !std::isfinite(static_cast<const float*>(expected.q_out.data)[e]);
        }
        for (const auto& impl : runnable(rope())) {
          for (Layout mem : {Layout::contiguous, Layout::permuted}) {
            for (bool in_place : {false, true}) {
              Arena arena;
              RopeCall got = overflow_call(arena, c, layout, mem, seed);
              if (in_place) {
                got.q_out = got.q;
                got.k_out = got.k;
              }
              impl.run(got);
              const harness::Comparison cmp = harness::compare(input, expected, got, impl.bound);
              checked += cmp.checked;
              EXPECT_TRUE(cmp.ok) << impl.name << ", " << c.label << ", " << layout_name(layout)
                                  << ", " << harness::layout_name(mem)
                                  << (in_place ? ", in place" : "") << ", seed " << seed << ": "
                                  << cmp.describe();
            }
          }
        }
      }
    }
  }
  std::printf("%lld elements compared, %lld reference q outputs non-finite\n",
              static_cast<long long>(checked), static_cast<long long>(non_finite));
}

// A decode token copies its f32 cache row and finds, in the same pass, whether the row has entries
// above 1 (CachedCoefficients, DecodeToken): such a row must take the guarded rotation when the
// products overflow. rotary_dim 32 is whole vectors on every target; odd seeds are inverse.
TEST(OptimizedRope, DecodeTokenOnACacheRowAboveOneKeepsTheOverflowGuard) {
  const auto& reference = reference_impl<RopeCall>();
  int64_t checked = 0;
  for (const OverflowCase& c : overflow_cases()) {
    if (!c.cached) continue;
    for (RopeLayout layout : {RopeLayout::half_split, RopeLayout::interleaved}) {
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        const auto make = [&](Arena& arena) {
          RopeCall call = overflow_call(arena, c, layout, Layout::contiguous, seed, 1, 32);
          *static_cast<int64_t*>(call.positions.data) = 1 + 97 * static_cast<int64_t>(seed);
          return call;
        };
        Arena input_arena, expected_arena;
        const RopeCall input = make(input_arena), expected = make(expected_arena);
        reference.run(expected);
        for (const auto& impl : runnable(rope())) {
          Arena arena;
          const RopeCall got = make(arena);
          impl.run(got);
          const harness::Comparison cmp = harness::compare(input, expected, got, impl.bound);
          checked += cmp.checked;
          EXPECT_TRUE(cmp.ok) << impl.name << ", " << c.label << ", " << layout_name(layout)
                              << ", seed " << seed << ": " << cmp.describe();
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(OptimizedRope, OverflowFallbackIsBitwiseIdenticalForEveryThreadCount) {
  const OverflowCase c = overflow_cases()[2];  // factor 1.5, inputs near FLT_MAX
  std::vector<float> first;
  for (int threads : {1, 2, 3, 7}) {
    Arena arena;
    RopeCall call = overflow_call(arena, c, RopeLayout::interleaved, Layout::contiguous, 9, 32768);
    call.threads = threads;
    rope().front().run(call);
    EXPECT_EQ(last_threaded_parts(), threads);
    const float* out = static_cast<const float*>(call.q_out.data);
    if (first.empty()) first.assign(out, out + call.q_out.numel());
    EXPECT_EQ(std::memcmp(out, first.data(), first.size() * 4), 0) << threads;
  }
}

// A recomputed output (ExactPairs) is the reference's: its fp64 value rounded ONCE to the output
// dtype. Each case puts that value past a bf16 or f16 rounding midpoint by less than half an f32
// ulp, so a detour through f32 lands on the midpoint and ties to even the other way: one output-
// dtype ulp off, or ∞ for the largest finite bf16. Every pair of every head is (a, b), at one
// position, so every rotated output is recomputed (≥ 2¹²⁷ or NaN in f32, or a factor below
// 2⁻¹²⁶) and must carry the reference's bits.
struct RoundOnceCase {
  const char* label;
  DType dtype;
  double attention_factor, linear_factor;
  int64_t position;
  double a, b;
};

RopeCall round_once_call(Arena& arena, const RoundOnceCase& c, DType dtype, RopeLayout layout,
                         bool in_place) {
  constexpr int64_t kTokens = 3, kHeads = 2, kHeadDim = 36, kRotary = 32;
  RopeCall call{.q = arena.alloc(dtype, {kTokens, kHeads, kHeadDim}),
                .positions = arena.alloc(DType::i64, {kTokens}),
                .rotary_dim = kRotary,
                .layout = layout,
                .scaling = {.kind = RopeScalingKind::linear,
                            .factor = c.linear_factor,
                            .attention_factor = c.attention_factor}};
  call.q_out = in_place ? call.q : arena.alloc(dtype, {kTokens, kHeads, kHeadDim});
  for (int64_t t = 0; t < kTokens; ++t) {
    static_cast<int64_t*>(call.positions.data)[t] = c.position;
    for (int64_t h = 0; h < kHeads; ++h) {
      for (int64_t i = 0; i < kRotary / 2; ++i) {
        const int64_t first = layout == RopeLayout::half_split ? i : 2 * i;
        const int64_t second = layout == RopeLayout::half_split ? i + kRotary / 2 : 2 * i + 1;
        store(call.q, call.q.offset(t, h, first), c.a);
        store(call.q, call.q.offset(t, h, second), c.b);
      }
      for (int64_t j = kRotary; j < kHeadDim; ++j) store(call.q, call.q.offset(t, h, j), 7.0);
    }
  }
  return call;
}

std::vector<uint16_t> half_bits(const Tensor& t) {
  std::vector<uint16_t> bits(static_cast<size_t>(t.numel()));
  std::memcpy(bits.data(), t.data, bits.size() * sizeof(uint16_t));
  return bits;
}

TEST(OptimizedRope, RecomputedHalfPrecisionOutputsAreRoundedOnceAsTheReferenceDoes) {
  const std::vector<RoundOnceCase> cases = {
      // f·cos 0 = f = 2¹²⁷·(1 + 2⁻⁸ + 2⁻³⁰): bf16 0x1.02p127, via f32 the midpoint 0x1.01p127
      // → 0x1p127.
      {"bf16, f = 2^127 (1 + 2^-8 + 2^-30)", DType::bf16, 0x1.01000004p127, 1, 0, 1, -1},
      // f = 2¹²⁸ − 2¹¹⁹ − 2¹⁰⁰: bf16's largest finite 0x1.FEp127, via f32 the midpoint 2¹²⁸ − 2¹¹⁹
      // → ∞.
      {"bf16, f just below the midpoint between bf16's largest and infinity", DType::bf16,
       0x1.FEFFFFEp127, 1, 0, 1, -1},
      // f < 2⁻¹²⁶: every output recomputed; 2¹⁰·f = 2⁻¹²⁰·(1 + 2⁻⁸ + 2⁻³⁰).
      {"bf16, f = 2^-130 (1 + 2^-8 + 2^-30), every output recomputed", DType::bf16,
       0x1.01000004p-130, 1, 0, 0x1p10, -0x1p10},
      // ω₀ = 2⁻¹⁴⁰ at position 1: f·cos θ₀ overflows f32 (0·∞ = NaN for a = 0), while
      // f·sin θ₀ = 1 + 2⁻⁸ + 2⁻⁴⁰ is an ordinary value: a' = −(1 + 2⁻⁸ + 2⁻⁴⁰).
      {"bf16, f·sin θ moderate beside f·cos θ overflowing", DType::bf16, 0x1.0100000001p140,
       0x1p140, 1, 0, 1},
      // The same in f16, whose products never overflow f32 by themselves: −(1 + 2⁻¹¹ + 2⁻⁴⁰)
      // rounds to −(1 + 2⁻¹⁰) once, to −1 through f32.
      {"f16, f·sin θ moderate beside f·cos θ overflowing", DType::f16, 0x1.0020000001p140, 0x1p140,
       1, 0, 1},
  };
  for (const RoundOnceCase& c : cases) {
    for (RopeLayout layout : {RopeLayout::half_split, RopeLayout::interleaved}) {
      Arena ref_arena, twice_arena;
      const RopeCall expected = round_once_call(ref_arena, c, c.dtype, layout, false);
      reference_impl<RopeCall>().run(expected);
      const std::vector<uint16_t> want = half_bits(expected.q_out);
      // The case must witness a double rounding: the reference's f32 outputs, rounded again to
      // the dtype, differ from its own.
      const RopeCall f32 = round_once_call(twice_arena, c, DType::f32, layout, false);
      reference_impl<RopeCall>().run(f32);
      int64_t differ = 0;
      for (int64_t e = 0; e < f32.q_out.numel(); ++e) {
        uint16_t twice;
        store(view(&twice, c.dtype, {1}), 0, load(f32.q_out, e));
        differ += twice != want[static_cast<size_t>(e)];
      }
      EXPECT_GT(differ, 0) << c.label << ": not a double-rounding case";
      for (const auto& impl : runnable(rope())) {
        for (bool in_place : {false, true}) {
          Arena arena;
          const RopeCall got = round_once_call(arena, c, c.dtype, layout, in_place);
          impl.run(got);
          const std::vector<uint16_t> bits = half_bits(got.q_out);
          int64_t wrong = 0, first = -1;
          for (size_t e = 0; e < bits.size(); ++e) {
            if (bits[e] != want[e] && wrong++ == 0) first = static_cast<int64_t>(e);
          }
          EXPECT_EQ(wrong, 0) << impl.name << ", " << c.label << ", " << layout_name(layout)
                              << (in_place ? ", in place" : "") << ": first at " << first
                              << std::hex << ", got 0x" << (first < 0 ? 0 : bits[first])
                              << ", want 0x" << (first < 0 ? 0 : want[first]);
        }
      }
    }
  }
}

TEST(OptimizedRope, BitwiseIdenticalForEveryThreadCount) {
  for (bool cached : {false, true}) {
    Shape s{.tokens = 2048,
            .heads = 8,
            .head_dim = 128,
            .rotary_dim = 96,
            .k_heads = 2,
            .min_position = kMaxPosition - 100000,
            .max_position = kMaxPosition,
            .consecutive = true};  // parts start inside rotation-step chains
    Problem p(s, 21);
    std::vector<float> cos, sin;
    RopeCall call = p.call();
    if (cached) {
      for (int64_t& pos : p.positions) pos -= kMaxPosition - 100000;
      cos.resize(100001 * 48);
      sin.resize(cos.size());
      rope_cache().front().run({.rotary_dim = 96,
                                .cos = view(cos.data(), DType::f32, {100001, 48}),
                                .sin = view(sin.data(), DType::f32, {100001, 48})});
      call.cos = view(cos.data(), DType::f32, {100001, 48});
      call.sin = view(sin.data(), DType::f32, {100001, 48});
    }
    std::vector<float> first_q, first_k;
    for (int threads : {1, 2, 3, 7}) {
      std::fill(p.q_out.begin(), p.q_out.end(), 0.0f);
      std::fill(p.k_out.begin(), p.k_out.end(), 0.0f);
      call.threads = threads;
      rope().front().run(call);
      EXPECT_EQ(last_threaded_parts(), threads) << (cached ? "cached" : "on the fly");
      if (first_q.empty()) {
        first_q = p.q_out;
        first_k = p.k_out;
      }
      EXPECT_EQ(std::memcmp(p.q_out.data(), first_q.data(), first_q.size() * 4), 0) << threads;
      EXPECT_EQ(std::memcmp(p.k_out.data(), first_k.data(), first_k.size() * 4), 0) << threads;
    }
  }
}

// A one-token call (a decode step) takes its sin/cos from the per-thread memo when the previous
// call asked for the same position and frequencies (angles.h), or its cache row, without the
// multi-token set-up (DecodeToken). On every target and layout its bits must be those of the first
// token of a two-token call at that position (the walker's fresh values, or the same row), whatever
// was called before: the same position, another one, or other frequencies. The cache holds entries
// above 1, so its rows take the guarded path; half 32 is whole vectors on every target (the row's
// copy finds that in the same pass), half 24 not on AVX-512 (the rest element by element).
TEST(OptimizedRope, DecodeStepGivesTheFreshBitsWhateverCameBefore) {
  for (const int64_t half : {24, 32}) {
    const int64_t rows = 16;
    std::vector<float> cos(rows * half), sin(rows * half);
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<float> u(-1.25f, 1.25f);
    for (size_t i = 0; i < cos.size(); ++i) cos[i] = u(rng), sin[i] = u(rng);
    for (const auto& impl : runnable(rope())) {
      for (RopeLayout layout : {RopeLayout::half_split, RopeLayout::interleaved}) {
        for (bool cached : {false, true}) {
          Shape s{.tokens = 2, .heads = 4, .head_dim = 64, .rotary_dim = 2 * half, .k_heads = 2};
          s.layout = layout;
          Problem p(s, 33);
          // The outputs of token 0 at `position` with `base`: from a two-token call (token 0 from
          // AngleWalker's fresh sin/cos or the row, no memo), or from a one-token call.
          const auto outputs = [&](int64_t position, double base, int64_t tokens) {
            p.positions = {position, position + 1};
            RopeCall call = p.call();
            call.base = base;
            call.q = view(p.q.data(), DType::f32, {tokens, 4, 64});
            call.q_out = view(p.q_out.data(), DType::f32, {tokens, 4, 64});
            call.k = view(p.k.data(), DType::f32, {tokens, 2, 64});
            call.k_out = view(p.k_out.data(), DType::f32, {tokens, 2, 64});
            call.positions = view(p.positions.data(), DType::i64, {tokens});
            if (cached) {
              call.cos = view(cos.data(), DType::f32, {rows, half});
              call.sin = view(sin.data(), DType::f32, {rows, half});
            }
            std::fill(p.q_out.begin(), p.q_out.end(), 0.0f);
            std::fill(p.k_out.begin(), p.k_out.end(), 0.0f);
            impl.run(call);
            std::vector<float> out(p.q_out.begin(), p.q_out.begin() + 4 * 64);
            out.insert(out.end(), p.k_out.begin(), p.k_out.begin() + 2 * 64);
            return out;
          };
          const int64_t far = cached ? rows - 2 : kMaxPosition - 3;
          // The steps of a decode: again at one position (the memo's values), at another position,
          // back, and with other frequencies in between.
          const std::vector<std::pair<int64_t, double>> steps = {
              {far, 10000}, {far, 10000}, {7, 10000}, {far, 10000}, {far, 500000}, {far, 10000}};
          for (const auto& [position, base] : steps) {
            const std::vector<float> want = outputs(position, base, 2);
            const std::vector<float> got = outputs(position, base, 1);
            EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0)
                << impl.name << ", half " << half << ", at position " << position << " base "
                << base << (layout == RopeLayout::interleaved ? ", interleaved" : "")
                << (cached ? ", cached" : "");
          }
        }
      }
    }
  }
}

// bf16 and f16 at their edges, on every target (AVX3_DL with AVX512_BF16 converts natively, and
// falls back for subnormal results): pairs of every magnitude from the dtype's subnormals to its
// overflow, ±∞ and NaN, in place and not, with an f32 and a bf16 cache. Held to 1 ulp of the
// output dtype (kernel.h).
TEST(OptimizedRope, HalfPrecisionEdgesOnEveryTarget) {
  for (DType dtype : {DType::bf16, DType::f16}) {
    // Per head: pairs of this magnitude. bf16: subnormal, smallest normal, 1, near the top;
    // f16: subnormal, smallest normal, 1, rotations that overflow 65504 or not.
    const std::vector<double> scales = dtype == DType::bf16
                                           ? std::vector<double>{0x1p-140, 0x1p-126, 1, 0x1p126}
                                           : std::vector<double>{0x1p-22, 0x1p-14, 1, 50000};
    for (bool in_place : {false, true})
      for (DType cache : {DType::f32, DType::bf16, DType::i32}) {  // i32: no cache
        const harness::Problem<RopeCall> problem{
            std::string(dtype_name(dtype)) + (in_place ? " in place" : "") + " cache " +
                (cache == DType::i32 ? "none" : dtype_name(cache)),
            [=](Arena& arena) {
              const int64_t tokens = 9, heads = 4, d = 40;
              harness::Values values(7);
              RopeCall call{.rotary_dim = d, .layout = RopeLayout::interleaved};
              call.q = arena.alloc(dtype, {tokens, heads, d});
              for (int64_t t = 0; t < tokens; ++t)
                for (int64_t h = 0; h < heads; ++h)
                  for (int64_t j = 0; j < d; ++j)
                    store(call.q, call.q.offset(t, h, j), values.uniform(-1.3, 1.3) * scales[h]);
              store(call.q, call.q.offset(1, 2, 3), INFINITY);
              store(call.q, call.q.offset(2, 1, 4), -INFINITY);
              store(call.q, call.q.offset(3, 0, 5), NAN);
              call.q_out = in_place ? call.q : arena.alloc(dtype, {tokens, heads, d});
              call.positions = arena.alloc(DType::i64, {tokens});
              values.fill_index(call.positions, 0, 3000);
              if (cache != DType::i32) {
                call.cos = arena.alloc(cache, {3001, d / 2});
                call.sin = arena.alloc(cache, {3001, d / 2});
                reference_impl<RopeCacheCall>().run(
                    {.rotary_dim = d, .cos = *call.cos, .sin = *call.sin});
              }
              return call;
            }};
        expect_every_target_matches(rope(), problem);
      }
  }
}

// Head sizes whose coefficient vectors fit in registers on some target (1, 2, 4 or 8 vectors per
// array: RowsInRegisters) and some that do not, in every dtype and layout, unguarded (f = 1) and
// guarded (f ≠ 1), computed (positions up to 2²⁴) and cached, on every target. Prints the worst
// error per dtype, in units of its output dtype (bound 2 for f32, 1 for bf16 and f16).
TEST(OptimizedRope, EveryHeadSizeMatchesTheReferenceOnEveryTarget) {
  std::map<DType, double> worst;
  for (DType dtype : {DType::f32, DType::bf16, DType::f16})
    for (int64_t d : {8, 16, 32, 48, 64, 128, 256})
      for (RopeLayout layout : {RopeLayout::half_split, RopeLayout::interleaved})
        for (double factor : {1.0, 1.25})
          for (bool cached : {false, true}) {
            const harness::Problem<RopeCall> problem{
                std::string(dtype_name(dtype)) + " d=" + std::to_string(d) + " " +
                    layout_name(layout) + " f=" + std::to_string(factor) +
                    (cached ? " cached" : ""),
                [=](Arena& arena) {
                  const int64_t tokens = 9, heads = 3;
                  harness::Values values(11);
                  RopeCall call{.rotary_dim = d, .layout = layout};
                  call.q = arena.alloc(dtype, {tokens, heads, d});
                  values.fill(call.q, -2, 2);
                  call.q_out = arena.alloc(dtype, {tokens, heads, d});
                  call.positions = arena.alloc(DType::i64, {tokens});
                  values.fill_index(call.positions, 0, cached ? 500 : kMaxPosition);
                  call.scaling.attention_factor = factor;
                  if (cached) {
                    call.cos = arena.alloc(DType::f32, {501, d / 2});
                    call.sin = arena.alloc(DType::f32, {501, d / 2});
                    reference_impl<RopeCacheCall>().run({.rotary_dim = d,
                                                         .scaling = call.scaling,
                                                         .cos = *call.cos,
                                                         .sin = *call.sin});
                  }
                  return call;
                }};
            for (const auto& impl : runnable(rope())) {
              const harness::Outcome o = harness::differential(impl, problem);
              EXPECT_TRUE(o.ok) << impl.name << " " << problem.label << ": " << o.failure;
              EXPECT_GT(o.comparison.checked, 0) << problem.label;
              worst[dtype] = std::max(worst[dtype], o.comparison.worst);
            }
          }
  for (const auto& [dtype, units] : worst)
    std::printf("%s: worst %g units\n", dtype_name(dtype), units);
}

TEST(OptimizedRope, RejectsAPositionPastTheCacheBeforeWriting) {
  for (const auto& impl : runnable(rope())) {
    Arena arena;
    RopeCall call{.q = arena.alloc(DType::f32, {2, 1, 8}),
                  .q_out = arena.alloc(DType::f32, {2, 1, 8}),
                  .positions = arena.alloc(DType::i64, {2}),
                  .rotary_dim = 8,
                  .cos = arena.alloc(DType::f32, {10, 4}),
                  .sin = arena.alloc(DType::f32, {10, 4})};
    static_cast<int64_t*>(call.positions.data)[0] = 9;
    static_cast<int64_t*>(call.positions.data)[1] = 10;
    harness::expect_rejected(impl.run, call, arena, "positions[1]");
  }
}

}  // namespace
}  // namespace posenc::optimized
