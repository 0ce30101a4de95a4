#include "posenc/absolute.h"

#include "posenc/error.h"

namespace posenc {

void AbsoluteCall::validate() const {
  check_threads(threads);
  check_view(x, "x", 2, {DType::f32, DType::bf16, DType::f16});
  check_view(table, "table", 2, {DType::f32, DType::bf16, DType::f16});
  check_view(positions, "positions", 1, {DType::i64, DType::i32});
  check_view(out, "out", 2, {DType::f32, DType::bf16, DType::f16});
  check_same_dtype(out, "out", x, "x");
  const int64_t tokens = x.shape[0], dim = x.shape[1], rows = table.shape[0];
  POSENC_REQUIRE(dim >= 1, "x.shape[1]", dim, "dim must be >= 1");
  check_dim(table, "table", 1, dim);
  check_dim(positions, "positions", 0, tokens);
  check_dim(out, "out", 0, tokens);
  check_dim(out, "out", 1, dim);
  // A learned table has no row past its length: position rows is an error, not a wrap.
  if (tokens > 0) {
    POSENC_REQUIRE(rows >= 1, "table.shape[0]", rows, "must be >= 1 when there are tokens");
    check_positions(positions, "positions", 0, rows - 1);
  }
  check_view_overlaps(*this);
}

uint64_t AbsoluteCall::required_variants() const {
  uint64_t bits = view_variants({&x, &table, &out});
  if (same_view(x, out)) bits |= variant::in_place;
  return bits;
}

}  // namespace posenc
