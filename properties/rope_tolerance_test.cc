// The rope tolerance model catches what it should: an error is measured in ulp(f·‖(a, b)‖) of the
// element's input pair (in the output's dtype: f32, bf16 or f16), also when an in-place call
// overwrote it, and the tail is bit-exact.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "properties/harness.h"
#include "reference/reference.h"

namespace posenc::harness {
namespace {

// Pair of dim j: its index and its two dims.
struct Pair {
  int64_t index, first, second;
};
Pair pair_of(const RopeCall& call, int64_t j) {
  const int64_t half = call.rotary_dim / 2;
  if (call.layout == RopeLayout::half_split) return {j % half, j % half, j % half + half};
  return {j / 2, j / 2 * 2, j / 2 * 2 + 1};
}

// f for token t's pair: the attention factor, or the norm of the cached (cos, sin).
double factor_at(const RopeCall& call, int64_t t, int64_t pair) {
  if (!call.cached())
    return reference::frequencies(call.rotary_dim, call.base, call.scaling).attention_factor;
  const int64_t p = load_index(call.positions, call.positions.offset(t));
  return std::hypot(load(*call.cos, call.cos->offset(p, pair)),
                    load(*call.sin, call.sin->offset(p, pair)));
}

// ulp(f·‖pair‖) in x's dtype at x[t, h, j], x being q or k before any in-place run (or any
// output).
double unit_at(const RopeCall& call, const Tensor& x, int64_t t, int64_t h, int64_t j) {
  const Pair p = pair_of(call, j);
  return ulp_of(
      x.dtype, factor_at(call, t, p.index) *
                   std::hypot(load(x, x.offset(t, h, p.first)), load(x, x.offset(t, h, p.second))));
}

// Moves out[t, h, j] by about 3 units; returns the exact move in units.
double nudge(const Tensor& out, int64_t t, int64_t h, int64_t j, double unit) {
  const int64_t at = out.offset(t, h, j);
  const double exact = load(out, at);
  store(out, at, exact + 3 * unit);
  return (load(out, at) - exact) / unit;
}

// Every sampled element, of q_out and k_out, in place or not, is measured in its own unit: one
// element moved by n units makes the comparison's worst error exactly n.
TEST(RopeTolerance, EachElementIsMeasuredInUlpsOfItsInputPair) {
  int in_place_scaled = 0;
  for (const auto& problem : smoke_problems<RopeCall>()) {
    Arena input_arena, expected_arena, got_arena;
    const RopeCall input = problem.build(input_arena), expected = problem.build(expected_arena),
                   got = problem.build(got_arena);
    reference::rope(expected);
    reference::rope(got);
    if (same_view(got.q, got.q_out) && !input.cached() &&
        reference::frequencies(input.rotary_dim, input.base, input.scaling).attention_factor != 1)
      ++in_place_scaled;
    auto probe = [&](const Tensor& x, const Tensor& out) {
      for (int64_t t = 0; t < out.shape[0]; t += 2)
        for (int64_t h = 0; h < out.shape[1]; ++h)
          for (int64_t j = t % 3; j < input.rotary_dim; j += 5) {
            const double kept = load(out, out.offset(t, h, j));
            const double moved = nudge(out, t, h, j, unit_at(input, x, t, h, j));
            const Comparison c = compare(input, expected, got, 1e9);
            EXPECT_GE(moved, 2) << problem.label;
            EXPECT_EQ(c.worst, moved) << problem.label << " at " << c.where;
            store(out, out.offset(t, h, j), kept);
          }
    };
    probe(input.q, got.q_out);
    if (input.k) probe(*input.k, *got.k_out);
  }
  EXPECT_GE(in_place_scaled, 1);  // an in-place problem whose unit differs from the output's
}

// differential hands compare a pristine build. The nudged element is one whose unit, measured on
// the overwritten buffer of an in-place call, would differ (when there is one in q[0, 0]).
TEST(RopeTolerance, DifferentialMeasuresAgainstThePristineInput) {
  int telling = 0;
  for (const auto& problem : smoke_problems<RopeCall>()) {
    double moved = 0;
    int64_t target = 0;
    const Impl<RopeCall> nudged{.name = "rope/nudged",
                                .variants = kAllVariants,
                                .bound = 1e9,
                                .run = [&](const RopeCall& call) {
                                  std::vector<double> unit(call.rotary_dim);
                                  for (int64_t j = 0; j < call.rotary_dim; ++j)
                                    unit[j] = unit_at(call, call.q, 0, 0, j);
                                  reference::rope(call);
                                  target = 0;
                                  for (int64_t j = 0;
                                       j < call.rotary_dim && same_view(call.q, call.q_out); ++j)
                                    if (unit_at(call, call.q_out, 0, 0, j) != unit[j]) {
                                      target = j;
                                      ++telling;
                                      break;
                                    }
                                  moved = nudge(call.q_out, 0, 0, target, unit[target]);
                                }};
    const Outcome outcome = differential(nudged, problem);
    // A bf16 or f16 output is held to 1 unit whatever the stated bound (kernel.h).
    Arena probe;
    const double bound = dtype_bound(problem.build(probe).q_out.dtype, nudged.bound);
    EXPECT_EQ(outcome.ok, moved <= bound) << problem.label << ": " << outcome.failure;
    EXPECT_EQ(outcome.comparison.worst, moved) << problem.label;
    EXPECT_EQ(outcome.comparison.where, "q_out[0, 0, " + std::to_string(target) + "]")
        << problem.label;
  }
  EXPECT_GE(telling, 1);
}

TEST(RopeTolerance, TailIsBitExactWhateverTheBound) {
  int partial = 0;
  for (const auto& problem : smoke_problems<RopeCall>()) {
    Arena probe;
    const RopeCall shape = problem.build(probe);
    if (shape.rotary_dim == shape.q.shape[2]) continue;
    ++partial;
    const Impl<RopeCall> flipped{.name = "rope/flipped",
                                 .variants = kAllVariants,
                                 .bound = 1e9,
                                 .run = [](const RopeCall& call) {
                                   reference::rope(call);
                                   // The last bit of the first tail element (little-endian: its
                                   // lowest byte).
                                   unsigned char* tail =
                                       call.q_out.as<unsigned char>() +
                                       call.q_out.offset(0, 0, call.rotary_dim) *
                                           static_cast<int64_t>(dtype_size(call.q_out.dtype));
                                   *tail ^= 1;
                                 }};
    const Outcome outcome = differential(flipped, problem);
    EXPECT_FALSE(outcome.ok) << problem.label;
    EXPECT_NE(outcome.failure.find("q_out[:, :, rotary_dim:][0, 0, 0]"), std::string::npos)
        << outcome.failure;
  }
  EXPECT_GE(partial, 3);  // the smoke problems must reach the partial-rotary case
}

}  // namespace
}  // namespace posenc::harness
