// mrope's broken kernels for the self-test (selftest.h), beside its properties
// (properties/mrope.cc). Each computes in fp64 and rounds once, like the reference, so that the bug
// is the only thing wrong with it.
#include <cmath>
#include <vector>

#include "properties/harness.h"
#include "properties/selftest.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace {

enum class MropeBug {
  sectioned_as_interleaved,  // a sectioned call's pairs take Qwen3-VL's cycled axes
  bands_t_w_h,               // sectioned bands in the order t, w, h (height and width swapped)
  temporal_only,             // every pair reads the temporal position
  off_by_one,                // every axis's position p + 1
  factor_twice,              // the attention factor applied twice
  ignores_inverse,           // always rotates forward
  f32_angles,                // θ = float(p)·float(ω)
};

void mrope_with(MropeBug bug, const MropeCall& call) {
  using B = MropeBug;
  call.validate();
  const int64_t half = call.rotary_dim / 2, tokens = call.q.shape[0];
  const auto r = reference::frequencies(call.rotary_dim, call.base, call.scaling);
  const double f =
      bug == B::factor_twice ? r.attention_factor * r.attention_factor : r.attention_factor;
  const double sign = call.inverse && bug != B::ignores_inverse ? -1.0 : 1.0;
  auto axis_of = [&](int64_t i) {
    const auto& s = call.mrope_section;
    if (bug == B::temporal_only) return 0;
    if (bug == B::sectioned_as_interleaved) return mrope_axis(MropeConvention::interleaved, s, i);
    if (bug == B::bands_t_w_h && call.convention == MropeConvention::sectioned)
      return i < s[0] ? 0 : i < s[0] + s[2] ? 2 : 1;
    return mrope_axis(call.convention, s, i);
  };
  std::vector<double> cos(half), sin(half);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      int64_t p = load_index(call.positions, call.positions.offset(t, axis_of(i)));
      if (bug == B::off_by_one) ++p;
      double angle = static_cast<double>(p) * r.inv_freq[i];
      if (bug == B::f32_angles) angle = static_cast<float>(p) * static_cast<float>(r.inv_freq[i]);
      cos[i] = f * std::cos(angle);
      sin[i] = sign * f * std::sin(angle);
    }
    reference::rotate_token(call.layout, call.rotary_dim, call.q, call.q_out, t, cos, sin);
    if (call.k)
      reference::rotate_token(call.layout, call.rotary_dim, *call.k, *call.k_out, t, cos, sin);
  }
}

}  // namespace

template <>
std::vector<Broken<MropeCall>> broken_implementations<MropeCall>() {
  using B = MropeBug;
  auto make = [](const char* name, B bug) {
    return broken_kernel<MropeCall>(name, bug, mrope_with, 1);
  };
  std::vector<Broken<MropeCall>> list = {
      {make("sectioned_as_interleaved", B::sectioned_as_interleaved),
       "a sectioned (Qwen2-VL) call rotated with Qwen3-VL's interleaved axes",
       "mrope.section_is_rope"},
      {make("bands_t_w_h", B::bands_t_w_h),
       "sectioned bands in the wrong order: t, w, h (height and width swapped)",
       "mrope.section_is_rope"},
      {make("temporal_only", B::temporal_only), "the temporal position used for all three axes",
       "mrope.section_is_rope"},
      {make("off_by_one", B::off_by_one), "rotates by positions p + 1", "mrope.equal_axes"},
      {make("factor_twice", B::factor_twice), "applies the attention factor twice",
       "mrope.pair_norm"},
      {make("ignores_inverse", B::ignores_inverse), "rotates forward when asked for the inverse",
       "mrope.inverse"},
      {make("f32_angles", B::f32_angles), "angles p·ω in f32: wrong at long positions",
       "mrope.relative"},
  };
  add_generic(list, "mrope");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<MropeCall>() {
  // As rope: each token's rotation stands alone.
  return {{"mrope.threads", "rope_cache/broken:chunked_f32_angles"}};
}

}  // namespace posenc::harness
