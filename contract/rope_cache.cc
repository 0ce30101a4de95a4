#include "posenc/rope_cache.h"

#include "posenc/error.h"

namespace posenc {

void RopeCacheCall::validate() const {
  check_threads(threads);
  scaling.validate(rotary_dim, base);
  check_view(cos, "cos", 2, {DType::f32, DType::bf16});
  check_view(sin, "sin", 2, {DType::f32, DType::bf16});
  check_same_dtype(sin, "sin", cos, "cos");
  const int64_t rows = cos.shape[0];
  check_dim(cos, "cos", 1, rotary_dim / 2);
  check_dim(sin, "sin", 0, rows);
  check_dim(sin, "sin", 1, rotary_dim / 2);
  POSENC_REQUIRE(rows - 1 <= kMaxPosition, "cos.shape[0]", rows,
                 "rows must be <= " + std::to_string(kMaxPosition + 1));
  check_view_overlaps(*this);
  check_no_overlap(cos, "cos", sin, "sin");
}

uint64_t RopeCacheCall::required_variants() const {
  return variant::scaling_bit(scaling.kind) | view_variants({&cos, &sin});
}

}  // namespace posenc
