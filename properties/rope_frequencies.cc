// rope_frequencies: outputs, tolerance model, problems, and what every rope family's problems
// share (example scalings, vLLM's cache layout).
#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "properties/generic.h"
#include "reference/reference.h"

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

std::pair<Tensor, Tensor> vllm_cache(Arena& arena, int64_t rows, int64_t d, DType dtype) {
  const Tensor both = arena.alloc(dtype, {rows, d});
  return {view(both.data, dtype, {rows, d / 2}, {d, 1}),
          view(both.as<char>() + d / 2 * dtype_size(dtype), dtype, {rows, d / 2}, {d, 1})};
}

namespace {

// Llama 3's pair wavelengths λ_i = 2π/ω_i, computed as the reference computes them, so that a
// generated threshold L₀/factor is hit bit for bit.
std::vector<double> wavelengths(int64_t d, double base) {
  std::vector<double> w(d / 2);
  for (int64_t i = 0; i < d / 2; ++i)
    w[i] = 2 * std::numbers::pi /
           std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
  return w;
}

}  // namespace

void classify_switches(const RopeScaling& s, int64_t d, double base) {
  using K = RopeScalingKind;
  if (s.kind == K::llama3) {
    // HF's bands: λ < L₀/high keeps ω, λ > L₀/low divides it, both ends themselves blend.
    const double original = static_cast<double>(s.original_max_position);
    bool at = false, beside = false;
    for (double w : wavelengths(d, base))
      for (double t : {original / s.high_freq_factor, original / s.low_freq_factor}) {
        at |= w == t;
        beside |= w == std::nextafter(t, 0.0) || w == std::nextafter(t, INFINITY);
      }
    RC_CLASSIFY(at, "llama3 wavelength at its threshold");
    RC_CLASSIFY(beside, "llama3 wavelength one ulp beside its threshold");
  }
  const int64_t at = s.kind == K::dynamic_ntk ? s.max_position
                     : s.kind == K::longrope  ? s.original_max_position
                                              : -1;
  RC_CLASSIFY(at >= 0 && s.seq_len == at, "seq_len at its switch");
  RC_CLASSIFY(at >= 0 && (s.seq_len == at - 1 || s.seq_len == at + 1), "seq_len beside its switch");
  RC_CLASSIFY(s.kind == K::yarn && s.factor <= 1 && std::isnan(s.attention_factor),
              "yarn factor <= 1, derived attention factor");
  RC_CLASSIFY(s.kind == K::yarn && s.factor <= 1 && !std::isnan(s.attention_factor),
              "yarn factor <= 1, explicit attention factor");
}

namespace gen {

rc::Gen<double> rope_base() {
  return rc::gen::weightedOneOf<double>({
      {3, rc::gen::element(10000.0, 500000.0, 1e6)},
      {1, rc::gen::map(uniform(11, 100000000), [](int64_t b) { return b / 10.0; })},
  });
}

namespace {

// A factor as configs have them: 1, whole numbers up to 64, or eighths from 1/8 up.
rc::Gen<double> factor() {
  return rc::gen::weightedOneOf<double>({
      {1, rc::gen::just(1.0)},
      {3, rc::gen::map(uniform(2, 64), [](int64_t f) { return static_cast<double>(f); })},
      {1, rc::gen::map(uniform(1, 40), [](int64_t f) { return f / 8.0; })},
  });
}

rc::Gen<double> eighths(int64_t lo, int64_t hi) {
  return rc::gen::map(uniform(lo, hi), [](int64_t k) { return k / 8.0; });
}

// YaRN's factor: at or below 1 (where g(f, m) = 1, which old HF did not clamp) in about 2 cases
// in 5, else as factor() (yarn_between still needs factors above 1 in half its cases).
rc::Gen<double> yarn_factor() {
  return rc::gen::weightedOneOf<double>({{1, eighths(1, 8)}, {4, factor()}});
}

// A length compared against `threshold` by a formula that switches there (LongRoPE's long
// factors, dynamic NTK's rescaling): exactly it in 1 case in 3, one either side in 1 in 6, else
// anywhere in [0, 4·threshold].
rc::Gen<int64_t> around(int64_t threshold) {
  return rc::gen::weightedOneOf<int64_t>({
      {2, rc::gen::just(threshold)},
      {1, rc::gen::element(threshold - 1, threshold + 1)},
      {3, uniform(0, 4 * threshold)},
  });
}

// A factor x with L₀/x == t exactly, or NaN: the quotient moves by about an ulp of t per ulp of x,
// so one of L₀/t's neighbours usually has it (an ulp of t may be skipped).
double factor_for_wavelength(double original, double t) {
  double up = original / t, down = up;
  for (int step = 0; step < 4; ++step) {
    if (original / up == t) return up;
    if (original / down == t) return down;
    up = std::nextafter(up, INFINITY);
    down = std::nextafter(down, 0.0);
  }
  return NAN;
}

// Llama 3's factors chosen from the wavelengths (base, rotary dim d): in 3 cases in 4, L₀/high,
// L₀/low or both land on a pair's λ_j exactly (2 cases in 3) or one ulp beside it, so that the
// band tests λ < L₀/high and λ > L₀/low meet equality and both its neighbours.
void llama3_at_wavelengths(RopeScaling& s, int64_t d, double base) {
  if (!*rc::gen::weightedElement<bool>({{1, false}, {3, true}})) return;
  const std::vector<double> w = wavelengths(d, base);
  const auto pairs = static_cast<int64_t>(w.size());
  const int64_t which = *uniform(0, pairs > 1 ? 2 : 1);  // 0 high, 1 low, 2 both
  // Both: high's pair before low's, whose wavelength is longer (base > 1), so low < high.
  const int64_t j = *uniform(0, pairs - (which == 2 ? 2 : 1));
  const int64_t k = which == 2 ? *uniform(j + 1, pairs - 1) : j;
  const double original = static_cast<double>(s.original_max_position);
  auto factor_at = [&](int64_t i, double& factor) {
    const int64_t ulps = *rc::gen::element<int64_t>(0, 0, -1, 1);
    const double t = ulps == 0 ? w[i] : std::nextafter(w[i], ulps < 0 ? 0.0 : INFINITY);
    const double x = factor_for_wavelength(original, t);
    if (!std::isnan(x)) factor = x;
  };
  if (which != 1) factor_at(j, s.high_freq_factor);
  if (which != 0) factor_at(k, s.low_freq_factor);
  // The factor left as drawn may now be on the wrong side of the other: moved to keep low < high.
  if (!(s.low_freq_factor < s.high_freq_factor)) {
    if (which == 1)
      s.high_freq_factor = 2 * s.low_freq_factor;
    else
      s.low_freq_factor = s.high_freq_factor / 2;
  }
}

}  // namespace

rc::Gen<RopeScaling> scaling(RopeScalingKind kind, int64_t d, double base) {
  return rc::gen::exec([=] {
    RopeScaling s;
    s.kind = kind;
    switch (kind) {
      case RopeScalingKind::none:
        break;
      case RopeScalingKind::linear:
        s.factor = *factor();
        break;
      case RopeScalingKind::ntk:
        s.alpha = *factor();
        break;
      case RopeScalingKind::dynamic_ntk:
        s.factor = *factor();
        s.max_position = *uniform(1, 8192);
        s.seq_len = *around(s.max_position);
        break;
      case RopeScalingKind::yarn:
        s.factor = *yarn_factor();
        s.original_max_position = *uniform(1, 131072);
        s.beta_slow = *eighths(1, 16);
        s.beta_fast = s.beta_slow + *uniform(1, 64);
        s.mscale = *rc::gen::element(0.0, 0.707, 1.0, 1.2);
        s.mscale_all_dim = *rc::gen::element(0.0, 0.707, 1.0);
        // A kernel may declare it always rounds the range (ggml; HF's truncate = true).
        s.truncate = !declared().has(variant::yarn_untruncated) || *rc::gen::arbitrary<bool>();
        break;
      case RopeScalingKind::llama3:
        s.factor = *factor();
        s.original_max_position = *uniform(256, 16384);
        s.low_freq_factor = *eighths(1, 16);
        s.high_freq_factor = s.low_freq_factor + *eighths(1, 32);
        llama3_at_wavelengths(s, d, base);
        break;
      case RopeScalingKind::longrope: {
        s.factor = *factor();
        s.original_max_position = *uniform(2, 16384);
        s.seq_len = *around(s.original_max_position);
        const auto per_pair = rc::gen::container<std::vector<double>>(d / 2, eighths(1, 512));
        s.short_factor = *per_pair;
        s.long_factor = *per_pair;
        break;
      }
    }
    if (*rc::gen::weightedElement<bool>({{5, false}, {1, true}}))
      s.attention_factor = *rc::gen::map(uniform(1, 32), [](int64_t k) { return k / 16.0; });
    return s;
  });
}

rc::Gen<RopeScaling> any_scaling(int64_t d, double base) {
  using K = RopeScalingKind;
  auto kinds = d > 2 ? rc::gen::element(K::none, K::linear, K::ntk, K::dynamic_ntk, K::yarn,
                                        K::llama3, K::longrope)
                     : rc::gen::element(K::none, K::linear, K::yarn, K::llama3, K::longrope);
  return rc::gen::mapcat(kinds, [d, base](K kind) { return scaling(kind, d, base); });
}

rc::Gen<RopeScaling> declared_scaling(int64_t d, double base) {
  using K = RopeScalingKind;
  if (declared().has(variant::all_scalings)) return any_scaling(d, base);
  std::vector<K> kinds;
  for (K kind : {K::none, K::linear, K::ntk, K::dynamic_ntk, K::yarn, K::llama3, K::longrope})
    if (declared().has(variant::scaling_bit(kind)) &&
        (d > 2 || (kind != K::ntk && kind != K::dynamic_ntk)))
      kinds.push_back(kind);
  if (kinds.empty()) return any_scaling(d, base);
  return rc::gen::mapcat(rc::gen::elementOf(kinds),
                         [d, base](K kind) { return scaling(kind, d, base); });
}

}  // namespace gen

Comparison compare(const RopeFrequenciesCall& expected, const RopeFrequenciesCall& got,
                   const Bound& bound) {
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

// One frequencies problem. Layout slots: inv_freq, attention_factor.
struct FrequenciesSpec {
  int64_t d = 2;
  double base = 10000;
  RopeScaling scaling;
  Layouts layouts = uniform_layouts(Layout::contiguous);
};

void showValue(const FrequenciesSpec& s, std::ostream& os) {
  os << fmt::format("rotary_dim={} base={} {}", s.d, s.base, s.scaling.describe());
  if (any_strided(s.layouts))
    os << fmt::format(" layouts {} {}", layout_name(s.layouts[0]), layout_name(s.layouts[1]));
}

RopeFrequenciesCall build(const FrequenciesSpec& s, Arena& arena) {
  return RopeFrequenciesCall{.rotary_dim = s.d,
                             .base = s.base,
                             .scaling = s.scaling,
                             .inv_freq = arena.alloc(DType::f64, {s.d / 2}, s.layouts[0]),
                             .attention_factor = arena.alloc(DType::f64, {1}, s.layouts[1])};
}

// Under a pin (PinnedRope, property.h) the model's rotary_dim, base and scaling.
void apply_pin(FrequenciesSpec& s) {
  const PinnedRope* pin = pinned_rope();
  if (!pin) return;
  s.d = pin->rotary_dim;
  s.base = pin->base;
  s.scaling = pin->scaling;
}

// `kind`: one scaling kind, or any when absent.
rc::Gen<FrequenciesSpec> frequencies_spec(std::optional<RopeScalingKind> kind) {
  return rc::gen::exec([=] {
    FrequenciesSpec s;
    s.d = 2 * *gen::sized(1, 128);
    if (kind == RopeScalingKind::ntk || kind == RopeScalingKind::dynamic_ntk)
      s.d = std::max<int64_t>(s.d, 4);
    s.base = *gen::rope_base();
    s.scaling = kind ? *gen::scaling(*kind, s.d, s.base) : *gen::any_scaling(s.d, s.base);
    apply_pin(s);
    s.layouts = *gen::layouts();
    return s;
  });
}

// Property::unpinnable of a property about one scaling kind.
std::function<std::string(const PinnedRope&)> only_for(RopeScalingKind kind) {
  return [kind](const PinnedRope& pin) {
    return pin.scaling.kind == kind
               ? std::string()
               : fmt::format("is about {} scaling, and the model's is {}", scaling_name(kind),
                             scaling_name(pin.scaling.kind));
  };
}

void classify(const FrequenciesSpec& s) {
  RC_TAG(scaling_name(s.scaling.kind));
  RC_CLASSIFY(!std::isnan(s.scaling.attention_factor), "explicit attention factor");
  RC_CLASSIFY(any_strided(s.layouts), "strided");
  classify_switches(s.scaling, s.d, s.base);
}

// ω_i = base^(−2i/d), here in fp64 apart from any kernel: within 1 ulp (pow), 1.5 after a division.
double omega(double base, int64_t i, int64_t d) {
  return std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
}

// Runs impl and returns its ω'_i.
std::vector<double> run_frequencies(const Impl<RopeFrequenciesCall>& impl,
                                    const FrequenciesSpec& s) {
  Arena arena;
  const RopeFrequenciesCall call = build(s, arena);
  impl.run(call);
  std::vector<double> w(s.d / 2);
  for (int64_t i = 0; i < s.d / 2; ++i) w[i] = load(call.inv_freq, call.inv_freq.offset(i));
  return w;
}

// ω'_i within [lo_i, hi_i], allowing `slack` + bound ulps past either end.
Verdict within(const std::vector<double>& w, const std::vector<double>& lo,
               const std::vector<double>& hi, double bound) {
  Comparison worst;
  for (size_t i = 0; i < w.size(); ++i) {
    const double excess = std::isnan(w[i]) ? INFINITY : std::fmax(lo[i] - w[i], w[i] - hi[i]);
    merge_scalar(worst, 0.0, std::fmax(excess, 0.0), bound, ulp_f64(hi[i]), [&] {
      return fmt::format("ω'[{}] = {:.17g} outside [{:.17g}, {:.17g}] by", i, w[i], lo[i], hi[i]);
    });
  }
  return Verdict::of(worst);
}

std::vector<Property<RopeFrequenciesCall>> frequencies_properties() {
  using Call = RopeFrequenciesCall;
  using K = RopeScalingKind;
  Problems<Call, FrequenciesSpec> problems{
      .any = frequencies_spec(std::nullopt),
      .large = rc::gen::exec([] {
        FrequenciesSpec s = *frequencies_spec(std::nullopt);
        s.d = 2 * *gen::uniform(64, 512);
        s.scaling = *gen::any_scaling(s.d, s.base);
        apply_pin(s);
        return s;
      }),
      .build = [](const FrequenciesSpec& s, Arena& a) { return build(s, a); },
      .classify = classify,
      .minimum = {{"yarn", 0.08},
                  {"llama3", 0.08},
                  {"longrope", 0.08},
                  {"dynamic_ntk", 0.08},
                  {"explicit attention factor", 0.08},
                  {"strided", 0.2},
                  {"seq_len at its switch", 0.04},
                  {"seq_len beside its switch", 0.015},
                  {"yarn factor <= 1, derived attention factor", 0.015},
                  {"llama3 wavelength at its threshold", 0.015},
                  {"llama3 wavelength one ulp beside its threshold", 0.015}},
  };
  ViewOf<Call> inv_freq = [](Call& c) { return &c.inv_freq; };
  ViewOf<Call> factor = [](Call& c) { return &c.attention_factor; };
  for (auto& m : view_mutations<Call>("inv_freq", inv_freq, true)) problems.mutations.push_back(m);
  for (auto& m : view_mutations<Call>("attention_factor", factor, false))
    problems.mutations.push_back(m);
  problems.mutations.push_back(
      overlap_mutation<Call>("inv_freq", inv_freq, "attention_factor", factor));
  auto mutate = [&](const std::string& what, std::function<bool(RopeScaling&, Call&)> f) {
    problems.mutations.push_back({what, [f](Call& c, Arena&) { return f(c.scaling, c); }});
  };
  mutate("odd rotary_dim", [](RopeScaling&, Call& c) {
    c.rotary_dim += 1;
    return true;
  });
  mutate("base = 0", [](RopeScaling&, Call& c) {
    c.base = 0;
    return true;
  });
  mutate("factor = -1", [](RopeScaling& s, Call&) {
    s.factor = -1;
    return s.kind != K::none && s.kind != K::ntk;
  });
  mutate("factor = inf", [](RopeScaling& s, Call&) {
    s.factor = INFINITY;
    return s.kind != K::none && s.kind != K::ntk;
  });
  mutate("alpha = nan", [](RopeScaling& s, Call&) {
    s.alpha = std::nan("");
    return s.kind == K::ntk;
  });
  mutate("beta_fast <= beta_slow", [](RopeScaling& s, Call&) {
    s.beta_fast = s.beta_slow;
    return s.kind == K::yarn;
  });
  mutate("high_freq_factor <= low", [](RopeScaling& s, Call&) {
    s.high_freq_factor = s.low_freq_factor / 2;
    return s.kind == K::llama3;
  });
  mutate("long_factor one short", [](RopeScaling& s, Call&) {
    if (s.kind != K::longrope || s.long_factor.empty()) return false;
    s.long_factor.pop_back();
    return true;
  });
  mutate("attention_factor = 0", [](RopeScaling& s, Call&) {
    s.attention_factor = 0;
    return true;
  });
  mutate("kind = 9", [](RopeScaling& s, Call&) {
    s.kind = static_cast<K>(9);
    return true;
  });

  auto props = generic_properties<Call>("rope_frequencies", problems);

  props.push_back(
      {.name = "rope_frequencies.dynamic_unscaled",
       .statement = "dynamic NTK gives the unscaled ω while seq_len ≤ max_position",
       .body =
           [](Case<Call>& c) {
             FrequenciesSpec s = *frequencies_spec(K::dynamic_ntk);
             s.scaling.seq_len = *gen::uniform(0, s.scaling.max_position);
             c.each([&](const Impl<Call>& impl) {
               const auto w = run_frequencies(impl, s);
               // base' = base·(f·L/L − (f − 1))^(d/(d−2)) is base only up to rounding:
               // f − 1 costs ½ ulp of f, so (1 + δ) with |δ| ≤ (f + 1)·2⁻⁵³, and ω' =
               // ω·(1 + δ)^(−2i/(d−2)), at most 2(f + 1) ulps off; the harness's ω is
               // within 1.
               const double slack = 2 * (s.scaling.factor + 1) + 1;
               Comparison worst;
               for (int64_t i = 0; i < s.d / 2; ++i)
                 merge_scalar(worst, omega(s.base, i, s.d), w[i], impl.bound + slack,
                              ulp_f64(omega(s.base, i, s.d)),
                              [&] { return fmt::format("ω'[{}]", i); });
               return Verdict::of(worst);
             });
           },
       .needs = variant::scaling_bit(K::dynamic_ntk),
       .unpinnable =
           [](const PinnedRope&) { return std::string("varies seq_len, a scaling parameter"); }});

  // Each ω'_i = (ω_i/f)·r + ω_i·(1 − r) with r in [0, 1] (YaRN's ramp, Llama 3's 1 − smooth):
  // between ω_i/f and ω_i. The reference's blend rounds ≤ 4 times (½ ulp each, with pow's ≤ 1);
  // the harness's ends ≤ 1.5 ulps: 6 ulps of slack past either end, plus the kernel's bound.
  auto between = [](K kind) {
    return [kind](Case<Call>& c) {
      const FrequenciesSpec s = *frequencies_spec(kind);
      RC_CLASSIFY(s.scaling.factor > 1, "factor > 1");
      classify_switches(s.scaling, s.d, s.base);
      c.each([&](const Impl<Call>& impl) {
        const auto w = run_frequencies(impl, s);
        std::vector<double> lo(w.size()), hi(w.size());
        for (int64_t i = 0; i < s.d / 2; ++i) {
          const double a = omega(s.base, i, s.d), b = a / s.scaling.factor;
          lo[i] = std::fmin(a, b);
          hi[i] = std::fmax(a, b);
        }
        return within(w, lo, hi, impl.bound + 6);
      });
    };
  };
  props.push_back({"rope_frequencies.yarn_between",
                   "YaRN's ω'_i lies between ω_i/f and ω_i",
                   between(K::yarn),
                   variant::scaling_bit(K::yarn),
                   false,
                   false,
                   {{"factor > 1", 0.5}},
                   only_for(K::yarn)});
  props.push_back({"rope_frequencies.llama3_between",
                   "Llama 3's ω'_i lies between ω_i/f and ω_i",
                   between(K::llama3),
                   variant::scaling_bit(K::llama3),
                   false,
                   false,
                   {{"factor > 1", 0.5},
                    {"llama3 wavelength at its threshold", 0.1},
                    {"llama3 wavelength one ulp beside its threshold", 0.1}},
                   only_for(K::llama3)});
  return props;
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

template <>
std::vector<Property<RopeFrequenciesCall>> properties<RopeFrequenciesCall>() {
  return frequencies_properties();
}

}  // namespace posenc::harness
