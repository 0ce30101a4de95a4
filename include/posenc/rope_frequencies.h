// rope_frequencies: the rotary frequencies ω_i (i < d/2, d = rotary_dim) and the attention factor
// for every long-context scaling, following Hugging Face transformers' modeling_rope_utils.py:
//
//   none         ω_i = base^(−2i/d)
//   linear       ω_i / factor                                  (position interpolation)
//   ntk          base' = base · alpha^(d/(d−2))                (NTK-aware, fixed alpha)
//   dynamic_ntk  s = max(seq_len, max_position);
//                base' = base · (factor·s/max_position − (factor − 1))^(d/(d−2))
//   yarn         ramp between ω_i/factor and ω_i over dims [lo, hi] from beta_fast and beta_slow
//   llama3       wavelength bands from low_freq_factor, high_freq_factor, original_max_position
//   longrope     ω_i = 1 / (ext_i · base^(2i/d)), ext = long_factor if seq_len > original_max
//                else short_factor
//
// Attention factor (multiplies cos and sin): `attention_factor` when set (finite), else for yarn
// g(f, mscale)/g(f, mscale_all_dim) when both are set and g(f, 1) otherwise, with g(f, m) = 1 for
// f ≤ 1 and 0.1·m·ln f + 1 above; for longrope 1 if f ≤ 1 else √(1 + ln f / ln original_max);
// 1 for the rest.
//
// Domain: base ≥ 1, and factor (linear, yarn, llama3), alpha and every longrope factor ≥ 1/8, so
// each ω ≤ 8 rad per position and angles p·ω ≤ 2²⁷: there the fp64 oracle's angle error (about
// p·ω·2⁻⁵³) is a fraction of an f32 ulp, and no ω overflows a double.
//
// Tolerance unit: |got − ref| ≤ bound · ulp_f64(ref), per frequency and for the factor.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "posenc/kernel.h"
#include "posenc/tensor.h"

namespace posenc {

enum class RopeScalingKind : uint8_t { none, linear, ntk, dynamic_ntk, yarn, llama3, longrope };
constexpr std::array<const char*, 7> enum_names(RopeScalingKind) {
  return {"none", "linear", "ntk", "dynamic_ntk", "yarn", "llama3", "longrope"};
}
const char* scaling_name(RopeScalingKind kind);

struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::none;
  double factor = 1.0;                        // linear, dynamic_ntk, yarn, llama3, longrope
  double alpha = 1.0;                         // ntk
  int64_t max_position = 0;                   // dynamic_ntk: max_position_embeddings
  int64_t original_max_position = 0;          // yarn, llama3, longrope
  int64_t seq_len = 0;                        // dynamic_ntk, longrope: current sequence length
  double beta_fast = 32.0, beta_slow = 1.0;   // yarn
  double mscale = 0.0, mscale_all_dim = 0.0;  // yarn; 0 means unset
  bool truncate = true;                       // yarn: floor/ceil the correction range
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  std::vector<double> short_factor, long_factor;         // longrope, rotary_dim/2 each
  double attention_factor = std::nan("");                // explicit; NaN means derived

  // Checks every parameter the kind reads; `rotary_dim` is the d above.
  void validate(int64_t rotary_dim, double base) const;
  std::string describe() const;  // "yarn(factor=4, original_max_position=4096, ...)"
};

namespace variant {
// One bit per scaling kind, shared by every rope family. An unknown kind has none: calls ask before
// validate() rejects them, and a shift past 63 bits would be undefined.
inline constexpr uint64_t scaling_bit(RopeScalingKind kind) {
  return kind <= RopeScalingKind::longrope ? kFamilyVariant0 << (16 + static_cast<int>(kind)) : 0;
}
inline constexpr uint64_t all_scalings =
    scaling_bit(RopeScalingKind::none) | scaling_bit(RopeScalingKind::linear) |
    scaling_bit(RopeScalingKind::ntk) | scaling_bit(RopeScalingKind::dynamic_ntk) |
    scaling_bit(RopeScalingKind::yarn) | scaling_bit(RopeScalingKind::llama3) |
    scaling_bit(RopeScalingKind::longrope);
inline constexpr std::array<VariantName, 7> scaling_names = {
    {{scaling_bit(RopeScalingKind::none), "scaling_none"},
     {scaling_bit(RopeScalingKind::linear), "scaling_linear"},
     {scaling_bit(RopeScalingKind::ntk), "scaling_ntk"},
     {scaling_bit(RopeScalingKind::dynamic_ntk), "scaling_dynamic_ntk"},
     {scaling_bit(RopeScalingKind::yarn), "scaling_yarn"},
     {scaling_bit(RopeScalingKind::llama3), "scaling_llama3"},
     {scaling_bit(RopeScalingKind::longrope), "scaling_longrope"}}};
}  // namespace variant

struct RopeFrequenciesCall {
  static constexpr Family kFamily = Family::rope_frequencies;

  int64_t rotary_dim = 0;  // even, ≥ 2
  double base = 10000.0;
  RopeScaling scaling;
  Tensor inv_freq;          // out, f64 [rotary_dim/2]
  Tensor attention_factor;  // out, f64 [1]
  int threads = 0;

  void validate() const;
  uint64_t required_variants() const;
  // Its tensors (kernel.h): inputs, then outputs.
  static constexpr std::array<ViewField<RopeFrequenciesCall>, 2> view_table() {
    using View = ViewField<RopeFrequenciesCall>;
    return {{{"inv_freq", &RopeFrequenciesCall::inv_freq, View::output},
             {"attention_factor", &RopeFrequenciesCall::attention_factor, View::output}}};
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
