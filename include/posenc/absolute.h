// absolute: a learned position table, out[t, c] = x[t, c] + table[positions[t], c].
//
// Shapes: x, out [tokens, dim]; table [rows, dim]; positions i64 [tokens], each in [0, rows):
// a learned table has no row past its length. Batches fold into tokens. out may be x (in place).
//
// Dtypes: x and out f32, bf16 or f16 alike; the table any of the three.
//
// Tolerance unit: ulp_f32 of the exact sum (ulp of the output dtype, kernel.h); one rounding of
// x + table is exact, so the reference's bound is 0 and any kernel can meet it.
#pragma once

#include "posenc/kernel.h"
#include "posenc/tensor.h"

namespace posenc {

struct AbsoluteCall {
  static constexpr Family kFamily = Family::absolute;

  Tensor x, table, positions, out;
  int threads = 0;

  void validate() const;
  uint64_t required_variants() const;
  // Its tensors (kernel.h): inputs, then outputs.
  static constexpr std::array<ViewField<AbsoluteCall>, 4> view_table() {
    using View = ViewField<AbsoluteCall>;
    return {{{"x", &AbsoluteCall::x},
             {"table", &AbsoluteCall::table},
             {"positions", &AbsoluteCall::positions},
             {"out", &AbsoluteCall::out, View::output, "x"}}};
  }
  // Its variant bits by name (kernel.h): none of its own.
  static constexpr std::array<VariantName, 0> variant_table() { return {}; }
  // Its parameters (every field that is not a view) by name: f(name, call.member), in order.
  template <class C, class F>
  static void for_each_parameter(C& call, F&& f) {
    f("threads", call.threads);
  }
};

}  // namespace posenc
