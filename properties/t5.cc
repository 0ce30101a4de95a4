// t5: outputs, tolerance model and problems.
#include <fmt/format.h>

#include "properties/harness.h"

namespace posenc::harness {

std::vector<Tensor> outputs(const T5Call& call) { return {call.bias}; }

Comparison compare(const T5Call& expected, const T5Call& got, double /*bound*/) {
  // A lookup is exact: bit-for-bit whatever bound an implementation states (see t5.h). The unit
  // only sizes the error in the report.
  const Tensor& bias = expected.bias;
  return harness::compare("bias", bias, got.bias, 0, [&](const int64_t* ix) {
    return ulp_f32(load(bias, bias.offset(ix[0], ix[1], ix[2])));
  });
}

namespace {

struct T5Shape {
  bool bidirectional;
  int64_t n_buckets, max_distance, heads, tq, tk;
  Positions positions;
  Layout layout;
};

Problem<T5Call> t5_problem(T5Shape s, uint64_t seed) {
  std::string label = fmt::format(
      "{} n_buckets={} max_distance={} heads={} tq={} tk={} "
      "positions={} {}",
      s.bidirectional ? "bidirectional" : "causal", s.n_buckets, s.max_distance, s.heads, s.tq,
      s.tk, positions_name(s.positions), layout_name(s.layout));
  return {label, [s, seed](Arena& arena) {
            Values values(seed);
            T5Call call{.bidirectional = s.bidirectional,
                        .n_buckets = s.n_buckets,
                        .max_distance = s.max_distance};
            call.q_positions = arena.alloc(DType::i64, {s.tq}, s.layout);
            call.k_positions = arena.alloc(DType::i64, {s.tk}, s.layout);
            fill_positions(call.q_positions, call.k_positions, s.positions, values);
            call.table = arena.alloc(DType::f32, {s.n_buckets, s.heads}, s.layout);
            values.fill(call.table);
            call.bias = arena.alloc(DType::f32, {s.heads, s.tq, s.tk}, s.layout);
            return call;
          }};
}

}  // namespace

template <>
std::vector<Problem<T5Call>> smoke_problems<T5Call>() {
  using L = Layout;
  using P = Positions;
  return {
      t5_problem({true, 32, 128, 8, 12, 12, P::cache, L::contiguous}, 1),
      t5_problem({false, 32, 128, 3, 4, 200, P::cache, L::padded}, 2),
      t5_problem({true, 64, 256, 12, 5, 9, P::wide, L::permuted}, 3),
      t5_problem({false, 10, 20, 1, 7, 7, P::duplicates, L::permuted}, 4),
      t5_problem({true, 5, 2, 4, 5, 6, P::shifted, L::padded}, 5),
      t5_problem({false, 32, 939, 2, 3, 730, P::cache, L::contiguous}, 6),
  };
}

}  // namespace posenc::harness
