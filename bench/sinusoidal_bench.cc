// sinusoidal: the table PE[0:t] (out only) and the add out = x + PE[positions] (out of place, so
// repeated calls see the same input), width = heads·head_dim (512 to 4096); f32, bf16 and f16
// ("bf16", "f16": half the bytes).
#include "bench/bench.h"

namespace posenc::bench {
namespace {

Case<SinusoidalCall> sinusoidal_case(const TokenShape& s, bool add, DType dtype) {
  const int64_t t = s.tokens, width = s.heads * s.head_dim;
  const double out_bytes = static_cast<double>(dtype_size(dtype)) * static_cast<double>(t * width);
  const double bytes = add ? 2 * out_bytes + 8.0 * t : out_bytes;  // (x,) out (, positions)
  return {
      .label = "t=" + std::to_string(t) + ",width=" + std::to_string(width) +
               (add ? ",add" : ",table") +
               (dtype == DType::f32 ? std::string() : std::string(",") + dtype_name(dtype)),
      .bytes = bytes,
      .reference = bytes <= kReferenceMaxBytes,
      .build =
          [t, width, add, dtype](Buffers& b) {
            SinusoidalCall call;
            call.out = dtype == DType::f32 ? b.zeros({t, width}) : b.values(dtype, {t, width});
            if (add) {
              call.x = b.values(dtype, {t, width});
              call.positions = b.positions(t, first_position(t));
            }
            return call;
          },
  };
}

void register_sinusoidal() {
  for (const TokenShape& s : token_shapes())
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
      for (bool add : {false, true}) register_case(sinusoidal_case(s, add, dtype));
}

const bool registered = add_family(Family::sinusoidal, register_sinusoidal);

}  // namespace
}  // namespace posenc::bench
