// Rotates each pair (a, b) of the first rotary_dim dims to (a·c − b·s, a·s + b·c) in fp64, with
// c = f·cos θ and s = ±f·sin θ computed here from θ = p·ω_i, or read from the given cache.
#include <cmath>
#include <cstring>

#include "reference/reference.h"

namespace posenc::reference {

namespace {

// Dims of pair i: (i, i + d/2) half-split, (2i, 2i + 1) interleaved.
struct PairDims {
  int64_t first, second;
};
PairDims pair_dims(RopeLayout layout, int64_t rotary_dim, int64_t i) {
  if (layout == RopeLayout::half_split) return {i, i + rotary_dim / 2};
  return {2 * i, 2 * i + 1};
}

}  // namespace

void rotate_token(RopeLayout layout, int64_t rotary_dim, const Tensor& x, const Tensor& out,
                  int64_t t, const std::vector<double>& cos, const std::vector<double>& sin) {
  const int64_t heads = x.shape[1], head_dim = x.shape[2];
  const bool in_place = same_view(x, out);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < rotary_dim / 2; ++i) {
      const auto [j0, j1] = pair_dims(layout, rotary_dim, i);
      const double a = load(x, x.offset(t, h, j0)), b = load(x, x.offset(t, h, j1));
      store(out, out.offset(t, h, j0), a * cos[i] - b * sin[i]);
      store(out, out.offset(t, h, j1), a * sin[i] + b * cos[i]);
    }
    if (in_place) continue;
    const size_t size = dtype_size(x.dtype);
    for (int64_t j = rotary_dim; j < head_dim; ++j)
      std::memcpy(out.as<char>() + out.offset(t, h, j) * size,
                  x.as<const char>() + x.offset(t, h, j) * size, size);
  }
}

void rope(const RopeCall& call) {
  call.validate();
  if (call.q.shape[0] == 0) return;  // no token to rotate, and rotary_dim may be any size
  const int64_t half = call.rotary_dim / 2;
  RopeFrequencies freq;
  if (!call.cached()) freq = frequencies(call.rotary_dim, call.base, call.scaling);
  const double sign = call.inverse ? -1.0 : 1.0;
  std::vector<double> cos(half), sin(half);
  for (int64_t t = 0; t < call.q.shape[0]; ++t) {
    const int64_t p = load_index(call.positions, call.positions.offset(t));
    for (int64_t i = 0; i < half; ++i) {
      if (call.cached()) {
        cos[i] = load(*call.cos, call.cos->offset(p, i));
        sin[i] = sign * load(*call.sin, call.sin->offset(p, i));
      } else {
        const double angle = static_cast<double>(p) * freq.inv_freq[i];
        cos[i] = freq.attention_factor * std::cos(angle);
        sin[i] = sign * freq.attention_factor * std::sin(angle);
      }
    }
    rotate_token(call.layout, call.rotary_dim, call.q, call.q_out, t, cos, sin);
    if (call.k) rotate_token(call.layout, call.rotary_dim, *call.k, *call.k_out, t, cos, sin);
  }
}

}  // namespace posenc::reference
