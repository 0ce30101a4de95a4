#include "posenc/alibi.h"

#include <cmath>

#include "posenc/error.h"

namespace posenc {

void AlibiCall::validate() const {
  check_threads(threads);
  POSENC_REQUIRE(n_heads >= 1, "n_heads", n_heads, "must be >= 1");
  POSENC_REQUIRE(std::isfinite(max_bias) && max_bias > 0, "max_bias", max_bias,
                 "must be finite and > 0");
  check_view(q_positions, "q_positions", 1, {DType::i64, DType::i32});
  check_view(k_positions, "k_positions", 1, {DType::i64, DType::i32});
  check_view(bias, "bias", 3, {DType::f32, DType::bf16, DType::f16});
  check_dim(bias, "bias", 0, n_heads);
  check_dim(bias, "bias", 1, q_positions.shape[0]);
  check_dim(bias, "bias", 2, k_positions.shape[0]);
  check_positions(q_positions, "q_positions", 0, kMaxPosition);
  check_positions(k_positions, "k_positions", 0, kMaxPosition);
  if (slopes) {
    check_view(*slopes, "slopes", 1, {DType::f32});
    check_dim(*slopes, "slopes", 0, n_heads);
  }
  check_view_overlaps(*this);
  if (slopes) check_no_overlap(*slopes, "slopes", bias, "bias");
}

uint64_t AlibiCall::required_variants() const {
  uint64_t bits = view_variants({&bias, slopes ? &*slopes : nullptr});
  if (causal) bits |= variant::alibi_causal;
  if (slopes) bits |= variant::alibi_slopes;
  return bits;
}

}  // namespace posenc
