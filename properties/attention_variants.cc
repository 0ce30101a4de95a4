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

  return props;
}

}  // namespace posenc::harness
