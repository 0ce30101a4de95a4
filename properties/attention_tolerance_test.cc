// The attention tolerance model measures an output in ulps of the values its row can see: keys
// hidden by the causal mask or by a −∞ bias neither tighten the unit (an ∞ in an unused KV-cache
// slot once made the unit ulp(∞) = 2⁻²⁴, so the fuzzer failed a 1-ulp neighbour of −9872.68) nor
// loosen it (a hidden 10³⁰ made any error pass).
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <limits>

#include "properties/generators.h"
#include "properties/harness.h"
#include "reference/reference.h"

namespace posenc::harness {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One query, one head, two keys of width 1: key 0 visible, key 1 hidden by the causal mask (or by
// a −∞ bias when `bias_hides` is set), with value v1 and key k1.
AttentionCall two_keys(Arena& arena, double v0, double v1, double k1, bool bias_hides) {
  AttentionCall call;
  call.q = arena.alloc(DType::f32, {1, 1, 1});
  call.k = arena.alloc(DType::f32, {2, 1, 1});
  call.v = arena.alloc(DType::f32, {2, 1, 1});
  call.out = arena.alloc(DType::f32, {1, 1, 1});
  store(call.q, 0, 0.5);
  store(call.k, 0, 0.25);
  store(call.k, call.k.offset(1, 0, 0), k1);
  store(call.v, 0, v0);
  store(call.v, call.v.offset(1, 0, 0), v1);
  if (bias_hides) {
    call.bias = arena.alloc(DType::f32, {1, 1, 2});
    store(*call.bias, 0, 0.0);
    store(*call.bias, call.bias->offset(0, 0, 1), -kInf);
  } else {
    call.mask = Mask::causal;
    call.q_positions = arena.alloc(DType::i32, {1});
    call.k_positions = arena.alloc(DType::i32, {2});
    Positions{.values = {0}, .dtype = DType::i32}.store(*call.q_positions);
    Positions{.values = {0, 1}, .dtype = DType::i32}.store(*call.k_positions);
  }
  return call;
}

// The worst error of `got` = the reference's output moved by `ulps` f32 ulps of itself, under
// bound 32 (optimized attention's).
Comparison moved_by(double ulps, double v0, double v1, double k1, bool bias_hides) {
  Arena expected_arena, got_arena;
  const AttentionCall expected = two_keys(expected_arena, v0, v1, k1, bias_hides);
  const AttentionCall got = two_keys(got_arena, v0, v1, k1, bias_hides);
  reference::attention(expected);
  const double out = load(expected.out, 0);
  EXPECT_EQ(out, static_cast<float>(v0));  // one visible key: the output is its value
  store(got.out, 0, out + ulps * ulp_f32(out));
  return compare(expected, got, 32);
}

TEST(AttentionTolerance, AHiddenInfiniteValueDoesNotShrinkTheUnit) {
  for (bool bias_hides : {false, true}) {
    // The fuzz finding: out = −9872.67773, the kernel one f32 ulp away.
    const Comparison one = moved_by(1, -9872.67773, kInf, 0.25, bias_hides);
    EXPECT_TRUE(one.ok) << one.describe();
    EXPECT_LE(one.worst, 1) << one.describe();
    const Comparison far = moved_by(40, -9872.67773, -kInf, 0.25, bias_hides);
    EXPECT_FALSE(far.ok) << far.describe();
  }
}

TEST(AttentionTolerance, AHiddenHugeValueOrKeyDoesNotWidenTheUnit) {
  for (bool bias_hides : {false, true}) {
    // 40 ulps of an output near 1 fail at bound 32, whatever the hidden key holds.
    const Comparison value = moved_by(40, 1.0, 1e30, 0.25, bias_hides);
    EXPECT_FALSE(value.ok) << value.describe();
    const Comparison key = moved_by(40, 1.0, 1.0, 1e20, bias_hides);
    EXPECT_FALSE(key.ok) << key.describe();
    EXPECT_NEAR(key.worst, 40 / 1.125, 1e-9) << key.describe();  // spread 1·0.5·0.25
  }
}

TEST(AttentionTolerance, AVisibleValueSetsTheUnit) {
  // Both keys visible (no mask, no bias): the larger value sets the unit, so an error of one ulp
  // of that value is one unit, not 2⁻²⁴·|out|⁻¹ of them.
  Arena expected_arena, got_arena;
  AttentionCall expected = two_keys(expected_arena, 1.0, 4096.0, 0.25, false);
  AttentionCall got = two_keys(got_arena, 1.0, 4096.0, 0.25, false);
  expected.mask = got.mask = Mask::none;
  expected.q_positions = expected.k_positions = got.q_positions = got.k_positions = std::nullopt;
  reference::attention(expected);
  const double out = load(expected.out, 0);
  store(got.out, 0, out + ulp_f32(4096.0));
  const Comparison c = compare(expected, got, 32);
  EXPECT_TRUE(c.ok) << c.describe();
  EXPECT_GT(c.worst, 0.5) << c.describe();
  EXPECT_LE(c.worst, 1) << c.describe();
}

}  // namespace
}  // namespace posenc::harness
