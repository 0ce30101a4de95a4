// rope: rotary position embedding applied to queries and keys.
//
// For token t with position p = positions[t], every head of q (and of k, if given) has its first
// rotary_dim dims rotated pairwise by θ_i = p·ω_i (−θ_i when inverse):
//   (a, b) → (a·c − b·s, a·s + b·c), c = f·cos θ_i, s = f·sin θ_i, f the attention factor,
// with pairs (i, i + d/2) in the half-split layout (NeoX, Llama) and (2i, 2i + 1) interleaved
// (GPT-J). Dims from rotary_dim to head_dim pass through bit-exactly. The angles come from the
// cos/sin cache when one is given (see rope_cache.h: it already holds f), else from base and
// scaling (see rope_frequencies.h).
//
// Shapes: q, q_out [tokens, hq, head_dim]; k, k_out [tokens, hk, head_dim] (hk may differ from
// hq); positions i64 or i32 [tokens] in [0, kMaxPosition], and below the cache's rows when cached.
// Each output is either its input's exact view (in place) or disjoint from every input.
// Dtypes: q, q_out, k, k_out all f32, all bf16 or all f16 (one activation dtype per call, as
// engines run); the cache f32 or bf16 (cos and sin alike) whatever the activations.
//
// Tolerance unit: |got − ref| ≤ bound · ulp_f32(f·‖(a, b)‖) for each rotated element, (a, b) its
// input pair (before an in-place call overwrote it) and f the attention factor; with a cache,
// f = ‖(cos[p, i], sin[p, i])‖ of the row read (the attention factor for a true cos/sin table).
// The pass-through tail must be bit-exact.
// bf16 and f16 outputs: the unit is ulp_bf16(f·‖(a, b)‖) = 2¹⁶·ulp_f32(f·‖(a, b)‖) or
// ulp_f16(f·‖(a, b)‖), and every implementation with a nonzero bound is held to 1 of those
// (kLowPrecisionBound, kernel.h): after rounding, within 1 ulp of the output dtype relative to
// the pair norm. A kernel that computes in f32 and rounds once at the end meets it; one that rounds
// an intermediate (a product, a coefficient) to the output dtype does not.
#pragma once

#include <optional>

#include "posenc/kernel.h"
#include "posenc/rope_frequencies.h"
#include "posenc/tensor.h"

namespace posenc {

enum class RopeLayout : uint8_t { half_split, interleaved };
constexpr std::array<const char*, 2> enum_names(RopeLayout) {
  return {"half_split", "interleaved"};
}
const char* layout_name(RopeLayout layout);

namespace variant {
inline constexpr uint64_t rope_half_split = kFamilyVariant0 << 0;
inline constexpr uint64_t rope_interleaved = kFamilyVariant0 << 1;
inline constexpr uint64_t rope_partial = kFamilyVariant0 << 2;  // rotary_dim < head_dim
inline constexpr uint64_t rope_inverse = kFamilyVariant0 << 3;
inline constexpr uint64_t rope_cached = kFamilyVariant0 << 4;  // cos/sin given
inline constexpr uint64_t rope_key = kFamilyVariant0 << 5;     // k given
}  // namespace variant

struct RopeCall {
  static constexpr Family kFamily = Family::rope;
  // Its tolerance unit reads the input pair, which an in-place call overwrites.
  static constexpr bool kUnitReadsInputs = true;

  Tensor q, q_out;
  std::optional<Tensor> k, k_out;
  Tensor positions;
  int64_t rotary_dim = 0;
  RopeLayout layout = RopeLayout::half_split;
  bool inverse = false;
  double base = 10000.0;           // read when no cache is given
  RopeScaling scaling;             // read when no cache is given
  std::optional<Tensor> cos, sin;  // f32 or bf16 [rows, rotary_dim/2]
  int threads = 0;

  void validate() const;
  uint64_t required_variants() const;
  // The largest position validate() accepts: the cache's last row when cached, else kMaxPosition.
  int64_t max_position() const;
  // Its tensors (kernel.h): inputs, then outputs.
  static constexpr std::array<ViewField<RopeCall>, 7> view_table() {
    using View = ViewField<RopeCall>;
    return {{{"q", &RopeCall::q},
             {"positions", &RopeCall::positions},
             {"k", &RopeCall::k},
             {"cos", &RopeCall::cos},
             {"sin", &RopeCall::sin},
             {"q_out", &RopeCall::q_out, View::output, "q"},
             {"k_out", &RopeCall::k_out, View::output, "k"}}};
  }
  // Its variant bits by name (kernel.h), the scalings' included.
  static constexpr std::array<VariantName, 13> variant_table() {
    return join(std::array<VariantName, 6>{{{variant::rope_half_split, "rope_half_split"},
                                            {variant::rope_interleaved, "rope_interleaved"},
                                            {variant::rope_partial, "rope_partial"},
                                            {variant::rope_inverse, "rope_inverse"},
                                            {variant::rope_cached, "rope_cached"},
                                            {variant::rope_key, "rope_key"}}},
                variant::scaling_names);
  }
  // Its parameters (every field that is not a view) by name: f(name, call.member), in order.
  template <class C, class F>
  static void for_each_parameter(C& call, F&& f) {
    f("rotary_dim", call.rotary_dim);
    f("layout", call.layout);
    f("inverse", call.inverse);
    f("base", call.base);
    f("scaling", call.scaling);
    f("threads", call.threads);
  }
  bool cached() const { return cos.has_value(); }
};

}  // namespace posenc
