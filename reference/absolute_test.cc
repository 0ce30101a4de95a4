// The learned absolute table: the seeds' shapes and sizes, the lookup, and bad input.
#include <gtest/gtest.h>

#include <vector>

#include "properties/testing.h"
#include "reference/reference.h"

namespace posenc {
namespace {

using harness::Arena;
using harness::expect_rejected;

// Seeds: a position table [L, d] holds L·d parameters: GPT-2 small 1024 × 768 = 786,432;
// 2048 × 512 = 1,048,576. The kernel accepts exactly those rows and no more.
TEST(AbsoluteReference, TableSizesFromTheSeeds) {
  EXPECT_EQ(view(nullptr, DType::f32, {1024, 768}).numel(), 786432);
  EXPECT_EQ(view(nullptr, DType::f32, {2048, 512}).numel(), 1048576);
  std::vector<float> table(1024 * 768, 0.5f), x(768, 1.0f), out(768);
  std::vector<int64_t> last = {1023}, past = {1024};
  AbsoluteCall call{.x = view(x.data(), DType::f32, {1, 768}),
                    .table = view(table.data(), DType::f32, {1024, 768}),
                    .positions = view(last.data(), DType::i64, {1}),
                    .out = view(out.data(), DType::f32, {1, 768})};
  reference::absolute(call);
  EXPECT_EQ(out[767], 1.5f);
  call.positions = view(past.data(), DType::i64, {1});
  EXPECT_THROW(reference::absolute(call), Error);  // GPT-2 has no 1,025th row
}

// Seeds' worked example: "dog" [0.3, 0.7] at position 1 ([0.1, −0.2]) and 4 ([−0.5, 0.0]).
TEST(AbsoluteReference, SameTokenAtTwoPositionsDiffers) {
  std::vector<float> table(5 * 2, 0.0f);
  table[1 * 2 + 0] = 0.1f, table[1 * 2 + 1] = -0.2f;
  table[4 * 2 + 0] = -0.5f, table[4 * 2 + 1] = 0.0f;
  std::vector<float> x = {0.3f, 0.7f, 0.3f, 0.7f}, out(4);
  std::vector<int64_t> pos = {1, 4};
  AbsoluteCall call{.x = view(x.data(), DType::f32, {2, 2}),
                    .table = view(table.data(), DType::f32, {5, 2}),
                    .positions = view(pos.data(), DType::i64, {2}),
                    .out = view(out.data(), DType::f32, {2, 2})};
  reference::absolute(call);
  EXPECT_FLOAT_EQ(out[0], 0.4f);
  EXPECT_FLOAT_EQ(out[1], 0.5f);
  EXPECT_FLOAT_EQ(out[2], -0.2f);
  EXPECT_FLOAT_EQ(out[3], 0.7f);
}

TEST(AbsoluteReference, InPlaceAndInt32Positions) {
  std::vector<float> table = {1, 2, 3, 4}, x = {10, 20, 30, 40};
  std::vector<int32_t> pos = {1, 0};
  AbsoluteCall call{.x = view(x.data(), DType::f32, {2, 2}),
                    .table = view(table.data(), DType::f32, {2, 2}),
                    .positions = view(pos.data(), DType::i32, {2}),
                    .out = view(x.data(), DType::f32, {2, 2})};
  reference::absolute(call);
  EXPECT_EQ(x, (std::vector<float>{13, 24, 31, 42}));
}

class AbsoluteBadInput : public ::testing::Test {
 protected:
  AbsoluteBadInput() {
    call.x = arena.alloc(DType::f32, {3, 4});
    call.table = arena.alloc(DType::f32, {5, 4});
    call.positions = arena.alloc(DType::i64, {3});
    call.out = arena.alloc(DType::f32, {3, 4});
    for (int i = 0; i < 3; ++i) call.positions.as<int64_t>()[i] = i;
  }
  void expect(const std::string& argument) {
    expect_rejected(reference::absolute, call, arena, argument);
  }
  Arena arena;
  AbsoluteCall call;
};

TEST_F(AbsoluteBadInput, PositionEqualToRows) {
  call.positions.as<int64_t>()[1] = 5;
  expect("positions[1]");
}
TEST_F(AbsoluteBadInput, NegativePosition) {
  call.positions.as<int64_t>()[0] = -1;
  expect("positions[0]");
}
TEST_F(AbsoluteBadInput, ZeroDim) {
  call.x = arena.alloc(DType::f32, {3, 0});
  expect("x.shape[1]");
}
TEST_F(AbsoluteBadInput, TableWidthMismatch) {
  call.table = arena.alloc(DType::f32, {5, 3});
  expect("table.shape[1]");
}
TEST_F(AbsoluteBadInput, EmptyTableWithTokens) {
  call.table = arena.alloc(DType::f32, {0, 4});
  expect("table.shape[0]");
}
TEST_F(AbsoluteBadInput, PositionsLengthMismatch) {
  call.positions = arena.alloc(DType::i64, {2});
  expect("positions.shape[0]");
}
TEST_F(AbsoluteBadInput, FloatPositions) {
  call.positions.dtype = DType::f32;
  expect("positions.dtype");
}
TEST_F(AbsoluteBadInput, OutputOverlapsTable) {
  call.out = call.table;
  call.out.shape[0] = 3;
  expect("out.data");
}
TEST_F(AbsoluteBadInput, NegativeStride) {
  call.x.strides[1] = -1;
  expect("x.strides[1]");
}
TEST_F(AbsoluteBadInput, SizeOverflow) {
  call.x.shape = {int64_t{1} << 40, int64_t{1} << 40};
  expect("x.shape");
}

}  // namespace
}  // namespace posenc
