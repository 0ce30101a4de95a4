// attention's variants (issue 21): properties that follow from each variant's maths, on problems of
// their own (finite, moderate values), apart from the family's generator in attention.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "properties/attention.h"

namespace posenc::harness {

namespace {

// A problem for the variants' properties: no bias, contiguous views, positions implicit or
// explicit (any pattern, long-range included).
struct VariantSpec {
  int64_t tq = 0, tk = 0, hq = 1, hkv = 1, d = 1, dv = 1;
  Mask mask = Mask::none;
  bool with_positions = false;
  Positions q_pos, k_pos;
  Fill q, k, v;
  DType dtype = DType::f32;
};

void showValue(const VariantSpec& s, std::ostream& os) {
  os << fmt::format("{} tq={} tk={} hq={} hkv={} d={} dv={} mask={}", dtype_name(s.dtype), s.tq,
                    s.tk, s.hq, s.hkv, s.d, s.dv, s.mask == Mask::causal ? "causal" : "none");
  if (s.with_positions)
    os << " q_positions=" << s.q_pos.describe() << " k_positions=" << s.k_pos.describe();
  os << fmt::format(" q=({}) k=({}) v=({})", s.q.describe(), s.k.describe(), s.v.describe());
}

rc::Gen<VariantSpec> variant_spec() {
  return rc::gen::exec([] {
    VariantSpec s;
    s.tq = *gen::count(12);
    s.tk = *gen::count(160);  // past one key block (128)
    s.hkv = *gen::uniform(1, 2);
    s.hq = s.hkv * *gen::uniform(1, 3);
    s.d = *gen::sized(1, 40);
    s.dv = *gen::sized(1, 20);
    s.mask = *rc::gen::element(Mask::none, Mask::causal);
    s.with_positions = *rc::gen::arbitrary<bool>();
    if (s.with_positions) {
      s.q_pos = *gen::positions(s.tq, kMaxPosition);
      s.k_pos = *gen::positions(s.tk, kMaxPosition);
    }
    s.q = *gen::finite_fill();
    s.k = *gen::finite_fill();
    s.v = *gen::finite_fill();
    s.dtype = *gen::float_dtype();
    return s;
  });
}

AttentionCall build(const VariantSpec& s, Arena& arena) {
  AttentionCall call;
  call.q = arena.alloc(s.dtype, {s.tq, s.hq, s.d});
  call.k = arena.alloc(s.dtype, {s.tk, s.hkv, s.d});
  call.v = arena.alloc(s.dtype, {s.tk, s.hkv, s.dv});
  call.out = arena.alloc(s.dtype, {s.tq, s.hq, s.dv});
  s.q.apply(call.q);
  s.k.apply(call.k);
  s.v.apply(call.v);
  call.mask = s.mask;
  if (s.with_positions) {
    call.q_positions = arena.alloc(s.q_pos.dtype, {s.tq});
    call.k_positions = arena.alloc(s.k_pos.dtype, {s.tk});
    s.q_pos.store(*call.q_positions);
    s.k_pos.store(*call.k_positions);
  }
  return call;
}

void classify(const VariantSpec& s) {
  classify_dtype(s.dtype);
  RC_CLASSIFY(s.mask == Mask::causal, "causal");
  RC_CLASSIFY(s.with_positions, "positions");
}

// Runs `impl` on the spec's call as `edit` changes it and on the call as `edit_other` does, and
// compares the two outputs: two runs, each within the bound of the reference.
template <class Edit, class EditOther>
Comparison compare_edited(const Impl<AttentionCall>& impl, const VariantSpec& s, Edit edit,
                          EditOther edit_other) {
  Arena arena;
  AttentionCall a = build(s, arena), b = build(s, arena);
  edit(a);
  edit_other(b);
  impl.run(a);
  impl.run(b);
  return compare_two_runs(a, b, impl.bound);
}

// The largest q_pos − k_pos of the call: the narrowest window that hides no key (0 if none).
int64_t widest_distance(const AttentionCall& call) {
  int64_t widest = 0;
  for (int64_t i = 0; i < call.q.shape[0]; ++i)
    for (int64_t j = 0; j < call.k.shape[0]; ++j)
      widest = std::max(widest, call.q_position(i) - call.k_position(j));
  return widest;
}

// For softcap_bounds_logits: f32, no mask, v[j] the one-hot row e_j (dv = tk), so that out[i, h, j]
// is key j's softmax weight. f32 because the bound on the weights' ratio is the variant's maths,
// independent of the dtype, while a bf16 unit would hide it.
VariantSpec one_hot_spec() {
  VariantSpec s = *variant_spec();
  s.dtype = DType::f32;
  s.mask = Mask::none;
  s.with_positions = false;
  s.tk = std::max<int64_t>(s.tk % 40, 2);
  s.dv = s.tk;
  return s;
}

void one_hot_values(const AttentionCall& call) {
  for (int64_t j = 0; j < call.v.shape[0]; ++j)
    for (int64_t h = 0; h < call.v.shape[1]; ++h)
      for (int64_t c = 0; c < call.v.shape[2]; ++c)
        store(call.v, call.v.offset(j, h, c), j == c ? 1.0 : 0.0);
}

// Whether every row's weights (out of a one-hot call) lie within a factor e^(2·cap) of each other,
// up to `units` of the family's unit ulp(1)·(1 + |scale|·‖q_i‖·kmax) on each weight.
Verdict weights_within_cap(const AttentionCall& call, double cap, double units) {
  const Tensor &q = call.q, &k = call.k;
  double kmax = 0;
  for (int64_t j = 0; j < k.shape[0]; ++j)
    for (int64_t h = 0; h < k.shape[1]; ++h) {
      double norm = 0;
      for (int64_t c = 0; c < k.shape[2]; ++c) norm += std::pow(load(k, k.offset(j, h, c)), 2);
      kmax = std::max(kmax, std::sqrt(norm));
    }
  for (int64_t i = 0; i < q.shape[0]; ++i)
    for (int64_t h = 0; h < q.shape[1]; ++h) {
      double qnorm = 0, lo = INFINITY, hi = 0;
      for (int64_t c = 0; c < q.shape[2]; ++c) qnorm += std::pow(load(q, q.offset(i, h, c)), 2);
      for (int64_t j = 0; j < call.out.shape[2]; ++j) {
        const double p = load(call.out, call.out.offset(i, h, j));
        lo = std::min(lo, p);
        hi = std::max(hi, p);
      }
      const double slack = units * ulp_of(DType::f32, 1.0) *
                           (1 + std::fabs(call.resolved_scale()) * std::sqrt(qnorm) * kmax);
      if (lo < hi * std::exp(-2 * cap) - slack)
        return Verdict::fail(fmt::format(
            "row {} head {}: weights {:.6g} and {:.6g} differ by more than e^(2·softcap) = {:.6g} "
            "(slack {:.3g}): some logit left [−{}, {}]",
            i, h, lo, hi, std::exp(2 * cap), slack, cap, cap));
    }
  return Verdict::pass();
}

// ---- the log-sum-exp output ----

// A problem for attention.lse_merge: a variant problem, with a window, a softcap and a bias
// sometimes, and a partition of its keys into A (in_a[j]) and B: a prefix and the rest (a KV
// cache split in blocks) or any subset.
struct MergeSpec {
  VariantSpec base;
  int64_t window_left = -1;
  double softcap = 0;
  bool bias = false;
  Fill bias_values;
  bool prefix = false;
  std::vector<int> in_a;  // 1: key j is in A, 0: in B

  std::vector<int64_t> keys(int in) const {
    std::vector<int64_t> keys;
    for (int64_t j = 0; j < base.tk; ++j)
      if (in_a[j] == in) keys.push_back(j);
    return keys;
  }
};

void showValue(const MergeSpec& s, std::ostream& os) {
  showValue(s.base, os);
  if (s.window_left >= 0) os << " window_left=" << s.window_left;
  if (s.softcap > 0) os << " softcap=" << s.softcap;
  if (s.bias) os << " bias=(" << s.bias_values.describe() << ")";
  os << " A = keys [";
  const std::vector<int64_t> a = s.keys(1);
  for (size_t n = 0; n < a.size(); ++n) os << (n ? ", " : "") << a[n];
  os << "]";
}

rc::Gen<MergeSpec> merge_spec() {
  return rc::gen::exec([] {
    MergeSpec s;
    s.base = *variant_spec();
    s.window_left = *rc::gen::weightedOneOf<int64_t>(
        {{3, rc::gen::just<int64_t>(-1)}, {1, gen::uniform(0, 160)}});
    s.softcap = *rc::gen::weightedElement<double>({{3, 0.0}, {1, 5.0}, {1, 50.0}});
    s.bias = *rc::gen::arbitrary<bool>();
    if (s.bias) s.bias_values = *gen::finite_fill(2);
    const int64_t tk = s.base.tk;
    s.prefix = *rc::gen::arbitrary<bool>();
    if (s.prefix) {
      const int64_t cut = *gen::uniform(0, tk);
      s.in_a.assign(tk, 0);
      std::fill(s.in_a.begin(), s.in_a.begin() + cut, 1);
    } else {
      s.in_a = *rc::gen::container<std::vector<int>>(tk, rc::gen::element(0, 1));
    }
    return s;
  });
}

// The call of `s` over all its keys, with lse; with explicit positions when a mask or window
// reads them, so that a subset of the keys can keep theirs.
AttentionCall merge_full_call(const MergeSpec& s, Arena& arena) {
  AttentionCall call = build(s.base, arena);
  call.window_left = s.window_left;
  call.softcap = s.softcap;
  call.lse = arena.alloc(DType::f32, {s.base.tq, s.base.hq});
  if (s.bias) {
    call.bias = arena.alloc(DType::f32, {s.base.hq, s.base.tq, s.base.tk});
    s.bias_values.apply(*call.bias);
  }
  if ((call.mask == Mask::causal || call.windowed()) && !call.q_positions) {
    // The implicit ones shifted to start at 0 (q_pos = tk − tq + i is negative when tq > tk):
    // the mask and the window read only their differences.
    const int64_t shift = std::max<int64_t>(0, s.base.tq - s.base.tk);
    const Tensor q_pos = arena.alloc(DType::i64, {s.base.tq});
    const Tensor k_pos = arena.alloc(DType::i64, {s.base.tk});
    for (int64_t i = 0; i < s.base.tq; ++i) store_index(q_pos, i, call.q_position(i) + shift);
    for (int64_t j = 0; j < s.base.tk; ++j) store_index(k_pos, j, call.k_position(j) + shift);
    call.q_positions = q_pos;
    call.k_positions = k_pos;
  }
  return call;
}

// `full` over the keys `keys` only: their rows of k and v, their positions and bias columns; the
// same q, fresh out and lse.
AttentionCall key_subset(const AttentionCall& full, const std::vector<int64_t>& keys,
                         Arena& arena) {
  const int64_t n = static_cast<int64_t>(keys.size());
  const int64_t tq = full.q.shape[0], hq = full.q.shape[1], hkv = full.k.shape[1];
  AttentionCall call = full;
  call.k = arena.alloc(full.k.dtype, {n, hkv, full.k.shape[2]});
  call.v = arena.alloc(full.v.dtype, {n, hkv, full.v.shape[2]});
  call.out = arena.alloc(full.out.dtype, {tq, hq, full.out.shape[2]});
  call.lse = arena.alloc(DType::f32, {tq, hq});
  for (int64_t m = 0; m < n; ++m)
    for (int64_t h = 0; h < hkv; ++h) {
      for (int64_t c = 0; c < full.k.shape[2]; ++c)
        store(call.k, call.k.offset(m, h, c), load(full.k, full.k.offset(keys[m], h, c)));
      for (int64_t c = 0; c < full.v.shape[2]; ++c)
        store(call.v, call.v.offset(m, h, c), load(full.v, full.v.offset(keys[m], h, c)));
    }
  if (full.k_positions) {
    call.k_positions = arena.alloc(DType::i64, {n});
    for (int64_t m = 0; m < n; ++m) store_index(*call.k_positions, m, full.k_position(keys[m]));
  }
  if (full.bias) {
    call.bias = arena.alloc(DType::f32, {hq, tq, n});
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < tq; ++i)
        for (int64_t m = 0; m < n; ++m)
          store(*call.bias, call.bias->offset(h, i, m),
                load(*full.bias, full.bias->offset(h, i, keys[m])));
  }
  return call;
}

// The runs over A and B merged in fp64 (l = ln(e^lA + e^lB), out = wA·outA + wB·outB with
// wA = e^(lA − l)), against the run over A ∪ B. Each run lies within bound + ½ of exact in its own
// units, so the allowed difference is the sum of the full run's, wA·A's and wB·B's; an error δ in
// lA or lB moves wA by wA·wB·δ and the merged output by wA·wB·|outA − outB|·δ, allowed in lse's
// units and bound (the f32 one).
Comparison compare_merged(const AttentionCall& full, const AttentionCall& a, const AttentionCall& b,
                          const Bound& bound) {
  const int64_t tq = full.q.shape[0], hq = full.q.shape[1], dv = full.v.shape[2];
  const DType dtype = full.out.dtype;
  const AttentionUnits unit(full, dtype), unit_a(a, dtype), unit_b(b, dtype);
  const double out_bound = exact_bound(dtype_bound(dtype, bound));
  const double lse_bound = exact_bound(bound.f32);
  Arena arena;
  const Tensor out = arena.alloc(DType::f64, {tq, hq, dv}), lse = arena.alloc(DType::f64, {tq, hq});
  std::vector<double> out_unit(tq * hq * dv), lse_unit(tq * hq);
  for (int64_t i = 0; i < tq; ++i)
    for (int64_t h = 0; h < hq; ++h) {
      const double la = load(*a.lse, a.lse->offset(i, h)), lb = load(*b.lse, b.lse->offset(i, h));
      const double top = std::max(la, lb);
      double l = top, wa = 0, wb = 0;
      if (top > -INFINITY) {
        const double ea = std::exp(la - top), eb = std::exp(lb - top);
        l = top + std::log(ea + eb);
        wa = ea / (ea + eb);
        wb = eb / (ea + eb);
      }
      store(lse, lse.offset(i, h), l);
      // A side of weight 0 adds nothing (its lse is −∞, whose unit is ∞).
      const double ula = wa > 0 ? unit_a.of_lse(i, h, la) : 0;
      const double ulb = wb > 0 ? unit_b.of_lse(i, h, lb) : 0;
      const double full_lse = load(*full.lse, full.lse->offset(i, h));
      lse_unit[i * hq + h] = unit.of_lse(i, h, full_lse) + wa * ula + wb * ulb;
      for (int64_t c = 0; c < dv; ++c) {
        const double oa = load(a.out, a.out.offset(i, h, c));
        const double ob = load(b.out, b.out.offset(i, h, c));
        store(out, out.offset(i, h, c), wa * oa + wb * ob);
        double u = unit.of_out(i, h, c);
        if (wa > 0) u += wa * unit_a.of_out(i, h, c);
        if (wb > 0) u += wb * unit_b.of_out(i, h, c);
        if (wa > 0 && wb > 0)
          u += lse_bound / out_bound * wa * wb * std::fabs(oa - ob) * (ula + ulb);
        out_unit[(i * hq + h) * dv + c] = u;
      }
    }
  Comparison cmp = harness::compare("out", full.out, out, out_bound, [&](const int64_t* ix) {
    return out_unit[(ix[0] * hq + ix[1]) * dv + ix[2]];
  });
  cmp.merge(harness::compare("lse", *full.lse, lse, lse_bound,
                             [&](const int64_t* ix) { return lse_unit[ix[0] * hq + ix[1]]; }));
  return cmp;
}

}  // namespace

std::vector<Property<AttentionCall>> attention_variant_properties() {
  using Call = AttentionCall;
  std::vector<Property<Call>> props;

  props.push_back({.name = "attention.window_covering_all",
                   .statement = "a window_left equal to the largest q_pos − k_pos (the bound is "
                                "inclusive) hides nothing: "
                                "the same output as no window, alone and with causal",
                   .body =
                       [](Case<Call>& c) {
                         const VariantSpec s = *variant_spec();
                         classify(s);
                         Arena probe;
                         Call shape = build(s, probe);
                         const int64_t window = widest_distance(shape);
                         RC_CLASSIFY(window >= 128, "window past a key block");
                         shape.window_left = window;
                         c.each(shape, [&](const Impl<Call>& impl) {
                           const auto windowed = [window](Call& call) {
                             call.window_left = window;
                           };
                           const auto unwindowed = [](Call&) {};
                           return Verdict::of(compare_edited(impl, s, windowed, unwindowed),
                                              fmt::format("window_left={} vs no window", window));
                         });
                       },
                   .needs = variant::attention_window,
                   .minimum = dtype_shares({{"causal", 0.3}})});

  props.push_back(
      {.name = "attention.softcap_infinite",
       .statement = "a softcap of 2^30, far beyond every logit, gives the output of no softcap",
       .body =
           [](Case<Call>& c) {
             const VariantSpec s = *variant_spec();
             classify(s);
             Arena probe;
             Call shape = build(s, probe);
             shape.softcap = 0x1p30;
             c.each(shape, [&](const Impl<Call>& impl) {
               const auto capped = [](Call& call) { call.softcap = 0x1p30; };
               const auto uncapped = [](Call&) {};
               return Verdict::of(compare_edited(impl, s, capped, uncapped),
                                  "softcap=2^30 vs no softcap");
             });
           },
       .needs = variant::attention_softcap,
       .minimum = dtype_shares({{"causal", 0.3}})});

  props.push_back(
      {.name = "attention.softcap_bounds_logits",
       .statement =
           "softcapped logits lie within ±softcap: any two keys' weights are within a factor "
           "e^(2·softcap) (f32, no bias, one-hot values)",
       .body =
           [](Case<Call>& c) {
             const VariantSpec s = one_hot_spec();
             const double cap = *rc::gen::element(0.25, 0.5, 1.0);
             Arena probe;
             Call shape = build(s, probe);
             shape.softcap = cap;
             c.each(shape, [&](const Impl<Call>& impl) {
               Arena arena;
               Call call = build(s, arena);
               call.softcap = cap;
               one_hot_values(call);
               impl.run(call);
               return weights_within_cap(call, cap, exact_bound(impl.bound));
             });
           },
       .needs = variant::attention_softcap});

  props.push_back(
      {.name = "attention.lse_merge",
       .statement = "out and lse over disjoint key sets A and B merge into those over A ∪ B: "
                    "l = ln(e^lA + e^lB), out = e^(lA − l)·outA + e^(lB − l)·outB",
       .body =
           [](Case<Call>& c) {
             const MergeSpec s = *merge_spec();
             classify(s.base);
             RC_CLASSIFY(s.prefix, "prefix");
             RC_CLASSIFY(s.window_left >= 0, "window");
             RC_CLASSIFY(s.softcap > 0, "softcap");
             RC_CLASSIFY(s.bias, "bias");
             const std::vector<int64_t> keys_a = s.keys(1), keys_b = s.keys(0);
             RC_CLASSIFY(keys_a.empty() || keys_b.empty(), "A or B empty");
             Arena probe;
             const Call shape = merge_full_call(s, probe);
             c.each(shape, [&](const Impl<Call>& impl) {
               Arena arena;
               const Call full = merge_full_call(s, arena);
               const Call a = key_subset(full, keys_a, arena), b = key_subset(full, keys_b, arena);
               impl.run(full);
               impl.run(a);
               impl.run(b);
               return Verdict::of(compare_merged(full, a, b, impl.bound),
                                  "A and B merged by their lse vs A ∪ B");
             });
           },
       .needs = variant::attention_lse,
       .minimum = dtype_shares({{"causal", 0.3}, {"prefix", 0.3}, {"bias", 0.3}})});

  return props;
}

}  // namespace posenc::harness
