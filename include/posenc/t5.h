// t5: T5's learned relative-position bias (Raffel et al.; transformers' _relative_position_bucket).
//
// rp = k_pos[j] − q_pos[i]. Bidirectional: n = n_buckets/2, bucket = (rp > 0)·n, r = |rp|.
// Causal: n = n_buckets, bucket = 0, r = max(−rp, 0). With e = n/2:
// bucket += r if r < e, else min(n − 1, e + ⌊ln(r/e)/ln(max_distance/e)·(n − e)⌋).
// bias[h, i, j] = table[bucket(i, j), h].
//
// The logarithmic branch is evaluated as Hugging Face's _relative_position_bucket (and Mesh
// TensorFlow's) evaluates it, in float32, not in exact arithmetic: f = float(r) / float(e);
// l = ln f correctly rounded to float; s = float(ln(double(max_distance) / e)); t = l / s ·
// float(n − e), each operation rounded to float32; the bucket is e + ⌊t⌋ (at most n − 1). This is
// PyTorch's CPU path; its logf (glibc or Sleef) may be an ulp off, and CUDA multiplies by 1/s,
// which moves a few rare (r, configuration) pairs by one bucket outside the defaults. Float32
// and exact arithmetic differ: with n_buckets = 32, max_distance = 939, causal, r = 728 the exact
// value is 14.999999 (bucket 30) but float32 gives 0.9375 · 16 = 15 exactly (bucket 31), and that
// is what T5 users run. For the defaults (32, 128) both directions, and for (64, 256), float32,
// float64 and exact arithmetic agree at every r up to 2^24; at r = 16, 32, 64 (bidirectional)
// float32 lands exactly on the boundary, since ln 2^k rounds to k·float(ln 2), giving buckets 10,
// 12, 14 (+16 for keys after the query). A logarithm is taken only when r ≥ e, and nothing
// non-finite is converted to an integer.
//
// Shapes: q_positions i64 [tq], k_positions i64 [tk], table [n_buckets, heads], bias out
// [heads, tq, tk]. n_buckets ≥ 2 (≥ 4 bidirectional), max_distance > e.
//
// Dtypes: table and bias f32, bf16 or f16 alike (a lookup copies).
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
  // Its tensors (kernel.h): inputs, then outputs.
  static constexpr std::array<ViewField<T5Call>, 4> view_table() {
    using View = ViewField<T5Call>;
    return {{{"q_positions", &T5Call::q_positions},
             {"k_positions", &T5Call::k_positions},
             {"table", &T5Call::table},
             {"bias", &T5Call::bias, View::output}}};
  }
  // Its variant bits by name (kernel.h).
  static constexpr std::array<VariantName, 2> variant_table() {
    return {{{variant::t5_bidirectional, "t5_bidirectional"}, {variant::t5_causal, "t5_causal"}}};
  }
  // Its parameters (every field that is not a view) by name: f(name, call.member), in order.
  template <class C, class F>
  static void for_each_parameter(C& call, F&& f) {
    f("bidirectional", call.bidirectional);
    f("n_buckets", call.n_buckets);
    f("max_distance", call.max_distance);
    f("threads", call.threads);
  }
};

}  // namespace posenc
