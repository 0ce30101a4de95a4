// ω_i and the attention factor for every scaling, in fp64, following Hugging Face transformers'
// modeling_rope_utils.py (_compute_*_parameters), cross-checked against vLLM's rotary_embedding/
// and ggml's rope. Where the sources disagree, the comment at the kind says which one this follows.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "reference/reference.h"

namespace posenc::reference {

namespace {

// ω_i = base^(−2i/d), the unscaled frequencies.
std::vector<double> default_frequencies(int64_t d, double base) {
  std::vector<double> omega(d / 2);
  for (int64_t i = 0; i < d / 2; ++i)
    omega[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
  return omega;
}

// NTK-aware: ω_i computed with base' = base · s^(d/(d−2)), which divides the lowest frequency by
// exactly s and leaves the highest one. (vLLM's NTKScalingRotaryEmbedding instead uses
// (base·s)^(−2i/d) / s^(2/d), which also scales the highest frequency by s^(−2/d); its
// DynamicNTKAlphaRotaryEmbedding and HF's dynamic form use this one.)
std::vector<double> ntk_frequencies(int64_t d, double base, double s) {
  const double dd = static_cast<double>(d);
  return default_frequencies(d, base * std::pow(s, dd / (dd - 2)));
}

// YaRN's magnitude correction g(f, m): 1 for f ≤ 1, else 0.1·m·ln f + 1 (HF get_mscale, vLLM
// yarn_get_mscale). HF before the mscale options computed 0.1·ln f + 1 even for f ≤ 1.
double yarn_mscale(double factor, double m) {
  return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0;
}

// The dim whose pair turns `rotations` times over the original context:
// d·ln(L₀/(2π·rotations)) / (2·ln base).
double yarn_correction_dim(double rotations, int64_t d, double base, double original) {
  return static_cast<double>(d) * std::log(original / (rotations * 2 * std::numbers::pi)) /
         (2 * std::log(base));
}

RopeFrequencies yarn(int64_t d, double base, const RopeScaling& s) {
  // The ramp runs over pair indices i in [lo, hi]: below lo a pair turns fast enough to keep its
  // frequency (extrapolation), above hi it is divided by the factor (interpolation). lo and hi
  // stay doubles: with truncate they are whole numbers, without it (GPT-OSS) they are not.
  //
  // Sources: HF and vLLM floor/ceil when `truncate` (the default) and clamp to [0, d − 1] — d, not
  // d/2 − 1, in every source, so hi may lie past the last pair and the ramp then never reaches 1.
  // For lo == hi, HF and vLLM add 0.001 to hi; ggml divides by max(0.001, hi − lo), which agrees
  // there but differs when clamping leaves hi < lo (tiny L₀): HF then ramps backwards (every pair
  // keeps ω), ggml interpolates every pair but the first. This follows HF.
  //
  // `factor` is the caller's: vLLM and HF since PR #40320 use the configured factor with
  // L₀ = original_max_position. Before that, HF overwrote the factor with
  // max_position_embeddings / original_max_position_embeddings whenever the latter was given, so
  // Qwen's 32768/32768 config with factor 4 got no scaling (HF issue #38224).
  const double original = static_cast<double>(s.original_max_position);
  double lo = yarn_correction_dim(s.beta_fast, d, base, original);
  double hi = yarn_correction_dim(s.beta_slow, d, base, original);
  if (s.truncate) {
    lo = std::floor(lo);
    hi = std::ceil(hi);
  }
  lo = std::max(lo, 0.0);
  hi = std::min(hi, static_cast<double>(d - 1));
  if (lo == hi) hi += 0.001;  // as the sources: avoid 0/0

  RopeFrequencies r{default_frequencies(d, base), 1.0};
  for (int64_t i = 0; i < d / 2; ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - lo) / (hi - lo), 0.0, 1.0);
    r.inv_freq[i] = r.inv_freq[i] / s.factor * ramp + r.inv_freq[i] * (1 - ramp);
  }
  // HF and vLLM's YaRNScalingRotaryEmbedding: the ratio only when both are set (non-zero), else
  // g(f, 1). vLLM's DeepseekScalingRotaryEmbedding always takes the ratio, with mscale_all_dim
  // defaulting to 0 (so g(f, mscale) alone); ggml multiplies attn_factor by g(f, 1) in-kernel.
  r.attention_factor =
      s.mscale != 0 && s.mscale_all_dim != 0
          ? yarn_mscale(s.factor, s.mscale) / yarn_mscale(s.factor, s.mscale_all_dim)
          : yarn_mscale(s.factor, 1);
  return r;
}

// Llama 3.1: by wavelength λ_i = 2π/ω_i against L₀/high and L₀/low. HF, vLLM and Meta's reference
// all test λ < L₀/high (keep) first, then λ > L₀/low (divide), and smooth between, boundaries
// included; the blend is continuous there (s = 1 at λ = L₀/high, s = 0 at λ = L₀/low).
std::vector<double> llama3(int64_t d, double base, const RopeScaling& s) {
  const double original = static_cast<double>(s.original_max_position);
  const double high_wavelength = original / s.high_freq_factor;
  const double low_wavelength = original / s.low_freq_factor;
  std::vector<double> omega = default_frequencies(d, base);
  for (double& w : omega) {
    const double wavelength = 2 * std::numbers::pi / w;
    if (wavelength < high_wavelength) continue;
    if (wavelength > low_wavelength) {
      w /= s.factor;
      continue;
    }
    const double smooth =
        (original / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    w = (1 - smooth) * w / s.factor + smooth * w;
  }
  return omega;
}

// LongRoPE (Phi-3): per-pair rescale factors, the long ones once the sequence outgrows L₀.
// Sources differ on that choice: recent HF picks long_factor when seq_len > L₀ (per call); HF
// 4.4x picked it when max_position_embeddings > L₀, i.e. statically for any extended model; vLLM
// picks it statically when max_model_len > L₀. All three are this rule with seq_len set to the
// length in question. The attention factor's f is the caller's: HF and vLLM derive it as
// max_position_embeddings / L₀ when the config has original_max_position_embeddings.
RopeFrequencies longrope(int64_t d, double base, const RopeScaling& s) {
  const std::vector<double>& ext =
      s.seq_len > s.original_max_position ? s.long_factor : s.short_factor;
  RopeFrequencies r{default_frequencies(d, base), 1.0};
  for (int64_t i = 0; i < d / 2; ++i) r.inv_freq[i] /= ext[i];
  if (s.factor > 1)
    r.attention_factor =
        std::sqrt(1 + std::log(s.factor) / std::log(static_cast<double>(s.original_max_position)));
  return r;
}

}  // namespace

RopeFrequencies frequencies(int64_t d, double base, const RopeScaling& s) {
  s.validate(d, base);
  RopeFrequencies r;
  switch (s.kind) {
    case RopeScalingKind::none:
      r.inv_freq = default_frequencies(d, base);
      break;
    case RopeScalingKind::linear:
      // Position interpolation: p/f, folded into ω (HF divides inv_freq by the factor).
      r.inv_freq = default_frequencies(d, base);
      for (double& w : r.inv_freq) w /= s.factor;
      break;
    case RopeScalingKind::ntk:
      r.inv_freq = ntk_frequencies(d, base, s.alpha);
      break;
    case RopeScalingKind::dynamic_ntk: {
      // HF: s = max(seq_len, L), base' = base·(f·s/L − (f − 1))^(d/(d−2)): unscaled while
      // seq_len ≤ L. vLLM's DynamicNTKScalingRotaryEmbedding builds one static cache, and its
      // formula has changed between versions (vLLM issue #41236): where it computes
      // f·max_len/L − (f − 1) with max_len = f·L, seq_len = f·L here matches it.
      const double L = static_cast<double>(s.max_position);
      const double len = std::max(static_cast<double>(s.seq_len), L);
      r.inv_freq = ntk_frequencies(d, base, s.factor * len / L - (s.factor - 1));
      break;
    }
    case RopeScalingKind::yarn:
      r = yarn(d, base, s);
      break;
    case RopeScalingKind::llama3:
      r.inv_freq = llama3(d, base, s);
      break;
    case RopeScalingKind::longrope:
      r = longrope(d, base, s);
      break;
  }
  if (!std::isnan(s.attention_factor)) r.attention_factor = s.attention_factor;
  return r;
}

void rope_frequencies(const RopeFrequenciesCall& call) {
  call.validate();
  const RopeFrequencies r = frequencies(call.rotary_dim, call.base, call.scaling);
  for (int64_t i = 0; i < call.rotary_dim / 2; ++i)
    store(call.inv_freq, call.inv_freq.offset(i), r.inv_freq[i]);
  store(call.attention_factor, 0, r.attention_factor);
}

}  // namespace posenc::reference
