// vision_rope: outputs, tolerance model, problems and properties. The tolerance is rope's, pair by
// pair (compare through the 1D call on the same tensors); the properties tie 2D vision rope to its
// axes (swap, a zero axis, 1D rope on each half) and to rope's own laws.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "properties/generic.h"
#include "properties/rope.h"
#include "reference/reference.h"

namespace posenc::harness {

Comparison compare(const VisionRopeCall& input, const VisionRopeCall& expected,
                   const VisionRopeCall& got, const Bound& bound) {
  // rope's unit and tail rule; positions are not read on the fly.
  const Tensor column = mrope_axis_positions(input.positions, 0);
  return compare(as_rope(input, column), as_rope(expected, column), as_rope(got, column), bound);
}

namespace {

using Convention = VisionRopeConvention;
using Order = VisionAxisOrder;

// One vision_rope problem. Layout slots: q, q_out, k, k_out, positions.
struct VisionRopeSpec {
  int64_t tokens = 0, hq = 1, hk = 0, head_dim = 4, rotary_dim = 4;  // hk = 0: no k
  Convention convention = Convention::axial;
  Order axis_order = Order::row_first;
  int64_t offset = 0;
  RopeLayout layout = RopeLayout::half_split;
  bool inverse = false, in_place = false;
  double base = 10000;
  // 2·tokens effective positions p + offset, token-major (row, column of token 0, then token 1);
  // the call's positions are these minus the offset.
  Positions positions;
  Fill q, k;
  Layouts layouts = uniform_layouts(Layout::contiguous);
  DType dtype = DType::f32;
};

std::string describe(const VisionRopeSpec& s) {
  std::string str = fmt::format(
      "{} tokens={} hq={} hk={} head_dim={} rotary_dim={} {} {} offset={} {}{}{} base={} "
      "positions+offset={} q=({})",
      dtype_name(s.dtype), s.tokens, s.hq, s.hk, s.head_dim, s.rotary_dim,
      convention_name(s.convention), axis_order_name(s.axis_order), s.offset, layout_name(s.layout),
      s.inverse ? " inverse" : "", s.in_place ? " in place" : "", s.base, s.positions.describe(),
      s.q.describe());
  if (s.hk) str += " k=(" + s.k.describe() + ")";
  if (any_strided(s.layouts)) {
    str += " layouts";
    for (int i = 0; i < 5; ++i) str += fmt::format(" {}", layout_name(s.layouts[i]));
  }
  return str;
}

void showValue(const VisionRopeSpec& s, std::ostream& os) { os << describe(s); }

VisionRopeCall build(const VisionRopeSpec& s, Arena& arena) {
  VisionRopeCall call{.rotary_dim = s.rotary_dim,
                      .convention = s.convention,
                      .axis_order = s.axis_order,
                      .position_offset = s.offset,
                      .layout = s.layout,
                      .inverse = s.inverse,
                      .base = s.base};
  rope::alloc_activations(s, arena, call);
  call.positions = arena.alloc(s.positions.dtype, {s.tokens, 2}, s.layouts[4]);
  for (int64_t t = 0; t < s.tokens; ++t)
    for (int a = 0; a < 2; ++a)
      store_index(call.positions, call.positions.offset(t, a),
                  s.positions.values[2 * t + a] - s.offset);
  return call;
}

struct VisionRopeOptions {
  bool specials = true, needs_k = false, any_dtype = false;
  int64_t min_tokens = 0, max_tokens = 16;
};

rc::Gen<VisionRopeSpec> vision_rope_spec(VisionRopeOptions o) {
  // Drawn inside what the implementations under test declare (declared()), as rope_spec.
  return rc::gen::exec([=] {
    const Declared& d = declared();
    auto either = [&](uint64_t a, uint64_t b, auto x, auto y) {
      return d.has(a | b) ? *rc::gen::element(x, y) : d.has(b) ? y : x;
    };
    VisionRopeSpec s;
    s.tokens =
        o.min_tokens > 0 ? *gen::sized(o.min_tokens, o.max_tokens) : *gen::count(o.max_tokens);
    s.hq = *gen::uniform(1, 4);
    s.hk = o.needs_k ? *gen::uniform(1, 4)
           : !d.has(variant::vision_rope_key)
               ? 0
               : *rc::gen::weightedOneOf<int64_t>(
                     {{1, rc::gen::just<int64_t>(0)}, {3, gen::uniform(1, 4)}});
    // Qwen2.5-VL's 80, Pixtral's 64 and Llama 4's 88 beside any multiple of 4.
    s.head_dim = *rc::gen::weightedOneOf<int64_t>(
        {{1, rc::gen::element<int64_t>(64, 80, 88)}, {3, gen::sized(4, 160)}});
    if (!d.has(variant::vision_rope_partial)) s.head_dim = std::max<int64_t>(4, s.head_dim / 4 * 4);
    const int64_t full = s.head_dim / 4 * 4;
    s.rotary_dim =
        !d.has(variant::vision_rope_partial)
            ? full
            : *rc::gen::weightedOneOf<int64_t>(
                  {{2, rc::gen::just(full)},
                   {1, rc::gen::map(gen::uniform(1, full / 4), [](int64_t q) { return 4 * q; })}});
    s.convention = either(variant::vision_rope_axial, variant::vision_rope_pixtral,
                          Convention::axial, Convention::pixtral);
    s.axis_order = d.has(variant::vision_rope_column_first) && *rc::gen::arbitrary<bool>()
                       ? Order::column_first
                       : Order::row_first;
    s.layout = either(variant::vision_rope_half_split, variant::vision_rope_interleaved,
                      RopeLayout::half_split, RopeLayout::interleaved);
    s.inverse = d.has(variant::vision_rope_inverse) && *rc::gen::arbitrary<bool>();
    s.in_place =
        d.has(variant::in_place) && *rc::gen::weightedElement<bool>({{2, false}, {1, true}});
    s.base = *gen::rope_base();
    s.positions = *gen::positions(2 * s.tokens, kMaxPosition);
    // Llama 4's 1 (its class token at (−1, −1)) or any offset the positions allow.
    if (d.has(variant::vision_rope_offset) && *rc::gen::arbitrary<bool>()) {
      const int64_t top = s.positions.values.empty() ? 0 : s.positions.max();
      s.offset = *rc::gen::weightedOneOf<int64_t>(
          {{2, rc::gen::just<int64_t>(1)}, {1, gen::uniform(-(kMaxPosition - top), kMaxPosition)}});
      if (s.offset == 0) s.offset = 1;
    }
    auto values = o.specials ? gen::fill() : gen::finite_fill();
    s.q = *values;
    s.k = *values;
    s.layouts = *gen::layouts();
    if (o.any_dtype) s.dtype = *gen::float_dtype();
    return s;
  });
}

void classify(const VisionRopeSpec& s) {
  RC_CLASSIFY(s.tokens == 0, "empty");
  RC_CLASSIFY(s.positions.long_range(), "long positions");
  RC_CLASSIFY(s.rotary_dim < s.head_dim, "partial");
  RC_CLASSIFY(s.convention == Convention::pixtral, "pixtral");
  RC_CLASSIFY(s.axis_order == Order::column_first, "column first");
  RC_CLASSIFY(s.offset != 0, "offset");
  RC_CLASSIFY(s.layout == RopeLayout::interleaved, "interleaved pairs");
  RC_CLASSIFY(s.in_place, "in place");
  RC_CLASSIFY(any_strided(s.layouts), "strided");
  classify_dtype(s.dtype);
}

VisionRopeCall run(const Impl<VisionRopeCall>& impl, const VisionRopeSpec& s, Arena& arena) {
  VisionRopeCall call = build(s, arena);
  impl.run(call);
  return call;
}

// Pair i's two dims.
std::pair<int64_t, int64_t> pair_dims(const VisionRopeSpec& s, int64_t i) {
  const int64_t half = s.rotary_dim / 2;
  return s.layout == RopeLayout::half_split ? std::pair{i, i + half} : std::pair{2 * i, 2 * i + 1};
}

// fp64 angles of the largest position: rope's angle slack (properties/rope.cc).
double angle_slack(const VisionRopeSpec& s) {
  if (s.positions.values.empty()) return 0;
  const auto freq = reference::frequencies(s.rotary_dim, s.base, RopeScaling{});
  const double omega = *std::max_element(freq.inv_freq.begin(), freq.inv_freq.end());
  return 1.5 * static_cast<double>(s.positions.max()) * omega * 0x1p-28;
}

// The spec with the axes exchanged: column_first on (c, r) for row_first on (r, c).
VisionRopeSpec swapped(VisionRopeSpec s) {
  s.axis_order = s.axis_order == Order::row_first ? Order::column_first : Order::row_first;
  for (int64_t t = 0; t < s.tokens; ++t)
    std::swap(s.positions.values[2 * t], s.positions.values[2 * t + 1]);
  return s;
}

std::vector<Property<VisionRopeCall>> vision_rope_properties() {
  using Call = VisionRopeCall;
  Problems<Call, VisionRopeSpec> problems{
      .any = vision_rope_spec({.any_dtype = true}),
      .large = rc::gen::exec([] {
        VisionRopeSpec s = *vision_rope_spec({.any_dtype = true, .max_tokens = 1});
        // As mrope's: building a case costs more than running it (the thread split itself is
        // tested at 1280 tokens in optimized/vision_rope_test.cc).
        s.tokens = *gen::uniform(16, 64);
        s.hq = *gen::uniform(2, 4);
        s.positions = *gen::positions(2 * s.tokens, kMaxPosition);
        // Raw positions p = (p + offset) − offset stay within ±kMaxPosition.
        s.offset = std::max(s.offset, s.positions.max() - kMaxPosition);
        return s;
      }),
      .build = [](const VisionRopeSpec& s, Arena& a) { return build(s, a); },
      .classify = classify,
      .minimum = dtype_shares({{"long positions", 0.15},
                               {"partial", 0.15, variant::vision_rope_partial},
                               {"pixtral", 0.3, variant::vision_rope_pixtral},
                               {"column first", 0.3, variant::vision_rope_column_first},
                               {"offset", 0.3, variant::vision_rope_offset},
                               {"interleaved pairs", 0.3, variant::vision_rope_interleaved},
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
  m.push_back(
      position_mutation<Call>("position 2^24 + 1 past the offset", positions,
                              [](const Call& c) { return kMaxPosition + 1 - c.position_offset; }));
  m.push_back(position_mutation<Call>("position -1 before the offset", positions,
                                      [](const Call& c) { return -1 - c.position_offset; }));
  m.push_back({"column position -1 before the offset", [](Call& c, Arena&) {
                 if (c.positions.shape[0] == 0) return false;
                 store_index(c.positions, c.positions.offset(0, 1), -1 - c.position_offset);
                 return true;
               }});
  m.push_back({"positions [tokens, 3]", [](Call& c, Arena&) {
                 c.positions.shape[1] = 3;
                 return true;
               }});
  m.push_back({"rotary_dim not a multiple of 4", [](Call& c, Arena&) {
                 c.rotary_dim -= 2;
                 return true;
               }});
  m.push_back({"odd rotary_dim", [](Call& c, Arena&) {
                 --c.rotary_dim;
                 return true;
               }});
  m.push_back({"position_offset 2^24 + 1", [](Call& c, Arena&) {
                 c.position_offset = kMaxPosition + 1;
                 return true;
               }});
  m.push_back({"convention = 5", [](Call& c, Arena&) {
                 c.convention = static_cast<Convention>(5);
                 return true;
               }});
  m.push_back({"axis_order = 7", [](Call& c, Arena&) {
                 c.axis_order = static_cast<Order>(7);
                 return true;
               }});
  m.push_back({"base = 1", [](Call& c, Arena&) {
                 c.base = 1;
                 return true;
               }});

  auto props = generic_properties<Call>("vision_rope", problems);

  props.push_back(
      {.name = "vision_rope.axis_swap",
       .statement = "row_first on (row, column) equals column_first on (column, row), bit for bit",
       .body = [](Case<Call>& c) {
         const VisionRopeSpec s = *vision_rope_spec({.any_dtype = true});
         classify(s);
         c.each([&](const Impl<Call>& impl) {
           Arena arena, other, pristine;
           const Call got = run(impl, s, arena);
           const Call swap = build(swapped(s), other);
           if (!supports(impl, swap)) return Verdict::pass();
           impl.run(swap);
           return Verdict::of(compare(build(s, pristine), got, swap, 0),
                              "axes exchanged vs as given");
         });
       }});

  props.push_back(
      {.name = "vision_rope.zero_axis",
       .statement =
           "a second axis at p + offset = 0 leaves its pairs as they were (equal values); with "
           "pairs (2i, 2i + 1) the first half of the head is 1D rope of rotary_dim d/2 on the "
           "first "
           "axis, else the first axis's pairs are the reference's",
       .body = [](Case<Call>& c) {
         VisionRopeSpec s = *vision_rope_spec({.specials = false, .any_dtype = true});
         const int second = s.axis_order == Order::row_first ? 1 : 0;
         for (int64_t t = 0; t < s.tokens; ++t) s.positions.values[2 * t + second] = 0;
         classify(s);
         const int64_t d = s.rotary_dim, quarter = d / 4;
         c.each([&](const Impl<Call>& impl) {
           Arena arena, ref, pristine;
           const Call input = build(s, pristine);
           const Call got = run(impl, s, arena);
           // The second axis's pairs: exactly their inputs.
           auto unchanged = [&](const Tensor& x, const Tensor& y) -> std::string {
             for (int64_t t = 0; t < s.tokens; ++t)
               for (int64_t h = 0; h < x.shape[1]; ++h)
                 for (int64_t i = quarter; i < 2 * quarter; ++i)
                   for (int64_t j : {pair_dims(s, i).first, pair_dims(s, i).second}) {
                     const double a = load(x, x.offset(t, h, j)), b = load(y, y.offset(t, h, j));
                     if (a != b)
                       return fmt::format(
                           "token {} head {} dim {} (pair {}, second axis at 0): input {} got {}",
                           t, h, j, i, a, b);
                   }
             return "";
           };
           std::string moved = unchanged(input.q, got.q_out);
           if (moved.empty() && s.hk) moved = unchanged(*input.k, *got.k_out);
           if (!moved.empty()) return Verdict::fail("q_out or k_out " + moved);
           Call expected = build(s, ref);
           if (s.layout == RopeLayout::interleaved) {
             // The second half as given, the first by rope on dims [0, d/2).
             reference_impl<Call>().run(expected);
             const Tensor first = arena.alloc(DType::i64, {s.tokens});
             for (int64_t t = 0; t < s.tokens; ++t)
               store_index(first, t, s.positions.values[2 * t + 1 - second]);
             RopeCall half{.q = rope::dims(expected.q, 0, d / 2),
                           .q_out = rope::dims(expected.q_out, 0, d / 2),
                           .positions = first,
                           .rotary_dim = d / 2,
                           .layout = RopeLayout::interleaved,
                           .inverse = s.inverse,
                           .base = s.base};
             if (s.hk) {
               half.k = rope::dims(*expected.k, 0, d / 2);
               half.k_out = rope::dims(*expected.k_out, 0, d / 2);
             }
             Arena copy;
             if (s.in_place) {  // rope reads the inputs the reference has overwritten
               Call fresh = build(s, copy);
               half.q = rope::dims(fresh.q, 0, d / 2);
               if (s.hk) half.k = rope::dims(*fresh.k, 0, d / 2);
             }
             reference_impl<RopeCall>().run(half);
           } else {
             reference_impl<Call>().run(expected);
           }
           return Verdict::of(compare(input, expected, got, impl.bound),
                              "vision rope with a zero axis vs 1D rope of the other");
         });
       }});

  props.push_back(
      {.name = "vision_rope.offset",
       .statement = "position_offset k on positions p equals offset 0 on p + k, bit for bit",
       .body =
           [](Case<Call>& c) {
             VisionRopeSpec s = *vision_rope_spec({.any_dtype = true});
             if (s.offset == 0) s.offset = 1;
             classify(s);
             VisionRopeSpec shifted = s;
             shifted.offset = 0;  // the same effective positions, passed as p + k
             c.each([&](const Impl<Call>& impl) {
               Arena arena, other, pristine;
               const Call with = build(s, arena);
               if (!supports(impl, with)) return Verdict::pass();
               impl.run(with);
               const Call without = run(impl, shifted, other);
               return Verdict::of(compare(build(s, pristine), without, with, 0),
                                  "offset k on p vs offset 0 on p + k");
             });
           },
       .needs = variant::vision_rope_offset});

  props.push_back(
      {.name = "vision_rope.pair_norm",
       .statement = "each rotated pair keeps its norm",
       .body = [](Case<Call>& c) {
         const VisionRopeSpec s = *vision_rope_spec({.specials = false});
         classify(s);
         c.each([&](const Impl<Call>& impl) {
           Arena arena, pristine;
           const Call before = build(s, pristine);
           const Call call = run(impl, s, arena);
           const double bound = std::numbers::sqrt2 * exact_bound(impl.bound) + 1.0 / 64;
           Comparison worst;
           auto check = [&](const char* name, const Tensor& x, const Tensor& y) {
             for (int64_t t = 0; t < s.tokens; ++t)
               for (int64_t h = 0; h < x.shape[1]; ++h)
                 for (int64_t i = 0; i < s.rotary_dim / 2; ++i) {
                   const auto [j0, j1] = pair_dims(s, i);
                   const double norm =
                       std::hypot(load(x, x.offset(t, h, j0)), load(x, x.offset(t, h, j1)));
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

  props.push_back(
      {.name = "vision_rope.relative",
       .statement = "per axis, ⟨R(m)q, R(n)k⟩ depends only on m − n: shifting one axis of both "
                    "by s changes nothing",
       .body =
           [](Case<Call>& c) {
             VisionRopeSpec s = *vision_rope_spec(
                 {.specials = false, .needs_k = true, .min_tokens = 4, .max_tokens = 4});
             const int axis = static_cast<int>(*gen::uniform(0, 1));
             // Tokens 0 (q) and 1 (k) at random positions; 2 and 3 the same with `axis` shifted.
             auto& p = s.positions.values;
             const int64_t near = 4096;
             for (int a = 0; a < 2; ++a) {
               p[a] = *gen::uniform(0, near);
               p[2 + a] = *gen::uniform(0, near);
             }
             const int64_t shift = *rc::gen::weightedOneOf<int64_t>(
                 {{1, gen::uniform(0, near)},
                  {2, gen::uniform(0, kMaxPosition - std::max(p[axis], p[2 + axis]))}});
             for (int a = 0; a < 2; ++a) {
               p[4 + a] = p[a] + (a == axis ? shift : 0);
               p[6 + a] = p[2 + a] + (a == axis ? shift : 0);
             }
             s.offset = std::max(s.offset, s.positions.max() - kMaxPosition);
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
       .needs = variant::vision_rope_key,
       .minimum = {{"long shift", 0.3}}});

  props.push_back(
      {.name = "vision_rope.inverse",
       .statement = "the inverse rotation at the same positions undoes the rotation",
       .body =
           [](Case<Call>& c) {
             const VisionRopeSpec s = *vision_rope_spec({.specials = false});
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
       .needs = variant::vision_rope_inverse});
  return props;
}

}  // namespace

template <>
std::vector<Problem<VisionRopeCall>> smoke_problems<VisionRopeCall>() {
  // Qwen2.5-VL (head_dim 80, axial, half-split), Pixtral (64, both pair layouts) and Llama 4
  // (88, axial, column first, offset 1, interleaved; its class token last at (−1, −1)).
  auto problem = [](Convention convention, Order order, int64_t offset, RopeLayout layout,
                    int64_t head_dim, DType dtype, uint64_t seed) {
    const int64_t tokens = 6, hq = 4, hk = 2;
    return Problem<VisionRopeCall>{
        fmt::format("{} tokens={} hq={} hk={} head_dim={} {} {} offset={} {}", dtype_name(dtype),
                    tokens, hq, hk, head_dim, convention_name(convention), axis_order_name(order),
                    offset, layout_name(layout)),
        [=](Arena& arena) {
          Values values(seed);
          VisionRopeCall call{.rotary_dim = head_dim,
                              .convention = convention,
                              .axis_order = order,
                              .position_offset = offset,
                              .layout = layout};
          call.q = arena.alloc(dtype, {tokens, hq, head_dim});
          values.fill(call.q, -2, 2);
          call.q_out = arena.alloc(dtype, {tokens, hq, head_dim});
          call.k = arena.alloc(dtype, {tokens, hk, head_dim});
          values.fill(*call.k, -2, 2);
          call.k_out = *call.k;  // in place
          call.positions = arena.alloc(DType::i64, {tokens, 2});
          values.fill_index(call.positions, 0, 64);
          if (offset == 1)
            for (int a = 0; a < 2; ++a)
              store_index(call.positions, call.positions.offset(5, a), -1);
          return call;
        }};
  };
  using C = Convention;
  using O = Order;
  using R = RopeLayout;
  return {problem(C::axial, O::row_first, 0, R::half_split, 80, DType::f32, 1),
          problem(C::pixtral, O::row_first, 0, R::half_split, 64, DType::bf16, 2),
          problem(C::pixtral, O::row_first, 0, R::interleaved, 64, DType::f16, 3),
          problem(C::axial, O::column_first, 1, R::interleaved, 88, DType::f32, 4)};
}

template <>
std::vector<Property<VisionRopeCall>> properties<VisionRopeCall>() {
  return vision_rope_properties();
}

}  // namespace posenc::harness
