// Golden numbers for the sinusoidal reference, from the seeds (reference-values.md) and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "properties/testing.h"
#include "reference/reference.h"

namespace posenc {
namespace {

using harness::Arena;
using harness::expect_rejected;

std::vector<float> table(int64_t rows, int64_t d) {
  std::vector<float> pe(rows * d);
  SinusoidalCall call{.out = view(pe.data(), DType::f32, {rows, d})};
  reference::sinusoidal(call);
  return pe;
}

double dot(const float* a, const float* b, int64_t d) {
  double s = 0;
  for (int64_t c = 0; c < d; ++c) s += double(a[c]) * b[c];
  return s;
}

// Seeds: PE[0] = [0, 1, 0, 1]; PE[1] ≈ [0.841, 0.540, 0.010, 1.000]; PE[2] ≈ [0.909, −0.416,
// 0.020, 1.000] for d = 4, base 10000 (ω = 1 and 1/100).
TEST(SinusoidalReference, SeedRowsForD4) {
  const auto pe = table(3, 4);
  const float expected[3][4] = {
      {0, 1, 0, 1}, {0.841f, 0.540f, 0.010f, 1.000f}, {0.909f, -0.416f, 0.020f, 1.000f}};
  for (int p = 0; p < 3; ++p)
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(pe[p * 4 + c], expected[p][c], 5e-4) << p << "," << c;
  EXPECT_FLOAT_EQ(pe[1 * 4 + 0], std::sin(1.0f));
  EXPECT_FLOAT_EQ(pe[1 * 4 + 2], std::sin(0.01f));
}

// Seeds: PE[p]·PE[p+2] = cos 2 + cos 0.02 ≈ 0.5837 for every p (d = 4).
TEST(SinusoidalReference, DotProductDependsOnlyOnOffset) {
  const auto pe = table(40, 4);
  for (int p = 0; p + 2 < 40; ++p) EXPECT_NEAR(dot(&pe[p * 4], &pe[(p + 2) * 4], 4), 0.5837, 5e-5);
  EXPECT_NEAR(std::cos(2.0) + std::cos(0.02), 0.5837, 5e-5);
}

// Seeds: every pair has sin² + cos² = 1, so ‖PE[p]‖² = d/2 (16 for d = 32).
TEST(SinusoidalReference, SquaredNormIsHalfTheDim) {
  const auto pe = table(64, 32);
  for (int p = 0; p < 64; ++p) EXPECT_NEAR(dot(&pe[p * 32], &pe[p * 32], 32), 16.0, 1e-5);
}

// Seeds: in the 64 × 32 table the positions most similar to 20 are 20, then 19 and 21 (tied),
// then 18 and 22.
TEST(SinusoidalReference, NeighboursOfTwentyRankByDistance) {
  const auto pe = table(64, 32);
  std::vector<double> sim(64);
  for (int p = 0; p < 64; ++p) sim[p] = dot(&pe[p * 32], &pe[20 * 32], 32);
  std::vector<int> order(64);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return sim[a] > sim[b]; });
  EXPECT_EQ(order[0], 20);
  EXPECT_EQ(std::min(order[1], order[2]), 19);
  EXPECT_EQ(std::max(order[1], order[2]), 21);
  EXPECT_EQ(std::min(order[3], order[4]), 18);
  EXPECT_EQ(std::max(order[3], order[4]), 22);
  EXPECT_NEAR(sim[19], sim[21], 1e-6);  // tied: the dot product depends only on |offset|
}

// The add kernel with per-token positions equals x + the table row.
TEST(SinusoidalReference, AddUsesPerTokenPositions) {
  const auto pe = table(100, 6);
  std::vector<float> x = {0.5f, -1, 2, 0, 0.25f, 3, 1, 1, 1, 1, 1, 1};
  std::vector<int64_t> pos = {99, 7};
  std::vector<float> out(12);
  SinusoidalCall call{.out = view(out.data(), DType::f32, {2, 6}),
                      .x = view(x.data(), DType::f32, {2, 6}),
                      .positions = view(pos.data(), DType::i64, {2})};
  reference::sinusoidal(call);
  for (int c = 0; c < 6; ++c) {
    EXPECT_FLOAT_EQ(out[c], x[c] + pe[99 * 6 + c]);
    EXPECT_FLOAT_EQ(out[6 + c], x[6 + c] + pe[7 * 6 + c]);
  }
}

class SinusoidalBadInput : public ::testing::Test {
 protected:
  SinusoidalBadInput() {
    call.out = arena.alloc(DType::f32, {4, 8});
    call.x = arena.alloc(DType::f32, {4, 8});
    call.positions = arena.alloc(DType::i64, {4});
    for (int i = 0; i < 4; ++i) call.positions->as<int64_t>()[i] = i;
    for (int i = 0; i < 32; ++i) call.x->as<float>()[i] = 1;
  }
  void expect(const std::string& argument) {
    expect_rejected(reference::sinusoidal, call, arena, argument);
  }
  Arena arena;
  SinusoidalCall call;
};

TEST_F(SinusoidalBadInput, OddDim) {
  call.out = arena.alloc(DType::f32, {4, 7});
  call.x.reset();
  expect("out.shape[1]");
}
TEST_F(SinusoidalBadInput, ZeroDim) {
  call.out = arena.alloc(DType::f32, {4, 0});
  call.x.reset();
  expect("out.shape[1]");
}
TEST_F(SinusoidalBadInput, NonPositiveBase) {
  call.base = 0;
  expect("base");
}
TEST_F(SinusoidalBadInput, NonFiniteBase) {
  call.base = INFINITY;
  expect("base");
}
TEST_F(SinusoidalBadInput, NegativePosition) {
  call.positions->as<int64_t>()[2] = -1;
  expect("positions[2]");
}
TEST_F(SinusoidalBadInput, PositionPastTheOracleRange) {
  call.positions->as<int64_t>()[3] = kMaxPosition + 1;
  expect("positions[3]");
}
TEST_F(SinusoidalBadInput, MismatchedX) {
  call.x = arena.alloc(DType::f32, {4, 6});
  expect("x.shape[1]");
}
TEST_F(SinusoidalBadInput, MismatchedPositions) {
  call.positions = arena.alloc(DType::i64, {3});
  expect("positions.shape[0]");
}
TEST_F(SinusoidalBadInput, WrongDtype) {
  call.out.dtype = DType::i32;
  expect("out.dtype");
}
TEST_F(SinusoidalBadInput, OutputOverlapsInput) {
  Tensor shifted = *call.x;
  shifted.data = call.x->as<float>() + 1;
  shifted.shape[0] = 3;
  call.out = shifted;
  call.x->shape[0] = 3;
  call.positions->shape[0] = 3;
  expect("out.data");
}
TEST_F(SinusoidalBadInput, SelfOverlappingOutput) {
  call.out.strides[0] = 0;
  expect("out.strides[0]");
}
TEST_F(SinusoidalBadInput, NullData) {
  call.out.data = nullptr;
  expect("out.data");
}

}  // namespace
}  // namespace posenc
