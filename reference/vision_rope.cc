// Rotates pair i of each head by θ = (p_a(i) + offset)·ω_k(i), its axis's position and its
// frequency (vision_rope.h), in fp64: (a, b) → (a·c − b·s, a·s + b·c) with c = cos θ,
// s = ±sin θ, rounded once.
#include <cmath>
#include <cstring>

#include "reference/reference.h"

namespace posenc::reference {

namespace {

void rotate_token(const VisionRopeCall& call, const Tensor& x, const Tensor& out, int64_t t,
                  const std::vector<double>& cos, const std::vector<double>& sin) {
  const int64_t half = call.rotary_dim / 2;
  const bool in_place = same_view(x, out);
  for (int64_t h = 0; h < x.shape[1]; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      const int64_t j0 = call.layout == RopeLayout::half_split ? i : 2 * i;
      const int64_t j1 = call.layout == RopeLayout::half_split ? i + half : 2 * i + 1;
      const double a = load(x, x.offset(t, h, j0)), b = load(x, x.offset(t, h, j1));
      store(out, out.offset(t, h, j0), a * cos[i] - b * sin[i]);
      store(out, out.offset(t, h, j1), a * sin[i] + b * cos[i]);
    }
    if (in_place) continue;  // the tail is already there, bit for bit
    const size_t size = dtype_size(x.dtype);
    for (int64_t j = call.rotary_dim; j < x.shape[2]; ++j)
      std::memcpy(out.as<char>() + out.offset(t, h, j) * size,
                  x.as<const char>() + x.offset(t, h, j) * size, size);
  }
}

}  // namespace

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
    rotate_token(call, call.q, call.q_out, t, cos, sin);
    if (call.k) rotate_token(call, *call.k, *call.k_out, t, cos, sin);
  }
}

}  // namespace posenc::reference
