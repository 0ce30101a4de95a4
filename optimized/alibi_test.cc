// The optimized ALiBi kernels are bitwise the reference on every target and every path (rows as
// windows of per-head lines, rows computed directly, strided output, streaming stores), for every
// thread count, and reject bad input before writing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
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

struct Shape {
  int64_t heads, tq, tk;
  bool causal = false;
  PositionPattern positions = PositionPattern::cache;
  Layout layout = Layout::contiguous;
  double max_bias = 8;
  DType index = DType::i64;
  DType dtype = DType::f32;  // of the bias
};

Problem<AlibiCall> problem(const Shape& s, uint64_t seed) {
  const std::string label = "heads=" + std::to_string(s.heads) + " tq=" + std::to_string(s.tq) +
                            " tk=" + std::to_string(s.tk) + (s.causal ? " causal" : "") +
                            " positions=" + harness::positions_name(s.positions) + " " +
                            harness::layout_name(s.layout) + " " + dtype_name(s.dtype) +
                            " max_bias=" + std::to_string(s.max_bias);
  return {label, [s, seed](Arena& arena) {
            harness::Values values(seed);
            AlibiCall call{.n_heads = s.heads, .max_bias = s.max_bias, .causal = s.causal};
            call.q_positions = arena.alloc(s.index, {s.tq}, s.layout);
            call.k_positions = arena.alloc(s.index, {s.tk}, s.layout);
            harness::fill_positions(call.q_positions, call.k_positions, s.positions, values);
            call.bias = arena.alloc(s.dtype, {s.heads, s.tq, s.tk}, s.layout);
            call.slopes = arena.alloc(DType::f32, {s.heads}, s.layout);
            return call;
          }};
}

TEST(OptimizedAlibi, EveryTargetIsListedAndTheFallbackRunsHere) {
  expect_every_target_listed(alibi(), "alibi");
}

// Many queries on consecutive keys: rows are windows of per-head lines.
TEST(OptimizedAlibi, WindowsOfLinesAreBitwiseTheReference) {
  uint64_t seed = 1;
  for (int64_t heads : {1, 12, 80}) {  // powers of two and the interleaved slopes
    for (int64_t tk : {16, 300}) {
      for (bool causal : {false, true}) {
        expect_every_target_matches(alibi(), problem({heads, 16, tk, causal}, seed++));
        expect_every_target_matches(
            alibi(), problem({heads, 16, tk, causal, PositionPattern::shifted, Layout::padded, 5.5},
                             seed++));
      }
    }
  }
}

// Few queries (decoding): rows computed directly, on consecutive keys or on any positions, and
// strided rows.
TEST(OptimizedAlibi, DirectRowsAreBitwiseTheReference) {
  uint64_t seed = 100;
  for (int64_t tk : {1, 7, 33, 1000}) {
    for (bool causal : {false, true}) {
      expect_every_target_matches(alibi(), problem({6, 1, tk, causal}, seed++));
      expect_every_target_matches(alibi(),
                                  problem({6, 2, tk, causal, PositionPattern::wide}, seed++));
      expect_every_target_matches(alibi(), problem({6, 3, tk, causal, PositionPattern::duplicates,
                                                    Layout::permuted, 8, DType::i32},
                                                   seed++));
      expect_every_target_matches(alibi(), problem({3, std::min<int64_t>(tk, 40), tk, causal,
                                                    PositionPattern::cache, Layout::permuted},
                                                   seed++));  // windows, but strided rows
    }
  }
}

// The kernel learns from validate() whether the keys are consecutive (checked_consecutive): a call
// on the same key buffer after its values changed must see the change, on every target.
TEST(OptimizedAlibi, KeysChangedBetweenCallsOnTheSameBufferAreSeen) {
  const int64_t heads = 4, tk = 1000;
  std::vector<int64_t> q = {tk - 1}, k(tk);
  for (int64_t j = 0; j < tk; ++j) k[j] = j;
  std::vector<float> out(heads * tk), expected(heads * tk);
  AlibiCall call{.n_heads = heads};
  call.q_positions = view(q.data(), DType::i64, {1});
  call.k_positions = view(k.data(), DType::i64, {tk});
  call.bias = view(out.data(), DType::f32, {heads, 1, tk});
  for (const Impl<AlibiCall>& impl : runnable(alibi())) {
    k[500] = 500;
    impl.run(call);  // consecutive keys: rows from an iota of distances
    k[500] = 7;      // the same buffer, no longer consecutive
    impl.run(call);
    AlibiCall ref = call;
    ref.bias = view(expected.data(), DType::f32, {heads, 1, tk});
    reference::alibi(ref);
    EXPECT_EQ(std::memcmp(out.data(), expected.data(), out.size() * sizeof(float)), 0) << impl.name;
  }
}

// A bias larger than the last-level cache is written with non-temporal stores; the rows' starts
// are unaligned (tk odd), so each row has an element-wise head and tail.
TEST(OptimizedAlibi, StreamedBiasIsBitwiseTheReference) {
  for (const Shape& s : {Shape{32, 257, 2049, true}, Shape{8, 1, 2'100'001, false}}) {
    ASSERT_GT(s.heads * s.tq * s.tk * 4, int64_t{64} << 20);
    expect_every_target_bitwise(alibi(), problem(s, 7));
  }
  for (DType dtype : {DType::bf16, DType::f16}) {  // 2-byte elements: twice as many
    // Windows of lines, and direct rows of one group of eight heads (the others scaled).
    for (Shape s : {Shape{32, 257, 2049, true}, Shape{8, 1, 1'100'001, false}}) {
      ASSERT_GT(s.heads * s.tq * s.tk * 2, int64_t{16} << 20);  // stream_bias
      s.dtype = dtype;
      expect_every_target_bitwise(alibi(), problem(s, 8));
    }
  }
}

TEST(OptimizedAlibi, BitwiseIdenticalForEveryThreadCount) {
  // Each shape carries enough work (costs.h) for seven parts.
  for (const Shape& s : {Shape{32, 512, 512, true}, Shape{32, 2, 32'768, false},
                         Shape{8, 256, 2048, true, PositionPattern::wide},
                         Shape{8, 1, 262'145, false}, Shape{64, 1, 40'001, true}}) {  // key blocks
    expect_bitwise_for_thread_counts(alibi().front(), problem(s, 11));
  }
}

// bf16 and f16 biases: the fp64 value rounded once, on every target and path (windows of lines,
// direct rows on consecutive or any keys, strided rows), causal or not, with slopes whose products
// underflow to subnormals and zero (max_bias 300) and, in f16, overflow to −∞ (one head, slope
// 2⁻⁸, distances up to 2²⁴ − 1: past 65520).
TEST(OptimizedAlibi, HalfPrecisionIsBitwiseTheReference) {
  uint64_t seed = 200;
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (bool causal : {false, true}) {
      for (double max_bias : {8.0, 300.0}) {
        for (int64_t heads : {1, 12}) {
          Shape s{heads, 16, 300, causal};
          s.max_bias = max_bias;
          s.dtype = dtype;
          expect_every_target_matches(alibi(), problem(s, seed++));  // windows of lines
          s.tq = 1;
          expect_every_target_matches(alibi(), problem(s, seed++));  // direct, consecutive keys
          s.tq = 3;
          s.positions = PositionPattern::wide;
          expect_every_target_matches(alibi(), problem(s, seed++));  // direct, any keys
          s.layout = Layout::permuted;
          expect_every_target_matches(alibi(), problem(s, seed++));  // strided rows
        }
      }
      Shape far{1, 2, 70'000, causal, PositionPattern::wide};  // distances up to 2²⁴
      far.dtype = dtype;
      expect_every_target_matches(alibi(), problem(far, seed++), /*print=*/true);
    }
  }
}

// Where rounding the fp64 product to f32 first would land on a bf16 or f16 midpoint it was not on:
// one query against 2²⁰ keys, 5 heads of max_bias 5.5 (slopes that are not powers of two: with
// those, as max_bias 8 gives most heads, every product is exact in f32). The test first counts
// such elements (they must exist, or it would prove nothing), then asks every target for the
// reference's bits.
TEST(OptimizedAlibi, HalfPrecisionRoundsOnceWhereRoundingViaF32WouldNot) {
  for (DType dtype : {DType::bf16, DType::f16}) {
    Shape s{5, 1, int64_t{1} << 20};
    s.max_bias = 5.5;
    s.dtype = dtype;
    const Problem<AlibiCall> p = problem(s, 17);
    uint16_t once = 0, twice = 0;
    const Tensor once_view = view(&once, dtype, {1}), twice_view = view(&twice, dtype, {1});
    int64_t traps = 0;
    for (int64_t h = 0; h < s.heads; ++h) {
      const double slope = reference::alibi_slope(h, s.heads, s.max_bias);
      for (int64_t x = 1; x < s.tk; ++x) {
        const double v = slope * static_cast<double>(-x);
        store(once_view, 0, v);
        store(twice_view, 0, static_cast<float>(v));
        traps += once != twice;
      }
    }
    EXPECT_GT(traps, 0) << dtype_name(dtype);
    std::printf("[ traps    ] %s: %lld elements where f64 -> f32 -> %s differs\n",
                dtype_name(dtype), static_cast<long long>(traps), dtype_name(dtype));
    expect_every_target_bitwise(alibi(), p);
  }
}

// Decoding with many heads: heads whose slopes differ by a power of two (max_bias 8 and 64 heads:
// 8 groups; 24 heads: 2^(-k/3)) are one computed row scaled, and the 16-bit rows round the fp64
// value straight to their dtype. Both hold only inside the dtype's normal range: f16 distances
// past 65504·2^k, and max_bias 300's subnormal products, must fall back to computing each row.
TEST(OptimizedAlibi, ScaledHeadGroupsAreBitwiseTheReference) {
  uint64_t seed = 300;
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (bool causal : {false, true}) {
      for (int64_t heads : {24, 64}) {
        for (double max_bias : {8.0, 300.0}) {
          for (int64_t tq : {1, 2}) {
            Shape s{heads, tq, 300, causal};
            s.max_bias = max_bias;
            s.dtype = dtype;
            expect_every_target_matches(alibi(), problem(s, seed++));
          }
        }
      }
      // f16: the largest slopes (2^-1/2) overflow past key 92'639, the smallest (2^-8) do not.
      Shape far{16, 1, 120'000, causal};
      far.dtype = dtype;
      expect_every_target_matches(alibi(), problem(far, seed++));
    }
  }
}

TEST(OptimizedAlibi, HalfPrecisionBitwiseIdenticalForEveryThreadCount) {
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (Shape s :
         {Shape{32, 512, 512, true}, Shape{32, 2, 32'768, false},
          Shape{8, 256, 2048, true, PositionPattern::wide}, Shape{64, 1, 40'001, false}}) {
      s.dtype = dtype;
      expect_bitwise_for_thread_counts(alibi().front(), problem(s, 12));
    }
  }
}

TEST(OptimizedAlibi, DiagonalIsPositiveZero) {
  for (const auto& impl : runnable(alibi())) {
    Arena arena;
    const AlibiCall call = problem({4, 3, 40}, 3).build(arena);  // queries at keys 37, 38, 39
    impl.run(call);
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t i = 0; i < 3; ++i) {
        const float zero = call.bias.as<float>()[call.bias.offset(h, i, 37 + i)];
        EXPECT_TRUE(zero == 0 && !std::signbit(zero)) << impl.name;
      }
  }
}

TEST(OptimizedAlibi, RejectsBadInputBeforeWriting) {
  for (const auto& impl : runnable(alibi())) {
    Arena arena;
    AlibiCall call = problem({4, 3, 5}, 41).build(arena);
    call.k_positions.as<int64_t>()[call.k_positions.offset(2)] = kMaxPosition + 1;
    harness::expect_rejected(impl.run, call, arena, "k_positions[2]");
    call.k_positions.as<int64_t>()[call.k_positions.offset(2)] = 2;
    AlibiCall bad = call;
    bad.max_bias = 0;
    harness::expect_rejected(impl.run, bad, arena, "max_bias");
    bad = call;
    bad.threads = -1;
    harness::expect_rejected(impl.run, bad, arena, "threads");
  }
}

}  // namespace
}  // namespace posenc::optimized
