#include "posenc/rope.h"

#include <algorithm>

#include "posenc/error.h"

namespace posenc {

const char* layout_name(RopeLayout layout) {
  return layout == RopeLayout::half_split ? "half_split" : "interleaved";
}

int64_t RopeCall::max_position() const {
  return cached() ? std::min(cos->shape[0] - 1, kMaxPosition) : kMaxPosition;
}

void RopeCall::validate() const {
  check_threads(threads);
  check_view(q, "q", 3, {DType::f32, DType::bf16, DType::f16});
  check_view(q_out, "q_out", 3, {DType::f32, DType::bf16, DType::f16});
  check_same_dtype(q_out, "q_out", q, "q");
  check_view(positions, "positions", 1, {DType::i64, DType::i32});
  const int64_t tokens = q.shape[0], head_dim = q.shape[2];
  POSENC_REQUIRE(q.shape[1] >= 1, "q.shape[1]", q.shape[1], "heads must be >= 1");
  POSENC_REQUIRE(head_dim >= 2, "q.shape[2]", head_dim, "head_dim must be >= 2");
  POSENC_REQUIRE(rotary_dim >= 2 && rotary_dim % 2 == 0, "rotary_dim", rotary_dim,
                 "must be even and >= 2");
  POSENC_REQUIRE(rotary_dim <= head_dim, "rotary_dim", rotary_dim,
                 "must be <= head_dim = " + std::to_string(head_dim));
  POSENC_REQUIRE(layout == RopeLayout::half_split || layout == RopeLayout::interleaved, "layout",
                 static_cast<int>(layout), "must be half_split or interleaved");
  for (int d = 0; d < 3; ++d) check_dim(q_out, "q_out", d, q.shape[d]);
  check_dim(positions, "positions", 0, tokens);
  POSENC_REQUIRE(k.has_value() == k_out.has_value(), "k_out", k_out ? "given" : "absent",
                 "k and k_out come together");
  if (k) {
    check_view(*k, "k", 3, {DType::f32, DType::bf16, DType::f16});
    check_view(*k_out, "k_out", 3, {DType::f32, DType::bf16, DType::f16});
    check_same_dtype(*k, "k", q, "q");
    check_same_dtype(*k_out, "k_out", *k, "k");
    check_dim(*k, "k", 0, tokens);
    POSENC_REQUIRE(k->shape[1] >= 1, "k.shape[1]", k->shape[1], "heads must be >= 1");
    check_dim(*k, "k", 2, head_dim);
    for (int d = 0; d < 3; ++d) check_dim(*k_out, "k_out", d, k->shape[d]);
  }
  POSENC_REQUIRE(cos.has_value() == sin.has_value(), "sin", sin ? "given" : "absent",
                 "cos and sin come together");
  if (cos) {
    check_view(*cos, "cos", 2, {DType::f32, DType::bf16});
    check_view(*sin, "sin", 2, {DType::f32, DType::bf16});
    check_same_dtype(*sin, "sin", *cos, "cos");
    check_dim(*cos, "cos", 1, rotary_dim / 2);
    check_dim(*sin, "sin", 0, cos->shape[0]);
    check_dim(*sin, "sin", 1, rotary_dim / 2);
  } else {
    scaling.validate(rotary_dim, base);
  }
  // A position past the cache has no row; the peers read garbage there.
  check_positions(positions, "positions", 0, max_position());
  check_view_overlaps(*this);
  if (k) check_no_overlap(*k_out, "k_out", q_out, "q_out");
}

uint64_t RopeCall::required_variants() const {
  uint64_t bits = view_variants({&q, &q_out, k ? &*k : nullptr, k_out ? &*k_out : nullptr,
                                 cos ? &*cos : nullptr, sin ? &*sin : nullptr});
  bits |= layout == RopeLayout::half_split ? variant::rope_half_split : variant::rope_interleaved;
  if (rotary_dim < q.shape[2]) bits |= variant::rope_partial;
  if (inverse) bits |= variant::rope_inverse;
  if (cos)
    bits |= variant::rope_cached;
  else
    bits |= variant::scaling_bit(scaling.kind);
  if (k) bits |= variant::rope_key;
  if (same_view(q, q_out) || (k && same_view(*k, *k_out))) bits |= variant::in_place;
  return bits;
}

}  // namespace posenc
