// Broken kernels for the self-test (see selftest.h). Each computes in fp64 and rounds once, like
// the reference, so that the bug is the only thing wrong with it.
#include "properties/selftest.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "posenc/error.h"
#include "properties/harness.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace {

// ---- Bugs any family can have, as wrappers around its reference. ----

// A vector store of the last block runs one element past the end of the first output.
template <class Call>
Impl<Call> stray_write(const std::string& family) {
  return {family + "/broken:stray_write", kAllVariants, 1, [](const Call& call) {
            reference_impl<Call>().run(call);
            const Tensor out = outputs(call).front();
            if (out.numel() == 0) return;
            int64_t last = 0;
            for (int d = 0; d < out.rank; ++d) last += (out.shape[d] - 1) * out.strides[d];
            store(out, last + 1, 0.0);
          }};
}

// Indexes every tensor as if it were row-major contiguous, whatever its strides.
template <class Call>
Impl<Call> ignores_strides(const std::string& family) {
  return {family + "/broken:ignores_strides", kAllVariants, 1, [](const Call& call) {
            Call flat = call;
            for (Tensor* t : views(flat)) {
              if (t == nullptr) continue;
              int64_t stride = 1;
              for (int d = t->rank - 1; d >= 0; --d) {
                t->strides[d] = stride;
                stride *= t->shape[d];
              }
            }
            reference_impl<Call>().run(flat);
          }};
}

// Clears its first output element (an accumulator, say) before validating the call.
template <class Call>
Impl<Call> writes_before_validating(const std::string& family) {
  return {family + "/broken:writes_before_validating", kAllVariants, 1, [](const Call& call) {
            for (const Tensor& out : outputs(call))
              if (out.data != nullptr && is_float(out.dtype))
                std::memset(out.data, 0, dtype_size(out.dtype));
            reference_impl<Call>().run(call);
          }};
}

template <class Call>
void add_generic(std::vector<Broken<Call>>& list, const std::string& family) {
  list.push_back({stray_write<Call>(family), "writes one element past the end of its output",
                  family + ".guard_bytes"});
  list.push_back({ignores_strides<Call>(family), "ignores strides: assumes contiguous tensors",
                  family + ".layouts"});
  list.push_back({writes_before_validating<Call>(family),
                  "writes its output before validating the call", family + ".bad_input"});
}

// ---- sinusoidal ----

enum class SinusoidalBug {
  off_by_one,          // PE[p + 1]
  sin_sign_flipped,    // −sin
  omega_i_over_d,      // ω_i = base^(−i/d)
  no_range_reduction,  // sin/cos polynomials valid on [−π, π] applied to any angle
  f32_angles,          // θ = float(p)·float(ω)
  chunked_f32_angles,  // per thread chunk, θ advances by a running f32 sum
  positions_in_dtype,  // positions converted to out's dtype first (arange(n).to(dtype))
};

double poly_sin(double x) {  // Taylor to x⁹: fine near 0, unbounded far from it
  const double x2 = x * x;
  return x * (1 - x2 / 6 * (1 - x2 / 20 * (1 - x2 / 42 * (1 - x2 / 72))));
}
double poly_cos(double x) {
  const double x2 = x * x;
  return 1 - x2 / 2 * (1 - x2 / 12 * (1 - x2 / 30 * (1 - x2 / 56)));
}

void sinusoidal_with(SinusoidalBug bug, const SinusoidalCall& call) {
  call.validate();
  const Tensor& out = call.out;
  const int64_t tokens = out.shape[0], d = out.shape[1];
  const int64_t chunk =
      (tokens + resolve_threads(call.threads) - 1) / std::max(resolve_threads(call.threads), 1);
  for (int64_t i = 0; i < d / 2; ++i) {
    const double exponent = (bug == SinusoidalBug::omega_i_over_d ? 1.0 : 2.0) * i / d;
    const double omega = std::pow(call.base, -exponent);
    float running = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t p = call.position(t) + (bug == SinusoidalBug::off_by_one ? 1 : 0);
      // Exact in f32 (p ≤ 2²⁴); bf16 keeps 8 bits of it, f16 11 and nothing past 65504.
      const double position = bug == SinusoidalBug::positions_in_dtype
                                  ? rounded_to(out.dtype, static_cast<double>(p))
                                  : static_cast<double>(p);
      double angle = position * omega;
      if (bug == SinusoidalBug::f32_angles)
        angle = static_cast<float>(p) * static_cast<float>(omega);
      if (bug == SinusoidalBug::chunked_f32_angles) {
        // Each chunk starts exactly, then steps by the position difference in f32.
        running = t % chunk == 0 ? static_cast<float>(angle)
                                 : running + static_cast<float>(omega) *
                                                 static_cast<float>(p - call.position(t - 1));
        angle = running;
      }
      double s = std::sin(angle), c = std::cos(angle);
      if (bug == SinusoidalBug::no_range_reduction) s = poly_sin(angle), c = poly_cos(angle);
      if (bug == SinusoidalBug::sin_sign_flipped) s = -s;
      const double xs = call.x ? load(*call.x, call.x->offset(t, 2 * i)) : 0.0;
      const double xc = call.x ? load(*call.x, call.x->offset(t, 2 * i + 1)) : 0.0;
      store(out, out.offset(t, 2 * i), xs + s);
      store(out, out.offset(t, 2 * i + 1), xc + c);
    }
  }
}

// ---- absolute ----

enum class AbsoluteBug {
  off_by_one,         // table[p + 1] (clamped to the last row)
  ignores_positions,  // row t of the packed batch instead of positions[t]
  skips_tail,         // columns in blocks of 8; the last partial block is never written
  clamps_positions,   // positions past the table are clamped instead of rejected
  table_in_dtype,     // the table row converted to x's dtype, then added (pe.to(x.dtype))
};

void absolute_with(AbsoluteBug bug, const AbsoluteCall& call) {
  try {
    call.validate();
  } catch (const Error& e) {
    if (bug != AbsoluteBug::clamps_positions || e.argument().rfind("positions[", 0) != 0) throw;
  }
  const int64_t tokens = call.x.shape[0], dim = call.x.shape[1], rows = call.table.shape[0];
  const int64_t columns = bug == AbsoluteBug::skips_tail ? dim / 8 * 8 : dim;
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t row = load_index(call.positions, call.positions.offset(t));
    if (bug == AbsoluteBug::off_by_one) row = std::min(row + 1, rows - 1);
    if (bug == AbsoluteBug::ignores_positions) row = t % rows;
    row = std::clamp<int64_t>(row, 0, rows - 1);
    for (int64_t c = 0; c < columns; ++c) {
      double table = load(call.table, call.table.offset(row, c));
      // Exact when the table is in x's dtype or narrower; else it rounds twice.
      if (bug == AbsoluteBug::table_in_dtype) table = rounded_to(call.x.dtype, table);
      store(call.out, call.out.offset(t, c), load(call.x, call.x.offset(t, c)) + table);
    }
  }
}

// ---- attention ----

enum class AttentionBug {
  ignores_causal_mask,
  ignores_bias,
  skips_key_tail,            // keys in blocks of 8; the last partial block is dropped
  unstable_softmax,          // exp(score) in f32 without subtracting the row maximum
  gqa_wrong_head,            // query head h reads kv head h % hkv instead of h / (hq / hkv)
  split_keys_by_thread,      // each thread's key range is reduced in f32, then combined in f32
  bias_in_activation_dtype,  // reads the bias as if it had q's dtype (a kernel templated on one T)
  weighs_hidden_values,      // a hidden key gets weight 0 instead of being skipped: 0·∞ is NaN
};

void attention_with(AttentionBug bug, const AttentionCall& call) {
  call.validate();
  const Tensor &q = call.q, &k = call.k, &v = call.v, &out = call.out;
  const int64_t tq = q.shape[0], hq = q.shape[1], d = q.shape[2];
  const int64_t tk = k.shape[0], hkv = k.shape[1], group = hq / hkv, dv = v.shape[2];
  const int64_t keys = bug == AttentionBug::skips_key_tail ? tk / 8 * 8 : tk;
  const int threads = resolve_threads(call.threads);
  const int64_t chunk = std::max<int64_t>((keys + threads - 1) / threads, 1);
  std::optional<Tensor> bias = call.bias;
  // An f32 bias under bf16 or f16 activations read as 2-byte elements: within its memory, wrong.
  if (bias && bug == AttentionBug::bias_in_activation_dtype) bias->dtype = q.dtype;
  std::vector<double> score(tk), acc(dv);
  for (int64_t h = 0; h < hq; ++h) {
    const int64_t kvh = bug == AttentionBug::gqa_wrong_head ? h % hkv : h / group;
    for (int64_t i = 0; i < tq; ++i) {
      double top = -INFINITY;
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot += load(q, q.offset(i, h, c)) * load(k, k.offset(j, kvh, c));
        score[j] = call.resolved_scale() * dot;
        if (bias && bug != AttentionBug::ignores_bias)
          score[j] += load(*bias, bias->offset(h, i, j));
        if (call.mask == Mask::causal && bug != AttentionBug::ignores_causal_mask &&
            call.k_position(j) > call.q_position(i))
          score[j] = -INFINITY;
        top = std::fmax(top, score[j]);
      }
      if (bug == AttentionBug::unstable_softmax) top = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      double total = 0;
      if (bug == AttentionBug::split_keys_by_thread) {
        // Partial sums per thread's key range, rounded to f32, combined in f32.
        float ftotal = 0;
        std::vector<float> facc(dv, 0.0f);
        for (int64_t start = 0; start < keys; start += chunk) {
          float part = 0;
          std::vector<float> pacc(dv, 0.0f);
          for (int64_t j = start; j < std::min(keys, start + chunk); ++j) {
            if (score[j] == -INFINITY) continue;
            const float w = static_cast<float>(std::exp(score[j] - top));
            part += w;
            for (int64_t c = 0; c < dv; ++c)
              pacc[c] += w * static_cast<float>(load(v, v.offset(j, kvh, c)));
          }
          ftotal += part;
          for (int64_t c = 0; c < dv; ++c) facc[c] += pacc[c];
        }
        total = ftotal;
        for (int64_t c = 0; c < dv; ++c) acc[c] = facc[c];
      } else if (top != -INFINITY) {
        for (int64_t j = 0; j < keys; ++j) {
          if (score[j] == -INFINITY) {
            // As a dense p·V product does: every key is read, a hidden one with p = 0.
            if (bug == AttentionBug::weighs_hidden_values)
              for (int64_t c = 0; c < dv; ++c) acc[c] += 0.0 * load(v, v.offset(j, kvh, c));
            continue;
          }
          const double w = bug == AttentionBug::unstable_softmax
                               ? static_cast<double>(std::exp(static_cast<float>(score[j])))
                               : std::exp(score[j] - top);
          total += w;
          for (int64_t c = 0; c < dv; ++c) acc[c] += w * load(v, v.offset(j, kvh, c));
        }
      }
      for (int64_t c = 0; c < dv; ++c)
        store(out, out.offset(i, h, c), total > 0 || std::isnan(total) ? acc[c] / total : 0.0);
    }
  }
}

// ---- rope_frequencies ----

enum class FrequenciesBug {
  f32_inv_freq,           // ω rounded to f32, as a float32 tensor holds it
  dynamic_always_scaled,  // dynamic NTK scaled for f·L whatever seq_len (a static cache's form)
  yarn_ramp_unclamped,    // YaRN's ramp not clamped to [0, 1]
  llama3_no_bands,        // Llama 3's smooth blend applied to every wavelength
};

void frequencies_with(FrequenciesBug bug, const RopeFrequenciesCall& call) {
  call.validate();
  const int64_t d = call.rotary_dim, half = d / 2;
  const RopeScaling& s = call.scaling;
  auto r = reference::frequencies(d, call.base, s);
  auto omega = [&](int64_t i, double base) {
    return std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
  };
  if (bug == FrequenciesBug::f32_inv_freq)
    for (double& w : r.inv_freq) w = static_cast<float>(w);
  if (bug == FrequenciesBug::dynamic_always_scaled && s.kind == RopeScalingKind::dynamic_ntk) {
    const double dd = static_cast<double>(d);
    const double base = call.base * std::pow(s.factor, dd / (dd - 2));
    for (int64_t i = 0; i < half; ++i) r.inv_freq[i] = omega(i, base);
  }
  if (bug == FrequenciesBug::yarn_ramp_unclamped && s.kind == RopeScalingKind::yarn) {
    auto corr = [&](double rotations) {
      return static_cast<double>(d) *
             std::log(static_cast<double>(s.original_max_position) / (rotations * 2 * M_PI)) /
             (2 * std::log(call.base));
    };
    const double lo = std::max(std::floor(corr(s.beta_fast)), 0.0);
    const double hi = std::min(std::ceil(corr(s.beta_slow)), static_cast<double>(d - 1));
    for (int64_t i = 0; i < half; ++i) {
      const double ramp = (static_cast<double>(i) - lo) / (hi - lo == 0 ? 0.001 : hi - lo);
      r.inv_freq[i] = omega(i, call.base) / s.factor * ramp + omega(i, call.base) * (1 - ramp);
    }
  }
  if (bug == FrequenciesBug::llama3_no_bands && s.kind == RopeScalingKind::llama3) {
    const double original = static_cast<double>(s.original_max_position);
    for (int64_t i = 0; i < half; ++i) {
      const double w = omega(i, call.base), wavelength = 2 * M_PI / w;
      const double smooth =
          (original / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      r.inv_freq[i] = (1 - smooth) * w / s.factor + smooth * w;
    }
  }
  for (int64_t i = 0; i < half; ++i) store(call.inv_freq, call.inv_freq.offset(i), r.inv_freq[i]);
  store(call.attention_factor, 0, r.attention_factor);
}

// ---- rope_cache ----

enum class CacheBug {
  no_attention_factor,  // stores cos θ and sin θ, forgetting the attention factor
  off_by_one,           // row p holds position p + 1
  omega_i_over_d,       // ω_i = base^(−i/d)
  f32_angles,           // θ = float(p)·float(ω)
  chunked_f32_angles,   // per thread chunk of rows, θ advances by a running f32 sum
};

void cache_with(CacheBug bug, const RopeCacheCall& call) {
  call.validate();
  const int64_t rows = call.cos.shape[0], half = call.rotary_dim / 2;
  const auto r = reference::frequencies(call.rotary_dim, call.base, call.scaling);
  const double a = bug == CacheBug::no_attention_factor ? 1.0 : r.attention_factor;
  const int threads = resolve_threads(call.threads);
  const int64_t chunk = std::max<int64_t>((rows + threads - 1) / threads, 1);
  for (int64_t i = 0; i < half; ++i) {
    double omega = r.inv_freq[i];
    if (bug == CacheBug::omega_i_over_d)
      omega = std::pow(call.base, -static_cast<double>(i) / static_cast<double>(call.rotary_dim));
    float running = 0;
    for (int64_t p = 0; p < rows; ++p) {
      const int64_t position = p + (bug == CacheBug::off_by_one ? 1 : 0);
      double angle = static_cast<double>(position) * omega;
      if (bug == CacheBug::f32_angles)
        angle = static_cast<float>(position) * static_cast<float>(omega);
      if (bug == CacheBug::chunked_f32_angles) {
        running = p % chunk == 0 ? static_cast<float>(angle) : running + static_cast<float>(omega);
        angle = running;
      }
      store(call.cos, call.cos.offset(p, i), a * std::cos(angle));
      store(call.sin, call.sin.offset(p, i), a * std::sin(angle));
    }
  }
}

// ---- rope ----

enum class RopeBug {
  off_by_one,            // position p + 1
  wrong_layout,          // pairs of the other layout
  sin_sign_flipped,      // (a·c + b·s, −a·s + b·c)
  omega_i_over_d,        // on the fly, ω_i = base^(−i/d)
  rotated_tail,          // also rotates the pass-through dims, pairwise, by pair 0's angle
  f32_angles,            // on the fly, θ = float(p)·float(ω)
  skips_tail_pairs,      // pairs in blocks of 4; the last rotary_dim/2 % 4 pairs pass unrotated
  ignores_inverse,       // always rotates forward
  factor_twice,          // on the fly, the attention factor applied twice
  first_position_only,   // every token rotated by the first token's position
  linear_multiplies,     // linear scaling multiplies ω by the factor instead of dividing
  cache_row_off_by_one,  // with a cache, reads row p + 1 (the last row for the last position)
  products_in_dtype,     // cos, sin and each product rounded to the activation dtype, then summed
};

void rope_with(RopeBug bug, const RopeCall& call) {
  call.validate();
  const int64_t half = call.rotary_dim / 2, tokens = call.q.shape[0];
  reference::RopeFrequencies r;
  if (!call.cached()) r = reference::frequencies(call.rotary_dim, call.base, call.scaling);
  if (bug == RopeBug::omega_i_over_d && !call.cached())
    for (int64_t i = 0; i < half; ++i)
      r.inv_freq[i] = std::pow(call.base, -static_cast<double>(i) / call.rotary_dim);
  if (bug == RopeBug::linear_multiplies && !call.cached() &&
      call.scaling.kind == RopeScalingKind::linear)
    for (double& w : r.inv_freq) w *= call.scaling.factor * call.scaling.factor;
  const double f =
      bug == RopeBug::factor_twice ? r.attention_factor * r.attention_factor : r.attention_factor;
  const double sign = call.inverse && bug != RopeBug::ignores_inverse ? -1.0 : 1.0;
  const RopeLayout layout = bug != RopeBug::wrong_layout            ? call.layout
                            : call.layout == RopeLayout::half_split ? RopeLayout::interleaved
                                                                    : RopeLayout::half_split;
  const int64_t rotated = bug == RopeBug::skips_tail_pairs ? half / 4 * 4 : half;
  std::vector<double> cos(half), sin(half);
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t p = load_index(call.positions,
                           call.positions.offset(bug == RopeBug::first_position_only ? 0 : t));
    if (bug == RopeBug::off_by_one) ++p;
    for (int64_t i = 0; i < half; ++i) {
      if (call.cached()) {
        // Clamped to the last row: the bug is the off-by-one, not a read past the cache.
        const int64_t row =
            std::min(bug == RopeBug::cache_row_off_by_one ? p + 1 : p, call.cos->shape[0] - 1);
        cos[i] = load(*call.cos, call.cos->offset(row, i));
        sin[i] = sign * load(*call.sin, call.sin->offset(row, i));
      } else {
        double angle = static_cast<double>(p) * r.inv_freq[i];
        if (bug == RopeBug::f32_angles)
          angle = static_cast<float>(p) * static_cast<float>(r.inv_freq[i]);
        cos[i] = f * std::cos(angle);
        sin[i] = sign * f * std::sin(angle);
      }
      if (bug == RopeBug::sin_sign_flipped) sin[i] = -sin[i];
      if (bug == RopeBug::products_in_dtype) {
        cos[i] = rounded_to(call.q.dtype, cos[i]);
        sin[i] = rounded_to(call.q.dtype, sin[i]);
      }
    }
    // One product as the kernel forms it: exact, or rounded to the activation dtype.
    const auto product = [&](double a, double b) {
      return bug == RopeBug::products_in_dtype ? rounded_to(call.q.dtype, a * b) : a * b;
    };
    auto one = [&](const Tensor& x, const Tensor& out) {
      for (int64_t h = 0; h < x.shape[1]; ++h) {
        std::vector<double> row(x.shape[2]);
        for (int64_t j = 0; j < x.shape[2]; ++j) row[j] = load(x, x.offset(t, h, j));
        std::vector<double> result = row;
        for (int64_t i = 0; i < rotated; ++i) {
          const int64_t j0 = layout == RopeLayout::half_split ? i : 2 * i;
          const int64_t j1 = layout == RopeLayout::half_split ? i + half : 2 * i + 1;
          result[j0] = product(row[j0], cos[i]) - product(row[j1], sin[i]);
          result[j1] = product(row[j0], sin[i]) + product(row[j1], cos[i]);
        }
        if (bug == RopeBug::rotated_tail)
          for (int64_t j = call.rotary_dim; j + 1 < x.shape[2]; j += 2) {
            result[j] = row[j] * cos[0] - row[j + 1] * sin[0];
            result[j + 1] = row[j] * sin[0] + row[j + 1] * cos[0];
          }
        for (int64_t j = 0; j < x.shape[2]; ++j) {
          if (j >= call.rotary_dim && bug != RopeBug::rotated_tail) {  // bit-exact copy
            const size_t size = dtype_size(x.dtype);
            std::memcpy(out.as<char>() + out.offset(t, h, j) * size,
                        x.as<const char>() + x.offset(t, h, j) * size, size);
            continue;
          }
          store(out, out.offset(t, h, j), result[j]);
        }
      }
    };
    one(call.q, call.q_out);
    if (call.k) one(*call.k, *call.k_out);
  }
}

// ---- alibi ----

enum class AlibiBug {
  slopes_use_n,       // 2^(−m(h+1)/n) for every head: right only when n is a power of two
  signed_distance,    // −slope·(q − k) without the absolute value
  masks_diagonal,     // the causal mask hides k ≥ q, the diagonal too
  causal_unmasked,    // the causal form without its −∞ for later keys
  token_indices,      // distances between token indices, not positions
  distance_in_dtype,  // |q − k| converted to the bias's dtype before the product
};

void alibi_with(AlibiBug bug, const AlibiCall& call) {
  call.validate();
  const int64_t tq = call.q_positions.shape[0], tk = call.k_positions.shape[0];
  const auto c = static_cast<double>(std::bit_floor(static_cast<uint64_t>(call.n_heads)));
  for (int64_t h = 0; h < call.n_heads; ++h) {
    const double hh = static_cast<double>(h), m = call.max_bias;
    const double slope =
        bug == AlibiBug::slopes_use_n
            ? std::exp2(-m * (hh + 1) / static_cast<double>(call.n_heads))
            : std::exp2(hh < c ? -m * (hh + 1) / c : -(m / 2) * (2 * (hh - c) + 1) / c);
    if (call.slopes) store(*call.slopes, call.slopes->offset(h), slope);
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j) {
        int64_t qp = load_index(call.q_positions, call.q_positions.offset(i));
        int64_t kp = load_index(call.k_positions, call.k_positions.offset(j));
        if (bug == AlibiBug::token_indices) qp = i + tk - tq, kp = j;
        const bool hidden = bug == AlibiBug::masks_diagonal ? kp >= qp : kp > qp;
        double distance = static_cast<double>(std::abs(qp - kp));
        // Exact in f32 (≤ 2²⁴); bf16 keeps 8 bits of it, f16 11 and nothing past 65504.
        if (bug == AlibiBug::distance_in_dtype) distance = rounded_to(call.bias.dtype, distance);
        double value = slope * -distance;
        if (bug == AlibiBug::signed_distance && !call.causal)
          value = slope * static_cast<double>(kp - qp);
        if (call.causal && hidden && bug != AlibiBug::causal_unmasked) value = -INFINITY;
        store(call.bias, call.bias.offset(h, i, j), value);
      }
  }
}

// ---- t5 ----

enum class T5Bug {
  cap_at_n,           // min(n, …) instead of min(n − 1, …): one bucket past the end
  log_polynomial,     // ln x ≈ (x − 1) − (x − 1)²/2 with no range reduction (clamped at 0)
  zero_goes_up,       // bidirectional: rp ≥ 0 (not > 0) takes the upper half
  reversed_relative,  // rp = q − k instead of k − q
  wide_copies,        // copies each element as 4 bytes (sizeof(float)) whatever the dtype
};

int64_t t5_bucket_with(T5Bug bug, int64_t rp, const T5Call& call) {
  if (bug == T5Bug::reversed_relative) rp = -rp;
  int64_t n = call.n_buckets, bucket = 0, r = 0;
  if (call.bidirectional) {
    n /= 2;
    if (bug == T5Bug::zero_goes_up ? rp >= 0 : rp > 0) bucket = n;
    r = std::abs(rp);
  } else {
    r = std::max<int64_t>(-rp, 0);
  }
  const int64_t exact = n / 2;
  if (r < exact) return bucket + r;
  const float ratio = static_cast<float>(r) / static_cast<float>(exact);
  const float y = ratio - 1;
  const float log_ratio = bug == T5Bug::log_polynomial
                              ? y - y * y / 2
                              : static_cast<float>(std::log(static_cast<double>(ratio)));
  const auto log_span = static_cast<float>(
      std::log(static_cast<double>(call.max_distance) / static_cast<double>(exact)));
  const float steps = log_ratio / log_span * static_cast<float>(n - exact);
  const int64_t last = bug == T5Bug::cap_at_n ? n - exact : n - exact - 1;
  if (!(static_cast<double>(steps) < static_cast<double>(last))) return bucket + exact + last;
  if (!(steps > 0)) return bucket + exact;
  return bucket + exact + static_cast<int64_t>(steps);
}

void t5_with(T5Bug bug, const T5Call& call) {
  call.validate();
  const int64_t heads = call.table.shape[1];
  for (int64_t i = 0; i < call.q_positions.shape[0]; ++i) {
    const int64_t qp = load_index(call.q_positions, call.q_positions.offset(i));
    for (int64_t j = 0; j < call.k_positions.shape[0]; ++j) {
      const int64_t kp = load_index(call.k_positions, call.k_positions.offset(j));
      const int64_t b = t5_bucket_with(bug, kp - qp, call);
      for (int64_t h = 0; h < heads; ++h) {
        if (bug == T5Bug::wide_copies) {  // right for f32; 2 bytes too many for bf16 and f16
          const size_t size = dtype_size(call.bias.dtype);
          std::memcpy(call.bias.as<char>() + call.bias.offset(h, i, j) * size,
                      call.table.as<const char>() + call.table.offset(b, h) * size, 4);
          continue;
        }
        store(call.bias, call.bias.offset(h, i, j), load(call.table, call.table.offset(b, h)));
      }
    }
  }
}

}  // namespace

template <>
std::vector<Broken<SinusoidalCall>> broken_implementations<SinusoidalCall>() {
  using B = SinusoidalBug;
  auto make = [](const char* name, B bug, bool threaded = false) {
    Impl<SinusoidalCall> impl{std::string("sinusoidal/broken:") + name, kAllVariants, 1,
                              [bug](const SinusoidalCall& call) { sinusoidal_with(bug, call); }};
    impl.threaded = threaded;
    return impl;
  };
  std::vector<Broken<SinusoidalCall>> list = {
      {make("off_by_one", B::off_by_one), "reads position p + 1", "sinusoidal.pe0"},
      {make("sin_sign_flipped", B::sin_sign_flipped), "sin's sign flipped", "sinusoidal.rotation"},
      {make("omega_i_over_d", B::omega_i_over_d), "ω exponent i/d instead of 2i/d",
       "sinusoidal.offset_dot"},
      {make("no_range_reduction", B::no_range_reduction),
       "sin/cos polynomials without range reduction", "sinusoidal.range"},
      {make("f32_angles", B::f32_angles), "angles p·ω in f32: wrong at long positions",
       "sinusoidal.differential"},
      {make("chunked_f32_angles", B::chunked_f32_angles, true),
       "each thread's chunk advances its angle by a running f32 sum", "sinusoidal.threads"},
      {make("positions_in_dtype", B::positions_in_dtype),
       "converts positions to out's dtype before p·ω: wrong in bf16 and f16 only",
       "sinusoidal.differential"},
  };
  add_generic(list, "sinusoidal");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<SinusoidalCall>() {
  return {};
}

template <>
std::vector<Broken<AbsoluteCall>> broken_implementations<AbsoluteCall>() {
  using B = AbsoluteBug;
  auto make = [](const char* name, B bug) {
    return Impl<AbsoluteCall>{std::string("absolute/broken:") + name, kAllVariants, 0,
                              [bug](const AbsoluteCall& call) { absolute_with(bug, call); }};
  };
  std::vector<Broken<AbsoluteCall>> list = {
      {make("off_by_one", B::off_by_one), "reads table row p + 1",
       "absolute.same_token_two_positions"},
      {make("ignores_positions", B::ignores_positions),
       "uses the token's index in the packed batch as its position", "absolute.batch_broadcast"},
      {make("skips_tail", B::skips_tail), "SIMD-style loop that never writes the last dim % 8",
       "absolute.differential"},
      {make("clamps_positions", B::clamps_positions),
       "clamps a position past the table instead of rejecting it", "absolute.bad_input"},
      {make("table_in_dtype", B::table_in_dtype),
       "rounds the table row to x's dtype before the add (rounds twice): wrong only for bf16 or "
       "f16 x under a wider table",
       "absolute.differential"},
  };
  add_generic(list, "absolute");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<AbsoluteCall>() {
  // An elementwise add has no reduction whose order a thread count could change.
  return {{"absolute.threads",
           "sinusoidal/broken:chunked_f32_angles, attention/broken:split_keys_by_thread"}};
}

template <>
std::vector<Broken<AttentionCall>> broken_implementations<AttentionCall>() {
  using B = AttentionBug;
  auto make = [](const char* name, B bug, bool threaded = false) {
    Impl<AttentionCall> impl{std::string("attention/broken:") + name, kAllVariants, 2,
                             [bug](const AttentionCall& call) { attention_with(bug, call); }};
    impl.threaded = threaded;
    return impl;
  };
  std::vector<Broken<AttentionCall>> list = {
      {make("ignores_causal_mask", B::ignores_causal_mask), "ignores the causal mask",
       "attention.causal_not_equivariant"},
      {make("ignores_bias", B::ignores_bias), "ignores the additive (positional) bias",
       "attention.shuffle"},
      {make("skips_key_tail", B::skips_key_tail),
       "SIMD-style key loop that drops the last tk % 8 keys", "attention.permutation_equivariance"},
      {make("unstable_softmax", B::unstable_softmax),
       "softmax in f32 without subtracting the row maximum", "attention.differential"},
      {make("gqa_wrong_head", B::gqa_wrong_head), "query head h reads kv head h % hkv",
       "attention.eigen_oracle"},
      {make("split_keys_by_thread", B::split_keys_by_thread, true),
       "reduces each thread's keys in f32 and combines the partial sums in f32",
       "attention.threads"},
      {make("bias_in_activation_dtype", B::bias_in_activation_dtype),
       "reads an f32 bias as if it had the activations' dtype: wrong only under bf16 or f16",
       "attention.differential"},
      {make("weighs_hidden_values", B::weighs_hidden_values),
       "weighs a masked key by p = 0 instead of skipping it, so an ∞ in an unused KV-cache slot "
       "turns the rows that cannot see it into NaN",
       "attention.differential"},
  };
  add_generic(list, "attention");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<AttentionCall>() {
  return {};
}

template <>
std::vector<Broken<RopeFrequenciesCall>> broken_implementations<RopeFrequenciesCall>() {
  using B = FrequenciesBug;
  auto make = [](const char* name, B bug) {
    return Impl<RopeFrequenciesCall>{
        std::string("rope_frequencies/broken:") + name, kAllVariants, 2,
        [bug](const RopeFrequenciesCall& call) { frequencies_with(bug, call); }};
  };
  std::vector<Broken<RopeFrequenciesCall>> list = {
      {make("f32_inv_freq", B::f32_inv_freq), "ω held in f32, as a float32 inv_freq tensor",
       "rope_frequencies.differential"},
      {make("dynamic_always_scaled", B::dynamic_always_scaled),
       "dynamic NTK scales for f·L even while seq_len ≤ max_position",
       "rope_frequencies.dynamic_unscaled"},
      {make("yarn_ramp_unclamped", B::yarn_ramp_unclamped), "YaRN's ramp not clamped to [0, 1]",
       "rope_frequencies.yarn_between"},
      {make("llama3_no_bands", B::llama3_no_bands),
       "Llama 3's smooth blend applied outside its wavelength band",
       "rope_frequencies.llama3_between"},
  };
  add_generic(list, "rope_frequencies");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<RopeFrequenciesCall>() {
  // d/2 independent values: no reduction whose order a thread count could change.
  return {{"rope_frequencies.threads", "rope_cache/broken:chunked_f32_angles"}};
}

template <>
std::vector<Broken<RopeCacheCall>> broken_implementations<RopeCacheCall>() {
  using B = CacheBug;
  auto make = [](const char* name, B bug, bool threaded = false) {
    Impl<RopeCacheCall> impl{std::string("rope_cache/broken:") + name, kAllVariants, 1,
                             [bug](const RopeCacheCall& call) { cache_with(bug, call); }};
    impl.threaded = threaded;
    return impl;
  };
  std::vector<Broken<RopeCacheCall>> list = {
      {make("no_attention_factor", B::no_attention_factor),
       "stores cos θ and sin θ without the attention factor", "rope_cache.pythagorean"},
      {make("off_by_one", B::off_by_one), "row p holds position p + 1", "rope_cache.row0"},
      {make("omega_i_over_d", B::omega_i_over_d), "ω exponent i/d instead of 2i/d",
       "rope_cache.rotation"},
      {make("f32_angles", B::f32_angles), "angles p·ω in f32", "rope_cache.differential"},
      {make("chunked_f32_angles", B::chunked_f32_angles, true),
       "each thread's rows advance the angle by a running f32 sum", "rope_cache.threads"},
  };
  add_generic(list, "rope_cache");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<RopeCacheCall>() {
  return {};
}

template <>
std::vector<Broken<RopeCall>> broken_implementations<RopeCall>() {
  using B = RopeBug;
  auto make = [](const char* name, B bug) {
    return Impl<RopeCall>{std::string("rope/broken:") + name, kAllVariants, 1,
                          [bug](const RopeCall& call) { rope_with(bug, call); }};
  };
  std::vector<Broken<RopeCall>> list = {
      {make("off_by_one", B::off_by_one), "rotates by position p + 1", "rope.identity"},
      {make("wrong_layout", B::wrong_layout), "pairs of the other layout",
       "rope.interleaved_permutation"},
      {make("sin_sign_flipped", B::sin_sign_flipped), "sin's sign flipped", "rope.differential"},
      {make("omega_i_over_d", B::omega_i_over_d), "ω exponent i/d instead of 2i/d",
       "rope.differential"},
      {make("rotated_tail", B::rotated_tail), "rotates the pass-through tail too",
       "rope.tail_untouched"},
      {make("f32_angles", B::f32_angles), "angles p·ω in f32: wrong at long positions",
       "rope.relative"},
      {make("skips_tail_pairs", B::skips_tail_pairs),
       "SIMD-style loop that leaves the last rotary_dim/2 % 4 pairs unrotated",
       "rope.differential"},
      {make("ignores_inverse", B::ignores_inverse), "rotates forward when asked for the inverse",
       "rope.inverse"},
      {make("factor_twice", B::factor_twice), "applies the attention factor twice",
       "rope.pair_norm"},
      {make("first_position_only", B::first_position_only),
       "rotates every token by the first token's position", "rope.shuffle"},
      {make("linear_multiplies", B::linear_multiplies),
       "linear scaling multiplies ω by the factor instead of dividing",
       "rope.linear_is_position_over_factor"},
      {make("cache_row_off_by_one", B::cache_row_off_by_one), "reads cache row p + 1",
       "rope.cached_equals_on_the_fly"},
      {make("products_in_dtype", B::products_in_dtype),
       "computes in the activation dtype, as apply_rotary_pos_emb on bf16 tensors: cos, sin and "
       "each product rounded to it before the sum (rounds twice)",
       "rope.differential"},
  };
  add_generic(list, "rope");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<RopeCall>() {
  // Each token's rotation stands alone: thread nondeterminism needs a shared running quantity,
  // as in a cache built in chunks.
  return {{"rope.threads", "rope_cache/broken:chunked_f32_angles"}};
}

template <>
std::vector<Broken<AlibiCall>> broken_implementations<AlibiCall>() {
  using B = AlibiBug;
  auto make = [](const char* name, B bug) {
    return Impl<AlibiCall>{std::string("alibi/broken:") + name, kAllVariants, 1,
                           [bug](const AlibiCall& call) { alibi_with(bug, call); }};
  };
  std::vector<Broken<AlibiCall>> list = {
      {make("slopes_use_n", B::slopes_use_n),
       "slopes 2^(−8(h+1)/n): wrong when the head count is not a power of two",
       "alibi.geometric_slopes"},
      {make("signed_distance", B::signed_distance), "−slope·(q − k) without |·|",
       "alibi.distance_only"},
      {make("masks_diagonal", B::masks_diagonal), "the causal mask hides the diagonal too",
       "alibi.zero_diagonal"},
      {make("causal_unmasked", B::causal_unmasked), "the causal form without its −∞",
       "alibi.press_softmax"},
      {make("token_indices", B::token_indices), "distances between token indices, not positions",
       "alibi.differential"},
      {make("distance_in_dtype", B::distance_in_dtype),
       "converts |q_pos − k_pos| to the bias's dtype before the product: wrong in bf16 and f16 "
       "only",
       "alibi.differential"},
  };
  add_generic(list, "alibi");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<AlibiCall>() {
  // Each element stands alone: no reduction whose order a thread count could change.
  return {{"alibi.threads",
           "sinusoidal/broken:chunked_f32_angles, attention/broken:split_keys_by_thread"}};
}

template <>
std::vector<Broken<T5Call>> broken_implementations<T5Call>() {
  using B = T5Bug;
  auto make = [](const char* name, B bug) {
    return Impl<T5Call>{std::string("t5/broken:") + name, kAllVariants, 0,
                        [bug](const T5Call& call) { t5_with(bug, call); }};
  };
  std::vector<Broken<T5Call>> list = {
      {make("cap_at_n", B::cap_at_n), "caps the bucket at n instead of n − 1",
       "t5.bucket_in_range"},
      {make("log_polynomial", B::log_polynomial),
       "ln approximated by a polynomial without range reduction", "t5.monotone"},
      {make("zero_goes_up", B::zero_goes_up), "bidirectional: rp = 0 takes the upper half",
       "t5.symmetric_split"},
      {make("reversed_relative", B::reversed_relative), "rp = q − k instead of k − q",
       "t5.differential"},
      {make("wide_copies", B::wide_copies),
       "copies elements as 4-byte floats: writes past each bf16 or f16 element, f32 is right",
       "t5.guard_bytes"},
  };
  add_generic(list, "t5");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<T5Call>() {
  // A lookup: no reduction whose order a thread count could change.
  return {{"t5.threads",
           "sinusoidal/broken:chunked_f32_angles, attention/broken:split_keys_by_thread"}};
}

}  // namespace posenc::harness
