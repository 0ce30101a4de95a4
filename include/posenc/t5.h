// t5: T5's learned relative-position bias (Raffel et al.; transformers' _relative_position_bucket).
//
// rp = k_pos[j] − q_pos[i]. Bidirectional: n = n_buckets/2, bucket = (rp > 0)·n, r = |rp|.
// Causal: n = n_buckets, bucket = 0, r = max(−rp, 0). With e = n/2:
// bucket += r if r < e, else min(n − 1, e + ⌊ln(r/e)/ln(max_distance/e)·(n − e)⌋).
// bias[h, i, j] = table[bucket(i, j), h].
//
// Shapes: q_positions i64 [tq], k_positions i64 [tk], table [n_buckets, heads], bias out
// [heads, tq, tk]. n_buckets ≥ 2 (≥ 4 bidirectional), max_distance > e.
//
// Tolerance unit: a lookup is exact, so bound 0: bit-for-bit equal.
#pragma once

#include "posenc/kernel.h"
#include "posenc/tensor.h"

namespace posenc {

namespace variant {
inline constexpr uint64_t t5_bidirectional = kFamilyVariant0 << 0;
inline constexpr uint64_t t5_causal = kFamilyVariant0 << 1;
}  // namespace variant

struct T5Call {
  static constexpr Family kFamily = Family::t5;

  bool bidirectional = true;
  int64_t n_buckets = 32;
  int64_t max_distance = 128;
  Tensor q_positions, k_positions;
  Tensor table;
  Tensor bias;
  int threads = 0;

  void validate() const;
  uint64_t required_variants() const;
};

}  // namespace posenc
