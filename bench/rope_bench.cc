// rope: q rotated in place, half-split, rotary_dim = head_dim, with the angles computed from the
// frequencies ("angles") or read from an f32 cos/sin cache ("cached"); q in f32, bf16 or f16
// (",bf16" and ",f16" move half the bytes). Rotation preserves norms, so in-place calls repeated
// over the timed loop stay finite.
#include <cmath>

#include "bench/bench.h"
#include "posenc/run.h"

namespace posenc::bench {
namespace {

// A true cos/sin table of `rows` positions (cos² + sin² = 1 to f32 rounding), so repeated in-place
// rotation keeps q's scale.
void fill_table(float* cos, float* sin, int64_t rows, int64_t d, double base) {
  for (int64_t p = 0; p < rows; ++p) {
    for (int64_t i = 0; i < d / 2; ++i) {
      const double angle = static_cast<double>(p) * std::pow(base, -2.0 * i / d);
      cos[p * d / 2 + i] = static_cast<float>(std::cos(angle));
      sin[p * d / 2 + i] = static_cast<float>(std::sin(angle));
    }
  }
}

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
              if (b.touching())
                fill_table(call.cos->as<float>(), call.sin->as<float>(), rows, d, call.base);
            }
            return call;
          },
      // The user's loop reads a precomputed f32 cos/sin table, angles or not.
      .plain =
          [=](const RopeCall& call, Buffers& extra) {
            const float *cos, *sin;
            if (call.cos) {
              cos = call.cos->as<float>();
              sin = call.sin->as<float>();
            } else {
              float* c = extra.floats(rows * d / 2);
              float* s = extra.floats(rows * d / 2);
              fill_table(c, s, rows, d, call.base);
              cos = c, sin = s;
            }
            return [=, q = call.q.data, pos = call.positions.as<int64_t>()](int threads) {
              plain_rope(q, plain_element(dtype), t, h, d, pos, cos, sin, threads);
            };
          },
      // A decode loop's call, validated once (run.h): only the one-token cases.
      .step = t != 1 ? nullptr
                     : std::function<std::function<void()>(const RopeCall&)>(
                           [](const RopeCall& call) -> std::function<void()> {
                             return [step = RopeStep(call)] { step.step(); };
                           }),
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
