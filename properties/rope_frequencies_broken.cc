// rope_frequencies's broken kernels for the self-test (selftest.h), beside its properties
// (properties/rope_frequencies.cc). Each computes in fp64 and rounds once, like the reference, so
// that the bug is the only thing wrong with it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "posenc/error.h"
#include "properties/harness.h"
#include "properties/selftest.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace {

enum class FrequenciesBug {
  f32_inv_freq,           // ω rounded to f32, as a float32 tensor holds it
  dynamic_always_scaled,  // dynamic NTK scaled for f·L whatever seq_len (a static cache's form)
  yarn_ramp_unclamped,    // YaRN's ramp not clamped to [0, 1]
  llama3_no_bands,        // Llama 3's smooth blend applied to every wavelength
  longrope_long_at_l0,    // LongRoPE's long factors already at seq_len = L₀ (≥ for >)
  yarn_mscale_below_one,  // YaRN's g(f, m) = 0.1·m·ln f + 1 for f < 1 too (HF before mscale)
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
  if (bug == FrequenciesBug::longrope_long_at_l0 && s.kind == RopeScalingKind::longrope &&
      s.seq_len == s.original_max_position)
    for (int64_t i = 0; i < half; ++i) r.inv_freq[i] = omega(i, call.base) / s.long_factor[i];
  if (bug == FrequenciesBug::yarn_mscale_below_one && s.kind == RopeScalingKind::yarn &&
      s.factor < 1 && std::isnan(s.attention_factor)) {
    auto g = [&](double m) { return 0.1 * m * std::log(s.factor) + 1; };
    r.attention_factor =
        s.mscale != 0 && s.mscale_all_dim != 0 ? g(s.mscale) / g(s.mscale_all_dim) : g(1);
  }
  for (int64_t i = 0; i < half; ++i) store(call.inv_freq, call.inv_freq.offset(i), r.inv_freq[i]);
  store(call.attention_factor, 0, r.attention_factor);
}

}  // namespace

template <>
std::vector<Broken<RopeFrequenciesCall>> broken_implementations<RopeFrequenciesCall>() {
  using B = FrequenciesBug;
  auto make = [](const char* name, B bug) {
    return broken_kernel<RopeFrequenciesCall>(name, bug, frequencies_with, 2);
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
      {make("longrope_long_at_l0", B::longrope_long_at_l0),
       "LongRoPE switches to its long factors at seq_len = L₀ already (≥ for >)",
       "rope_frequencies.differential"},
      {make("yarn_mscale_below_one", B::yarn_mscale_below_one),
       "YaRN's derived attention factor 0.1·m·ln f + 1 for factors below 1 too (old HF)",
       "rope_frequencies.differential"},
  };
  add_generic(list, "rope_frequencies");
  return list;
}

template <>
std::vector<std::pair<std::string, std::string>> killed_elsewhere<RopeFrequenciesCall>() {
  // d/2 independent values: no reduction whose order a thread count could change.
  return {{"rope_frequencies.threads", "rope_cache/broken:chunked_f32_angles"}};
}

}  // namespace posenc::harness
