#include "posenc/attention.h"

#include <cmath>

#include "posenc/error.h"

namespace posenc {

void AttentionCall::validate() const {
  check_threads(threads);
  check_view(q, "q", 3, {DType::f32, DType::bf16, DType::f16});
  check_view(k, "k", 3, {DType::f32, DType::bf16, DType::f16});
  check_view(v, "v", 3, {DType::f32, DType::bf16, DType::f16});
  check_view(out, "out", 3, {DType::f32, DType::bf16, DType::f16});
  check_same_dtype(k, "k", q, "q");
  check_same_dtype(v, "v", q, "q");
  check_same_dtype(out, "out", q, "q");
  const int64_t tq = q.shape[0], hq = q.shape[1], d = q.shape[2];
  const int64_t tk = k.shape[0], hkv = k.shape[1], dv = v.shape[2];
  POSENC_REQUIRE(hq >= 1, "q.shape[1]", hq, "query heads must be >= 1");
  POSENC_REQUIRE(d >= 1, "q.shape[2]", d, "head dim must be >= 1");
  POSENC_REQUIRE(hkv >= 1, "k.shape[1]", hkv, "kv heads must be >= 1");
  POSENC_REQUIRE(hq % hkv == 0, "q.shape[1]", hq,
                 "must be a multiple of k.shape[1] = " + std::to_string(hkv));
  check_dim(k, "k", 2, d);
  check_dim(v, "v", 0, tk);
  check_dim(v, "v", 1, hkv);
  POSENC_REQUIRE(dv >= 1, "v.shape[2]", dv, "value dim must be >= 1");
  check_dim(out, "out", 0, tq);
  check_dim(out, "out", 1, hq);
  check_dim(out, "out", 2, dv);
  POSENC_REQUIRE(std::isnan(scale) || std::isfinite(scale), "scale", scale,
                 "must be finite (NaN: 1/sqrt(d))");
  POSENC_REQUIRE(mask == Mask::none || mask == Mask::causal, "mask", static_cast<int>(mask),
                 "must be none or causal");
  POSENC_REQUIRE(window_left >= -1, "window_left", window_left, "must be -1 (no window) or >= 0");
  POSENC_REQUIRE(std::isfinite(softcap) && softcap >= 0, "softcap", softcap,
                 "must be finite and >= 0 (0: no softcap)");
  POSENC_REQUIRE(q_positions.has_value() == k_positions.has_value(), "q_positions",
                 q_positions ? "given" : "absent", "q_positions and k_positions come together");
  if (q_positions) {
    check_view(*q_positions, "q_positions", 1, {DType::i64, DType::i32});
    check_view(*k_positions, "k_positions", 1, {DType::i64, DType::i32});
    check_dim(*q_positions, "q_positions", 0, tq);
    check_dim(*k_positions, "k_positions", 0, tk);
    check_positions(*q_positions, "q_positions", 0, kMaxPosition);
    check_positions(*k_positions, "k_positions", 0, kMaxPosition);
  }
  if (bias) {
    check_view(*bias, "bias", 3, {DType::f32, DType::bf16, DType::f16});
    if (bias->dtype != DType::f32) check_same_dtype(*bias, "bias", q, "q");
    check_dim(*bias, "bias", 0, hq);
    check_dim(*bias, "bias", 1, tq);
    check_dim(*bias, "bias", 2, tk);
  }
  POSENC_REQUIRE(chunk_size >= 0, "chunk_size", chunk_size, "must be >= 0 (0: no chunking)");
  if (sinks) {
    check_view(*sinks, "sinks", 1, {DType::f32});
    check_dim(*sinks, "sinks", 0, hq);
    for (int64_t h = 0; h < hq; ++h) {
      const float s = sinks->as<float>()[sinks->offset(h)];
      POSENC_REQUIRE(!std::isnan(s) && s != INFINITY, "sinks[" + std::to_string(h) + "]", s,
                     "must be finite or -inf (-inf: no sink)");
    }
  }
  if (alibi_slopes) {
    check_view(*alibi_slopes, "alibi_slopes", 1, {DType::f32});
    check_dim(*alibi_slopes, "alibi_slopes", 0, hq);
    for (int64_t h = 0; h < hq; ++h) {
      const float s = alibi_slopes->as<float>()[alibi_slopes->offset(h)];
      POSENC_REQUIRE(std::isfinite(s), "alibi_slopes[" + std::to_string(h) + "]", s,
                     "must be finite");
    }
    // Implicit positions run to tk − 1: distances stay exact in f32, as explicit ones do.
    POSENC_REQUIRE(q_positions || tk <= kMaxPosition + 1, "k.shape[0]", tk,
                   "must be <= 2^24 + 1 with alibi_slopes and implicit positions");
  }
  if (lse) {
    check_view(*lse, "lse", 2, {DType::f32});
    check_dim(*lse, "lse", 0, tq);
    check_dim(*lse, "lse", 1, hq);
    check_no_overlap(*lse, "lse", out, "out");  // outputs apart: view_table() checks the rest
  }
  check_view_overlaps(*this);
}

uint64_t AttentionCall::required_variants() const {
  uint64_t bits = view_variants({&q, &k, &v, &out, bias ? &*bias : nullptr});
  if (mask == Mask::causal) bits |= variant::attention_causal;
  if (bias) bits |= variant::attention_bias;
  if (q.shape[1] != k.shape[1]) bits |= variant::attention_gqa;
  if (q_positions) bits |= variant::attention_positions;
  if (windowed()) bits |= variant::attention_window;
  if (softcap > 0) bits |= variant::attention_softcap;
  if (chunked()) bits |= variant::attention_chunked;
  if (sinks) bits |= variant::attention_sinks;
  if (alibi_slopes) bits |= variant::attention_alibi;
  // Always f32, they add no dtype bit; a strided one needs the strided bit.
  for (const auto* t : {&sinks, &alibi_slopes})
    if (*t && !(*t)->contiguous()) bits |= variant::strided;
  if (lse) bits |= variant::attention_lse;
  return bits;
}

double AttentionCall::resolved_scale() const {
  return std::isnan(scale) ? 1.0 / std::sqrt(static_cast<double>(q.shape[2])) : scale;
}

int64_t AttentionCall::q_position(int64_t i) const {
  if (q_positions) return load_index(*q_positions, q_positions->offset(i));
  return k.shape[0] - q.shape[0] + i;
}

int64_t AttentionCall::k_position(int64_t j) const {
  if (k_positions) return load_index(*k_positions, k_positions->offset(j));
  return j;
}

bool AttentionCall::visible(int64_t i, int64_t j) const {
  if (mask == Mask::none && !windowed() && !chunked()) return true;
  return visible_at(q_position(i), k_position(j));
}

double AttentionCall::alibi(int64_t h, int64_t i, int64_t j) const {
  if (!alibi_slopes) return 0;
  const double slope = alibi_slopes->as<float>()[alibi_slopes->offset(h)];
  const double distance = std::fabs(static_cast<double>(q_position(i) - k_position(j)));
  return static_cast<float>(slope * -distance);  // exact in fp64, then rounded once to f32
}

double AttentionCall::sink(int64_t h) const {
  return sinks ? sinks->as<float>()[sinks->offset(h)] : -INFINITY;
}

}  // namespace posenc
