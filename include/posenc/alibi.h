// alibi: attention with linear biases (Press et al.), as an additive attention bias.
//
// Slopes for n heads, c = 2^⌊log₂ n⌋: slope_h = 2^(−max_bias·(h+1)/c) for h < c, else
// 2^(−(max_bias/2)·(2(h−c)+1)/c) (ggml's form; max_bias = 8 gives Press's 2^(−8(h+1)/c)).
// bias[h, i, j] = −slope_h·|q_pos[i] − k_pos[j]|. The causal form is −slope_h·(q_pos[i] − k_pos[j])
// where k_pos[j] ≤ q_pos[i] and −∞ elsewhere, so it also serves as the mask. Where the positions
// are equal the bias is +0 (slope·(−|Δ|) with −|Δ| an integer, as llama.cpp's mask), not −0.
//
// Shapes: q_positions i64 [tq], k_positions i64 [tk], bias out [n_heads, tq, tk], slopes out
// [n_heads] (optional).
//
// Dtypes: bias f32, bf16 or f16; slopes f32.
//
// Tolerance unit: |got − ref| ≤ bound · ulp_f32(ref) (ulp of bias's dtype, kernel.h); −∞ must
// match exactly.
#pragma once

#include <optional>

#include "posenc/kernel.h"
#include "posenc/tensor.h"

namespace posenc {

namespace variant {
inline constexpr uint64_t alibi_causal = kFamilyVariant0 << 0;
inline constexpr uint64_t alibi_slopes = kFamilyVariant0 << 1;  // slopes output requested
}  // namespace variant

struct AlibiCall {
  static constexpr Family kFamily = Family::alibi;

  int64_t n_heads = 0;
  double max_bias = 8.0;
  bool causal = false;
  Tensor q_positions, k_positions;
  Tensor bias;
  std::optional<Tensor> slopes;
  int threads = 0;

  void validate() const;
  uint64_t required_variants() const;
  // Its tensors (kernel.h): inputs, then outputs.
  static constexpr std::array<ViewField<AlibiCall>, 4> view_table() {
    using View = ViewField<AlibiCall>;
    return {{{"q_positions", &AlibiCall::q_positions},
             {"k_positions", &AlibiCall::k_positions},
             {"bias", &AlibiCall::bias, View::output},
             {"slopes", &AlibiCall::slopes, View::output}}};
  }
  // Its variant bits by name (kernel.h).
  static constexpr std::array<VariantName, 2> variant_table() {
    return {{{variant::alibi_causal, "alibi_causal"}, {variant::alibi_slopes, "alibi_slopes"}}};
  }
  // Its parameters (every field that is not a view) by name: f(name, call.member), in order.
  template <class C, class F>
  static void for_each_parameter(C& call, F&& f) {
    f("n_heads", call.n_heads);
    f("max_bias", call.max_bias);
    f("causal", call.causal);
    f("threads", call.threads);
  }
};

}  // namespace posenc
