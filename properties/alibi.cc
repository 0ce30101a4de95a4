// alibi: outputs, tolerance model and problems.
#include <fmt/format.h>

#include "properties/harness.h"

namespace posenc::harness {

std::vector<Tensor> outputs(const AlibiCall& call) {
  std::vector<Tensor> out = {call.bias};
  if (call.slopes) out.push_back(*call.slopes);
  return out;
}

Comparison compare(const AlibiCall& expected, const AlibiCall& got, double bound) {
  // Unit: ulp_f32 of the reference element; −∞ must match exactly (compare() does), see alibi.h.
  const Tensor& bias = expected.bias;
  Comparison c = harness::compare("bias", bias, got.bias, bound, [&](const int64_t* ix) {
    return ulp_f32(load(bias, bias.offset(ix[0], ix[1], ix[2])));
  });
  if (expected.slopes && got.slopes) {
    const Tensor& slopes = *expected.slopes;
    c.merge(harness::compare("slopes", slopes, *got.slopes, bound, [&](const int64_t* ix) {
      return ulp_f32(load(slopes, slopes.offset(ix[0])));
    }));
  }
  return c;
}

namespace {

struct AlibiShape {
  int64_t heads, tq, tk;
  bool causal, slopes;
  double max_bias;
  Positions positions;
  DType index;  // dtype of the position views
  Layout layout;
};

Problem<AlibiCall> alibi_problem(AlibiShape s, uint64_t seed) {
  std::string label =
      fmt::format("heads={} tq={} tk={} {} max_bias={} slopes={} positions={} {} {}", s.heads, s.tq,
                  s.tk, s.causal ? "causal" : "symmetric", s.max_bias, s.slopes,
                  positions_name(s.positions), dtype_name(s.index), layout_name(s.layout));
  return {label, [s, seed](Arena& arena) {
            Values values(seed);
            AlibiCall call{.n_heads = s.heads, .max_bias = s.max_bias, .causal = s.causal};
            call.q_positions = arena.alloc(s.index, {s.tq}, s.layout);
            call.k_positions = arena.alloc(s.index, {s.tk}, s.layout);
            fill_positions(call.q_positions, call.k_positions, s.positions, values);
            call.bias = arena.alloc(DType::f32, {s.heads, s.tq, s.tk}, s.layout);
            if (s.slopes) call.slopes = arena.alloc(DType::f32, {s.heads}, s.layout);
            return call;
          }};
}

}  // namespace

template <>
std::vector<Problem<AlibiCall>> smoke_problems<AlibiCall>() {
  using L = Layout;
  using P = Positions;
  const DType i64 = DType::i64, i32 = DType::i32;
  return {
      alibi_problem({1, 5, 5, false, false, 8, P::cache, i64, L::contiguous}, 1),
      alibi_problem({3, 4, 9, true, true, 8, P::cache, i64, L::padded}, 2),
      alibi_problem({8, 2, 33, true, true, 8, P::shifted, i32, L::contiguous}, 3),
      alibi_problem({12, 6, 6, true, true, 8, P::duplicates, i64, L::permuted}, 4),
      alibi_problem({80, 3, 7, false, true, 8, P::wide, i64, L::padded}, 5),
      alibi_problem({6, 4, 4, false, true, 16, P::duplicates, i32, L::permuted}, 6),
      alibi_problem({64, 1, 17, true, false, 0.5, P::cache, i64, L::contiguous}, 7),
  };
}

}  // namespace posenc::harness
