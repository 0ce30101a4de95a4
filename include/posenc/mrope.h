// mrope: multimodal rotary position embedding (M-RoPE), as in Qwen2-VL, Qwen2.5-VL and Qwen3-VL.
//
// Each token has three positions, temporal, height and width (p_t, p_h, p_w = positions[t, 0..2]);
// rotary pair i (i < d/2, d = rotary_dim) is rotated as rope.h rotates it, by θ_i = p_a(i)·ω_i
// (−θ_i when inverse), with a(i) the axis that `mrope_section` = (s_t, s_h, s_w), s_t + s_h + s_w
// = d/2, gives pair i:
//   sectioned    (Qwen2-VL, Qwen2.5-VL) contiguous frequency bands: pairs [0, s_t) read p_t,
//                [s_t, s_t + s_h) p_h, the rest p_w; e.g. (16, 24, 24) for head_dim 128.
//   interleaved  (Qwen3-VL) axes cycled across frequencies: pair i reads p_h when i ≡ 1 (mod 3)
//                and i < 3·s_h, p_w when i ≡ 2 (mod 3) and i < 3·s_w, p_t otherwise; e.g.
//                (24, 20, 20) gives T H W T H W … T H W T T T T. This is transformers'
//                Qwen3VLTextRotaryEmbedding.apply_interleaved_mrope (freqs_t[..., offset:3·s:3] =
//                freqs[axis] for H at offset 1 and W at offset 2) and vLLM's mrope_interleaved.
//                Every axis must get exactly its count (3·s_h − 2 < d/2 and 3·s_w − 1 < d/2 for
//                nonzero counts), else the section does not describe the call: bad input.
// The frequencies ω_i and the attention factor f are rope's (rope_frequencies.h, every scaling);
// pair layouts half-split (i, i + d/2) and interleaved (2i, 2i + 1), and the pass-through tail
// (partial rotary) are rope's too. The axis of a pair depends on its frequency index i only,
// never on the pair layout. When p_t = p_h = p_w every pair reads the same position: 1D rope.
//
// 2D vision rope (axial (row, column) positions of image patches) is not a section of this family,
// and not modelled yet. With ω_k = base^(−2k/d), d = head_dim:
//   Pixtral (transformers PixtralRotaryEmbedding, mistral-inference precompute_freqs_cis_2d):
//     pair i < d/4 turns by row·ω_2i, pair d/4 + j by column·ω_(2j+1) (even frequencies for rows,
//     odd for columns: a 2-cycle in frequency order, where Qwen3-VL's is a 3-cycle);
//   Llama 4 vision (transformers Llama4VisionRotaryEmbedding): pair i < d/4 turns by
//     (column + 1)·ω_2i, pair d/4 + j by (row + 1)·ω_2j, pairs (2i, 2i + 1): the column first and
//     the same frequencies twice, i.e. a 1D rope of rotary_dim d/2 over each half of the head.
// Neither set is rope's ω_0 … ω_(d/2−1) split by a section, so neither is an mrope call.
//
// Shapes: q, q_out [tokens, hq, head_dim]; k, k_out [tokens, hk, head_dim]; positions i64 or i32
// [tokens, 3], each in [0, kMaxPosition] (vLLM's and transformers' [3, tokens] position ids are
// the same tensor viewed with strides {1, tokens}). Outputs in place or disjoint from every input;
// dtypes as rope (f32, bf16 or f16, one per call).
//
// Tolerance unit: rope's: ulp(f·‖(a, b)‖) in the output dtype per rotated element, (a, b) its input
// pair; the tail bit-exact.
#pragma once

#include <array>
#include <optional>

#include "posenc/kernel.h"
#include "posenc/rope.h"
#include "posenc/rope_frequencies.h"
#include "posenc/tensor.h"

namespace posenc {

enum class MropeConvention : uint8_t { sectioned, interleaved };
constexpr std::array<const char*, 2> enum_names(MropeConvention) {
  return {"sectioned", "interleaved"};
}
const char* convention_name(MropeConvention convention);

namespace variant {
inline constexpr uint64_t mrope_half_split = kFamilyVariant0 << 0;
inline constexpr uint64_t mrope_interleaved = kFamilyVariant0 << 1;  // pair layout (2i, 2i + 1)
inline constexpr uint64_t mrope_partial = kFamilyVariant0 << 2;      // rotary_dim < head_dim
inline constexpr uint64_t mrope_inverse = kFamilyVariant0 << 3;
inline constexpr uint64_t mrope_key = kFamilyVariant0 << 4;        // k given
inline constexpr uint64_t mrope_sectioned = kFamilyVariant0 << 5;  // Qwen2-VL, Qwen2.5-VL
inline constexpr uint64_t mrope_cycled = kFamilyVariant0 << 6;     // Qwen3-VL's interleaved axes
}  // namespace variant

struct MropeCall {
  static constexpr Family kFamily = Family::mrope;
  // Its tolerance unit reads the input pair, which an in-place call overwrites.
  static constexpr bool kUnitReadsInputs = true;

  Tensor q, q_out;
  std::optional<Tensor> k, k_out;
  Tensor positions;  // [tokens, 3]: temporal, height, width
  int64_t rotary_dim = 0;
  std::array<int64_t, 3> mrope_section{};  // pairs per axis, summing to rotary_dim/2
  MropeConvention convention = MropeConvention::sectioned;
  RopeLayout layout = RopeLayout::half_split;
  bool inverse = false;
  double base = 10000.0;
  RopeScaling scaling;
  int threads = 0;

  void validate() const;
  uint64_t required_variants() const;
  // Its tensors (kernel.h): inputs, then outputs.
  static constexpr std::array<ViewField<MropeCall>, 5> view_table() {
    using View = ViewField<MropeCall>;
    return {{{"q", &MropeCall::q},
             {"positions", &MropeCall::positions},
             {"k", &MropeCall::k},
             {"q_out", &MropeCall::q_out, View::output, "q"},
             {"k_out", &MropeCall::k_out, View::output, "k"}}};
  }
  // Its variant bits by name (kernel.h), the scalings' included.
  static constexpr std::array<VariantName, 14> variant_table() {
    return join(std::array<VariantName, 7>{{{variant::mrope_half_split, "mrope_half_split"},
                                            {variant::mrope_interleaved, "mrope_interleaved"},
                                            {variant::mrope_partial, "mrope_partial"},
                                            {variant::mrope_inverse, "mrope_inverse"},
                                            {variant::mrope_key, "mrope_key"},
                                            {variant::mrope_sectioned, "mrope_sectioned"},
                                            {variant::mrope_cycled, "mrope_cycled"}}},
                variant::scaling_names);
  }
  // Its parameters (every field that is not a view) by name: f(name, call.member), in order.
  template <class C, class F>
  static void for_each_parameter(C& call, F&& f) {
    f("rotary_dim", call.rotary_dim);
    f("mrope_section", call.mrope_section);
    f("convention", call.convention);
    f("layout", call.layout);
    f("inverse", call.inverse);
    f("base", call.base);
    f("scaling", call.scaling);
    f("threads", call.threads);
  }
};

// The axis (0 temporal, 1 height, 2 width) whose position rotates pair i (see the top comment);
// for a section validate() accepts.
int mrope_axis(MropeConvention convention, const std::array<int64_t, 3>& section, int64_t i);

// Column `axis` of a [tokens, 3] positions view, as a [tokens] view.
Tensor mrope_axis_positions(const Tensor& positions, int axis);

// The 1D rope call on the same q, k, outputs and parameters with `positions` [tokens].
RopeCall as_rope(const MropeCall& call, const Tensor& positions);

}  // namespace posenc
