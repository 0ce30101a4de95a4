// attention: outputs, tolerance model, problems and properties, with a second oracle in Eigen.
// Over 600 lines: the generator, the builder and the properties share AttentionSpec; the variants'
// properties are in attention_variants.cc.
#include "properties/attention.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace posenc::harness {

// properties/attention_variants.cc: the properties of the sliding window and the other variants.
std::vector<Property<AttentionCall>> attention_variant_properties();

// The family's tolerance units over a call's inputs (posenc/attention.h): out's per element, lse's
// per row.
AttentionUnits::AttentionUnits(const AttentionCall& call, DType out_dtype) {
  const Tensor &q = call.q, &k = call.k, &v = call.v;
  const int64_t tq = q.shape[0], tk = k.shape[0];
  hq = q.shape[1];
  dv = v.shape[2];
  const int64_t group = hq / k.shape[1];
  std::vector<double> knorm(tk * k.shape[1]);
  for (int64_t j = 0; j < tk; ++j)
    for (int64_t h = 0; h < k.shape[1]; ++h) {
      double norm = 0;
      for (int64_t c = 0; c < k.shape[2]; ++c) norm += std::pow(load(k, k.offset(j, h, c)), 2);
      knorm[j * k.shape[1] + h] = std::sqrt(norm);
    }
  const double scale = std::fabs(call.resolved_scale());
  out.resize(tq * hq * dv);
  spread.resize(tq * hq);
  std::vector<double> vmax(dv);
  for (int64_t i = 0; i < tq; ++i)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kvh = h / group;
      double kmax = 0, qnorm = 0;
      std::fill(vmax.begin(), vmax.end(), 0.0);
      for (int64_t j = 0; j < tk; ++j) {
        if (!call.visible(i, j)) continue;
        if (call.bias && load(*call.bias, call.bias->offset(h, i, j)) == -INFINITY) continue;
        kmax = std::fmax(kmax, knorm[j * k.shape[1] + kvh]);
        for (int64_t c = 0; c < dv; ++c)
          vmax[c] = std::fmax(vmax[c], std::fabs(load(v, v.offset(j, kvh, c))));
      }
      for (int64_t e = 0; e < q.shape[2]; ++e) qnorm += std::pow(load(q, q.offset(i, h, e)), 2);
      spread[i * hq + h] = kmax == 0 ? 0 : scale * std::sqrt(qnorm) * kmax;
      for (int64_t c = 0; c < dv; ++c)
        out[(i * hq + h) * dv + c] = ulp_of(out_dtype, vmax[c]) * (1 + spread[i * hq + h]);
    }
}

namespace {

// `units` of ulp(vmax) · (1 + |scale|·‖q_i‖·kmax), ulp in out's dtype, see attention.h and
// kernel.h: a bound already in the output dtype's units. vmax and kmax are taken over the keys the
// row sees (visible(): not causally masked, inside the window; bias not −∞): an output is an
// average of those values only, and a hidden key's ∞ or huge value (an unused KV-cache slot) says
// nothing about its error. lse, when both calls have it, within `lse_units` of its f32 unit.
Comparison compare_in_units(const AttentionCall& expected, const AttentionCall& got, double units,
                            double lse_units) {
  const AttentionUnits unit(expected, got.out.dtype);
  Comparison c = harness::compare("out", expected.out, got.out, units, [&](const int64_t* ix) {
    return unit.of_out(ix[0], ix[1], ix[2]);
  });
  if (expected.lse && got.lse) {
    const Tensor& lse = *expected.lse;
    c.merge(harness::compare("lse", lse, *got.lse, lse_units, [&](const int64_t* ix) {
      return unit.of_lse(ix[0], ix[1], load(lse, lse.offset(ix[0], ix[1])));
    }));
  }
  return c;
}

}  // namespace

Comparison compare(const AttentionCall& expected, const AttentionCall& got, const Bound& bound) {
  // An implementation's bound, stated in f32 units, as it applies to out's dtype (kernel.h); lse
  // is f32 in every call, held to the f32 bound.
  return compare_in_units(expected, got, dtype_bound(got.out.dtype, bound), bound.f32);
}

Comparison compare_two_runs(const AttentionCall& a, const AttentionCall& b, double bound) {
  return compare_in_units(a, b, metamorphic_bound(dtype_bound(b.out.dtype, bound)),
                          metamorphic_bound(bound));
}

namespace {

// One attention problem. Layout slots: q, k, v, out, bias, q_positions (and sinks and
// alibi_slopes, 1-d as it is), k_positions, lse.
struct AttentionSpec {
  int64_t tq = 0, tk = 0, hq = 1, hkv = 1, d = 1, dv = 1;
  Mask mask = Mask::none;
  int64_t window_left = -1;
  double softcap = 0;
  int64_t chunk_size = 0;
  std::vector<float> sinks, slopes;  // per query head; empty: none
  bool with_positions = false;
  bool with_lse = false;  // the optional lse output
  enum class Bias : uint8_t { none, values, alibi } bias = Bias::none;
  double scale = std::nan("");
  Positions q_pos, k_pos;
  Fill q, k, v, bias_values;
  Layouts layouts = uniform_layouts(Layout::contiguous);
  DType dtype = DType::f32;  // q, k, v and out
  bool f32_bias = false;     // the bias in f32 under bf16 or f16 activations (attention.h)
  // An unused KV-cache slot: the key with the largest position holds ∞, −∞ and NaN values while
  // the other values are large (u·2¹²), so a kernel that reads a hidden key's value, or a
  // tolerance unit taken over hidden keys, shows in the rows that cannot see it.
  bool unused_slot = false;

  int64_t k_position(int64_t j) const { return with_positions ? k_pos.values[j] : j; }
  int64_t q_position(int64_t i) const { return with_positions ? q_pos.values[i] : tk - tq + i; }
  // The key unused_slot fills: the last of the largest position.
  int64_t slot_key() const {
    int64_t slot = 0;
    for (int64_t j = 1; j < tk; ++j)
      if (k_position(j) >= k_position(slot)) slot = j;
    return slot;
  }
  // Whether some query cannot see the slot (so its row must ignore the slot's values): the call's
  // own rule (AttentionCall::visible_at), so windows count as hiding it too.
  bool slot_hidden() const {
    if (!unused_slot || tk == 0) return false;
    AttentionCall rule;
    rule.mask = mask;
    rule.window_left = window_left;
    rule.chunk_size = chunk_size;
    const int64_t slot_position = k_position(slot_key());
    for (int64_t i = 0; i < tq; ++i)
      if (!rule.visible_at(q_position(i), slot_position)) return true;
    return false;
  }

  bool specials() const {
    return q.has_specials() || k.has_specials() || v.has_specials() || unused_slot ||
           (bias == Bias::values && bias_values.has_specials());
  }
};

std::string describe(const AttentionSpec& s) {
  std::string str =
      fmt::format("{} tq={} tk={} hq={} hkv={} d={} dv={} mask={}", dtype_name(s.dtype), s.tq, s.tk,
                  s.hq, s.hkv, s.d, s.dv, s.mask == Mask::causal ? "causal" : "none");
  if (s.window_left >= 0) str += fmt::format(" window_left={}", s.window_left);
  if (s.softcap > 0) str += fmt::format(" softcap={}", s.softcap);
  if (s.chunk_size > 0) str += fmt::format(" chunk_size={}", s.chunk_size);
  if (!s.sinks.empty()) str += fmt::format(" sinks=[{}]", fmt::join(s.sinks, ", "));
  if (!s.slopes.empty()) str += fmt::format(" alibi_slopes=[{}]", fmt::join(s.slopes, ", "));
  if (s.f32_bias) str += " f32 bias";
  if (s.with_lse) str += " lse";
  if (!std::isnan(s.scale)) str += fmt::format(" scale={}", s.scale);
  if (s.with_positions)
    str += " q_positions=" + s.q_pos.describe() + " k_positions=" + s.k_pos.describe();
  if (s.bias == AttentionSpec::Bias::alibi) str += " bias=alibi";
  if (s.bias == AttentionSpec::Bias::values) str += " bias=(" + s.bias_values.describe() + ")";
  str += fmt::format(" q=({}) k=({}) v=({})", s.q.describe(), s.k.describe(), s.v.describe());
  if (s.unused_slot) str += fmt::format(" v[{}]=(inf, -inf, nan, ...)", s.slot_key());
  if (any_strided(s.layouts)) {
    str += " layouts";
    for (int i = 0; i < (s.with_lse ? 8 : 7); ++i)
      str += fmt::format(" {}", layout_name(s.layouts[i]));
  }
  return str;
}

void showValue(const AttentionSpec& s, std::ostream& os) { os << describe(s); }

// ALiBi-shaped bias −2^(−(h+1))·|i − j| over slots: a positional scheme for the properties.
void alibi_bias(const Tensor& bias) {
  for (int64_t h = 0; h < bias.shape[0]; ++h)
    for (int64_t i = 0; i < bias.shape[1]; ++i)
      for (int64_t j = 0; j < bias.shape[2]; ++j)
        store(bias, bias.offset(h, i, j),
              -std::ldexp(1.0, -static_cast<int>(h % 8) - 1) * std::fabs(double(i - j)));
}

// An f32 [hq] view of per-head values (sinks, slopes), or none for none.
std::optional<Tensor> per_head(const std::vector<float>& values, Arena& arena, Layout layout) {
  if (values.empty()) return std::nullopt;
  const Tensor t = arena.alloc(DType::f32, {static_cast<int64_t>(values.size())}, layout);
  for (size_t h = 0; h < values.size(); ++h) store(t, t.offset(static_cast<int64_t>(h)), values[h]);
  return t;
}

AttentionCall build(const AttentionSpec& s, Arena& arena) {
  AttentionCall call;
  call.q = arena.alloc(s.dtype, {s.tq, s.hq, s.d}, s.layouts[0]);
  call.k = arena.alloc(s.dtype, {s.tk, s.hkv, s.d}, s.layouts[1]);
  call.v = arena.alloc(s.dtype, {s.tk, s.hkv, s.dv}, s.layouts[2]);
  call.out = arena.alloc(s.dtype, {s.tq, s.hq, s.dv}, s.layouts[3]);
  if (s.with_lse) call.lse = arena.alloc(DType::f32, {s.tq, s.hq}, s.layouts[7]);
  s.q.apply(call.q);
  s.k.apply(call.k);
  s.v.apply(call.v);
  if (s.unused_slot && s.tk > 0) {
    const double slot[] = {INFINITY, -INFINITY, std::nan("")};
    for (int64_t h = 0; h < s.hkv; ++h)
      for (int64_t c = 0; c < s.dv; ++c)
        store(call.v, call.v.offset(s.slot_key(), h, c), slot[c % 3]);
  }
  call.mask = s.mask;
  call.window_left = s.window_left;
  call.softcap = s.softcap;
  call.scale = s.scale;
  if (s.bias != AttentionSpec::Bias::none) {
    call.bias = arena.alloc(s.f32_bias ? DType::f32 : s.dtype, {s.hq, s.tq, s.tk}, s.layouts[4]);
    if (s.bias == AttentionSpec::Bias::alibi)
      alibi_bias(*call.bias);
    else
      s.bias_values.apply(*call.bias);
  }
  if (s.with_positions) {
    call.q_positions = arena.alloc(s.q_pos.dtype, {s.tq}, s.layouts[5]);
    call.k_positions = arena.alloc(s.k_pos.dtype, {s.tk}, s.layouts[6]);
    s.q_pos.store(*call.q_positions);
    s.k_pos.store(*call.k_positions);
  }
  call.chunk_size = s.chunk_size;
  call.sinks = per_head(s.sinks, arena, s.layouts[5]);
  call.alibi_slopes = per_head(s.slopes, arena, s.layouts[5]);
  return call;
}

}  // namespace

// Sink logits for n query heads: −∞ (none), moderate, or large (past f32's e^88 against the
// scores, where a sink left out of the maximum overflows).
rc::Gen<std::vector<float>> any_sinks(int64_t n) {
  return rc::gen::container<std::vector<float>>(
      static_cast<size_t>(n),
      rc::gen::weightedOneOf<float>(
          {{1, rc::gen::just(-INFINITY)},
           {4, rc::gen::map(gen::uniform(-64, 64), [](int64_t k) { return k / 16.0f; })},
           {1, rc::gen::map(gen::uniform(80, 120), [](int64_t k) { return float(k); })}}));
}

// ALiBi slopes for n query heads: the ALiBi family's for n heads (max_bias 8, Press's), or any
// in (0, 1], or occasionally 0 or negative.
rc::Gen<std::vector<float>> any_slopes(int64_t n) {
  return rc::gen::exec([n] {
    std::vector<float> slopes(static_cast<size_t>(n));
    const int kind = static_cast<int>(*gen::uniform(0, 3));
    const int64_t c = int64_t{1} << static_cast<int>(std::floor(std::log2(double(n))));
    for (int64_t h = 0; h < n; ++h) {
      if (kind <= 1) {  // alibi.h's formula
        slopes[h] = static_cast<float>(h < c ? std::exp2(-8.0 * (h + 1) / c)
                                             : std::exp2(-4.0 * (2 * (h - c) + 1) / c));
      } else if (kind == 2) {
        slopes[h] = static_cast<float>(*gen::uniform(1, 1024)) / 1024;
      } else {
        slopes[h] = static_cast<float>(*gen::uniform(-8, 8)) / 8;
      }
    }
    return slopes;
  });
}

namespace {

// Shapes: queries and keys from none up, 1–3 kv heads shared by 1–4 query heads each, head dims
// with odd tails. `specials` allows special values and spread magnitudes in the inputs.
rc::Gen<AttentionSpec> any_spec(bool specials, int64_t max_tq, int64_t max_tk, int64_t max_d) {
  return rc::gen::exec([=] {
    AttentionSpec s;
    s.tq = *gen::count(max_tq);
    s.tk = *gen::count(max_tk);
    s.hkv = *gen::uniform(1, 3);
    s.hq = s.hkv * *rc::gen::weightedOneOf<int64_t>(
                       {{2, rc::gen::just<int64_t>(1)}, {1, gen::uniform(2, 4)}});
    s.d = *gen::sized(1, max_d);
    s.dv = *gen::sized(1, 24);
    s.mask = *rc::gen::element(Mask::none, Mask::causal);
    // Windows within the keys (inclusive bound: 0 sees the query's own position), or spanning
    // long-range positions.
    s.window_left = *rc::gen::weightedOneOf<int64_t>(
        {{4, rc::gen::just<int64_t>(-1)},
         {2, gen::uniform(0, std::max<int64_t>(max_tk, 1))},
         {1, rc::gen::map(gen::uniform(0, 24), [](int64_t e) { return int64_t{1} << e; })}});
    // Softcaps from tight to Gemma 2's 50 (30 is Grok's, 1 saturates most logits).
    s.softcap = *rc::gen::weightedOneOf<double>(
        {{4, rc::gen::just(0.0)}, {1, rc::gen::element(0.5, 1.0, 5.0, 30.0, 50.0)}});
    s.with_positions =
        (s.mask == Mask::causal || s.window_left >= 0) && *rc::gen::arbitrary<bool>();
    s.with_lse = *rc::gen::weightedElement<bool>({{2, false}, {1, true}});
    if (s.with_positions) {
      s.q_pos = *gen::positions(s.tq, kMaxPosition);
      s.k_pos = *gen::positions(s.tk, kMaxPosition);
    }
    s.bias = *rc::gen::weightedElement<AttentionSpec::Bias>({{5, AttentionSpec::Bias::none},
                                                             {2, AttentionSpec::Bias::values},
                                                             {1, AttentionSpec::Bias::alibi}});
    // Scales near 1/√d, zero, or negative: moderate values, as models use.
    s.scale = *rc::gen::weightedOneOf<double>(
        {{3, rc::gen::just(std::nan(""))},
         {1, rc::gen::map(gen::uniform(-64, 64), [](int64_t k) { return k / 16.0; })}});
    auto values = specials ? gen::fill() : gen::finite_fill();
    s.q = *values;
    s.k = *values;
    s.v = *values;
    if (s.bias == AttentionSpec::Bias::values) s.bias_values = *values;
    if (specials && (s.mask == Mask::causal || s.window_left >= 0) && *rc::gen::arbitrary<bool>()) {
      s.unused_slot = true;
      s.v.lo = s.v.hi = 12;
    }
    s.layouts = *gen::layouts();
    s.dtype = *gen::float_dtype();
    s.f32_bias =
        s.bias != AttentionSpec::Bias::none && s.dtype != DType::f32 && *rc::gen::arbitrary<bool>();
    // Drawn last, so that the fields above are those the same seed gave before them.
    // Chunks of a few keys or spanning long-range positions (Llama 4's is 8192).
    s.chunk_size = *rc::gen::weightedOneOf<int64_t>(
        {{5, rc::gen::just<int64_t>(0)},
         {1, gen::uniform(1, std::max<int64_t>(max_tk, 1))},
         {1, rc::gen::map(gen::uniform(0, 24), [](int64_t e) { return int64_t{1} << e; })}});
    if (*gen::uniform(0, 5) == 0) s.sinks = *any_sinks(s.hq);
    if (*gen::uniform(0, 5) == 0) s.slopes = *any_slopes(s.hq);
    if (!s.with_positions && (s.chunk_size > 0 || !s.slopes.empty()) &&
        *rc::gen::arbitrary<bool>()) {
      s.with_positions = true;
      s.q_pos = *gen::positions(s.tq, kMaxPosition);
      s.k_pos = *gen::positions(s.tk, kMaxPosition);
    }
    return s;
  });
}

void classify(const AttentionSpec& s) {
  classify_dtype(s.dtype);
  RC_CLASSIFY(s.f32_bias, "f32 bias");
  RC_CLASSIFY(s.tq == 0 || s.tk == 0, "empty");
  RC_CLASSIFY(s.hq != s.hkv, "GQA");
  RC_CLASSIFY(s.d % 16 != 0, "tail");
  RC_CLASSIFY(s.mask == Mask::causal, "causal");
  RC_CLASSIFY(s.window_left >= 0, "window");
  RC_CLASSIFY(s.softcap > 0, "softcap");
  RC_CLASSIFY(s.chunk_size > 0, "chunked");
  RC_CLASSIFY(!s.sinks.empty(), "sinks");
  RC_CLASSIFY(!s.slopes.empty(), "alibi");
  RC_CLASSIFY(s.with_lse, "lse");
  RC_CLASSIFY(s.bias != AttentionSpec::Bias::none, "bias");
  RC_CLASSIFY(s.with_positions, "positions");
  RC_CLASSIFY(s.with_positions && (s.q_pos.long_range() || s.k_pos.long_range()), "long positions");
  RC_CLASSIFY(s.specials(), "specials");
  RC_CLASSIFY(s.slot_hidden(), "hidden non-finite values");
  RC_CLASSIFY(s.q.spread() || s.k.spread(), "spread magnitudes");
  RC_CLASSIFY(any_strided(s.layouts), "strided");
}

// Self-attention over n tokens with a reordering of them: what the equivariance properties use.
struct ReorderSpec {
  std::vector<int64_t> order;  // new slot i holds old token order[i]
  AttentionSpec attention;     // tq = tk = n
};

void showValue(const ReorderSpec& s, std::ostream& os) {
  os << "order [";
  for (size_t i = 0; i < s.order.size(); ++i) os << (i ? ", " : "") << s.order[i];
  os << "] " << describe(s.attention);
}

// n tokens (at least min_n), mask and bias as given, finite moderate values; `swap` reorders by one
// transposition of distinct slots (below n − 1 when `keep_last`), otherwise any permutation.
// `generic` keeps the softmax far from one-hot (head dim ≤ 8, values in (−1, 1), scale 1/√d), so
// that every token visibly weighs in: a saturated softmax hides order as well as content. Generic
// cases are f32: they serve the must-differ properties, whose margin is the kernel's noise, 2·bound
// + 1 units. In f32 that is 65 ulp_f32(vmax)·(1 + spread), far below what one swap changes; in
// bf16 it is 3 ulp_bf16(vmax)·(1 + spread), up to 2.3%·(1 + spread) of vmax, which a swap of two
// alike tokens need not exceed: a correct kernel could fail. The mask and bias logic they test
// does not depend on the dtype; the dtype's own arithmetic is the differential's.
rc::Gen<ReorderSpec> reorder_spec(int64_t min_n, Mask mask, AttentionSpec::Bias bias, bool swap,
                                  bool keep_last, bool generic) {
  return rc::gen::exec([=] {
    ReorderSpec r;
    AttentionSpec s = *any_spec(false, 1, 1, generic ? 8 : 40);
    const int64_t n = *gen::sized(min_n, 24);
    s.tq = s.tk = n;
    s.mask = mask;
    s.window_left = -1;
    s.softcap = 0;
    s.chunk_size = 0;
    s.sinks.clear();
    s.slopes.clear();
    s.with_lse = false;  // compare_reordered reorders out only
    s.bias = bias;
    s.with_positions = false;
    if (generic) {
      s.dtype = DType::f32;
      s.f32_bias = false;
      s.scale = std::nan("");
      s.q = *gen::finite_fill(0);
      s.k = *gen::finite_fill(0);
      s.v = *gen::finite_fill(0);
    }
    r.order.resize(n);
    std::iota(r.order.begin(), r.order.end(), 0);
    if (swap) {
      const int64_t last = keep_last ? n - 2 : n - 1;
      const int64_t i = *gen::uniform(0, last - 1), j = *gen::uniform(i + 1, last);
      std::swap(r.order[i], r.order[j]);
    } else {
      const auto keys = *rc::gen::container<std::vector<int64_t>>(n, gen::uniform(0, 1 << 20));
      std::stable_sort(r.order.begin(), r.order.end(),
                       [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
    }
    r.attention = s;
    return r;
  });
}

// A copy of `src` (rank 3, dim 0 = tokens) with row i taken from row order[i].
Tensor reorder_rows(const Tensor& src, const std::vector<int64_t>& order, Arena& arena) {
  const Tensor dst = arena.alloc(src.dtype, {src.shape[0], src.shape[1], src.shape[2]});
  for (int64_t i = 0; i < src.shape[0]; ++i)
    for (int64_t h = 0; h < src.shape[1]; ++h)
      for (int64_t c = 0; c < src.shape[2]; ++c)
        store(dst, dst.offset(i, h, c), load(src, src.offset(order[i], h, c)));
  return dst;
}

// Runs impl on X and on the reordered tokens; returns the comparison of Attn(reordered) with the
// reordered Attn(X) (or, for `last_row_only`, of the last rows, which keep their slot).
Comparison compare_reordered(const Impl<AttentionCall>& impl, const ReorderSpec& r,
                             bool last_row_only) {
  Arena arena;
  const AttentionCall original = build(r.attention, arena);
  impl.run(original);
  AttentionCall shuffled = original;
  shuffled.q = reorder_rows(original.q, r.order, arena);
  shuffled.k = reorder_rows(original.k, r.order, arena);
  shuffled.v = reorder_rows(original.v, r.order, arena);
  shuffled.out = arena.alloc(original.out.dtype, {r.attention.tq, r.attention.hq, r.attention.dv});
  impl.run(shuffled);  // the bias, if any, stays with the slots
  AttentionCall expected = shuffled;
  expected.out = reorder_rows(original.out, r.order, arena);
  // Two runs, each within the bound of the reference (in out's dtype units, dtype_bound).
  const double bound = metamorphic_bound(dtype_bound(original.out.dtype, impl.bound));
  if (!last_row_only) return compare_in_units(expected, shuffled, bound, bound);
  const int64_t n = r.attention.tq;
  auto last = [n](Tensor t) {
    t.data = static_cast<char*>(t.data) + (n - 1) * t.strides[0] * dtype_size(t.dtype);
    t.shape[0] = 1;
    return t;
  };
  AttentionCall e = shuffled, g = shuffled;
  e.q = g.q = last(shuffled.q);
  e.out = last(original.out);
  g.out = last(shuffled.out);
  return compare_in_units(e, g, bound, bound);
}

// softmax(softcap(scale·QKᵀ) + bias + mask)·V in double with Eigen, head by head: an oracle written
// apart from the scalar reference (finite inputs). Into `lse`, if given (f64 [tq, hq]), each row's
// ln Σ exp(score).
Tensor eigen_attention(const AttentionCall& call, Arena& arena, const Tensor* lse = nullptr) {
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int64_t tq = call.q.shape[0], hq = call.q.shape[1], d = call.q.shape[2];
  const int64_t tk = call.k.shape[0], group = hq / call.k.shape[1], dv = call.v.shape[2];
  const Tensor out = arena.alloc(DType::f64, {tq, hq, dv});
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t h = 0; h < hq; ++h) {
    Matrix q(tq, d), k(tk, d), v(tk, dv);
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t c = 0; c < d; ++c) q(i, c) = load(call.q, call.q.offset(i, h, c));
    for (int64_t j = 0; j < tk; ++j) {
      for (int64_t c = 0; c < d; ++c) k(j, c) = load(call.k, call.k.offset(j, h / group, c));
      for (int64_t c = 0; c < dv; ++c) v(j, c) = load(call.v, call.v.offset(j, h / group, c));
    }
    Matrix scores = call.resolved_scale() * q * k.transpose();
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j) {
        scores(i, j) = call.logit(scores(i, j)) + call.alibi(h, i, j);
        if (call.bias) scores(i, j) += load(*call.bias, call.bias->offset(h, i, j));
        if (!call.visible(i, j)) scores(i, j) = -inf;
      }
    Matrix result = Matrix::Zero(tq, dv);
    const double sink = call.sink(h);  // in the maximum and the denominator
    for (int64_t i = 0; i < tq; ++i) {
      const double top = std::max(tk ? scores.row(i).maxCoeff() : -inf, sink);
      if (lse) store(*lse, lse->offset(i, h), top);
      if (top == -inf) continue;  // nothing visible: zeros, lse −∞
      const Eigen::RowVectorXd w = (scores.row(i).array() - top).exp().matrix();
      const double total = w.sum() + (sink == -inf ? 0 : std::exp(sink - top));
      result.row(i) = (w * v) / total;
      if (lse) store(*lse, lse->offset(i, h), top + std::log(total));
    }
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t c = 0; c < dv; ++c) store(out, out.offset(i, h, c), result(i, c));
  }
  return out;
}

std::vector<Property<AttentionCall>> attention_properties() {
  using Call = AttentionCall;
  using Bias = AttentionSpec::Bias;
  Problems<Call, AttentionSpec> problems{
      .any = any_spec(true, 12, 20, 72),
      .large = rc::gen::exec([] {
        AttentionSpec s = *any_spec(true, 0, 0, 1);
        // One case in three decodes: a few queries against a long KV cache, where an optimized
        // kernel may split the keys over its threads (split-KV), one in eight of them up to 32768
        // keys (issue 16: where ggml's split differed by thread count); small head dims keep it
        // cheap.
        if (*rc::gen::weightedElement<bool>({{2, false}, {1, true}})) {
          s.tq = *rc::gen::element<int64_t>(1, 1, 2, 4);
          s.tk = *rc::gen::weightedOneOf<int64_t>(
              {{7, gen::uniform(512, 2048)}, {1, gen::uniform(2049, 32768)}});
          s.d = *rc::gen::element<int64_t>(4, 8, 16);
          s.dv = *rc::gen::element<int64_t>(4, 16);
        } else {
          s.tq = *gen::uniform(16, 96);
          s.tk = *gen::uniform(16, 96);
          s.d = *rc::gen::element<int64_t>(32, 64, 80);
          s.dv = *rc::gen::element<int64_t>(32, 64);
        }
        if (s.with_positions) {
          s.q_pos = *gen::positions(s.tq, kMaxPosition);
          s.k_pos = *gen::positions(s.tk, kMaxPosition);
        }
        return s;
      }),
      .build = build,
      .classify = classify,
      .minimum = dtype_shares({{"GQA", 0.15},
                               {"tail", 0.3},
                               {"causal", 0.3},
                               {"window", 0.15},
                               {"softcap", 0.1},
                               {"chunked", 0.1},
                               {"sinks", 0.08},
                               {"alibi", 0.08},
                               {"bias", 0.15},
                               {"positions", 0.1},
                               {"specials", 0.05},
                               {"hidden non-finite values", 0.04},
                               {"strided", 0.2},
                               {"empty", 0.01},
                               {"f32 bias", 0.03}}),
  };
  ViewOf<Call> q = [](Call& c) { return &c.q; };
  ViewOf<Call> k = [](Call& c) { return &c.k; };
  ViewOf<Call> v = [](Call& c) { return &c.v; };
  ViewOf<Call> out = [](Call& c) { return &c.out; };
  ViewOf<Call> bias = [](Call& c) { return c.bias ? &*c.bias : nullptr; };
  ViewOf<Call> q_positions = [](Call& c) { return c.q_positions ? &*c.q_positions : nullptr; };
  ViewOf<Call> k_positions = [](Call& c) { return c.k_positions ? &*c.k_positions : nullptr; };
  ViewOf<Call> lse = [](Call& c) { return c.lse ? &*c.lse : nullptr; };
  auto& m = problems.mutations;
  for (auto& x : view_mutations<Call>("q", q, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("k", k, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("v", v, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("out", out, true)) m.push_back(x);
  for (auto& x : view_mutations<Call>("bias", bias, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("q_positions", q_positions, false)) m.push_back(x);
  ViewOf<Call> sinks = [](Call& c) { return c.sinks ? &*c.sinks : nullptr; };
  ViewOf<Call> slopes = [](Call& c) { return c.alibi_slopes ? &*c.alibi_slopes : nullptr; };
  for (auto& x : view_mutations<Call>("sinks", sinks, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("alibi_slopes", slopes, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("lse", lse, true)) m.push_back(x);
  m.push_back(overlap_mutation<Call>("out", out, "q", q));
  m.push_back(overlap_mutation<Call>("out", out, "v", v));
  m.push_back(overlap_mutation<Call>("lse", lse, "k", k));
  m.push_back(overlap_mutation<Call>("lse", lse, "out", out));
  m.push_back({"lse heads differ", [](Call& c, Arena&) {
                 if (!c.lse) return false;
                 --c.lse->shape[1];  // fewer, never more: a view stays within its allocation
                 return true;
               }});
  m.push_back(position_mutation<Call>("q position 2^24 + 1", q_positions,
                                      [](const Call&) { return kMaxPosition + 1; }));
  m.push_back(
      position_mutation<Call>("k position -1", k_positions, [](const Call&) { return -1; }));
  m.push_back({"q heads not a multiple of kv heads", [](Call& c, Arena&) {
                 if (c.q.shape[1] % c.k.shape[1] == 0 && c.k.shape[1] > 1) {
                   --c.q.shape[1];
                   --c.out.shape[1];
                 }
                 return c.q.shape[1] >= 1 && c.q.shape[1] % c.k.shape[1] != 0;
               }});
  m.push_back({"k head dim differs", [](Call& c, Arena&) {
                 if (c.k.shape[2] < 2) return false;
                 --c.k.shape[2];
                 return true;
               }});
  m.push_back({"bias keys differ", [](Call& c, Arena&) {
                 if (!c.bias || c.bias->shape[2] == 0) return false;
                 --c.bias->shape[2];
                 return true;
               }});
  m.push_back({"q_positions without k_positions", [](Call& c, Arena&) {
                 if (!c.q_positions) return false;
                 c.k_positions.reset();
                 return true;
               }});
  for (double s : {double{INFINITY}, -double{INFINITY}})
    m.push_back({fmt::format("scale = {}", s), [s](Call& c, Arena&) {
                   c.scale = s;
                   return true;
                 }});
  m.push_back({"window_left = -2", [](Call& c, Arena&) {
                 c.window_left = -2;
                 return true;
               }});
  for (double cap : {-1.0, double{INFINITY}})
    m.push_back({fmt::format("softcap = {}", cap), [cap](Call& c, Arena&) {
                   c.softcap = cap;
                   return true;
                 }});
  m.push_back({"chunk_size = -1", [](Call& c, Arena&) {
                 c.chunk_size = -1;
                 return true;
               }});
  using PerHead = std::optional<Tensor> Call::*;
  for (const auto& named : {std::pair<const char*, PerHead>{"sinks", &Call::sinks},
                            std::pair<const char*, PerHead>{"alibi_slopes", &Call::alibi_slopes}})
    m.push_back({fmt::format("{}[0] = NaN", named.first), [field = named.second](Call& c, Arena&) {
                   const auto& t = c.*field;
                   if (!t || t->shape[0] == 0) return false;
                   t->as<float>()[0] = NAN;
                   return true;
                 }});
  m.push_back({"mask = 7", [](Call& c, Arena&) {
                 c.mask = static_cast<Mask>(7);
                 return true;
               }});

  auto props = generic_properties<Call>("attention", problems);
  for (auto& p : attention_variant_properties()) props.push_back(std::move(p));

  props.push_back(
      {.name = "attention.permutation_equivariance",
       .statement = "without positions or mask, Attn(PX) = P·Attn(X) for any reordering P",
       .body =
           [](Case<Call>& c) {
             const ReorderSpec r = *reorder_spec(2, Mask::none, Bias::none, false, false, false);
             RC_CLASSIFY(r.attention.tq > 8, "more than 8 tokens");
             classify_dtype(r.attention.dtype);
             c.each([&](const Impl<Call>& impl) {
               return Verdict::of(compare_reordered(impl, r, false), "Attn(PX) vs P·Attn(X)");
             });
           },
       .minimum = dtype_shares({{"more than 8 tokens", 0.3}})});

  // "Must differ" properties: with distinct generic tokens the reordered output is far from the
  // equivariant prediction, so lying within the kernel's own noise (2·bound + 1) means position
  // information did not reach the scores. (A bias in |i − j| is blind to reversing the order, so
  // the biased case takes n ≥ 4, where no single swap is a reversal.)
  auto must_differ = [](const Comparison& cmp, const std::string& what) {
    if (!cmp.ok) return Verdict::pass();
    return Verdict::fail(fmt::format(
        "{}: the output stayed within {:.3g} units of the order-blind prediction (largest "
        "difference {:.3g} units at {})",
        what, cmp.bound, cmp.worst, cmp.where));
  };

  props.push_back(
      {.name = "attention.causal_not_equivariant",
       .statement = "with a causal mask, swapping two tokens does not just swap their outputs",
       .body =
           [must_differ](Case<Call>& c) {
             const ReorderSpec r = *reorder_spec(2, Mask::causal, Bias::none, true, false, true);
             c.each([&](const Impl<Call>& impl) {
               return must_differ(compare_reordered(impl, r, false),
                                  "causal Attn(PX) vs P·Attn(X)");
             });
           },
       .needs = variant::attention_causal});

  props.push_back(
      {.name = "attention.positional_not_equivariant",
       .statement = "with a positional bias, swapping two tokens does not just swap their outputs",
       .body =
           [must_differ](Case<Call>& c) {
             const ReorderSpec r = *reorder_spec(4, Mask::none, Bias::alibi, true, false, true);
             c.each([&](const Impl<Call>& impl) {
               return must_differ(compare_reordered(impl, r, false),
                                  "biased Attn(PX) vs P·Attn(X)");
             });
           },
       .needs = variant::attention_bias});

  props.push_back(
      {.name = "attention.shuffle",
       .statement =
           "causal with a positional bias: swapping two earlier distinct tokens changes the last "
           "output",
       .body =
           [must_differ](Case<Call>& c) {
             const ReorderSpec r = *reorder_spec(3, Mask::causal, Bias::alibi, true, true, true);
             c.each([&](const Impl<Call>& impl) {
               return must_differ(compare_reordered(impl, r, true), "last output after the swap");
             });
           },
       .needs = variant::attention_causal | variant::attention_bias});

  props.push_back(
      {.name = "attention.eigen_oracle",
       .statement = "agrees with an independent Eigen attention in fp64 within bound + ½ (+ 1/64)",
       .body =
           [](Case<Call>& c) {
             const AttentionSpec s = *any_spec(false, 12, 20, 72);
             classify(s);
             Arena probe;
             const Call shape = build(s, probe);
             c.each(shape, [&](const Impl<Call>& impl) {
               Arena arena;
               const Call got = build(s, arena);
               impl.run(got);
               Call expected = got;
               Tensor lse = arena.alloc(DType::f64, {s.tq, s.hq});
               expected.out = eigen_attention(got, arena, &lse);
               if (got.lse) expected.lse = lse;
               // bound + ½ (the reference's rounding), both in out's dtype units
               // (dtype_bound), and 1/64 for the two oracles' fp64 evaluation orders
               // (relative errors of a few 2⁻⁵³ against a unit of at least 2⁻²⁴ of vmax,
               // larger still in bf16 and f16).
               const double units = exact_bound(dtype_bound(got.out.dtype, impl.bound)) + 1.0 / 64;
               const double lse_units = exact_bound(impl.bound.f32) + 1.0 / 64;
               return Verdict::of(compare_in_units(expected, got, units, lse_units), "vs Eigen");
             });
           },
       .minimum =
           dtype_shares({{"GQA", 0.15}, {"causal", 0.3}, {"bias", 0.15}, {"positions", 0.1}})});
  return props;
}

struct AttentionShape {
  int64_t tq, tk, hq, hkv, d, dv;
  Mask mask;
  bool bias;
  Layout layout;
};

Problem<AttentionCall> attention_problem(AttentionShape s, uint64_t seed) {
  std::string label = fmt::format(
      "tq={} tk={} hq={} hkv={} d={} dv={} mask={} bias={} {}", s.tq, s.tk, s.hq, s.hkv, s.d, s.dv,
      s.mask == Mask::causal ? "causal" : "none", s.bias, layout_name(s.layout));
  return {label, [s, seed](Arena& arena) {
            Values values(seed);
            AttentionCall call;
            call.q = arena.alloc(DType::f32, {s.tq, s.hq, s.d}, s.layout);
            call.k = arena.alloc(DType::f32, {s.tk, s.hkv, s.d}, s.layout);
            call.v = arena.alloc(DType::f32, {s.tk, s.hkv, s.dv}, s.layout);
            call.out = arena.alloc(DType::f32, {s.tq, s.hq, s.dv}, s.layout);
            values.fill(call.q);
            values.fill(call.k);
            values.fill(call.v);
            call.mask = s.mask;
            if (s.bias) {
              call.bias = arena.alloc(DType::f32, {s.hq, s.tq, s.tk}, s.layout);
              values.fill(*call.bias, -2, 2);
            }
            return call;
          }};
}

}  // namespace

template <>
std::vector<Property<AttentionCall>> properties<AttentionCall>() {
  return attention_properties();
}

template <>
std::vector<Problem<AttentionCall>> smoke_problems<AttentionCall>() {
  using L = Layout;
  return {
      attention_problem({4, 4, 2, 2, 8, 8, Mask::none, false, L::contiguous}, 1),
      attention_problem({5, 5, 2, 1, 16, 8, Mask::causal, false, L::contiguous}, 2),
      attention_problem({3, 17, 4, 2, 8, 12, Mask::causal, true, L::padded}, 3),
      attention_problem({1, 33, 8, 2, 64, 64, Mask::causal, false, L::permuted}, 4),
  };
}

}  // namespace posenc::harness
