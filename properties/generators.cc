#include "properties/generators.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <tuple>

#include "properties/property.h"

namespace posenc::harness {

namespace {

// A generator that reads declared() when it generates, not when it is built: a family may build
// its generators once, outside any DeclaredScope.
template <class T, class Make>
rc::Gen<T> when_generated(Make make) {
  return rc::Gen<T>([make](const rc::Random& random, int size) { return make()(random, size); });
}

}  // namespace

namespace gen {

std::vector<size_t> declared_indices(const std::vector<uint64_t>& needs) {
  std::vector<size_t> some, all;
  for (size_t i = 0; i < needs.size(); ++i) {
    all.push_back(i);
    if (declared().has(needs[i])) some.push_back(i);
  }
  return some.empty() ? all : some;
}

}  // namespace gen

namespace {

// splitmix64: a fast, well-mixed stream; a Fill is a recipe, not a statistical sample.
uint64_t next(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

}  // namespace

void Fill::apply(const Tensor& t) const {
  uint64_t state = seed;
  const auto binades = static_cast<uint64_t>(hi - lo + 1);
  std::vector<int64_t> offsets;
  for_each_offset(t, [&](int64_t off) {
    const uint64_t bits = next(state);
    const double u = static_cast<double>(bits >> 11) * 0x1p-52 - 1;  // (−1, 1)
    const int k = lo + static_cast<int>((bits & 0x7ff) % binades);
    posenc::store(t, off, std::ldexp(u, k));
    if (!specials.empty()) offsets.push_back(off);
  });
  for (const auto& [index, value] : specials) {
    if (!offsets.empty()) posenc::store(t, offsets[index % offsets.size()], value);
  }
}

bool Fill::has_specials() const {
  for (const auto& special : specials) {
    const float v = special.second;
    if (!std::isnormal(v)) return true;  // ±0, subnormal, ±∞, NaN
  }
  return false;
}

std::string Fill::describe() const {
  std::string s = lo == hi ? fmt::format("seed {} u·2^{}", seed, lo)
                           : fmt::format("seed {} u·2^[{}, {}]", seed, lo, hi);
  for (const auto& [index, value] : specials) s += fmt::format(" [{}]={}", index, value);
  return s;
}

int64_t Positions::max() const {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

void Positions::store(const Tensor& t) const {
  size_t i = 0;
  for_each_offset(t, [&](int64_t off) {
    const int64_t v = values[i++];
    if (t.dtype == DType::i64)
      t.as<int64_t>()[off] = v;
    else
      t.as<int32_t>()[off] = static_cast<int32_t>(v);
  });
}

std::string Positions::describe() const {
  std::string s = fmt::format("{} {} [", kind, dtype_name(dtype));
  const size_t shown = std::min<size_t>(values.size(), 12);
  for (size_t i = 0; i < shown; ++i) s += fmt::format("{}{}", i ? ", " : "", values[i]);
  if (shown < values.size()) s += fmt::format(", … ({} in all)", values.size());
  return s + "]";
}

bool any_strided(const Layouts& layouts) {
  return std::any_of(layouts.begin(), layouts.end(),
                     [](Layout l) { return l != Layout::contiguous; });
}

Layouts uniform_layouts(Layout layout) {
  Layouts l;
  l.fill(layout);
  return l;
}

void showValue(const Fill& fill, std::ostream& os) { os << fill.describe(); }
void showValue(const Positions& positions, std::ostream& os) { os << positions.describe(); }

namespace gen {

rc::Gen<int64_t> uniform(int64_t lo, int64_t hi) {
  return rc::gen::resize(rc::kNominalSize, rc::gen::inRange<int64_t>(lo, hi + 1));
}

rc::Gen<int64_t> sized(int64_t lo, int64_t hi) { return rc::gen::inRange<int64_t>(lo, hi + 1); }

rc::Gen<int64_t> count(int64_t hi) {
  if (hi < 1) return rc::gen::just<int64_t>(0);
  return rc::gen::weightedOneOf<int64_t>({{1, rc::gen::just<int64_t>(0)}, {19, sized(1, hi)}});
}

rc::Gen<float> f32() {
  // Exponent magnitude and sign apart, so it shrinks toward 2^0.
  auto normal = rc::gen::apply(
      [](bool negative, bool small, int64_t binade, int64_t mantissa) {
        const int e =
            small ? -static_cast<int>(std::min<int64_t>(binade, 126)) : static_cast<int>(binade);
        const float x = std::ldexp(1.0f + static_cast<float>(mantissa) * 0x1p-23f, e);
        return negative ? -x : x;
      },
      rc::gen::arbitrary<bool>(), rc::gen::arbitrary<bool>(), uniform(0, 127),
      uniform(0, (1 << 23) - 1));
  auto subnormal = rc::gen::apply(
      [](bool negative, int64_t mantissa) {
        const float x = std::ldexp(static_cast<float>(mantissa), -149);
        return negative ? -x : x;
      },
      rc::gen::arbitrary<bool>(), uniform(1, (1 << 23) - 1));
  const float inf = std::numeric_limits<float>::infinity();
  return when_generated<float>([=] {
    if (!declared().has(variant::nonfinite_inputs))  // a kernel declaring finite inputs only
      return rc::gen::weightedOneOf<float>({
          {6, normal},
          {2, rc::gen::element(0.0f, -0.0f)},
          {2, subnormal},
      });
    return rc::gen::weightedOneOf<float>({
        {6, normal},
        {2, rc::gen::element(0.0f, -0.0f)},
        {2, subnormal},
        {1, rc::gen::element(inf, -inf)},
        {1, rc::gen::just(std::numeric_limits<float>::quiet_NaN())},
    });
  });
}

namespace {

rc::Gen<Fill> make_fill(rc::Gen<std::pair<int, int>> binades,
                        rc::Gen<std::vector<std::pair<uint32_t, float>>> specials) {
  return rc::gen::apply(
      [](int64_t seed, std::pair<int, int> range, std::vector<std::pair<uint32_t, float>> s) {
        return Fill{static_cast<uint64_t>(seed), range.first, range.second, std::move(s)};
      },
      uniform(0, int64_t{1} << 40), std::move(binades), std::move(specials));
}

rc::Gen<std::pair<int, int>> binades(int spread) {
  return rc::gen::apply([](int64_t lo, int64_t hi) { return std::pair<int, int>(-lo, hi); },
                        uniform(0, spread), uniform(0, spread));
}

}  // namespace

rc::Gen<Fill> fill() {
  using Specials = std::vector<std::pair<uint32_t, float>>;
  auto special = rc::gen::apply(
      [](int64_t index, float value) {
        return std::pair<uint32_t, float>(static_cast<uint32_t>(index), value);
      },
      uniform(0, 1 << 20), f32());
  auto some = rc::gen::mapcat(uniform(1, 4), [special](int64_t n) {
    return rc::gen::container<Specials>(static_cast<size_t>(n), special);
  });
  return make_fill(rc::gen::weightedOneOf<std::pair<int, int>>({
                       {5, rc::gen::just(std::pair<int, int>(0, 0))},
                       {3, binades(30)},
                   }),
                   rc::gen::weightedOneOf<Specials>({{3, rc::gen::just(Specials{})}, {1, some}}));
}

rc::Gen<Fill> finite_fill(int spread) {
  return make_fill(rc::gen::weightedOneOf<std::pair<int, int>>({
                       {3, rc::gen::just(std::pair<int, int>(0, 0))},
                       {1, binades(spread)},
                   }),
                   rc::gen::just(std::vector<std::pair<uint32_t, float>>{}));
}

rc::Gen<Positions> positions(int64_t count, int64_t max) {
  using V = std::vector<int64_t>;
  using Kind = std::pair<std::string, V>;
  const auto n = static_cast<size_t>(count);
  auto in = [n](int64_t lo, int64_t hi) { return rc::gen::container<V>(n, uniform(lo, hi)); };
  auto kind = [](const char* name, rc::Gen<V> g) {
    return rc::gen::map(std::move(g), [name](V v) { return Kind(name, std::move(v)); });
  };
  // Many tokens share a position: each picks one of three values.
  auto duplicated = rc::gen::mapcat(in(0, max), [n](V pool) {
    return rc::gen::map(rc::gen::container<V>(n, uniform(0, 2)), [pool](V pick) {
      for (auto& p : pick) p = pool[static_cast<size_t>(p) % pool.size()];
      return pick;
    });
  });
  auto descending = rc::gen::map(in(0, max), [](V v) {
    std::sort(v.rbegin(), v.rend());
    return v;
  });
  // A packed varlen batch: a new sequence starts wherever cut is 0; every other sequence counts
  // up from 0, the rest from an offset (a KV-cache prefix); clamped to max.
  auto varlen = rc::gen::apply(
      [n, max](V cuts, V offsets) {
        V v(n);
        int64_t seq = 0, next = 0;
        for (size_t t = 0; t < n; ++t) {
          if (t > 0 && cuts[t] == 0) ++seq;
          if (t == 0 || cuts[t] == 0) next = seq % 2 ? offsets[seq % 4] : 0;
          v[t] = std::min(next++, max);
        }
        return v;
      },
      rc::gen::container<V>(n, uniform(0, 3)), rc::gen::container<V>(4, uniform(0, max)));
  // The edges of binades, where a float position or angle changes its rounding step: 2^k − 1
  // and 2^k for k ≤ 24 (2^24 itself included), clamped to max.
  auto edges = rc::gen::container<V>(n, rc::gen::map(uniform(0, 49), [max](int64_t e) {
                                       const int64_t v = (int64_t{1} << (e / 2)) - (e % 2 == 0);
                                       return std::min(v, max);
                                     }));
  auto pattern = count == 0 ? rc::gen::just(Kind("empty", V{}))
                            : rc::gen::weightedOneOf<Kind>({
                                  {3, kind("small", in(0, std::min<int64_t>(max, 63)))},
                                  {3, kind("long", in(0, max))},
                                  {1, kind("near max", in(std::max<int64_t>(0, max - 4096), max))},
                                  {1, kind("duplicated", duplicated)},
                                  {1, kind("descending", descending)},
                                  {2, kind("varlen", varlen)},
                                  {1, kind("binade edges", edges)},
                              });
  return rc::gen::apply(
      [](Kind k, DType dtype) {
        return Positions{std::move(k.second), dtype, std::move(k.first)};
      },
      pattern, position_dtype());
}

rc::Gen<std::pair<Positions, Positions>> cache_positions(int64_t tq, int64_t tk) {
  using Pair = std::pair<Positions, Positions>;
  return rc::gen::apply(
      [tq, tk](int64_t offset, DType dtype) {
        Pair p{{{}, dtype, "cache"}, {{}, dtype, "cache"}};
        offset = std::min(offset, kMaxPosition - std::max<int64_t>(std::max(tq, tk) - 1, 0));
        for (int64_t j = 0; j < tk; ++j) p.second.values.push_back(offset + j);
        for (int64_t i = 0; i < tq; ++i)
          p.first.values.push_back(offset + std::max(tk - tq, int64_t{0}) + i);
        return p;
      },
      rc::gen::weightedOneOf<int64_t>(
          {{2, rc::gen::just<int64_t>(0)}, {1, uniform(0, kMaxPosition)}}),
      position_dtype());
}

rc::Gen<int64_t> decode_keys() {
  return rc::gen::weightedOneOf<int64_t>({{2, uniform(512, 4096)}, {1, uniform(4097, 32768)}});
}

rc::Gen<std::pair<Positions, Positions>> query_key_positions(int64_t tq, int64_t tk) {
  using Pair = std::pair<Positions, Positions>;
  auto cache = cache_positions(tq, tk);
  auto independent = rc::gen::apply([](Positions q, Positions k) { return Pair(q, k); },
                                    positions(tq, kMaxPosition), positions(tk, kMaxPosition));
  return rc::gen::weightedOneOf<Pair>({{1, cache}, {2, independent}});
}

rc::Gen<DType> position_dtype() {
  return when_generated<DType>([] {
    return declared_element<DType>(
        {{3, DType::i64, variant::positions_i64}, {1, DType::i32, variant::positions_i32}});
  });
}

rc::Gen<DType> float_dtype() {
  return when_generated<DType>([] {
    return declared_element<DType>({{2, DType::f32, variant::f32},
                                    {1, DType::bf16, variant::bf16},
                                    {1, DType::f16, variant::f16}});
  });
}

rc::Gen<DType> cache_dtype() {
  return when_generated<DType>([] {
    return declared_element<DType>(
        {{2, DType::f32, variant::f32}, {1, DType::bf16, variant::bf16}});
  });
}

rc::Gen<Layout> layout() {
  return rc::gen::element(Layout::contiguous, Layout::padded, Layout::permuted);
}

rc::Gen<Layouts> layouts() {
  return when_generated<Layouts>([] {
    if (!declared().has(variant::strided))
      return rc::gen::just(uniform_layouts(Layout::contiguous));
    return any_layouts();
  });
}

rc::Gen<Layouts> any_layouts() {
  auto mixed = rc::gen::map(rc::gen::container<std::vector<Layout>>(8, layout()),
                            [](const std::vector<Layout>& v) {
                              Layouts l = uniform_layouts(Layout::contiguous);
                              for (size_t i = 0; i < l.size() && i < v.size(); ++i) l[i] = v[i];
                              return l;
                            });
  return rc::gen::weightedOneOf<Layouts>({
      {2, rc::gen::just(uniform_layouts(Layout::contiguous))},
      {1, rc::gen::map(layout(), uniform_layouts)},
      {1, mixed},
  });
}

}  // namespace gen

}  // namespace posenc::harness
