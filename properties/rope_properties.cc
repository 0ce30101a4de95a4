// rope's own properties, one named function each, over the problems of rope.h.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <string>
#include <tuple>

#include "properties/generic.h"
#include "properties/rope.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace rope {

Property<RopeCall> pair_norm() {
  using Call = RopeCall;
  return {.name = "rope.pair_norm",
          .statement = "each rotated pair keeps its norm times the attention factor",
          .body =
              [](Case<Call>& c) {
                const RopeSpec s = *rope_spec({.specials = false});
                classify(s);
                c.each([&](const Impl<Call>& impl) {
                  Arena arena, pristine;
                  const Call before = build(s, pristine);
                  const Call call = run(impl, s, arena);
                  // The pair's error vector has components ≤ B units each: its norm moves ≤ √2·B;
                  // angles do not move norms. 1/64 for the fp64 norms here.
                  const double bound = std::numbers::sqrt2 * exact_bound(impl.bound) + 1.0 / 64;
                  Comparison worst;
                  const double fly = fly_factor(before);
                  auto check = [&](const char* name, const Tensor& x, const Tensor& y) {
                    for (int64_t t = 0; t < s.tokens; ++t)
                      for (int64_t h = 0; h < x.shape[1]; ++h)
                        for (int64_t i = 0; i < s.rotary_dim / 2; ++i) {
                          const auto [j0, j1] = pair_dims(s, i);
                          const double f = factor_at(before, fly, t, i);
                          const double norm = f * std::hypot(load(x, x.offset(t, h, j0)),
                                                             load(x, x.offset(t, h, j1)));
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
              },
          .minimum = {{"long positions", 0.15, 0, variant::all_scalings},
                      {"cached", 0.2, variant::rope_cached}}};
}

Property<RopeCall> relative() {
  using Call = RopeCall;
  return {.name = "rope.relative",
          .statement = "⟨R(m)q, R(n)k⟩ depends only on m − n: shifting both by s changes nothing",
          .body =
              [](Case<Call>& c) {
                RopeSpec s = *rope_spec({.specials = false,
                                         .cache = Cache::none,
                                         .needs_k = true,
                                         .min_tokens = 4,
                                         .max_tokens = 4});
                // Under a pin all four positions stay below the model's max_position_embeddings.
                const int64_t top = pinned_position_cap(kMaxPosition),
                              near = std::min<int64_t>(4096, top / 2);
                const int64_t m = *gen::uniform(0, near), n = *gen::uniform(0, near);
                const int64_t shift = *rc::gen::weightedOneOf<int64_t>(
                    {{1, gen::uniform(0, near)}, {2, gen::uniform(0, top - std::max(m, n))}});
                s.positions.values = {m, n, m + shift, n + shift};
                RC_CLASSIFY(shift > (1 << 20), "long shift");
                // Token 2 carries token 0's q, token 3 token 1's k.
                auto edit = [](Call& call, Arena&) { repeat_tokens(call.q, *call.k); };
                c.each([&](const Impl<Call>& impl) {
                  Arena arena, pristine;
                  Call before = build(s, pristine);
                  edit(before, pristine);
                  const Call call = run(impl, s, arena, edit);
                  const double b = rope_exact_bound(impl.bound, s);
                  const double fly = fly_factor(before);
                  // f for token t, pair i: the unit is ulp_f32(f·‖pair‖) of the input.
                  auto unit_at = [&](const Call& input, const Tensor& x, int64_t t, int64_t h,
                                     int64_t j) {
                    const int64_t i =
                        s.layout == RopeLayout::half_split ? j % (s.rotary_dim / 2) : j / 2;
                    return pair_unit(x, s.layout, s.rotary_dim, t, h, j,
                                     j < s.rotary_dim ? factor_at(input, fly, t, i) : 1);
                  };
                  return same_dots(
                      call.q_out, *call.k_out, b,
                      [&](int64_t t, int64_t h, int64_t j) {
                        return unit_at(before, before.q, t, h, j);
                      },
                      [&](int64_t t, int64_t h, int64_t j) {
                        return unit_at(before, *before.k, t, h, j);
                      },
                      [&](int64_t h, int64_t g) {
                        return fmt::format(
                            "⟨q_out[m+s, {0}], k_out[n+s, {1}]⟩ vs ⟨q_out[m, {0}], k_out[n, {1}]⟩ "
                            "(m={2} n={3} s={4})",
                            h, g, m, n, shift);
                      });
                });
              },
          .needs = variant::rope_key,
          .minimum = {{"long shift", 0.3}}};
}

Property<RopeCall> identity() {
  using Call = RopeCall;
  return {"rope.identity", "at position 0 the rotation is the identity: out = f·x, tail untouched",
          [](Case<Call>& c) {
            // Finite values: a NaN partner makes a·1 − NaN·0 NaN (the tail has its own property).
            RopeSpec s = *rope_spec({.specials = false, .cache = Cache::none, .min_tokens = 1});
            std::fill(s.positions.values.begin(), s.positions.values.end(), 0);
            c.each([&](const Impl<Call>& impl) {
              Arena arena, pristine;
              const Call before = build(s, pristine);
              const Call call = run(impl, s, arena);
              const double f = fly_factor(before);
              Call expected = before;
              expected.q_out = copy_of(before.q, pristine, DType::f64);
              if (s.hk) expected.k_out = copy_of(*before.k, pristine, DType::f64);
              for (const Tensor& t : outputs(expected))
                for_each_offset(dims(t, 0, s.rotary_dim),
                                [&](int64_t off) { store(t, off, f * load(t, off)); });
              // Position 0: no angle, only the rounding of f·x.
              return Verdict::of(
                  compare(before, expected, call, exact_bound(impl.bound) + 1.0 / 64),
                  "R(0)·x vs f·x");
            });
          }};
}

Property<RopeCall> composition() {
  using Call = RopeCall;
  return {.name = "rope.composition",
          .statement = "R(b)∘R(a) = R(a + b)",
          .body =
              [](Case<Call>& c) {
                const RopeSpec s =
                    *rope_spec({.specials = false, .cache = Cache::none, .unit_factor = true});
                const int64_t top = pinned_position_cap(kMaxPosition);
                const auto a =
                    *rc::gen::container<std::vector<int64_t>>(s.tokens, gen::uniform(0, top));
                std::vector<int64_t> b(s.tokens), sum(s.tokens);
                for (int64_t t = 0; t < s.tokens; ++t) {
                  b[t] = s.positions.values[t] % (top - a[t] + 1);
                  sum[t] = a[t] + b[t];
                }
                RC_CLASSIFY(!sum.empty() && *std::max_element(sum.begin(), sum.end()) > (1 << 20),
                            "long positions");
                c.each([&](const Impl<Call>& impl) {
                  Arena arena, pristine;
                  const Call before = build(s, pristine);
                  const Call first =
                      run(impl, s, arena, [&](Call& call, Arena&) { set_positions(call, a); });
                  Call second = first;
                  second.q = first.q_out;
                  second.q_out = s.in_place ? second.q : copy_of(first.q_out, arena);
                  if (s.hk) {
                    second.k = first.k_out;
                    second.k_out = s.in_place ? *second.k : copy_of(*first.k_out, arena);
                  }
                  set_positions(second, b);
                  impl.run(second);
                  const Call direct =
                      run(impl, s, arena, [&](Call& call, Arena&) { set_positions(call, sum); });
                  // First pass B units, rotated into ≤ √2·B; second pass B of a norm that may sit a
                  // binade up (2B); the direct run B: (3 + √2)·B, B with the angles of positions up
                  // to a + b.
                  RopeSpec widest = s;
                  widest.positions.values = sum;
                  return Verdict::of(
                      compare(before, direct, second,
                              (3 + std::numbers::sqrt2) * rope_exact_bound(impl.bound, widest)),
                      "R(b)∘R(a)·x vs R(a+b)·x");
                });
              },
          .minimum = {{"long positions", 0.3}},
          .unpinnable = needs_unit_factor};
}

Property<RopeCall> inverse() {
  using Call = RopeCall;
  return {.name = "rope.inverse",
          .statement = "the inverse rotation at the same position undoes the rotation",
          .body =
              [](Case<Call>& c) {
                RopeSpec s = *rope_spec({.specials = false, .unit_factor = true});
                // A random cache scales by ‖(cos, sin)‖² on the way back, not 1.
                if (s.cache == Cache::random) s.cache = Cache::none;
                RC_CLASSIFY(s.positions.long_range(), "long positions");
                c.each([&](const Impl<Call>& impl) {
                  Arena arena, pristine;
                  const Call before = build(s, pristine);
                  const Call first = run(impl, s, arena);
                  Call back = first;
                  back.inverse = !s.inverse;
                  back.q = first.q_out;
                  back.q_out = s.in_place ? back.q : copy_of(first.q_out, arena);
                  if (s.hk) {
                    back.k = first.k_out;
                    back.k_out = s.in_place ? *back.k : copy_of(*first.k_out, arena);
                  }
                  impl.run(back);
                  Call expected = before;
                  expected.q_out = before.q;
                  expected.k_out = before.k;
                  // The forward pass's error rotates into ≤ √2·B; the backward pass adds B of
                  // a norm that may sit a binade up (2B). Both use the same angles, which
                  // cancel; a cache's rounding does not (kCacheRounding).
                  const double cache = s.cache == Cache::built ? kCacheRounding : 0;
                  return Verdict::of(compare(before, expected, back,
                                             (2 + std::numbers::sqrt2) * exact_bound(impl.bound) +
                                                 cache + 1.0 / 64),
                                     "R⁻¹(p)·R(p)·x vs x");
                });
              },
          .needs = variant::rope_inverse,
          .minimum = {{"long positions", 0.15, 0, variant::all_scalings}},
          .unpinnable = needs_unit_factor};
}

Property<RopeCall> interleaved_permutation() {
  using Call = RopeCall;
  return {.name = "rope.interleaved_permutation",
          .statement = "interleaved = P⁻¹·half-split·P, P moving dims (2i, 2i+1) to (i, i + d/2)",
          .body =
              [](Case<Call>& c) {
                const RopeSpec s = *rope_spec({.layout = RopeLayout::interleaved});
                c.each([&](const Impl<Call>& impl) {
                  Arena arena, pristine;
                  const Call before = build(s, pristine);
                  const Call interleaved = run(impl, s, arena);
                  RopeSpec hs = s;
                  hs.layout = RopeLayout::half_split;
                  const Call split = run(impl, hs, arena, [&](Call& call, Arena& a) {
                    call.q = relayout(before.q, s.rotary_dim, true, a);
                    call.q_out = s.in_place ? call.q : copy_of(call.q, a);
                    if (s.hk) {
                      call.k = relayout(*before.k, s.rotary_dim, true, a);
                      call.k_out = s.in_place ? *call.k : copy_of(*call.k, a);
                    }
                  });
                  Call expected = interleaved;
                  expected.q_out = relayout(split.q_out, s.rotary_dim, false, arena);
                  if (s.hk) expected.k_out = relayout(*split.k_out, s.rotary_dim, false, arena);
                  return Verdict::of(
                      compare(before, expected, interleaved, metamorphic_bound(impl.bound)),
                      "interleaved vs P⁻¹·half-split·P");
                });
              },
          .needs = variant::rope_interleaved | variant::rope_half_split,
          .unpinnable =
              [](const PinnedRope&) {
                return std::string("runs both pair layouts, and a model has one");
              }};
}

Property<RopeCall> tail_untouched() {
  using Call = RopeCall;
  return {.name = "rope.tail_untouched",
          .statement = "dims from rotary_dim to head_dim pass through bit for bit",
          .body =
              [](Case<Call>& c) {
                const RopeSpec s = *rope_spec({.partial = true});
                RC_CLASSIFY(s.q.has_specials(), "specials");
                c.each([&](const Impl<Call>& impl) {
                  Arena arena, pristine;
                  const Call before = build(s, pristine);
                  const Call call = run(impl, s, arena);
                  const int64_t tail = s.head_dim - s.rotary_dim;
                  Comparison cmp = harness::compare(
                      "q_out tail", dims(before.q, s.rotary_dim, tail),
                      dims(call.q_out, s.rotary_dim, tail), 0, [](const int64_t*) { return 1.0; });
                  if (s.hk)
                    cmp.merge(harness::compare("k_out tail", dims(*before.k, s.rotary_dim, tail),
                                               dims(*call.k_out, s.rotary_dim, tail), 0,
                                               [](const int64_t*) { return 1.0; }));
                  return Verdict::of(cmp);
                });
              },
          .needs = variant::rope_partial,
          // 10% counts ±∞ and NaN among the specials: a kernel declaring finite inputs only
          // draws ±0 and subnormals alone, at a lower rate (9.5% at CI's seed).
          .minimum = {{"specials", 0.1, variant::nonfinite_inputs}},
          .unpinnable =
              [](const PinnedRope& pin) {
                return pin.rotary_dim < pin.head_dim ? std::string()
                                                     : "the model rotates every dim (no tail)";
              }};
}

Property<RopeCall> cached_equals_on_the_fly() {
  using Call = RopeCall;
  return {.name = "rope.cached_equals_on_the_fly",
          .statement =
              "with a cos/sin cache built for the same scaling, the result is the on-the-fly one",
          .body =
              [](Case<Call>& c) {
                RopeSpec s = *rope_spec({.cache = Cache::built});
                RopeSpec fly = s;
                fly.cache = Cache::none;
                c.each([&](const Impl<Call>& impl) {
                  Arena arena, pristine;
                  const Call before = build(fly, pristine);
                  const Call on_the_fly = run(impl, fly, arena);
                  const Call cached = run(impl, s, arena);
                  // Two runs of the kernel (2·bound + 1) with the same fp64 angles, and the cache's
                  // own f32 rounding.
                  return Verdict::of(
                      compare(before, on_the_fly, cached,
                              metamorphic_bound(impl.bound) + kCacheRounding + 1.0 / 64),
                      "cached vs on the fly");
                });
              },
          .needs = variant::rope_cached};
}

Property<RopeCall> linear_is_position_over_factor() {
  using Call = RopeCall;
  using K = RopeScalingKind;
  return {.name = "rope.linear_is_position_over_factor",
          .statement = "linear scaling by f at position f·m equals no scaling at position m",
          .body =
              [](Case<Call>& c) {
                RopeSpec s = *rope_spec({.cache = Cache::none});
                const int64_t f = *gen::uniform(2, 16);
                s.scaling.kind = K::linear;
                s.scaling.factor = static_cast<double>(f);
                RopeSpec plain = s;
                plain.scaling.kind = K::none;
                for (auto& p : plain.positions.values) p /= f;
                for (size_t t = 0; t < s.positions.values.size(); ++t)
                  s.positions.values[t] = plain.positions.values[t] * f;
                RC_CLASSIFY(s.positions.long_range(), "long positions");
                c.each([&](const Impl<Call>& impl) {
                  Arena arena, pristine;
                  const Call before = build(plain, pristine);
                  const Call scaled = run(impl, s, arena);
                  const Call unscaled = run(impl, plain, arena);
                  // (ω/f)·(f·m) and ω·m differ by fp64 rounding only (⅛ unit, as for the
                  // reference).
                  return Verdict::of(
                      compare(before, unscaled, scaled, metamorphic_bound(impl.bound) + 0.125),
                      fmt::format("linear(f={}) at f·m vs none at m", f));
                });
              },
          .needs = variant::scaling_bit(K::linear) | variant::scaling_bit(K::none),
          .minimum = {{"long positions", 0.15}},
          .unpinnable =
              [](const PinnedRope&) {
                return std::string("varies the linear factor and compares with no scaling");
              }};
}

Property<RopeCall> shuffle() {
  using Call = RopeCall;
  using K = RopeScalingKind;
  return {.name = "rope.shuffle",
          .statement =
              "rope then causal attention: swapping two earlier distinct tokens changes the "
              "last output",
          .body =
              [](Case<Call>& c) {
                // Slots carry positions offset + t; tokens carry q, k and v. Small heads and values
                // in (−1, 1) keep the softmax far from one-hot, so every key visibly weighs in.
                RopeSpec s = *rope_spec({.specials = false,
                                         .cache = Cache::none,
                                         .needs_k = true,
                                         .min_tokens = 3,
                                         .max_tokens = 12});
                s.head_dim = std::min<int64_t>(s.head_dim, 8);
                s.head_dim = std::max<int64_t>(s.head_dim, 2);
                s.rotary_dim = s.head_dim / 2 * 2;
                s.inverse = false;
                s.scaling = *gen::scaling(K::none, s.rotary_dim, s.base);
                s.hq = s.hk * *gen::uniform(1, 2);
                s.q = *gen::finite_fill(0);
                s.k = *gen::finite_fill(0);
                const int64_t offset = *gen::uniform(0, kMaxPosition - s.tokens);
                for (int64_t t = 0; t < s.tokens; ++t) s.positions.values[t] = offset + t;
                const int64_t i = *gen::uniform(0, s.tokens - 3),
                              j = *gen::uniform(i + 1, s.tokens - 2);
                const Fill v = *gen::finite_fill(0);
                RC_CLASSIFY(offset > (1 << 20), "long positions");
                c.each([&](const Impl<Call>& impl) {
                  // Attention's last output over rope'd q and k, tokens reordered by `swap`.
                  auto last_output = [&](bool swap, Arena& arena) {
                    const Call call = run(impl, s, arena, [&](Call& r, Arena&) {
                      if (!swap) return;
                      for (const Tensor* x : {&r.q, &*r.k})
                        for (int64_t h = 0; h < x->shape[1]; ++h)
                          for (int64_t e = 0; e < x->shape[2]; ++e) {
                            const double a = load(*x, x->offset(i, h, e)),
                                         b = load(*x, x->offset(j, h, e));
                            store(*x, x->offset(i, h, e), b);
                            store(*x, x->offset(j, h, e), a);
                          }
                    });
                    AttentionCall att;
                    att.q = call.q_out;
                    att.k = *call.k_out;
                    att.v = arena.alloc(DType::f32, {s.tokens, s.hk, 4});
                    v.apply(att.v);
                    if (swap)
                      for (int64_t h = 0; h < s.hk; ++h)
                        for (int64_t e = 0; e < 4; ++e) {
                          const double a = load(att.v, att.v.offset(i, h, e));
                          store(att.v, att.v.offset(i, h, e), load(att.v, att.v.offset(j, h, e)));
                          store(att.v, att.v.offset(j, h, e), a);
                        }
                    att.out = arena.alloc(DType::f32, {s.tokens, s.hq, 4});
                    att.mask = Mask::causal;
                    reference_impl<AttentionCall>().run(att);
                    return att;
                  };
                  Arena one, two;
                  const AttentionCall original = last_output(false, one);
                  const AttentionCall swapped = last_output(true, two);
                  // Position-blind rotation would leave the last query's key set unchanged: its
                  // output could differ by the attention reference's rounding only (1 unit).
                  auto last_row = [&](AttentionCall a) {
                    auto row = [&](Tensor t) {
                      t.data = static_cast<char*>(t.data) + (s.tokens - 1) * t.strides[0] * 4;
                      t.shape[0] = 1;
                      return t;
                    };
                    a.q = row(a.q);
                    a.out = row(a.out);
                    return a;
                  };
                  const Comparison cmp = compare(last_row(original), last_row(swapped), 1);
                  if (!cmp.ok) return Verdict::pass();
                  return Verdict::fail(fmt::format(
                      "swapping tokens {} and {} left the last attention output within {} unit of "
                      "itself: position did not reach the scores",
                      i, j, cmp.bound));
                });
              },
          .needs = variant::rope_key,
          .minimum = {{"long positions", 0.15}},
          .unpinnable =
              [](const PinnedRope&) {
                return std::string("draws its own head_dim (at most 8) and no scaling");
              }};
}

}  // namespace rope

namespace {

std::vector<Property<RopeCall>> rope_properties() {
  using namespace rope;
  auto props = generic_properties<RopeCall>("rope", rope_problems());
  for (auto property :
       {pair_norm(), relative(), identity(), composition(), inverse(), interleaved_permutation(),
        tail_untouched(), cached_equals_on_the_fly(), linear_is_position_over_factor(), shuffle()})
    props.push_back(std::move(property));
  return props;
}

}  // namespace

template <>
std::vector<Property<RopeCall>> properties<RopeCall>() {
  return rope_properties();
}

}  // namespace posenc::harness
