// The optimized attention kernels against the reference (within their bound, in the family's
// unit), their edge rules, determinism across thread counts and addresses, and bad input. Over 600
// lines: one suite for the family's optimized kernel, its variants and outputs included.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
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
  DType dtype = DType::f32;  // of q, k, v and out
  bool f32_bias = false;     // the bias in f32 rather than in `dtype`
  int64_t window = -1;       // window_left
  double softcap = 0;
  int64_t chunk = 0;   // chunk_size
  bool sinks = false;  // per-head sinks from −∞ to large
  bool alibi = false;  // fused ALiBi slopes (Press's for hq heads)
  bool lse = false;    // the lse output
};

std::string describe(const Shape& s) {
  return "tq=" + std::to_string(s.tq) + " tk=" + std::to_string(s.tk) +
         " hq=" + std::to_string(s.hq) + " hkv=" + std::to_string(s.hkv) +
         " d=" + std::to_string(s.d) + " dv=" + std::to_string(s.dv) +
         (s.mask == Mask::causal ? " causal" : "") + (s.bias ? " bias" : "") +
         (s.positions ? " positions" : "") + " " + harness::layout_name(s.layout) + " " +
         dtype_name(s.dtype) + (s.bias && s.f32_bias ? " f32 bias" : "") +
         (s.window >= 0 ? " window_left=" + std::to_string(s.window) : "") +
         (s.softcap > 0 ? " softcap=" + std::to_string(s.softcap) : "") + (s.lse ? " lse" : "") +
         (s.chunk > 0 ? " chunk_size=" + std::to_string(s.chunk) : "") + (s.sinks ? " sinks" : "") +
         (s.alibi ? " alibi" : "");
}

// A problem of random values; `edit` may then plant special values in it.
Problem<AttentionCall> problem(const Shape& s, uint64_t seed,
                               std::function<void(AttentionCall&)> edit = nullptr) {
  return {
      describe(s), [s, seed, edit](Arena& arena) {
        Values values(seed);
        AttentionCall call;
        call.q = arena.alloc(s.dtype, {s.tq, s.hq, s.d}, s.layout);
        call.k = arena.alloc(s.dtype, {s.tk, s.hkv, s.d}, s.layout);
        call.v = arena.alloc(s.dtype, {s.tk, s.hkv, s.dv}, s.layout);
        call.out = arena.alloc(s.dtype, {s.tq, s.hq, s.dv}, s.layout);
        if (s.lse) call.lse = arena.alloc(DType::f32, {s.tq, s.hq}, s.layout);
        values.fill(call.q, -1.5, 1.5);
        values.fill(call.k, -1.5, 1.5);
        values.fill(call.v);
        call.mask = s.mask;
        call.window_left = s.window;
        call.softcap = s.softcap;
        call.chunk_size = s.chunk;
        if (s.sinks) {
          call.sinks = arena.alloc(DType::f32, {s.hq});
          const float sink[] = {-kInf, 0.5f, -3, 100, 2, 30};
          for (int64_t h = 0; h < s.hq; ++h) call.sinks->as<float>()[h] = sink[h % 6];
        }
        if (s.alibi) {
          call.alibi_slopes = arena.alloc(DType::f32, {s.hq});
          for (int64_t h = 0; h < s.hq; ++h)
            call.alibi_slopes->as<float>()[h] = std::exp2(-8.0f * (h + 1) / s.hq);
        }
        if (s.bias) {
          call.bias = arena.alloc(s.f32_bias ? DType::f32 : s.dtype, {s.hq, s.tq, s.tk}, s.layout);
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
  for (const auto& impl : runnable(attention())) {
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

// The same values at other addresses give the same bits (the block products and the softmax must
// not depend on alignment).
TEST(OptimizedAttention, BitwiseIdenticalAtEveryAlignment) {
  for (const Shape& s : {Shape{1, 40, 4, 2, 64, 64}, Shape{3, 5, 2, 1, 3, 5},
                         Shape{2, 300, 2, 2, 17, 9, Mask::causal}}) {
    Arena arena;
    const AttentionCall base = problem(s, 31).build(arena);
    for (const auto& impl : runnable(attention())) {
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

// ---- bf16 and f16: q, k, v and out in the dtype, the bias in f32 or the same dtype; held to 1 ulp
// of the output dtype in the family's unit (kernel.h). Values are set with store(), which rounds.

const DType kLowPrecision[] = {DType::bf16, DType::f16};

// Multiplies every element of t by factor (rounded to t's dtype).
void rescale(const Tensor& t, double factor) {
  harness::for_each_offset(t, [&](int64_t at) { store(t, at, load(t, at) * factor); });
}

// Tails of the vector width, the key block and the query block; every mask, bias dtype and layout;
// grouped-query heads.
TEST(OptimizedAttention, LowPrecisionEveryTargetWithinOneUlp) {
  uint64_t seed = 100;
  for (DType dtype : kLowPrecision) {
    for (int64_t d : {1, 17, 64}) {
      for (int64_t tk : {1, 5, 257, 520}) {
        const int64_t tq = std::min<int64_t>(tk, 67), dv = d == 64 ? 37 : d + 4;
        const auto layout = static_cast<Layout>(seed % 3);
        // A bias on even seeds, in f32 on every other one; on odd seeds for the causal case.
        expect_every_target_matches(problem(
            {tq, tk, 2, 1, d, dv, Mask::none, seed % 2 == 0, false, layout, dtype, seed % 4 == 0},
            seed));
        expect_every_target_matches(problem({tq, tk, 4, 2, d, dv, Mask::causal, seed % 2 == 1,
                                             seed % 3 == 0, layout, dtype, seed % 4 == 1},
                                            seed + 1000));
        ++seed;
      }
    }
    for (int64_t hkv : {1, 2, 4}) {
      expect_every_target_matches(problem(
          {9, 40, 8, hkv, 16, 16, Mask::causal, true, false, Layout::permuted, dtype}, 40 + hkv));
      expect_every_target_matches(  // decoding
          problem({1, 300, 8, hkv, 64, 64, Mask::none, false, false, Layout::contiguous, dtype},
                  50 + hkv));
    }
  }
}

// Special values and the ends of each dtype's range, on every target: masked cache slots holding
// NaN and ±∞ (f16's are converted without Highway's emulated PromoteTo, which makes them finite),
// NaN and ∞ that the reference's edge rules govern, outputs that are bf16/f16 subnormals, values
// near the largest finite, and f32 sums that overflow (the exact path, rounded once from fp64).
TEST(OptimizedAttention, LowPrecisionSpecialsAndRangeEnds) {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dtype : kLowPrecision) {
    const double largest = dtype == DType::bf16 ? 0x1.FEp127 : 65504;
    const double smallest = dtype == DType::bf16 ? 0x1p-133 : 0x1p-24;  // subnormal steps
    // A cache of 600 slots, 300 used: unused keys at 2^24 with NaN and ±∞ in k and v.
    expect_every_target_matches(
        problem({10, 600, 4, 2, 64, 64, Mask::causal, false, true, Layout::contiguous, dtype}, 3,
                [&](AttentionCall& c) {
                  for (int64_t i = 0; i < c.q.shape[0]; ++i)
                    harness::store_index(*c.q_positions, c.q_positions->offset(i), 290 + i);
                  for (int64_t j = 300; j < 600; ++j) {
                    harness::store_index(*c.k_positions, c.k_positions->offset(j), kMaxPosition);
                    const double special = j % 3 == 0 ? std::nan("") : j % 3 == 1 ? inf : -inf;
                    for (int64_t h = 0; h < 2; ++h) {
                      for (int64_t e = 0; e < 64; ++e) store(c.k, c.k.offset(j, h, e), special);
                      for (int64_t e = 0; e < 64; ++e) store(c.v, c.v.offset(j, h, e), special);
                    }
                  }
                }));
    const Shape s{4, 270, 2, 1, 8, 8, Mask::none, true, false, Layout::padded, dtype};
    const std::vector<std::function<void(AttentionCall&)>> edits = {
        [](AttentionCall& c) { store(c.q, c.q.offset(1, 0, 3), std::nan("")); },
        [&](AttentionCall& c) { store(*c.bias, c.bias->offset(1, 2, 260), inf); },
        [&](AttentionCall& c) {  // −∞ bias hides keys 100 … 269, whose values are NaN
          for (int64_t h = 0; h < 2; ++h)
            for (int64_t i = 0; i < 4; ++i)
              for (int64_t j = 100; j < 270; ++j) {
                store(*c.bias, c.bias->offset(h, i, j), -inf);
                if (h == 0 && i == 0)
                  for (int64_t e = 0; e < 8; ++e) store(c.v, c.v.offset(j, 0, e), std::nan(""));
              }
        },
        [](AttentionCall& c) { store(c.v, c.v.offset(100, 0, 2), std::nan("")); },
        [&](AttentionCall& c) { store(c.v, c.v.offset(7, 0, 6), -inf); },
        // Values a few subnormal steps wide: outputs in the dtype's subnormal range.
        [&](AttentionCall& c) { rescale(c.v, 37 * smallest); },
        // Values near the largest finite (bf16: the f32 sums overflow, the reference's do not).
        [&](AttentionCall& c) { rescale(c.v, largest); },
        // Peaky scores: q and k near ±16 (bf16) or ±64 (f16).
        [&](AttentionCall& c) {
          rescale(c.q, dtype == DType::bf16 ? 10 : 40);
          rescale(c.k, dtype == DType::bf16 ? 10 : 40);
        },
    };
    uint64_t seed = 60;
    for (const auto& edit : edits) expect_every_target_matches(problem(s, seed++, edit));
  }
}

TEST(OptimizedAttention, LowPrecisionBitwiseIdenticalForEveryThreadCount) {
  for (DType dtype : kLowPrecision) {
    const Problem<AttentionCall> p =
        problem({300, 300, 8, 2, 64, 64, Mask::causal, true, true, Layout::contiguous, dtype}, 21);
    std::vector<uint32_t> first;
    for (int threads : {1, 2, 3, 7}) {
      Arena arena;
      AttentionCall call = p.build(arena);
      call.threads = threads;
      attention().front().run(call);
      EXPECT_EQ(last_threaded_parts(), threads) << p.label << ": must really run threaded";
      if (first.empty()) {
        first = output_bits(call);
      } else {
        EXPECT_TRUE(output_bits(call) == first) << p.label << ", " << threads << " threads";
      }
    }
  }
}

// Where the f32 path is exact (q = 0: equal weights over two keys, so each output is the mean of
// two values, exact in f32), the output is the reference's bits on every target: rounded once, to
// nearest with ties to even, subnormal results included. A truncating or double-rounding demotion
// is off by one ulp here, which the tolerance unit would allow.
TEST(OptimizedAttention, LowPrecisionOutputsRoundOnceToNearestEven) {
  for (DType dtype : kLowPrecision) {
    const double u = dtype == DType::bf16 ? 0x1p-7 : 0x1p-10;       // ulp of 1
    const double tiny = dtype == DType::bf16 ? 0x1p-133 : 0x1p-24;  // subnormal step
    const double top = dtype == DType::bf16 ? 0x1.FEp127 : 65504;   // largest finite
    const double top_ulp = dtype == DType::bf16 ? 0x1p120 : 32;
    // Per column, the two values: means that tie (to even, up or down), that fall an eighth or
    // three quarters of an ulp off the grid, that are exact, or subnormal; then, in a problem of
    // their own, means at the top of the range (bf16's sums overflow f32 there and every row takes
    // the exact path, which must not hide the others).
    const std::vector<std::vector<std::pair<double, double>>> column_sets = {
        {{1, 1 + 3 * u},
         {1, 1 + u},
         {1, 1 + 5 * u},
         {-1, -1 - 3 * u},
         {1 + u, 0.5 + 1.5 * u},
         {1, 0.125 * (1 + u)},
         {1, 0.25 * (1 + 3 * u)},
         {0.75, 1 + 3 * u},
         {tiny, 2 * tiny},
         {tiny, 4 * tiny},
         {3 * tiny, 0}},
        {{top, top - top_ulp}, {-top, -top + 3 * top_ulp}},
    };
    for (const auto& pairs : column_sets) {
      const int64_t dv = 40;  // the set repeated: whole vectors and a tail on every target
      const Problem<AttentionCall> p =
          problem({3, 2, 2, 1, 8, dv, Mask::none, false, false, Layout::padded, dtype}, 70,
                  [&](AttentionCall& c) {
                    rescale(c.q, 0);
                    for (int64_t e = 0; e < dv; ++e) {
                      store(c.v, c.v.offset(0, 0, e), pairs[e % pairs.size()].first);
                      store(c.v, c.v.offset(1, 0, e), pairs[e % pairs.size()].second);
                    }
                  });
      Arena ref_arena;
      const AttentionCall expected = p.build(ref_arena);
      reference_impl<AttentionCall>().run(expected);
      for (const auto& impl : runnable(attention())) {
        Arena arena;
        const AttentionCall got = p.build(arena);
        impl.run(got);
        EXPECT_TRUE(output_bits(got) == output_bits(expected)) << impl.name << " " << p.label;
      }
    }
  }
}

// Random problems of every kind: the worst error of each dtype and target, in the family's unit,
// printed for the record and held to the bound.
TEST(OptimizedAttention, LowPrecisionWorstErrorOverRandomProblems) {
  constexpr int kProblems = 40;
  for (DType dtype : kLowPrecision) {
    const auto impls = runnable(attention());
    std::vector<harness::Comparison> worst(impls.size());
    std::vector<int64_t> differing(impls.size(), 0);  // outputs off the reference's bits
    int64_t outputs = 0;
    Values pick(7 + static_cast<uint64_t>(dtype));
    for (int n = 0; n < kProblems; ++n) {
      Shape s{pick.integer(1, 48), pick.integer(1, 700), 1,
              pick.integer(1, 2),  pick.integer(1, 128), pick.integer(1, 96)};
      s.hq = s.hkv * std::vector<int64_t>{1, 2, 4}[pick.integer(0, 2)];
      s.mask = pick.integer(0, 1) ? Mask::causal : Mask::none;
      s.positions = s.mask == Mask::causal && pick.integer(0, 1);
      if (s.positions) s.tk = std::max(s.tk, s.tq);  // queries are the last tq keys
      s.bias = pick.integer(0, 1);
      s.f32_bias = pick.integer(0, 1);
      s.layout = static_cast<Layout>(pick.integer(0, 2));
      s.dtype = dtype;
      const double peak = pick.integer(0, 1) ? 1 : 6;  // uniform or peaky weights
      const Problem<AttentionCall> p = problem(s, 200 + n, [peak](AttentionCall& c) {
        rescale(c.q, peak);
        rescale(c.k, peak);
      });
      Arena ref_arena;
      const AttentionCall expected = p.build(ref_arena);
      reference_impl<AttentionCall>().run(expected);
      const std::vector<uint32_t> want = output_bits(expected);
      outputs += static_cast<int64_t>(want.size());
      for (size_t i = 0; i < impls.size(); ++i) {
        Arena arena;
        const AttentionCall got = p.build(arena);
        impls[i].run(got);
        const std::vector<uint32_t> have = output_bits(got);
        for (size_t e = 0; e < want.size(); ++e) differing[i] += have[e] != want[e];
        const harness::Comparison c = harness::compare(expected, got, impls[i].bound);
        EXPECT_TRUE(c.ok) << impls[i].name << " " << p.label << ": " << c.describe();
        if (c.worst >= worst[i].worst) worst[i] = c;
      }
    }
    for (size_t i = 0; i < impls.size(); ++i)
      std::printf(
          "%s %s: worst %.3f units over %d problems (%s); %lld of %lld outputs off the "
          "reference's bits\n",
          impls[i].name.c_str(), dtype_name(dtype), worst[i].worst, kProblems,
          worst[i].where.c_str(), static_cast<long long>(differing[i]),
          static_cast<long long>(outputs));
  }
}

// Sliding windows around the key block (128) and query block (64) edges, alone and with causal,
// implicit and explicit (cache-pattern) positions, every dtype.
TEST(OptimizedAttention, SlidingWindowEveryTargetMatches) {
  uint64_t seed = 300;
  for (int64_t window : {0, 1, 63, 127, 128, 129, 400}) {
    for (Mask mask : {Mask::none, Mask::causal}) {
      const bool positions = seed % 2 == 0;
      const DType dtype = std::array{DType::f32, DType::bf16, DType::f16}[seed % 3];
      Shape s{70, 520, 4, 2, 17, 9, mask, seed % 3 == 0, positions, Layout::contiguous, dtype};
      s.window = window;
      expect_every_target_matches(problem(s, seed++));
      s.tq = 1;  // decoding
      s.layout = Layout::padded;
      expect_every_target_matches(problem(s, seed++));
    }
  }
}

// Runs every target on s with q = 0 (every visible key weighs the same) and one-hot values (dv =
// tk), which show which keys each row saw, and checks them against seen(q_pos, k_pos).
void expect_keys_seen(const Shape& s, uint64_t seed,
                      const std::function<bool(int64_t, int64_t)>& seen) {
  for (const auto& impl : runnable(attention())) {
    Arena arena;
    const AttentionCall call = problem(s, seed, [](AttentionCall& c) {
                                 for (int64_t i = 0; i < c.q.shape[0]; ++i)
                                   for (int64_t e = 0; e < c.q.shape[2]; ++e)
                                     set(c.q, c.q.offset(i, 0, e), 0.0f);
                                 for (int64_t j = 0; j < c.v.shape[0]; ++j)
                                   for (int64_t e = 0; e < c.v.shape[2]; ++e)
                                     set(c.v, c.v.offset(j, 0, e), j == e ? 1.0f : 0.0f);
                               }).build(arena);
    impl.run(call);
    for (int64_t i = 0; i < s.tq; ++i) {
      const int64_t qp = call.q_position(i);
      for (int64_t j = 0; j < s.tk; ++j) {
        const int64_t kp = call.k_position(j);
        const float got = call.out.as<float>()[call.out.offset(i, 0, j)];
        ASSERT_EQ(got > 0, seen(qp, kp)) << impl.name << " " << describe(s) << " query " << i
                                         << " key " << j << " positions " << qp << ", " << kp;
      }
    }
  }
}

// The bound is inclusive: query i sees key j iff q_pos[i] − k_pos[j] ≤ window_left.
TEST(OptimizedAttention, SlidingWindowBoundIsInclusive) {
  const int64_t tq = 5, tk = 300, window = 130;
  for (bool positions : {false, true}) {
    for (Mask mask : {Mask::none, Mask::causal}) {
      Shape s{tq, tk, 1, 1, 4, tk, mask, false, positions};
      s.window = window;
      expect_keys_seen(s, 7, [&](int64_t qp, int64_t kp) {
        return qp - kp <= window && (mask == Mask::none || qp >= kp);
      });
    }
  }
}

TEST(OptimizedAttention, SlidingWindowBitwiseIdenticalForEveryThreadCount) {
  Shape s{200, 600, 4, 2, 32, 32, Mask::causal, true, true};
  s.window = 150;
  expect_bitwise_for_thread_counts(attention().front(), problem(s, 22));
}

// Softcaps from tight (0.5: most logits saturate) to Gemma 2's 50, with and without a bias (added
// after the cap) and a window, every dtype; and its edge rows: a NaN logit, and an f32 overflow
// of q·k, which the cap brings back to ±softcap in fp64.
TEST(OptimizedAttention, SoftcapEveryTargetMatches) {
  uint64_t seed = 400;
  for (double softcap : {0.5, 5.0, 50.0}) {
    for (Mask mask : {Mask::none, Mask::causal}) {
      const DType dtype = std::array{DType::f32, DType::bf16, DType::f16}[seed % 3];
      Shape s{70, 300, 4, 2, 17, 9, mask, seed % 2 == 0, false, Layout::contiguous, dtype};
      s.softcap = softcap;
      s.window = mask == Mask::causal ? 140 : -1;
      expect_every_target_matches(problem(s, seed++));
    }
  }
  Shape s{4, 270, 2, 1, 8, 8, Mask::none, true};
  s.softcap = 2;
  expect_every_target_matches(
      problem(s, 11, [](AttentionCall& c) { set(c.q, c.q.offset(1, 0, 3), kNaN); }));
  expect_every_target_matches(problem(s, 16, [](AttentionCall& c) {
    set(c.q, c.q.offset(3, 1, 0), 1e30f);
    set(c.k, c.k.offset(9, 0, 0), 1e20f);  // 1e50 overflows f32 but not fp64
  }));
}

TEST(OptimizedAttention, SoftcapBitwiseIdenticalForEveryThreadCount) {
  Shape s{200, 300, 4, 2, 32, 32, Mask::causal, true};
  s.softcap = 30;
  expect_bitwise_for_thread_counts(attention().front(), problem(s, 23));
}

// Chunks of a few keys to more than a key block, with a window and without, every dtype, prefill
// and decoding.
TEST(OptimizedAttention, ChunkedEveryTargetMatches) {
  uint64_t seed = 500;
  for (int64_t chunk : {1, 7, 128, 129, 300}) {
    for (Mask mask : {Mask::none, Mask::causal}) {
      const DType dtype = std::array{DType::f32, DType::bf16, DType::f16}[seed % 3];
      Shape s{70, 520, 4, 2, 17, 9, mask, seed % 3 == 0, seed % 2 == 0, Layout::contiguous, dtype};
      s.chunk = chunk;
      s.window = seed % 4 == 1 ? 100 : -1;
      expect_every_target_matches(problem(s, seed++));
      s.tq = 1;
      s.layout = Layout::padded;
      expect_every_target_matches(problem(s, seed++));
    }
  }
  Shape s{80, 40, 2, 1, 8, 8, Mask::none, false, false};  // tq > tk: queries before every key
  s.chunk = 16;
  expect_every_target_matches(problem(s, 531));
}

// Sinks from −∞ to 100 (far above every score), with masks that leave rows without a key, and
// fused ALiBi with and without a bias (the two summed as hi + lo), softcapped and not.
TEST(OptimizedAttention, SinksAndAlibiEveryTargetMatch) {
  uint64_t seed = 600;
  for (bool sinks : {false, true}) {
    for (bool alibi : {false, true}) {
      for (Mask mask : {Mask::none, Mask::causal}) {
        if (!sinks && !alibi) continue;
        const DType dtype = std::array{DType::f32, DType::bf16, DType::f16}[seed % 3];
        Shape s{70,   300, 6, 2, 17, 9, mask, seed % 2 == 0, seed % 3 != 0, Layout::contiguous,
                dtype};
        s.sinks = sinks;
        s.alibi = alibi;
        s.softcap = seed % 4 == 0 ? 30 : 0;
        s.window = mask == Mask::causal ? 40 : -1;
        expect_every_target_matches(problem(s, seed++));
        s.tq = 1;
        expect_every_target_matches(problem(s, seed++));
      }
    }
  }
  Shape s{8, 300, 2, 1, 8, 8, Mask::causal, true, false};
  s.alibi = true;
  s.sinks = true;
  // A sink of 100 beside keys scoring 0 in the first block and 100 in the second: e^(sink − the
  // first block's maximum) would overflow f32, the sink in the maximum does not.
  Shape tower{1, 256, 1, 1, 1, 4, Mask::none, false, false};
  tower.sinks = true;  // head 0's sink is −∞: set below
  expect_every_target_matches(problem(tower, 612, [](AttentionCall& c) {
    c.scale = 10;
    set(c.q, 0, 1);
    for (int64_t j = 0; j < 256; ++j) set(c.k, c.k.offset(j, 0, 0), j < 128 ? 0.0f : 10.0f);
    set(*c.sinks, 0, 100);
  }));
  // One row's bias at −3·10^38: its scores leave f32's resolution, the exact path, with ALiBi and
  // the sink.
  expect_every_target_matches(problem(s, 611, [](AttentionCall& c) {
    for (int64_t j = 0; j < 300; ++j) set(*c.bias, c.bias->offset(0, 7, j), -3e38f);
  }));
}

// The key at a chunk's first position belongs to it.
TEST(OptimizedAttention, ChunkBoundsByHand) {
  const int64_t tq = 6, tk = 300, chunk = 130;
  for (bool positions : {false, true}) {
    for (Mask mask : {Mask::none, Mask::causal}) {
      Shape s{tq, tk, 1, 1, 4, tk, mask, false, positions};
      s.chunk = chunk;
      expect_keys_seen(s, 8, [&](int64_t qp, int64_t kp) {
        return qp / chunk == kp / chunk && (mask == Mask::none || kp <= qp);
      });
    }
  }
}

TEST(OptimizedAttention, VariantsBitwiseIdenticalForEveryThreadCount) {
  Shape s{200, 600, 4, 2, 32, 32, Mask::causal, true, true};
  s.chunk = 150;
  s.sinks = true;
  s.alibi = true;
  expect_bitwise_for_thread_counts(attention().front(), problem(s, 24));
}

TEST(OptimizedAttention, RejectsBadInputBeforeWriting) {
  for (const auto& impl : runnable(attention())) {
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
    bad = call;
    bad.window_left = -2;
    harness::expect_rejected(impl.run, bad, arena, "window_left");
    for (double softcap : {-1.0, double{INFINITY}, double{NAN}}) {
      bad = call;
      bad.softcap = softcap;
      harness::expect_rejected(impl.run, bad, arena, "softcap");
    }
    bad = call;
    bad.chunk_size = -1;
    harness::expect_rejected(impl.run, bad, arena, "chunk_size");
    for (float sink : {kNaN, kInf}) {
      bad = call;
      bad.sinks = arena.alloc(DType::f32, {4});
      std::fill_n(bad.sinks->as<float>(), 4, 0.0f);
      bad.sinks->as<float>()[2] = sink;
      harness::expect_rejected(impl.run, bad, arena, "sinks[2]");
    }
    bad = call;
    bad.sinks = arena.alloc(DType::f32, {3});  // 4 query heads
    std::fill_n(bad.sinks->as<float>(), 3, 0.0f);
    harness::expect_rejected(impl.run, bad, arena, "sinks.shape[0]");
    bad = call;
    bad.alibi_slopes = arena.alloc(DType::f32, {4});
    std::fill_n(bad.alibi_slopes->as<float>(), 4, 0.5f);
    bad.alibi_slopes->as<float>()[1] = kInf;
    harness::expect_rejected(impl.run, bad, arena, "alibi_slopes[1]");
    bad = call;
    bad.lse = arena.alloc(DType::f32, {3, 3});  // 4 query heads
    harness::expect_rejected(impl.run, bad, arena, "lse.shape[1]");
    bad.lse = arena.alloc(DType::bf16, {3, 4});
    harness::expect_rejected(impl.run, bad, arena, "lse.dtype");
    bad.lse = bad.out;  // its first 12 floats are out's
    bad.lse->rank = 2;
    bad.lse->shape = {3, 4};
    bad.lse->strides = {4, 1};
    harness::expect_rejected(impl.run, bad, arena, "lse.data");
  }
}

// ---- lse: ln of each row's softmax denominator (attention.h) ----

// Every mask, window, softcap, bias, layout and dtype around the key block (128) and the query
// block (64); and the edge rows: a NaN score (NaN), a +∞ score (+∞), a row every bias hides (−∞)
// and an f32 overflow of q·k (the exact path).
TEST(OptimizedAttention, LseEveryTargetMatches) {
  uint64_t seed = 500;
  for (Mask mask : {Mask::none, Mask::causal}) {
    for (int64_t tk : {1, 130, 300}) {
      const DType dtype = std::array{DType::f32, DType::bf16, DType::f16}[seed % 3];
      Shape s{
          67,   tk, 4, 2, 17, 9, mask, seed % 2 == 0, seed % 3 == 0, static_cast<Layout>(seed % 3),
          dtype};
      s.lse = true;
      s.window = seed % 4 == 0 ? 40 : -1;
      s.softcap = seed % 5 == 0 ? 5 : 0;
      expect_every_target_matches(problem(s, seed++));
    }
  }
  Shape s{4, 270, 2, 1, 8, 8, Mask::none, true};
  s.lse = true;
  expect_every_target_matches(
      problem(s, 11, [](AttentionCall& c) { set(c.q, c.q.offset(1, 0, 3), kNaN); }));
  expect_every_target_matches(
      problem(s, 12, [](AttentionCall& c) { set(*c.bias, c.bias->offset(1, 2, 260), kInf); }));
  expect_every_target_matches(problem(s, 13, [](AttentionCall& c) {
    for (int64_t j = 0; j < c.k.shape[0]; ++j) set(*c.bias, c.bias->offset(0, 3, j), -kInf);
  }));
  expect_every_target_matches(problem(s, 16, [](AttentionCall& c) {
    set(c.q, c.q.offset(3, 1, 0), 1e30f);
    set(c.k, c.k.offset(9, 0, 0), 1e20f);  // 1e50 overflows f32 but not fp64
  }));
}

// With q = 0 every score is 0, so lse = ln(keys seen) exactly, on every target: causal rows see
// 298, 299 and 300 keys; a row that sees none is −∞, a NaN score NaN and a +∞ score +∞.
TEST(OptimizedAttention, LseIsTheNaturalLogOfTheDenominator) {
  Shape s{3, 300, 2, 1, 8, 8, Mask::causal, true};
  s.lse = true;
  const auto edit = [](AttentionCall& c) {
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        for (int64_t e = 0; e < 8; ++e) set(c.q, c.q.offset(i, h, e), 0);
        for (int64_t j = 0; j < 300; ++j) set(*c.bias, c.bias->offset(h, i, j), 0);
      }
    for (int64_t j = 0; j < 300; ++j) set(*c.bias, c.bias->offset(1, 0, j), -kInf);
    set(*c.bias, c.bias->offset(1, 1, 4), kNaN);
    set(*c.bias, c.bias->offset(1, 2, 4), kInf);
  };
  for (const auto& impl : runnable(attention())) {
    Arena arena;
    const AttentionCall call = problem(s, 7, edit).build(arena);
    impl.run(call);
    const auto lse = [&](int64_t i, int64_t h) {
      return call.lse->as<float>()[call.lse->offset(i, h)];
    };
    for (int64_t i = 0; i < 3; ++i)
      EXPECT_EQ(lse(i, 0), static_cast<float>(std::log(298.0 + i))) << impl.name << " row " << i;
    EXPECT_EQ(lse(0, 1), -kInf) << impl.name;
    EXPECT_TRUE(std::isnan(lse(1, 1))) << impl.name;
    EXPECT_EQ(lse(2, 1), kInf) << impl.name;
  }
}

// Random f32 problems, prefill and decode against long KV caches, uniform and peaky weights: the
// worst lse error of each target in lse's unit, printed for the record and held to the bound.
TEST(OptimizedAttention, LseWorstErrorOverRandomProblems) {
  constexpr int kProblems = 24;
  const auto impls = runnable(attention());
  std::vector<harness::Comparison> worst(impls.size());
  Values pick(77);
  for (int n = 0; n < kProblems; ++n) {
    const bool decode = n % 2 == 1;
    Shape s{decode ? pick.integer(1, 4) : pick.integer(1, 48),
            decode ? pick.integer(512, 6000) : pick.integer(1, 700),
            1,
            pick.integer(1, 2),
            pick.integer(1, 128),
            pick.integer(1, 64)};
    s.hq = s.hkv * std::vector<int64_t>{1, 2, 4}[pick.integer(0, 2)];
    s.mask = pick.integer(0, 1) ? Mask::causal : Mask::none;
    s.bias = pick.integer(0, 1);
    s.lse = true;
    const double peak = pick.integer(0, 1) ? 1 : 6;
    const Problem<AttentionCall> p = problem(s, 300 + n, [peak](AttentionCall& c) {
      rescale(c.q, peak);
      rescale(c.k, peak);
    });
    Arena ref_arena;
    AttentionCall expected = p.build(ref_arena);
    reference_impl<AttentionCall>().run(expected);
    expected.out.shape[2] = 0;  // lse only
    for (size_t i = 0; i < impls.size(); ++i) {
      Arena arena;
      AttentionCall got = p.build(arena);
      impls[i].run(got);
      got.out.shape[2] = 0;
      const harness::Comparison c = harness::compare(expected, got, impls[i].bound);
      EXPECT_TRUE(c.ok) << impls[i].name << " " << p.label << ": " << c.describe();
      if (c.worst >= worst[i].worst) worst[i] = c;
    }
  }
  for (size_t i = 0; i < impls.size(); ++i)
    std::printf("%s lse: worst %.3f units over %d problems (%s)\n", impls[i].name.c_str(),
                worst[i].worst, kProblems, worst[i].where.c_str());
}

// ---- split-KV decode: tq ≤ 4 against tk ≥ 512 keys splits the keys into blocks of 256 ----

// Around the split's edges (511 keys: no split; 512, 513, 4100), every mask, window, softcap,
// bias, layout and dtype, grouped-query heads; rows exceptional in one split only (a NaN score,
// a +∞ score, an f32 overflow) and splits no key of a row reaches (a window).
TEST(OptimizedAttention, SplitKvDecodeEveryTargetMatches) {
  uint64_t seed = 600;
  for (int64_t tq : {1, 4}) {
    for (int64_t tk : {511, 512, 513, 4100}) {
      const DType dtype = std::array{DType::f32, DType::bf16, DType::f16}[seed % 3];
      Shape s{tq,
              tk,
              8,
              2,
              24,
              9,
              seed % 2 ? Mask::causal : Mask::none,
              seed % 3 == 0,
              seed % 4 == 1,
              static_cast<Layout>(seed % 3),
              dtype};
      s.lse = seed % 2 == 0;
      s.window = seed % 5 == 0 ? 300 : -1;
      s.softcap = seed % 7 == 0 ? 20 : 0;
      expect_every_target_matches(problem(s, seed++));
    }
  }
  Shape s{2, 1300, 4, 2, 8, 8, Mask::causal, true};
  s.lse = true;
  expect_every_target_matches(
      problem(s, 11, [](AttentionCall& c) { set(*c.bias, c.bias->offset(1, 0, 700), kNaN); }));
  expect_every_target_matches(
      problem(s, 12, [](AttentionCall& c) { set(*c.bias, c.bias->offset(2, 1, 900), kInf); }));
  expect_every_target_matches(problem(s, 16, [](AttentionCall& c) {
    set(c.q, c.q.offset(1, 3, 0), 1e30f);
    set(c.k, c.k.offset(1000, 1, 0), 1e20f);  // 1e50 overflows f32 but not fp64
  }));
  s.window = 100;
  expect_every_target_matches(problem(s, 17));
}

// Decode against long caches: the same bits for every thread count, each really run threaded
// (8 kv heads × 16 splits of work).
TEST(OptimizedAttention, SplitKvDecodeBitwiseIdenticalForEveryThreadCount) {
  Shape s{1, 4096, 32, 8, 64, 64, Mask::causal};
  s.lse = true;
  expect_bitwise_for_thread_counts(attention().front(), problem(s, 25));
  Shape mqa{3, 2600, 8, 1, 32, 16, Mask::causal, true};  // one kv head: only the splits spread
  mqa.lse = true;
  expect_bitwise_for_thread_counts(attention().front(), problem(mqa, 26), {1, 2, 3});
}

TEST(OptimizedAttention, LseBitwiseIdenticalForEveryThreadCount) {
  Shape s{200, 300, 4, 2, 32, 32, Mask::causal, true};
  s.lse = true;
  expect_bitwise_for_thread_counts(attention().front(), problem(s, 24));
}

}  // namespace
}  // namespace posenc::optimized
