#include "posenc/t5.h"

#include "posenc/error.h"

namespace posenc {

void T5Call::validate() const {
  check_threads(threads);
  const int64_t min_buckets = bidirectional ? 4 : 2;
  POSENC_REQUIRE(n_buckets >= min_buckets, "n_buckets", n_buckets,
                 "must be >= " + std::to_string(min_buckets) +
                     (bidirectional ? " when bidirectional (half per direction)" : ""));
  const int64_t exact = (bidirectional ? n_buckets / 2 : n_buckets) / 2;
  POSENC_REQUIRE(max_distance > exact, "max_distance", max_distance,
                 "must be > " + std::to_string(exact) +
                     " (the exact buckets): it divides by ln(max_distance/" +
                     std::to_string(exact) + ")");
  check_view(q_positions, "q_positions", 1, {DType::i64, DType::i32});
  check_view(k_positions, "k_positions", 1, {DType::i64, DType::i32});
  check_view(table, "table", 2, {DType::f32, DType::bf16, DType::f16});
  check_dim(table, "table", 0, n_buckets);
  const int64_t heads = table.shape[1];
  POSENC_REQUIRE(heads >= 1, "table.shape[1]", heads, "heads must be >= 1");
  check_view(bias, "bias", 3, {DType::f32, DType::bf16, DType::f16});
  check_same_dtype(bias, "bias", table, "table");
  check_dim(bias, "bias", 0, heads);
  check_dim(bias, "bias", 1, q_positions.shape[0]);
  check_dim(bias, "bias", 2, k_positions.shape[0]);
  check_positions(q_positions, "q_positions", 0, kMaxPosition);
  check_positions(k_positions, "k_positions", 0, kMaxPosition);
  check_view_overlaps(*this);
}

uint64_t T5Call::required_variants() const {
  return view_variants({&table, &bias}) |
         (bidirectional ? variant::t5_bidirectional : variant::t5_causal);
}

}  // namespace posenc
