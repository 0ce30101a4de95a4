// rope: outputs, tolerance model and problems.
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

namespace {

// The dims [from, from + count) of a [tokens, heads, head_dim] view.
Tensor dims(Tensor t, int64_t from, int64_t count) {
  // An empty view may have no data: offsetting a null pointer is UB (found by rope_fuzz).
  if (t.data) t.data = static_cast<char*>(t.data) + from * t.strides[2] * dtype_size(t.dtype);
  t.shape[2] = count;
  return t;
}

}  // namespace

Comparison compare(const RopeCall& input, const RopeCall& expected, const RopeCall& got,
                   double bound) {
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
    Comparison c = harness::compare(name, dims(want, 0, d), dims(have, 0, d),
                                    dtype_bound(have.dtype, bound), unit);
    const int64_t tail = x.shape[2] - d;
    c.merge(harness::compare(name + "[:, :, rotary_dim:]", dims(want, d, tail), dims(have, d, tail),
                             0, [](const int64_t*) { return 1.0; }));
    return c;
  };
  Comparison c = one("q_out", input.q, expected.q_out, got.q_out);
  if (input.k) c.merge(one("k_out", *input.k, *expected.k_out, *got.k_out));
  return c;
}

namespace {

enum class Cache : uint8_t {
  none,    // angles on the fly from base and scaling
  built,   // the reference's own table, in vLLM's [rows, cos | sin] layout
  random,  // arbitrary values: the kernel must read them as given
};

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

// ---- Generated problems and properties ----

// One rope problem. Layout slots: q, q_out, k, k_out, positions, cos, sin.
struct RopeSpec {
  int64_t tokens = 0, hq = 1, hk = 0, head_dim = 2, rotary_dim = 2;  // hk = 0: no k
  RopeLayout layout = RopeLayout::half_split;
  bool inverse = false, in_place = false;
  double base = 10000;
  RopeScaling scaling;
  Cache cache = Cache::none;
  bool vllm = false;  // a built cache in vLLM's [cos | sin] rows
  Positions positions;
  Fill q, k, table;  // table: the random cache's values
  Layouts layouts = uniform_layouts(Layout::contiguous);
  DType dtype = DType::f32;        // q, k and their outputs
  DType cache_dtype = DType::f32;  // cos and sin
};

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
  call.q = arena.alloc(s.dtype, {s.tokens, s.hq, s.head_dim}, s.layouts[0]);
  s.q.apply(call.q);
  call.q_out =
      s.in_place ? call.q : arena.alloc(s.dtype, {s.tokens, s.hq, s.head_dim}, s.layouts[1]);
  if (s.hk > 0) {
    call.k = arena.alloc(s.dtype, {s.tokens, s.hk, s.head_dim}, s.layouts[2]);
    s.k.apply(*call.k);
    call.k_out =
        s.in_place ? *call.k : arena.alloc(s.dtype, {s.tokens, s.hk, s.head_dim}, s.layouts[3]);
  }
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

// Cached problems keep positions (cache rows) below this, and rotary dims small: a cache has a row
// for every position up to the largest.
constexpr int64_t kCachedPositions = 2047;

struct RopeOptions {
  bool specials = true;
  std::optional<Cache> cache;  // forced, or any
  std::optional<RopeLayout> layout;
  bool needs_k = false, partial = false, unit_factor = false;
  // f32, bf16 or f16 activations and an f32 or bf16 cache; else f32 throughout (the mathematical
  // properties derive their tolerances from the f32 unit).
  bool any_dtype = false;
  int64_t min_tokens = 0, max_tokens = 16;
};

rc::Gen<RopeSpec> rope_spec(RopeOptions o) {
  return rc::gen::exec([=] {
    RopeSpec s;
    s.tokens =
        o.min_tokens > 0 ? *gen::sized(o.min_tokens, o.max_tokens) : *gen::count(o.max_tokens);
    s.hq = *gen::uniform(1, 4);
    s.hk = o.needs_k ? *gen::uniform(1, 4)
                     : *rc::gen::weightedOneOf<int64_t>(
                           {{1, rc::gen::just<int64_t>(0)}, {3, gen::uniform(1, 4)}});
    s.cache = o.cache ? *o.cache
                      : *rc::gen::weightedElement<Cache>(
                            {{3, Cache::none}, {1, Cache::built}, {1, Cache::random}});
    s.head_dim = *gen::sized(o.partial ? 3 : 2, s.cache == Cache::none ? 160 : 80);
    // Full rotary dim half the time; otherwise any even dim up to it (partial rotary).
    const int64_t full = s.head_dim / 2 * 2;
    s.rotary_dim =
        o.partial
            ? 2 * *gen::uniform(1, (s.head_dim - 1) / 2)
            : *rc::gen::weightedOneOf<int64_t>(
                  {{1, rc::gen::just(full)},
                   {1, rc::gen::map(gen::uniform(1, full / 2), [](int64_t h) { return 2 * h; })}});
    s.layout =
        o.layout ? *o.layout : *rc::gen::element(RopeLayout::half_split, RopeLayout::interleaved);
    s.inverse = *rc::gen::arbitrary<bool>();
    s.in_place = *rc::gen::weightedElement<bool>({{2, false}, {1, true}});
    s.base = *gen::rope_base();
    s.scaling = *gen::any_scaling(s.rotary_dim);
    if (o.unit_factor) s.scaling.attention_factor = 1;
    s.vllm = s.cache == Cache::built && *rc::gen::arbitrary<bool>();
    s.positions =
        *gen::positions(s.tokens, s.cache == Cache::none ? kMaxPosition : kCachedPositions);
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
  RC_CLASSIFY(s.layout == RopeLayout::interleaved, "interleaved");
  RC_CLASSIFY(s.cache != Cache::none, "cached");
  RC_CLASSIFY(s.in_place, "in place");
  RC_CLASSIFY(s.inverse, "inverse");
  RC_CLASSIFY(s.q.has_specials() || (s.hk && s.k.has_specials()), "specials");
  RC_CLASSIFY(any_strided(s.layouts), "strided");
  RC_CLASSIFY(s.positions.kind == "varlen", "varlen");
  classify_dtype(s.dtype);
  RC_CLASSIFY(s.cache != Cache::none && s.cache_dtype == DType::bf16, "bf16 cache");
  if (s.cache == Cache::none) RC_TAG(scaling_name(s.scaling.kind));
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

// A cache's f32 cos and sin are each ½ ulp_f32(a) off, so (c, s) is a rotation scaled by
// 1 ± 2√2·2⁻²⁵ (a = 1) and a rotated element ‖x‖·√2·2⁻²⁵ off: ≤ √2 units of ulp(‖x‖) ≥ ‖x‖·2⁻²⁴.
constexpr double kCacheRounding = std::numbers::sqrt2;

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

// Runs impl on a fresh build; `edit` may change the call first.
template <class Edit>
RopeCall run(const Impl<RopeCall>& impl, const RopeSpec& s, Arena& arena, Edit&& edit) {
  RopeCall call = build(s, arena);
  edit(call, arena);
  impl.run(call);
  return call;
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
Tensor copy_of(const Tensor& t, Arena& arena, DType dtype = DType::f32) {
  const Tensor c = arena.alloc(dtype, {t.shape[0], t.shape[1], t.shape[2]});
  for (int64_t a = 0; a < t.shape[0]; ++a)
    for (int64_t h = 0; h < t.shape[1]; ++h)
      for (int64_t j = 0; j < t.shape[2]; ++j)
        store(c, c.offset(a, h, j), load(t, t.offset(a, h, j)));
  return c;
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
        s.rotary_dim = std::min(s.rotary_dim, s.head_dim) / 2 * 2;
        if (s.cache == Cache::none) s.scaling = *gen::any_scaling(s.rotary_dim);
        if (s.cache == Cache::built && s.scaling.kind == K::longrope)
          s.scaling = *gen::scaling(K::none, s.rotary_dim);
        s.positions =
            *gen::positions(s.tokens, s.cache == Cache::none ? kMaxPosition : kCachedPositions);
        return s;
      }),
      .build = [](const RopeSpec& s, Arena& a) { return build(s, a); },
      .classify = classify,
      .minimum = dtype_shares({{"long positions", 0.15},
                               {"tail", 0.3},
                               {"partial", 0.2},
                               {"GQA", 0.15},
                               {"interleaved", 0.3},
                               {"cached", 0.2},
                               {"in place", 0.15},
                               {"specials", 0.05},
                               {"strided", 0.2},
                               {"varlen", 0.05},
                               {"empty", 0.005},
                               {"bf16 cache", 0.05}}),
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
          .minimum = {{"long positions", 0.15}, {"cached", 0.2}}};
}

Property<RopeCall> relative() {
  using Call = RopeCall;
  return {
      .name = "rope.relative",
      .statement = "⟨R(m)q, R(n)k⟩ depends only on m − n: shifting both by s changes nothing",
      .body =
          [](Case<Call>& c) {
            RopeSpec s = *rope_spec({.specials = false,
                                     .cache = Cache::none,
                                     .needs_k = true,
                                     .min_tokens = 4,
                                     .max_tokens = 4});
            const int64_t m = *gen::uniform(0, 4096), n = *gen::uniform(0, 4096);
            const int64_t shift = *rc::gen::weightedOneOf<int64_t>(
                {{1, gen::uniform(0, 4096)}, {2, gen::uniform(0, kMaxPosition - std::max(m, n))}});
            s.positions.values = {m, n, m + shift, n + shift};
            RC_CLASSIFY(shift > (1 << 20), "long shift");
            // Token 2 carries token 0's q, token 3 token 1's k.
            auto edit = [](Call& call, Arena&) {
              for (int64_t h = 0; h < call.q.shape[1]; ++h)
                for (int64_t j = 0; j < call.q.shape[2]; ++j)
                  store(call.q, call.q.offset(2, h, j), load(call.q, call.q.offset(0, h, j)));
              for (int64_t h = 0; h < call.k->shape[1]; ++h)
                for (int64_t j = 0; j < call.k->shape[2]; ++j)
                  store(*call.k, call.k->offset(3, h, j), load(*call.k, call.k->offset(1, h, j)));
            };
            c.each([&](const Impl<Call>& impl) {
              Arena arena, pristine;
              Call before = build(s, pristine);
              edit(before, pristine);
              const Call call = run(impl, s, arena, edit);
              const double b = rope_exact_bound(impl.bound, s);
              // ⟨x, y⟩ with x, y each off by ≤ B units per element moves by ≤ Σ |x|·Ey + |y|·Ex +
              // Ex·Ey; the two dot products together by the sum of theirs.
              const double fly = fly_factor(before);
              auto unit_at = [&](const Call& input, const Tensor& x, int64_t t, int64_t h,
                                 int64_t j) {
                if (j >= s.rotary_dim) return 0.0;  // the tail is copied exactly
                const int64_t i =
                    s.layout == RopeLayout::half_split ? j % (s.rotary_dim / 2) : j / 2;
                const auto [j0, j1] = pair_dims(s, i);
                return ulp_f32(
                    factor_at(input, fly, t, i) *
                    std::hypot(load(x, x.offset(t, h, j0)), load(x, x.offset(t, h, j1))));
              };
              Comparison worst;
              for (int64_t h = 0; h < s.hq; ++h)
                for (int64_t g = 0; g < s.hk; ++g) {
                  double dots[2] = {0, 0}, allowed = 0, unit = 0;
                  for (int k2 = 0; k2 < 2; ++k2) {
                    const int64_t tq = 2 * k2, tk = 2 * k2 + 1;
                    for (int64_t j = 0; j < s.head_dim; ++j) {
                      const double x = load(call.q_out, call.q_out.offset(tq, h, j));
                      const double y = load(*call.k_out, call.k_out->offset(tk, g, j));
                      const double ux = unit_at(before, before.q, tq, h, j);
                      const double uy = unit_at(before, *before.k, tk, g, j);
                      dots[k2] += x * y;
                      unit += std::fabs(x) * uy + std::fabs(y) * ux;
                      allowed += b * (std::fabs(x) * uy + std::fabs(y) * ux) + b * b * ux * uy;
                    }
                  }
                  merge_scalar(
                      worst, dots[0], dots[1], unit > 0 ? allowed / unit : 0, unit > 0 ? unit : 1,
                      [&] {
                        return fmt::format(
                            "⟨q_out[m+s, {0}], k_out[n+s, {1}]⟩ vs ⟨q_out[m, {0}], k_out[n, {1}]⟩ "
                            "(m={2} n={3} s={4})",
                            h, g, m, n, shift);
                      });
                }
              return Verdict::of(worst);
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
                const auto a = *rc::gen::container<std::vector<int64_t>>(
                    s.tokens, gen::uniform(0, kMaxPosition));
                std::vector<int64_t> b(s.tokens), sum(s.tokens);
                for (int64_t t = 0; t < s.tokens; ++t) {
                  b[t] = s.positions.values[t] % (kMaxPosition - a[t] + 1);
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
          .minimum = {{"long positions", 0.3}}};
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
          .minimum = {{"long positions", 0.15}}};
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
          .needs = variant::rope_interleaved | variant::rope_half_split};
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
          .minimum = {{"specials", 0.1}}};
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
          .minimum = {{"long positions", 0.15}}};
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
                s.scaling = *gen::scaling(K::none, s.rotary_dim);
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
          .minimum = {{"long positions", 0.15}}};
}

std::vector<Property<RopeCall>> rope_properties() {
  auto props = generic_properties<RopeCall>("rope", rope_problems());
  for (auto property :
       {pair_norm(), relative(), identity(), composition(), inverse(), interleaved_permutation(),
        tail_untouched(), cached_equals_on_the_fly(), linear_is_position_over_factor(), shuffle()})
    props.push_back(std::move(property));
  return props;
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

template <>
std::vector<Property<RopeCall>> properties<RopeCall>() {
  return rope_properties();
}

}  // namespace posenc::harness
