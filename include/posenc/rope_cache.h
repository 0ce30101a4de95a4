// rope_cache: the cos/sin table engines precompute (vLLM's cos_sin_cache, FlashInfer's cache API):
//   cos[p, i] = a·cos(p·ω_i), sin[p, i] = a·sin(p·ω_i), p < rows, i < rotary_dim/2,
// with ω and the attention factor a from rope_frequencies. vLLM's [rows, rotary_dim] layout is
// cos = view(cache, [rows, d/2], strides [d, 1]) and sin the same view at cache + d/2.
//
// The table is f32, or bf16 as some engines keep it (sin the same dtype as cos).
//
// Tolerance unit: |got − ref| ≤ bound · ulp_f32(a); for a bf16 table, 1 ulp_bf16(a) (kernel.h).
#pragma once

#include "posenc/kernel.h"
#include "posenc/rope_frequencies.h"
#include "posenc/tensor.h"

namespace posenc {

struct RopeCacheCall {
  static constexpr Family kFamily = Family::rope_cache;

  int64_t rotary_dim = 0;
  double base = 10000.0;
  RopeScaling scaling;
  Tensor cos, sin;  // out, f32 or bf16 [rows, rotary_dim/2]; rows − 1 ≤ kMaxPosition
  int threads = 0;

  void validate() const;
  uint64_t required_variants() const;
  // Its tensors (kernel.h): inputs, then outputs.
  static constexpr std::array<ViewField<RopeCacheCall>, 2> view_table() {
    using View = ViewField<RopeCacheCall>;
    return {
        {{"cos", &RopeCacheCall::cos, View::output}, {"sin", &RopeCacheCall::sin, View::output}}};
  }
  // Its variant bits by name (kernel.h).
  static constexpr std::array<VariantName, 7> variant_table() { return variant::scaling_names; }
  // Its parameters (every field that is not a view) by name: f(name, call.member), in order.
  template <class C, class F>
  static void for_each_parameter(C& call, F&& f) {
    f("rotary_dim", call.rotary_dim);
    f("base", call.base);
    f("scaling", call.scaling);
    f("threads", call.threads);
  }
};

}  // namespace posenc
