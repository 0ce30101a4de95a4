// Golden buckets for the T5 reference and bad input. Hugging Face's T5 tests and T5X's
// RelativePositionBiasesTest check the bias only through randomly initialised tables, so the
// buckets below are what Hugging Face's code computes: transformers
// src/transformers/models/t5/modeling_t5.py, T5Attention._relative_position_bucket, evaluated
// operation by operation in float32 (emulated with Python's struct 'f' rounding) and checked
// against exact integer arithmetic, (r/e)^(n−e) ≥ (max_distance/e)^k, which agrees on every value
// here except where a test says otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "properties/testing.h"
#include "reference/reference.h"

namespace posenc {
namespace {

using harness::Arena;
using harness::expect_rejected;
using reference::t5_bucket;

using Golden = std::vector<std::pair<int64_t, int64_t>>;  // (k_pos − q_pos, bucket)

void expect_buckets(const Golden& golden, bool bidirectional, int64_t n_buckets,
                    int64_t max_distance) {
  for (auto [rp, bucket] : golden)
    EXPECT_EQ(t5_bucket(rp, bidirectional, n_buckets, max_distance), bucket) << "rp = " << rp;
}

// Defaults (32 buckets, max_distance 128), bidirectional: 16 buckets per direction, 8 exact, then
// 8–11 → 8, 12–15 → 9, 16–22 → 10, 23–31 → 11, 32–45 → 12, 46–63 → 13, 64–90 → 14, ≥ 91 → 15;
// keys after the query (rp > 0) add 16.
TEST(T5Reference, DefaultBidirectionalBuckets) {
  expect_buckets(
      {{0, 0},     {1, 17},    {2, 18},     {7, 23},         {8, 24},    {11, 24},      {12, 25},
       {15, 25},   {16, 26},   {17, 26},    {22, 26},        {23, 27},   {31, 27},      {32, 28},
       {33, 28},   {45, 28},   {46, 29},    {63, 29},        {64, 30},   {65, 30},      {90, 30},
       {91, 31},   {127, 31},  {128, 31},   {129, 31},       {1000, 31}, {1 << 24, 31}, {-1, 1},
       {-2, 2},    {-7, 7},    {-8, 8},     {-11, 8},        {-12, 9},   {-15, 9},      {-16, 10},
       {-17, 10},  {-22, 10},  {-23, 11},   {-31, 11},       {-32, 12},  {-33, 12},     {-45, 12},
       {-46, 13},  {-63, 13},  {-64, 14},   {-65, 14},       {-90, 14},  {-91, 15},     {-127, 15},
       {-128, 15}, {-129, 15}, {-1000, 15}, {-(1 << 24), 15}},
      true, 32, 128);
}

// Defaults, causal (the decoder): keys after the query all share bucket 0; 16 exact buckets, then
// 16 logarithmic ones up to 128.
TEST(T5Reference, DefaultCausalBuckets) {
  expect_buckets({{0, 0},    {1, 0},     {100, 0},   {1 << 24, 0}, {-1, 1},     {-2, 2},
                  {-7, 7},   {-8, 8},    {-11, 11},  {-12, 12},    {-15, 15},   {-16, 16},
                  {-17, 16}, {-22, 18},  {-23, 18},  {-31, 21},    {-32, 21},   {-33, 21},
                  {-45, 23}, {-46, 24},  {-63, 26},  {-64, 26},    {-65, 26},   {-90, 29},
                  {-91, 29}, {-127, 31}, {-128, 31}, {-129, 31},   {-1000, 31}, {-(1 << 24), 31}},
                 false, 32, 128);
}

// Non-default tables: 64 buckets up to 256 (bidirectional), 10 buckets up to 20 (causal).
TEST(T5Reference, NonDefaultBuckets) {
  expect_buckets({{0, 0},        {1, 33},   {15, 47},   {16, 48},   {17, 48},    {22, 49},
                  {23, 50},      {31, 51},  {32, 52},   {45, 53},   {46, 54},    {63, 55},
                  {64, 56},      {90, 57},  {91, 58},   {127, 59},  {128, 60},   {1000, 63},
                  {1 << 24, 63}, {-1, 1},   {-15, 15},  {-16, 16},  {-22, 17},   {-23, 18},
                  {-32, 20},     {-64, 24}, {-128, 28}, {-129, 28}, {-1000, 31}, {-(1 << 24), 31}},
                 true, 64, 256);
  expect_buckets({{0, 0},
                  {-4, 4},
                  {-5, 5},
                  {-6, 5},
                  {-7, 6},
                  {-8, 6},
                  {-9, 7},
                  {-11, 7},
                  {-12, 8},
                  {-15, 8},
                  {-16, 9},
                  {-20, 9},
                  {-24, 9},
                  {3, 0}},
                 false, 10, 20);
}

// Exact bucket boundaries r = e·(max_distance/e)^(k/(n−e)): with the defaults, bidirectional, at
// r = 16, 32, 64. float32 gives ln 2^k = k·float(ln 2) exactly, so ln(r/8)/ln 16·8 is exactly
// 2, 4, 6 and the bucket changes at the boundary itself, as in exact arithmetic.
TEST(T5Reference, DefaultBoundariesLandOnTheBoundary) {
  for (auto [r, bucket] : Golden{{15, 9}, {16, 10}, {31, 11}, {32, 12}, {63, 13}, {64, 14}}) {
    EXPECT_EQ(t5_bucket(-r, true, 32, 128), bucket) << r;
    EXPECT_EQ(t5_bucket(r, true, 32, 128), 16 + bucket) << r;
  }
}

// Where float32 and exact arithmetic part: the reference follows Hugging Face's float32.
// Causal, 32 buckets, max_distance 939, r = 728: float32 computes 728/16 = 45.5, ln 45.5 =
// 3.8177123, ln(939/16) = 4.0722265, quotient 0.9375 exactly, ·16 = 15 → bucket 31; in exact (and
// fp64) arithmetic the value is 14.999999 → bucket 30. Causal, 64 buckets, max_distance 3314,
// r = 2145: float32 gives 28.999998 → bucket 60; exact 29.0000005 → bucket 61.
TEST(T5Reference, FollowsFloat32WhereItDiffersFromExactArithmetic) {
  EXPECT_EQ(t5_bucket(-728, false, 32, 939), 31);
  EXPECT_EQ(t5_bucket(-2145, false, 64, 3314), 60);
  // The fp64 evaluation lands on the other side: these cases do discriminate.
  EXPECT_EQ(std::trunc(std::log(728.0 / 16) / std::log(939.0 / 16) * 16), 14);
  EXPECT_EQ(std::trunc(std::log(2145.0 / 32) / std::log(3314.0 / 32) * 32), 29);
}

// The extremes of int64: no overflow in |rp|, no log of 0, nothing non-finite converted.
TEST(T5Reference, ExtremeRelativePositions) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(t5_bucket(kMin, true, 32, 128), 15);
  EXPECT_EQ(t5_bucket(kMax, true, 32, 128), 31);
  EXPECT_EQ(t5_bucket(kMin, false, 32, 128), 31);
  EXPECT_EQ(t5_bucket(kMax, false, 32, 128), 0);
}

// For any accepted configuration, buckets stay in [0, n), never decrease with distance, start the
// logarithmic range at e and end at the last bucket; rp and −rp use disjoint halves when
// bidirectional. Swept densely to 4096 and at every power of two to 2^24.
TEST(T5Reference, BucketsAreMonotoneAndInRange) {
  struct Config {
    bool bidirectional;
    int64_t n_buckets, max_distance;
  };
  const Config configs[] = {{true, 32, 128},    {false, 32, 128},
                            {true, 4, 2},       {false, 2, 2},
                            {false, 3, 2},      {true, 5, 2},
                            {true, 64, 65},     {false, 320, 800},
                            {true, 7, 1000000}, {false, 1 << 20, (1 << 19) + 1}};
  std::vector<int64_t> distances;
  for (int64_t r = 0; r <= 4096; ++r) distances.push_back(r);
  for (int64_t r = 8192; r <= (int64_t{1} << 24); r *= 2) distances.push_back(r);
  int64_t checked = 0;
  for (const Config& c : configs) {
    const int64_t n = c.bidirectional ? c.n_buckets / 2 : c.n_buckets, exact = n / 2;
    int64_t previous = 0;
    for (int64_t r : distances) {
      const int64_t b = t5_bucket(-r, c.bidirectional, c.n_buckets, c.max_distance);
      ASSERT_GE(b, previous) << "r = " << r;
      ASSERT_LT(b, n) << "r = " << r;
      if (r <= exact) {
        ASSERT_EQ(b, r);
      }
      if (r >= c.max_distance) {
        ASSERT_EQ(b, n - 1) << "r = " << r;
      }
      const int64_t after = t5_bucket(r, c.bidirectional, c.n_buckets, c.max_distance);
      ASSERT_EQ(after, c.bidirectional && r > 0 ? n + b : c.bidirectional ? b : 0) << "r = " << r;
      previous = b;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 10 * 4097 + 10 * 12);
}

// The bias looks the bucket up per head: table[b, h] = 100·h + b, one query at 3 and keys at
// 0, 3, 4, 20, 200 (rp = −3, 0, 1, 17, 197 → buckets 3, 0, 17, 26, 31 with the defaults).
TEST(T5Reference, BiasIsTheTableRowOfTheBucket) {
  const int64_t heads = 3;
  std::vector<float> table(32 * heads);
  for (int b = 0; b < 32; ++b)
    for (int h = 0; h < heads; ++h) table[b * heads + h] = static_cast<float>(100 * h + b);
  std::vector<int64_t> q = {3}, k = {0, 3, 4, 20, 200};
  std::vector<float> bias(heads * 5);
  reference::t5({.q_positions = view(q.data(), DType::i64, {1}),
                 .k_positions = view(k.data(), DType::i64, {5}),
                 .table = view(table.data(), DType::f32, {32, heads}),
                 .bias = view(bias.data(), DType::f32, {heads, 1, 5})});
  for (int h = 0; h < heads; ++h) {
    const float base = static_cast<float>(100 * h);
    EXPECT_EQ(std::vector<float>(bias.begin() + 5 * h, bias.begin() + 5 * h + 5),
              (std::vector<float>{base + 3, base + 0, base + 17, base + 26, base + 31}))
        << "head " << h;
  }
}

// A transposed table and a strided bias with i32 positions give the same bits as contiguous ones.
TEST(T5Reference, StridedViewsMatchContiguous) {
  const int64_t heads = 2, buckets = 8, tq = 3, tk = 4;
  std::vector<float> table(buckets * heads), transposed(buckets * heads);
  for (int b = 0; b < buckets; ++b)
    for (int h = 0; h < heads; ++h) {
      table[b * heads + h] = 0.25f * b - 1.5f * h;
      transposed[h * buckets + b] = table[b * heads + h];
    }
  std::vector<int64_t> q64 = {0, 9, 30}, k64 = {30, 2, 9, 0};
  std::vector<int32_t> q32(q64.begin(), q64.end()), k32(k64.begin(), k64.end());
  std::vector<float> flat(heads * tq * tk), strided(heads * tq * tk * 3, -7.f);
  T5Call call{.bidirectional = false,
              .n_buckets = buckets,
              .max_distance = 16,
              .q_positions = view(q64.data(), DType::i64, {tq}),
              .k_positions = view(k64.data(), DType::i64, {tk}),
              .table = view(table.data(), DType::f32, {buckets, heads}),
              .bias = view(flat.data(), DType::f32, {heads, tq, tk})};
  reference::t5(call);
  call.q_positions = view(q32.data(), DType::i32, {tq});
  call.k_positions = view(k32.data(), DType::i32, {tk});
  call.table = view(transposed.data(), DType::f32, {buckets, heads}, {1, buckets});
  call.bias = view(strided.data(), DType::f32, {heads, tq, tk}, {1, heads * tk * 3, heads * 3});
  reference::t5(call);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j) {
        const float got = strided[h + i * heads * tk * 3 + j * heads * 3];
        EXPECT_EQ(std::memcmp(&got, &flat[(h * tq + i) * tk + j], sizeof got), 0);
        const int64_t b = t5_bucket(k64[j] - q64[i], false, buckets, 16);
        EXPECT_EQ(got, table[b * heads + h]);
      }
}

class T5BadInput : public ::testing::Test {
 protected:
  T5BadInput() {
    call.q_positions = arena.alloc(DType::i64, {2});
    call.k_positions = arena.alloc(DType::i64, {3});
    for (int i = 0; i < 2; ++i) call.q_positions.as<int64_t>()[i] = 1 + i;
    for (int i = 0; i < 3; ++i) call.k_positions.as<int64_t>()[i] = i;
    call.table = arena.alloc(DType::f32, {32, 4});
    for (int i = 0; i < 32 * 4; ++i) call.table.as<float>()[i] = 0.5f;
    call.bias = arena.alloc(DType::f32, {4, 2, 3});
  }
  void expect(const std::string& argument) {
    expect_rejected(reference::t5, call, arena, argument);
  }
  Arena arena;
  T5Call call;
};

TEST_F(T5BadInput, FewerThanTwoBuckets) {
  call.bidirectional = false;
  call.n_buckets = 1;
  expect("n_buckets");
}
TEST_F(T5BadInput, FewerThanFourBucketsBidirectional) {
  call.n_buckets = 3;
  expect("n_buckets");
}
TEST_F(T5BadInput, MaxDistanceWithinTheExactBuckets) {
  call.max_distance = 8;  // bidirectional 32: 8 exact buckets, ln(8/8) = 0 would divide
  expect("max_distance");
}
TEST_F(T5BadInput, TableBucketsMismatch) {
  call.table = arena.alloc(DType::f32, {31, 4});
  expect("table.shape[0]");
}
TEST_F(T5BadInput, TableWithoutHeads) {
  call.table = arena.alloc(DType::f32, {32, 0});
  expect("table.shape[1]");
}
TEST_F(T5BadInput, BiasShapeMismatch) {
  call.bias = arena.alloc(DType::f32, {4, 3, 3});
  expect("bias.shape[1]");
}
TEST_F(T5BadInput, NegativePosition) {
  call.q_positions.as<int64_t>()[1] = -5;
  expect("q_positions[1]");
}
TEST_F(T5BadInput, PositionPastTheOracleRange) {
  call.k_positions.as<int64_t>()[2] = kMaxPosition + 1;
  expect("k_positions[2]");
}
TEST_F(T5BadInput, BiasOverlapsTable) {
  Tensor inside = call.bias;
  inside.data = call.table.as<float>() + 8;
  call.bias = inside;
  expect("bias.data");
}
TEST_F(T5BadInput, WrongTableDtype) {
  call.table.dtype = DType::f64;
  expect("table.dtype");
}
TEST_F(T5BadInput, WrongBiasDtype) {
  call.bias.dtype = DType::i32;
  expect("bias.dtype");
}
TEST_F(T5BadInput, WrongPositionDtype) {
  call.k_positions.dtype = DType::f32;
  expect("k_positions.dtype");
}

}  // namespace
}  // namespace posenc
