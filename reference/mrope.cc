// Rotates pair i of each head by θ = p_a(i)·ω_i, the position of the pair's axis (mrope.h), in
// fp64: (a, b) → (a·c − b·s, a·s + b·c) with c = f·cos θ, s = ±f·sin θ, rounded once.
#include <cmath>

#include "reference/reference.h"

namespace posenc::reference {

void mrope(const MropeCall& call) {
  call.validate();
  if (call.q.shape[0] == 0) return;
  const int64_t half = call.rotary_dim / 2;
  const RopeFrequencies freq = frequencies(call.rotary_dim, call.base, call.scaling);
  const double sign = call.inverse ? -1.0 : 1.0;
  std::vector<double> cos(half), sin(half);
  for (int64_t t = 0; t < call.q.shape[0]; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const int axis = mrope_axis(call.convention, call.mrope_section, i);
      const int64_t p = load_index(call.positions, call.positions.offset(t, axis));
      const double angle = static_cast<double>(p) * freq.inv_freq[i];
      cos[i] = freq.attention_factor * std::cos(angle);
      sin[i] = sign * freq.attention_factor * std::sin(angle);
    }
    rotate_token(call.layout, call.rotary_dim, call.q, call.q_out, t, cos, sin);
    if (call.k) rotate_token(call.layout, call.rotary_dim, *call.k, *call.k_out, t, cos, sin);
  }
}

}  // namespace posenc::reference
