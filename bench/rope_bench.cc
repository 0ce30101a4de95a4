// rope: q rotated in place, half-split, rotary_dim = head_dim, with the angles computed from the
// frequencies ("angles") or read from an f32 cos/sin cache ("cached"); q in f32, bf16 or f16
// (",bf16" and ",f16" move half the bytes). Rotation preserves norms, so in-place calls repeated
// over the timed loop stay finite.
#include <cmath>

#include "bench/bench.h"

namespace posenc::bench {
namespace {

Case<RopeCall> rope_case(const TokenShape& s, bool cached, DType dtype = DType::f32) {
  const int64_t t = s.tokens, h = s.heads, d = s.head_dim;
  const int64_t rows = first_position(t) + t;  // the cache covers every position used
  const auto element = static_cast<double>(dtype_size(dtype));
  double bytes = 2.0 * element * static_cast<double>(t * h * d) + 8.0 * t;  // q read, written; pos
  if (cached) bytes += 2.0 * 4 * static_cast<double>(t * d / 2);  // one cos and sin row each
  return {
      .label = "t=" + std::to_string(t) + ",h=" + std::to_string(h) + ",d=" + std::to_string(d) +
               (cached ? ",cached" : ",angles") +
               (dtype == DType::f32 ? std::string() : std::string(",") + dtype_name(dtype)),
      .bytes = bytes,
      .reference = bytes <= kReferenceMaxBytes,
      .build =
          [=](Buffers& b) {
            RopeCall call;
            call.q = call.q_out = b.values(dtype, {t, h, d});
            call.positions = b.positions(t, first_position(t));
            call.rotary_dim = d;
            if (cached) {
              call.cos = b.zeros({rows, d / 2});
              call.sin = b.zeros({rows, d / 2});
              // A true cos/sin table (cos² + sin² = 1 to f32 rounding), so repeated in-place
              // rotation keeps q's scale.
              for (int64_t p = 0; b.touching() && p < rows; ++p) {
                for (int64_t i = 0; i < d / 2; ++i) {
                  const double angle = static_cast<double>(p) * std::pow(call.base, -2.0 * i / d);
                  call.cos->as<float>()[p * d / 2 + i] = static_cast<float>(std::cos(angle));
                  call.sin->as<float>()[p * d / 2 + i] = static_cast<float>(std::sin(angle));
                }
              }
            }
            return call;
          },
  };
}

void register_rope() {
  for (const TokenShape& s : token_shapes()) {
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
      for (bool cached : {false, true}) register_case(rope_case(s, cached, dtype));
  }
}

const bool registered = add_family(Family::rope, register_rope);

}  // namespace
}  // namespace posenc::bench
