// absolute: outputs, tolerance model and problems.
#include <fmt/format.h>

#include "properties/harness.h"

namespace posenc::harness {

std::vector<Tensor> outputs(const AbsoluteCall& call) { return {call.out}; }

Comparison compare(const AbsoluteCall& expected, const AbsoluteCall& got, double bound) {
  return harness::compare("out", expected.out, got.out, bound, [&](const int64_t* ix) {
    return ulp_f32(load(expected.out, expected.out.offset(ix[0], ix[1])));
  });
}

namespace {

Problem<AbsoluteCall> absolute_problem(int64_t tokens, int64_t rows, int64_t dim, Layout layout,
                                       bool in_place, uint64_t seed) {
  return {fmt::format("tokens={} rows={} dim={} {}{}", tokens, rows, dim, layout_name(layout),
                      in_place ? " in_place" : ""),
          [=](Arena& arena) {
            Values values(seed);
            AbsoluteCall call;
            call.x = arena.alloc(DType::f32, {tokens, dim}, layout);
            call.table = arena.alloc(DType::f32, {rows, dim}, layout);
            call.positions = arena.alloc(DType::i64, {tokens}, layout);
            call.out = in_place ? call.x : arena.alloc(DType::f32, {tokens, dim}, layout);
            values.fill(call.x);
            values.fill(call.table);
            values.fill_index(call.positions, 0, rows - 1);
            return call;
          }};
}

}  // namespace

template <>
std::vector<Problem<AbsoluteCall>> smoke_problems<AbsoluteCall>() {
  return {
      absolute_problem(8, 16, 32, Layout::contiguous, false, 1),
      absolute_problem(5, 3, 7, Layout::padded, false, 2),
      absolute_problem(9, 1024, 48, Layout::contiguous, true, 3),
      absolute_problem(4, 6, 10, Layout::permuted, false, 4),
  };
}

}  // namespace posenc::harness
