// The optimized attention kernels against the reference (within their bound, in the family's
// unit), their edge rules, determinism across thread counts and addresses, and bad input.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "optimized/optimized.h"
#include "optimized/testing.h"
#include "properties/harness.h"
#include "properties/testing.h"

namespace posenc::optimized {
namespace {

using harness::Arena;
using harness::Layout;
using harness::Problem;
using harness::Values;

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

struct Shape {
  int64_t tq, tk, hq, hkv, d, dv;
  Mask mask = Mask::none;
  bool bias = false;
  bool positions = false;  // explicit positions: keys 0 … tk−1, queries the last tq of them
  Layout layout = Layout::contiguous;
};

std::string describe(const Shape& s) {
  return "tq=" + std::to_string(s.tq) + " tk=" + std::to_string(s.tk) +
         " hq=" + std::to_string(s.hq) + " hkv=" + std::to_string(s.hkv) +
         " d=" + std::to_string(s.d) + " dv=" + std::to_string(s.dv) +
         (s.mask == Mask::causal ? " causal" : "") + (s.bias ? " bias" : "") +
         (s.positions ? " positions" : "") + " " + harness::layout_name(s.layout);
}

// A problem of random values; `edit` may then plant special values in it.
Problem<AttentionCall> problem(const Shape& s, uint64_t seed,
                               std::function<void(AttentionCall&)> edit = nullptr) {
  return {describe(s), [s, seed, edit](Arena& arena) {
            Values values(seed);
            AttentionCall call;
            call.q = arena.alloc(DType::f32, {s.tq, s.hq, s.d}, s.layout);
            call.k = arena.alloc(DType::f32, {s.tk, s.hkv, s.d}, s.layout);
            call.v = arena.alloc(DType::f32, {s.tk, s.hkv, s.dv}, s.layout);
            call.out = arena.alloc(DType::f32, {s.tq, s.hq, s.dv}, s.layout);
            values.fill(call.q, -1.5, 1.5);
            values.fill(call.k, -1.5, 1.5);
            values.fill(call.v);
            call.mask = s.mask;
            if (s.bias) {
              call.bias = arena.alloc(DType::f32, {s.hq, s.tq, s.tk}, s.layout);
              values.fill(*call.bias, -2, 2);
            }
            if (s.positions) {
              call.q_positions = arena.alloc(DType::i64, {s.tq}, s.layout);
              call.k_positions = arena.alloc(DType::i32, {s.tk}, s.layout);
              harness::fill_positions(*call.q_positions, *call.k_positions,
                                      harness::PositionPattern::cache, values);
            }
            if (edit) edit(call);
            return call;
          }};
}

void set(const Tensor& t, int64_t offset, float value) { t.as<float>()[offset] = value; }

void expect_every_target_matches(const Problem<AttentionCall>& p) {
  optimized::expect_every_target_matches(attention(), p);
}

std::vector<float> copy_out(const AttentionCall& call) {
  std::vector<float> out;
  for (int64_t i = 0; i < call.out.shape[0]; ++i)
    for (int64_t h = 0; h < call.out.shape[1]; ++h)
      for (int64_t c = 0; c < call.out.shape[2]; ++c)
        out.push_back(call.out.as<float>()[call.out.offset(i, h, c)]);
  return out;
}

TEST(OptimizedAttention, EveryTargetIsListedAndTheFallbackRunsHere) {
  expect_every_target_listed(attention(), "attention");
}

// Head dims and key counts that are not multiples of the vector width or of the key block (256),
// query counts that are not multiples of the query block (64), every mask, bias and layout.
TEST(OptimizedAttention, EveryTargetWithinBoundOnTails) {
  uint64_t seed = 1;
  for (int64_t d : {1, 3, 17, 64}) {
    for (int64_t tk : {1, 5, 255, 257, 520}) {
      const int64_t dv = d == 64 ? 37 : d + 4;
      const auto layout = static_cast<Layout>(seed % 3);
      expect_every_target_matches(problem(
          {std::min<int64_t>(tk, 67), tk, 2, 1, d, dv, Mask::none, seed % 2 == 0, false, layout},
          seed));
      expect_every_target_matches(problem({std::min<int64_t>(tk, 67), tk, 2, 2, d, dv, Mask::causal,
                                           seed % 2 == 1, seed % 3 == 0, layout},
                                          seed + 1000));
      ++seed;
    }
  }
}

TEST(OptimizedAttention, GroupedQueryHeadsReadTheirKvHead) {
  for (int64_t hkv : {1, 2, 4}) {
    expect_every_target_matches(problem({9, 40, 8, hkv, 16, 16, Mask::causal, true}, 40 + hkv));
    expect_every_target_matches(problem({1, 300, 8, hkv, 64, 64}, 50 + hkv));  // decoding
  }
  // Groups larger than a work item's 64 rows are split across items.
  expect_every_target_matches(problem({3, 40, 130, 2, 8, 8, Mask::causal, true}, 60));
  // GQA must not read another head's keys: giving kv head 1 huge values changes only heads 4-7.
  const Shape s{3, 7, 8, 2, 8, 8};
  Arena a1, a2;
  const AttentionCall base = problem(s, 7).build(a1);
  const AttentionCall changed = problem(s, 7, [](AttentionCall& c) {
                                  for (int64_t j = 0; j < c.v.shape[0]; ++j)
                                    for (int64_t e = 0; e < c.v.shape[2]; ++e)
                                      set(c.v, c.v.offset(j, 1, e), 100.0f);
                                }).build(a2);
  attention().front().run(base);
  attention().front().run(changed);
  for (int64_t i = 0; i < s.tq; ++i)
    for (int64_t h = 0; h < s.hq; ++h) {
      const float a = base.out.as<float>()[base.out.offset(i, h, 0)];
      const float b = changed.out.as<float>()[changed.out.offset(i, h, 0)];
      if (h < 4) {
        EXPECT_EQ(a, b) << "head " << h;
      } else {
        EXPECT_NEAR(b, 100.0f, 1e-4) << "head " << h;
      }
    }
}

// An unused KV-cache slot may hold NaN in k and v; a masked key contributes nothing, so the
// output is finite and the reference's. Masked by the causal mask with explicit or default
// positions, and by a −∞ bias.
TEST(OptimizedAttention, MaskedKeysWithNaNValuesContributeNothing) {
  const auto nan_slots = [](int64_t from) {
    return [from](AttentionCall& c) {
      for (int64_t j = from; j < c.k.shape[0]; ++j)
        for (int64_t h = 0; h < c.k.shape[1]; ++h) {
          for (int64_t e = 0; e < c.k.shape[2]; ++e) set(c.k, c.k.offset(j, h, e), kNaN);
          for (int64_t e = 0; e < c.v.shape[2]; ++e) set(c.v, c.v.offset(j, h, e), kNaN);
        }
    };
  };
  // A cache of 600 slots, 300 used: queries at positions 290 … 299, unused keys at 2^24.
  const auto unused_cache = [&](AttentionCall& c) {
    nan_slots(300)(c);
    for (int64_t i = 0; i < c.q.shape[0]; ++i)
      harness::store_index(*c.q_positions, c.q_positions->offset(i), 290 + i);
    for (int64_t j = 300; j < c.k.shape[0]; ++j)
      harness::store_index(*c.k_positions, c.k_positions->offset(j), kMaxPosition);
  };
  expect_every_target_matches(
      problem({10, 600, 4, 2, 64, 64, Mask::causal, false, true}, 3, unused_cache));
  // Default positions: query i sees keys ≤ tk − tq + i, so the last keys are masked for the
  // first queries only; NaN in keys 290 … 299 is visible to the later rows (NaN there).
  expect_every_target_matches(problem({10, 300, 2, 1, 16, 16, Mask::causal}, 4, nan_slots(295)));
  // −∞ bias hides keys 100 … 299 from every row.
  expect_every_target_matches(
      problem({5, 300, 2, 1, 16, 16, Mask::none, true}, 5, [&](AttentionCall& c) {
        nan_slots(100)(c);
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t i = 0; i < 5; ++i)
            for (int64_t j = 100; j < 300; ++j) set(*c.bias, c.bias->offset(h, i, j), -kInf);
      }));
  // And the outputs of the cache case are finite.
  Arena arena;
  const AttentionCall call =
      problem({10, 600, 4, 2, 64, 64, Mask::causal, false, true}, 3, unused_cache).build(arena);
  attention().front().run(call);
  for (float x : copy_out(call)) ASSERT_TRUE(std::isfinite(x));
}

TEST(OptimizedAttention, RowsWithNoVisibleKeyAreZeros) {
  // Explicit positions: the first queries precede every key.
  const auto early_queries = [](AttentionCall& c) {
    for (int64_t i = 0; i < c.q.shape[0]; ++i)
      harness::store_index(*c.q_positions, c.q_positions->offset(i), i < 3 ? 0 : 1000 + i);
    for (int64_t j = 0; j < c.k.shape[0]; ++j)
      harness::store_index(*c.k_positions, c.k_positions->offset(j), 1 + j);
  };
  // Bias −∞ on every key of row 1.
  const auto masked_row = [](AttentionCall& c) {
    for (int64_t h = 0; h < c.q.shape[1]; ++h)
      for (int64_t j = 0; j < c.k.shape[0]; ++j) set(*c.bias, c.bias->offset(h, 1, j), -kInf);
  };
  for (const auto& impl : attention()) {
    for (int which = 0; which < 3; ++which) {
      Arena arena;
      AttentionCall call =
          which == 0 ? problem({6, 280, 2, 1, 8, 8, Mask::causal, false, true}, 9, early_queries)
                           .build(arena)
          : which == 1 ? problem({4, 280, 2, 1, 8, 8, Mask::none, true}, 9, masked_row).build(arena)
                       : problem({4, 0, 2, 1, 8, 8}, 9).build(arena);  // no key at all
      impl.run(call);
      for (int64_t i = 0; i < call.q.shape[0]; ++i)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t c = 0; c < 8; ++c) {
            const bool empty = which == 0 ? i < 3 : which == 1 ? i == 1 : true;
            const float got = call.out.as<float>()[call.out.offset(i, h, c)];
            if (empty) {
              ASSERT_EQ(got, 0.0f) << impl.name << " case " << which << " row " << i;
            } else {
              ASSERT_NE(got, 0.0f) << impl.name << " case " << which << " row " << i;
            }
          }
    }
  }
}

// NaN scores make the row NaN; a +∞ score makes the reference's row zeros (its total is NaN); a
// visible NaN value makes its column NaN; an f32 overflow of q·k the reference does not have.
TEST(OptimizedAttention, NonFiniteRowsFollowTheReference) {
  const Shape s{4, 270, 2, 1, 8, 8, Mask::none, true};
  expect_every_target_matches(
      problem(s, 11, [](AttentionCall& c) { set(c.q, c.q.offset(1, 0, 3), kNaN); }));
  expect_every_target_matches(
      problem(s, 12, [](AttentionCall& c) { set(*c.bias, c.bias->offset(1, 2, 260), kInf); }));
  expect_every_target_matches(
      problem(s, 13, [](AttentionCall& c) { set(*c.bias, c.bias->offset(0, 0, 5), kNaN); }));
  expect_every_target_matches(
      problem(s, 14, [](AttentionCall& c) { set(c.v, c.v.offset(100, 0, 2), kNaN); }));
  expect_every_target_matches(
      problem(s, 15, [](AttentionCall& c) { set(c.v, c.v.offset(7, 0, 6), -kInf); }));
  expect_every_target_matches(problem(s, 16, [](AttentionCall& c) {
    set(c.q, c.q.offset(3, 1, 0), 1e30f);
    set(c.k, c.k.offset(9, 0, 0), 1e20f);  // 1e50 overflows f32 but not fp64
  }));
  // With a nonzero reference row, check the fast path was not silently used for it.
  Arena arena;
  const AttentionCall call = problem(s, 12, [](AttentionCall& c) {
                               set(*c.bias, c.bias->offset(1, 2, 260), kInf);
                             }).build(arena);
  attention().front().run(call);
  for (int64_t c = 0; c < 8; ++c) EXPECT_EQ(call.out.as<float>()[call.out.offset(2, 1, c)], 0.0f);
}

// The tolerance unit ignores the bias's magnitude: a large common bias must cost no accuracy.
// Additive masks of −FLT_MAX (as Hugging Face builds them) contribute nothing, and a row masked
// that way everywhere is the reference's (its scores are all near −FLT_MAX).
TEST(OptimizedAttention, LargeBiasesAndAdditiveMasks) {
  const Shape s{6, 300, 2, 1, 16, 16, Mask::none, true};
  expect_every_target_matches(problem(s, 51, [](AttentionCall& c) {
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = 0; j < 300; ++j) {
          const int64_t at = c.bias->offset(h, i, j);
          c.bias->as<float>()[at] += 10000.0f;
        }
  }));
  expect_every_target_matches(problem(s, 52, [](AttentionCall& c) {
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = 0; j < 300; ++j) {
          if (i == 4 || j > 100 + 30 * i) set(*c.bias, c.bias->offset(h, i, j), -FLT_MAX);
        }
  }));
}

TEST(OptimizedAttention, BitwiseIdenticalForEveryThreadCount) {
  // Realistic prefill: 8 query heads on 2 kv heads, causal, explicit positions and a bias.
  expect_bitwise_for_thread_counts(attention().front(),
                                   problem({300, 300, 8, 2, 64, 64, Mask::causal, true, true}, 21));
}

// The same values at other addresses give the same bits (Eigen's paths for small products must
// not depend on alignment).
TEST(OptimizedAttention, BitwiseIdenticalAtEveryAlignment) {
  for (const Shape& s : {Shape{1, 40, 4, 2, 64, 64}, Shape{3, 5, 2, 1, 3, 5},
                         Shape{2, 300, 2, 2, 17, 9, Mask::causal}}) {
    Arena arena;
    const AttentionCall base = problem(s, 31).build(arena);
    for (const auto& impl : attention()) {
      impl.run(base);
      const std::vector<uint32_t> expected = output_bits(base);
      for (int64_t shift = 1; shift < 16; shift += 3) {
        // Copies of q, k, v shifted by `shift` floats.
        auto shifted = [&](const Tensor& t, std::vector<float>& storage) {
          storage.assign(t.numel() + shift, 0.0f);
          Tensor c = t;
          c.data = storage.data() + shift;
          std::memcpy(c.data, t.data, t.numel() * sizeof(float));
          return c;
        };
        std::vector<float> qs, ks, vs, os;
        AttentionCall call = base;
        call.q = shifted(base.q, qs);
        call.k = shifted(base.k, ks);
        call.v = shifted(base.v, vs);
        call.out = shifted(base.out, os);
        impl.run(call);
        EXPECT_TRUE(output_bits(call) == expected)
            << impl.name << " " << describe(s) << " shift " << shift;
      }
    }
  }
}

TEST(OptimizedAttention, RejectsBadInputBeforeWriting) {
  for (const auto& impl : attention()) {
    Arena arena;
    AttentionCall call = problem({3, 4, 4, 2, 8, 8, Mask::causal, false, true}, 41).build(arena);
    call.q_positions->as<int64_t>()[call.q_positions->offset(1)] = -1;
    harness::expect_rejected(impl.run, call, arena, "q_positions[1]");
    call.q_positions->as<int64_t>()[call.q_positions->offset(1)] = 1;
    AttentionCall bad = call;
    bad.k.shape[1] = 3;  // 4 query heads on 3 kv heads
    bad.v.shape[1] = 3;
    harness::expect_rejected(impl.run, bad, arena, "q.shape[1]");
    bad = call;
    bad.out = bad.q;  // output over an input
    harness::expect_rejected(impl.run, bad, arena, "out.data");
    bad = call;
    bad.threads = -2;
    harness::expect_rejected(impl.run, bad, arena, "threads");
  }
}

}  // namespace
}  // namespace posenc::optimized
