// Golden values for the ALiBi reference, from the public implementations' code paths, and bad
// input. None of Press's repository, Hugging Face's bloom tests or ggml's test-backend-ops states
// slope values as literals, so each golden value below is what the named code computes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "properties/testing.h"
#include "reference/reference.h"

namespace posenc {
namespace {

using harness::Arena;
using harness::expect_rejected;
using reference::alibi_slope;

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<double> slopes(int64_t n, double max_bias = 8) {
  std::vector<double> s(n);
  for (int64_t h = 0; h < n; ++h) s[h] = alibi_slope(h, n, max_bias);
  return s;
}

// ofirpress/attention_with_linear_biases, fairseq/models/transformer.py, get_slopes ->
// get_slopes_power_of_2(8): start = ratio = 2^(−2^−(log₂8 − 3)) = 1/2, slopes start·ratio^i.
// Hugging Face bloom/modeling_bloom.py build_alibi_tensor gives the same (base 2^−1, powers 1…8).
TEST(AlibiReference, EightHeadsArePowersOfOneHalf) {
  EXPECT_EQ(slopes(8), (std::vector<double>{1. / 2, 1. / 4, 1. / 8, 1. / 16, 1. / 32, 1. / 64,
                                            1. / 128, 1. / 256}));
}

// Press's get_slopes(1) = get_slopes_power_of_2(1) = [2^(−2^3)] = [1/256].
TEST(AlibiReference, OneHead) { EXPECT_EQ(slopes(1), std::vector<double>{1. / 256}); }

// Press's get_slopes(6), not a power of two: get_slopes_power_of_2(4) = [1/4, 1/16, 1/64, 1/256]
// followed by get_slopes(8)[0::2][:2] = [1/2, 1/8] (the interleaved extra heads).
TEST(AlibiReference, SixHeadsInterleave) {
  EXPECT_EQ(slopes(6), (std::vector<double>{1. / 4, 1. / 16, 1. / 64, 1. / 256, 1. / 2, 1. / 8}));
}

// Press's get_slopes(12): get_slopes_power_of_2(8) then get_slopes(16)[0::2][:4], which Python
// evaluates (start·ratio^i, start = ratio = 2^−0.5) as the doubles below. Its repeated products
// drift a few double ulps from 2^−(k+0.5); as float32 outputs the two are the same.
TEST(AlibiReference, TwelveHeadsInterleave) {
  const double press[12] = {0.5,
                            0.25,
                            0.125,
                            0.0625,
                            0.03125,
                            0.015625,
                            0.0078125,
                            0.00390625,
                            0.7071067811865476,
                            0.35355339059327384,
                            0.17677669529663692,
                            0.08838834764831849};
  const auto s = slopes(12);
  for (int h = 0; h < 12; ++h) {
    EXPECT_NEAR(s[h], press[h], 1e-15 * press[h]) << h;
    EXPECT_EQ(static_cast<float>(s[h]), static_cast<float>(press[h])) << h;
  }
  EXPECT_EQ(s[8], std::sqrt(0.5));
}

// ggml's form (ggml-cpu soft_max: m0 = 2^(−max_bias/c), m1 = 2^(−(max_bias/2)/c), slope
// m0^(h+1) for h < c, else m1^(2(h−c)+1)) with max_bias = 16, 4 + 1 heads: c = 4, m0 = 1/16,
// m1 = 1/4.
TEST(AlibiReference, MaxBiasScalesTheExponent) {
  EXPECT_EQ(slopes(5, 16), (std::vector<double>{1. / 16, 1. / 256, 1. / 4096, 1. / 65536, 1. / 4}));
}

// Causal bias for 2 heads (slopes 1/16, 1/256) at positions 0, 1, 2: −slope·(q − k) on and below
// the diagonal, −∞ above, as llama.cpp builds it (mask −|p0 − p1|, −∞ for future keys, scaled by
// ggml's slope). Press's and Hugging Face's form slope·k differs by −slope·q per row, a constant
// softmax ignores.
TEST(AlibiReference, SmallCausalExample) {
  std::vector<int64_t> pos = {0, 1, 2};
  std::vector<float> bias(2 * 3 * 3), slope(2);
  AlibiCall call{.n_heads = 2,
                 .causal = true,
                 .q_positions = view(pos.data(), DType::i64, {3}),
                 .k_positions = view(pos.data(), DType::i64, {3}),
                 .bias = view(bias.data(), DType::f32, {2, 3, 3}),
                 .slopes = view(slope.data(), DType::f32, {2})};
  reference::alibi(call);
  EXPECT_EQ(slope, (std::vector<float>{0.0625f, 0.00390625f}));
  const std::vector<float> head0 = {0, -kInf, -kInf, -0.0625f, 0, -kInf, -0.125f, -0.0625f, 0};
  EXPECT_EQ(std::vector<float>(bias.begin(), bias.begin() + 9), head0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j <= i; ++j) {
      const float ours = bias[9 + i * 3 + j], press = slope[1] * static_cast<float>(j);
      EXPECT_EQ(ours - press, -slope[1] * static_cast<float>(i)) << i << "," << j;
    }
  for (float b : bias) EXPECT_FALSE(b == 0 && std::signbit(b)) << "the diagonal is +0";
}

// Symmetric form while decoding against a cache: one query at 1000, keys at 0, 500, 1000, 1500.
// Keys after the query get the same penalty as keys before it.
TEST(AlibiReference, SymmetricDecodeStep) {
  std::vector<int64_t> q = {1000}, k = {0, 500, 1000, 1500};
  std::vector<float> bias(4);
  reference::alibi({.n_heads = 1,
                    .q_positions = view(q.data(), DType::i64, {1}),
                    .k_positions = view(k.data(), DType::i64, {4}),
                    .bias = view(bias.data(), DType::f32, {1, 1, 4})});
  EXPECT_EQ(bias, (std::vector<float>{-1000.f / 256, -500.f / 256, 0, -500.f / 256}));
}

// The far end of the position range: |Δ| = 2^24 with slope 1/256 is exactly −65536.
TEST(AlibiReference, DistanceOfTwoToTheTwentyFour) {
  std::vector<int32_t> q = {1 << 24}, k = {0, 1 << 24};
  std::vector<float> bias(2);
  reference::alibi({.n_heads = 1,
                    .causal = true,
                    .q_positions = view(q.data(), DType::i32, {1}),
                    .k_positions = view(k.data(), DType::i32, {2}),
                    .bias = view(bias.data(), DType::f32, {1, 1, 2})});
  EXPECT_EQ(bias, (std::vector<float>{-65536.f, 0.f}));
}

// The bias is the slope output times −|Δ|, rounded once, in every layout.
TEST(AlibiReference, StridedBiasMatchesContiguous) {
  const int64_t heads = 5, tq = 3, tk = 4;
  std::vector<int64_t> q = {7, 2, 9}, k = {0, 9, 3, 7};
  std::vector<float> flat(heads * tq * tk), strided(heads * tq * tk * 2);
  AlibiCall call{.n_heads = heads,
                 .causal = true,
                 .q_positions = view(q.data(), DType::i64, {tq}),
                 .k_positions = view(k.data(), DType::i64, {tk}),
                 .bias = view(flat.data(), DType::f32, {heads, tq, tk})};
  reference::alibi(call);
  call.bias = view(strided.data(), DType::f32, {heads, tq, tk}, {1, heads * tk * 2, heads * 2});
  reference::alibi(call);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j) {
        const float expected =
            k[j] > q[i] ? -kInf
                        : static_cast<float>(-alibi_slope(h, heads, 8) * double(q[i] - k[j]));
        EXPECT_EQ(flat[(h * tq + i) * tk + j], expected);
        EXPECT_EQ(strided[h + i * heads * tk * 2 + j * heads * 2], expected);
      }
}

// The causal bias plugs into attention as its additive bias and mask at once. With the causal
// mask instead, Press's and Hugging Face's form slope·k_pos (no −slope·q_pos term) gives the same
// attention output: softmax ignores a constant per row (reference-values.md, ALiBi).
TEST(AlibiReference, CausalBiasIsTheAttentionMaskAndMatchesPressForm) {
  const int64_t t = 5, heads = 3, d = 4;
  std::vector<float> q(t * heads * d), k(t * heads * d), v(t * heads * d);
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = static_cast<float>(std::sin(0.3 * i + 0.2));
    k[i] = static_cast<float>(std::cos(0.7 * i));
    v[i] = static_cast<float>(0.1 * (i % 9)) - 0.4f;
  }
  std::vector<int64_t> pos = {10, 11, 12, 13, 14};  // a chunk that does not start at 0
  std::vector<float> ours(heads * t * t), press(heads * t * t), out_ours(q.size()),
      out_press(q.size());
  reference::alibi({.n_heads = heads,
                    .causal = true,
                    .q_positions = view(pos.data(), DType::i64, {t}),
                    .k_positions = view(pos.data(), DType::i64, {t}),
                    .bias = view(ours.data(), DType::f32, {heads, t, t})});
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < t; ++j)
        press[(h * t + i) * t + j] =
            static_cast<float>(alibi_slope(h, heads, 8) * static_cast<double>(pos[j]));
  AttentionCall call{.q = view(q.data(), DType::f32, {t, heads, d}),
                     .k = view(k.data(), DType::f32, {t, heads, d}),
                     .v = view(v.data(), DType::f32, {t, heads, d}),
                     .out = view(out_ours.data(), DType::f32, {t, heads, d}),
                     .bias = view(ours.data(), DType::f32, {heads, t, t})};
  reference::attention(call);
  call.out = view(out_press.data(), DType::f32, {t, heads, d});
  call.mask = Mask::causal;
  call.q_positions = view(pos.data(), DType::i64, {t});
  call.k_positions = view(pos.data(), DType::i64, {t});
  call.bias = view(press.data(), DType::f32, {heads, t, t});
  reference::attention(call);
  for (size_t i = 0; i < out_ours.size(); ++i) EXPECT_NEAR(out_ours[i], out_press[i], 2e-6) << i;
  EXPECT_NE(out_ours[0], out_ours[heads * d]);  // rows differ: the check is not vacuous
}

class AlibiBadInput : public ::testing::Test {
 protected:
  AlibiBadInput() {
    call.n_heads = 4;
    call.q_positions = arena.alloc(DType::i64, {2});
    call.k_positions = arena.alloc(DType::i64, {3});
    for (int i = 0; i < 2; ++i) call.q_positions.as<int64_t>()[i] = 1 + i;
    for (int i = 0; i < 3; ++i) call.k_positions.as<int64_t>()[i] = i;
    call.bias = arena.alloc(DType::f32, {4, 2, 3});
    call.slopes = arena.alloc(DType::f32, {4});
  }
  void expect(const std::string& argument) {
    expect_rejected(reference::alibi, call, arena, argument);
  }
  Arena arena;
  AlibiCall call;
};

TEST_F(AlibiBadInput, ZeroHeads) {
  call.n_heads = 0;
  expect("n_heads");
}
TEST_F(AlibiBadInput, NonFiniteMaxBias) {
  call.max_bias = std::nan("");
  expect("max_bias");
}
TEST_F(AlibiBadInput, NonPositiveMaxBias) {
  call.max_bias = 0;
  expect("max_bias");
}
TEST_F(AlibiBadInput, BiasHeadsMismatch) {
  call.n_heads = 5;
  expect("bias.shape[0]");
}
TEST_F(AlibiBadInput, BiasKeysMismatch) {
  call.bias = arena.alloc(DType::f32, {4, 2, 4});
  expect("bias.shape[2]");
}
TEST_F(AlibiBadInput, SlopesShapeMismatch) {
  call.slopes = arena.alloc(DType::f32, {3});
  expect("slopes.shape[0]");
}
TEST_F(AlibiBadInput, NegativePosition) {
  call.k_positions.as<int64_t>()[1] = -1;
  expect("k_positions[1]");
}
TEST_F(AlibiBadInput, PositionPastTheOracleRange) {
  call.q_positions.as<int64_t>()[0] = kMaxPosition + 1;
  expect("q_positions[0]");
}
TEST_F(AlibiBadInput, BiasOverlapsPositions) {
  Tensor positions = call.bias;  // six f32 slots reread as three i64 keys, all 0
  std::memset(positions.data, 0, 3 * sizeof(int64_t));
  positions.dtype = DType::i64;
  positions.rank = 1;
  positions.shape[0] = 3;
  positions.strides[0] = 1;
  call.k_positions = positions;
  expect("bias.data");
}
TEST_F(AlibiBadInput, SlopesOverlapBias) {
  Tensor inside = *call.slopes;
  inside.data = call.bias.as<float>() + 2;
  call.slopes = inside;
  expect("slopes.data");
}
TEST_F(AlibiBadInput, SelfOverlappingBias) {
  call.bias.strides[1] = 0;
  expect("bias.strides[1]");
}
TEST_F(AlibiBadInput, WrongBiasDtype) {
  call.bias.dtype = DType::f64;
  expect("bias.dtype");
}
TEST_F(AlibiBadInput, WrongPositionDtype) {
  call.q_positions.dtype = DType::f32;
  expect("q_positions.dtype");
}

}  // namespace
}  // namespace posenc
