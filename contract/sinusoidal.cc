#include "posenc/sinusoidal.h"

#include <cmath>

#include "posenc/error.h"

namespace posenc {

void SinusoidalCall::validate() const {
  check_threads(threads);
  check_view(out, "out", 2, {DType::f32, DType::bf16, DType::f16});
  const int64_t tokens = out.shape[0], d = out.shape[1];
  POSENC_REQUIRE(d >= 2 && d % 2 == 0, "out.shape[1]", d, "model dim must be even and >= 2");
  POSENC_REQUIRE(std::isfinite(base) && base >= 1, "base", base,
                 "must be finite and >= 1: frequencies base^(-2i/d) stay <= 1");
  if (x) {
    check_view(*x, "x", 2, {DType::f32, DType::bf16, DType::f16});
    check_same_dtype(*x, "x", out, "out");
    check_dim(*x, "x", 0, tokens);
    check_dim(*x, "x", 1, d);
  }
  if (positions) {
    check_view(*positions, "positions", 1, {DType::i64, DType::i32});
    check_dim(*positions, "positions", 0, tokens);
    check_positions(*positions, "positions", 0, kMaxPosition);
  } else {
    POSENC_REQUIRE(tokens - 1 <= kMaxPosition, "out.shape[0]", tokens,
                   "table rows must be <= " + std::to_string(kMaxPosition + 1));
  }
  check_view_overlaps(*this);
}

uint64_t SinusoidalCall::required_variants() const {
  uint64_t bits = view_variants({&out, x ? &*x : nullptr});
  if (x) bits |= variant::sinusoidal_add;
  if (x && same_view(*x, out)) bits |= variant::in_place;
  if (positions) bits |= variant::sinusoidal_positions;
  return bits;
}

int64_t SinusoidalCall::position(int64_t t) const {
  return positions ? load_index(*positions, positions->offset(t)) : t;
}

}  // namespace posenc
