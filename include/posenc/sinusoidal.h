// sinusoidal: the fixed encoding of "Attention Is All You Need",
//   PE[p, 2i] = sin(p·ω_i), PE[p, 2i+1] = cos(p·ω_i), ω_i = base^(−2i/d), d even.
// out[t, :] = x[t, :] + PE[pos(t), :]. Without x it writes the table itself (x = 0); without
// positions pos(t) = t. So {no x, no positions} is the table PE[0:tokens], and {x, positions} is
// the add kernel with per-token positions.
//
// Shapes: out [tokens, d]; x [tokens, d]; positions i64 [tokens] in [0, kMaxPosition]. base ≥ 1,
// so ω_i ≤ 1 and angles stay within the oracle's accuracy (see rope_frequencies.h).
//
// Dtypes: out f32, bf16 or f16; x the same as out.
//
// Tolerance unit: |got − ref| ≤ bound · ulp_f32(1 + |x[t, c]|) (ulp of out's dtype, kernel.h).
#pragma once

#include <optional>

#include "posenc/kernel.h"
#include "posenc/tensor.h"

namespace posenc {

namespace variant {
inline constexpr uint64_t sinusoidal_add = kFamilyVariant0 << 0;        // x given
inline constexpr uint64_t sinusoidal_positions = kFamilyVariant0 << 1;  // positions given
}  // namespace variant

struct SinusoidalCall {
  static constexpr Family kFamily = Family::sinusoidal;

  Tensor out;
  std::optional<Tensor> x;
  std::optional<Tensor> positions;
  double base = 10000.0;
  int threads = 0;

  void validate() const;
  uint64_t required_variants() const;
  // Its tensors (kernel.h): inputs, then outputs.
  static constexpr std::array<ViewField<SinusoidalCall>, 3> view_table() {
    using View = ViewField<SinusoidalCall>;
    return {{{"x", &SinusoidalCall::x},
             {"positions", &SinusoidalCall::positions},
             {"out", &SinusoidalCall::out, View::output, "x"}}};
  }
  // Its variant bits by name (kernel.h).
  static constexpr std::array<VariantName, 2> variant_table() {
    return {{{variant::sinusoidal_add, "sinusoidal_add"},
             {variant::sinusoidal_positions, "sinusoidal_positions"}}};
  }
  // Its parameters (every field that is not a view) by name: f(name, call.member), in order.
  template <class C, class F>
  static void for_each_parameter(C& call, F&& f) {
    f("base", call.base);
    f("threads", call.threads);
  }
  int64_t position(int64_t t) const;  // after validate()
};

}  // namespace posenc
