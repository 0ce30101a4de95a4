// mrope: outputs, tolerance model, problems and properties. The tolerance is rope's, pair by pair
// (compare through the 1D call on the same tensors); the properties tie M-RoPE to 1D rope.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "properties/generic.h"
#include "properties/rope.h"
#include "reference/reference.h"

namespace posenc::harness {

Comparison compare(const MropeCall& input, const MropeCall& expected, const MropeCall& got,
                   const Bound& bound) {
  // rope's unit and tail rule; positions are not read on the fly.
  const Tensor column = mrope_axis_positions(input.positions, 0);
  return compare(as_rope(input, column), as_rope(expected, column), as_rope(got, column), bound);
}

namespace {

using K = RopeScalingKind;

// One mrope problem. Layout slots: q, q_out, k, k_out, positions.
struct MropeSpec {
  int64_t tokens = 0, hq = 1, hk = 0, head_dim = 2, rotary_dim = 2;  // hk = 0: no k
  std::array<int64_t, 3> section{1, 0, 0};
  MropeConvention convention = MropeConvention::sectioned;
  RopeLayout layout = RopeLayout::half_split;
  bool inverse = false, in_place = false;
  double base = 10000;
  RopeScaling scaling;
  Positions positions;  // 3·tokens values, token-major (t, h, w of token 0, then token 1, ...)
  Fill q, k;
  Layouts layouts = uniform_layouts(Layout::contiguous);
  DType dtype = DType::f32;
};

std::string describe(const MropeSpec& s) {
  std::string str = fmt::format(
      "{} tokens={} hq={} hk={} head_dim={} rotary_dim={} {} mrope_section=[{}, {}, {}] {}{}{} "
      "base={} {} positions={} q=({})",
      dtype_name(s.dtype), s.tokens, s.hq, s.hk, s.head_dim, s.rotary_dim,
      convention_name(s.convention), s.section[0], s.section[1], s.section[2],
      layout_name(s.layout), s.inverse ? " inverse" : "", s.in_place ? " in place" : "", s.base,
      s.scaling.describe(), s.positions.describe(), s.q.describe());
  if (s.hk) str += " k=(" + s.k.describe() + ")";
  if (any_strided(s.layouts)) {
    str += " layouts";
    for (int i = 0; i < 5; ++i) str += fmt::format(" {}", layout_name(s.layouts[i]));
  }
  return str;
}

void showValue(const MropeSpec& s, std::ostream& os) { os << describe(s); }

MropeCall build(const MropeSpec& s, Arena& arena) {
  MropeCall call{.rotary_dim = s.rotary_dim,
                 .mrope_section = s.section,
                 .convention = s.convention,
                 .layout = s.layout,
                 .inverse = s.inverse,
                 .base = s.base,
                 .scaling = s.scaling};
  rope::alloc_activations(s, arena, call);
  call.positions = arena.alloc(s.positions.dtype, {s.tokens, 3}, s.layouts[4]);
  for (int64_t t = 0; t < s.tokens; ++t)
    for (int a = 0; a < 3; ++a)
      store_index(call.positions, call.positions.offset(t, a), s.positions.values[3 * t + a]);
  return call;
}

// A section for d/2 pairs that `convention` accepts (mrope.h), real ones half the time.
rc::Gen<std::array<int64_t, 3>> section(MropeConvention convention, int64_t half) {
  return rc::gen::exec([=] {
    if (half == 64 && *rc::gen::arbitrary<bool>())
      return convention == MropeConvention::sectioned ? std::array<int64_t, 3>{16, 24, 24}
                                                      : std::array<int64_t, 3>{24, 20, 20};
    std::array<int64_t, 3> s{};
    if (convention == MropeConvention::sectioned) {
      s[1] = *gen::uniform(0, half);
      s[2] = *gen::uniform(0, half - s[1]);
    } else {
      s[1] = *gen::uniform(0, (half + 1) / 3);
      s[2] = *gen::uniform(0, half / 3);
    }
    s[0] = half - s[1] - s[2];
    return s;
  });
}

// Under a pin (PinnedRope, property.h) the model's parameters, its mrope_section and convention
// among them; positions below its max_position_embeddings.
void apply_pin(MropeSpec& s) {
  const PinnedRope* pin = pinned_rope();
  if (!pin || !pin->mrope_section) return;
  s.head_dim = pin->head_dim;
  s.rotary_dim = pin->rotary_dim;
  s.convention = pin->mrope_convention;
  s.section = *pin->mrope_section;
  s.layout = pin->layout;
  s.base = pin->base;
  s.scaling = pin->scaling;
}

struct MropeOptions {
  bool specials = true, needs_k = false, unit_factor = false, any_dtype = false;
  int64_t min_tokens = 0, max_tokens = 16;
};

rc::Gen<MropeSpec> mrope_spec(MropeOptions o) {
  // Drawn inside what the implementations under test declare (declared()), as rope_spec.
  return rc::gen::exec([=] {
    const Declared& d = declared();
    MropeSpec s;
    s.tokens =
        o.min_tokens > 0 ? *gen::sized(o.min_tokens, o.max_tokens) : *gen::count(o.max_tokens);
    s.hq = *gen::uniform(1, 4);
    s.hk = o.needs_k ? *gen::uniform(1, 4)
           : !d.has(variant::mrope_key)
               ? 0
               : *rc::gen::weightedOneOf<int64_t>(
                     {{1, rc::gen::just<int64_t>(0)}, {3, gen::uniform(1, 4)}});
    s.head_dim = *rc::gen::weightedOneOf<int64_t>(
        {{1, rc::gen::just<int64_t>(128)}, {3, gen::sized(2, 160)}});
    if (!d.has(variant::mrope_partial)) s.head_dim = s.head_dim / 2 * 2;
    const int64_t full = s.head_dim / 2 * 2;
    s.rotary_dim =
        !d.has(variant::mrope_partial)
            ? full
            : *rc::gen::weightedOneOf<int64_t>(
                  {{2, rc::gen::just(full)},
                   {1, rc::gen::map(gen::uniform(1, full / 2), [](int64_t h) { return 2 * h; })}});
    s.convention = d.has(variant::mrope_sectioned | variant::mrope_cycled)
                       ? *rc::gen::element(MropeConvention::sectioned, MropeConvention::interleaved)
                   : d.has(variant::mrope_cycled) ? MropeConvention::interleaved
                                                  : MropeConvention::sectioned;
    s.section = *section(s.convention, s.rotary_dim / 2);
    s.layout = d.has(variant::mrope_half_split | variant::mrope_interleaved)
                   ? *rc::gen::element(RopeLayout::half_split, RopeLayout::interleaved)
               : d.has(variant::mrope_interleaved) ? RopeLayout::interleaved
                                                   : RopeLayout::half_split;
    s.inverse = d.has(variant::mrope_inverse) && *rc::gen::arbitrary<bool>();
    s.in_place =
        d.has(variant::in_place) && *rc::gen::weightedElement<bool>({{2, false}, {1, true}});
    s.base = *gen::rope_base();
    s.scaling = *gen::declared_scaling(s.rotary_dim, s.base);
    apply_pin(s);
    // Under a pin a property that needs f = 1 runs only when the model's is 1 (needs_unit_factor).
    if (o.unit_factor && !pinned_rope()) s.scaling.attention_factor = 1;
    s.positions = *gen::positions(3 * s.tokens, pinned_position_cap(kMaxPosition));
    auto values = o.specials ? gen::fill() : gen::finite_fill();
    s.q = *values;
    s.k = *values;
    s.layouts = *gen::layouts();
    if (o.any_dtype) s.dtype = *gen::float_dtype();
    return s;
  });
}

void classify(const MropeSpec& s) {
  RC_CLASSIFY(s.tokens == 0, "empty");
  RC_CLASSIFY(s.positions.long_range(), "long positions");
  RC_CLASSIFY(s.rotary_dim < s.head_dim, "partial");
  RC_CLASSIFY(s.convention == MropeConvention::interleaved, "interleaved axes");
  RC_CLASSIFY(s.layout == RopeLayout::interleaved, "interleaved pairs");
  RC_CLASSIFY(s.in_place, "in place");
  RC_CLASSIFY(any_strided(s.layouts), "strided");
  classify_dtype(s.dtype);
  RC_TAG(scaling_name(s.scaling.kind));
}

MropeCall run(const Impl<MropeCall>& impl, const MropeSpec& s, Arena& arena) {
  MropeCall call = build(s, arena);
  impl.run(call);
  return call;
}

// rope's reference on the same tensors with positions = column `axis` of s's (a fresh build).
MropeCall rope_of_axis(const MropeSpec& s, int axis, Arena& arena) {
  MropeCall call = build(s, arena);
  reference_impl<RopeCall>().run(as_rope(call, mrope_axis_positions(call.positions, axis)));
  return call;
}

// A copy of `into`'s outputs (f64) where every pair whose axis is `axis` comes from `from`.
void take_pairs(const MropeSpec& s, int axis, const MropeCall& from, MropeCall& into) {
  const int64_t half = s.rotary_dim / 2;
  auto one = [&](const Tensor& src, Tensor& dst) {
    for (int64_t t = 0; t < s.tokens; ++t)
      for (int64_t h = 0; h < src.shape[1]; ++h)
        for (int64_t i = 0; i < half; ++i) {
          if (mrope_axis(s.convention, s.section, i) != axis) continue;
          for (int64_t j : {s.layout == RopeLayout::half_split ? i : 2 * i,
                            s.layout == RopeLayout::half_split ? i + half : 2 * i + 1})
            store(dst, dst.offset(t, h, j), load(src, src.offset(t, h, j)));
        }
  };
  one(from.q_out, into.q_out);
  if (s.hk) one(*from.k_out, *into.k_out);
}

// fp64 angles of the largest position: rope's angle slack (properties/rope.cc).
double angle_slack(const MropeSpec& s) {
  if (s.positions.values.empty()) return 0;
  const auto freq = reference::frequencies(s.rotary_dim, s.base, s.scaling);
  const double omega = *std::max_element(freq.inv_freq.begin(), freq.inv_freq.end());
  return 1.5 * static_cast<double>(s.positions.max()) * omega * 0x1p-28;
}

std::vector<Property<MropeCall>> mrope_properties() {
  using Call = MropeCall;
  Problems<Call, MropeSpec> problems{
      .any = mrope_spec({.any_dtype = true}),
      .large = rc::gen::exec([] {
        MropeSpec s = *mrope_spec({.any_dtype = true, .max_tokens = 1});
        // Building a case costs more than running it: sizes kept to rope's smaller half (the
        // thread split itself is tested at 1280 tokens in optimized/mrope_test.cc).
        s.tokens = *gen::uniform(16, 64);
        s.hq = *gen::uniform(2, 4);
        s.positions = *gen::positions(3 * s.tokens, pinned_position_cap(kMaxPosition));
        return s;
      }),
      .build = [](const MropeSpec& s, Arena& a) { return build(s, a); },
      .classify = classify,
      .minimum = dtype_shares({{"long positions", 0.15},
                               {"partial", 0.15, variant::mrope_partial},
                               {"interleaved axes", 0.3, variant::mrope_cycled},
                               {"interleaved pairs", 0.3, variant::mrope_interleaved},
                               {"in place", 0.15},
                               {"strided", 0.2}}),
  };
  ViewOf<Call> q = [](Call& c) { return &c.q; };
  ViewOf<Call> q_out = [](Call& c) { return &c.q_out; };
  ViewOf<Call> k = [](Call& c) { return c.k ? &*c.k : nullptr; };
  ViewOf<Call> k_out = [](Call& c) { return c.k_out ? &*c.k_out : nullptr; };
  ViewOf<Call> positions = [](Call& c) { return &c.positions; };
  auto& m = problems.mutations;
  for (auto& x : view_mutations<Call>("q", q, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("q_out", q_out, true)) m.push_back(x);
  for (auto& x : view_mutations<Call>("k_out", k_out, true)) m.push_back(x);
  for (auto& x : view_mutations<Call>("positions", positions, false)) m.push_back(x);
  m.push_back(overlap_mutation<Call>("q_out", q_out, "k", k));
  m.push_back(position_mutation<Call>("position 2^24 + 1", positions,
                                      [](const Call&) { return kMaxPosition + 1; }));
  m.push_back(position_mutation<Call>("position -1", positions, [](const Call&) { return -1; }));
  m.push_back({"width position -1", [](Call& c, Arena&) {
                 if (c.positions.shape[0] == 0) return false;
                 store_index(c.positions, c.positions.offset(0, 2), -1);
                 return true;
               }});
  m.push_back({"positions [tokens, 2]", [](Call& c, Arena&) {
                 c.positions.shape[1] = 2;
                 return true;
               }});
  m.push_back({"mrope_section sums to rotary_dim/2 + 1", [](Call& c, Arena&) {
                 ++c.mrope_section[2];
                 return true;
               }});
  m.push_back({"mrope_section[1] = -1", [](Call& c, Arena&) {
                 c.mrope_section[1] = -1;
                 c.mrope_section[0] += 1;
                 return true;
               }});
  m.push_back({"interleaved with s_h too large", [](Call& c, Arena&) {
                 const int64_t half = c.rotary_dim / 2;
                 if (half < 3) return false;
                 c.convention = MropeConvention::interleaved;
                 c.mrope_section = {0, half, 0};
                 return true;
               }});
  m.push_back({"convention = 5", [](Call& c, Arena&) {
                 c.convention = static_cast<MropeConvention>(5);
                 return true;
               }});
  m.push_back({"odd rotary_dim", [](Call& c, Arena&) {
                 --c.rotary_dim;
                 return true;
               }});
  m.push_back({"scaling factor = -1", [](Call& c, Arena&) {
                 c.scaling.factor = -1;
                 return c.scaling.kind != K::none && c.scaling.kind != K::ntk;
               }});

  auto props = generic_properties<Call>("mrope", problems);

  props.push_back({.name = "mrope.equal_axes",
                   .statement =
                       "with p_t = p_h = p_w every pair reads one position: posenc's 1D rope "
                       "(reference: bit for bit)",
                   .body = [](Case<Call>& c) {
                     MropeSpec s = *mrope_spec({.any_dtype = true});
                     for (int64_t t = 0; t < s.tokens; ++t)
                       s.positions.values[3 * t + 1] = s.positions.values[3 * t + 2] =
                           s.positions.values[3 * t];
                     classify(s);
                     c.each([&](const Impl<Call>& impl) {
                       Arena arena, ref, pristine;
                       const Call got = run(impl, s, arena);
                       const Call expected = rope_of_axis(s, 0, ref);
                       return Verdict::of(compare(build(s, pristine), expected, got, impl.bound),
                                          "mrope(p, p, p) vs rope(p)");
                     });
                   }});

  props.push_back(
      {.name = "mrope.section_is_rope",
       .statement = "the pairs of each axis's section are 1D rope of that axis's positions",
       .body = [](Case<Call>& c) {
         const MropeSpec s = *mrope_spec({.any_dtype = true});
         classify(s);
         c.each([&](const Impl<Call>& impl) {
           Arena arena, ref, pristine;
           const Call got = run(impl, s, arena);
           Call expected = rope_of_axis(s, 0, ref);
           for (int axis = 1; axis < 3; ++axis)
             take_pairs(s, axis, rope_of_axis(s, axis, ref), expected);
           return Verdict::of(compare(build(s, pristine), expected, got, impl.bound),
                              "mrope vs the 1D rope of each pair's axis");
         });
       }});

  props.push_back(
      {.name = "mrope.pair_norm",
       .statement = "each rotated pair keeps its norm times the attention factor",
       .body = [](Case<Call>& c) {
         const MropeSpec s = *mrope_spec({.specials = false});
         classify(s);
         c.each([&](const Impl<Call>& impl) {
           Arena arena, pristine;
           const Call before = build(s, pristine);
           const Call call = run(impl, s, arena);
           const double bound = std::numbers::sqrt2 * exact_bound(impl.bound) + 1.0 / 64;
           const double f =
               reference::frequencies(s.rotary_dim, s.base, s.scaling).attention_factor;
           const int64_t half = s.rotary_dim / 2;
           Comparison worst;
           auto check = [&](const char* name, const Tensor& x, const Tensor& y) {
             for (int64_t t = 0; t < s.tokens; ++t)
               for (int64_t h = 0; h < x.shape[1]; ++h)
                 for (int64_t i = 0; i < half; ++i) {
                   const int64_t j0 = s.layout == RopeLayout::half_split ? i : 2 * i;
                   const int64_t j1 = s.layout == RopeLayout::half_split ? i + half : 2 * i + 1;
                   const double norm =
                       f * std::hypot(load(x, x.offset(t, h, j0)), load(x, x.offset(t, h, j1)));
                   const double got =
                       std::hypot(load(y, y.offset(t, h, j0)), load(y, y.offset(t, h, j1)));
                   merge_scalar(worst, norm, got, bound, ulp_f32(norm), [&] {
                     return fmt::format("‖{}[{}, {}, pair {}]‖", name, t, h, i);
                   });
                 }
           };
           check("q_out", before.q, call.q_out);
           if (s.hk) check("k_out", *before.k, *call.k_out);
           return Verdict::of(worst);
         });
       }});

  props.push_back({.name = "mrope.relative",
                   .statement =
                       "per axis, ⟨R(m)q, R(n)k⟩ depends only on m − n: shifting one axis of both "
                       "by s changes nothing",
                   .body =
                       [](Case<Call>& c) {
                         MropeSpec s = *mrope_spec({.specials = false,
                                                    .needs_k = true,
                                                    .unit_factor = true,
                                                    .min_tokens = 4,
                                                    .max_tokens = 4});
                         const int axis = static_cast<int>(*gen::uniform(0, 2));
                         // Tokens 0 (q) and 1 (k) at random positions; 2 and 3 the same with `axis`
                         // shifted.
                         auto& p = s.positions.values;
                         // Under a pin every position stays below the model's
                         // max_position_embeddings.
                         const int64_t top = pinned_position_cap(kMaxPosition),
                                       near = std::min<int64_t>(4096, top / 2);
                         for (int a = 0; a < 3; ++a) {
                           p[a] = *gen::uniform(0, near);
                           p[3 + a] = *gen::uniform(0, near);
                         }
                         const int64_t shift = *rc::gen::weightedOneOf<int64_t>(
                             {{1, gen::uniform(0, near)},
                              {2, gen::uniform(0, top - std::max(p[axis], p[3 + axis]))}});
                         for (int a = 0; a < 3; ++a) {
                           p[6 + a] = p[a] + (a == axis ? shift : 0);
                           p[9 + a] = p[3 + a] + (a == axis ? shift : 0);
                         }
                         RC_CLASSIFY(shift > (1 << 20), "long shift");
                         c.each([&](const Impl<Call>& impl) {
                           Arena arena;
                           Call call = build(s, arena);
                           rope::repeat_tokens(call.q, *call.k);
                           const Tensor q_in = rope::copy_of(call.q, arena),
                                        k_in = rope::copy_of(*call.k, arena);
                           impl.run(call);
                           const double b = exact_bound(impl.bound) + angle_slack(s) + 1.0 / 64;
                           return rope::same_dots(call.q_out, *call.k_out, b, q_in, k_in, s.layout,
                                                  s.rotary_dim, axis, shift);
                         });
                       },
                   .needs = variant::mrope_key,
                   .minimum = {{"long shift", 0.3}},
                   .unpinnable = needs_unit_factor});

  props.push_back(
      {.name = "mrope.inverse",
       .statement = "the inverse rotation at the same positions undoes the rotation",
       .body =
           [](Case<Call>& c) {
             const MropeSpec s = *mrope_spec({.specials = false, .unit_factor = true});
             classify(s);
             c.each([&](const Impl<Call>& impl) {
               Arena arena, pristine;
               const Call before = build(s, pristine);
               const Call first = run(impl, s, arena);
               Call back = first;
               back.inverse = !s.inverse;
               back.q = first.q_out;
               back.q_out = s.in_place ? back.q : rope::copy_of(first.q_out, arena, s.dtype);
               if (s.hk) {
                 back.k = first.k_out;
                 back.k_out = s.in_place ? *back.k : rope::copy_of(*first.k_out, arena, s.dtype);
               }
               impl.run(back);
               Call expected = before;
               expected.q_out = before.q;
               expected.k_out = before.k;
               // rope.inverse's budget: the forward error rotated (√2·B), the backward B of
               // a norm a binade up (2B).
               return Verdict::of(
                   compare(before, expected, back,
                           (2 + std::numbers::sqrt2) * exact_bound(impl.bound) + 1.0 / 64),
                   "R⁻¹(p)·R(p)·x vs x");
             });
           },
       .needs = variant::mrope_inverse,
       .unpinnable = needs_unit_factor});
  return props;
}

}  // namespace

template <>
std::vector<Problem<MropeCall>> smoke_problems<MropeCall>() {
  // Qwen2-VL / Qwen2.5-VL (sectioned [16, 24, 24]) and Qwen3-VL (interleaved [24, 20, 20]) shapes.
  auto problem = [](MropeConvention convention, std::array<int64_t, 3> section, RopeLayout layout,
                    int64_t head_dim, DType dtype, uint64_t seed) {
    const int64_t tokens = 6, hq = 4, hk = 2;
    return Problem<MropeCall>{
        fmt::format("{} tokens={} hq={} hk={} head_dim={} {} [{}, {}, {}] {}", dtype_name(dtype),
                    tokens, hq, hk, head_dim, convention_name(convention), section[0], section[1],
                    section[2], layout_name(layout)),
        [=](Arena& arena) {
          Values values(seed);
          MropeCall call{.rotary_dim = 2 * (section[0] + section[1] + section[2]),
                         .mrope_section = section,
                         .convention = convention,
                         .layout = layout,
                         .base = 1000000};
          call.q = arena.alloc(dtype, {tokens, hq, head_dim});
          values.fill(call.q, -2, 2);
          call.q_out = arena.alloc(dtype, {tokens, hq, head_dim});
          call.k = arena.alloc(dtype, {tokens, hk, head_dim});
          values.fill(*call.k, -2, 2);
          call.k_out = *call.k;  // in place
          call.positions = arena.alloc(DType::i64, {tokens, 3});
          values.fill_index(call.positions, 0, 8192);
          return call;
        }};
  };
  using C = MropeConvention;
  using R = RopeLayout;
  return {problem(C::sectioned, {16, 24, 24}, R::half_split, 128, DType::f32, 1),
          problem(C::interleaved, {24, 20, 20}, R::half_split, 128, DType::bf16, 2),
          problem(C::sectioned, {8, 12, 12}, R::interleaved, 80, DType::f16, 3),
          problem(C::interleaved, {11, 11, 10}, R::interleaved, 64, DType::f32, 4)};
}

template <>
std::vector<Property<MropeCall>> properties<MropeCall>() {
  return mrope_properties();
}

}  // namespace posenc::harness
