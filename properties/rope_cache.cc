// rope_cache: outputs, tolerance model and problems.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <tuple>

#include "properties/generic.h"
#include "reference/reference.h"

namespace posenc::harness {

Comparison compare(const RopeCacheCall& expected, const RopeCacheCall& got, const Bound& bound) {
  // Unit: ulp(a) in the table's dtype, a the attention factor, see rope_cache.h; a bf16 table is
  // held to the contract's bound for its dtype (dtype_bound).
  const double a =
      reference::frequencies(expected.rotary_dim, expected.base, expected.scaling).attention_factor;
  const DType dtype = got.cos.dtype;
  auto unit = [a, dtype](const int64_t*) { return ulp_of(dtype, a); };
  const double b = dtype_bound(dtype, bound);
  Comparison c = harness::compare("cos", expected.cos, got.cos, b, unit);
  c.merge(harness::compare("sin", expected.sin, got.sin, b, unit));
  return c;
}

namespace {

// vllm_layout: cos and sin are the two halves of each row of one [rows, rotary_dim] buffer, as in
// vLLM's cos_sin_cache; otherwise two tensors in `layout`.
Problem<RopeCacheCall> cache_problem(int64_t rows, int64_t d, RopeScalingKind kind, Layout layout,
                                     bool vllm_layout, DType dtype = DType::f32) {
  const double base = kind == RopeScalingKind::llama3 ? 500000 : 10000;
  const RopeScaling scaling = example_scaling(kind, d);
  return {
      fmt::format("{} rows={} rotary_dim={} {} {}", dtype_name(dtype), rows, d, scaling.describe(),
                  vllm_layout ? "vllm [cos | sin] rows" : layout_name(layout)),
      [=](Arena& arena) {
        RopeCacheCall call{.rotary_dim = d, .base = base, .scaling = scaling};
        if (vllm_layout) {
          std::tie(call.cos, call.sin) = vllm_cache(arena, rows, d, dtype);
        } else {
          call.cos = arena.alloc(dtype, {rows, d / 2}, layout);
          call.sin = arena.alloc(dtype, {rows, d / 2}, layout);
        }
        return call;
      }};
}

// One cache problem. Layout slots: cos, sin (ignored in vLLM's [cos | sin] rows).
struct CacheSpec {
  int64_t rows = 1, d = 2;
  double base = 10000;
  RopeScaling scaling;
  bool vllm = false;
  Layouts layouts = uniform_layouts(Layout::contiguous);
  DType dtype = DType::f32;  // f32 or bf16
};

void showValue(const CacheSpec& s, std::ostream& os) {
  os << fmt::format("{} rows={} rotary_dim={} base={} {}{}", dtype_name(s.dtype), s.rows, s.d,
                    s.base, s.scaling.describe(), s.vllm ? " vllm [cos | sin] rows" : "");
  if (!s.vllm && any_strided(s.layouts))
    os << fmt::format(" layouts {} {}", layout_name(s.layouts[0]), layout_name(s.layouts[1]));
}

RopeCacheCall build(const CacheSpec& s, Arena& arena) {
  RopeCacheCall call{.rotary_dim = s.d, .base = s.base, .scaling = s.scaling};
  if (s.vllm) {
    std::tie(call.cos, call.sin) = vllm_cache(arena, s.rows, s.d, s.dtype);
  } else {
    call.cos = arena.alloc(s.dtype, {s.rows, s.d / 2}, s.layouts[0]);
    call.sin = arena.alloc(s.dtype, {s.rows, s.d / 2}, s.layouts[1]);
  }
  return call;
}

// Under a pin (PinnedRope, property.h) the model's rotary_dim, base and scaling, and rows
// (positions) below its max_position_embeddings.
void apply_pin(CacheSpec& s) {
  const PinnedRope* pin = pinned_rope();
  if (!pin) return;
  s.d = pin->rotary_dim;
  s.base = pin->base;
  s.scaling = pin->scaling;
  s.rows = std::min(s.rows, pin->position_cap(s.rows - 1) + 1);
}

// Rows from 1 up, now and then tens of thousands (with few pairs, to keep it cheap). With
// any_dtype, an f32 or a bf16 table; else f32 (the mathematical properties' tolerances are f32's).
rc::Gen<CacheSpec> cache_spec(int64_t min_rows, bool any_dtype = false) {
  return rc::gen::exec([=] {
    CacheSpec s;
    s.d = 2 * *gen::sized(1, 64);
    s.rows = *rc::gen::weightedOneOf<int64_t>({{5, gen::sized(min_rows, 512)},
                                               {1, gen::uniform(min_rows, 4096)},
                                               {1, gen::uniform(8192, 20000)}});
    if (s.rows > 4096) s.d = std::min<int64_t>(s.d, 4);
    s.base = *gen::rope_base();
    s.scaling = *gen::any_scaling(s.d, s.base);
    apply_pin(s);
    s.vllm = *rc::gen::weightedElement<bool>({{2, false}, {1, true}});
    s.layouts = *gen::layouts();
    if (any_dtype) s.dtype = *gen::cache_dtype();
    return s;
  });
}

void classify(const CacheSpec& s) {
  RC_TAG(scaling_name(s.scaling.kind));
  RC_CLASSIFY(s.rows > 8192, "long positions");
  RC_CLASSIFY(s.d / 2 % 16 != 0, "tail");
  RC_CLASSIFY(s.vllm, "vllm layout");
  RC_CLASSIFY(!s.vllm && any_strided(s.layouts), "strided");
  RC_CLASSIFY(s.dtype == DType::bf16, "bf16");
  classify_switches(s.scaling, s.d, s.base);
}

// The attention factor a and ω_i from the frequencies oracle.
reference::RopeFrequencies oracle(const CacheSpec& s) {
  return reference::frequencies(s.d, s.base, s.scaling);
}

// The reference computes a·cos(p·ω) in fp64 and rounds once: within ½ ulp_f32(a), plus its fp64
// angle p·ω off by ≤ p·ω·2⁻⁵³ ≤ 2⁻²⁶ rad (p ≤ 2²⁴, ω ≤ 8): ⅛ unit more.
double cache_exact_bound(double bound) { return exact_bound(bound) + 0.125; }

Problems<RopeCacheCall, CacheSpec> cache_problems() {
  using Call = RopeCacheCall;
  Problems<Call, CacheSpec> problems{
      .any = cache_spec(1, /*any_dtype=*/true),
      .large = rc::gen::exec([] {
        CacheSpec s = *cache_spec(1, /*any_dtype=*/true);
        s.rows = *gen::uniform(512, 4096);
        s.d = 2 * *gen::uniform(8, 32);
        s.scaling = *gen::any_scaling(s.d, s.base);
        apply_pin(s);
        return s;
      }),
      .build = [](const CacheSpec& s, Arena& a) { return build(s, a); },
      .classify = classify,
      .minimum = {{"long positions", 0.1},
                  {"tail", 0.3},
                  {"vllm layout", 0.2},
                  {"strided", 0.15},
                  {"yarn", 0.08},
                  {"longrope", 0.08},
                  {"bf16", 0.15},
                  {"llama3 wavelength at its threshold", 0.015},
                  {"llama3 wavelength one ulp beside its threshold", 0.015}},
  };
  ViewOf<Call> cos = [](Call& c) { return &c.cos; };
  ViewOf<Call> sin = [](Call& c) { return &c.sin; };
  for (auto& m : view_mutations<Call>("cos", cos, true)) problems.mutations.push_back(m);
  for (auto& m : view_mutations<Call>("sin", sin, true)) problems.mutations.push_back(m);
  problems.mutations.push_back(overlap_mutation<Call>("cos", cos, "sin", sin));
  problems.mutations.push_back({"sin rows differ", [](Call& c, Arena&) {
                                  if (c.sin.shape[0] == 0) return false;
                                  --c.sin.shape[0];
                                  return true;
                                }});
  problems.mutations.push_back({"rotary_dim disagrees with cos", [](Call& c, Arena&) {
                                  c.rotary_dim += 2;
                                  return true;
                                }});
  problems.mutations.push_back({"scaling factor = 0", [](Call& c, Arena&) {
                                  c.scaling.factor = 0;
                                  return c.scaling.kind != RopeScalingKind::none &&
                                         c.scaling.kind != RopeScalingKind::ntk;
                                }});
  problems.mutations.push_back({"base = nan", [](Call& c, Arena&) {
                                  c.base = std::nan("");
                                  return true;
                                }});

  return problems;
}

Property<RopeCacheCall> pythagorean() {
  using Call = RopeCacheCall;
  return {.name = "rope_cache.pythagorean",
          .statement = "cos[p, i]² + sin[p, i]² = a², a the attention factor",
          .body =
              [](Case<Call>& c) {
                const CacheSpec s = *cache_spec(1);
                classify(s);
                const double a = oracle(s).attention_factor;
                c.each([&](const Impl<Call>& impl) {
                  Arena arena;
                  const Call call = build(s, arena);
                  impl.run(call);
                  // Entries off by E = B·ulp(a) move c² + s² by ≤ 2(|c| + |s|)·E + 2E² ≤
                  // 2√2·a·E + 2E².
                  const double unit = 2 * std::numbers::sqrt2 * a * ulp_f32(a);
                  const double e = cache_exact_bound(impl.bound) * ulp_f32(a);
                  const double bound = (2 * std::numbers::sqrt2 * a * e + 2 * e * e) / unit;
                  Comparison worst;
                  for (int64_t p = 0; p < s.rows; ++p)
                    for (int64_t i = 0; i < s.d / 2; ++i) {
                      const double cv = load(call.cos, call.cos.offset(p, i));
                      const double sv = load(call.sin, call.sin.offset(p, i));
                      merge_scalar(worst, a * a, cv * cv + sv * sv, bound, unit, [&] {
                        return fmt::format("cos[{0}, {1}]² + sin[{0}, {1}]²", p, i);
                      });
                    }
                  return Verdict::of(worst);
                });
              },
          .minimum = {{"long positions", 0.1}}};
}

Property<RopeCacheCall> row0() {
  using Call = RopeCacheCall;
  return {
      "rope_cache.row0", "row 0 is (cos, sin) = (a, 0) for every pair", [](Case<Call>& c) {
        const CacheSpec s = *cache_spec(1);
        const double a = oracle(s).attention_factor;
        c.each([&](const Impl<Call>& impl) {
          Arena arena;
          const Call call = build(s, arena);
          impl.run(call);
          Comparison worst;
          for (int64_t i = 0; i < s.d / 2; ++i) {
            merge_scalar(worst, a, load(call.cos, call.cos.offset(0, i)), exact_bound(impl.bound),
                         ulp_f32(a), [&] { return fmt::format("cos[0, {}]", i); });
            merge_scalar(worst, 0.0, load(call.sin, call.sin.offset(0, i)), exact_bound(impl.bound),
                         ulp_f32(a), [&] { return fmt::format("sin[0, {}]", i); });
          }
          return Verdict::of(worst);
        });
      }};
}

Property<RopeCacheCall> rotation() {
  using Call = RopeCacheCall;
  return {
      .name = "rope_cache.rotation",
      .statement =
          "row p + m is row p rotated by m·ω_i: (c, s) → (c·cos mω − s·sin mω, s·cos mω "
          "+ c·sin mω)",
      .body =
          [](Case<Call>& c) {
            const CacheSpec s = *cache_spec(2);
            const int64_t m = *gen::uniform(1, s.rows - 1);
            RC_CLASSIFY(m > 1000, "long offset");
            const auto freq = oracle(s);
            c.each([&](const Impl<Call>& impl) {
              Arena arena;
              const Call call = build(s, arena);
              impl.run(call);
              // Row p+m is E off, row p's errors rotate into ≤ √2·E, fp64 angles m·ω ≤ ⅛ unit.
              const double bound = (1 + std::numbers::sqrt2) * cache_exact_bound(impl.bound);
              const double unit = ulp_f32(freq.attention_factor);
              Comparison worst;
              for (int64_t i = 0; i < s.d / 2; ++i) {
                const double angle = static_cast<double>(m) * freq.inv_freq[i];
                const double cm = std::cos(angle), sm = std::sin(angle);
                for (int64_t p = 0; p + m < s.rows; ++p) {
                  const double c0 = load(call.cos, call.cos.offset(p, i));
                  const double s0 = load(call.sin, call.sin.offset(p, i));
                  merge_scalar(worst, c0 * cm - s0 * sm, load(call.cos, call.cos.offset(p + m, i)),
                               bound, unit,
                               [&] { return fmt::format("cos[{}, {}] (m = {})", p + m, i, m); });
                  merge_scalar(worst, s0 * cm + c0 * sm, load(call.sin, call.sin.offset(p + m, i)),
                               bound, unit,
                               [&] { return fmt::format("sin[{}, {}] (m = {})", p + m, i, m); });
                }
              }
              return Verdict::of(worst);
            });
          },
      .minimum = {{"long offset", 0.1}}};
}

std::vector<Property<RopeCacheCall>> cache_properties() {
  auto props = generic_properties<RopeCacheCall>("rope_cache", cache_problems());
  for (auto property : {pythagorean(), row0(), rotation()}) props.push_back(std::move(property));
  return props;
}

}  // namespace

template <>
std::vector<Problem<RopeCacheCall>> smoke_problems<RopeCacheCall>() {
  using K = RopeScalingKind;
  using L = Layout;
  return {
      cache_problem(1024, 64, K::none, L::contiguous, false),
      cache_problem(4096, 64, K::yarn, L::contiguous, true),
      cache_problem(2048, 128, K::llama3, L::padded, false),
      cache_problem(512, 96, K::longrope, L::permuted, false),
      cache_problem(300, 32, K::linear, L::padded, true),
      cache_problem(257, 16, K::ntk, L::contiguous, false),
      cache_problem(100, 8, K::dynamic_ntk, L::permuted, false),
      cache_problem(1024, 128, K::yarn, L::contiguous, true, DType::bf16),
      cache_problem(300, 64, K::llama3, L::permuted, false, DType::bf16),
  };
}

template <>
std::vector<Property<RopeCacheCall>> properties<RopeCacheCall>() {
  return cache_properties();
}

}  // namespace posenc::harness
