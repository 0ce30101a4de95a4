// t5: outputs, tolerance model and problems.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "properties/generic.h"

namespace posenc::harness {

Comparison compare(const T5Call& expected, const T5Call& got, const Bound& /*bound*/) {
  // A lookup is exact: bit-for-bit whatever bound an implementation states (see t5.h). The unit
  // only sizes the error in the report.
  const Tensor& bias = expected.bias;
  return harness::compare("bias", bias, got.bias, 0, [&](const int64_t* ix) {
    return ulp_of(bias.dtype, load(bias, bias.offset(ix[0], ix[1], ix[2])));
  });
}

namespace {

struct T5Shape {
  bool bidirectional;
  int64_t n_buckets, max_distance, heads, tq, tk;
  PositionPattern positions;
  Layout layout;
};

Problem<T5Call> t5_problem(T5Shape s, uint64_t seed) {
  std::string label = fmt::format(
      "{} n_buckets={} max_distance={} heads={} tq={} tk={} "
      "positions={} {}",
      s.bidirectional ? "bidirectional" : "causal", s.n_buckets, s.max_distance, s.heads, s.tq,
      s.tk, positions_name(s.positions), layout_name(s.layout));
  return {label, [s, seed](Arena& arena) {
            Values values(seed);
            T5Call call{.bidirectional = s.bidirectional,
                        .n_buckets = s.n_buckets,
                        .max_distance = s.max_distance};
            call.q_positions = arena.alloc(DType::i64, {s.tq}, s.layout);
            call.k_positions = arena.alloc(DType::i64, {s.tk}, s.layout);
            fill_positions(call.q_positions, call.k_positions, s.positions, values);
            call.table = arena.alloc(DType::f32, {s.n_buckets, s.heads}, s.layout);
            values.fill(call.table);
            call.bias = arena.alloc(DType::f32, {s.heads, s.tq, s.tk}, s.layout);
            return call;
          }};
}

// One T5 problem. Layout slots: q_positions, k_positions, table, bias. With `probe`, the table
// holds table[b, h] = 2^h·(1 + b/128), so that each bias element names its bucket and head: exact
// in f32, bf16 and f16 alike (b < 128: 7 fraction bits; h < 8).
struct T5Spec {
  bool bidirectional = true, probe = false;
  int64_t n_buckets = 32, max_distance = 128, heads = 1;
  Positions q, k;
  Fill table;
  Layouts layouts = uniform_layouts(Layout::contiguous);
  DType dtype = DType::f32;  // table and bias
};

double probe_value(int64_t bucket, int64_t head) {
  return std::ldexp(1 + static_cast<double>(bucket) / 128, static_cast<int>(head));
}

void showValue(const T5Spec& s, std::ostream& os) {
  os << fmt::format(
      "{} {} n_buckets={} max_distance={} heads={} q_positions={} k_positions={} table={}",
      dtype_name(s.dtype), s.bidirectional ? "bidirectional" : "causal", s.n_buckets,
      s.max_distance, s.heads, s.q.describe(), s.k.describe(),
      s.probe ? "2^h·(1 + b/128)" : s.table.describe());
  if (any_strided(s.layouts))
    os << fmt::format(" layouts {} {} {} {}", layout_name(s.layouts[0]), layout_name(s.layouts[1]),
                      layout_name(s.layouts[2]), layout_name(s.layouts[3]));
}

T5Call build(const T5Spec& s, Arena& arena) {
  const auto tq = static_cast<int64_t>(s.q.values.size()),
             tk = static_cast<int64_t>(s.k.values.size());
  T5Call call{
      .bidirectional = s.bidirectional, .n_buckets = s.n_buckets, .max_distance = s.max_distance};
  call.q_positions = arena.alloc(s.q.dtype, {tq}, s.layouts[0]);
  call.k_positions = arena.alloc(s.k.dtype, {tk}, s.layouts[1]);
  s.q.store(call.q_positions);
  s.k.store(call.k_positions);
  call.table = arena.alloc(s.dtype, {s.n_buckets, s.heads}, s.layouts[2]);
  if (s.probe) {
    for (int64_t b = 0; b < s.n_buckets; ++b)
      for (int64_t h = 0; h < s.heads; ++h)
        store(call.table, call.table.offset(b, h), probe_value(b, h));
  } else {
    s.table.apply(call.table);
  }
  call.bias = arena.alloc(s.dtype, {s.heads, tq, tk}, s.layouts[3]);
  return call;
}

// Settings: T5's (32, 128) often, any bucket count from the minimum up, max_distance just past the
// exact buckets up to 2²⁰; 1–8 heads.
rc::Gen<T5Spec> t5_settings() {
  return rc::gen::exec([] {
    T5Spec s;
    s.bidirectional = *rc::gen::arbitrary<bool>();
    const int64_t min_buckets = s.bidirectional ? 4 : 2;
    s.n_buckets = *rc::gen::weightedOneOf<int64_t>({{2, rc::gen::just<int64_t>(32)},
                                                    {1, rc::gen::just<int64_t>(64)},
                                                    {2, gen::sized(min_buckets, 80)}});
    const int64_t exact = (s.bidirectional ? s.n_buckets / 2 : s.n_buckets) / 2;
    s.max_distance =
        *rc::gen::weightedOneOf<int64_t>({{2, rc::gen::just(std::max<int64_t>(128, exact + 1))},
                                          {2, gen::uniform(exact + 1, exact + 2000)},
                                          {1, gen::uniform(exact + 1, 1 << 20)}});
    s.heads = *gen::uniform(1, 8);
    s.dtype = *gen::float_dtype();
    return s;
  });
}

// max_exact: the first distance in the logarithmic buckets (t5.h's e).
int64_t max_exact(const T5Spec& s) { return (s.bidirectional ? s.n_buckets / 2 : s.n_buckets) / 2; }

// The distances beside which the bucket formula switches: the last exact bucket and the first
// logarithmic one (max_exact − 1, max_exact, + 1), and max_distance − 1, max_distance, + 1.
std::vector<int64_t> bucket_edges(const T5Spec& s) {
  const int64_t e = max_exact(s), m = s.max_distance;
  return {e - 1, e, e + 1, m - 1, m, m + 1};
}

// Queries counting up from an offset, and each key at one of bucket_edges() from a query, before
// it in 3 cases in 4 (a causal bias only buckets keys before the query) and else after it.
rc::Gen<std::pair<Positions, Positions>> edge_positions(const T5Spec& s, int64_t tq, int64_t tk) {
  return rc::gen::exec([=] {
    const std::vector<int64_t> edges = bucket_edges(s);
    const int64_t reach = s.max_distance + 1;
    const DType dtype = *gen::position_dtype();
    std::pair<Positions, Positions> p{{{}, dtype, "bucket edges"}, {{}, dtype, "bucket edges"}};
    const int64_t q0 = *gen::uniform(reach, kMaxPosition - reach - tq);
    for (int64_t i = 0; i < tq; ++i) p.first.values.push_back(q0 + i);
    for (int64_t j = 0; j < tk; ++j) {
      const int64_t o = edges[static_cast<size_t>(*gen::uniform(0, 5))];
      const bool before = *rc::gen::weightedElement<bool>({{1, false}, {3, true}});
      p.second.values.push_back((tq ? p.first.values[j % tq] : q0) + (before ? -o : o));
    }
    return p;
  });
}

// With `decode`, in 1 case in 12 a decode step over a long KV cache: one query at the end of up to
// 32768 cached keys, with 1–4 heads so that the case stays cheap. Otherwise, in 1 case in 4, keys
// at the bucket edges from the queries (edge_positions).
rc::Gen<T5Spec> t5_spec(int64_t max_tq, int64_t max_tk, bool decode = false) {
  return rc::gen::exec([=] {
    T5Spec s = *t5_settings();
    if (decode && *rc::gen::weightedElement<bool>({{11, false}, {1, true}})) {
      s.heads = *gen::uniform(1, 4);
      std::tie(s.q, s.k) = *gen::cache_positions(1, *gen::decode_keys());
    } else {
      const int64_t tq = *gen::count(max_tq), tk = *gen::count(max_tk);
      std::tie(s.q, s.k) = *rc::gen::weightedOneOf<std::pair<Positions, Positions>>(
          {{3, gen::query_key_positions(tq, tk)}, {1, edge_positions(s, tq, tk)}});
    }
    s.table = *gen::fill();
    s.layouts = *gen::layouts();
    return s;
  });
}

// One query at Q and keys at Q + o for offsets o: every distance up to 64, the bucket edges and,
// beyond, powers of two and their neighbours up to 2²⁴, on both sides where they fit in [0, 2²⁴].
// `bidirectional`: settings made valid for the bidirectional form, edges included.
rc::Gen<T5Spec> distance_spec(bool bidirectional = false) {
  return rc::gen::exec([=] {
    T5Spec s = *t5_settings();
    if (bidirectional) {
      s.bidirectional = true;
      s.n_buckets = std::max<int64_t>(s.n_buckets, 4);
      s.max_distance = std::max(s.max_distance, s.n_buckets / 4 + 1);
    }
    s.probe = true;
    const int64_t q = *rc::gen::weightedOneOf<int64_t>({{1, gen::uniform(0, 64)},
                                                        {1, gen::uniform(0, kMaxPosition)},
                                                        {1, rc::gen::just(kMaxPosition / 2)}});
    std::vector<int64_t> offsets;
    for (int64_t o = 0; o <= 64; ++o) offsets.push_back(o);
    for (int64_t o : bucket_edges(s)) offsets.push_back(o);
    for (int64_t p = 128; p <= kMaxPosition; p *= 2)
      for (int64_t o : {p - 1, p, p + 1}) offsets.push_back(o);
    s.q = {{q}, DType::i64, "one query"};
    s.k = {{}, DType::i64, "distances"};
    for (int64_t o : offsets)
      for (int64_t key : {q + o, q - o})
        if (key >= 0 && key <= kMaxPosition) s.k.values.push_back(key);
    return s;
  });
}

void classify(const T5Spec& s) {
  classify_dtype(s.dtype);
  RC_CLASSIFY(s.q.values.empty() || s.k.values.empty(), "empty");
  RC_CLASSIFY(s.bidirectional, "bidirectional");
  RC_CLASSIFY(s.q.long_range() || s.k.long_range(), "long positions");
  RC_CLASSIFY(s.n_buckets != 32 || s.max_distance != 128, "non-default settings");
  RC_CLASSIFY(s.table.has_specials(), "specials");
  RC_CLASSIFY(any_strided(s.layouts), "strided");
  // Whether some query–key distance, as the bucket formula sees it, sits at an edge or beside it.
  const int64_t e = max_exact(s), m = s.max_distance;
  bool at_exact = false, at_max = false;
  for (int64_t qp : s.q.values)
    for (int64_t kp : s.k.values) {
      const int64_t r = s.bidirectional ? std::abs(kp - qp) : std::max<int64_t>(qp - kp, 0);
      at_exact |= r >= e - 1 && r <= e + 1;
      at_max |= r >= m - 1 && r <= m + 1;
    }
  RC_CLASSIFY(at_exact && s.bidirectional, "distance at max_exact +-1, bidirectional");
  RC_CLASSIFY(at_exact && !s.bidirectional, "distance at max_exact +-1, causal");
  RC_CLASSIFY(at_max && s.bidirectional, "distance at max_distance +-1, bidirectional");
  RC_CLASSIFY(at_max && !s.bidirectional, "distance at max_distance +-1, causal");
  classify_tokens(s.q, s.k);
}

// The bucket and head a probe table's element names, or nullopt if it names none.
std::optional<std::pair<int64_t, int64_t>> decode(double v, const T5Spec& s) {
  if (!(v >= 1) || !std::isfinite(v)) return std::nullopt;
  int exponent;
  std::frexp(v,
             &exponent);  // v = m·2^exponent, m in [0.5, 1): 2^h·(1 + b/128) has h = exponent − 1
  const int64_t h = exponent - 1;
  const double b = (std::ldexp(v, -static_cast<int>(h)) - 1) * 128;
  if (h >= s.heads || b != std::floor(b) || b >= static_cast<double>(s.n_buckets))
    return std::nullopt;
  return std::pair{static_cast<int64_t>(b), h};
}

// Runs impl on a probe problem and returns bucket[i][j] (−1 where the element names no bucket or
// the wrong head), with the first such element described in `bad`.
std::vector<std::vector<int64_t>> buckets(const Impl<T5Call>& impl, const T5Spec& s,
                                          std::string& bad) {
  Arena arena;
  const T5Call call = build(s, arena);
  impl.run(call);
  std::vector<std::vector<int64_t>> b(s.q.values.size(), std::vector<int64_t>(s.k.values.size()));
  for (int64_t h = 0; h < s.heads; ++h)
    for (size_t i = 0; i < s.q.values.size(); ++i)
      for (size_t j = 0; j < s.k.values.size(); ++j) {
        const double v = load(call.bias, call.bias.offset(h, i, j));
        const auto d = decode(v, s);
        if (d && d->second == h) {
          b[i][j] = d->first;
          continue;
        }
        b[i][j] = -1;
        if (bad.empty())
          bad = fmt::format("bias[{}, {}, {}] = {} (rp = {}) names no bucket of head {} in [0, {})",
                            h, i, j, v, s.k.values[j] - s.q.values[i], h, s.n_buckets);
      }
  return b;
}

Problems<T5Call, T5Spec> t5_problems() {
  using Call = T5Call;
  Problems<Call, T5Spec> problems{
      .any = t5_spec(12, 24, /*decode=*/true),
      // Prefill-sized, or in 1 case in 3 a decode step over a long KV cache with 1–5 heads: a
      // kernel splitting the keys (not the rows) across threads meets its remainders there.
      .large = rc::gen::exec([] {
        T5Spec s = *t5_spec(0, 0);
        if (*rc::gen::weightedElement<bool>({{2, false}, {1, true}})) {
          s.heads = *gen::uniform(1, 5);
          std::tie(s.q, s.k) = *gen::cache_positions(1, *gen::decode_keys());
        } else {
          std::tie(s.q, s.k) =
              *gen::query_key_positions(*gen::uniform(16, 128), *gen::uniform(64, 256));
        }
        return s;
      }),
      .build = [](const T5Spec& s, Arena& a) { return build(s, a); },
      .classify = classify,
      .minimum = dtype_shares(
          {{"bidirectional", 0.3},
           {"distance at max_exact +-1, bidirectional", 0.1, variant::t5_bidirectional},
           {"distance at max_exact +-1, causal", 0.1, variant::t5_causal},
           {"distance at max_distance +-1, bidirectional", 0.06, variant::t5_bidirectional},
           {"distance at max_distance +-1, causal", 0.05, variant::t5_causal},
           {"decode with long KV", 0.03},
           {"long positions", 0.2},
           {"non-default settings", 0.3},
           {"specials", 0.05},
           {"strided", 0.2},
           {"empty", 0.005}}),
  };
  ViewOf<Call> q = [](Call& c) { return &c.q_positions; };
  ViewOf<Call> k = [](Call& c) { return &c.k_positions; };
  ViewOf<Call> table = [](Call& c) { return &c.table; };
  ViewOf<Call> bias = [](Call& c) { return &c.bias; };
  auto& m = problems.mutations;
  for (auto& x : view_mutations<Call>("q_positions", q, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("k_positions", k, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("table", table, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("bias", bias, true)) m.push_back(x);
  m.push_back(overlap_mutation<Call>("bias", bias, "table", table));
  m.push_back(position_mutation<Call>("q position 2^24 + 1", q,
                                      [](const Call&) { return kMaxPosition + 1; }));
  m.push_back(position_mutation<Call>("k position -1", k, [](const Call&) { return -1; }));
  m.push_back({"n_buckets below the minimum", [](Call& c, Arena&) {
                 c.n_buckets = c.bidirectional ? 3 : 1;
                 return true;
               }});
  m.push_back({"max_distance = exact buckets", [](Call& c, Arena&) {
                 c.max_distance = (c.bidirectional ? c.n_buckets / 2 : c.n_buckets) / 2;
                 return true;
               }});
  m.push_back({"table rows differ from n_buckets", [](Call& c, Arena&) {
                 if (c.table.shape[0] < 2) return false;
                 --c.table.shape[0];
                 return true;
               }});
  problems.classify_large = [](const T5Spec& s) { classify_tokens(s.q, s.k); };
  problems.large_minimum = {{"decode with long KV", 0.2},
                            {"decode with over 16384 keys", 0.05},
                            {"queries not a multiple of 2, 3 or 7", 0.1},
                            {"keys not a multiple of 2, 3 or 7", 0.1}};
  return problems;
}

Property<T5Call> bucket_in_range() {
  using Call = T5Call;
  return {.name = "t5.bucket_in_range",
          .statement = "every bias element is table[b, h] of its own head h, b in [0, n_buckets)",
          .body =
              [](Case<Call>& c) {
                T5Spec s = *t5_spec(12, 24);
                s.probe = true;
                classify(s);
                c.each([&](const Impl<Call>& impl) {
                  std::string bad;
                  buckets(impl, s, bad);
                  return bad.empty() ? Verdict::pass() : Verdict::fail(bad);
                });
              },
          .minimum = dtype_shares(
              {{"long positions", 0.2},
               {"non-default settings", 0.3},
               {"distance at max_distance +-1, bidirectional", 0.06, variant::t5_bidirectional},
               {"distance at max_distance +-1, causal", 0.05, variant::t5_causal}})};
}

Property<T5Call> monotone() {
  using Call = T5Call;
  return {.name = "t5.monotone",
          .statement = "within each direction, the bucket never decreases as |rp| grows",
          .body =
              [](Case<Call>& c) {
                const T5Spec s = *distance_spec();
                RC_CLASSIFY(s.bidirectional, "bidirectional");
                classify_dtype(s.dtype);
                c.each([&](const Impl<Call>& impl) {
                  std::string bad;
                  const auto b = buckets(impl, s, bad);
                  if (!bad.empty()) return Verdict::fail(bad);
                  // (side, r) → bucket; side: keys after the query when bidirectional, else
                  // one side with r = max(−rp, 0).
                  std::map<std::pair<int, int64_t>, int64_t> by_distance;
                  for (size_t j = 0; j < s.k.values.size(); ++j) {
                    const int64_t rp = s.k.values[j] - s.q.values[0];
                    const int side = s.bidirectional && rp > 0 ? 1 : 0;
                    const int64_t r = s.bidirectional ? std::abs(rp) : std::max<int64_t>(-rp, 0);
                    by_distance[{side, r}] = b[0][j];
                  }
                  const std::pair<int, int64_t>* previous = nullptr;
                  int64_t previous_bucket = 0;
                  for (const auto& [key, bucket] : by_distance) {
                    if (previous && previous->first == key.first && bucket < previous_bucket)
                      return Verdict::fail(
                          fmt::format("bucket {} at |rp| = {} after bucket {} at |rp| = {}", bucket,
                                      key.second, previous_bucket, previous->second));
                    previous = &key;
                    previous_bucket = bucket;
                  }
                  return Verdict::pass();
                });
              },
          .minimum = dtype_shares({{"bidirectional", 0.3}})};
}

Property<T5Call> symmetric_split() {
  using Call = T5Call;
  return {.name = "t5.symmetric_split",
          .statement =
              "bidirectional: keys after the query take [n/2, n), the rest [0, n/2), and "
              "bucket(+r) = bucket(−r) + n/2",
          .body =
              [](Case<Call>& c) {
                const T5Spec s = *distance_spec(/*bidirectional=*/true);
                c.each([&](const Impl<Call>& impl) {
                  std::string bad;
                  const auto b = buckets(impl, s, bad);
                  if (!bad.empty()) return Verdict::fail(bad);
                  const int64_t half = s.n_buckets / 2;
                  std::map<int64_t, int64_t> at;  // rp → bucket
                  for (size_t j = 0; j < s.k.values.size(); ++j) {
                    const int64_t rp = s.k.values[j] - s.q.values[0], bucket = b[0][j];
                    if ((rp > 0) != (bucket >= half))
                      return Verdict::fail(fmt::format("rp = {} got bucket {}, in the {} half", rp,
                                                       bucket, bucket >= half ? "upper" : "lower"));
                    at[rp] = bucket;
                  }
                  for (const auto& [rp, bucket] : at) {
                    if (rp <= 0 || !at.count(-rp)) continue;
                    if (bucket != at[-rp] + half)
                      return Verdict::fail(
                          fmt::format("bucket(+{0}) = {1} but bucket(−{0}) + n/2 = {2}", rp, bucket,
                                      at[-rp] + half));
                  }
                  return Verdict::pass();
                });
              },
          .needs = variant::t5_bidirectional};
}

std::vector<Property<T5Call>> t5_properties() {
  auto props = generic_properties<T5Call>("t5", t5_problems());
  for (auto property : {bucket_in_range(), monotone(), symmetric_split()})
    props.push_back(std::move(property));
  return props;
}

}  // namespace

template <>
std::vector<Problem<T5Call>> smoke_problems<T5Call>() {
  using L = Layout;
  using P = PositionPattern;
  return {
      t5_problem({true, 32, 128, 8, 12, 12, P::cache, L::contiguous}, 1),
      t5_problem({false, 32, 128, 3, 4, 200, P::cache, L::padded}, 2),
      t5_problem({true, 64, 256, 12, 5, 9, P::wide, L::permuted}, 3),
      t5_problem({false, 10, 20, 1, 7, 7, P::duplicates, L::permuted}, 4),
      t5_problem({true, 5, 2, 4, 5, 6, P::shifted, L::padded}, 5),
      t5_problem({false, 32, 939, 2, 3, 730, P::cache, L::contiguous}, 6),
  };
}

template <>
std::vector<Property<T5Call>> properties<T5Call>() {
  return t5_properties();
}

}  // namespace posenc::harness
