// rope_frequencies: ω_i and the attention factor for every scaling, written from the formulas in
// rope_frequencies.h (Hugging Face transformers' modeling_rope_utils.py), independently of the
// reference. Scalar double: d/2 values, nothing to vectorize; rope and rope_cache reuse it.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "optimized/angles.h"
#include "optimized/optimized.h"

namespace posenc::optimized {

namespace {

// ω_i = base^(−2i/d), i < d/2.
std::vector<double> default_frequencies(int64_t d, double base) {
  std::vector<double> omega(d / 2);
  for (int64_t i = 0; i < d / 2; ++i) {
    omega[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
  }
  return omega;
}

// YaRN's mscale: 1 up to factor 1, then 0.1·m·ln f + 1.
double yarn_mscale(double factor, double m) {
  return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0;
}

Frequencies yarn(int64_t d, double base, const RopeScaling& s) {
  const double dd = static_cast<double>(d), f = s.factor;
  const double original = static_cast<double>(s.original_max_position);
  // The dimension whose wavelength turns n times over the original context.
  const auto correction_dim = [&](double n) {
    return (dd * std::log(original / (n * 2 * std::numbers::pi))) / (2 * std::log(base));
  };
  double lo = correction_dim(s.beta_fast), hi = correction_dim(s.beta_slow);
  if (s.truncate) {
    lo = std::floor(lo);
    hi = std::ceil(hi);
  }
  lo = std::max(lo, 0.0);
  hi = std::min(hi, dd - 1);
  if (lo == hi) hi += 0.001;  // avoid a zero-width ramp
  Frequencies out{default_frequencies(d, base), yarn_mscale(f, 1.0)};
  for (int64_t i = 0; i < d / 2; ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - lo) / (hi - lo), 0.0, 1.0);
    const double omega = out.inv_freq[i];
    out.inv_freq[i] = omega / f * ramp + omega * (1 - ramp);
  }
  if (s.mscale != 0 && s.mscale_all_dim != 0) {
    out.attention_factor = yarn_mscale(f, s.mscale) / yarn_mscale(f, s.mscale_all_dim);
  }
  return out;
}

Frequencies llama3(int64_t d, double base, const RopeScaling& s) {
  const double old_context = static_cast<double>(s.original_max_position);
  const double low_wavelength = old_context / s.low_freq_factor;
  const double high_wavelength = old_context / s.high_freq_factor;
  Frequencies out{default_frequencies(d, base), 1.0};
  for (double& omega : out.inv_freq) {
    const double wavelength = 2 * std::numbers::pi / omega;
    if (wavelength < high_wavelength) continue;  // high frequencies stay
    if (wavelength > low_wavelength) {
      omega /= s.factor;  // low frequencies are interpolated
      continue;
    }
    const double smooth =
        (old_context / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    omega = (1 - smooth) * omega / s.factor + smooth * omega;
  }
  return out;
}

Frequencies longrope(int64_t d, double base, const RopeScaling& s) {
  const std::vector<double>& ext =
      s.seq_len > s.original_max_position ? s.long_factor : s.short_factor;
  // ω_i / ext_i rather than 1 / (ext_i · base^(2i/d)): that product overflows to ∞ (and ω_i to 0)
  // where the quotient is a subnormal, e.g. ext_i = 1e300 (found by the rope_frequencies fuzz
  // campaign).
  Frequencies out{default_frequencies(d, base), 1.0};
  for (int64_t i = 0; i < d / 2; ++i) out.inv_freq[i] /= ext[i];
  if (s.factor > 1) {
    out.attention_factor =
        std::sqrt(1 + std::log(s.factor) / std::log(static_cast<double>(s.original_max_position)));
  }
  return out;
}

}  // namespace

Frequencies compute_frequencies(int64_t d, double base, const RopeScaling& s) {
  const double exponent = static_cast<double>(d) / static_cast<double>(d - 2);  // ntk kinds
  Frequencies out;
  switch (s.kind) {
    case RopeScalingKind::none:
      out = {default_frequencies(d, base), 1.0};
      break;
    case RopeScalingKind::linear:
      out = {default_frequencies(d, base), 1.0};
      for (double& omega : out.inv_freq) omega /= s.factor;
      break;
    case RopeScalingKind::ntk:
      out = {default_frequencies(d, base * std::pow(s.alpha, exponent)), 1.0};
      break;
    case RopeScalingKind::dynamic_ntk: {
      const double length = static_cast<double>(std::max(s.seq_len, s.max_position));
      const double grown = s.factor * length / static_cast<double>(s.max_position) - (s.factor - 1);
      out = {default_frequencies(d, base * std::pow(grown, exponent)), 1.0};
      break;
    }
    case RopeScalingKind::yarn:
      out = yarn(d, base, s);
      break;
    case RopeScalingKind::llama3:
      out = llama3(d, base, s);
      break;
    case RopeScalingKind::longrope:
      out = longrope(d, base, s);
      break;
  }
  if (!std::isnan(s.attention_factor)) out.attention_factor = s.attention_factor;
  return out;
}

namespace {

void run_rope_frequencies(const RopeFrequenciesCall& call) {
  call.validate();
  const Frequencies f = compute_frequencies(call.rotary_dim, call.base, call.scaling);
  for (int64_t i = 0; i < call.rotary_dim / 2; ++i) {
    call.inv_freq.as<double>()[call.inv_freq.offset(i)] = f.inv_freq[i];
  }
  call.attention_factor.as<double>()[0] = f.attention_factor;
}

}  // namespace

// Scalar double, the formulas of rope_frequencies.h written independently of the reference: a
// formula evaluated in another order than the reference's differs by a few ulp_f64. Bound 4.
std::vector<Impl<RopeFrequenciesCall>> rope_frequencies() {
  return {{.name = "rope_frequencies/optimized",
           .variants = variant::all_scalings | variant::strided,
           .bound = 4,
           .run = run_rope_frequencies}};
}

}  // namespace posenc::optimized
