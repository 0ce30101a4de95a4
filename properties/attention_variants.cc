// attention's variants (issue 21): properties that follow from each variant's maths, on problems of
// their own (finite, moderate values), apart from the family's generator in attention.cc: the
// sliding window, the softcap, chunks, sinks, fused ALiBi and the keys' order. Past 600 lines
// because they share one problem spec and its call-rebuilding helpers (gather_rows, own_chunk,
// sink_as_key, keys_reordered), which splitting would have to expose.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "properties/attention.h"

namespace posenc::harness {

// attention.cc: per-head sink logits and ALiBi slopes of the family's generator.
rc::Gen<std::vector<float>> any_sinks(int64_t n);
rc::Gen<std::vector<float>> any_slopes(int64_t n);

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
  // Set by the properties that need them (variant_spec() leaves them out).
  int64_t window_left = -1, chunk_size = 0;
  double softcap = 0, scale = std::nan("");
  std::vector<float> sinks, slopes;
};

void showValue(const VariantSpec& s, std::ostream& os) {
  os << fmt::format("{} tq={} tk={} hq={} hkv={} d={} dv={} mask={}", dtype_name(s.dtype), s.tq,
                    s.tk, s.hq, s.hkv, s.d, s.dv, s.mask == Mask::causal ? "causal" : "none");
  if (s.with_positions)
    os << " q_positions=" << s.q_pos.describe() << " k_positions=" << s.k_pos.describe();
  os << fmt::format(" q=({}) k=({}) v=({})", s.q.describe(), s.k.describe(), s.v.describe());
  if (s.window_left >= 0) os << " window_left=" << s.window_left;
  if (s.chunk_size > 0) os << " chunk_size=" << s.chunk_size;
  if (s.softcap > 0) os << " softcap=" << s.softcap;
  if (!std::isnan(s.scale)) os << " scale=" << s.scale;
  if (!s.sinks.empty()) os << fmt::format(" sinks=[{}]", fmt::join(s.sinks, ", "));
  if (!s.slopes.empty()) os << fmt::format(" alibi_slopes=[{}]", fmt::join(s.slopes, ", "));
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

// An f32 [n] view of per-head values, or none for none.
std::optional<Tensor> per_head(const std::vector<float>& values, Arena& arena) {
  if (values.empty()) return std::nullopt;
  const Tensor t = arena.alloc(DType::f32, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.as<float>());
  return t;
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
  call.window_left = s.window_left;
  call.chunk_size = s.chunk_size;
  call.softcap = s.softcap;
  call.scale = s.scale;
  call.sinks = per_head(s.sinks, arena);
  call.alibi_slopes = per_head(s.slopes, arena);
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

// The largest position of the call's queries and keys (0 if none is larger).
int64_t largest_position(const AttentionCall& call) {
  int64_t largest = 0;
  for (int64_t i = 0; i < call.q.shape[0]; ++i) largest = std::max(largest, call.q_position(i));
  for (int64_t j = 0; j < call.k.shape[0]; ++j) largest = std::max(largest, call.k_position(j));
  return largest;
}

// Makes the spec's positions explicit, as the kernel would read them implicitly (tk − tq + i and
// j; the caller keeps tq ≤ tk so that none is negative).
void make_explicit(VariantSpec& s) {
  if (s.with_positions) return;
  s.with_positions = true;
  s.q_pos = Positions{.kind = "implicit"};
  s.k_pos = Positions{.kind = "implicit"};
  for (int64_t i = 0; i < s.tq; ++i) s.q_pos.values.push_back(s.tk - s.tq + i);
  for (int64_t j = 0; j < s.tk; ++j) s.k_pos.values.push_back(j);
}

// Rows `rows` of `src` (rank 3, tokens first) as a new contiguous view; row −1 is zeros.
Tensor gather_rows(const Tensor& src, const std::vector<int64_t>& rows, Arena& arena) {
  const int64_t n = static_cast<int64_t>(rows.size());
  const Tensor dst = arena.alloc(src.dtype, {n, src.shape[1], src.shape[2]});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t h = 0; h < src.shape[1]; ++h)
      for (int64_t c = 0; c < src.shape[2]; ++c)
        store(dst, dst.offset(i, h, c), rows[i] < 0 ? 0.0 : load(src, src.offset(rows[i], h, c)));
  return dst;
}

// An i64 [n] view of positions.
Tensor position_view(const std::vector<int64_t>& positions, Arena& arena) {
  const Tensor t = arena.alloc(DType::i64, {static_cast<int64_t>(positions.size())});
  std::copy(positions.begin(), positions.end(), t.as<int64_t>());
  return t;
}

// Row i of a rank-3 view, as a view of one row.
Tensor row_of(Tensor t, int64_t i) {
  t.data = static_cast<char*>(t.data) + i * t.strides[0] * dtype_size(t.dtype);
  t.shape[0] = 1;
  return t;
}

// The call with its sinks turned into one more key, at slot 0: key and value zeros (logit 0), a
// position every query sees under the causal mask (the smallest query position), and a bias that
// sets its score to the sink (the other keys' bias 0, which changes no score).
AttentionCall sink_as_key(const AttentionCall& a, Arena& arena) {
  const int64_t tq = a.q.shape[0], hq = a.q.shape[1], tk = a.k.shape[0];
  AttentionCall b = a;
  b.sinks.reset();
  std::vector<int64_t> slots = {-1}, q_pos, k_pos;
  for (int64_t j = 0; j < tk; ++j) slots.push_back(j);
  b.k = gather_rows(a.k, slots, arena);
  b.v = gather_rows(a.v, slots, arena);
  for (int64_t i = 0; i < tq; ++i) q_pos.push_back(a.q_position(i));
  k_pos.push_back(q_pos.empty() ? 0 : *std::min_element(q_pos.begin(), q_pos.end()));
  for (int64_t j = 0; j < tk; ++j) k_pos.push_back(a.k_position(j));
  b.q_positions = position_view(q_pos, arena);
  b.k_positions = position_view(k_pos, arena);
  b.bias = arena.alloc(DType::f32, {hq, tq, tk + 1});
  for (int64_t h = 0; h < hq; ++h)
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j <= tk; ++j) store(*b.bias, b.bias->offset(h, i, j), j ? 0 : a.sink(h));
  b.out = arena.alloc(a.out.dtype, {tq, hq, a.out.shape[2]});
  return b;
}

// Query i of the call alone against the keys of its own chunk, without chunking.
AttentionCall own_chunk(const AttentionCall& a, int64_t i, Arena& arena) {
  const int64_t qp = a.q_position(i);
  std::vector<int64_t> keys, k_pos;
  for (int64_t j = 0; j < a.k.shape[0]; ++j)
    if (a.chunk_of(a.k_position(j)) == a.chunk_of(qp)) {
      keys.push_back(j);
      k_pos.push_back(a.k_position(j));
    }
  AttentionCall b = a;
  b.chunk_size = 0;
  b.q = gather_rows(a.q, {i}, arena);
  b.k = gather_rows(a.k, keys, arena);
  b.v = gather_rows(a.v, keys, arena);
  b.q_positions = position_view({qp}, arena);
  b.k_positions = position_view(k_pos, arena);
  b.out = arena.alloc(a.out.dtype, {1, a.out.shape[1], a.out.shape[2]});
  return b;
}

// The call with its keys (values, positions) in the order `order` (slot j holds key order[j]).
AttentionCall keys_reordered(const AttentionCall& a, const std::vector<int64_t>& order,
                             Arena& arena) {
  AttentionCall b = a;
  b.k = gather_rows(a.k, order, arena);
  b.v = gather_rows(a.v, order, arena);
  std::vector<int64_t> q_pos, k_pos;
  for (int64_t i = 0; i < a.q.shape[0]; ++i) q_pos.push_back(a.q_position(i));
  for (int64_t j : order) k_pos.push_back(a.k_position(j));
  b.q_positions = position_view(q_pos, arena);
  b.k_positions = position_view(k_pos, arena);
  b.out = arena.alloc(a.out.dtype, {a.out.shape[0], a.out.shape[1], a.out.shape[2]});
  return b;
}

// Each query head's largest logit over the keys its rows see (−∞ if none), in fp64.
std::vector<double> largest_logits(const AttentionCall& call) {
  const int64_t hq = call.q.shape[1], group = hq / call.k.shape[1], d = call.q.shape[2];
  std::vector<double> top(hq, -INFINITY);
  for (int64_t h = 0; h < hq; ++h)
    for (int64_t i = 0; i < call.q.shape[0]; ++i)
      for (int64_t j = 0; j < call.k.shape[0]; ++j) {
        if (!call.visible(i, j)) continue;
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot +=
              load(call.q, call.q.offset(i, h, c)) * load(call.k, call.k.offset(j, h / group, c));
        top[h] = std::max(top[h], call.logit(call.resolved_scale() * dot));
      }
  return top;
}

// Whether some row of the call sees no key.
bool some_row_sees_nothing(const AttentionCall& call) {
  for (int64_t i = 0; i < call.q.shape[0]; ++i) {
    bool any = false;
    for (int64_t j = 0; j < call.k.shape[0] && !any; ++j) any = call.visible(i, j);
    if (!any) return true;
  }
  return false;
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
// wA = e^(lA − l)), against the run over A ∪ B. Each run lies within bound + ½ of exact in its
// own units, so the allowed difference is the sum of the full run's, wA·A's and wB·B's; an error
// δ in lA or lB moves wA by wA·wB·δ and the merged output by wA·wB·|outA − outB|·δ, allowed in
// lse's units and bound (the f32 one).
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
      {.name = "attention.chunk_covering_all",
       .statement = "a chunk_size of the largest position + 1 puts every query and key in chunk 0: "
                    "the output of no chunking, alone and with causal",
       .body =
           [](Case<Call>& c) {
             VariantSpec s = *variant_spec();
             if (!s.with_positions) s.tq = std::min(s.tq, s.tk);  // no negative query position
             classify(s);
             Arena probe;
             Call shape = build(s, probe);
             const int64_t chunk = largest_position(shape) + 1;
             RC_CLASSIFY(chunk > 128, "chunk past a key block");
             shape.chunk_size = chunk;
             c.each(shape, [&](const Impl<Call>& impl) {
               const auto chunked = [chunk](Call& call) { call.chunk_size = chunk; };
               return Verdict::of(compare_edited(impl, s, chunked, [](Call&) {}),
                                  fmt::format("chunk_size={} vs no chunking", chunk));
             });
           },
       .needs = variant::attention_chunked,
       .minimum = dtype_shares({{"causal", 0.3}})});

  props.push_back(
      {.name = "attention.chunk_is_local",
       .statement = "a query's chunked output is its unchunked output over the keys of its own "
                    "chunk alone, a key sitting at that chunk's first position included",
       .body =
           [](Case<Call>& c) {
             VariantSpec s = *variant_spec();
             RC_PRE(s.tq > 0 && s.tk > 0);
             if (!s.with_positions) s.tq = std::min(s.tq, s.tk);
             make_explicit(s);
             classify(s);
             const int64_t i = *gen::uniform(0, s.tq - 1), qp = s.q_pos.values[i];
             s.chunk_size = *gen::uniform(1, std::max<int64_t>(qp, 1));
             // A key at the first position of the query's chunk: the boundary.
             const int64_t start = qp / s.chunk_size * s.chunk_size;
             s.k_pos.values[*gen::uniform(0, s.tk - 1)] = start;
             RC_CLASSIFY(start > 0, "chunk after the first");
             Arena probe;
             const Call shape = build(s, probe);
             c.each(shape, [&](const Impl<Call>& impl) {
               Arena arena;
               const Call chunked = build(s, arena);
               impl.run(chunked);
               const Call alone = own_chunk(chunked, i, arena);
               impl.run(alone);
               Call got = alone;
               got.out = row_of(chunked.out, i);
               return Verdict::of(
                   compare_two_runs(alone, got, impl.bound),
                   fmt::format("query {} (chunk from {}) vs its chunk's keys alone", i, start));
             });
           },
       .needs = variant::attention_chunked,
       .minimum = dtype_shares({{"chunk after the first", 0.5}})});

  props.push_back(
      {.name = "attention.sink_minus_infinity",
       .statement = "sinks of −∞ give the output of no sinks, rows that see no key included",
       .body =
           [](Case<Call>& c) {
             VariantSpec s = *variant_spec();
             if (s.tq > 0 && *rc::gen::arbitrary<bool>()) {  // query 0 before every key, causal
               s.mask = Mask::causal;
               if (!s.with_positions) {
                 s.with_positions = true;
                 s.q_pos = *gen::positions(s.tq, kMaxPosition);
                 s.k_pos = *gen::positions(s.tk, kMaxPosition);
               }
               s.q_pos.values[0] = 0;
               for (int64_t& p : s.k_pos.values) p = std::max<int64_t>(p, 1);
             }
             classify(s);
             s.sinks.assign(s.hq, -INFINITY);
             Arena probe;
             const Call shape = build(s, probe);
             RC_CLASSIFY(some_row_sees_nothing(shape), "row without a visible key");
             c.each(shape, [&](const Impl<Call>& impl) {
               const auto no_sinks = [](Call& call) { call.sinks.reset(); };
               return Verdict::of(compare_edited(
                                      impl, s, [](Call&) {}, no_sinks),
                                  "sinks of -inf vs no sinks");
             });
           },
       .needs = variant::attention_sinks,
       .minimum = dtype_shares({{"row without a visible key", 0.3}})});

  props.push_back(
      {.name = "attention.sink_is_extra_key",
       .statement = "a sink is one more key whose score is the sink and whose value is zero "
                    "(a zero key, visible to every query, its bias the sink)",
       .body =
           [](Case<Call>& c) {
             VariantSpec s = *variant_spec();
             if (!s.with_positions) {
               s.with_positions = true;
               s.q_pos = *gen::positions(s.tq, kMaxPosition);
               s.k_pos = *gen::positions(s.tk, kMaxPosition);
             }
             s.sinks = *any_sinks(s.hq);
             // Large scales spread the scores; a sink at a head's largest score then towers over
             // the keys of some block (e^88 overflows f32) while the row's best keys still count.
             s.scale = *rc::gen::weightedOneOf<double>(
                 {{3, rc::gen::just(std::nan(""))}, {1, rc::gen::element(4.0, 16.0)}});
             const bool at_top = *gen::uniform(0, 2) == 0;
             if (at_top) {
               Arena scores;
               const std::vector<double> top = largest_logits(build(s, scores));
               for (int64_t h = 0; h < s.hq; ++h)
                 if (std::isfinite(top[h])) s.sinks[h] = static_cast<float>(top[h] - 1);
             }
             classify(s);
             RC_CLASSIFY(
                 std::any_of(s.sinks.begin(), s.sinks.end(), [](float x) { return x > 64; }),
                 "large sink");
             RC_CLASSIFY(at_top, "sink at the scores' top");
             Arena probe;
             const Call shape = build(s, probe);
             c.each(shape, [&](const Impl<Call>& impl) {
               Arena arena;
               const Call with_sinks = build(s, arena);
               impl.run(with_sinks);
               const Call extra_key = sink_as_key(with_sinks, arena);
               impl.run(extra_key);
               return Verdict::of(compare_two_runs(with_sinks, extra_key, impl.bound),
                                  "sinks vs one more key scoring the sink");
             });
           },
       .needs = variant::attention_sinks,
       .minimum = dtype_shares({{"causal", 0.3}, {"large sink", 0.1}})});

  props.push_back(
      {.name = "attention.alibi_fused",
       .statement = "fused ALiBi slopes give the output of the ALiBi family's reference bias "
                    "for those slopes (powers of two) passed as the bias, softcapped or not",
       .body =
           [](Case<Call>& c) {
             VariantSpec s = *variant_spec();
             if (!s.with_positions) s.tq = std::min(s.tq, s.tk);
             s.softcap = *rc::gen::weightedOneOf<double>(
                 {{2, rc::gen::just(0.0)}, {1, rc::gen::element(1.0, 5.0, 30.0)}});
             s.scale = *rc::gen::weightedOneOf<double>(
                 {{2, rc::gen::just(std::nan(""))},
                  {1, rc::gen::map(gen::uniform(-16, 16), [](int64_t k) { return k / 8.0; })}});
             // Press's slopes (max_bias 8) and their squares are powers of two for every head
             // count up to 8: their f32 copies, which the kernel takes, are the family's own.
             const double max_bias = *rc::gen::element(8.0, 16.0);
             classify(s);
             Arena alibi_arena;  // the ALiBi family's slopes and bias for these positions
             VariantSpec positioned = s;
             make_explicit(positioned);
             AlibiCall alibi{
                 .n_heads = s.hq, .max_bias = max_bias, .causal = s.mask == Mask::causal};
             alibi.q_positions = position_view(positioned.q_pos.values, alibi_arena);
             alibi.k_positions = position_view(positioned.k_pos.values, alibi_arena);
             alibi.bias = alibi_arena.alloc(DType::f32, {s.hq, s.tq, s.tk});
             alibi.slopes = alibi_arena.alloc(DType::f32, {s.hq});
             reference_impl<AlibiCall>().run(alibi);
             Arena probe;
             Call shape = build(s, probe);
             shape.alibi_slopes = alibi.slopes;
             c.each(shape, [&](const Impl<Call>& impl) {
               const auto fused = [&](Call& call) { call.alibi_slopes = alibi.slopes; };
               const auto materialised = [&](Call& call) { call.bias = alibi.bias; };
               return Verdict::of(
                   compare_edited(impl, s, fused, materialised),
                   fmt::format("alibi_slopes vs alibi bias (max_bias {})", max_bias));
             });
           },
       .needs = variant::attention_alibi,
       .minimum = dtype_shares({{"causal", 0.3}})});

  props.push_back({.name = "attention.key_permutation",
                   .statement =
                       "without causal, window or chunk, reordering the keys with their values and "
                       "positions changes no output (sinks, softcap and fused ALiBi keep this)",
                   .body =
                       [](Case<Call>& c) {
                         VariantSpec s = *variant_spec();
                         s.mask = Mask::none;
                         if (!s.with_positions) s.tq = std::min(s.tq, s.tk);
                         if (*rc::gen::arbitrary<bool>()) s.slopes = *any_slopes(s.hq);
                         if (*gen::uniform(0, 2) == 0) s.sinks = *any_sinks(s.hq);
                         if (*gen::uniform(0, 2) == 0) s.softcap = 5;
                         const auto keys = *rc::gen::container<std::vector<int64_t>>(
                             static_cast<size_t>(s.tk), gen::uniform(0, 1 << 20));
                         std::vector<int64_t> order(s.tk);
                         std::iota(order.begin(), order.end(), 0);
                         std::stable_sort(order.begin(), order.end(),
                                          [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
                         classify(s);
                         RC_CLASSIFY(!s.slopes.empty(), "alibi");
                         Arena probe;
                         const Call shape = build(s, probe);
                         c.each(shape, [&](const Impl<Call>& impl) {
                           Arena arena;
                           const Call original = build(s, arena);
                           impl.run(original);
                           const Call reordered = keys_reordered(original, order, arena);
                           impl.run(reordered);
                           return Verdict::of(compare_two_runs(original, reordered, impl.bound),
                                              "keys reordered vs in order");
                         });
                       },
                   .minimum = dtype_shares({{"alibi", 0.3}})});

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
