// attention's variants (issue 21): properties that follow from each variant's maths, on problems of
// their own (finite, moderate values), apart from the family's generator in attention.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "properties/generic.h"

namespace posenc::harness {

// attention.cc: two runs of an implementation of bound `bound`, in the family's tolerance unit.
Comparison compare_two_runs(const AttentionCall& a, const AttentionCall& b, double bound);

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

  return props;
}

}  // namespace posenc::harness
