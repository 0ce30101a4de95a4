#include "posenc/rope_frequencies.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "posenc/error.h"

namespace posenc {

const char* scaling_name(RopeScalingKind kind) {
  switch (kind) {
    case RopeScalingKind::none:
      return "none";
    case RopeScalingKind::linear:
      return "linear";
    case RopeScalingKind::ntk:
      return "ntk";
    case RopeScalingKind::dynamic_ntk:
      return "dynamic_ntk";
    case RopeScalingKind::yarn:
      return "yarn";
    case RopeScalingKind::llama3:
      return "llama3";
    case RopeScalingKind::longrope:
      return "longrope";
  }
  return "?";
}

namespace {

void require_positive(double value, std::string_view name) {
  POSENC_REQUIRE(std::isfinite(value) && value > 0, std::string(name), value,
                 "must be finite and > 0");
}

// A factor that divides the frequencies: with base >= 1 every ω stays <= 8 rad per position, so
// angles p·ω stay below 2²⁷, where the fp64 oracle's angle error (about p·ω·2⁻⁵³) is a fraction of
// an f32 ulp and no ω overflows a double.
constexpr double kMinDivisor = 0.125;

void require_divisor(double value, std::string_view name) {
  POSENC_REQUIRE(std::isfinite(value) && value >= kMinDivisor, std::string(name), value,
                 "must be finite and >= 1/8: frequencies stay <= 8 rad per position");
}

void require_factors(const std::vector<double>& factors, std::string_view name, int64_t half) {
  POSENC_REQUIRE(static_cast<int64_t>(factors.size()) == half, std::string(name) + ".size",
                 factors.size(), "must be rotary_dim/2 = " + std::to_string(half));
  for (size_t i = 0; i < factors.size(); ++i)
    require_divisor(factors[i], std::string(name) + "[" + std::to_string(i) + "]");
}

}  // namespace

void RopeScaling::validate(int64_t rotary_dim, double base) const {
  POSENC_REQUIRE(rotary_dim >= 2 && rotary_dim % 2 == 0, "rotary_dim", rotary_dim,
                 "must be even and >= 2");
  POSENC_REQUIRE(std::isfinite(base) && base >= 1, "base", base,
                 "must be finite and >= 1: frequencies base^(-2i/d) stay <= 1");
  POSENC_REQUIRE(
      std::isnan(attention_factor) || (std::isfinite(attention_factor) && attention_factor > 0),
      "scaling.attention_factor", attention_factor, "must be finite and > 0, or NaN (derived)");
  switch (kind) {
    case RopeScalingKind::none:
      return;
    case RopeScalingKind::linear:
      require_divisor(factor, "scaling.factor");
      return;
    case RopeScalingKind::ntk:
      require_divisor(alpha, "scaling.alpha");
      POSENC_REQUIRE(rotary_dim > 2, "rotary_dim", rotary_dim,
                     "ntk needs > 2: base scales by d/(d-2)");
      return;
    case RopeScalingKind::dynamic_ntk:
      require_positive(factor, "scaling.factor");
      POSENC_REQUIRE(rotary_dim > 2, "rotary_dim", rotary_dim,
                     "dynamic_ntk needs > 2: base scales by d/(d-2)");
      POSENC_REQUIRE(max_position >= 1, "scaling.max_position", max_position, "must be >= 1");
      POSENC_REQUIRE(seq_len >= 0, "scaling.seq_len", seq_len, "must be >= 0");
      return;
    case RopeScalingKind::yarn:
      require_divisor(factor, "scaling.factor");
      POSENC_REQUIRE(base != 1.0, "base", base, "yarn divides by ln(base)");
      POSENC_REQUIRE(original_max_position >= 1, "scaling.original_max_position",
                     original_max_position, "must be >= 1");
      require_positive(beta_slow, "scaling.beta_slow");
      POSENC_REQUIRE(std::isfinite(beta_fast) && beta_fast > beta_slow, "scaling.beta_fast",
                     beta_fast, "must be finite and > beta_slow = " + std::to_string(beta_slow));
      POSENC_REQUIRE(std::isfinite(mscale) && mscale >= 0, "scaling.mscale", mscale,
                     "must be finite and >= 0 (0: unset)");
      POSENC_REQUIRE(std::isfinite(mscale_all_dim) && mscale_all_dim >= 0, "scaling.mscale_all_dim",
                     mscale_all_dim, "must be finite and >= 0 (0: unset)");
      return;
    case RopeScalingKind::llama3:
      require_divisor(factor, "scaling.factor");
      POSENC_REQUIRE(original_max_position >= 1, "scaling.original_max_position",
                     original_max_position, "must be >= 1");
      require_positive(low_freq_factor, "scaling.low_freq_factor");
      POSENC_REQUIRE(std::isfinite(high_freq_factor) && high_freq_factor > low_freq_factor,
                     "scaling.high_freq_factor", high_freq_factor,
                     "must be finite and > low_freq_factor = " + std::to_string(low_freq_factor));
      return;
    case RopeScalingKind::longrope:
      require_positive(factor, "scaling.factor");
      POSENC_REQUIRE(original_max_position >= 2, "scaling.original_max_position",
                     original_max_position,
                     "must be >= 2: the attention factor divides by its log");
      POSENC_REQUIRE(seq_len >= 0, "scaling.seq_len", seq_len, "must be >= 0");
      require_factors(short_factor, "scaling.short_factor", rotary_dim / 2);
      require_factors(long_factor, "scaling.long_factor", rotary_dim / 2);
      return;
  }
  POSENC_REQUIRE(false, "scaling.kind", static_cast<int>(kind), "is not a known scaling");
}

std::string RopeScaling::describe() const {
  char text[256];
  switch (kind) {
    case RopeScalingKind::none:
      return "none";
    case RopeScalingKind::linear:
      std::snprintf(text, sizeof text, "linear(factor=%g)", factor);
      break;
    case RopeScalingKind::ntk:
      std::snprintf(text, sizeof text, "ntk(alpha=%g)", alpha);
      break;
    case RopeScalingKind::dynamic_ntk:
      std::snprintf(text, sizeof text, "dynamic_ntk(factor=%g, max_position=%lld, seq_len=%lld)",
                    factor, static_cast<long long>(max_position), static_cast<long long>(seq_len));
      break;
    case RopeScalingKind::yarn:
      std::snprintf(text, sizeof text,
                    "yarn(factor=%g, original_max_position=%lld, beta_fast=%g, beta_slow=%g, "
                    "mscale=%g, mscale_all_dim=%g, truncate=%d)",
                    factor, static_cast<long long>(original_max_position), beta_fast, beta_slow,
                    mscale, mscale_all_dim, truncate ? 1 : 0);
      break;
    case RopeScalingKind::llama3:
      // The band factors in full: a generated one puts L₀/factor on a wavelength to the last bit.
      std::snprintf(text, sizeof text,
                    "llama3(factor=%g, low_freq_factor=%.17g, high_freq_factor=%.17g, "
                    "original_max_position=%lld)",
                    factor, low_freq_factor, high_freq_factor,
                    static_cast<long long>(original_max_position));
      break;
    case RopeScalingKind::longrope:
      std::snprintf(text, sizeof text,
                    "longrope(factor=%g, original_max_position=%lld, seq_len=%lld, %zu factors)",
                    factor, static_cast<long long>(original_max_position),
                    static_cast<long long>(seq_len), short_factor.size());
      break;
    default:
      return "?";
  }
  std::string s = text;
  if (!std::isnan(attention_factor)) s += " attention_factor=" + std::to_string(attention_factor);
  return s;
}

void RopeFrequenciesCall::validate() const {
  check_threads(threads);
  scaling.validate(rotary_dim, base);
  check_view(inv_freq, "inv_freq", 1, {DType::f64});
  check_dim(inv_freq, "inv_freq", 0, rotary_dim / 2);
  check_view(attention_factor, "attention_factor", 1, {DType::f64});
  check_dim(attention_factor, "attention_factor", 0, 1);
  check_view_overlaps(*this);
  check_no_overlap(inv_freq, "inv_freq", attention_factor, "attention_factor");
}

uint64_t RopeFrequenciesCall::required_variants() const {
  return variant::scaling_bit(scaling.kind) | view_variants({&inv_freq, &attention_factor});
}

}  // namespace posenc
