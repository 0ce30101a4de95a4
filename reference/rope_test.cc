// Golden numbers and laws for the rope reference, from the seeds (reference-values.md) and the
// public sources, and bad input.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "properties/compare.h"
#include "properties/harness.h"
#include "properties/testing.h"
#include "reference/reference.h"

namespace posenc {
namespace {

using harness::Arena;
using harness::expect_rejected;
using K = RopeScalingKind;

// x: [tokens, heads, head_dim] floats, rotated out of place with one position per token.
std::vector<float> rotate(const std::vector<float>& x, int64_t heads, int64_t head_dim,
                          std::vector<int64_t> positions, RopeCall call) {
  const int64_t tokens = static_cast<int64_t>(positions.size());
  std::vector<float> in = x, out(x.size());
  call.q = view(in.data(), DType::f32, {tokens, heads, head_dim});
  call.q_out = view(out.data(), DType::f32, {tokens, heads, head_dim});
  call.positions = view(positions.data(), DType::i64, {tokens});
  reference::rope(call);
  return out;
}

std::vector<float> deterministic(size_t n, uint64_t seed) {
  harness::Values values(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(values.uniform(-2, 2));
  return v;
}

// Seeds: a quarter turn of (2, 1) gives (−1, 2), length 2.236 before and after. Through a cache
// row holding (cos, sin) = (0, 1) it is exact; on the fly, linear scaling with f = 2/π puts
// pair 0 (ω = 1) at θ = π/2 for p = 1.
TEST(RopeReference, QuarterTurnOfTwoOne) {
  for (RopeLayout layout : {RopeLayout::half_split, RopeLayout::interleaved}) {
    std::vector<float> cos = {1, 0}, sin = {0, 1};  // rows p = 0 and p = 1
    const auto cached = rotate({2, 1}, 1, 2, {1},
                               {.rotary_dim = 2,
                                .layout = layout,
                                .cos = view(cos.data(), DType::f32, {2, 1}),
                                .sin = view(sin.data(), DType::f32, {2, 1})});
    EXPECT_EQ(cached, (std::vector<float>{-1, 2}));
    const auto fly = rotate({2, 1}, 1, 2, {1},
                            {.rotary_dim = 2,
                             .layout = layout,
                             .scaling = {.kind = K::linear, .factor = 2 / std::numbers::pi}});
    EXPECT_NEAR(fly[0], -1, 1e-7);
    EXPECT_FLOAT_EQ(fly[1], 2);
    EXPECT_NEAR(std::hypot(2.0, 1.0), 2.236, 5e-4);
    EXPECT_FLOAT_EQ(std::hypot(fly[0], fly[1]), std::hypot(2.0f, 1.0f));
  }
}

// Seeds: with d = 16 (8 pairs, base 10000) the score ⟨R(m)q, R(n)k⟩ is the same for (m, n) =
// (5, 2), (105, 102), (1005, 1002) and differs for (7, 2). The seed rotates interleaved pairs;
// half-split obeys the same law.
TEST(RopeReference, ScoreDependsOnlyOnTheGap) {
  const std::vector<float> q = deterministic(16, 1), k = deterministic(16, 2);
  double norms = 0;
  for (int c = 0; c < 16; ++c) norms += std::fabs(q[c] * k[c]);
  for (RopeLayout layout : {RopeLayout::interleaved, RopeLayout::half_split}) {
    auto score = [&](int64_t m, int64_t n) {
      const RopeCall call{.rotary_dim = 16, .layout = layout};
      const auto rq = rotate(q, 1, 16, {m}, call), rk = rotate(k, 1, 16, {n}, call);
      double s = 0;
      for (int c = 0; c < 16; ++c) s += double(rq[c]) * rk[c];
      return s;
    };
    const double s52 = score(5, 2);
    EXPECT_NEAR(score(105, 102), s52, 1e-6 * norms);
    EXPECT_NEAR(score(1005, 1002), s52, 1e-6 * norms);
    EXPECT_GT(std::fabs(score(7, 2) - s52), 1e-2 * norms);
  }
}

// At the top of the oracle's range, p = 2²⁴: (cos p·ω, sin p·ω) for ω = 1 and 1/100 (d = 4, base
// 10000), from python3 math.cos/sin (the product p·ω is exact in binary64 for both).
TEST(RopeReference, PositionTwoToTheTwentyFour) {
  const auto out = rotate({1, 1, 0, 0}, 1, 4, {kMaxPosition}, {.rotary_dim = 4});
  EXPECT_FLOAT_EQ(out[0], 0.6263229832915329);
  EXPECT_FLOAT_EQ(out[1], 0.11645914699116022);
  EXPECT_FLOAT_EQ(out[2], -0.7795636732177778);
  EXPECT_FLOAT_EQ(out[3], -0.9931954828139782);
}

// Dims from rotary_dim on are copied bit for bit out of place (NaN payloads, −0, subnormals) and
// not touched in place.
TEST(RopeReference, TailPassesThroughBitExactly) {
  const std::vector<uint32_t> tail_bits = {0x7f800001u, 0x80000000u, 0x00000001u, 0xffc12345u};
  std::vector<float> x = {0.5f, -1.5f, 2, 0.25f, 0, 0, 0, 0};
  for (int c = 0; c < 4; ++c) x[4 + c] = std::bit_cast<float>(tail_bits[c]);
  for (RopeLayout layout : {RopeLayout::half_split, RopeLayout::interleaved}) {
    const auto out = rotate(x, 1, 8, {3}, {.rotary_dim = 4, .layout = layout});
    for (int c = 0; c < 4; ++c) EXPECT_EQ(std::bit_cast<uint32_t>(out[4 + c]), tail_bits[c]);
    std::vector<float> in_place = x;
    std::vector<int64_t> pos = {3};
    const Tensor q = view(in_place.data(), DType::f32, {1, 1, 8});
    reference::rope({.q = q,
                     .q_out = q,
                     .positions = view(pos.data(), DType::i64, {1}),
                     .rotary_dim = 4,
                     .layout = layout});
    for (int c = 0; c < 8; ++c)
      EXPECT_EQ(std::bit_cast<uint32_t>(in_place[c]), std::bit_cast<uint32_t>(out[c])) << c;
  }
}

// In place, each pair is read before it is written: the result is the out-of-place one, bit for
// bit, for q and k with different head counts.
TEST(RopeReference, InPlaceEqualsOutOfPlace) {
  const int64_t tokens = 5, hq = 4, hk = 2, hd = 12;
  std::vector<int64_t> pos = {0, 9, 1 << 20, 77, kMaxPosition};
  for (RopeLayout layout : {RopeLayout::half_split, RopeLayout::interleaved}) {
    std::vector<float> q = deterministic(tokens * hq * hd, 3),
                       k = deterministic(tokens * hk * hd, 4);
    std::vector<float> q_out(q.size()), k_out(k.size());
    RopeCall call{.positions = view(pos.data(), DType::i64, {tokens}),
                  .rotary_dim = 8,
                  .layout = layout,
                  .scaling = {.kind = K::llama3, .factor = 8, .original_max_position = 8192}};
    call.q = view(q.data(), DType::f32, {tokens, hq, hd});
    call.k = view(k.data(), DType::f32, {tokens, hk, hd});
    call.q_out = view(q_out.data(), DType::f32, {tokens, hq, hd});
    call.k_out = view(k_out.data(), DType::f32, {tokens, hk, hd});
    reference::rope(call);
    call.q_out = call.q;
    call.k_out = call.k;
    reference::rope(call);
    EXPECT_EQ(q, q_out);
    EXPECT_EQ(k, k_out);
  }
}

// The interleaved layout is the half-split one with the dims permuted (2i ↔ i, 2i+1 ↔ i + d/2).
TEST(RopeReference, InterleavedIsHalfSplitPermuted) {
  const int64_t d = 16, h = d / 2;
  const std::vector<float> x = deterministic(d, 5);
  std::vector<float> split(d);
  for (int64_t i = 0; i < h; ++i) {
    split[i] = x[2 * i];
    split[i + h] = x[2 * i + 1];
  }
  const auto a = rotate(x, 1, d, {4321}, {.rotary_dim = d, .layout = RopeLayout::interleaved});
  const auto b = rotate(split, 1, d, {4321}, {.rotary_dim = d});
  for (int64_t i = 0; i < h; ++i) {
    EXPECT_EQ(a[2 * i], b[i]);
    EXPECT_EQ(a[2 * i + 1], b[i + h]);
  }
}

// inverse rotates by −θ: it undoes the forward rotation (to rounding), and with the attention
// factor f the pair's length scales by f each way.
TEST(RopeReference, InverseUndoesForwardAndFactorScalesLength) {
  const std::vector<float> x = deterministic(2 * 3 * 32, 6);
  const RopeScaling yarn{
      .kind = K::yarn, .factor = 40, .original_max_position = 4096, .attention_factor = 2.0};
  const std::vector<int64_t> pos = {100, 163839};
  const auto fwd = rotate(x, 3, 32, pos, {.rotary_dim = 32, .scaling = yarn});
  const auto back = rotate(fwd, 3, 32, pos, {.rotary_dim = 32, .inverse = true, .scaling = yarn});
  for (size_t j = 0; j < x.size(); j += 32) {
    for (int i = 0; i < 16; ++i) {
      const double in = std::hypot(x[j + i], x[j + i + 16]);
      EXPECT_NEAR(std::hypot(fwd[j + i], fwd[j + i + 16]), 2 * in, 1e-6 * in);
      EXPECT_NEAR(back[j + i], 4 * x[j + i], 1e-5 * in);  // f² = 4 after both ways
      EXPECT_NEAR(back[j + i + 16], 4 * x[j + i + 16], 1e-5 * in);
    }
  }
}

// A cache is read as given: each output is (a·c − b·s, a·s + b·c) from the stored (c, s), in
// fp64, rounded once, even when (c, s) is no rotation at all; inverse negates s.
TEST(RopeReference, CacheIsReadAsGiven) {
  std::vector<float> cos = deterministic(3 * 2, 7), sin = deterministic(3 * 2, 8);
  const std::vector<float> x = {0.75f, -1.25f, 3, 0.5f};
  for (bool inverse : {false, true}) {
    const auto out = rotate(x, 1, 4, {2},
                            {.rotary_dim = 4,
                             .inverse = inverse,
                             .cos = view(cos.data(), DType::f32, {3, 2}),
                             .sin = view(sin.data(), DType::f32, {3, 2})});
    for (int i = 0; i < 2; ++i) {
      const double a = x[i], b = x[i + 2], c = cos[2 * 2 + i];
      const double s = (inverse ? -1.0 : 1.0) * sin[2 * 2 + i];
      EXPECT_EQ(out[i], static_cast<float>(a * c - b * s));
      EXPECT_EQ(out[i + 2], static_cast<float>(a * s + b * c));
    }
  }
}

// A cache the reference built gives the on-the-fly result up to the cache's own f32 rounding.
TEST(RopeReference, BuiltCacheMatchesOnTheFly) {
  const RopeScaling s{.kind = K::llama3, .factor = 8, .original_max_position = 8192};
  const int64_t rows = 8192, d = 64;
  std::vector<float> cos(rows * d / 2), sin(rows * d / 2);
  reference::rope_cache({.rotary_dim = d,
                         .base = 500000,
                         .scaling = s,
                         .cos = view(cos.data(), DType::f32, {rows, d / 2}),
                         .sin = view(sin.data(), DType::f32, {rows, d / 2})});
  const std::vector<float> x = deterministic(4 * 2 * d, 9);
  const std::vector<int64_t> pos = {0, 1, 4097, 8191};
  const auto fly = rotate(x, 2, d, pos, {.rotary_dim = d, .base = 500000, .scaling = s});
  const auto cached = rotate(x, 2, d, pos,
                             {.rotary_dim = d,
                              .cos = view(cos.data(), DType::f32, {rows, d / 2}),
                              .sin = view(sin.data(), DType::f32, {rows, d / 2})});
  for (size_t j = 0; j < x.size(); ++j) {
    const size_t pair = j % d < d / 2 ? j + d / 2 : j - d / 2;
    EXPECT_NEAR(cached[j], fly[j], 3 * harness::ulp_f32(std::hypot(x[j], x[pair]))) << j;
  }
}

// Every head of q and of k (another head count) turns by its token's position; i32 positions
// give the i64 result.
TEST(RopeReference, KeyHeadsAndI32Positions) {
  const int64_t tokens = 3, hq = 3, hk = 1, d = 8;
  const std::vector<float> head = deterministic(d, 10);
  std::vector<float> q, k;
  for (int t = 0; t < tokens; ++t) {
    for (int h = 0; h < hq; ++h) q.insert(q.end(), head.begin(), head.end());
    k.insert(k.end(), head.begin(), head.end());
  }
  std::vector<float> q_out(q.size()), k_out(k.size());
  std::vector<int32_t> pos = {5, 60000, 0};
  reference::rope({.q = view(q.data(), DType::f32, {tokens, hq, d}),
                   .q_out = view(q_out.data(), DType::f32, {tokens, hq, d}),
                   .k = view(k.data(), DType::f32, {tokens, hk, d}),
                   .k_out = view(k_out.data(), DType::f32, {tokens, hk, d}),
                   .positions = view(pos.data(), DType::i32, {tokens}),
                   .rotary_dim = d});
  for (int t = 0; t < tokens; ++t) {
    const auto alone = rotate(head, 1, d, {pos[t]}, {.rotary_dim = d});
    for (int c = 0; c < d; ++c) {
      for (int h = 0; h < hq; ++h) EXPECT_EQ(q_out[(t * hq + h) * d + c], alone[c]);
      EXPECT_EQ(k_out[t * d + c], alone[c]);
    }
  }
}

// bf16 and f16: the exact rotation rounded once to the output. (2, 1) at position 1 (θ = 1 rad)
// is (2cos 1 − sin 1, 2sin 1 + cos 1) = (0.239133626928383, 2.223244275483933), and (1.5, −0.75)
// at position 3 is (−1.379148738855768, 0.954174384540135). Rounded to 8 significant bits:
// 245/1024, 142/64, −177/128, 244/256; to 11: 1959/8192, 1138/512, −1412/1024, 1954/2048 (worked
// by hand from the fp64 values: none lies near a tie).
TEST(RopeReference, HalfPrecisionRoundsTheExactRotationOnce) {
  struct Case {
    DType dtype;
    double want[4];
  };
  for (const Case& c :
       {Case{DType::bf16, {245 / 1024.0, 142 / 64.0, -177 / 128.0, 244 / 256.0}},
        Case{DType::f16, {1959 / 8192.0, 1138 / 512.0, -1412 / 1024.0, 1954 / 2048.0}}}) {
    uint16_t in[4], out[4];
    const double x[4] = {2, 1, 1.5, -0.75};
    const Tensor q = view(in, c.dtype, {2, 1, 2}), q_out = view(out, c.dtype, {2, 1, 2});
    for (int e = 0; e < 4; ++e) store(q, e, x[e]);
    std::vector<int64_t> pos = {1, 3};
    reference::rope(
        {.q = q, .q_out = q_out, .positions = view(pos.data(), DType::i64, {2}), .rotary_dim = 2});
    for (int e = 0; e < 4; ++e) EXPECT_EQ(load(q_out, e), c.want[e]) << dtype_name(c.dtype) << e;
  }
}

// A bf16 cache is read as given, and the pass-through tail of f16 activations is copied bit for
// bit (a NaN keeps its payload).
TEST(RopeReference, Bf16CacheAndF16Tail) {
  uint16_t table[4];
  const Tensor cos = view(table, DType::bf16, {2, 1}), sin = view(table + 2, DType::bf16, {2, 1});
  store(cos, 0, 1);  // row 0: angle 0, row 1: π/2
  store(sin, 0, 0);
  store(cos, 1, 0);
  store(sin, 1, 1);
  uint16_t in[8] = {}, out[8] = {};
  const Tensor q = view(in, DType::f16, {2, 1, 4}), q_out = view(out, DType::f16, {2, 1, 4});
  for (int e = 0; e < 8; ++e) store(q, e, e + 1);
  in[3] = 0x7E01;  // a NaN with a payload, in the tail of token 0
  std::vector<int32_t> pos = {0, 1};
  reference::rope({.q = q,
                   .q_out = q_out,
                   .positions = view(pos.data(), DType::i32, {2}),
                   .rotary_dim = 2,
                   .cos = cos,
                   .sin = sin});
  const double want[8] = {1, 2, 3, 0, -6, 5, 7, 8};
  for (int e = 0; e < 8; ++e) {
    if (e == 3) continue;
    EXPECT_EQ(load(q_out, e), want[e]) << e;
  }
  EXPECT_EQ(out[3], 0x7E01);
}

class RopeBadInput : public ::testing::Test {
 protected:
  RopeBadInput() {
    call.q = arena.alloc(DType::f32, {4, 2, 8});
    call.q_out = arena.alloc(DType::f32, {4, 2, 8});
    call.k = arena.alloc(DType::f32, {4, 1, 8});
    call.k_out = arena.alloc(DType::f32, {4, 1, 8});
    call.positions = arena.alloc(DType::i64, {4});
    for (int t = 0; t < 4; ++t) call.positions.as<int64_t>()[t] = t;
    harness::Values(1).fill(call.q);
    harness::Values(2).fill(*call.k);
    call.rotary_dim = 8;
  }
  void use_cache(int64_t rows) {
    call.cos = arena.alloc(DType::f32, {rows, 4});
    call.sin = arena.alloc(DType::f32, {rows, 4});
  }
  void expect(const std::string& argument) {
    expect_rejected(reference::rope, call, arena, argument);
  }
  Arena arena;
  RopeCall call;
};

TEST_F(RopeBadInput, OddRotaryDim) {
  call.rotary_dim = 5;
  expect("rotary_dim");
}
TEST_F(RopeBadInput, RotaryDimPastHeadDim) {
  call.rotary_dim = 10;
  expect("rotary_dim");
}
TEST_F(RopeBadInput, ZeroRotaryDim) {
  call.rotary_dim = 0;
  expect("rotary_dim");
}
TEST_F(RopeBadInput, ZeroHeads) {
  call.q = arena.alloc(DType::f32, {4, 0, 8});
  call.q_out = arena.alloc(DType::f32, {4, 0, 8});
  expect("q.shape[1]");
}
TEST_F(RopeBadInput, ZeroKeyHeads) {
  call.k = arena.alloc(DType::f32, {4, 0, 8});
  call.k_out = arena.alloc(DType::f32, {4, 0, 8});
  expect("k.shape[1]");
}
TEST_F(RopeBadInput, ZeroHeadDim) {
  call.q = arena.alloc(DType::f32, {4, 2, 0});
  call.q_out = arena.alloc(DType::f32, {4, 2, 0});
  expect("q.shape[2]");
}
TEST_F(RopeBadInput, NonFiniteBase) {
  call.base = INFINITY;
  expect("base");
}
TEST_F(RopeBadInput, NonPositiveBase) {
  call.base = 0;
  expect("base");
}
TEST_F(RopeBadInput, NonPositiveFactor) {
  call.scaling = {.kind = K::yarn, .factor = -4, .original_max_position = 4096};
  expect("scaling.factor");
}
TEST_F(RopeBadInput, YarnBetaFastBelowBetaSlow) {
  call.scaling = {.kind = K::yarn,
                  .factor = 4,
                  .original_max_position = 4096,
                  .beta_fast = 0.5,
                  .beta_slow = 1};
  expect("scaling.beta_fast");
}
TEST_F(RopeBadInput, LongRopeFactorsOfTheWrongLength) {
  call.scaling = {.kind = K::longrope, .factor = 32, .original_max_position = 4096};
  call.scaling.short_factor.assign(3, 1.0);
  call.scaling.long_factor.assign(4, 1.0);
  expect("scaling.short_factor.size");
}
TEST_F(RopeBadInput, PositionPastTheCacheRows) {
  use_cache(3);  // rows 0, 1, 2: token 3 sits at position 3
  expect("positions[3]");
}
TEST_F(RopeBadInput, PositionPastTheOracleRange) {
  call.positions.as<int64_t>()[1] = kMaxPosition + 1;
  expect("positions[1]");
}
TEST_F(RopeBadInput, NegativePosition) {
  call.positions.as<int64_t>()[2] = -1;
  expect("positions[2]");
}
TEST_F(RopeBadInput, OutputOverlapsInput) {
  call.q_out.data = call.q.as<float>() + 1;  // the same buffer, one element on
  call.q_out.shape[0] = call.q.shape[0] = 3;
  call.k->shape[0] = call.k_out->shape[0] = call.positions.shape[0] = 3;
  expect("q_out.data");
}
TEST_F(RopeBadInput, KeyOutputOverlapsQueryOutput) {
  call.k_out = view(call.q_out.data, DType::f32, {4, 1, 8}, {16, 8, 1});
  expect("k_out.data");
}
TEST_F(RopeBadInput, KeyWithoutKeyOutput) {
  call.k_out.reset();
  expect("k_out");
}
TEST_F(RopeBadInput, KeyOutputOfAnotherShape) {
  call.k_out = arena.alloc(DType::f32, {4, 2, 8});
  expect("k_out.shape[1]");
}
TEST_F(RopeBadInput, KeyHeadDimDiffers) {
  call.k = arena.alloc(DType::f32, {4, 1, 6});
  expect("k.shape[2]");
}
TEST_F(RopeBadInput, CosWithoutSin) {
  use_cache(8);
  call.sin.reset();
  expect("sin");
}
TEST_F(RopeBadInput, CacheOfTheWrongWidth) {
  use_cache(8);
  call.sin = arena.alloc(DType::f32, {8, 8});
  expect("sin.shape[1]");
}
// One activation dtype per call; caches f32 or bf16. Each mismatch names the view and its dtype.
TEST_F(RopeBadInput, OutputDtypeDiffersFromInput) {
  call.q_out = arena.alloc(DType::bf16, {4, 2, 8});
  expect("q_out.dtype");
}
TEST_F(RopeBadInput, KeyDtypeDiffersFromQuery) {
  call.q = arena.alloc(DType::f16, {4, 2, 8});
  call.q_out = arena.alloc(DType::f16, {4, 2, 8});
  call.k = arena.alloc(DType::bf16, {4, 1, 8});
  call.k_out = arena.alloc(DType::bf16, {4, 1, 8});
  expect("k.dtype");
  call.k = arena.alloc(DType::f16, {4, 1, 8});
  expect("k_out.dtype");
}
TEST_F(RopeBadInput, ActivationsOfAnotherFloatType) {
  call.q = arena.alloc(DType::f64, {4, 2, 8});
  call.q_out = arena.alloc(DType::f64, {4, 2, 8});
  expect("q.dtype");
}
TEST_F(RopeBadInput, CacheDtypes) {
  use_cache(8);
  call.cos = arena.alloc(DType::f16, {8, 4});
  call.sin = arena.alloc(DType::f16, {8, 4});
  expect("cos.dtype");
  call.cos = arena.alloc(DType::bf16, {8, 4});
  call.sin = arena.alloc(DType::f32, {8, 4});
  expect("sin.dtype");
}
// The dtype is a variant: an implementation that does not declare bf16 does not run bf16 calls.
TEST_F(RopeBadInput, DtypeIsARequiredVariant) {
  call.q = arena.alloc(DType::bf16, {4, 2, 8});
  call.q_out = call.q;
  call.k = arena.alloc(DType::bf16, {4, 1, 8});
  call.k_out = call.k;
  EXPECT_NO_THROW(call.validate());
  const uint64_t bits = call.required_variants();
  EXPECT_TRUE(bits & variant::bf16);
  EXPECT_FALSE(bits & (variant::f32 | variant::f16));
  Impl<RopeCall> f32_only{.name = "f32 only", .variants = kAllVariants & ~variant::bf16};
  EXPECT_FALSE(supports(f32_only, call));
  f32_only.variants |= variant::bf16;
  EXPECT_TRUE(supports(f32_only, call));
}

TEST_F(RopeBadInput, PositionsOfTheWrongLengthOrType) {
  call.positions = arena.alloc(DType::i64, {5});
  expect("positions.shape[0]");
  call.positions = arena.alloc(DType::f32, {4});
  expect("positions.dtype");
}

}  // namespace
}  // namespace posenc
