// rope_frequencies: outputs, tolerance model, problems, and what every rope family's problems
// share (example scalings, vLLM's cache layout).
#include <fmt/format.h>

#include <cmath>

#include "properties/harness.h"

namespace posenc::harness {

RopeScaling example_scaling(RopeScalingKind kind, int64_t rotary_dim) {
  RopeScaling s;
  s.kind = kind;
  switch (kind) {
    case RopeScalingKind::none:
      break;
    case RopeScalingKind::linear:
      s.factor = 4;
      break;
    case RopeScalingKind::ntk:
      s.alpha = 8;
      break;
    case RopeScalingKind::dynamic_ntk:
      s.factor = 2;
      s.max_position = 2048;
      s.seq_len = 8192;
      break;
    case RopeScalingKind::yarn:  // DeepSeek-V3's, with mscale_all_dim changed so the ratio is ≠ 1
      s.factor = 40;
      s.original_max_position = 4096;
      s.mscale = 1.0;
      s.mscale_all_dim = 0.8;
      break;
    case RopeScalingKind::llama3:  // Llama 3.1
      s.factor = 8;
      s.original_max_position = 8192;
      break;
    case RopeScalingKind::longrope:  // Phi-3-style: 4k → 128k, rising per-pair factors
      s.factor = 32;
      s.original_max_position = 4096;
      s.seq_len = 8192;
      for (int64_t i = 0; i < rotary_dim / 2; ++i) {
        s.short_factor.push_back(1 + 0.05 * static_cast<double>(i));
        s.long_factor.push_back(1 + 2.0 * static_cast<double>(i));
      }
      break;
  }
  return s;
}

std::pair<Tensor, Tensor> vllm_cache(Arena& arena, int64_t rows, int64_t d) {
  const Tensor both = arena.alloc(DType::f32, {rows, d});
  return {view(both.data, DType::f32, {rows, d / 2}, {d, 1}),
          view(both.as<float>() + d / 2, DType::f32, {rows, d / 2}, {d, 1})};
}

std::vector<Tensor> outputs(const RopeFrequenciesCall& call) {
  return {call.inv_freq, call.attention_factor};
}

Comparison compare(const RopeFrequenciesCall& expected, const RopeFrequenciesCall& got,
                   double bound) {
  // Unit: ulp_f64(ref), see rope_frequencies.h.
  auto unit_of = [](const Tensor& ref) {
    return [&ref](const int64_t* ix) { return ulp_f64(load(ref, ref.offset(ix[0]))); };
  };
  Comparison c = harness::compare("inv_freq", expected.inv_freq, got.inv_freq, bound,
                                  unit_of(expected.inv_freq));
  c.merge(harness::compare("attention_factor", expected.attention_factor, got.attention_factor,
                           bound, unit_of(expected.attention_factor)));
  return c;
}

namespace {

Problem<RopeFrequenciesCall> frequencies_problem(int64_t d, double base, RopeScaling scaling) {
  return {fmt::format("rotary_dim={} base={} {}", d, base, scaling.describe()), [=](Arena& arena) {
            return RopeFrequenciesCall{.rotary_dim = d,
                                       .base = base,
                                       .scaling = scaling,
                                       .inv_freq = arena.alloc(DType::f64, {d / 2}),
                                       .attention_factor = arena.alloc(DType::f64, {1})};
          }};
}

}  // namespace

template <>
std::vector<Problem<RopeFrequenciesCall>> smoke_problems<RopeFrequenciesCall>() {
  using K = RopeScalingKind;
  std::vector<Problem<RopeFrequenciesCall>> problems;
  for (K kind : {K::none, K::linear, K::ntk, K::dynamic_ntk, K::yarn, K::llama3, K::longrope})
    problems.push_back(
        frequencies_problem(128, kind == K::llama3 ? 500000 : 10000, example_scaling(kind, 128)));
  RopeScaling gpt_oss = example_scaling(K::yarn, 64);  // GPT-OSS: no truncation, no mscale
  gpt_oss.factor = 32;
  gpt_oss.mscale = gpt_oss.mscale_all_dim = 0;
  gpt_oss.truncate = false;
  problems.push_back(frequencies_problem(64, 150000, gpt_oss));
  RopeScaling short_rope = example_scaling(K::longrope, 96);
  short_rope.seq_len = 4096;  // not past original_max_position: short factors
  problems.push_back(frequencies_problem(96, 10000, short_rope));
  RopeScaling dynamic_short = example_scaling(K::dynamic_ntk, 32);
  dynamic_short.seq_len = 100;  // below max_position: unscaled
  problems.push_back(frequencies_problem(32, 10000, dynamic_short));
  RopeScaling explicit_factor = example_scaling(K::linear, 6);
  explicit_factor.attention_factor = 0.5;
  problems.push_back(frequencies_problem(6, 10000, explicit_factor));
  return problems;
}

}  // namespace posenc::harness
