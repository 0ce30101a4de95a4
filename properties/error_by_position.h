// Worst error against position: where a kernel's precision breaks. For each band of positions
// [2^k, 2^(k+1)) up to kMaxPosition, one problem whose positions all lie in the band is run by the
// implementation and the reference; the band's worst error is in the family's tolerance units.
// `posenc validate --html` charts it against the implementation's bound.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "posenc/properties/harness.h"
#include "posenc/properties/property.h"

namespace posenc::harness {

struct PositionBand {
  int64_t lo = 0, hi = 0;  // positions in [lo, hi]
  double worst = 0;        // tolerance units
  bool ok = true;          // within the bound, no throw, no stray write
  std::string failure;
};

// A problem of Call's family whose positions lie in [lo, hi] and that `impl` supports; the label
// is empty when the family has no positions or `impl` supports none of the shapes tried.
Problem<SinusoidalCall> band_problem(const Impl<SinusoidalCall>& impl, int64_t lo, int64_t hi);
Problem<RopeCall> band_problem(const Impl<RopeCall>& impl, int64_t lo, int64_t hi);

// The bands from [0, 1] up to [2^23, 2^24]; empty for a family without positions, or when `impl`
// supports no problem of the shapes tried. Stops early past `deadline` or on stop_requested(), and
// after a band whose
// call threw (a crash or a hang would only repeat in every band, each costing its time limit).
template <class Call>
std::vector<PositionBand> error_by_position(
    const Impl<Call>& impl,
    std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt) {
  std::vector<PositionBand> bands;
  if constexpr (requires { band_problem(impl, 0, 1); }) {
    for (int64_t lo = 0, hi = 1; hi <= kMaxPosition; lo = hi, hi *= 2) {
      if (stop_requested() || (deadline && std::chrono::steady_clock::now() >= *deadline)) break;
      const Problem<Call> problem = band_problem(impl, lo, hi);
      if (problem.label.empty()) return {};
      const Outcome o = differential(impl, problem);
      bands.push_back({lo, hi, o.comparison.worst, o.ok, o.failure});
      if (o.failure.starts_with("threw: ")) break;
    }
  }
  return bands;
}

}  // namespace posenc::harness
