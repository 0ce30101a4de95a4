// Tensor views and the validation helpers every family's validate() is built from.
#include "posenc/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "posenc/error.h"
#include "posenc/kernel.h"
#include "posenc/position_facts.h"

namespace posenc {
namespace {

TEST(Tensor, ContiguousViewHasRowMajorStrides) {
  Tensor t = view(nullptr, DType::f32, {3, 4, 5});
  EXPECT_EQ(t.strides[0], 20);
  EXPECT_EQ(t.strides[1], 5);
  EXPECT_EQ(t.strides[2], 1);
  EXPECT_EQ(t.numel(), 60);
  EXPECT_TRUE(t.contiguous());
  EXPECT_FALSE(view(nullptr, DType::f32, {3, 4}, {5, 1}).contiguous());
  EXPECT_EQ(view(nullptr, DType::f32, {3, 4}, {5, 1}).describe(), "f32[3, 4] strides [5, 1]");
}

// required_variants() asks before validation, so a corrupted shape must not overflow (fuzz).
TEST(Tensor, ContiguousOfAnOverflowingViewIsFalse) {
  const int64_t huge = (int64_t{1} << 62) + 3;
  EXPECT_FALSE(view(nullptr, DType::f32, {huge, 52}, {52, 1}).contiguous());
  EXPECT_FALSE(view(nullptr, DType::f32, {3, huge, 4}, {1, 4, 1}).contiguous());
}

TEST(Tensor, ErrorNamesArgumentAndValue) {
  try {
    require(false, "rotary_dim", 7, "must be even");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "rotary_dim");
    EXPECT_EQ(e.value(), "7");
    EXPECT_STREQ(e.what(), "invalid argument rotary_dim = 7: must be even");
    const std::invalid_argument& base = e;  // callers may catch the standard type
    EXPECT_NE(std::string(base.what()).find("rotary_dim"), std::string::npos);
  }
}

TEST(Tensor, CheckedMulCatchesOverflow) {
  EXPECT_EQ(checked_mul(1 << 20, 1 << 20, "n"), int64_t{1} << 40);
  EXPECT_THROW(checked_mul(int64_t{1} << 40, int64_t{1} << 40, "n"), Error);
}

TEST(Tensor, ExtentOverflowIsRejected) {
  float x;
  Tensor t = view(&x, DType::f32, {2, 2}, {int64_t{1} << 62, 1});
  EXPECT_THROW(check_view(t, "x", 2, {DType::f32}), Error);
}

TEST(Tensor, EmptyViewMayHaveNullData) {
  Tensor t = view(nullptr, DType::f32, {0, 8});
  EXPECT_NO_THROW(check_view(t, "x", 2, {DType::f32}));
  t.shape[0] = 1;
  EXPECT_THROW(check_view(t, "x", 2, {DType::f32}), Error);
}

TEST(Tensor, SelfOverlapIsFoundForBroadcastAndOverlappingStrides) {
  float buf[64];
  EXPECT_NO_THROW(check_no_self_overlap(view(buf, DType::f32, {4, 8}), "out"));
  EXPECT_NO_THROW(check_no_self_overlap(view(buf, DType::f32, {4, 4}, {1, 4}), "out"));
  EXPECT_THROW(check_no_self_overlap(view(buf, DType::f32, {4, 8}, {0, 1}), "out"), Error);
  EXPECT_THROW(check_no_self_overlap(view(buf, DType::f32, {4, 8}, {4, 1}), "out"), Error);
  EXPECT_NO_THROW(check_no_self_overlap(view(buf, DType::f32, {1, 8}, {0, 1}), "out"));
}

// q, k and v packed per token (vLLM's qkv): the views interleave but share no element, so rope
// in place on q must not be refused because of k.
TEST(Tensor, PackedQkvViewsDoNotOverlap) {
  const int64_t tokens = 5, hq = 4, hk = 2, d = 8, row = (hq + 2 * hk) * d;
  std::vector<float> qkv(tokens * row);
  Tensor q = view(qkv.data(), DType::f32, {tokens, hq, d}, {row, d, 1});
  Tensor k = view(qkv.data() + hq * d, DType::f32, {tokens, hk, d}, {row, d, 1});
  Tensor v = view(qkv.data() + (hq + hk) * d, DType::f32, {tokens, hk, d}, {row, d, 1});
  EXPECT_NO_THROW(check_no_overlap(q, "q_out", k, "k"));
  EXPECT_NO_THROW(check_no_overlap(k, "k_out", q, "q"));
  EXPECT_NO_THROW(check_no_overlap(v, "v", q, "q"));
  EXPECT_NO_THROW(check_no_overlap(q, "q_out", q, "q", /*allow_identical=*/true));
  EXPECT_THROW(check_no_overlap(q, "q_out", q, "q"), Error);
  Tensor shifted = q;
  shifted.data = qkv.data() + 1;
  EXPECT_THROW(check_no_overlap(shifted, "q_out", q, "q", true), Error);
  EXPECT_THROW(check_no_overlap(shifted, "q_out", k, "k"), Error);  // last q elements reach k
}

TEST(Tensor, PositionsOutOfRangeNameTheIndex) {
  std::vector<int64_t> pos = {0, 5, 9};
  try {
    check_positions(view(pos.data(), DType::i64, {3}), "positions", 0, 8);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "positions[2]");
    EXPECT_EQ(e.value(), "9");
  }
}

// What the range test's pass learned of a view, for the bias kernels (checked_consecutive): it
// describes the values of that view's latest check only, never another view or stale values.
TEST(Tensor, CheckedConsecutiveDescribesTheLatestCheckOfThatView) {
  std::vector<int64_t> keys = {7, 8, 9, 10, 11}, queries = {11};
  std::vector<int32_t> narrow = {3, 4, 6};
  const Tensor k = view(keys.data(), DType::i64, {5}), q = view(queries.data(), DType::i64, {1});
  check_positions(q, "q_positions", 0, kMaxPosition);
  check_positions(k, "k_positions", 0, kMaxPosition);
  EXPECT_EQ(checked_consecutive(k), true);
  EXPECT_EQ(checked_consecutive(q), true);  // one position is consecutive
  Tensor head = k;
  head.shape[0] = 4;  // another view of the same data: not what was checked
  EXPECT_EQ(checked_consecutive(head), std::nullopt);
  keys[3] = 12;  // the values change: only the next check knows
  check_positions(k, "k_positions", 0, kMaxPosition);
  EXPECT_EQ(checked_consecutive(k), false);
  const Tensor n = view(narrow.data(), DType::i32, {3});
  check_positions(n, "positions", 0, 8);
  EXPECT_EQ(checked_consecutive(n), false);
  EXPECT_EQ(checked_consecutive(k), false);  // the last two views checked are kept
  EXPECT_EQ(checked_consecutive(q), std::nullopt);
  narrow[2] = 5;
  check_positions(n, "positions", 0, 8);
  EXPECT_EQ(checked_consecutive(n), true);
  const Tensor every_other = view(keys.data(), DType::i64, {2}, {2});
  check_positions(every_other, "positions", 0, kMaxPosition);
  EXPECT_EQ(checked_consecutive(every_other), std::nullopt);  // strided: not looked at
  keys[4] = 99;  // a failed check forgets what an earlier one found
  try {
    check_positions(k, "k_positions", 0, 20);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "k_positions[4]");
  }
  EXPECT_EQ(checked_consecutive(k), std::nullopt);
}

TEST(Tensor, ViewVariantsFlagDtypeAndStrides) {
  float buf[16];
  Tensor a = view(buf, DType::f32, {2, 4});
  Tensor b = view(buf, DType::f32, {2, 4}, {8, 1});
  EXPECT_EQ(view_variants({&a}), variant::f32);
  EXPECT_EQ(view_variants({&a, &b}), variant::f32 | variant::strided);
}

// store() rounds once from double to nearest, ties to even. The bit patterns are written out by
// hand from the formats: bf16 = f32's top 16 bits (8 significant bits), f16 = 1·5·10.
uint16_t bits_after_store(DType dtype, double value) {
  uint16_t bits = 0;
  store(view(&bits, dtype, {1}), 0, value);
  return bits;
}

TEST(Tensor, Bf16StoreRoundsOnceToNearestEven) {
  EXPECT_EQ(bits_after_store(DType::bf16, 1.0), 0x3F80);
  EXPECT_EQ(bits_after_store(DType::bf16, -2.0), 0xC000);
  EXPECT_EQ(bits_after_store(DType::bf16, 1 + 0x1p-8), 0x3F80);      // tie: to even (down)
  EXPECT_EQ(bits_after_store(DType::bf16, 1 + 3 * 0x1p-8), 0x3F82);  // tie: to even (up)
  // Just above the tie by less than half an f32 ulp: through f32 it would become the tie and
  // round down to 1; rounded once it goes up.
  EXPECT_EQ(bits_after_store(DType::bf16, 1 + 0x1p-8 + 0x1p-30), 0x3F81);
  EXPECT_EQ(bits_after_store(DType::bf16, 0x1p-133), 0x0001);  // smallest subnormal
  EXPECT_EQ(bits_after_store(DType::bf16, 0x1p-134), 0x0000);  // tie with 0: even
  EXPECT_EQ(bits_after_store(DType::bf16, 0x1.8p-134), 0x0001);
  EXPECT_EQ(bits_after_store(DType::bf16, 0x1.FEp127), 0x7F7F);  // largest finite
  EXPECT_EQ(bits_after_store(DType::bf16, 0x1.FFp127), 0x7F80);  // tie past it: ∞
  EXPECT_EQ(bits_after_store(DType::bf16, -INFINITY), 0xFF80);
  EXPECT_EQ(bits_after_store(DType::bf16, -0.0), 0x8000);
  const uint16_t nan = bits_after_store(DType::bf16, NAN);
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);
}

TEST(Tensor, F16StoreRoundsOnceToNearestEven) {
  EXPECT_EQ(bits_after_store(DType::f16, 1.0), 0x3C00);
  EXPECT_EQ(bits_after_store(DType::f16, -0.5), 0xB800);
  EXPECT_EQ(bits_after_store(DType::f16, 1 + 0x1p-11), 0x3C00);            // tie: to even
  EXPECT_EQ(bits_after_store(DType::f16, 1 + 0x1p-11 + 0x1p-40), 0x3C01);  // once, not via f32
  EXPECT_EQ(bits_after_store(DType::f16, 65504), 0x7BFF);
  EXPECT_EQ(bits_after_store(DType::f16, 65519.99), 0x7BFF);
  EXPECT_EQ(bits_after_store(DType::f16, 65520), 0x7C00);      // tie past the largest: ∞
  EXPECT_EQ(bits_after_store(DType::f16, 0x1p-14), 0x0400);    // smallest normal
  EXPECT_EQ(bits_after_store(DType::f16, 0x1p-24), 0x0001);    // smallest subnormal
  EXPECT_EQ(bits_after_store(DType::f16, 0x1p-25), 0x0000);    // tie with 0: even
  EXPECT_EQ(bits_after_store(DType::f16, 0x1.8p-24), 0x0002);  // tie: to even (up)
  EXPECT_EQ(bits_after_store(DType::f16, 0x3FFp-24), 0x03FF);  // largest subnormal
  EXPECT_EQ(bits_after_store(DType::f16, -INFINITY), 0xFC00);
  EXPECT_EQ(bits_after_store(DType::f16, NAN) & 0x7E00, 0x7E00);
}

// Over random doubles of every magnitude: the stored value is a grid point no farther from x than
// either grid neighbour, and at a tie the even one.
TEST(Tensor, HalfPrecisionStoreIsTheNearestGridPoint) {
  uint64_t state = 12345;
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (int n = 0; n < 200000; ++n) {
      state = state * 6364136223846793005u + 1442695040888963407u;
      const double u = static_cast<double>(state >> 11) * 0x1p-53 * 2 - 1;
      // Magnitudes from far below the subnormals to past the largest finite value.
      const double x = std::ldexp(u, static_cast<int>(state % 300) - 160);
      uint16_t bits = 0;
      const Tensor t = view(&bits, dtype, {1});
      store(t, 0, x);
      const double got = load(t, 0);
      if (std::isinf(got)) {
        EXPECT_GT(std::fabs(x), dtype == DType::bf16 ? 0x1.FEp127 : 65504.0) << x;
        continue;
      }
      for (int step : {-1, 1}) {
        uint16_t neighbour = static_cast<uint16_t>(bits + step);
        if ((bits & 0x7FFF) == 0 && step == -1) neighbour = bits ^ 0x8001;  // across zero
        const double other = load(view(&neighbour, dtype, {1}), 0);
        if (std::isnan(other) || std::isinf(other)) continue;
        const double mine = std::fabs(got - x), theirs = std::fabs(other - x);
        EXPECT_LE(mine, theirs) << dtype_name(dtype) << " x=" << x << " got " << got;
        if (mine == theirs && mine != 0) {
          EXPECT_EQ(bits & 1, 0) << "tie not to even at " << x;
        }
      }
    }
  }
}

TEST(Tensor, HalfPrecisionLoadsAreExact) {
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (double x : {1.0, -3.5, 0x1p-14, 0x1p-24, 0.1, 1e4, -0.0}) {
      uint16_t bits = 0;
      const Tensor t = view(&bits, dtype, {1});
      store(t, 0, x);
      const double once = load(t, 0);
      store(t, 0, once);  // a value on the grid stores as itself
      EXPECT_EQ(load(t, 0), once) << dtype_name(dtype) << " " << x;
      EXPECT_LE(std::fabs(once - x), std::fabs(x) * (dtype == DType::bf16 ? 0x1p-8 : 0x1p-11))
          << dtype_name(dtype) << " " << x;
    }
  }
  uint16_t f16_bits[] = {0x3555, 0x0001, 0x7C00, 0x7E00};  // 0.333252, 2⁻²⁴, ∞, NaN
  const Tensor f16 = view(f16_bits, DType::f16, {4});
  EXPECT_EQ(load(f16, 0), 0x1.554p-2);
  EXPECT_EQ(load(f16, 1), 0x1p-24);
  EXPECT_EQ(load(f16, 2), INFINITY);
  EXPECT_TRUE(std::isnan(load(f16, 3)));
  uint16_t bf16_bits[] = {0x3EAB};  // 0.333984375
  EXPECT_EQ(load(view(bf16_bits, DType::bf16, {1}), 0), 0x1.56p-2);
}

TEST(Tensor, MismatchedDtypesNameTheArgument) {
  uint16_t a[4], b[4];
  float c[4];
  EXPECT_NO_THROW(
      check_same_dtype(view(a, DType::bf16, {4}), "q_out", view(b, DType::bf16, {4}), "q"));
  try {
    check_same_dtype(view(c, DType::f32, {4}), "q_out", view(b, DType::bf16, {4}), "q");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "q_out.dtype");
    EXPECT_EQ(e.value(), "f32");
    EXPECT_NE(std::string(e.what()).find("must be bf16 like q"), std::string::npos) << e.what();
  }
}

TEST(Tensor, ThreadsComeFromTheCallOrTheEnvironment) {
  EXPECT_EQ(resolve_threads(3), 3);
  EXPECT_THROW(resolve_threads(-1), Error);
  setenv("POSENC_NUM_THREADS", "5", 1);
  EXPECT_EQ(resolve_threads(0), 5);
  setenv("POSENC_NUM_THREADS", "five", 1);
  EXPECT_THROW(resolve_threads(0), Error);
  unsetenv("POSENC_NUM_THREADS");
  EXPECT_GE(resolve_threads(0), 1);
}

}  // namespace
}  // namespace posenc
