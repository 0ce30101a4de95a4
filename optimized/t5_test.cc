// The optimized T5 kernels are bitwise the reference: their buckets (from thresholds) against
// reference::t5_bucket at every distance up to 2^20 and sampled to 2^24, on default and unusual
// configurations; every target on every path (windows of value lines, bucket-line lookups, any
// positions, strided rows, streaming stores); every thread count; and bad input.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "optimized/optimized.h"
#include "optimized/testing.h"
#include "properties/harness.h"
#include "properties/testing.h"
#include "reference/reference.h"

namespace posenc::optimized {
namespace {

using harness::Arena;
using harness::Layout;
using harness::PositionPattern;
using harness::Problem;

struct Config {
  bool bidirectional;
  int64_t n_buckets, max_distance;
};

// Defaults both ways, T5X's larger table, the float32 corner of t5.h (939, causal: r = 728 is
// bucket 31 in float32), few exact buckets, buckets skipped by a short span, a long span reaching
// past 2^24, and many buckets.
const Config kConfigs[] = {
    {true, 32, 128},   {false, 32, 128}, {true, 64, 256}, {false, 32, 939},
    {true, 4, 3},      {false, 2, 2},    {true, 64, 40},  {false, 16, 1'000'000'000},
    {true, 1000, 5000}};

std::string describe(const Config& c) {
  return std::string(c.bidirectional ? "bidirectional" : "causal") +
         " n_buckets=" + std::to_string(c.n_buckets) +
         " max_distance=" + std::to_string(c.max_distance);
}

// The bucket of every key, read back through a table whose entries are their own bucket index.
std::vector<int64_t> buckets_via_kernel(const Impl<T5Call>& impl, const Config& c, int64_t q,
                                        std::vector<int64_t>& keys) {
  std::vector<float> table(c.n_buckets);
  for (int64_t b = 0; b < c.n_buckets; ++b) table[b] = static_cast<float>(b);
  std::vector<float> bias(keys.size());
  const int64_t tk = static_cast<int64_t>(keys.size());
  impl.run({.bidirectional = c.bidirectional,
            .n_buckets = c.n_buckets,
            .max_distance = c.max_distance,
            .q_positions = view(&q, DType::i64, {1}),
            .k_positions = view(keys.data(), DType::i64, {tk}),
            .table = view(table.data(), DType::f32, {c.n_buckets, 1}),
            .bias = view(bias.data(), DType::f32, {1, 1, tk})});
  return {bias.begin(), bias.end()};
}

TEST(OptimizedT5, BucketsEqualTheReferenceAtEveryDistance) {
  const int64_t kDense = int64_t{1} << 20;
  const auto impls = t5();
  const Impl<T5Call>& impl = impls.front();
  for (const Config& c : kConfigs) {
    // Keys 0 … 2^21 around a query at 2^20: every distance up to 2^20 both ways, consecutive.
    std::vector<int64_t> keys(2 * kDense + 1);
    for (int64_t j = 0; j <= 2 * kDense; ++j) keys[j] = j;
    std::vector<int64_t> got = buckets_via_kernel(impl, c, kDense, keys);
    for (int64_t j = 0; j <= 2 * kDense; ++j) {
      ASSERT_EQ(got[j],
                reference::t5_bucket(j - kDense, c.bidirectional, c.n_buckets, c.max_distance))
          << describe(c) << " rp=" << j - kDense;
    }
    // Random keys up to 2^24 against queries at both ends: distances up to 2^24, any order.
    std::mt19937_64 rng(c.n_buckets);
    keys.assign(100'000, 0);
    for (int64_t& k : keys) k = std::uniform_int_distribution<int64_t>(0, kMaxPosition)(rng);
    for (int64_t q : {int64_t{0}, kMaxPosition}) {
      got = buckets_via_kernel(impl, c, q, keys);
      for (size_t j = 0; j < keys.size(); ++j) {
        ASSERT_EQ(got[j],
                  reference::t5_bucket(keys[j] - q, c.bidirectional, c.n_buckets, c.max_distance))
            << describe(c) << " rp=" << keys[j] - q;
      }
    }
  }
}

struct Shape {
  Config config;
  int64_t heads, tq, tk;
  PositionPattern positions = PositionPattern::cache;
  Layout layout = Layout::contiguous;
  DType index = DType::i64;
  DType dtype = DType::f32;  // of the table and the bias
};

Problem<T5Call> problem(const Shape& s, uint64_t seed) {
  const std::string label = describe(s.config) + " heads=" + std::to_string(s.heads) +
                            " tq=" + std::to_string(s.tq) + " tk=" + std::to_string(s.tk) +
                            " positions=" + harness::positions_name(s.positions) + " " +
                            harness::layout_name(s.layout) + " " + dtype_name(s.dtype);
  return {label, [s, seed](Arena& arena) {
            harness::Values values(seed);
            T5Call call{.bidirectional = s.config.bidirectional,
                        .n_buckets = s.config.n_buckets,
                        .max_distance = s.config.max_distance};
            call.q_positions = arena.alloc(s.index, {s.tq}, s.layout);
            call.k_positions = arena.alloc(s.index, {s.tk}, s.layout);
            harness::fill_positions(call.q_positions, call.k_positions, s.positions, values);
            call.table = arena.alloc(s.dtype, {s.config.n_buckets, s.heads}, s.layout);
            values.fill(call.table);
            call.bias = arena.alloc(s.dtype, {s.heads, s.tq, s.tk}, s.layout);
            return call;
          }};
}

TEST(OptimizedT5, EveryTargetIsListedAndTheFallbackRunsHere) {
  expect_every_target_listed(t5(), "t5");
}

TEST(OptimizedT5, EveryTargetAndPathIsBitwiseTheReference) {
  uint64_t seed = 1;
  for (const Config& c : {kConfigs[0], kConfigs[1], kConfigs[3], kConfigs[6]}) {
    for (int64_t tk : {1, 9, 300}) {
      // Windows of value lines (many queries), bucket-line lookups (one query), any positions,
      // strided rows, int32 positions.
      expect_every_target_matches(t5(), problem({c, 5, std::min<int64_t>(tk, 24), tk}, seed++));
      expect_every_target_matches(t5(), problem({c, 5, 1, tk, PositionPattern::shifted}, seed++));
      expect_every_target_matches(t5(), problem({c, 3, 4, tk, PositionPattern::wide}, seed++));
      expect_every_target_matches(
          t5(), problem({c, 3, 5, tk, PositionPattern::duplicates, Layout::permuted, DType::i32},
                        seed++));
      expect_every_target_matches(t5(), problem({c, 2, std::min<int64_t>(tk, 30), tk,
                                                 PositionPattern::cache, Layout::padded},
                                                seed++));
    }
  }
}

// bf16 and f16 tables and biases: 16-bit copies, on every target and path.
TEST(OptimizedT5, HalfPrecisionIsBitwiseTheReference) {
  uint64_t seed = 500;
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (const Config& c : {kConfigs[0], kConfigs[1], kConfigs[6]}) {
      for (int64_t tk : {1, 9, 300}) {
        const auto with = [&](Shape s) {
          s.dtype = dtype;
          return problem(s, seed++);
        };
        expect_every_target_matches(t5(), with({c, 5, std::min<int64_t>(tk, 24), tk}));
        expect_every_target_matches(t5(), with({c, 5, 1, tk, PositionPattern::shifted}));
        expect_every_target_matches(t5(), with({c, 3, 4, tk, PositionPattern::wide}));
        expect_every_target_matches(
            t5(), with({c, 3, 5, tk, PositionPattern::duplicates, Layout::permuted, DType::i32}));
        expect_every_target_matches(t5(), with({c, 2, std::min<int64_t>(tk, 30), tk,
                                                PositionPattern::cache, Layout::padded}));
      }
    }
    Shape s{kConfigs[0], 32, 257, 2049};  // streamed (2-byte elements)
    s.dtype = dtype;
    ASSERT_GT(s.heads * s.tq * s.tk * 2, int64_t{16} << 20);
    expect_every_target_bitwise(t5(), problem(s, 9));
    for (Shape d : {Shape{kConfigs[0], 32, 512, 512}, Shape{kConfigs[1], 32, 2, 65536},
                    Shape{kConfigs[0], 8, 256, 4096, PositionPattern::wide}}) {
      d.dtype = dtype;
      expect_bitwise_for_thread_counts(t5().front(), problem(d, 13));
    }
  }
}

// A bias larger than the last-level cache is written with non-temporal stores.
TEST(OptimizedT5, StreamedBiasIsBitwiseTheReference) {
  for (const Shape& s : {Shape{kConfigs[0], 32, 257, 2049}, Shape{kConfigs[1], 8, 1, 2'100'001}}) {
    ASSERT_GT(s.heads * s.tq * s.tk * 4, int64_t{64} << 20);
    expect_every_target_bitwise(t5(), problem(s, 7));
  }
}

TEST(OptimizedT5, BitwiseIdenticalForEveryThreadCount) {
  for (const Shape& s : {Shape{kConfigs[0], 32, 512, 512}, Shape{kConfigs[1], 32, 2, 65536},
                         Shape{kConfigs[0], 8, 256, 4096, PositionPattern::wide}}) {
    expect_bitwise_for_thread_counts(t5().front(), problem(s, 11));
  }
}

TEST(OptimizedT5, RejectsBadInputBeforeWriting) {
  for (const auto& impl : runnable(t5())) {
    Arena arena;
    T5Call call = problem({kConfigs[0], 2, 3, 5}, 41).build(arena);
    call.q_positions.as<int64_t>()[call.q_positions.offset(1)] = -3;
    harness::expect_rejected(impl.run, call, arena, "q_positions[1]");
    call.q_positions.as<int64_t>()[call.q_positions.offset(1)] = 3;
    T5Call bad = call;
    bad.max_distance = 8;  // not beyond the 8 exact buckets
    harness::expect_rejected(impl.run, bad, arena, "max_distance");
    bad = call;
    bad.threads = -1;
    harness::expect_rejected(impl.run, bad, arena, "threads");
  }
}

}  // namespace
}  // namespace posenc::optimized
