// vision_rope's broken kernels for the self-test (selftest.h), beside its properties
// (properties/vision_rope.cc). Each computes in fp64 and rounds once, like the reference, so that
// the bug is the only thing wrong with it.
#include <cmath>
#include <vector>

#include "properties/harness.h"
#include "properties/selftest.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace {

enum class VisionRopeBug {
  ignores_axis_order,  // column_first rotated as row_first
  pixtral_parity,      // pixtral's rows on odd frequencies, columns on even
  drops_offset,        // position_offset ignored
  first_axis_only,     // one axis (the first) rotates both halves
  wrong_half,          // the first axis rotates the second half's pairs, and the other way round
  sin_of_next_pair,    // sin read from the next pair's angle: not a rotation
  ignores_inverse,     // always rotates forward
  f32_angles,          // θ = float(p)·float(ω)
};

void vision_rope_with(VisionRopeBug bug, const VisionRopeCall& call) {
  using B = VisionRopeBug;
  call.validate();
  const int64_t half = call.rotary_dim / 2, quarter = half / 2, tokens = call.q.shape[0];
  const auto r = reference::frequencies(call.rotary_dim, call.base, RopeScaling{});
  const double sign = call.inverse && bug != B::ignores_inverse ? -1.0 : 1.0;
  const VisionAxisOrder order =
      bug == B::ignores_axis_order ? VisionAxisOrder::row_first : call.axis_order;
  auto axis_of = [&](int64_t i) {
    if (bug == B::first_axis_only) i = 0;
    if (bug == B::wrong_half) i = (i + quarter) % half;
    return vision_rope_axis(order, call.rotary_dim, i);
  };
  auto frequency_of = [&](int64_t i) {
    const int64_t k = vision_rope_frequency(call.convention, call.rotary_dim, i);
    if (bug != B::pixtral_parity || call.convention != VisionRopeConvention::pixtral) return k;
    return k % 2 == 0 ? k + 1 : k - 1;
  };
  std::vector<double> angle(half), cos(half), sin(half);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      int64_t p = load_index(call.positions, call.positions.offset(t, axis_of(i)));
      if (bug != B::drops_offset) p += call.position_offset;
      const double omega = r.inv_freq[frequency_of(i)];
      angle[i] = bug == B::f32_angles ? static_cast<float>(p) * static_cast<float>(omega)
                                      : static_cast<double>(p) * omega;
    }
    for (int64_t i = 0; i < half; ++i) {
      cos[i] = std::cos(angle[i]);
      sin[i] = sign * std::sin(bug == B::sin_of_next_pair ? angle[(i + 1) % half] : angle[i]);
    }
    reference::rotate_token(call.layout, call.rotary_dim, call.q, call.q_out, t, cos, sin);
    if (call.k)
      reference::rotate_token(call.layout, call.rotary_dim, *call.k, *call.k_out, t, cos, sin);
  }
}

}  // namespace

template <>
std::vector<Broken<VisionRopeCall>> broken_implementations<VisionRopeCall>() {
  using B = VisionRopeBug;
  auto make = [](const char* name, B bug) {
    return broken_kernel<VisionRopeCall>(name, bug, vision_rope_with, 1);
  };
  std::vector<Broken<VisionRopeCall>> list = {
      {make("ignores_axis_order", B::ignores_axis_order),
       "a column_first (Llama 4) call rotated row first", "vision_rope.axis_swap"},
      {make("pixtral_parity", B::pixtral_parity),
       "pixtral's rows on the odd frequencies and columns on the even ones",
       "vision_rope.zero_axis"},
      {make("drops_offset", B::drops_offset), "ignores position_offset (Llama 4's + 1)",
       "vision_rope.offset"},
      {make("first_axis_only", B::first_axis_only), "the first axis rotates both halves",
       "vision_rope.zero_axis"},
      {make("wrong_half", B::wrong_half), "each axis rotates the other axis's half of the pairs",
       "vision_rope.zero_axis"},
      {make("sin_of_next_pair", B::sin_of_next_pair),
       "sin read from the next pair's angle: not a rotation", "vision_rope.pair_norm"},
      {make("ignores_inverse", B::ignores_inverse), "rotates forward when asked for the inverse",
       "vision_rope.inverse"},
      {make("f32_angles", B::f32_angles), "angles p·ω in f32: wrong at long positions",
       "vision_rope.relative"},
  };
  add_generic(list, "vision_rope");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<VisionRopeCall>() {
  // As rope and mrope: each token's rotation stands alone.
  return {{"vision_rope.threads", "rope_cache/broken:chunked_f32_angles"}};
}

}  // namespace posenc::harness
