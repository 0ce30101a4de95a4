// vision_rope: 2D rotary position embedding of image patches (axial row/column positions), as in
// the vision towers of Qwen2-VL / Qwen2.5-VL, Pixtral and Llama 4.
//
// Each token (patch) has a row and a column, positions[t, 0] and positions[t, 1]. With
// d = rotary_dim (d % 4 == 0), q = d/4 pairs per axis and ω_k = base^(−2k/d) (rope's unscaled
// frequencies of dim d), rotary pair i is rotated as rope.h rotates it, by θ_i = (p + offset)·ω
// (−θ_i when inverse), f = 1:
//   pair i < q      reads the first axis,  ω = ω_2i;
//   pair q + j      reads the second axis, ω = ω_2j (axial) or ω_(2j+1) (pixtral).
// The first axis is the row (row_first) or the column (column_first); offset = position_offset.
// Conventions, by model and source:
//   axial, row_first, offset 0: Qwen2-VL / Qwen2.5-VL vision (transformers VisionRotaryEmbedding
//     (head_dim/2): inv_freq base^(−2k/(d/2)) = ω_2k, angles cat(row·inv_freq, column·inv_freq),
//     pairs (i, i + d/2): layout half_split; vLLM the same).
//   pixtral, row_first, offset 0: Pixtral (transformers PixtralRotaryEmbedding: freqs[::2] for
//     rows, freqs[1::2] for columns, pairs (i, i + d/2): half_split; mistral-inference
//     precompute_freqs_cis_2d: the same angles, complex pairs (2i, 2i + 1): interleaved).
//   axial, column_first, offset 1: Llama 4 vision (transformers Llama4VisionRotaryEmbedding:
//     frequencies_x = index % side (the column) first, (x + 1)·ω_2i, then (y + 1)·ω_2j, complex
//     pairs (2i, 2i + 1): interleaved). Its class token gets angles masked to 0 (masked_fill on
//     img_idx < 0): pass it as position (−1, −1), which offset 1 turns into 0, i.e. no rotation.
// For axial + interleaved each half of the head is a 1D rope of rotary_dim d/2 on its axis.
// Llama 4 uses the same positions for q and k and rotates both; no model scales these angles, so
// there is no scaling (M-RoPE, mrope.h, is the text-side family).
//
// Shapes: q, q_out [tokens, hq, head_dim]; k, k_out [tokens, hk, head_dim]; positions i64 or i32
// [tokens, 2] (row, column) with p + position_offset in [0, kMaxPosition] for each, and
// |position_offset| ≤ kMaxPosition. Outputs in place or disjoint from every input; dtypes as rope
// (f32, bf16 or f16, one per call); dims from rotary_dim to head_dim pass through bit-exactly.
//
// Tolerance unit: rope's: ulp(‖(a, b)‖) in the output dtype per rotated element, (a, b) its input
// pair; the tail bit-exact.
#pragma once

#include <array>
#include <optional>

#include "posenc/kernel.h"
#include "posenc/rope.h"
#include "posenc/tensor.h"

namespace posenc {

enum class VisionRopeConvention : uint8_t { axial, pixtral };
enum class VisionAxisOrder : uint8_t { row_first, column_first };
// Their values' names (Python's strings), by argument-dependent lookup.
constexpr std::array<const char*, 2> enum_names(VisionRopeConvention) {
  return {"axial", "pixtral"};
}
constexpr std::array<const char*, 2> enum_names(VisionAxisOrder) {
  return {"row_first", "column_first"};
}
const char* convention_name(VisionRopeConvention convention);
const char* axis_order_name(VisionAxisOrder order);

namespace variant {
inline constexpr uint64_t vision_rope_half_split = kFamilyVariant0 << 0;
inline constexpr uint64_t vision_rope_interleaved = kFamilyVariant0 << 1;  // pairs (2i, 2i + 1)
inline constexpr uint64_t vision_rope_partial = kFamilyVariant0 << 2;      // rotary_dim < head_dim
inline constexpr uint64_t vision_rope_inverse = kFamilyVariant0 << 3;
inline constexpr uint64_t vision_rope_key = kFamilyVariant0 << 4;           // k given
inline constexpr uint64_t vision_rope_axial = kFamilyVariant0 << 5;         // Qwen2-VL, Llama 4
inline constexpr uint64_t vision_rope_pixtral = kFamilyVariant0 << 6;       // odd ω for axis 2
inline constexpr uint64_t vision_rope_column_first = kFamilyVariant0 << 7;  // Llama 4
inline constexpr uint64_t vision_rope_offset = kFamilyVariant0 << 8;        // position_offset ≠ 0
}  // namespace variant

struct VisionRopeCall {
  static constexpr Family kFamily = Family::vision_rope;
  // Its tolerance unit reads the input pair, which an in-place call overwrites.
  static constexpr bool kUnitReadsInputs = true;

  Tensor q, q_out;
  std::optional<Tensor> k, k_out;
  Tensor positions;  // [tokens, 2]: row, column
  int64_t rotary_dim = 0;
  VisionRopeConvention convention = VisionRopeConvention::axial;
  VisionAxisOrder axis_order = VisionAxisOrder::row_first;
  int64_t position_offset = 0;  // Llama 4: 1
  RopeLayout layout = RopeLayout::half_split;
  bool inverse = false;
  double base = 10000.0;
  int threads = 0;

  void validate() const;
  uint64_t required_variants() const;
  // Its tensors (kernel.h): inputs, then outputs.
  static constexpr std::array<ViewField<VisionRopeCall>, 5> view_table() {
    using View = ViewField<VisionRopeCall>;
    return {{{"q", &VisionRopeCall::q},
             {"positions", &VisionRopeCall::positions},
             {"k", &VisionRopeCall::k},
             {"q_out", &VisionRopeCall::q_out, View::output, "q"},
             {"k_out", &VisionRopeCall::k_out, View::output, "k"}}};
  }
  // Its variant bits by name (kernel.h).
  static constexpr std::array<VariantName, 9> variant_table() {
    return {{{variant::vision_rope_half_split, "vision_rope_half_split"},
             {variant::vision_rope_interleaved, "vision_rope_interleaved"},
             {variant::vision_rope_partial, "vision_rope_partial"},
             {variant::vision_rope_inverse, "vision_rope_inverse"},
             {variant::vision_rope_key, "vision_rope_key"},
             {variant::vision_rope_axial, "vision_rope_axial"},
             {variant::vision_rope_pixtral, "vision_rope_pixtral"},
             {variant::vision_rope_column_first, "vision_rope_column_first"},
             {variant::vision_rope_offset, "vision_rope_offset"}}};
  }
  // Its parameters (every field that is not a view) by name: f(name, call.member), in order.
  template <class C, class F>
  static void for_each_parameter(C& call, F&& f) {
    f("rotary_dim", call.rotary_dim);
    f("convention", call.convention);
    f("axis_order", call.axis_order);
    f("position_offset", call.position_offset);
    f("layout", call.layout);
    f("inverse", call.inverse);
    f("base", call.base);
    f("threads", call.threads);
  }
};

// The positions column (0 row, 1 column) that rotates pair i (see the top comment).
int vision_rope_axis(VisionAxisOrder order, int64_t rotary_dim, int64_t i);
// k such that pair i turns by ω_k = base^(−2k/rotary_dim).
int64_t vision_rope_frequency(VisionRopeConvention convention, int64_t rotary_dim, int64_t i);

// The 1D rope call on the same q, k, outputs, rotary_dim, layout, inverse, base and threads with
// `positions` [tokens].
RopeCall as_rope(const VisionRopeCall& call, const Tensor& positions);

}  // namespace posenc
