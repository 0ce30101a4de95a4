// Every reference family in bf16 and f16: the oracle converts to fp64, computes and rounds once to
// the output dtype. Each call is checked against the same call in f32 (its bf16 / f16 inputs are
// exact in f32): the two results round one exact value, so they differ by at most half an ulp of
// each dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "posenc/error.h"
#include "properties/compare.h"
#include "properties/harness.h"
#include "reference/reference.h"

namespace posenc {
namespace {

using harness::Arena;

// `call` with every bf16 or f16 view replaced by an f32 copy (exact).
template <class Call>
Call in_f32(Call call, Arena& arena) {
  for (Tensor* t : harness::views(call)) {
    if (t == nullptr || (t->dtype != DType::bf16 && t->dtype != DType::f16)) continue;
    const Tensor copy =
        arena.alloc(DType::f32, std::vector<int64_t>(t->shape.begin(), t->shape.begin() + t->rank));
    std::vector<int64_t> from, to;
    harness::for_each_offset(*t, [&](int64_t off) { from.push_back(off); });
    harness::for_each_offset(copy, [&](int64_t off) { to.push_back(off); });
    for (size_t e = 0; e < from.size(); ++e) store(copy, to[e], load(*t, from[e]));
    *t = copy;
  }
  return call;
}

// Runs the reference on `call` and on its f32 twin; returns the number of elements compared.
template <class Call>
int64_t expect_rounded_once(const Call& call, Arena& arena) {
  const Call twin = in_f32(call, arena);
  reference_impl<Call>().run(call);
  reference_impl<Call>().run(twin);
  const std::vector<Tensor> low = harness::outputs(call), high = harness::outputs(twin);
  int64_t compared = 0;
  for (size_t o = 0; o < low.size(); ++o) {
    std::vector<int64_t> a, b;
    harness::for_each_offset(low[o], [&](int64_t off) { a.push_back(off); });
    harness::for_each_offset(high[o], [&](int64_t off) { b.push_back(off); });
    for (size_t e = 0; e < a.size(); ++e, ++compared) {
      const double x = load(low[o], a[e]), y = load(high[o], b[e]);
      if (!std::isfinite(y)) {
        EXPECT_TRUE(std::isnan(y) ? std::isnan(x) : x == y) << e;
        continue;
      }
      const double half_ulps = (harness::ulp_of(low[o].dtype, y) + harness::ulp_f32(y)) / 2;
      EXPECT_LE(std::fabs(x - y), half_ulps) << dtype_name(low[o].dtype) << " output " << o
                                             << " element " << e << ": " << x << " vs f32 " << y;
    }
  }
  return compared;
}

class ReferenceDtypes : public ::testing::TestWithParam<DType> {
 protected:
  Tensor positions(std::vector<int64_t> values) {
    const Tensor t = arena.alloc(DType::i64, {static_cast<int64_t>(values.size())});
    for (size_t i = 0; i < values.size(); ++i) t.as<int64_t>()[i] = values[i];
    return t;
  }
  Tensor filled(std::vector<int64_t> shape, double lo = -3, double hi = 3) {
    const Tensor t = arena.alloc(GetParam(), std::move(shape));
    values.fill(t, lo, hi);
    return t;
  }
  Arena arena;
  harness::Values values{9};
};

TEST_P(ReferenceDtypes, Absolute) {
  AbsoluteCall call{
      .x = filled({5, 24}), .table = filled({9, 24}), .positions = positions({0, 8, 3, 3, 1})};
  call.out = arena.alloc(GetParam(), {5, 24});
  EXPECT_EQ(expect_rounded_once(call, arena), 5 * 24);
}

TEST_P(ReferenceDtypes, Sinusoidal) {
  SinusoidalCall call{.out = arena.alloc(GetParam(), {6, 32}),
                      .x = filled({6, 32}),
                      .positions = positions({0, 1, 2, 100, 5000, 65000})};
  EXPECT_EQ(expect_rounded_once(call, arena), 6 * 32);
  SinusoidalCall table{.out = arena.alloc(GetParam(), {40, 16})};
  EXPECT_EQ(expect_rounded_once(table, arena), 40 * 16);
}

TEST_P(ReferenceDtypes, Rope) {
  RopeCall call{.q = filled({4, 3, 32}),
                .k = filled({4, 1, 32}),
                .positions = positions({0, 7, 4096, 1 << 20}),
                .rotary_dim = 24};
  call.q_out = arena.alloc(GetParam(), {4, 3, 32});
  call.k_out = *call.k;  // in place
  EXPECT_EQ(expect_rounded_once(call, arena), 4 * 4 * 32);
}

TEST_P(ReferenceDtypes, Alibi) {
  for (bool causal : {false, true}) {
    AlibiCall call{.n_heads = 6,
                   .causal = causal,
                   .q_positions = positions({3, 9}),
                   .k_positions = positions({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})};
    call.bias = arena.alloc(GetParam(), {6, 2, 11});
    EXPECT_EQ(expect_rounded_once(call, arena), 6 * 2 * 11);
  }
}

TEST_P(ReferenceDtypes, T5) {
  T5Call call{.q_positions = positions({0, 50, 500}),
              .k_positions = positions({0, 3, 40, 400, 4000})};
  call.table = filled({32, 4});
  call.bias = arena.alloc(GetParam(), {4, 3, 5});
  EXPECT_EQ(expect_rounded_once(call, arena), 4 * 3 * 5);
}

TEST_P(ReferenceDtypes, Attention) {
  AttentionCall call{.q = filled({3, 4, 16}, -1, 1),
                     .k = filled({7, 2, 16}, -1, 1),
                     .v = filled({7, 2, 8}),
                     .mask = Mask::causal};
  call.out = arena.alloc(GetParam(), {3, 4, 8});
  EXPECT_EQ(expect_rounded_once(call, arena), 3 * 4 * 8);
}

INSTANTIATE_TEST_SUITE_P(HalfPrecision, ReferenceDtypes, ::testing::Values(DType::bf16, DType::f16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Mismatched dtypes are errors naming the argument, in every family that ties dtypes together.
TEST(ReferenceDtypes, MismatchesAreRejected) {
  Arena arena;
  const Tensor pos = arena.alloc(DType::i64, {2});
  pos.as<int64_t>()[0] = pos.as<int64_t>()[1] = 0;
  auto argument_of = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.argument();
    }
    return std::string("accepted");
  };
  AbsoluteCall absolute{.x = arena.alloc(DType::bf16, {2, 4}),
                        .table = arena.alloc(DType::f32, {1, 4}),
                        .positions = pos,
                        .out = arena.alloc(DType::f16, {2, 4})};
  EXPECT_EQ(argument_of([&] { absolute.validate(); }), "out.dtype");
  SinusoidalCall sinusoidal{.out = arena.alloc(DType::f16, {2, 4}),
                            .x = arena.alloc(DType::f32, {2, 4})};
  EXPECT_EQ(argument_of([&] { sinusoidal.validate(); }), "x.dtype");
  T5Call t5{.q_positions = pos,
            .k_positions = pos,
            .table = arena.alloc(DType::f32, {32, 2}),
            .bias = arena.alloc(DType::bf16, {2, 2, 2})};
  EXPECT_EQ(argument_of([&] { t5.validate(); }), "bias.dtype");
  AttentionCall attention{.q = arena.alloc(DType::bf16, {2, 1, 4}),
                          .k = arena.alloc(DType::bf16, {2, 1, 4}),
                          .v = arena.alloc(DType::f16, {2, 1, 4}),
                          .out = arena.alloc(DType::bf16, {2, 1, 4})};
  EXPECT_EQ(argument_of([&] { attention.validate(); }), "v.dtype");
  attention.v = arena.alloc(DType::bf16, {2, 1, 4});
  attention.bias = arena.alloc(DType::f16, {1, 2, 2});
  EXPECT_EQ(argument_of([&] { attention.validate(); }), "bias.dtype");
  attention.bias = arena.alloc(DType::f32, {1, 2, 2});
  EXPECT_EQ(argument_of([&] { attention.validate(); }), "accepted");
}

}  // namespace
}  // namespace posenc
