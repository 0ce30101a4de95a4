// sinusoidal: the table PE[0:t] (out only) and the add out = x + PE[positions] (out of place, so
// repeated calls see the same input), f32, width = heads·head_dim (512 to 4096).
#include "bench/bench.h"

namespace posenc::bench {
namespace {

Case<SinusoidalCall> sinusoidal_case(const TokenShape& s, bool add) {
  const int64_t t = s.tokens, width = s.heads * s.head_dim;
  const double out_bytes = 4.0 * static_cast<double>(t * width);
  const double bytes = add ? 2 * out_bytes + 8.0 * t : out_bytes;  // (x,) out (, positions)
  return {
      .label =
          "t=" + std::to_string(t) + ",width=" + std::to_string(width) + (add ? ",add" : ",table"),
      .bytes = bytes,
      .reference = bytes <= kReferenceMaxBytes,
      .build =
          [t, width, add](Buffers& b) {
            SinusoidalCall call;
            call.out = b.zeros({t, width});
            if (add) {
              call.x = b.f32({t, width});
              call.positions = b.positions(t, first_position(t));
            }
            return call;
          },
  };
}

void register_sinusoidal() {
  for (const TokenShape& s : token_shapes())
    for (bool add : {false, true}) register_case(sinusoidal_case(s, add));
}

const bool registered = add_family(Family::sinusoidal, register_sinusoidal);

}  // namespace
}  // namespace posenc::bench
