// alibi: outputs, tolerance model and problems.
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

#include "properties/generic.h"

namespace posenc::harness {

Comparison compare(const AlibiCall& expected, const AlibiCall& got, const Bound& bound) {
  // Unit: ulp of the reference element in bias's dtype; −∞ must match exactly (compare() does),
  // see alibi.h and kernel.h.
  const Tensor& bias = expected.bias;
  const DType dtype = got.bias.dtype;
  Comparison c =
      harness::compare("bias", bias, got.bias, dtype_bound(dtype, bound), [&](const int64_t* ix) {
        return ulp_of(dtype, load(bias, bias.offset(ix[0], ix[1], ix[2])));
      });
  if (expected.slopes && got.slopes) {
    const Tensor& slopes = *expected.slopes;
    c.merge(harness::compare("slopes", slopes, *got.slopes, bound, [&](const int64_t* ix) {
      return ulp_f32(load(slopes, slopes.offset(ix[0])));
    }));
  }
  return c;
}

namespace {

struct AlibiShape {
  int64_t heads, tq, tk;
  bool causal, slopes;
  double max_bias;
  PositionPattern positions;
  DType index;  // dtype of the position views
  Layout layout;
};

Problem<AlibiCall> alibi_problem(AlibiShape s, uint64_t seed) {
  std::string label =
      fmt::format("heads={} tq={} tk={} {} max_bias={} slopes={} positions={} {} {}", s.heads, s.tq,
                  s.tk, s.causal ? "causal" : "symmetric", s.max_bias, s.slopes,
                  positions_name(s.positions), dtype_name(s.index), layout_name(s.layout));
  return {label, [s, seed](Arena& arena) {
            Values values(seed);
            AlibiCall call{.n_heads = s.heads, .max_bias = s.max_bias, .causal = s.causal};
            call.q_positions = arena.alloc(s.index, {s.tq}, s.layout);
            call.k_positions = arena.alloc(s.index, {s.tk}, s.layout);
            fill_positions(call.q_positions, call.k_positions, s.positions, values);
            call.bias = arena.alloc(DType::f32, {s.heads, s.tq, s.tk}, s.layout);
            if (s.slopes) call.slopes = arena.alloc(DType::f32, {s.heads}, s.layout);
            return call;
          }};
}

// One ALiBi problem. Layout slots: q_positions, k_positions, bias, slopes.
struct AlibiSpec {
  int64_t heads = 1;
  double max_bias = 8;
  bool causal = false, slopes = false;
  Positions q, k;
  Layouts layouts = uniform_layouts(Layout::contiguous);
  DType dtype = DType::f32;  // bias (slopes are f32)
};

void showValue(const AlibiSpec& s, std::ostream& os) {
  os << fmt::format("{} heads={} max_bias={} {}{} q_positions={} k_positions={}",
                    dtype_name(s.dtype), s.heads, s.max_bias, s.causal ? "causal" : "symmetric",
                    s.slopes ? " slopes" : "", s.q.describe(), s.k.describe());
  if (any_strided(s.layouts))
    os << fmt::format(" layouts {} {} {} {}", layout_name(s.layouts[0]), layout_name(s.layouts[1]),
                      layout_name(s.layouts[2]), layout_name(s.layouts[3]));
}

AlibiCall build(const AlibiSpec& s, Arena& arena) {
  const auto tq = static_cast<int64_t>(s.q.values.size()),
             tk = static_cast<int64_t>(s.k.values.size());
  AlibiCall call{.n_heads = s.heads, .max_bias = s.max_bias, .causal = s.causal};
  call.q_positions = arena.alloc(s.q.dtype, {tq}, s.layouts[0]);
  call.k_positions = arena.alloc(s.k.dtype, {tk}, s.layouts[1]);
  s.q.store(call.q_positions);
  s.k.store(call.k_positions);
  call.bias = arena.alloc(s.dtype, {s.heads, tq, tk}, s.layouts[2]);
  if (s.slopes) call.slopes = arena.alloc(DType::f32, {s.heads}, s.layouts[3]);
  return call;
}

// Head counts where the slope formula switches: 2^k − 1 (a second block one head short of full),
// 2^k (one block) and 2^k + 1 (a second block of one head), from 31 to 129 heads (the smaller ones
// come up often among 1–16 already).
rc::Gen<int64_t> heads_around_powers_of_two() {
  return rc::gen::apply([](int64_t k, int64_t side) { return (int64_t{1} << k) + side; },
                        gen::uniform(5, 7), rc::gen::element<int64_t>(-1, 0, 1));
}

// 1–129 heads, mostly few and often not a power of two, or around one; max_bias 8 (Press) or
// eighths. With `decode`, in 1 case in 12 a decode step over a long KV cache: one query at the end
// of up to 32768 cached keys, with 1–4 heads so that the case stays cheap.
rc::Gen<AlibiSpec> alibi_spec(int64_t max_tq, int64_t max_tk, bool decode = false) {
  return rc::gen::exec([=] {
    AlibiSpec s;
    const bool long_kv = decode && *rc::gen::weightedElement<bool>({{11, false}, {1, true}});
    s.heads = long_kv ? *gen::uniform(1, 4)
                      : *rc::gen::weightedOneOf<int64_t>({{3, gen::uniform(1, 16)},
                                                          {1, gen::uniform(1, 128)},
                                                          {2, heads_around_powers_of_two()}});
    s.max_bias = *rc::gen::weightedOneOf<double>(
        {{3, rc::gen::just(8.0)},
         {1, rc::gen::map(gen::uniform(1, 128), [](int64_t k) { return k / 8.0; })}});
    s.causal = *rc::gen::arbitrary<bool>();
    s.slopes = *rc::gen::arbitrary<bool>();
    if (long_kv) {
      std::tie(s.q, s.k) = *gen::cache_positions(1, *gen::decode_keys());
    } else {
      const int64_t tq = *gen::count(max_tq), tk = *gen::count(max_tk);
      std::tie(s.q, s.k) = *gen::query_key_positions(tq, tk);
    }
    s.layouts = *gen::layouts();
    s.dtype = *gen::float_dtype();
    return s;
  });
}

// Whether n is 2^k + side for some k ≥ 5 (a class the uniform head counts rarely reach alone).
bool around_power_of_two(int64_t n, int64_t side) {
  return n - side >= 32 && std::has_single_bit(static_cast<uint64_t>(n - side));
}

void classify_heads(int64_t heads) {
  RC_CLASSIFY(!std::has_single_bit(static_cast<uint64_t>(heads)), "heads not a power of two");
  RC_CLASSIFY(around_power_of_two(heads, -1), "heads 2^k - 1 (31, 63, 127)");
  RC_CLASSIFY(around_power_of_two(heads, 0), "heads 2^k (32, 64, 128)");
  RC_CLASSIFY(around_power_of_two(heads, 1), "heads 2^k + 1 (33, 65, 129)");
}

void classify(const AlibiSpec& s) {
  classify_dtype(s.dtype);
  RC_CLASSIFY(s.q.values.empty() || s.k.values.empty(), "empty");
  classify_heads(s.heads);
  RC_CLASSIFY(s.heads > 16, "many heads");
  RC_CLASSIFY(s.causal, "causal");
  RC_CLASSIFY(s.q.long_range() || s.k.long_range(), "long positions");
  RC_CLASSIFY(s.q.values.size() % 16 != 0 || s.k.values.size() % 16 != 0, "tail");
  RC_CLASSIFY(any_strided(s.layouts), "strided");
  classify_tokens(s.q, s.k);
}

// The slope of head h as alibi.h states it, computed here: 2^(−m(h+1)/c) in the first
// power-of-two block, 2^(−(m/2)(2(h−c)+1)/c) after it.
double stated_slope(int64_t h, int64_t heads, double max_bias) {
  const auto c = static_cast<double>(std::bit_floor(static_cast<uint64_t>(heads)));
  const double hh = static_cast<double>(h);
  return std::exp2(h < c ? -max_bias * (hh + 1) / c : -(max_bias / 2) * (2 * (hh - c) + 1) / c);
}

Problems<AlibiCall, AlibiSpec> alibi_problems() {
  using Call = AlibiCall;
  Problems<Call, AlibiSpec> problems{
      .any = alibi_spec(12, 24, /*decode=*/true),
      // Prefill-sized, or in 1 case in 3 a decode step over a long KV cache with 1–5 heads: a
      // kernel splitting the keys (not the rows) across threads meets its remainders there.
      .large = rc::gen::exec([] {
        AlibiSpec s = *alibi_spec(0, 0);
        if (*rc::gen::weightedElement<bool>({{2, false}, {1, true}})) {
          s.heads = *gen::uniform(1, 5);
          std::tie(s.q, s.k) = *gen::cache_positions(1, *gen::decode_keys());
        } else {
          s.heads = *gen::uniform(1, 16);
          std::tie(s.q, s.k) =
              *gen::query_key_positions(*gen::uniform(16, 128), *gen::uniform(64, 256));
        }
        return s;
      }),
      .build = [](const AlibiSpec& s, Arena& a) { return build(s, a); },
      .classify = classify,
      .minimum = dtype_shares({{"heads not a power of two", 0.3},
                               {"heads 2^k - 1 (31, 63, 127)", 0.04},
                               {"heads 2^k (32, 64, 128)", 0.04},
                               {"heads 2^k + 1 (33, 65, 129)", 0.04},
                               {"decode with long KV", 0.03},
                               {"many heads", 0.1},
                               {"causal", 0.3},
                               {"long positions", 0.2},
                               {"tail", 0.3},
                               {"strided", 0.2},
                               {"empty", 0.005}}),
  };
  ViewOf<Call> q = [](Call& c) { return &c.q_positions; };
  ViewOf<Call> k = [](Call& c) { return &c.k_positions; };
  ViewOf<Call> bias = [](Call& c) { return &c.bias; };
  ViewOf<Call> slopes = [](Call& c) { return c.slopes ? &*c.slopes : nullptr; };
  auto& m = problems.mutations;
  for (auto& x : view_mutations<Call>("q_positions", q, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("k_positions", k, false)) m.push_back(x);
  for (auto& x : view_mutations<Call>("bias", bias, true)) m.push_back(x);
  for (auto& x : view_mutations<Call>("slopes", slopes, true)) m.push_back(x);
  m.push_back(overlap_mutation<Call>("slopes", slopes, "bias", bias));
  m.push_back(position_mutation<Call>("q position 2^24 + 1", q,
                                      [](const Call&) { return kMaxPosition + 1; }));
  m.push_back(position_mutation<Call>("k position -1", k, [](const Call&) { return -1; }));
  m.push_back({"n_heads = 0", [](Call& c, Arena&) {
                 c.n_heads = 0;
                 return true;
               }});
  m.push_back({"bias heads differ", [](Call& c, Arena&) {
                 if (c.n_heads < 2) return false;
                 --c.n_heads;
                 if (c.slopes) --c.slopes->shape[0];
                 return true;
               }});
  for (double b : {0.0, -1.0, double{INFINITY}})
    m.push_back({fmt::format("max_bias = {}", b), [b](Call& c, Arena&) {
                   c.max_bias = b;
                   return true;
                 }});
  problems.classify_large = [](const AlibiSpec& s) { classify_tokens(s.q, s.k); };
  problems.large_minimum = {{"decode with long KV", 0.2},
                            {"decode with over 16384 keys", 0.05},
                            {"queries not a multiple of 2, 3 or 7", 0.1},
                            {"keys not a multiple of 2, 3 or 7", 0.1}};
  return problems;
}

Property<AlibiCall> geometric_slopes() {
  using Call = AlibiCall;
  return {.name = "alibi.geometric_slopes",
          .statement =
              "slopes are geometric with ratio 2^(−m/c) within each power-of-two "
              "block, the first block "
              "starting at 2^(−m/c) and the interleaved one at 2^(−m/2c)",
          .body =
              [](Case<Call>& c) {
                AlibiSpec s = *alibi_spec(1, 1);
                s.causal = false;
                s.q = {{1}, DType::i64, "one"};
                s.k = {{0}, DType::i64, "one"};  // distance 1: bias[h, 0, 0] = −slope_h
                classify_heads(s.heads);
                classify_dtype(s.dtype);
                const int64_t block =
                    static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(s.heads)));
                const double ratio = std::exp2(-s.max_bias / static_cast<double>(block));
                c.each([&](const Impl<Call>& impl) {
                  Arena arena;
                  const Call call = build(s, arena);
                  impl.run(call);
                  std::vector<double> slope(s.heads);
                  for (int64_t h = 0; h < s.heads; ++h)
                    slope[h] = -load(call.bias, call.bias.offset(h, 0, 0));
                  // Each slope is B = bound + ½ ulps from exact, ulps of the bias's dtype
                  // (1 + ½ in bf16 and f16, dtype_bound): s_{h+1} − r·s_h is off by at
                  // most B·ulp(s_{h+1}) + r·B·ulp(s_h) ≤ 2B·ulp(s_h) (r < 1, ulp
                  // non-decreasing in magnitude); a block's first against its exact start
                  // by B·ulp. (Slopes stay ≥ 2^−max_bias ≥ 2⁻¹⁶: no underflow to 0, even
                  // in f16.)
                  const DType dtype = s.dtype;
                  const double b = exact_bound(dtype_bound(dtype, impl.bound));
                  Comparison worst;
                  for (int64_t h = 0; h < s.heads; ++h) {
                    const bool starts = h == 0 || h == block;
                    const double expected =
                        starts ? (h == 0 ? ratio : std::sqrt(ratio)) : ratio * slope[h - 1];
                    merge_scalar(worst, expected, slope[h], starts ? b : 2 * b,
                                 ulp_of(dtype, slope[h - (starts ? 0 : 1)]), [&] {
                                   return fmt::format(
                                       "slope[{}] of {} heads ({})", h, s.heads,
                                       starts ? "block start" : "ratio to the previous");
                                 });
                  }
                  return Verdict::of(worst);
                });
              },
          .minimum = dtype_shares({{"heads not a power of two", 0.3},
                                   {"heads 2^k - 1 (31, 63, 127)", 0.04},
                                   {"heads 2^k (32, 64, 128)", 0.04},
                                   {"heads 2^k + 1 (33, 65, 129)", 0.04}})};
}

Property<AlibiCall> distance_only() {
  using Call = AlibiCall;
  return {.name = "alibi.distance_only",
          .statement = "the bias depends only on |q_pos − k_pos| (and the head)",
          .body =
              [](Case<Call>& c) {
                AlibiSpec s = *alibi_spec(12, 24);
                classify(s);
                c.each([&](const Impl<Call>& impl) {
                  Arena arena;
                  const Call call = build(s, arena);
                  impl.run(call);
                  // The first element seen at each (head, signed distance for causal, |distance|
                  // otherwise) is what every other one there must equal, bit for bit.
                  std::map<std::pair<int64_t, int64_t>, std::tuple<double, int64_t, int64_t>> seen;
                  for (int64_t h = 0; h < s.heads; ++h)
                    for (size_t i = 0; i < s.q.values.size(); ++i)
                      for (size_t j = 0; j < s.k.values.size(); ++j) {
                        const int64_t delta = s.q.values[i] - s.k.values[j];
                        const int64_t key = s.causal ? delta : std::abs(delta);
                        const double v = load(call.bias, call.bias.offset(h, i, j));
                        auto [it, fresh] =
                            seen.emplace(std::pair{h, key}, std::tuple{v, int64_t(i), int64_t(j)});
                        const double first = std::get<0>(it->second);
                        if (!fresh && std::memcmp(&first, &v, sizeof v) != 0)
                          return Verdict::fail(
                              fmt::format("bias[{}, {}, {}] = {} but bias[{}, {}, {}] = {}, at the "
                                          "same distance {}",
                                          h, i, j, v, h, std::get<1>(it->second),
                                          std::get<2>(it->second), first, key));
                      }
                  return Verdict::pass();
                });
              },
          .minimum = dtype_shares({{"causal", 0.3}, {"long positions", 0.2}})};
}

Property<AlibiCall> zero_diagonal() {
  using Call = AlibiCall;
  return {
      "alibi.zero_diagonal", "where q_pos = k_pos the bias is +0, causal or not",
      [](Case<Call>& c) {
        AlibiSpec s = *alibi_spec(12, 24);
        // Queries at key positions: every query has its diagonal.
        if (!s.k.values.empty())
          for (size_t i = 0; i < s.q.values.size(); ++i)
            s.q.values[i] = s.k.values[i % s.k.values.size()];
        c.each([&](const Impl<Call>& impl) {
          Arena arena;
          const Call call = build(s, arena);
          impl.run(call);
          for (int64_t h = 0; h < s.heads; ++h)
            for (size_t i = 0; i < s.q.values.size(); ++i)
              for (size_t j = 0; j < s.k.values.size(); ++j) {
                if (s.q.values[i] != s.k.values[j]) continue;
                const double v = load(call.bias, call.bias.offset(h, i, j));
                if (v != 0 || std::signbit(v))
                  return Verdict::fail(fmt::format("bias[{}, {}, {}] = {} at equal positions {}", h,
                                                   i, j, v, s.q.values[i]));
              }
          return Verdict::pass();
        });
      }};
}

Property<AlibiCall> press_softmax() {
  using Call = AlibiCall;
  return {.name = "alibi.press_softmax",
          .statement =
              "causal: softmax of each bias row equals softmax of Press's slope·k_pos over "
              "visible keys",
          .body =
              [](Case<Call>& c) {
                AlibiSpec s = *alibi_spec(8, 24);
                s.causal = true;
                RC_CLASSIFY(s.q.long_range() || s.k.long_range(), "long positions");
                classify_dtype(s.dtype);
                c.each([&](const Impl<Call>& impl) {
                  Arena arena;
                  const Call call = build(s, arena);
                  impl.run(call);
                  Comparison worst;
                  const int64_t tk = static_cast<int64_t>(s.k.values.size());
                  const double units = exact_bound(dtype_bound(s.dtype, impl.bound));
                  std::vector<double> got(tk), press(tk);
                  for (int64_t h = 0; h < s.heads; ++h) {
                    const double slope = stated_slope(h, s.heads, s.max_bias);
                    for (size_t i = 0; i < s.q.values.size(); ++i) {
                      // Softmax over the row in fp64, each row shifted by its maximum.
                      double top_got = -INFINITY, top_press = -INFINITY, max_error = 0;
                      for (int64_t j = 0; j < tk; ++j) {
                        got[j] = load(call.bias, call.bias.offset(h, i, j));
                        // The element's exact value, −slope·(q_pos − k_pos). Past the bias dtype's
                        // range (f16 beyond 65504) it is stored as −∞, a weight of 0: Press's form
                        // as the dtype holds it is −∞ there too.
                        const double exact =
                            -slope * static_cast<double>(s.q.values[i] - s.k.values[j]);
                        const bool visible = s.k.values[j] <= s.q.values[i] &&
                                             rounded_to(s.dtype, exact) != -INFINITY;
                        press[j] = visible ? slope * static_cast<double>(s.k.values[j]) : -INFINITY;
                        top_got = std::fmax(top_got, got[j]);
                        top_press = std::fmax(top_press, press[j]);
                        // Its error, B = bound + ½ units of the bias dtype at the exact value.
                        if (visible)
                          max_error = std::fmax(max_error, units * ulp_of(s.dtype, exact));
                      }
                      if (top_press == -INFINITY) continue;  // no visible key
                      double sum_got = 0, sum_press = 0;
                      for (int64_t j = 0; j < tk; ++j) {
                        sum_got += std::exp(got[j] - top_got);
                        sum_press += std::exp(press[j] - top_press);
                      }
                      // Entries off by ≤ E each move p_j = e^{b_j}/Σ to within a factor e^{±2E}:
                      // |Δp_j| ≤ p_j·(e^{2E} − 1), and never more than 1, plus fp64 noise. Reported
                      // as a fraction of that. (bf16 entries at long distances are off by
                      // thousands: E is then so large that the bound says nothing, but it stays a
                      // bound.)
                      const double growth = std::expm1(2 * max_error);
                      for (int64_t j = 0; j < tk; ++j) {
                        const double pg = std::exp(got[j] - top_got) / sum_got;
                        const double pp = std::exp(press[j] - top_press) / sum_press;
                        const double allowed =
                            (std::isinf(growth) ? 1.0 : std::fmin(1.0, pp * growth)) + 0x1p-50;
                        merge_scalar(worst, pp, pg, 1, allowed, [&] {
                          return fmt::format("softmax(bias[{}, {}, :])[{}]", h, i, j);
                        });
                      }
                    }
                  }
                  return Verdict::of(worst);
                });
              },
          .needs = variant::alibi_causal,
          .minimum = dtype_shares({{"long positions", 0.2}})};
}

std::vector<Property<AlibiCall>> alibi_properties() {
  auto props = generic_properties<AlibiCall>("alibi", alibi_problems());
  for (auto property : {geometric_slopes(), distance_only(), zero_diagonal(), press_softmax()})
    props.push_back(std::move(property));
  return props;
}

}  // namespace

template <>
std::vector<Problem<AlibiCall>> smoke_problems<AlibiCall>() {
  using L = Layout;
  using P = PositionPattern;
  const DType i64 = DType::i64, i32 = DType::i32;
  return {
      alibi_problem({1, 5, 5, false, false, 8, P::cache, i64, L::contiguous}, 1),
      alibi_problem({3, 4, 9, true, true, 8, P::cache, i64, L::padded}, 2),
      alibi_problem({8, 2, 33, true, true, 8, P::shifted, i32, L::contiguous}, 3),
      alibi_problem({12, 6, 6, true, true, 8, P::duplicates, i64, L::permuted}, 4),
      alibi_problem({80, 3, 7, false, true, 8, P::wide, i64, L::padded}, 5),
      alibi_problem({6, 4, 4, false, true, 16, P::duplicates, i32, L::permuted}, 6),
      alibi_problem({64, 1, 17, true, false, 0.5, P::cache, i64, L::contiguous}, 7),
  };
}

template <>
std::vector<Property<AlibiCall>> properties<AlibiCall>() {
  return alibi_properties();
}

}  // namespace posenc::harness
