#include "posenc/vision_rope.h"

#include "posenc/error.h"

namespace posenc {

const char* convention_name(VisionRopeConvention convention) {
  return convention == VisionRopeConvention::axial ? "axial" : "pixtral";
}

const char* axis_order_name(VisionAxisOrder order) {
  return order == VisionAxisOrder::row_first ? "row_first" : "column_first";
}

int vision_rope_axis(VisionAxisOrder order, int64_t rotary_dim, int64_t i) {
  const int first = order == VisionAxisOrder::row_first ? 0 : 1;
  return i < rotary_dim / 4 ? first : 1 - first;
}

int64_t vision_rope_frequency(VisionRopeConvention convention, int64_t rotary_dim, int64_t i) {
  const int64_t quarter = rotary_dim / 4;
  if (i < quarter) return 2 * i;
  return 2 * (i - quarter) + (convention == VisionRopeConvention::pixtral ? 1 : 0);
}

void VisionRopeCall::validate() const {
  check_view(positions, "positions", 2, {DType::i64, DType::i32});
  check_dim(positions, "positions", 1, 2);
  POSENC_REQUIRE(rotary_dim >= 4 && rotary_dim % 4 == 0, "rotary_dim", rotary_dim,
                 "must be a multiple of 4 and >= 4 (d/4 pairs per axis)");
  POSENC_REQUIRE(
      convention == VisionRopeConvention::axial || convention == VisionRopeConvention::pixtral,
      "convention", static_cast<int>(convention), "must be axial or pixtral");
  POSENC_REQUIRE(
      axis_order == VisionAxisOrder::row_first || axis_order == VisionAxisOrder::column_first,
      "axis_order", static_cast<int>(axis_order), "must be row_first or column_first");
  POSENC_REQUIRE(
      position_offset >= -kMaxPosition && position_offset <= kMaxPosition, "position_offset",
      position_offset,
      "must lie in [-" + std::to_string(kMaxPosition) + ", " + std::to_string(kMaxPosition) + "]");
  check_dim(positions, "positions", 0, q.shape[0]);
  for (int64_t t = 0; t < positions.shape[0]; ++t)
    for (int a = 0; a < 2; ++a) {
      const int64_t p = load_index(positions, positions.offset(t, a));
      POSENC_REQUIRE(p >= -kMaxPosition && p <= kMaxPosition && p + position_offset >= 0 &&
                         p + position_offset <= kMaxPosition,
                     "positions[" + std::to_string(t) + ", " + std::to_string(a) + "]",
                     std::to_string(p),
                     "plus position_offset = " + std::to_string(position_offset) +
                         " must lie in [0, " + std::to_string(kMaxPosition) + "]");
    }
  // Every check of rope's contract (views, dims, rotary_dim <= head_dim, layout, base, threads,
  // overlaps) through a 1D call whose positions (one zero, stride 0) cannot fail.
  static int64_t zero = 0;
  as_rope(*this, view(&zero, DType::i64, {q.shape[0]}, {0})).validate();
  check_view_overlaps(*this);
}

uint64_t VisionRopeCall::required_variants() const {
  uint64_t bits = view_variants({&q, &q_out, k ? &*k : nullptr, k_out ? &*k_out : nullptr});
  bits |= layout == RopeLayout::half_split ? variant::vision_rope_half_split
                                           : variant::vision_rope_interleaved;
  bits |= convention == VisionRopeConvention::axial ? variant::vision_rope_axial
                                                    : variant::vision_rope_pixtral;
  if (axis_order == VisionAxisOrder::column_first) bits |= variant::vision_rope_column_first;
  if (position_offset != 0) bits |= variant::vision_rope_offset;
  if (rotary_dim < q.shape[2]) bits |= variant::vision_rope_partial;
  if (inverse) bits |= variant::vision_rope_inverse;
  if (k) bits |= variant::vision_rope_key;
  if (same_view(q, q_out) || (k && same_view(*k, *k_out))) bits |= variant::in_place;
  return bits;
}

RopeCall as_rope(const VisionRopeCall& call, const Tensor& positions) {
  return {.q = call.q,
          .q_out = call.q_out,
          .k = call.k,
          .k_out = call.k_out,
          .positions = positions,
          .rotary_dim = call.rotary_dim,
          .layout = call.layout,
          .inverse = call.inverse,
          .base = call.base,
          .threads = call.threads};
}

}  // namespace posenc
