// rope: compare(), the problem spec and its builders, the tolerance model, smoke problems
// (properties/rope.h); the properties are in rope_properties.cc.
#include "properties/rope.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <string>
#include <tuple>

#include "properties/generic.h"
#include "reference/reference.h"

namespace posenc::harness {

namespace rope {

Tensor dims(Tensor t, int64_t from, int64_t count) {
  // An empty view may have no data: offsetting a null pointer is UB (found by rope_fuzz).
  if (t.data) t.data = static_cast<char*>(t.data) + from * t.strides[2] * dtype_size(t.dtype);
  t.shape[2] = count;
  return t;
}

}  // namespace rope

Comparison compare(const RopeCall& input, const RopeCall& expected, const RopeCall& got,
                   const Bound& bound) {
  // Unit: ulp(f·‖(a, b)‖) in the dtype of the output under test, per rotated element, (a, b) its
  // pair in `input` (in-place calls have overwritten theirs in `expected`), f the attention factor,
  // or with a cache the norm of the (cos, sin) it holds; see rope.h. A bf16 or f16 output is held
  // to the contract's bound for its dtype (dtype_bound). The tail is compared bit for bit.
  const int64_t d = input.rotary_dim, half = d / 2;
  const double f =
      input.cached() ? 0 : reference::frequencies(d, input.base, input.scaling).attention_factor;
  auto one = [&](const std::string& name, const Tensor& x, const Tensor& want, const Tensor& have) {
    auto unit = [&](const int64_t* ix) {
      const int64_t t = ix[0], h = ix[1], j = ix[2];
      const int64_t i = input.layout == RopeLayout::half_split ? j % half : j / 2;
      const int64_t j0 = input.layout == RopeLayout::half_split ? i : 2 * i;
      const int64_t j1 = input.layout == RopeLayout::half_split ? i + half : 2 * i + 1;
      const double a = load(x, x.offset(t, h, j0)), b = load(x, x.offset(t, h, j1));
      double scale = f;
      if (input.cached()) {
        const int64_t p = load_index(input.positions, input.positions.offset(t));
        scale = std::hypot(load(*input.cos, input.cos->offset(p, i)),
                           load(*input.sin, input.sin->offset(p, i)));
      }
      return ulp_of(have.dtype, scale * std::hypot(a, b));
    };
    Comparison c = harness::compare(name, rope::dims(want, 0, d), rope::dims(have, 0, d),
                                    dtype_bound(have.dtype, bound), unit);
    const int64_t tail = x.shape[2] - d;
    c.merge(harness::compare(name + "[:, :, rotary_dim:]", rope::dims(want, d, tail),
                             rope::dims(have, d, tail), 0, [](const int64_t*) { return 1.0; }));
    return c;
  };
  Comparison c = one("q_out", input.q, expected.q_out, got.q_out);
  if (input.k) c.merge(one("k_out", *input.k, *expected.k_out, *got.k_out));
  return c;
}

namespace rope {

std::string describe(const RopeSpec& s) {
  std::string str = fmt::format(
      "{} tokens={} hq={} hk={} head_dim={} rotary_dim={} {}{}{} base={} ", dtype_name(s.dtype),
      s.tokens, s.hq, s.hk, s.head_dim, s.rotary_dim, layout_name(s.layout),
      s.inverse ? " inverse" : "", s.in_place ? " in place" : "", s.base);
  const std::string cache_dtype = std::string(dtype_name(s.cache_dtype)) + " ";
  str += s.cache == Cache::none ? s.scaling.describe()
         : s.cache == Cache::built
             ? cache_dtype + (s.vllm ? "vllm cache of " : "cache of ") + s.scaling.describe()
             : cache_dtype + "random cache (" + s.table.describe() + ")";
  str += " positions=" + s.positions.describe() + " q=(" + s.q.describe() + ")";
  if (s.hk) str += " k=(" + s.k.describe() + ")";
  if (any_strided(s.layouts)) {
    str += " layouts";
    for (int i = 0; i < 7; ++i) str += fmt::format(" {}", layout_name(s.layouts[i]));
  }
  return str;
}

void showValue(const RopeSpec& s, std::ostream& os) { os << describe(s); }

RopeCall build(const RopeSpec& s, Arena& arena) {
  RopeCall call{.rotary_dim = s.rotary_dim,
                .layout = s.layout,
                .inverse = s.inverse,
                .base = s.base,
                .scaling = s.scaling};
  alloc_activations(s, arena, call);
  call.positions = arena.alloc(s.positions.dtype, {s.tokens}, s.layouts[4]);
  s.positions.store(call.positions);
  const int64_t rows = s.positions.max() + 1, half = s.rotary_dim / 2;
  if (s.cache == Cache::built) {
    if (s.vllm) {
      std::tie(call.cos, call.sin) = vllm_cache(arena, rows, s.rotary_dim, s.cache_dtype);
    } else {
      call.cos = arena.alloc(s.cache_dtype, {rows, half}, s.layouts[5]);
      call.sin = arena.alloc(s.cache_dtype, {rows, half}, s.layouts[6]);
    }
    reference_impl<RopeCacheCall>().run({.rotary_dim = s.rotary_dim,
                                         .base = s.base,
                                         .scaling = s.scaling,
                                         .cos = *call.cos,
                                         .sin = *call.sin});
  } else if (s.cache == Cache::random) {
    call.cos = arena.alloc(s.cache_dtype, {rows, half}, s.layouts[5]);
    call.sin = arena.alloc(s.cache_dtype, {rows, half}, s.layouts[6]);
    s.table.apply(*call.cos);
    Fill sin_values = s.table;
    sin_values.seed += 1;
    sin_values.apply(*call.sin);
  }
  return call;
}

void apply_pin(RopeSpec& s) {
  const PinnedRope* pin = pinned_rope();
  if (!pin) return;
  s.head_dim = pin->head_dim;
  s.rotary_dim = pin->rotary_dim;
  s.layout = pin->layout;
  s.base = pin->base;
  s.scaling = pin->scaling;
}

rc::Gen<RopeSpec> rope_spec(RopeOptions o) {
  // Drawn inside what the implementations under test declare (declared()): each undeclared
  // variant is left out, the rest drawn as ever.
  return rc::gen::exec([=] {
    const Declared& d = declared();
    const bool partial = d.has(variant::rope_partial) || o.partial;
    RopeSpec s;
    s.tokens =
        o.min_tokens > 0 ? *gen::sized(o.min_tokens, o.max_tokens) : *gen::count(o.max_tokens);
    // Mostly 1–4 heads; in 1 case in 8 up to 128 (with a small head dim, so cases stay cheap)
    // and GQA ratios up to 16, where a kernel that tiles heads (16 at a time) meets its edges.
    const bool many_heads = *rc::gen::weightedElement<bool>({{7, false}, {1, true}});
    s.hq = many_heads ? *gen::uniform(5, 128) : *gen::uniform(1, 4);
    const auto kv_heads =
        many_heads ? rc::gen::map(rc::gen::element<int64_t>(1, 2, 4, 8, 16),
                                  [hq = s.hq](int64_t r) { return std::max<int64_t>(1, hq / r); })
                   : gen::uniform(1, 4);
    s.hk = o.needs_k ? *kv_heads
           : !d.has(variant::rope_key)
               ? 0
               : *rc::gen::weightedOneOf<int64_t>({{1, rc::gen::just<int64_t>(0)}, {3, kv_heads}});
    // Angles on the fly need a scaling kind declared, any one.
    const uint64_t on_the_fly = d.has_any(variant::all_scalings) ? 0 : variant::all_scalings;
    s.cache = o.cache ? *o.cache
                      : *gen::declared_element<Cache>({{3, Cache::none, on_the_fly},
                                                       {1, Cache::built, variant::rope_cached},
                                                       {1, Cache::random, variant::rope_cached}});
    // Small odd and even head dims, and in 1 case in 6 a model's (64 to 512; on the fly only, as
    // a cache has a row of rotary_dim/2 per position).
    const int64_t lo_dim = o.partial ? 3 : 2;
    if (many_heads)
      s.head_dim = *gen::sized(lo_dim, 8);
    else if (s.cache == Cache::none && *rc::gen::weightedElement<bool>({{5, false}, {1, true}}))
      s.head_dim = *rc::gen::element<int64_t>(64, 80, 96, 128, 256, 512);
    else
      s.head_dim = *gen::sized(lo_dim, s.cache == Cache::none ? 160 : 80);
    if (!partial) s.head_dim = s.head_dim / 2 * 2;
    // Full rotary dim half the time; otherwise any even dim up to it (partial rotary).
    const int64_t full = s.head_dim / 2 * 2;
    s.rotary_dim =
        o.partial ? 2 * *gen::uniform(1, (s.head_dim - 1) / 2)
        : !partial
            ? full
            : *rc::gen::weightedOneOf<int64_t>(
                  {{1, rc::gen::just(full)},
                   {1, rc::gen::map(gen::uniform(1, full / 2), [](int64_t h) { return 2 * h; })}});
    s.layout = o.layout ? *o.layout
               : d.has(variant::rope_half_split | variant::rope_interleaved)
                   ? *rc::gen::element(RopeLayout::half_split, RopeLayout::interleaved)
               : d.has(variant::rope_interleaved) ? RopeLayout::interleaved
                                                  : RopeLayout::half_split;
    s.inverse = d.has(variant::rope_inverse) && *rc::gen::arbitrary<bool>();
    s.in_place =
        d.has(variant::in_place) && *rc::gen::weightedElement<bool>({{2, false}, {1, true}});
    s.base = *gen::rope_base();
    // A cache's scaling too: a property may run the same problem on the fly.
    s.scaling = *gen::declared_scaling(s.rotary_dim, s.base);
    apply_pin(s);
    // Under a pin a property that needs f = 1 runs only when the model's is 1 (needs_unit_factor).
    if (o.unit_factor && !pinned_rope()) s.scaling.attention_factor = 1;
    // A vLLM cache's cos and sin are views of one [rows, cos | sin] table: strided.
    s.vllm = s.cache == Cache::built && d.has(variant::strided) && *rc::gen::arbitrary<bool>();
    s.positions = *gen::positions(
        s.tokens, pinned_position_cap(s.cache == Cache::none ? kMaxPosition : kCachedPositions));
    auto values = o.specials ? gen::fill() : gen::finite_fill();
    s.q = *values;
    s.k = *values;
    if (s.cache == Cache::random) s.table = *gen::finite_fill();
    s.layouts = *gen::layouts();
    if (o.any_dtype) {
      s.dtype = *gen::float_dtype();
      if (s.cache != Cache::none) s.cache_dtype = *gen::cache_dtype();
    }
    return s;
  });
}

void classify(const RopeSpec& s) {
  RC_CLASSIFY(s.tokens == 0, "empty");
  RC_CLASSIFY(s.positions.long_range(), "long positions");
  RC_CLASSIFY(s.rotary_dim / 2 % 16 != 0, "tail");
  RC_CLASSIFY(s.rotary_dim < s.head_dim, "partial");
  RC_CLASSIFY(s.hk > 0 && s.hk != s.hq, "GQA");
  RC_CLASSIFY(s.hq > 16, "more than 16 heads");
  RC_CLASSIFY(s.hk > 0 && s.hq >= 8 * s.hk, "GQA ratio >= 8");
  RC_CLASSIFY(s.head_dim >= 64 && s.head_dim % 16 == 0, "model head dim");
  RC_CLASSIFY(s.layout == RopeLayout::interleaved, "interleaved");
  RC_CLASSIFY(s.cache != Cache::none, "cached");
  RC_CLASSIFY(s.in_place, "in place");
  RC_CLASSIFY(s.inverse, "inverse");
  RC_CLASSIFY(s.q.has_specials() || (s.hk && s.k.has_specials()), "specials");
  RC_CLASSIFY(any_strided(s.layouts), "strided");
  RC_CLASSIFY(s.positions.kind == "varlen", "varlen");
  RC_CLASSIFY(s.positions.kind == "binade edges", "positions at 2^k - 1 and 2^k");
  classify_dtype(s.dtype);
  RC_CLASSIFY(s.cache != Cache::none && s.cache_dtype == DType::bf16, "bf16 cache");
  if (s.cache == Cache::none) RC_TAG(scaling_name(s.scaling.kind));
  if (s.cache != Cache::random) classify_switches(s.scaling, s.rotary_dim, s.base);
}

// fp64 angles: ω from pow is within an ulp and the product p·ω rounds by ½ more, so an angle is
// off by ≤ 1.5·p·ω·2⁻⁵² rad, and a rotated element by that times its pair's norm: at most
// 1.5·p·ω·2⁻²⁸ of the element's unit (a unit is at least 2⁻²⁴ of the norm). That is ≤ 0.1 unit
// while ω ≤ 1, but up to ¾ at position 2²⁴ with ω = 8 (a scaling factor of ⅛). 0 for a random
// cache, whose angles are no one's.
double angle_slack(const RopeSpec& s) {
  if (s.cache == Cache::random || s.positions.values.empty()) return 0;
  const auto freq = reference::frequencies(s.rotary_dim, s.base, s.scaling);
  const double omega = *std::max_element(freq.inv_freq.begin(), freq.inv_freq.end());
  return 1.5 * static_cast<double>(s.positions.max()) * omega * 0x1p-28;
}

// Against exact math, one run of a kernel within `bound` of the reference: the reference's
// rounding (½), its fp64 angles, and 1/64 for fp64 evaluation in the check itself.
double rope_exact_bound(double bound, const RopeSpec& s) {
  return exact_bound(bound) + angle_slack(s) + 1.0 / 64;
}

// Pair i's two dims.
std::pair<int64_t, int64_t> pair_dims(const RopeSpec& s, int64_t i) {
  if (s.layout == RopeLayout::half_split) return {i, i + s.rotary_dim / 2};
  return {2 * i, 2 * i + 1};
}

// The attention factor of an on-the-fly call (1 for a cached one, whose rows carry theirs).
double fly_factor(const RopeCall& call) {
  if (call.cached()) return 1;
  return reference::frequencies(call.rotary_dim, call.base, call.scaling).attention_factor;
}

// f for token t, pair i: `fly` (fly_factor) on the fly, ‖(cos, sin)‖ of the row read if cached.
double factor_at(const RopeCall& call, double fly, int64_t t, int64_t i) {
  if (!call.cached()) return fly;
  const int64_t p = load_index(call.positions, call.positions.offset(t));
  return std::hypot(load(*call.cos, call.cos->offset(p, i)),
                    load(*call.sin, call.sin->offset(p, i)));
}

RopeCall run(const Impl<RopeCall>& impl, const RopeSpec& s, Arena& arena) {
  return run(impl, s, arena, [](RopeCall&, Arena&) {});
}

// Writes positions into a call's positions tensor.
void set_positions(const RopeCall& call, const std::vector<int64_t>& values) {
  Positions p{values, call.positions.dtype, ""};
  p.store(call.positions);
}

// A contiguous copy of a [tokens, heads, head_dim] view, optionally as f64.
Tensor copy_of(const Tensor& t, Arena& arena, DType dtype) {
  const Tensor c = arena.alloc(dtype, {t.shape[0], t.shape[1], t.shape[2]});
  for (int64_t a = 0; a < t.shape[0]; ++a)
    for (int64_t h = 0; h < t.shape[1]; ++h)
      for (int64_t j = 0; j < t.shape[2]; ++j)
        store(c, c.offset(a, h, j), load(t, t.offset(a, h, j)));
  return c;
}

void repeat_tokens(const Tensor& q, const Tensor& k) {
  for (int64_t h = 0; h < q.shape[1]; ++h)
    for (int64_t j = 0; j < q.shape[2]; ++j)
      store(q, q.offset(2, h, j), load(q, q.offset(0, h, j)));
  for (int64_t h = 0; h < k.shape[1]; ++h)
    for (int64_t j = 0; j < k.shape[2]; ++j)
      store(k, k.offset(3, h, j), load(k, k.offset(1, h, j)));
}

double pair_unit(const Tensor& x, RopeLayout layout, int64_t rotary_dim, int64_t t, int64_t h,
                 int64_t j, double factor) {
  if (j >= rotary_dim) return 0;
  const int64_t half = rotary_dim / 2;
  const bool split = layout == RopeLayout::half_split;
  const int64_t i = split ? j % half : j / 2;
  const int64_t j0 = split ? i : 2 * i, j1 = split ? i + half : 2 * i + 1;
  return ulp_f32(factor * std::hypot(load(x, x.offset(t, h, j0)), load(x, x.offset(t, h, j1))));
}

Verdict same_dots(const Tensor& q_out, const Tensor& k_out, double b, const ElementUnit& unit_q,
                  const ElementUnit& unit_k,
                  const std::function<std::string(int64_t h, int64_t g)>& describe) {
  Comparison worst;
  for (int64_t h = 0; h < q_out.shape[1]; ++h)
    for (int64_t g = 0; g < k_out.shape[1]; ++g) {
      double dots[2] = {0, 0}, allowed = 0, unit = 0;
      for (int k2 = 0; k2 < 2; ++k2) {
        const int64_t tq = 2 * k2, tk = 2 * k2 + 1;
        for (int64_t j = 0; j < q_out.shape[2]; ++j) {
          const double x = load(q_out, q_out.offset(tq, h, j));
          const double y = load(k_out, k_out.offset(tk, g, j));
          const double ux = unit_q(tq, h, j), uy = unit_k(tk, g, j);
          dots[k2] += x * y;
          unit += std::fabs(x) * uy + std::fabs(y) * ux;
          allowed += b * (std::fabs(x) * uy + std::fabs(y) * ux) + b * b * ux * uy;
        }
      }
      merge_scalar(worst, dots[0], dots[1], unit > 0 ? allowed / unit : 0, unit > 0 ? unit : 1,
                   [&] { return describe(h, g); });
    }
  return Verdict::of(worst);
}

Verdict same_dots(const Tensor& q_out, const Tensor& k_out, double b, const Tensor& q_in,
                  const Tensor& k_in, RopeLayout layout, int64_t rotary_dim, int axis,
                  int64_t shift) {
  return same_dots(
      q_out, k_out, b,
      [&](int64_t t, int64_t h, int64_t j) { return pair_unit(q_in, layout, rotary_dim, t, h, j); },
      [&](int64_t t, int64_t h, int64_t j) { return pair_unit(k_in, layout, rotary_dim, t, h, j); },
      [&](int64_t h, int64_t g) {
        return fmt::format("⟨q_out, k_out⟩ heads ({}, {}) with axis {} shifted by {}", h, g, axis,
                           shift);
      });
}

// Rotary dims reordered between layouts: to half-split (i, i + d/2) from interleaved (2i, 2i + 1)
// or back; the tail is kept.
Tensor relayout(const Tensor& t, int64_t d, bool to_half_split, Arena& arena) {
  const Tensor c = copy_of(t, arena);
  for (int64_t a = 0; a < t.shape[0]; ++a)
    for (int64_t h = 0; h < t.shape[1]; ++h)
      for (int64_t i = 0; i < d / 2; ++i) {
        const int64_t from0 = to_half_split ? 2 * i : i,
                      from1 = to_half_split ? 2 * i + 1 : i + d / 2;
        const int64_t to0 = to_half_split ? i : 2 * i, to1 = to_half_split ? i + d / 2 : 2 * i + 1;
        store(c, c.offset(a, h, to0), load(t, t.offset(a, h, from0)));
        store(c, c.offset(a, h, to1), load(t, t.offset(a, h, from1)));
      }
  return c;
}

Problems<RopeCall, RopeSpec> rope_problems() {
  using Call = RopeCall;
  using K = RopeScalingKind;
  Problems<Call, RopeSpec> problems{
      .any = rope_spec({.any_dtype = true}),
      .large = rc::gen::exec([] {
        RopeSpec s = *rope_spec({.any_dtype = true, .max_tokens = 1});
        s.tokens = *gen::uniform(16, 128);
        s.hq = *gen::uniform(2, 8);
        s.head_dim = *rc::gen::element<int64_t>(64, 80, 128);
        s.rotary_dim = declared().has(variant::rope_partial)
                           ? std::min(s.rotary_dim, s.head_dim) / 2 * 2
                           : s.head_dim;
        if (s.cache == Cache::none) s.scaling = *gen::declared_scaling(s.rotary_dim, s.base);
        if (s.cache == Cache::built && s.scaling.kind == K::longrope)
          s.scaling = *gen::scaling(K::none, s.rotary_dim, s.base);
        apply_pin(s);
        s.positions = *gen::positions(
            s.tokens,
            pinned_position_cap(s.cache == Cache::none ? kMaxPosition : kCachedPositions));
        return s;
      }),
      .build = [](const RopeSpec& s, Arena& a) { return build(s, a); },
      .classify = classify,
      .minimum = dtype_shares({{"long positions", 0.15, 0, variant::all_scalings},
                               {"tail", 0.3},
                               {"partial", 0.2, variant::rope_partial},
                               {"GQA", 0.15, variant::rope_key},
                               {"interleaved", 0.3, variant::rope_interleaved},
                               {"cached", 0.2, variant::rope_cached},
                               {"in place", 0.15},
                               {"specials", 0.05},
                               {"strided", 0.2},
                               {"varlen", 0.05},
                               {"empty", 0.005},
                               {"bf16 cache", 0.05, variant::rope_cached | variant::bf16},
                               {"positions at 2^k - 1 and 2^k", 0.03},
                               {"more than 16 heads", 0.05},
                               {"GQA ratio >= 8", 0.01, variant::rope_key},
                               {"model head dim", 0.05, 0, variant::all_scalings},
                               {"seq_len at its switch", 0.02, 0,
                                variant::scaling_bit(RopeScalingKind::dynamic_ntk) |
                                    variant::scaling_bit(RopeScalingKind::longrope)},
                               {"yarn factor <= 1, derived attention factor", 0.01,
                                variant::scaling_bit(RopeScalingKind::yarn)},
                               {"llama3 wavelength at its threshold", 0.01,
                                variant::scaling_bit(RopeScalingKind::llama3)},
                               {"llama3 wavelength one ulp beside its threshold", 0.01,
                                variant::scaling_bit(RopeScalingKind::llama3)}}),
  };
  ViewOf<Call> q = [](Call& c) { return &c.q; };
  ViewOf<Call> q_out = [](Call& c) { return &c.q_out; };
  ViewOf<Call> k = [](Call& c) { return c.k ? &*c.k : nullptr; };
  ViewOf<Call> k_out = [](Call& c) { return c.k_out ? &*c.k_out : nullptr; };
  ViewOf<Call> positions = [](Call& c) { return &c.positions; };
  ViewOf<Call> cos = [](Call& c) { return c.cos ? &*c.cos : nullptr; };
  auto& m = problems.mutations;
  for (auto& x : view_mutations<Call>("q", q, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("q_out", q_out, true)) m.push_back(x);
  for (auto& x : view_mutations<Call>("k_out", k_out, true)) m.push_back(x);
  for (auto& x : view_mutations<Call>("positions", positions, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("cos", cos, false)) m.push_back(x);
  m.push_back(overlap_mutation<Call>("q_out", q_out, "k", k));
  m.push_back(overlap_mutation<Call>("k_out", k_out, "q_out", q_out));
  m.push_back(position_mutation<Call>("position 2^24 + 1", positions,
                                      [](const Call&) { return kMaxPosition + 1; }));
  m.push_back(position_mutation<Call>("position past the cache", positions, [](const Call& c) {
    return c.cos ? c.cos->shape[0] : kMaxPosition + 1;
  }));
  m.push_back(position_mutation<Call>("position -1", positions, [](const Call&) { return -1; }));
  m.push_back({"odd rotary_dim", [](Call& c, Arena&) {
                 --c.rotary_dim;
                 return true;
               }});
  m.push_back({"rotary_dim > head_dim", [](Call& c, Arena&) {
                 c.rotary_dim = c.q.shape[2] / 2 * 2 + 2;
                 return true;
               }});
  m.push_back({"layout = 5", [](Call& c, Arena&) {
                 c.layout = static_cast<RopeLayout>(5);
                 return true;
               }});
  m.push_back({"k without k_out", [](Call& c, Arena&) {
                 if (!c.k) return false;
                 c.k_out.reset();
                 return true;
               }});
  m.push_back({"k tokens differ", [](Call& c, Arena&) {
                 if (!c.k || c.k->shape[0] == 0) return false;
                 --c.k->shape[0];
                 --c.k_out->shape[0];
                 return true;
               }});
  m.push_back({"cos without sin", [](Call& c, Arena&) {
                 if (!c.cos) return false;
                 c.sin.reset();
                 return true;
               }});
  m.push_back({"scaling factor = -1", [](Call& c, Arena&) {
                 c.scaling.factor = -1;
                 return !c.cos && c.scaling.kind != K::none && c.scaling.kind != K::ntk;
               }});

  return problems;
}

}  // namespace rope

namespace {

using rope::Cache;

struct RopeShape {
  int64_t tokens, hq, hk;  // hk = 0: no k
  int64_t head_dim, rotary_dim;
  RopeLayout layout;
  RopeScalingKind scaling;
  Cache cache;
  bool inverse, in_place;
  Layout memory;
  DType positions;
  int64_t max_position;      // the first token sits here, the others anywhere in [0, max_position]
  DType dtype = DType::f32;  // q, k and their outputs
};

Problem<RopeCall> rope_problem(RopeShape s, uint64_t seed) {
  const char* cache = s.cache == Cache::none    ? "on the fly"
                      : s.cache == Cache::built ? "cached"
                                                : "random cache";
  const double base = s.scaling == RopeScalingKind::llama3 ? 500000 : 10000;
  const RopeScaling scaling = example_scaling(s.scaling, s.rotary_dim);
  std::string label = fmt::format(
      "{} tokens={} hq={} hk={} head_dim={} rotary_dim={} {}{} {} {}{} {} {} positions<={}",
      dtype_name(s.dtype), s.tokens, s.hq, s.hk, s.head_dim, s.rotary_dim, layout_name(s.layout),
      s.inverse ? " inverse" : "", s.cache == Cache::none ? scaling.describe() : std::string(),
      cache, s.in_place ? " in place" : "", layout_name(s.memory), dtype_name(s.positions),
      s.max_position);
  return {label, [=](Arena& arena) {
            Values values(seed);
            RopeCall call{.rotary_dim = s.rotary_dim,
                          .layout = s.layout,
                          .inverse = s.inverse,
                          .base = base,
                          .scaling = scaling};
            call.q = arena.alloc(s.dtype, {s.tokens, s.hq, s.head_dim}, s.memory);
            values.fill(call.q, -2, 2);
            call.q_out =
                s.in_place ? call.q : arena.alloc(s.dtype, {s.tokens, s.hq, s.head_dim}, s.memory);
            if (s.hk > 0) {
              call.k = arena.alloc(s.dtype, {s.tokens, s.hk, s.head_dim}, s.memory);
              values.fill(*call.k, -2, 2);
              call.k_out = s.in_place
                               ? *call.k
                               : arena.alloc(s.dtype, {s.tokens, s.hk, s.head_dim}, s.memory);
            }
            call.positions = arena.alloc(s.positions, {s.tokens});
            values.fill_index(call.positions, 0, s.max_position);
            if (s.positions == DType::i64)
              call.positions.as<int64_t>()[0] = s.max_position;
            else
              call.positions.as<int32_t>()[0] = static_cast<int32_t>(s.max_position);
            const int64_t rows = s.max_position + 1, half = s.rotary_dim / 2;
            if (s.cache == Cache::built) {
              std::tie(call.cos, call.sin) = vllm_cache(arena, rows, s.rotary_dim);
              reference_impl<RopeCacheCall>().run({.rotary_dim = s.rotary_dim,
                                                   .base = base,
                                                   .scaling = scaling,
                                                   .cos = *call.cos,
                                                   .sin = *call.sin});
            } else if (s.cache == Cache::random) {
              call.cos = arena.alloc(DType::f32, {rows, half}, s.memory);
              call.sin = arena.alloc(DType::f32, {rows, half}, s.memory);
              values.fill(*call.cos);
              values.fill(*call.sin);
            }
            return call;
          }};
}

}  // namespace

template <>
std::vector<Problem<RopeCall>> smoke_problems<RopeCall>() {
  using K = RopeScalingKind;
  using L = Layout;
  using R = RopeLayout;
  using C = Cache;
  constexpr int64_t kTop = kMaxPosition;
  return {
      // tokens hq hk head_dim rotary_dim layout scaling cache inverse in_place memory positions max
      rope_problem({7, 4, 4, 64, 64, R::half_split, K::none, C::none, false, false, L::contiguous,
                    DType::i64, 4096},
                   1),
      rope_problem({5, 2, 0, 64, 32, R::interleaved, K::linear, C::none, false, true, L::padded,
                    DType::i64, 1 << 20},
                   2),
      rope_problem({6, 8, 2, 128, 128, R::half_split, K::ntk, C::none, true, false, L::permuted,
                    DType::i32, kTop},
                   3),
      rope_problem({9, 3, 1, 32, 32, R::interleaved, K::dynamic_ntk, C::none, true, true, L::padded,
                    DType::i64, kTop},
                   4),
      rope_problem({4, 4, 1, 96, 64, R::half_split, K::yarn, C::none, false, false, L::contiguous,
                    DType::i64, kTop},
                   5),
      rope_problem({5, 4, 2, 128, 128, R::half_split, K::llama3, C::none, false, true,
                    L::contiguous, DType::i64, 1 << 17},
                   6),
      rope_problem({5, 2, 2, 96, 96, R::half_split, K::longrope, C::none, false, true, L::padded,
                    DType::i64, kTop},
                   7),
      rope_problem({8, 4, 1, 80, 64, R::half_split, K::yarn, C::built, false, false, L::contiguous,
                    DType::i64, 4096},
                   8),
      rope_problem({6, 3, 2, 24, 16, R::interleaved, K::none, C::random, true, true, L::permuted,
                    DType::i32, 300},
                   9),
      rope_problem({3, 2, 3, 16, 8, R::interleaved, K::llama3, C::built, true, false, L::padded,
                    DType::i64, 64},
                   10),
      rope_problem({7, 4, 2, 128, 128, R::half_split, K::none, C::none, false, true, L::contiguous,
                    DType::i64, 4096, DType::bf16},
                   11),
      rope_problem({5, 2, 1, 80, 64, R::interleaved, K::yarn, C::none, true, false, L::padded,
                    DType::i32, kTop, DType::f16},
                   12),
      rope_problem({6, 4, 1, 64, 64, R::half_split, K::none, C::built, false, true, L::permuted,
                    DType::i64, 2048, DType::bf16},
                   13),
  };
}

}  // namespace posenc::harness
