// attention's tolerance model as its property files share it (properties/attention.cc defines it;
// properties/attention_variants.cc uses it for the metamorphic properties).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "properties/generic.h"

namespace posenc::harness {

// Two runs of an implementation with bound `bound` (f32 units), each within it of the reference:
// for metamorphic properties.
Comparison compare_two_runs(const AttentionCall& a, const AttentionCall& b, double bound);

// One tolerance unit of each output element of `call` (posenc/attention.h), out's in `out_dtype`.
struct AttentionUnits {
  AttentionUnits(const AttentionCall& call, DType out_dtype);
  // out[i, h, c]'s: ulp(vmax)·(1 + |scale|·‖q_i‖·kmax) over the keys row i sees.
  double of_out(int64_t i, int64_t h, int64_t c) const { return out[(i * hq + h) * dv + c]; }
  // lse[i, h]'s, for a value `lse` of it: ulp_f32(1 + |scale|·‖q_i‖·kmax + |lse|).
  double of_lse(int64_t i, int64_t h, double lse) const {
    return ulp_f32(1 + spread[i * hq + h] + std::fabs(lse));
  }
  int64_t hq = 0, dv = 0;
  std::vector<double> out, spread;  // spread: |scale|·‖q_i‖·kmax per row (i, h)
};

}  // namespace posenc::harness
