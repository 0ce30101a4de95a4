#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "optimized/optimized.h"
#include "optimized/testing.h"
#include "optimized/thread_pool.h"
#include "posenc/error.h"
#include "properties/harness.h"

namespace posenc::optimized {
namespace {

struct Problem {
  int64_t tokens, rows, dim;
  std::vector<float> x, table, out;
  std::vector<int64_t> positions;

  Problem(int64_t tokens_, int64_t rows_, int64_t dim_, uint64_t seed)
      : tokens(tokens_),
        rows(rows_),
        dim(dim_),
        x(tokens * dim),
        table(rows * dim),
        out(tokens * dim, -7.0f),
        positions(tokens) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-4, 4);
    for (float& v : x) v = u(rng);
    for (float& v : table) v = u(rng);
    for (int64_t& p : positions) p = std::uniform_int_distribution<int64_t>(0, rows - 1)(rng);
  }
  AbsoluteCall call(int threads = 1) {
    return {.x = view(x.data(), DType::f32, {tokens, dim}),
            .table = view(table.data(), DType::f32, {rows, dim}),
            .positions = view(positions.data(), DType::i64, {tokens}),
            .out = view(out.data(), DType::f32, {tokens, dim}),
            .threads = threads};
  }
  // The sum in f32, element by element.
  std::vector<float> expected() const {
    std::vector<float> e(tokens * dim);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t c = 0; c < dim; ++c)
        e[t * dim + c] = x[t * dim + c] + table[positions[t] * dim + c];
    }
    return e;
  }
};

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(OptimizedAbsolute, EveryTargetIsListedAndTheFallbackRunsHere) {
  const auto impls = absolute();
  ASSERT_GE(impls.size(), 3u);  // dispatched + at least one SIMD target + the scalar fallback
  EXPECT_EQ(impls.front().name, "absolute/optimized");
  bool fallback = false;
  for (const auto& impl : impls) {
    fallback |= impl.name == "absolute/hwy:EMU128" || impl.name == "absolute/hwy:SCALAR";
  }
  EXPECT_TRUE(fallback);
  EXPECT_EQ(impls.back().unavailable_reason(), "");
}

TEST(OptimizedAbsolute, EveryTargetIsBitwiseExactIncludingVectorTails) {
  for (const auto& impl : runnable(absolute())) {
    for (int64_t dim : {1, 3, 7, 16, 17, 33, 100, 768}) {
      Problem p(9, 13, dim, static_cast<uint64_t>(dim));
      impl.run(p.call());
      EXPECT_TRUE(bitwise_equal(p.out, p.expected())) << impl.name << " dim=" << dim;
    }
  }
}

TEST(OptimizedAbsolute, StridedViewsAndInt32PositionsAndInPlace) {
  for (const auto& impl : runnable(absolute())) {
    Problem p(6, 5, 11, 3);
    const std::vector<float> expected = p.expected();
    // x stored transposed, out with a padded row, table with a padded row, i32 positions.
    std::vector<float> xt(p.dim * p.tokens), out(p.tokens * 16, 99.0f), table(p.rows * 12);
    for (int64_t t = 0; t < p.tokens; ++t) {
      for (int64_t c = 0; c < p.dim; ++c) xt[c * p.tokens + t] = p.x[t * p.dim + c];
    }
    for (int64_t r = 0; r < p.rows; ++r) {
      for (int64_t c = 0; c < p.dim; ++c) table[r * 12 + c] = p.table[r * p.dim + c];
    }
    std::vector<int32_t> pos32(p.positions.begin(), p.positions.end());
    impl.run({.x = view(xt.data(), DType::f32, {p.tokens, p.dim}, {1, p.tokens}),
              .table = view(table.data(), DType::f32, {p.rows, p.dim}, {12, 1}),
              .positions = view(pos32.data(), DType::i32, {p.tokens}),
              .out = view(out.data(), DType::f32, {p.tokens, p.dim}, {16, 1}),
              .threads = 1});
    for (int64_t t = 0; t < p.tokens; ++t) {
      for (int64_t c = 0; c < 16; ++c) {
        if (c < p.dim) {
          ASSERT_EQ(out[t * 16 + c], expected[t * p.dim + c]) << impl.name;
        } else {
          ASSERT_EQ(out[t * 16 + c], 99.0f) << impl.name << " wrote into the row padding";
        }
      }
    }
    AbsoluteCall in_place = p.call();
    in_place.out = in_place.x;
    impl.run(in_place);
    EXPECT_TRUE(bitwise_equal(p.x, expected)) << impl.name << " in place";
  }
}

// bf16 and f16 (x and out), and f32 with a low-precision table, with a table of each dtype,
// strided, in place and not, with specials: the reference's double sum rounded once, bit for bit,
// on every target.
TEST(OptimizedAbsolute, HalfPrecisionIsBitwiseOnEveryTarget) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16})
    for (DType table_dtype : {DType::f32, DType::bf16, DType::f16})
      for (bool in_place : {false, true}) {
        const harness::Problem<AbsoluteCall> problem{
            std::string(dtype_name(dtype)) + " table " + dtype_name(table_dtype) +
                (in_place ? " in place" : ""),
            [=](harness::Arena& arena) {
              harness::Values values(3);
              const int64_t tokens = 11, rows = 7, dim = 37;
              AbsoluteCall call;
              call.x = arena.alloc(dtype, {tokens, dim}, harness::Layout::padded);
              call.table = arena.alloc(table_dtype, {rows, dim}, harness::Layout::permuted);
              values.fill(call.x, -300, 300);
              values.fill(call.table, -2, 2);
              store(call.x, call.x.offset(2, 5), INFINITY);
              store(call.table, call.table.offset(1, 6), NAN);
              call.positions = arena.alloc(DType::i32, {tokens});
              values.fill_index(call.positions, 0, rows - 1);
              call.out = in_place ? call.x : arena.alloc(dtype, {tokens, dim});
              return call;
            }};
        expect_every_target_matches(absolute(), problem);
      }
}

// One rounding from fp64 at the edges of bf16 and f16 (out and x), through the sum with an f32 or
// other 16-bit table (the fp64 sum, rounded to f32 to odd, then to nearest even): ties both ways,
// sums just past or short of a midpoint where rounding to f32 first would land on it (`trap`: the
// test checks that f64 → f32 → dtype really differs there), subnormals, the largest finite value
// and overflow, ∞, NaN and signed zeros. Each case sits at every lane position and in the tails.
struct Edge {
  double x, table;
  bool trap = false;
};

void expect_edges_bitwise(DType dtype, DType table_dtype, const std::vector<Edge>& edges) {
  const int64_t n = static_cast<int64_t>(edges.size()), dim = 67;
  // Row t holds edge (c + t) % n at column c: every edge in every lane and tail position.
  const harness::Problem<AbsoluteCall> problem{
      std::string(dtype_name(dtype)) + " edges, table " + dtype_name(table_dtype),
      [=](harness::Arena& arena) {
        AbsoluteCall call;
        call.x = arena.alloc(dtype, {n, dim});
        call.table = arena.alloc(table_dtype, {n, dim});
        call.positions = arena.alloc(DType::i64, {n});
        call.out = arena.alloc(dtype, {n, dim});
        for (int64_t t = 0; t < n; ++t) {
          static_cast<int64_t*>(call.positions.data)[t] = t;
          for (int64_t c = 0; c < dim; ++c) {
            const Edge& e = edges[(c + t) % n];
            store(call.x, call.x.offset(t, c), e.x);
            store(call.table, call.table.offset(t, c), e.table);
          }
        }
        return call;
      }};
  // The edges are what they claim: exact in their dtypes, and the traps are traps.
  for (const Edge& e : edges) {
    uint32_t bits = 0;
    float f = 0;
    const Tensor x = view(&bits, dtype, {1}), t = view(&f, table_dtype, {1});
    store(x, 0, e.x);
    store(t, 0, e.table);
    ASSERT_TRUE(std::isnan(e.x) || load(x, 0) == e.x) << e.x;
    ASSERT_TRUE(std::isnan(e.table) || load(t, 0) == e.table) << e.table;
    if (!e.trap) continue;
    uint16_t once = 0, twice = 0;
    store(view(&once, dtype, {1}), 0, e.x + e.table);
    store(view(&twice, dtype, {1}), 0, static_cast<float>(e.x + e.table));
    EXPECT_NE(once, twice) << "not a double-rounding trap: " << e.x << " + " << e.table;
  }
  expect_every_target_matches(absolute(), problem);
}

TEST(OptimizedAbsolute, HalfPrecisionRoundsOnceAtTheEdges) {
  const double kMaxBf16 = 0x1.FEp127, kMinBf16 = 0x1p-133;  // largest; least subnormal
  expect_edges_bitwise(DType::bf16, DType::f32,
                       {{1, 0x1p-8},                             // tie, to even: down to 1
                        {1 + 0x1p-7, 0x1p-8},                    // tie, to even: up
                        {1, 0x1p-8 + 0x1p-31, true},             // just past the midpoint
                        {1 + 0x1p-7, 0x1p-8 - 0x1p-32, true},    // just short of it
                        {-1 - 0x1p-7, -0x1p-8 + 0x1p-32, true},  // the same, negative
                        {kMinBf16, 0x1p-134},                    // subnormal tie, up to even
                        {0, 0x1p-134},                           // subnormal tie, down to +0
                        {-0.0, -0x1p-134 - 0x1p-149},            // past half the least subnormal
                        {-kMinBf16, kMinBf16},                   // exact zero: +0
                        {-0.0, -0.0},                            // −0
                        {kMaxBf16, 0x1p119},                     // tie at the top: ∞
                        {kMaxBf16, 0x1p119 - 0x1p95, true},  // just short of it: the largest finite
                        {-kMaxBf16, -0x1p119 + 0x1p95, true},  // negative
                        {kMaxBf16, 3.4028234663852886e38},     // past f32's range
                        {1, INFINITY},                         // ∞
                        {INFINITY, -INFINITY},                 // NaN
                        {NAN, 1}});                            // NaN
  const double kMaxF16 = 65504, kMinF16 = 0x1p-24;
  expect_edges_bitwise(DType::f16, DType::f32,
                       {{1, 0x1p-11},                        // tie, to even: down
                        {1 + 0x1p-10, 0x1p-11},              // tie, to even: up
                        {1, 0x1p-11 + 0x1p-34, true},        // just past the midpoint
                        {kMinF16, 0x1p-25},                  // subnormal tie, up to even
                        {kMinF16, 0x1p-25 - 0x1p-49, true},  // just short of it
                        {0, 0x1p-26},                        // below half the least subnormal: +0
                        {-0.0, -0x1p-26},                    // −0
                        {-0.0, -0.0},                        // −0
                        {kMaxF16, 16},                       // tie at the top: ∞
                        {kMaxF16, 16 - 0x1p-20, true},       // just short of it: the largest finite
                        {-kMaxF16, -16 + 0x1p-20, true},     // negative
                        {1, 0x1p100},                        // far past: ∞
                        {-1, -INFINITY},                     // −∞
                        {NAN, 1}});                          // NaN
  // x and table of out's dtype, or an f32 out: one f32 add.
  expect_edges_bitwise(DType::bf16, DType::bf16,
                       {{1, 0x1p-8},
                        {1 + 0x1p-7, 0x1p-8},
                        {1 + 0x1p-7, 0x1p-8 + 0x1p-15},
                        {1, 0x1p-20},
                        {kMinBf16, kMinBf16},
                        {-kMinBf16, kMinBf16},
                        {kMaxBf16, 0x1p119},
                        {kMaxBf16, 0x1p118},
                        {kMaxBf16, kMaxBf16},
                        {-0.0, -0.0},
                        {INFINITY, -INFINITY},
                        {NAN, 1}});
  expect_edges_bitwise(DType::f16, DType::f16,
                       {{1, 0x1p-11},
                        {1 + 0x1p-10, 0x1p-11},
                        {1, 0x1p-11 + 0x1p-21},
                        {kMinF16, kMinF16},
                        {kMinF16, 0x1p-24},
                        {kMaxF16, 16},
                        {kMaxF16, 8},
                        {-kMaxF16, -kMaxF16},
                        {-0.0, -0.0},
                        {NAN, 1}});
  const double kMaxF32 = 3.4028234663852886e38;
  for (DType table_dtype : {DType::bf16, DType::f16}) {
    expect_edges_bitwise(DType::f32, table_dtype,
                         {{1, 0x1p-24},
                          {1 + 0x1p-23, 0x1p-24},
                          {1, 0x1p-13},
                          {0x1p-149, kMinF16},
                          {kMaxF32, table_dtype == DType::bf16 ? kMaxBf16 : kMaxF16},
                          {-kMaxF32, -1},
                          {-0.0, -0.0},
                          {NAN, 1},
                          {1, INFINITY}});
  }
  // Mixed 16-bit dtypes add in fp64.
  expect_edges_bitwise(DType::bf16, DType::f16,
                       {{1, 0x1p-8},
                        {1 + 0x1p-7, 0x1p-8},
                        {256, 0x1p-24},
                        {-0.0, -0.0},
                        {kMaxBf16, 65504},
                        {NAN, 1}});
  expect_edges_bitwise(DType::f16, DType::bf16,
                       {{1, 0x1p-11},
                        {1 + 0x1p-10, 0x1p-11},
                        {2048, 0x1p-30},
                        {kMaxF16, 0x1p120},
                        {-0.0, -0.0},
                        {1, NAN}});
}

TEST(OptimizedAbsolute, HalfPrecisionBitwiseIdenticalForEveryThreadCount) {
  for (DType dtype : {DType::bf16, DType::f16})
    for (DType table_dtype : {dtype, DType::f32}) {
      const harness::Problem<AbsoluteCall> problem{
          dtype_name(dtype), [=](harness::Arena& arena) {
            harness::Values values(21);  // 1024 rows of 768: enough work for 7 parts
            AbsoluteCall call;
            call.x = arena.alloc(dtype, {1024, 768});
            call.table = arena.alloc(table_dtype, {2048, 768});
            values.fill(call.x, -4, 4);
            values.fill(call.table, -4, 4);
            call.positions = arena.alloc(DType::i64, {1024});
            values.fill_index(call.positions, 0, 2047);
            call.out = arena.alloc(dtype, {1024, 768});
            return call;
          }};
      expect_bitwise_for_thread_counts(absolute().front(), problem);
    }
}

TEST(OptimizedAbsolute, BitwiseIdenticalForEveryThreadCount) {
  Problem p(8192, 2048, 768, 11);  // GPT-2 sized rows, enough work for 7 parts
  std::vector<float> first;
  for (int threads : {1, 2, 3, 7}) {
    std::fill(p.out.begin(), p.out.end(), 0.0f);
    absolute().front().run(p.call(threads));
    EXPECT_EQ(last_threaded_parts(), threads) << "the determinism check must really run threaded";
    if (first.empty()) {
      first = p.out;
      EXPECT_TRUE(bitwise_equal(first, p.expected()));
    } else {
      EXPECT_TRUE(bitwise_equal(p.out, first)) << threads << " threads";
    }
  }
}

TEST(OptimizedAbsolute, RejectsBadPositionsBeforeWriting) {
  for (const auto& impl : runnable(absolute())) {
    Problem p(4, 3, 8, 5);
    p.positions[2] = 3;  // one past the table
    try {
      impl.run(p.call());
      FAIL() << impl.name << " accepted a position past the table";
    } catch (const Error& e) {
      EXPECT_EQ(e.argument(), "positions[2]") << impl.name;
    }
    for (float v : p.out) ASSERT_EQ(v, -7.0f) << impl.name << " wrote before rejecting";
  }
}

}  // namespace
}  // namespace posenc::optimized
