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
  DType dtype = DType::f32;  // of the activations and outputs
};

// A problem of Call's family whose positions lie in [lo, hi] and that `impl` supports; the label
// is empty when the family has no positions or `impl` supports none of the shapes tried.
Problem<SinusoidalCall> band_problem(const Impl<SinusoidalCall>& impl, int64_t lo, int64_t hi,
                                     DType dtype = DType::f32);
Problem<RopeCall> band_problem(const Impl<RopeCall>& impl, int64_t lo, int64_t hi,
                               DType dtype = DType::f32);
Problem<AlibiCall> band_problem(const Impl<AlibiCall>& impl, int64_t lo, int64_t hi,
                                DType dtype = DType::f32);
Problem<T5Call> band_problem(const Impl<T5Call>& impl, int64_t lo, int64_t hi,
                             DType dtype = DType::f32);

// The bands from [0, 1] up to [2^23, 2^24], for each of f32, bf16 and f16 that `impl` supports a
// problem of the shapes tried in, in that order; empty for a family without positions. Stops
// early past `deadline` or on stop_requested(), and after a band whose call threw (a crash or a
// hang would only repeat in every band, each costing its time limit).
template <class Call>
std::vector<PositionBand> error_by_position(
    const Impl<Call>& impl,
    std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt) {
  std::vector<PositionBand> bands;
  if constexpr (requires { band_problem(impl, 0, 1); }) {
    for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
      if (band_problem(impl, 0, 1, dtype).label.empty()) continue;
      for (int64_t lo = 0, hi = 1; hi <= kMaxPosition; lo = hi, hi *= 2) {
        if (stop_requested() || (deadline && std::chrono::steady_clock::now() >= *deadline))
          return bands;
        const Outcome o = differential(impl, band_problem(impl, lo, hi, dtype));
        bands.push_back({lo, hi, o.comparison.worst, o.ok, o.failure, dtype});
        if (o.failure.starts_with("threw: ")) return bands;
      }
    }
  }
  return bands;
}

// Where one dtype's bands meet `bound`: the largest position up to which every band holds it (-1
// when the first does not), and the bound each band up to a checkpoint would need.
struct Envelope {
  DType dtype = DType::f32;
  double bound = 0;
  int64_t meets_up_to = -1;
  struct Need {
    int64_t up_to;
    double bound;  // the worst error of the bands up to `up_to`
  };
  std::vector<Need> needs;  // at 2^12, 2^17 and 2^24 (as far as measured), past meets_up_to
  bool complete = true;     // every band up to 2^24 measured
};
std::vector<Envelope> envelopes(const std::vector<PositionBand>& bands, const Bound& bound);
// "meets bound 1 up to 2^3; needs 2.9e3 up to 2^12, 9e6 up to 2^24"
std::string describe(const Envelope& e);

}  // namespace posenc::harness
