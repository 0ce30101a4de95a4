#include "properties/error_by_position.h"

#include <fmt/format.h>

namespace posenc::harness {

namespace {

// The first of `candidates` that `impl` supports, as a problem; an empty label if none.
template <class Call, class Build>
Problem<Call> first_supported(const Impl<Call>& impl, const std::vector<Build>& candidates,
                              const std::string& label) {
  for (const Build& build : candidates) {
    Arena probe;
    if (supports(impl, build(probe))) return {label, build};
  }
  return {};
}

std::string band_label(int64_t lo, int64_t hi) {
  return fmt::format("positions in [{}, {}]", lo, hi);
}

}  // namespace

Problem<SinusoidalCall> band_problem(const Impl<SinusoidalCall>& impl, int64_t lo, int64_t hi) {
  using Build = std::function<SinusoidalCall(Arena&)>;
  auto make = [=](bool add) -> Build {
    return [=](Arena& arena) {
      Values values(static_cast<uint64_t>(hi));
      SinusoidalCall call;
      call.out = arena.alloc(DType::f32, {16, 64});
      call.positions = arena.alloc(DType::i64, {16});
      values.fill_index(*call.positions, lo, hi);
      if (add) {
        call.x = arena.alloc(DType::f32, {16, 64});
        values.fill(*call.x);
      }
      return call;
    };
  };
  return first_supported(impl, std::vector<Build>{make(true), make(false)}, band_label(lo, hi));
}

Problem<RopeCall> band_problem(const Impl<RopeCall>& impl, int64_t lo, int64_t hi) {
  using Build = std::function<RopeCall(Arena&)>;
  // On-the-fly angles, unscaled: the angle p·ω is what a long position stresses. A cache would
  // need 2^24 rows.
  auto make = [=](RopeLayout layout, bool key) -> Build {
    return [=](Arena& arena) {
      Values values(static_cast<uint64_t>(hi));
      RopeCall call;
      call.q = arena.alloc(DType::f32, {16, 2, 64});
      call.q_out = arena.alloc(DType::f32, {16, 2, 64});
      values.fill(call.q);
      if (key) {
        call.k = arena.alloc(DType::f32, {16, 1, 64});
        call.k_out = arena.alloc(DType::f32, {16, 1, 64});
        values.fill(*call.k);
      }
      call.positions = arena.alloc(DType::i64, {16});
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

}  // namespace posenc::harness
