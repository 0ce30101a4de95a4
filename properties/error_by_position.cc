#include "properties/error_by_position.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>

#include "properties/property.h"

namespace posenc::harness {

namespace {

// The first of `candidates` that `impl` supports (variants and conventions), as a problem; an
// empty label if none.
template <class Call, class Build>
Problem<Call> first_supported(const Impl<Call>& impl, const std::vector<Build>& candidates,
                              const std::string& label) {
  for (const Build& build : candidates) {
    Arena probe;
    if (missing_variants(build(probe), impl.variants) == 0) return {label, build};
  }
  return {};
}

// Positions as int64, or int32 for a kernel that takes no others (every band fits).
template <class Call>
DType position_dtype(const Impl<Call>& impl) {
  return variant::with_conventions(impl.variants) & variant::positions_i64 ? DType::i64
                                                                           : DType::i32;
}

std::string band_label(int64_t lo, int64_t hi) {
  return fmt::format("positions in [{}, {}]", lo, hi);
}

}  // namespace

Problem<SinusoidalCall> band_problem(const Impl<SinusoidalCall>& impl, int64_t lo, int64_t hi,
                                     DType dtype) {
  using Build = std::function<SinusoidalCall(Arena&)>;
  const DType index = position_dtype(impl);
  auto make = [=](bool add) -> Build {
    return [=](Arena& arena) {
      Values values(static_cast<uint64_t>(hi));
      SinusoidalCall call;
      call.out = arena.alloc(dtype, {16, 64});
      call.positions = arena.alloc(index, {16});
      values.fill_index(*call.positions, lo, hi);
      if (add) {
        call.x = arena.alloc(dtype, {16, 64});
        values.fill(*call.x);
      }
      return call;
    };
  };
  return first_supported(impl, std::vector<Build>{make(true), make(false)}, band_label(lo, hi));
}

Problem<RopeCall> band_problem(const Impl<RopeCall>& impl, int64_t lo, int64_t hi, DType dtype) {
  using Build = std::function<RopeCall(Arena&)>;
  const DType index = position_dtype(impl);
  // On-the-fly angles, unscaled: the angle p·ω is what a long position stresses. A cache would
  // need 2^24 rows.
  auto make = [=](RopeLayout layout, bool key) -> Build {
    return [=](Arena& arena) {
      Values values(static_cast<uint64_t>(hi));
      RopeCall call;
      call.q = arena.alloc(dtype, {16, 2, 64});
      call.q_out = arena.alloc(dtype, {16, 2, 64});
      values.fill(call.q);
      if (key) {
        call.k = arena.alloc(dtype, {16, 1, 64});
        call.k_out = arena.alloc(dtype, {16, 1, 64});
        values.fill(*call.k);
      }
      call.positions = arena.alloc(index, {16});
      values.fill_index(call.positions, lo, hi);
      call.rotary_dim = 64;
      call.layout = layout;
      return call;
    };
  };
  return first_supported(
      impl,
      std::vector<Build>{make(RopeLayout::half_split, true), make(RopeLayout::half_split, false),
                         make(RopeLayout::interleaved, true), make(RopeLayout::interleaved, false)},
      band_label(lo, hi));
}

// ALiBi and T5: query and key positions both in the band, so that their distances span it; the
// bias is what a long position stresses (ALiBi's slope times the distance, T5's bucket of it).
Problem<AlibiCall> band_problem(const Impl<AlibiCall>& impl, int64_t lo, int64_t hi, DType dtype) {
  using Build = std::function<AlibiCall(Arena&)>;
  const DType index = position_dtype(impl);
  auto make = [=](bool causal) -> Build {
    return [=](Arena& arena) {
      Values values(static_cast<uint64_t>(hi));
      AlibiCall call;
      call.n_heads = 8;
      call.causal = causal;
      call.q_positions = arena.alloc(index, {16});
      call.k_positions = arena.alloc(index, {16});
      values.fill_index(call.q_positions, lo, hi);
      values.fill_index(call.k_positions, lo, hi);
      call.bias = arena.alloc(dtype, {8, 16, 16});
      return call;
    };
  };
  return first_supported(impl, std::vector<Build>{make(false), make(true)}, band_label(lo, hi));
}

Problem<T5Call> band_problem(const Impl<T5Call>& impl, int64_t lo, int64_t hi, DType dtype) {
  using Build = std::function<T5Call(Arena&)>;
  const DType index = position_dtype(impl);
  auto make = [=](bool bidirectional) -> Build {
    return [=](Arena& arena) {
      Values values(static_cast<uint64_t>(hi));
      T5Call call;
      call.bidirectional = bidirectional;
      call.q_positions = arena.alloc(index, {16});
      call.k_positions = arena.alloc(index, {16});
      values.fill_index(call.q_positions, lo, hi);
      values.fill_index(call.k_positions, lo, hi);
      call.table = arena.alloc(dtype, {call.n_buckets, 4});
      values.fill(call.table);
      call.bias = arena.alloc(dtype, {4, 16, 16});
      return call;
    };
  };
  return first_supported(impl, std::vector<Build>{make(true), make(false)}, band_label(lo, hi));
}

std::vector<Envelope> envelopes(const std::vector<PositionBand>& bands, const Bound& bound) {
  std::vector<Envelope> out;
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    Envelope e{.dtype = dtype, .bound = bound.of(dtype)};
    double worst = 0;
    bool holding = true, any = false;
    int64_t last = 0;
    for (const PositionBand& b : bands) {
      if (b.dtype != dtype) continue;
      any = true;
      last = b.hi;
      // A band that failed for another reason (NaN, a throw) holds no bound at all.
      const double need =
          b.ok || b.worst > bound.of(dtype) ? b.worst : std::numeric_limits<double>::infinity();
      worst = std::max(worst, need);
      holding = holding && b.ok;
      if (holding) e.meets_up_to = b.hi;
      if (!holding &&
          (b.hi == int64_t{1} << 12 || b.hi == int64_t{1} << 17 || b.hi == kMaxPosition))
        e.needs.push_back({b.hi, worst});
    }
    if (!any) continue;
    e.complete = last == kMaxPosition;
    if (!holding && (e.needs.empty() || e.needs.back().up_to != last))
      e.needs.push_back({last, worst});
    out.push_back(e);
  }
  return out;
}

namespace {
std::string power_of_two(int64_t x) {
  return x > 0 && (x & (x - 1)) == 0 ? fmt::format("2^{}", std::countr_zero(uint64_t(x)))
                                     : std::to_string(x);
}
}  // namespace

std::string describe(const Envelope& e) {
  std::string s = e.meets_up_to < 0 ? fmt::format("misses bound {:g} from position 0", e.bound)
                                    : fmt::format("meets bound {:g} up to {}", e.bound,
                                                  power_of_two(e.meets_up_to));
  for (size_t i = 0; i < e.needs.size(); ++i)
    s += fmt::format("{}{:.2g} up to {}", i ? ", " : "; needs ", e.needs[i].bound,
                     power_of_two(e.needs[i].up_to));
  if (!e.complete) s += " (measured no further)";
  return s;
}

}  // namespace posenc::harness
