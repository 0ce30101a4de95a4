// absolute's broken kernels for the self-test (selftest.h), beside its properties
// (properties/absolute.cc). Each computes in fp64 and rounds once, like the reference, so that the
// bug is the only thing wrong with it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "posenc/error.h"
#include "properties/harness.h"
#include "properties/selftest.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace {

enum class AbsoluteBug {
  off_by_one,         // table[p + 1] (clamped to the last row)
  ignores_positions,  // row t of the packed batch instead of positions[t]
  skips_tail,         // columns in blocks of 8; the last partial block is never written
  clamps_positions,   // positions past the table are clamped instead of rejected
  table_in_dtype,     // the table row converted to x's dtype, then added (pe.to(x.dtype))
};

void absolute_with(AbsoluteBug bug, const AbsoluteCall& call) {
  try {
    call.validate();
  } catch (const Error& e) {
    if (bug != AbsoluteBug::clamps_positions || e.argument().rfind("positions[", 0) != 0) throw;
  }
  const int64_t tokens = call.x.shape[0], dim = call.x.shape[1], rows = call.table.shape[0];
  const int64_t columns = bug == AbsoluteBug::skips_tail ? dim / 8 * 8 : dim;
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t row = load_index(call.positions, call.positions.offset(t));
    if (bug == AbsoluteBug::off_by_one) row = std::min(row + 1, rows - 1);
    if (bug == AbsoluteBug::ignores_positions) row = t % rows;
    row = std::clamp<int64_t>(row, 0, rows - 1);
    for (int64_t c = 0; c < columns; ++c) {
      double table = load(call.table, call.table.offset(row, c));
      // Exact when the table is in x's dtype or narrower; else it rounds twice.
      if (bug == AbsoluteBug::table_in_dtype) table = rounded_to(call.x.dtype, table);
      store(call.out, call.out.offset(t, c), load(call.x, call.x.offset(t, c)) + table);
    }
  }
}

}  // namespace

template <>
std::vector<Broken<AbsoluteCall>> broken_implementations<AbsoluteCall>() {
  using B = AbsoluteBug;
  auto make = [](const char* name, B bug) {
    return broken_kernel<AbsoluteCall>(name, bug, absolute_with, 0);
  };
  std::vector<Broken<AbsoluteCall>> list = {
      {make("off_by_one", B::off_by_one), "reads table row p + 1",
       "absolute.same_token_two_positions"},
      {make("ignores_positions", B::ignores_positions),
       "uses the token's index in the packed batch as its position", "absolute.batch_broadcast"},
      {make("skips_tail", B::skips_tail), "SIMD-style loop that never writes the last dim % 8",
       "absolute.differential"},
      {make("clamps_positions", B::clamps_positions),
       "clamps a position past the table instead of rejecting it", "absolute.bad_input"},
      {make("table_in_dtype", B::table_in_dtype),
       "rounds the table row to x's dtype before the add (rounds twice): wrong only for bf16 or "
       "f16 x under a wider table",
       "absolute.differential"},
  };
  add_generic(list, "absolute");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<AbsoluteCall>() {
  // An elementwise add has no reduction whose order a thread count could change.
  return {{"absolute.threads",
           "sinusoidal/broken:chunked_f32_angles, attention/broken:split_keys_by_thread"}};
}

}  // namespace posenc::harness
