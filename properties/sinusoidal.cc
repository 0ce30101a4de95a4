// sinusoidal: outputs, tolerance model and problems.
#include <fmt/format.h>

#include <cmath>

#include "properties/harness.h"

namespace posenc::harness {

std::vector<Tensor> outputs(const SinusoidalCall& call) { return {call.out}; }

Comparison compare(const SinusoidalCall& expected, const SinusoidalCall& got, double bound) {
  // Unit: ulp(1 + |x|), see sinusoidal.h.
  return harness::compare("out", expected.out, got.out, bound, [&](const int64_t* ix) {
    const double x =
        expected.x ? std::fabs(load(*expected.x, expected.x->offset(ix[0], ix[1]))) : 0;
    return ulp_f32(1 + x);
  });
}

namespace {

Problem<SinusoidalCall> sinusoidal_problem(int64_t tokens, int64_t d, bool add, int64_t max_pos,
                                           Layout layout, uint64_t seed) {
  return {fmt::format("tokens={} d={} {} {}", tokens, d,
                      add ? fmt::format("add positions<={}", max_pos) : std::string("table"),
                      layout_name(layout)),
          [=](Arena& arena) {
            Values values(seed);
            SinusoidalCall call;
            call.out = arena.alloc(DType::f32, {tokens, d}, layout);
            if (add) {
              call.x = arena.alloc(DType::f32, {tokens, d}, layout);
              values.fill(*call.x);
              call.positions = arena.alloc(DType::i64, {tokens}, layout);
              values.fill_index(*call.positions, 0, max_pos);
            }
            return call;
          }};
}

}  // namespace

template <>
std::vector<Problem<SinusoidalCall>> smoke_problems<SinusoidalCall>() {
  return {
      sinusoidal_problem(64, 32, false, 0, Layout::contiguous, 1),
      sinusoidal_problem(7, 6, true, 100, Layout::padded, 2),
      sinusoidal_problem(16, 128, true, kMaxPosition, Layout::contiguous, 3),
      sinusoidal_problem(5, 10, true, 1 << 20, Layout::permuted, 4),
  };
}

}  // namespace posenc::harness
