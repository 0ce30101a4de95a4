// The attention reference on fixed examples from the seeds, its edge rules, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "properties/testing.h"
#include "reference/reference.h"

namespace posenc {
namespace {

using harness::Arena;
using harness::expect_rejected;

// Seeds (LM3-T2, "Positional encodings" exercise 2): with no positions and no mask,
// Attn(PX) = P·Attn(X). Three tokens, two heads, the permutation [2, 0, 1].
TEST(AttentionReference, PermutationEquivariantWithoutPositionsOrMask) {
  const int64_t t = 3, h = 2, d = 4;
  std::vector<float> q(t * h * d), k(t * h * d), v(t * h * d);
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = std::sin(0.7 * i + 0.1);
    k[i] = std::cos(1.3 * i);
    v[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  }
  const int perm[3] = {2, 0, 1};
  std::vector<float> qp(q.size()), kp(k.size()), vp(v.size());
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < h * d; ++c) {
      qp[r * h * d + c] = q[perm[r] * h * d + c];
      kp[r * h * d + c] = k[perm[r] * h * d + c];
      vp[r * h * d + c] = v[perm[r] * h * d + c];
    }
  std::vector<float> out(t * h * d), outp(t * h * d);
  auto run = [&](std::vector<float>& qq, std::vector<float>& kk, std::vector<float>& vv,
                 std::vector<float>& o) {
    reference::attention({.q = view(qq.data(), DType::f32, {t, h, d}),
                          .k = view(kk.data(), DType::f32, {t, h, d}),
                          .v = view(vv.data(), DType::f32, {t, h, d}),
                          .out = view(o.data(), DType::f32, {t, h, d})});
  };
  run(q, k, v, out);
  run(qp, kp, vp, outp);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < h * d; ++c)
      EXPECT_NEAR(outp[r * h * d + c], out[perm[r] * h * d + c], 1e-6);
}

// Causal, by hand: scale 1, q = [1, 1], k = [0, ln 3], v = [10, 20]. Query 0 sees key 0 only
// (10); query 1 weighs the keys 1 : 3, (10 + 60)/4 = 17.5. Unmasked, both rows give 17.5.
TEST(AttentionReference, CausalByHand) {
  std::vector<float> q = {1, 1}, k = {0, static_cast<float>(std::log(3.0))}, v = {10, 20}, out(2);
  AttentionCall call{.q = view(q.data(), DType::f32, {2, 1, 1}),
                     .k = view(k.data(), DType::f32, {2, 1, 1}),
                     .v = view(v.data(), DType::f32, {2, 1, 1}),
                     .out = view(out.data(), DType::f32, {2, 1, 1}),
                     .mask = Mask::causal,
                     .scale = 1.0};
  reference::attention(call);
  EXPECT_FLOAT_EQ(out[0], 10.0f);
  EXPECT_FLOAT_EQ(out[1], 17.5f);
  call.mask = Mask::none;
  reference::attention(call);
  EXPECT_FLOAT_EQ(out[0], 17.5f);
  EXPECT_FLOAT_EQ(out[1], 17.5f);
}

// Decoding against a cache: without positions the single query is the last token and sees every
// key; with explicit positions it sees only keys at or before its own.
TEST(AttentionReference, CausalPositionsDefaultToTheEnd) {
  std::vector<float> q = {0}, k = {0, 0, 0}, v = {1, 2, 6}, out(1);
  std::vector<int64_t> qpos = {1}, kpos = {0, 1, 2};
  AttentionCall call{.q = view(q.data(), DType::f32, {1, 1, 1}),
                     .k = view(k.data(), DType::f32, {3, 1, 1}),
                     .v = view(v.data(), DType::f32, {3, 1, 1}),
                     .out = view(out.data(), DType::f32, {1, 1, 1}),
                     .mask = Mask::causal};
  reference::attention(call);
  EXPECT_FLOAT_EQ(out[0], 3.0f);  // (1 + 2 + 6) / 3
  call.q_positions = view(qpos.data(), DType::i64, {1});
  call.k_positions = view(kpos.data(), DType::i64, {3});
  reference::attention(call);
  EXPECT_FLOAT_EQ(out[0], 1.5f);  // (1 + 2) / 2
}

// Sliding window by hand: q = 0 weighs every visible key alike, v = [1, 2, 4, 8] at positions
// 0 … 3. The bound is inclusive: window_left = w keeps keys w positions back.
TEST(AttentionReference, SlidingWindowByHand) {
  std::vector<float> q = {0}, k = {0, 0, 0, 0}, v = {1, 2, 4, 8}, out(1);
  std::vector<int64_t> qpos = {1}, kpos = {0, 1, 2, 3};
  AttentionCall call{.q = view(q.data(), DType::f32, {1, 1, 1}),
                     .k = view(k.data(), DType::f32, {4, 1, 1}),
                     .v = view(v.data(), DType::f32, {4, 1, 1}),
                     .out = view(out.data(), DType::f32, {1, 1, 1}),
                     .mask = Mask::causal,
                     .window_left = 1};
  reference::attention(call);  // the query at position 3 sees keys 2 and 3
  EXPECT_FLOAT_EQ(out[0], 6.0f);
  call.window_left = 0;  // only its own position
  reference::attention(call);
  EXPECT_FLOAT_EQ(out[0], 8.0f);
  // Without causal the window bounds the past only: at position 1 with window 0, keys 1, 2, 3.
  call.mask = Mask::none;
  call.q_positions = view(qpos.data(), DType::i64, {1});
  call.k_positions = view(kpos.data(), DType::i64, {4});
  reference::attention(call);
  EXPECT_FLOAT_EQ(out[0], 14.0f / 3);
  call.window_left = 1;  // and key 0, one position back
  reference::attention(call);
  EXPECT_FLOAT_EQ(out[0], 15.0f / 4);
}

// Chunks by hand (Llama 4): uniform weights over the keys of the query's own chunk, positions
// 0 … 5 with values 1, 2, 4, …, 32. With chunk_size 4 the queries at 4 and 5 see keys 4 and 5;
// under causal the query at 4 sees only key 4, its chunk's first position.
TEST(AttentionReference, ChunkedByHand) {
  std::vector<float> q = {0, 0}, k(6, 0), v = {1, 2, 4, 8, 16, 32}, out(2);
  AttentionCall call{.q = view(q.data(), DType::f32, {2, 1, 1}),
                     .k = view(k.data(), DType::f32, {6, 1, 1}),
                     .v = view(v.data(), DType::f32, {6, 1, 1}),
                     .out = view(out.data(), DType::f32, {2, 1, 1}),
                     .chunk_size = 4};
  reference::attention(call);  // queries at positions 4 and 5
  EXPECT_FLOAT_EQ(out[0], 24.0f);
  EXPECT_FLOAT_EQ(out[1], 24.0f);
  call.mask = Mask::causal;
  reference::attention(call);
  EXPECT_FLOAT_EQ(out[0], 16.0f);
  EXPECT_FLOAT_EQ(out[1], 24.0f);
  call.chunk_size = 3;  // positions 3, 4, 5
  reference::attention(call);
  EXPECT_FLOAT_EQ(out[0], 12.0f);
  EXPECT_FLOAT_EQ(out[1], 56.0f / 3);
}

// A sink by hand: two keys of score 0 with values 1 and 3, and a sink of ln 2, weigh 1 : 1 : 2,
// so (1 + 3)/4 = 1. A −∞ sink is none; a sink of 1000 takes all the weight without overflowing;
// a row that sees no key is zeros.
TEST(AttentionReference, SinkByHand) {
  std::vector<float> q = {0}, k = {0, 0}, v = {1, 3}, out(1), sink = {std::log(2.0f)};
  std::vector<int64_t> qpos = {0}, kpos = {1, 2};
  AttentionCall call{.q = view(q.data(), DType::f32, {1, 1, 1}),
                     .k = view(k.data(), DType::f32, {2, 1, 1}),
                     .v = view(v.data(), DType::f32, {2, 1, 1}),
                     .out = view(out.data(), DType::f32, {1, 1, 1}),
                     .sinks = view(sink.data(), DType::f32, {1})};
  reference::attention(call);
  EXPECT_NEAR(out[0], 1.0f, 1e-6);
  sink[0] = -INFINITY;
  reference::attention(call);
  EXPECT_FLOAT_EQ(out[0], 2.0f);
  sink[0] = 1000;
  reference::attention(call);
  EXPECT_EQ(out[0], 0.0f);
  sink[0] = 0;  // causal, the query at position 0 before both keys
  call.mask = Mask::causal;
  call.q_positions = view(qpos.data(), DType::i64, {1});
  call.k_positions = view(kpos.data(), DType::i64, {2});
  reference::attention(call);
  EXPECT_EQ(out[0], 0.0f);
}

// Fused ALiBi by hand: scores 0, a slope of ln 2 at distances 1 and 0 weighs the keys 1/2 : 1,
// (10/2 + 40)/1.5 = 30; without causal a key one position after the query weighs 1/2 too.
TEST(AttentionReference, AlibiByHand) {
  std::vector<float> q = {0}, k = {0, 0, 0}, v = {10, 40, 70}, out(1), slope = {std::log(2.0f)};
  AttentionCall call{.q = view(q.data(), DType::f32, {1, 1, 1}),
                     .k = view(k.data(), DType::f32, {2, 1, 1}),
                     .v = view(v.data(), DType::f32, {2, 1, 1}),
                     .out = view(out.data(), DType::f32, {1, 1, 1}),
                     .alibi_slopes = view(slope.data(), DType::f32, {1})};
  reference::attention(call);  // the query at position 1
  EXPECT_NEAR(out[0], 30.0f, 1e-5);
  std::vector<int64_t> qpos = {1}, kpos = {0, 1, 2};
  call.k = view(k.data(), DType::f32, {3, 1, 1});
  call.v = view(v.data(), DType::f32, {3, 1, 1});
  call.q_positions = view(qpos.data(), DType::i64, {1});
  call.k_positions = view(kpos.data(), DType::i64, {3});
  reference::attention(call);  // (5 + 40 + 35)/2
  EXPECT_NEAR(out[0], 40.0f, 1e-5);
  call.mask = Mask::causal;
  reference::attention(call);
  EXPECT_NEAR(out[0], 30.0f, 1e-5);
}

// Softcap by hand: scale 1, logits q·k = [0, 2], cap 1: weights e^0 : e^tanh(2), and the bias is
// added after the cap (a bias of 3 on key 0 gives e^3 : e^tanh(2)).
TEST(AttentionReference, SoftcapByHand) {
  std::vector<float> q = {1}, k = {0, 2}, v = {0, 1}, out(1), bias = {0, 0};
  AttentionCall call{.q = view(q.data(), DType::f32, {1, 1, 1}),
                     .k = view(k.data(), DType::f32, {2, 1, 1}),
                     .v = view(v.data(), DType::f32, {2, 1, 1}),
                     .out = view(out.data(), DType::f32, {1, 1, 1}),
                     .scale = 1.0,
                     .softcap = 1.0};
  const double t = std::exp(std::tanh(2.0));
  reference::attention(call);
  EXPECT_FLOAT_EQ(out[0], t / (1 + t));
  bias[0] = 3;
  call.bias = view(bias.data(), DType::f32, {1, 1, 2});
  reference::attention(call);
  EXPECT_FLOAT_EQ(out[0], t / (std::exp(3.0) + t));
}

// A row with no visible key is zeros; a masked key's value is never read, so a NaN in an unused
// cache slot cannot poison the output.
// lse = ln Σ exp(score), the natural log: scores 0 and 2 give ln(1 + e²); a bias of 3 on the first
// key, ln(e³ + e²); a row that sees no key, −∞ (and zeros).
TEST(AttentionReference, LseByHand) {
  std::vector<float> q = {1}, k = {0, 2}, v = {0, 1}, out(1), lse(1), bias = {3, 0};
  std::vector<int64_t> q_pos = {0}, k_pos = {1, 2};
  AttentionCall call{.q = view(q.data(), DType::f32, {1, 1, 1}),
                     .k = view(k.data(), DType::f32, {2, 1, 1}),
                     .v = view(v.data(), DType::f32, {2, 1, 1}),
                     .out = view(out.data(), DType::f32, {1, 1, 1}),
                     .scale = 1.0,
                     .lse = view(lse.data(), DType::f32, {1, 1})};
  reference::attention(call);
  EXPECT_FLOAT_EQ(lse[0], std::log(1 + std::exp(2.0)));
  call.bias = view(bias.data(), DType::f32, {1, 1, 2});
  reference::attention(call);
  EXPECT_FLOAT_EQ(lse[0], std::log(std::exp(3.0) + std::exp(2.0)));
  call.mask = Mask::causal;
  call.q_positions = view(q_pos.data(), DType::i64, {1});
  call.k_positions = view(k_pos.data(), DType::i64, {2});
  reference::attention(call);
  EXPECT_EQ(lse[0], -INFINITY);
  EXPECT_EQ(out[0], 0.0f);
}

TEST(AttentionReference, FullyMaskedRowIsZeroAndMaskedValuesAreNotRead) {
  std::vector<float> q = {1, 1}, k = {1, 1}, v = {5, NAN}, out = {-1, -1};
  std::vector<int64_t> qpos = {0, 0}, kpos = {1, 0};
  const float inf = INFINITY;
  std::vector<float> bias = {0, -inf, -inf, -inf};  // row 1: every key biased out
  AttentionCall call{.q = view(q.data(), DType::f32, {2, 1, 1}),
                     .k = view(k.data(), DType::f32, {2, 1, 1}),
                     .v = view(v.data(), DType::f32, {2, 1, 1}),
                     .out = view(out.data(), DType::f32, {2, 1, 1}),
                     .mask = Mask::causal,
                     .q_positions = view(qpos.data(), DType::i64, {2}),
                     .k_positions = view(kpos.data(), DType::i64, {2}),
                     .bias = view(bias.data(), DType::f32, {1, 2, 2})};
  reference::attention(call);
  // Row 0: key 0 is causally masked (position 1 > 0), key 1 is biased out: no visible key.
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  bias = {-inf, 0, -inf, -inf};
  reference::attention(call);
  EXPECT_TRUE(std::isnan(out[0]));  // the visible key's value is NaN
  kpos = {0, 1};
  bias = {0, -inf, -inf, -inf};
  reference::attention(call);
  EXPECT_EQ(out[0], 5.0f);  // key 1 (NaN value) is masked
}

// GQA: four query heads share two kv heads, h → h / 2.
TEST(AttentionReference, GroupedQueryHeadsReadTheirKvHead) {
  std::vector<float> q(4, 0.0f), k(2, 0.0f), v = {3, 7}, out(4);
  reference::attention({.q = view(q.data(), DType::f32, {1, 4, 1}),
                        .k = view(k.data(), DType::f32, {1, 2, 1}),
                        .v = view(v.data(), DType::f32, {1, 2, 1}),
                        .out = view(out.data(), DType::f32, {1, 4, 1})});
  EXPECT_EQ(out, (std::vector<float>{3, 3, 7, 7}));
}

class AttentionBadInput : public ::testing::Test {
 protected:
  AttentionBadInput() {
    call.q = arena.alloc(DType::f32, {2, 4, 8});
    call.k = arena.alloc(DType::f32, {3, 2, 8});
    call.v = arena.alloc(DType::f32, {3, 2, 8});
    call.out = arena.alloc(DType::f32, {2, 4, 8});
  }
  void expect(const std::string& argument) {
    expect_rejected(reference::attention, call, arena, argument);
  }
  Arena arena;
  AttentionCall call;
};

TEST_F(AttentionBadInput, HeadsNotAMultiple) {
  call.k = arena.alloc(DType::f32, {3, 3, 8});
  call.v = arena.alloc(DType::f32, {3, 3, 8});
  expect("q.shape[1]");
}
TEST_F(AttentionBadInput, ZeroHeadDim) {
  call.q = arena.alloc(DType::f32, {2, 4, 0});
  expect("q.shape[2]");
}
TEST_F(AttentionBadInput, ZeroKvHeads) {
  call.k = arena.alloc(DType::f32, {3, 0, 8});
  expect("k.shape[1]");
}
TEST_F(AttentionBadInput, KeyDimMismatch) {
  call.k = arena.alloc(DType::f32, {3, 2, 7});
  expect("k.shape[2]");
}
TEST_F(AttentionBadInput, ValueLengthMismatch) {
  call.v = arena.alloc(DType::f32, {4, 2, 8});
  expect("v.shape[0]");
}
TEST_F(AttentionBadInput, OutShapeMismatch) {
  call.out = arena.alloc(DType::f32, {2, 4, 7});
  expect("out.shape[2]");
}
TEST_F(AttentionBadInput, BiasShapeMismatch) {
  call.bias = arena.alloc(DType::f32, {4, 2, 2});
  expect("bias.shape[2]");
}
TEST_F(AttentionBadInput, NonFiniteScale) {
  call.scale = INFINITY;
  expect("scale");
}
TEST_F(AttentionBadInput, OnlyOnePositionTensor) {
  call.q_positions = arena.alloc(DType::i64, {2});
  expect("q_positions");
}
TEST_F(AttentionBadInput, NegativePosition) {
  call.mask = Mask::causal;
  call.q_positions = arena.alloc(DType::i64, {2});
  call.k_positions = arena.alloc(DType::i64, {3});
  for (int i = 0; i < 2; ++i) call.q_positions->as<int64_t>()[i] = i;
  for (int i = 0; i < 3; ++i) call.k_positions->as<int64_t>()[i] = i - 1;
  expect("k_positions[0]");
}
TEST_F(AttentionBadInput, WindowBelowMinusOne) {
  call.window_left = -2;
  expect("window_left");
}
TEST_F(AttentionBadInput, NegativeSoftcap) {
  call.softcap = -1;
  expect("softcap");
}
TEST_F(AttentionBadInput, OutputAliasesQuery) {
  call.out = call.q;
  expect("out.data");
}
TEST_F(AttentionBadInput, LseShapeMismatch) {
  call.lse = arena.alloc(DType::f32, {2, 3});
  expect("lse.shape[1]");
}
TEST_F(AttentionBadInput, LseNotF32) {
  call.lse = arena.alloc(DType::f16, {2, 4});
  expect("lse.dtype");
}
TEST_F(AttentionBadInput, LseOverlapsOut) {
  call.lse = view(call.out.data, DType::f32, {2, 4});
  expect("lse.data");
}
TEST_F(AttentionBadInput, WrongRank) {
  call.q.rank = 2;
  expect("q.rank");
}

}  // namespace
}  // namespace posenc
