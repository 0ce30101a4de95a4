#include "posenc/mrope.h"

#include "posenc/error.h"

namespace posenc {

const char* convention_name(MropeConvention convention) {
  return convention == MropeConvention::sectioned ? "sectioned" : "interleaved";
}

int mrope_axis(MropeConvention convention, const std::array<int64_t, 3>& section, int64_t i) {
  if (convention == MropeConvention::sectioned)
    return i < section[0] ? 0 : i < section[0] + section[1] ? 1 : 2;
  if (i % 3 == 1 && i < 3 * section[1]) return 1;
  if (i % 3 == 2 && i < 3 * section[2]) return 2;
  return 0;
}

Tensor mrope_axis_positions(const Tensor& positions, int axis) {
  Tensor column = positions;
  column.rank = 1;
  if (column.data && positions.shape[0] > 0)
    column.data = static_cast<char*>(column.data) +
                  axis * positions.strides[1] * static_cast<int64_t>(dtype_size(positions.dtype));
  return column;
}

void MropeCall::validate() const {
  check_view(positions, "positions", 2, {DType::i64, DType::i32});
  check_dim(positions, "positions", 1, 3);
  for (int a = 0; a < 3; ++a)
    POSENC_REQUIRE(mrope_section[a] >= 0, "mrope_section[" + std::to_string(a) + "]",
                   mrope_section[a], "must be >= 0");
  const int64_t half = rotary_dim / 2;
  // In 128 bits, so that three sections near 2^63 cannot overflow.
  const __int128 sum = __int128{mrope_section[0]} + mrope_section[1] + mrope_section[2];
  POSENC_REQUIRE(sum == half, "mrope_section",
                 std::to_string(mrope_section[0]) + ", " + std::to_string(mrope_section[1]) + ", " +
                     std::to_string(mrope_section[2]),
                 "must sum to rotary_dim/2 = " + std::to_string(half));
  POSENC_REQUIRE(
      convention == MropeConvention::sectioned || convention == MropeConvention::interleaved,
      "convention", static_cast<int>(convention), "must be sectioned or interleaved");
  if (convention == MropeConvention::interleaved) {
    // Height takes pairs 1, 4, …, 3·s_h − 2 and width 2, 5, …, 3·s_w − 1: all must exist.
    POSENC_REQUIRE(mrope_section[1] == 0 || 3 * __int128{mrope_section[1]} - 2 < half,
                   "mrope_section[1]", mrope_section[1],
                   "interleaved: 3*s_h - 2 must be < rotary_dim/2 = " + std::to_string(half));
    POSENC_REQUIRE(mrope_section[2] == 0 || 3 * __int128{mrope_section[2]} - 1 < half,
                   "mrope_section[2]", mrope_section[2],
                   "interleaved: 3*s_w - 1 must be < rotary_dim/2 = " + std::to_string(half));
  }
  // Every check of rope's contract (views, dims, rotary_dim, layout, scaling, overlaps) through a
  // 1D call on the temporal column; the three columns' ranges and overlaps are checked here.
  const RopeCall rope = as_rope(*this, mrope_axis_positions(positions, 0));
  check_dim(positions, "positions", 0, q.shape[0]);
  for (int64_t t = 0; t < positions.shape[0]; ++t)
    for (int a = 0; a < 3; ++a) {
      const int64_t p = load_index(positions, positions.offset(t, a));
      POSENC_REQUIRE(p >= 0 && p <= kMaxPosition,
                     "positions[" + std::to_string(t) + ", " + std::to_string(a) + "]",
                     std::to_string(p), "must lie in [0, " + std::to_string(kMaxPosition) + "]");
    }
  rope.validate();
  check_view_overlaps(*this);
}

uint64_t MropeCall::required_variants() const {
  uint64_t bits = view_variants({&q, &q_out, k ? &*k : nullptr, k_out ? &*k_out : nullptr});
  bits |= layout == RopeLayout::half_split ? variant::mrope_half_split : variant::mrope_interleaved;
  bits |=
      convention == MropeConvention::sectioned ? variant::mrope_sectioned : variant::mrope_cycled;
  if (rotary_dim < q.shape[2]) bits |= variant::mrope_partial;
  if (inverse) bits |= variant::mrope_inverse;
  if (k) bits |= variant::mrope_key;
  bits |= variant::scaling_bit(scaling.kind);
  if (same_view(q, q_out) || (k && same_view(*k, *k_out))) bits |= variant::in_place;
  return bits;
}

RopeCall as_rope(const MropeCall& call, const Tensor& positions) {
  return {.q = call.q,
          .q_out = call.q_out,
          .k = call.k,
          .k_out = call.k_out,
          .positions = positions,
          .rotary_dim = call.rotary_dim,
          .layout = call.layout,
          .inverse = call.inverse,
          .base = call.base,
          .scaling = call.scaling,
          .threads = call.threads};
}

}  // namespace posenc
