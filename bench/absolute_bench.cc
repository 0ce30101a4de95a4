// absolute: out = x + table[positions], out of place, f32, width = heads·head_dim (512 to 4096).
// The learned table has 4096 rows; 32768 tokens are 8 packed sequences of 4096.
#include "bench/bench.h"

namespace posenc::bench {
namespace {

constexpr int64_t kRows = 4096;

Case<AbsoluteCall> absolute_case(const TokenShape& s) {
  const int64_t t = s.tokens, width = s.heads * s.head_dim;
  const double bytes = 3.0 * 4 * static_cast<double>(t * width) + 8.0 * t;  // x, rows, out; pos
  return {
      .label = "t=" + std::to_string(t) + ",width=" + std::to_string(width),
      .bytes = bytes,
      .reference = bytes <= kReferenceMaxBytes,
      .build =
          [t, width](Buffers& b) {
            AbsoluteCall call;
            call.x = b.f32({t, width});
            call.table = b.f32({kRows, width});
            call.positions = b.positions(t, first_position(t), kRows);
            call.out = b.zeros({t, width});
            return call;
          },
  };
}

void register_absolute() {
  for (const TokenShape& s : token_shapes()) register_case(absolute_case(s));
}

const bool registered = add_family(Family::absolute, register_absolute);

}  // namespace
}  // namespace posenc::bench
