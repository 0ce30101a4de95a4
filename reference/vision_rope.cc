// Rotates pair i of each head by θ = (p_a(i) + offset)·ω_k(i), its axis's position and its
// frequency (vision_rope.h), in fp64: (a, b) → (a·c − b·s, a·s + b·c) with c = cos θ,
// s = ±sin θ, rounded once.
#include <cmath>

#include "reference/reference.h"

namespace posenc::reference {

void vision_rope(const VisionRopeCall& call) {
  call.validate();
  if (call.q.shape[0] == 0) return;
  const int64_t half = call.rotary_dim / 2;
  // rope's unscaled ω_k = base^(−2k/d), k < d/2.
  const RopeFrequencies freq = frequencies(call.rotary_dim, call.base, RopeScaling{});
  const double sign = call.inverse ? -1.0 : 1.0;
  std::vector<double> cos(half), sin(half);
  for (int64_t t = 0; t < call.q.shape[0]; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const int axis = vision_rope_axis(call.axis_order, call.rotary_dim, i);
      const int64_t p =
          load_index(call.positions, call.positions.offset(t, axis)) + call.position_offset;
      const double angle =
          static_cast<double>(p) *
          freq.inv_freq[vision_rope_frequency(call.convention, call.rotary_dim, i)];
      cos[i] = std::cos(angle);
      sin[i] = sign * std::sin(angle);
    }
    rotate_token(call.layout, call.rotary_dim, call.q, call.q_out, t, cos, sin);
    if (call.k) rotate_token(call.layout, call.rotary_dim, *call.k, *call.k_out, t, cos, sin);
  }
}

}  // namespace posenc::reference
