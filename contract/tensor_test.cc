// Tensor views and the validation helpers every family's validate() is built from.
#include "posenc/tensor.h"

#include <gtest/gtest.h>

#include <vector>

#include "posenc/error.h"
#include "posenc/kernel.h"

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

TEST(Tensor, ViewVariantsFlagDtypeAndStrides) {
  float buf[16];
  Tensor a = view(buf, DType::f32, {2, 4});
  Tensor b = view(buf, DType::f32, {2, 4}, {8, 1});
  EXPECT_EQ(view_variants({&a}), variant::f32);
  EXPECT_EQ(view_variants({&a, &b}), variant::f32 | variant::strided);
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
