// sinusoidal: outputs, tolerance model, problems and properties.
#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "properties/generic.h"

namespace posenc::harness {

Comparison compare(const SinusoidalCall& expected, const SinusoidalCall& got, const Bound& bound) {
  // Unit: ulp(1 + |x|) in out's dtype, see sinusoidal.h and kernel.h.
  return harness::compare(
      "out", expected.out, got.out, dtype_bound(got.out.dtype, bound), [&](const int64_t* ix) {
        const double x =
            expected.x ? std::fabs(load(*expected.x, expected.x->offset(ix[0], ix[1]))) : 0;
        return ulp_of(got.out.dtype, 1 + x);
      });
}

namespace {

// One sinusoidal problem. Layout slots: out, x, positions.
struct SinusoidalSpec {
  int64_t tokens = 0, d = 2;
  double base = 10000;
  bool add = false, in_place = false, with_positions = false;
  Positions positions;
  Fill x;
  Layouts layouts = uniform_layouts(Layout::contiguous);
  DType dtype = DType::f32;  // out and x
};

std::string describe(const SinusoidalSpec& s) {
  std::string str =
      fmt::format("{} tokens={} d={} base={}", dtype_name(s.dtype), s.tokens, s.d, s.base);
  if (s.add) str += fmt::format(" add{} x=({})", s.in_place ? " in place" : "", s.x.describe());
  if (s.with_positions) str += " positions=" + s.positions.describe();
  if (any_strided(s.layouts))
    str += fmt::format(" layouts out:{} x:{} positions:{}", layout_name(s.layouts[0]),
                       layout_name(s.layouts[1]), layout_name(s.layouts[2]));
  return str;
}

void showValue(const SinusoidalSpec& s, std::ostream& os) { os << describe(s); }

SinusoidalCall build(const SinusoidalSpec& s, Arena& arena) {
  SinusoidalCall call;
  call.base = s.base;
  call.out = arena.alloc(s.dtype, {s.tokens, s.d}, s.layouts[0]);
  if (s.add) {
    call.x = s.in_place ? call.out : arena.alloc(s.dtype, {s.tokens, s.d}, s.layouts[1]);
    s.x.apply(*call.x);
  }
  if (s.with_positions) {
    call.positions = arena.alloc(s.positions.dtype, {s.tokens}, s.layouts[2]);
    s.positions.store(*call.positions);
  }
  return call;
}

// ω_i = base^(−2i/d), computed here in fp64 independently of any kernel.
double omega(double base, int64_t i, int64_t d) {
  return std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
}

rc::Gen<double> base() {
  return rc::gen::weightedOneOf<double>({
      {3, rc::gen::just(10000.0)},
      {1, rc::gen::element(500000.0, 1e6, 100.0)},
      {1, rc::gen::map(gen::uniform(11, 10000000), [](int64_t b) { return b / 10.0; })},
  });
}

rc::Gen<SinusoidalSpec> any_spec(int64_t max_tokens, int64_t max_half_dim) {
  return rc::gen::exec([=] {
    // x and positions only for implementations that declare them (declared()).
    const Declared& declared_now = declared();
    SinusoidalSpec s;
    s.tokens = *gen::count(max_tokens);
    s.d = 2 * *gen::sized(1, max_half_dim);
    s.base = *base();
    s.add = declared_now.has(variant::sinusoidal_add) && *rc::gen::arbitrary<bool>();
    s.in_place = s.add && declared_now.has(variant::in_place) &&
                 *rc::gen::weightedElement<bool>({{2, false}, {1, true}});
    s.with_positions = declared_now.has(variant::sinusoidal_positions) &&
                       *rc::gen::weightedElement<bool>({{1, false}, {3, true}});
    if (s.with_positions) s.positions = *gen::positions(s.tokens, kMaxPosition);
    if (s.add) s.x = *gen::fill();
    s.layouts = *gen::layouts();
    s.dtype = *gen::float_dtype();
    return s;
  });
}

// Table rows PE[p] at generated positions (no x): what the math properties read.
rc::Gen<SinusoidalSpec> rows_spec(int64_t max_tokens) {
  return rc::gen::exec([=] {
    SinusoidalSpec s;
    s.tokens = *gen::sized(1, max_tokens);
    s.d = 2 * *gen::sized(1, 80);
    s.base = *base();
    s.with_positions = true;
    s.positions = *gen::positions(s.tokens, kMaxPosition);
    s.dtype = *gen::float_dtype();
    return s;
  });
}

// Pairs of rows (p, p + m), one offset m for all: rows 2k and 2k + 1.
struct ShiftSpec {
  int64_t m = 0;
  SinusoidalSpec rows;
};

void showValue(const ShiftSpec& s, std::ostream& os) {
  os << "m=" << s.m << " " << describe(s.rows);
}

rc::Gen<ShiftSpec> shift_spec() {
  return rc::gen::exec([] {
    ShiftSpec s;
    s.m = *rc::gen::weightedOneOf<int64_t>(
        {{2, gen::uniform(0, 64)}, {1, gen::uniform(0, kMaxPosition / 2)}});
    s.rows = *rows_spec(8);
    if (s.rows.tokens % 2) {
      ++s.rows.tokens;
      s.rows.positions.values.push_back(0);
    }
    for (int64_t k = 0; k < s.rows.tokens / 2; ++k) {
      const int64_t p = std::min(s.rows.positions.values[2 * k], kMaxPosition - s.m);
      s.rows.positions.values[2 * k] = p;
      s.rows.positions.values[2 * k + 1] = p + s.m;
    }
    return s;
  });
}

// The table itself (no x, no positions), at least one row.
rc::Gen<SinusoidalSpec> table_spec() {
  return rc::gen::exec([] {
    SinusoidalSpec s;
    s.tokens = *gen::sized(1, 16);
    s.d = 2 * *gen::sized(1, 80);
    s.base = *base();
    s.layouts = *gen::layouts();
    s.dtype = *gen::float_dtype();
    return s;
  });
}

void classify(const SinusoidalSpec& s) {
  classify_dtype(s.dtype);
  RC_CLASSIFY(s.tokens == 0, "empty");
  RC_CLASSIFY(s.d % 16 != 0, "tail");
  RC_CLASSIFY(s.with_positions && s.positions.long_range(), "long positions");
  RC_CLASSIFY(s.add && s.x.has_specials(), "specials");
  RC_CLASSIFY(s.add && s.x.spread(), "spread magnitudes");
  RC_CLASSIFY(any_strided(s.layouts), "strided");
  RC_CLASSIFY(s.in_place, "in place");
  RC_CLASSIFY(s.with_positions && s.positions.dtype == DType::i32, "i32 positions");
}

// Runs impl on the rows problem and returns row t of its table.
std::vector<double> row(const SinusoidalCall& call, int64_t t) {
  std::vector<double> r(call.out.shape[1]);
  for (int64_t c = 0; c < call.out.shape[1]; ++c) r[c] = load(call.out, call.out.offset(t, c));
  return r;
}

// One unit of element error: ulp(1) in out's dtype (no x; 2⁻²³ in f32, 2⁻⁷ in bf16, 2⁻¹⁰ in f16).
// An element of a kernel within `bound` units of the reference is E = (bound + ½) units from the
// exact value (dtype_bound: 1 unit in bf16 and f16). Per pair, sin and cos errors of E each move
// s² + c², or s₁s₂ + c₁c₂, by at most 2√2·E + 2E² (|s|, |c| ≤ 1); the fp64 cos(m·ω) it is checked
// against is off by ≤ 1.5·2⁻²⁸ (its angle, ω ≤ 1, m ≤ 2²⁴), far below any dtype's unit but counted.
double element_unit(DType dtype) { return ulp_of(dtype, 1); }
double pair_product_allowed(double bound, int64_t d, DType dtype) {
  const double e = exact_bound(dtype_bound(dtype, bound)) * element_unit(dtype);
  return static_cast<double>(d / 2) * (2 * std::numbers::sqrt2 * e + 2 * e * e + 1.5 * 0x1p-28);
}
double pair_product_unit(int64_t d, DType dtype) {
  return static_cast<double>(d / 2) * 2 * std::numbers::sqrt2 * element_unit(dtype);
}

Problems<SinusoidalCall, SinusoidalSpec> sinusoidal_problems() {
  using Call = SinusoidalCall;
  Problems<Call, SinusoidalSpec> problems{
      .any = any_spec(48, 80),
      .large = rc::gen::exec([] {
        SinusoidalSpec s = *any_spec(1, 1);
        s.tokens = *gen::uniform(128, 1024);
        s.d = 2 * *gen::uniform(16, 64);
        if (s.with_positions) s.positions = *gen::positions(s.tokens, kMaxPosition);
        return s;
      }),
      .build = build,
      .classify = classify,
      .minimum = dtype_shares({{"long positions", 0.15, variant::sinusoidal_positions},
                               {"tail", 0.3},
                               {"specials", 0.05, variant::sinusoidal_add},
                               {"strided", 0.2},
                               {"empty", 0.005},
                               {"in place", 0.05, variant::sinusoidal_add}}),
  };
  ViewOf<Call> out = [](Call& c) { return &c.out; };
  ViewOf<Call> x = [](Call& c) { return c.x ? &*c.x : nullptr; };
  ViewOf<Call> positions = [](Call& c) { return c.positions ? &*c.positions : nullptr; };
  for (auto& m : view_mutations<Call>("out", out, true)) problems.mutations.push_back(m);
  for (auto& m : view_mutations<Call>("x", x, false)) problems.mutations.push_back(m);
  for (auto& m : view_mutations<Call>("positions", positions, false))
    problems.mutations.push_back(m);
  problems.mutations.push_back(overlap_mutation<Call>("out", out, "x", x));
  problems.mutations.push_back(position_mutation<Call>(
      "position 2^24 + 1", positions, [](const Call&) { return kMaxPosition + 1; }));
  problems.mutations.push_back(
      position_mutation<Call>("position -1", positions, [](const Call&) { return -1; }));
  problems.mutations.push_back({"odd d", [](Call& c, Arena&) {
                                  --c.out.shape[1];
                                  if (c.x && !same_view(*c.x, c.out)) --c.x->shape[1];
                                  return true;
                                }});
  for (double b : {0.0, -1.0, std::nan(""), double{INFINITY}})
    problems.mutations.push_back({fmt::format("base = {}", b), [b](Call& c, Arena&) {
                                    c.base = b;
                                    return true;
                                  }});
  problems.mutations.push_back({"x rows differ from out", [](Call& c, Arena&) {
                                  if (!c.x || same_view(*c.x, c.out) || c.x->shape[0] == 0)
                                    return false;
                                  --c.x->shape[0];
                                  return true;
                                }});

  return problems;
}

Property<SinusoidalCall> pe0() {
  using Call = SinusoidalCall;
  return {.name = "sinusoidal.pe0",
          .statement = "PE[0] = [0, 1, 0, 1, …]",
          .body =
              [](Case<Call>& c) {
                const SinusoidalSpec s = *table_spec();
                classify_dtype(s.dtype);
                Arena probe;
                const Call shape = build(s, probe);
                c.each(shape, [&](const Impl<Call>& impl) {
                  Arena arena, expected_arena;
                  const Call call = build(s, arena);
                  impl.run(call);
                  const Tensor first = view(call.out.data, s.dtype, {1, s.d},
                                            {call.out.strides[0], call.out.strides[1]});
                  const Tensor pe0 = expected_arena.alloc(DType::f64, {1, s.d});
                  for (int64_t k = 0; k < s.d; ++k) store(pe0, k, k % 2 ? 1.0 : 0.0);
                  return Verdict::of(
                      harness::compare("PE[0]", pe0, first, dtype_bound(s.dtype, impl.bound),
                                       [&](const int64_t*) { return element_unit(s.dtype); }));
                });
              },
          .minimum = dtype_shares()};
}

Property<SinusoidalCall> range() {
  using Call = SinusoidalCall;
  return {.name = "sinusoidal.range",
          .statement = "every entry of PE lies in [−1, 1]",
          .body =
              [](Case<Call>& c) {
                const SinusoidalSpec s = *rows_spec(32);
                RC_CLASSIFY(s.positions.long_range(), "long positions");
                classify_dtype(s.dtype);
                c.each([&](const Impl<Call>& impl) {
                  Arena arena;
                  const Call call = build(s, arena);
                  impl.run(call);
                  // Exact entries lie in [−1, 1]; the kernel may be `bound` units from
                  // them.
                  Comparison worst;
                  for (int64_t t = 0; t < s.tokens; ++t)
                    for (int64_t k = 0; k < s.d; ++k) {
                      const double v = load(call.out, call.out.offset(t, k));
                      const double excess =
                          std::isnan(v) ? INFINITY : std::fmax(std::fabs(v) - 1, 0.0);
                      merge_scalar(worst, 0.0, excess, dtype_bound(s.dtype, impl.bound),
                                   element_unit(s.dtype), [&] {
                                     return fmt::format("excess over 1 of |PE[{}][{}]| = {}",
                                                        s.positions.values[t], k, v);
                                   });
                    }
                  return Verdict::of(worst);
                });
              },
          .needs = variant::sinusoidal_positions,
          .minimum = dtype_shares({{"long positions", 0.2}})};
}

Property<SinusoidalCall> norm() {
  using Call = SinusoidalCall;
  return {.name = "sinusoidal.norm",
          .statement = "‖PE[p]‖² = d/2",
          .body =
              [](Case<Call>& c) {
                const SinusoidalSpec s = *rows_spec(32);
                RC_CLASSIFY(s.positions.long_range(), "long positions");
                classify_dtype(s.dtype);
                c.each([&](const Impl<Call>& impl) {
                  Arena arena;
                  const Call call = build(s, arena);
                  impl.run(call);
                  Comparison worst;
                  for (int64_t t = 0; t < s.tokens; ++t) {
                    double norm2 = 0;
                    for (double v : row(call, t)) norm2 += v * v;
                    merge_scalar(worst, s.d / 2.0, norm2,
                                 pair_product_allowed(impl.bound, s.d, s.dtype) /
                                     pair_product_unit(s.d, s.dtype),
                                 pair_product_unit(s.d, s.dtype),
                                 [&] { return fmt::format("‖PE[{}]‖²", s.positions.values[t]); });
                  }
                  return Verdict::of(worst);
                });
              },
          .needs = variant::sinusoidal_positions,
          .minimum = dtype_shares({{"long positions", 0.2}})};
}

Property<SinusoidalCall> offset_dot() {
  using Call = SinusoidalCall;
  return {.name = "sinusoidal.offset_dot",
          .statement = "PE[p]·PE[p+m] = Σ_i cos(m·ω_i), whatever p",
          .body =
              [](Case<Call>& c) {
                const ShiftSpec shift = *shift_spec();
                const SinusoidalSpec& s = shift.rows;
                const int64_t m = shift.m, pairs = s.tokens / 2;
                RC_CLASSIFY(s.positions.long_range(), "long positions");
                RC_CLASSIFY(m > 4096, "long offset");
                classify_dtype(s.dtype);
                double expected = 0;
                for (int64_t i = 0; i < s.d / 2; ++i)
                  expected += std::cos(static_cast<double>(m) * omega(s.base, i, s.d));
                c.each([&](const Impl<Call>& impl) {
                  Arena arena;
                  const Call call = build(s, arena);
                  impl.run(call);
                  Comparison worst;
                  for (int64_t k = 0; k < pairs; ++k) {
                    const auto a = row(call, 2 * k), b = row(call, 2 * k + 1);
                    double dot = 0;
                    for (int64_t j = 0; j < s.d; ++j) dot += a[j] * b[j];
                    merge_scalar(worst, expected, dot,
                                 pair_product_allowed(impl.bound, s.d, s.dtype) /
                                     pair_product_unit(s.d, s.dtype),
                                 pair_product_unit(s.d, s.dtype), [&] {
                                   return fmt::format("PE[{}]·PE[{}]", s.positions.values[2 * k],
                                                      s.positions.values[2 * k + 1]);
                                 });
                  }
                  return Verdict::of(worst);
                });
              },
          .needs = variant::sinusoidal_positions,
          .minimum = dtype_shares({{"long positions", 0.2}, {"long offset", 0.15}})};
}

Property<SinusoidalCall> rotation() {
  using Call = SinusoidalCall;
  return {
      .name = "sinusoidal.rotation",
      .statement = "PE[p+m] = R(m)·PE[p], R(m) rotating pair i by m·ω_i",
      .body =
          [](Case<Call>& c) {
            const ShiftSpec shift = *shift_spec();
            const SinusoidalSpec& s = shift.rows;
            const int64_t m = shift.m, pairs = s.tokens / 2;
            RC_CLASSIFY(s.positions.long_range(), "long positions");
            RC_CLASSIFY(m > 4096, "long offset");
            classify_dtype(s.dtype);
            c.each([&](const Impl<Call>& impl) {
              Arena arena, expected_arena;
              const Call call = build(s, arena);
              impl.run(call);
              // Expected PE[p+m] rotated from the kernel's own PE[p], in fp64.
              const Tensor expected = expected_arena.alloc(DType::f64, {pairs, s.d});
              const Tensor got = expected_arena.alloc(DType::f64, {pairs, s.d});
              for (int64_t k = 0; k < pairs; ++k) {
                const auto a = row(call, 2 * k), b = row(call, 2 * k + 1);
                for (int64_t i = 0; i < s.d / 2; ++i) {
                  const double angle = static_cast<double>(m) * omega(s.base, i, s.d);
                  const double cm = std::cos(angle), sm = std::sin(angle);
                  store(expected, expected.offset(k, 2 * i), a[2 * i] * cm + a[2 * i + 1] * sm);
                  store(expected, expected.offset(k, 2 * i + 1), a[2 * i + 1] * cm - a[2 * i] * sm);
                  store(got, got.offset(k, 2 * i), b[2 * i]);
                  store(got, got.offset(k, 2 * i + 1), b[2 * i + 1]);
                }
              }
              // In units of ulp(1) in out's dtype: PE[p+m] is E = bound + ½ off,
              // PE[p]'s errors rotate into at most √2·E, and the fp64 angle m·ω here
              // is off by ≤ 1.5·m·ω·2⁻⁵² ≤ 1.5·2⁻²⁸ rad (ω from pow within an ulp, ω ≤
              // 1), which moves R(m)·PE[p] by ≤ √2·1.5·2⁻²⁸ < ⅛ of f32's unit 2⁻²³
              // (less still of bf16's or f16's).
              const double bound =
                  (1 + std::numbers::sqrt2) * exact_bound(dtype_bound(s.dtype, impl.bound)) +
                  1.0 / 8;
              return Verdict::of(
                  harness::compare("PE[p+m] vs R(m)·PE[p] [pair, element]", expected, got, bound,
                                   [&](const int64_t*) { return element_unit(s.dtype); }));
            });
          },
      .needs = variant::sinusoidal_positions,
      .minimum = dtype_shares({{"long positions", 0.2}, {"long offset", 0.15}})};
}

std::vector<Property<SinusoidalCall>> sinusoidal_properties() {
  auto props = generic_properties<SinusoidalCall>("sinusoidal", sinusoidal_problems());
  for (auto property : {pe0(), range(), norm(), offset_dot(), rotation()})
    props.push_back(std::move(property));
  return props;
}

Problem<SinusoidalCall> sinusoidal_problem(int64_t tokens, int64_t d, bool add, int64_t max_pos,
                                           Layout layout, uint64_t seed) {
  return {fmt::format("tokens={} d={} {} {}", tokens, d,
                      add ? fmt::format("add positions<={}", max_pos) : std::string("table"),
                      layout_name(layout)),
          [=](Arena& arena) {
            Values values(seed);
            SinusoidalCall call;
            call.out = arena.alloc(DType::f32, {tokens, d}, layout);
            if (add) {
              call.x = arena.alloc(DType::f32, {tokens, d}, layout);
              values.fill(*call.x);
              call.positions = arena.alloc(DType::i64, {tokens}, layout);
              values.fill_index(*call.positions, 0, max_pos);
            }
            return call;
          }};
}

}  // namespace

template <>
std::vector<Property<SinusoidalCall>> properties<SinusoidalCall>() {
  return sinusoidal_properties();
}

template <>
std::vector<Problem<SinusoidalCall>> smoke_problems<SinusoidalCall>() {
  return {
      sinusoidal_problem(64, 32, false, 0, Layout::contiguous, 1),
      sinusoidal_problem(7, 6, true, 100, Layout::padded, 2),
      sinusoidal_problem(16, 128, true, kMaxPosition, Layout::contiguous, 3),
      sinusoidal_problem(5, 10, true, 1 << 20, Layout::permuted, 4),
  };
}

}  // namespace posenc::harness
