// Golden numbers for the rope cos/sin cache, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "properties/testing.h"
#include "reference/reference.h"

namespace posenc {
namespace {

using harness::Arena;
using harness::expect_rejected;
using K = RopeScalingKind;

struct Cache {
  int64_t rows, half;
  std::vector<float> cos, sin;
  float c(int64_t p, int64_t i) const { return cos[p * half + i]; }
  float s(int64_t p, int64_t i) const { return sin[p * half + i]; }
};

Cache build(int64_t rows, int64_t d, double base, const RopeScaling& scaling) {
  Cache cache{rows, d / 2, std::vector<float>(rows * d / 2), std::vector<float>(rows * d / 2)};
  reference::rope_cache({.rotary_dim = d,
                         .base = base,
                         .scaling = scaling,
                         .cos = view(cache.cos.data(), DType::f32, {rows, d / 2}),
                         .sin = view(cache.sin.data(), DType::f32, {rows, d / 2})});
  return cache;
}

// Seeds (reference-values.md, sinusoidal): with d = 4 and base 10000, ω = (1, 1/100), so the
// cache rows are the sinusoidal table's pairs: PE[1] ≈ [0.841, 0.540, 0.010, 1.000] and
// PE[2] ≈ [0.909, −0.416, 0.020, 1.000] as (sin, cos) per pair.
TEST(RopeCache, SeedRowsForD4) {
  const Cache cache = build(3, 4, 10000, {});
  const double pe[3][4] = {
      {0, 1, 0, 1}, {0.841, 0.540, 0.010, 1.000}, {0.909, -0.416, 0.020, 1.000}};
  for (int p = 0; p < 3; ++p) {
    for (int i = 0; i < 2; ++i) {
      EXPECT_NEAR(cache.s(p, i), pe[p][2 * i], 5e-4) << p << "," << i;
      EXPECT_NEAR(cache.c(p, i), pe[p][2 * i + 1], 5e-4) << p << "," << i;
    }
  }
  // Rounded once from fp64.
  EXPECT_EQ(cache.c(1, 0), static_cast<float>(std::cos(1.0)));
  EXPECT_EQ(cache.s(2, 1), static_cast<float>(std::sin(0.02)));
}

// The yarn example scaling (DeepSeek-V3's with mscale_all_dim 0.8: attention factor
// g(40, 1)/g(40, 0.8) = 1.05697): a·cos and a·sin at p = 4095, from HF _compute_yarn_parameters
// with python3 math.cos/sin.
TEST(RopeCache, YarnCarriesTheAttentionFactor) {
  const RopeScaling s{.kind = K::yarn,
                      .factor = 40,
                      .original_max_position = 4096,
                      .mscale = 1.0,
                      .mscale_all_dim = 0.8};
  const Cache cache = build(4096, 64, 10000, s);
  EXPECT_FLOAT_EQ(cache.c(4095, 16), -0.9112350179387763);
  EXPECT_FLOAT_EQ(cache.s(4095, 16), -0.5355636376723464);
  EXPECT_FLOAT_EQ(cache.c(4095, 31), 1.0568677622005818);
  EXPECT_FLOAT_EQ(cache.s(4095, 31), 0.01442917654797412);
  EXPECT_FLOAT_EQ(cache.c(1, 0), 0.571081305748531);
  EXPECT_FLOAT_EQ(cache.s(1, 0), 0.8894064369787702);
  // Every row is a vector of length a.
  for (int64_t p : {0, 7, 1000, 4095})
    for (int64_t i = 0; i < 32; ++i)
      EXPECT_NEAR(std::hypot(cache.c(p, i), cache.s(p, i)), 1.0569662567531275, 3e-7);
}

// Llama 3.1 defaults at the end of the 128k context: HF _compute_llama3_parameters, python3.
TEST(RopeCache, Llama31At128k) {
  const RopeScaling s{.kind = K::llama3, .factor = 8, .original_max_position = 8192};
  const Cache cache = build(131072, 128, 500000, s);
  EXPECT_FLOAT_EQ(cache.c(131071, 63), 0.9991910950353975);
  EXPECT_FLOAT_EQ(cache.s(131071, 63), 0.04021387325244038);
  EXPECT_FLOAT_EQ(cache.c(131071, 30), -0.735304432526813);
  EXPECT_FLOAT_EQ(cache.s(131071, 30), -0.6777369633614663);
  EXPECT_FLOAT_EQ(cache.c(100000, 1), 0.9745978280492605);
  EXPECT_FLOAT_EQ(cache.s(100000, 1), 0.22396221458465707);
}

// vLLM's cos_sin_cache is one [rows, rotary_dim] buffer, cos in the first half of each row and
// sin in the second: the same numbers as two separate tables.
TEST(RopeCache, VllmLayoutHoldsTheSameNumbers) {
  const RopeScaling s{.kind = K::linear, .factor = 4};
  const Cache separate = build(50, 16, 10000, s);
  std::vector<float> both(50 * 16);
  reference::rope_cache({.rotary_dim = 16,
                         .base = 10000,
                         .scaling = s,
                         .cos = view(both.data(), DType::f32, {50, 8}, {16, 1}),
                         .sin = view(both.data() + 8, DType::f32, {50, 8}, {16, 1})});
  for (int p = 0; p < 50; ++p) {
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(both[p * 16 + i], separate.c(p, i));
      EXPECT_EQ(both[p * 16 + 8 + i], separate.s(p, i));
    }
  }
}

class RopeCacheBadInput : public ::testing::Test {
 protected:
  RopeCacheBadInput() {
    call.rotary_dim = 8;
    call.cos = arena.alloc(DType::f32, {16, 4});
    call.sin = arena.alloc(DType::f32, {16, 4});
  }
  void expect(const std::string& argument) {
    expect_rejected(reference::rope_cache, call, arena, argument);
  }
  Arena arena;
  RopeCacheCall call;
};

TEST_F(RopeCacheBadInput, OddRotaryDim) {
  call.rotary_dim = 9;
  expect("rotary_dim");
}
TEST_F(RopeCacheBadInput, NonFiniteFactor) {
  call.scaling = {.kind = K::dynamic_ntk, .factor = NAN, .max_position = 2048};
  expect("scaling.factor");
}
TEST_F(RopeCacheBadInput, LongRopeFactorsOfTheWrongLength) {
  call.scaling = {.kind = K::longrope, .factor = 32, .original_max_position = 4096};
  call.scaling.short_factor.assign(8, 1.0);  // rotary_dim, not rotary_dim/2
  call.scaling.long_factor.assign(4, 1.0);
  expect("scaling.short_factor.size");
}
TEST_F(RopeCacheBadInput, WrongPairCount) {
  call.cos = arena.alloc(DType::f32, {16, 8});
  expect("cos.shape[1]");
}
TEST_F(RopeCacheBadInput, SinRowsDifferFromCos) {
  call.sin = arena.alloc(DType::f32, {15, 4});
  expect("sin.shape[0]");
}
TEST_F(RopeCacheBadInput, RowsPastTheOracleRange) {
  // Stride-0 rows: never touched, the row count is rejected first.
  call.cos = view(call.cos.data, DType::f32, {kMaxPosition + 2, 4}, {0, 1});
  call.sin = view(call.sin.data, DType::f32, {kMaxPosition + 2, 4}, {0, 1});
  expect("cos.shape[0]");
}
TEST_F(RopeCacheBadInput, CosOverlapsSin) {
  const Tensor both = arena.alloc(DType::f32, {16, 8});
  call.cos = view(both.data, DType::f32, {16, 4}, {8, 1});
  call.sin = view(both.as<float>() + 2, DType::f32, {16, 4}, {8, 1});  // shares two columns
  expect("cos.data");
}

}  // namespace
}  // namespace posenc
