// absolute: outputs, tolerance model, problems and properties.
#include <fmt/format.h>

#include <cmath>

#include "properties/generic.h"

namespace posenc::harness {

Comparison compare(const AbsoluteCall& expected, const AbsoluteCall& got, const Bound& bound) {
  // Unit: ulp of the sum in out's dtype (absolute.h, kernel.h).
  return harness::compare(
      "out", expected.out, got.out, dtype_bound(got.out.dtype, bound), [&](const int64_t* ix) {
        return ulp_of(got.out.dtype, load(expected.out, expected.out.offset(ix[0], ix[1])));
      });
}

namespace {

// One absolute problem. Layout slots: x, table, positions, out.
struct AbsoluteSpec {
  int64_t tokens = 0, rows = 1, dim = 1;
  bool in_place = false;
  Positions positions;
  Fill x, table;
  Layouts layouts = uniform_layouts(Layout::contiguous);
  DType dtype = DType::f32;        // x and out
  DType table_dtype = DType::f32;  // any of the three (absolute.h)
};

std::string describe(const AbsoluteSpec& s) {
  std::string str = fmt::format(
      "{} (table {}) tokens={} rows={} dim={}{} positions={} x=({}) table=({})",
      dtype_name(s.dtype), dtype_name(s.table_dtype), s.tokens, s.rows, s.dim,
      s.in_place ? " in place" : "", s.positions.describe(), s.x.describe(), s.table.describe());
  if (any_strided(s.layouts))
    str += fmt::format(" layouts x:{} table:{} positions:{} out:{}", layout_name(s.layouts[0]),
                       layout_name(s.layouts[1]), layout_name(s.layouts[2]),
                       layout_name(s.layouts[3]));
  return str;
}

void showValue(const AbsoluteSpec& s, std::ostream& os) { os << describe(s); }

AbsoluteCall build(const AbsoluteSpec& s, Arena& arena) {
  AbsoluteCall call;
  call.x = arena.alloc(s.dtype, {s.tokens, s.dim}, s.layouts[0]);
  call.table = arena.alloc(s.table_dtype, {s.rows, s.dim}, s.layouts[1]);
  call.positions = arena.alloc(s.positions.dtype, {s.tokens}, s.layouts[2]);
  call.out = s.in_place ? call.x : arena.alloc(s.dtype, {s.tokens, s.dim}, s.layouts[3]);
  s.x.apply(call.x);
  s.table.apply(call.table);
  s.positions.store(call.positions);
  return call;
}

rc::Gen<AbsoluteSpec> any_spec(bool specials, int64_t min_tokens, int64_t max_tokens) {
  return rc::gen::exec([=] {
    AbsoluteSpec s;
    s.tokens = min_tokens > 0 ? *gen::sized(min_tokens, max_tokens) : *gen::count(max_tokens);
    s.rows = *rc::gen::weightedOneOf<int64_t>({{3, gen::sized(1, 64)}, {1, gen::sized(1, 2048)}});
    s.dim = *gen::sized(1, 100);
    s.in_place = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
    s.positions = *gen::positions(s.tokens, s.rows - 1);
    s.x = specials ? *gen::fill() : *gen::finite_fill();
    s.table = specials ? *gen::fill() : *gen::finite_fill();
    s.layouts = *gen::layouts();
    // The table mostly in the activations' dtype, else in any (an f32 table under bf16 x, …).
    s.dtype = *gen::float_dtype();
    s.table_dtype =
        *rc::gen::weightedOneOf<DType>({{2, rc::gen::just(s.dtype)}, {1, gen::float_dtype()}});
    return s;
  });
}

void classify(const AbsoluteSpec& s) {
  classify_dtype(s.dtype);
  RC_CLASSIFY(s.table_dtype != s.dtype, "mixed dtypes");
  RC_CLASSIFY(s.tokens == 0, "empty");
  RC_CLASSIFY(s.dim % 16 != 0, "tail");
  RC_CLASSIFY(s.tokens > 0 && s.positions.max() == s.rows - 1, "last row");
  RC_CLASSIFY(s.x.has_specials() || s.table.has_specials(), "specials");
  RC_CLASSIFY(any_strided(s.layouts), "strided");
  RC_CLASSIFY(s.in_place, "in place");
  RC_CLASSIFY(s.positions.dtype == DType::i32, "i32 positions");
}

// B copies of one sequence, packed into tokens: what a batch of identical prompts looks like.
struct BroadcastSpec {
  int64_t batches = 2;
  AbsoluteSpec sequence;
};

void showValue(const BroadcastSpec& s, std::ostream& os) {
  os << "batches=" << s.batches << " of " << describe(s.sequence);
}

// Copies row t of a [tokens, ...] view into rows t + k·tokens of `dst` for every batch k.
void repeat_rows(const Tensor& src, const Tensor& dst, int64_t batches) {
  const int64_t tokens = src.shape[0], dim = src.rank > 1 ? src.shape[1] : 1;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t c = 0; c < dim; ++c) {
        const int64_t from = src.rank > 1 ? src.offset(t, c) : src.offset(t);
        const int64_t to =
            dst.rank > 1 ? dst.offset(b * tokens + t, c) : dst.offset(b * tokens + t);
        if (is_float(src.dtype))
          store(dst, to, load(src, from));
        else if (dst.dtype == DType::i64)
          dst.as<int64_t>()[to] = load_index(src, from);
        else
          dst.as<int32_t>()[to] = static_cast<int32_t>(load_index(src, from));
      }
}

AbsoluteCall build(const BroadcastSpec& s, Arena& arena) {
  AbsoluteSpec packed = s.sequence;
  packed.tokens = s.sequence.tokens * s.batches;
  packed.positions.values.assign(packed.tokens, 0);
  AbsoluteCall call = build(packed, arena);
  Arena scratch;
  const AbsoluteCall one = build(s.sequence, scratch);
  repeat_rows(one.x, call.x, s.batches);
  repeat_rows(one.positions, call.positions, s.batches);
  return call;
}

// Two tokens with the same x at positions p1 ≠ p2, whose table rows are equal when `same_rows`.
struct TwoPositionsSpec {
  int64_t p1 = 0, p2 = 1;
  bool same_rows = false;
  AbsoluteSpec base;  // two tokens
};

void showValue(const TwoPositionsSpec& s, std::ostream& os) {
  os << fmt::format("p1={} p2={} {} ", s.p1, s.p2, s.same_rows ? "equal rows" : "rows differ")
     << describe(s.base);
}

AbsoluteCall build(const TwoPositionsSpec& s, Arena& arena) {
  AbsoluteSpec two = s.base;
  two.positions.values = {s.p1, s.p2};
  AbsoluteCall call = build(two, arena);
  for (int64_t c = 0; c < s.base.dim; ++c) {
    store(call.x, call.x.offset(1, c), load(call.x, call.x.offset(0, c)));
    if (s.same_rows)
      store(call.table, call.table.offset(s.p2, c), load(call.table, call.table.offset(s.p1, c)));
  }
  return call;
}

Problems<AbsoluteCall, AbsoluteSpec> absolute_problems() {
  using Call = AbsoluteCall;
  Problems<Call, AbsoluteSpec> problems{
      .any = any_spec(true, 0, 48),
      .large = rc::gen::exec([] {
        AbsoluteSpec s = *any_spec(true, 0, 0);
        s.tokens = *gen::uniform(64, 512);
        s.dim = *gen::uniform(32, 128);
        s.positions = *gen::positions(s.tokens, s.rows - 1);
        return s;
      }),
      .build = [](const AbsoluteSpec& s, Arena& a) { return build(s, a); },
      .classify = classify,
      .minimum = dtype_shares({{"tail", 0.3},
                               {"last row", 0.1},
                               {"specials", 0.05},
                               {"strided", 0.2},
                               {"empty", 0.005},
                               {"in place", 0.1},
                               {"mixed dtypes", 0.1, 0, variant::bf16 | variant::f16}}),
  };
  ViewOf<Call> x = [](Call& c) { return &c.x; };
  ViewOf<Call> table = [](Call& c) { return &c.table; };
  ViewOf<Call> positions = [](Call& c) { return &c.positions; };
  ViewOf<Call> out = [](Call& c) { return &c.out; };
  for (auto& m : view_mutations<Call>("x", x, false)) problems.mutations.push_back(m);
  for (auto& m : view_mutations<Call>("table", table, false)) problems.mutations.push_back(m);
  for (auto& m : view_mutations<Call>("positions", positions, false))
    problems.mutations.push_back(m);
  for (auto& m : view_mutations<Call>("out", out, true)) problems.mutations.push_back(m);
  problems.mutations.push_back(overlap_mutation<Call>("out", out, "x", x));
  problems.mutations.push_back(overlap_mutation<Call>("out", out, "table", table));
  problems.mutations.push_back(position_mutation<Call>(
      "position = rows", positions, [](const Call& c) { return c.table.shape[0]; }));
  problems.mutations.push_back(
      position_mutation<Call>("position -1", positions, [](const Call&) { return -1; }));
  problems.mutations.push_back({"table dim differs", [](Call& c, Arena&) {
                                  if (c.table.shape[1] < 2) return false;
                                  --c.table.shape[1];
                                  return true;
                                }});
  problems.mutations.push_back({"positions shorter than tokens", [](Call& c, Arena&) {
                                  if (c.positions.shape[0] == 0) return false;
                                  --c.positions.shape[0];
                                  return true;
                                }});

  return problems;
}

Property<AbsoluteCall> batch_broadcast() {
  using Call = AbsoluteCall;
  return {"absolute.batch_broadcast",
          "a batch of identical sequences packed into tokens gives identical rows in every batch",
          [](Case<Call>& c) {
            const BroadcastSpec s = *rc::gen::exec([] {
              BroadcastSpec b;
              b.batches = *gen::sized(2, 4);
              b.sequence = *any_spec(true, 1, 16);
              return b;
            });
            Arena probe;
            const Call shape = build(s, probe);
            c.each(shape, [&](const Impl<Call>& impl) {
              Arena arena, expected_arena;
              const Call call = build(s, arena);
              impl.run(call);
              // Batch 0's rows, repeated, are what every batch must hold bit for bit.
              const int64_t n = s.sequence.tokens;
              const Tensor first = view(call.out.data, call.out.dtype, {n, s.sequence.dim},
                                        {call.out.strides[0], call.out.strides[1]});
              const Tensor expected =
                  expected_arena.alloc(call.out.dtype, {n * s.batches, s.sequence.dim});
              repeat_rows(first, expected, s.batches);
              return Verdict::of(harness::compare("out[batch·tokens + t, c]", expected, call.out, 0,
                                                  [](const int64_t*) { return 1.0; }));
            });
          }};
}

Property<AbsoluteCall> same_token_two_positions() {
  using Call = AbsoluteCall;
  return {.name = "absolute.same_token_two_positions",
          .statement =
              "one token at two positions gives equal rows exactly when the table rows are equal",
          .body =
              [](Case<Call>& c) {
                const TwoPositionsSpec s = *rc::gen::exec([] {
                  TwoPositionsSpec t;
                  t.base = *any_spec(false, 2, 2);
                  t.base.rows = std::max<int64_t>(t.base.rows, 2);
                  t.p1 = *gen::uniform(0, t.base.rows - 1);
                  t.p2 = *gen::uniform(0, t.base.rows - 2);
                  if (t.p2 >= t.p1) ++t.p2;
                  t.same_rows = *rc::gen::arbitrary<bool>();
                  return t;
                });
                RC_CLASSIFY(s.same_rows, "equal rows");
                classify_dtype(s.base.dtype);
                Arena probe;
                const Call shape = build(s, probe);
                c.each(shape, [&](const Impl<Call>& impl) {
                  Arena arena;
                  const Call call = build(s, arena);
                  impl.run(call);
                  // Exact sums x + t₁ and x + t₂ further apart than 2·bound + 1 ulps of out's dtype
                  // (at the larger sum) cannot round to the same value; equal rows must give equal
                  // bits.
                  const DType dtype = call.out.dtype;
                  const double units = metamorphic_bound(dtype_bound(dtype, impl.bound));
                  bool must_differ = false, differ = false;
                  int64_t column = 0;
                  for (int64_t k = 0; k < s.base.dim; ++k) {
                    const double x = load(call.x, call.x.offset(0, k));
                    const double t1 = load(call.table, call.table.offset(s.p1, k));
                    const double t2 = load(call.table, call.table.offset(s.p2, k));
                    const double o1 = load(call.out, call.out.offset(0, k));
                    const double o2 = load(call.out, call.out.offset(1, k));
                    const double apart =
                        units * ulp_of(dtype, std::fmax(std::fabs(x + t1), std::fabs(x + t2)));
                    must_differ = must_differ || std::fabs(t1 - t2) > apart;
                    if (o1 != o2 && !differ) column = k;
                    differ = differ || o1 != o2;
                  }
                  if (s.same_rows && differ)
                    return Verdict::fail(fmt::format(
                        "table rows {} and {} are equal, yet out rows differ at column {}", s.p1,
                        s.p2, column));
                  if (!s.same_rows && must_differ && !differ)
                    return Verdict::fail(fmt::format(
                        "table rows {} and {} differ, yet the token's two out rows are equal", s.p1,
                        s.p2));
                  return Verdict::pass();
                });
              },
          .minimum = dtype_shares({{"equal rows", 0.3}})};
}

std::vector<Property<AbsoluteCall>> absolute_properties() {
  auto props = generic_properties<AbsoluteCall>("absolute", absolute_problems());
  for (auto property : {batch_broadcast(), same_token_two_positions()})
    props.push_back(std::move(property));
  return props;
}

Problem<AbsoluteCall> absolute_problem(int64_t tokens, int64_t rows, int64_t dim, Layout layout,
                                       bool in_place, uint64_t seed) {
  return {fmt::format("tokens={} rows={} dim={} {}{}", tokens, rows, dim, layout_name(layout),
                      in_place ? " in_place" : ""),
          [=](Arena& arena) {
            Values values(seed);
            AbsoluteCall call;
            call.x = arena.alloc(DType::f32, {tokens, dim}, layout);
            call.table = arena.alloc(DType::f32, {rows, dim}, layout);
            call.positions = arena.alloc(DType::i64, {tokens}, layout);
            call.out = in_place ? call.x : arena.alloc(DType::f32, {tokens, dim}, layout);
            values.fill(call.x);
            values.fill(call.table);
            values.fill_index(call.positions, 0, rows - 1);
            return call;
          }};
}

}  // namespace

template <>
std::vector<Property<AbsoluteCall>> properties<AbsoluteCall>() {
  return absolute_properties();
}

template <>
std::vector<Problem<AbsoluteCall>> smoke_problems<AbsoluteCall>() {
  return {
      absolute_problem(8, 16, 32, Layout::contiguous, false, 1),
      absolute_problem(5, 3, 7, Layout::padded, false, 2),
      absolute_problem(9, 1024, 48, Layout::contiguous, true, 3),
      absolute_problem(4, 6, 10, Layout::permuted, false, 4),
  };
}

}  // namespace posenc::harness
