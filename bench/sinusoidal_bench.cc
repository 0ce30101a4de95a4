// sinusoidal: the table PE[0:t] (out only) and the add out = x + PE[positions] (out of place, so
// repeated calls see the same input), width = heads·head_dim (512 to 4096); f32, bf16 and f16
// ("bf16", "f16": half the bytes).
#include <algorithm>
#include <cmath>

#include "bench/bench.h"

namespace posenc::bench {
namespace {

// The largest error of out against x + PE in fp64, in sinusoidal.h's unit (one ulp of out's dtype
// at 1 + |x|), over every 61st row (the whole table would take seconds of libm).
double sinusoidal_error(const SinusoidalCall& call) {
  const int64_t tokens = call.out.shape[0], width = call.out.shape[1];
  const int bits = call.out.dtype == DType::bf16 ? 8 : call.out.dtype == DType::f16 ? 11 : 24;
  double worst = 0;
  for (int64_t t = 0; t < tokens; t += 61) {
    const double p = static_cast<double>(call.positions ? call.positions->as<int64_t>()[t] : t);
    for (int64_t c = 0; c < width; ++c) {
      const double omega = std::pow(call.base, -static_cast<double>(c - c % 2) / width);
      const double x = call.x ? load(*call.x, t * width + c) : 0.0;
      const double want = x + (c % 2 ? std::cos(p * omega) : std::sin(p * omega));
      const double unit = std::ldexp(1.0, std::ilogb(1 + std::fabs(x)) - (bits - 1));
      worst = std::max(worst, std::fabs(load(call.out, t * width + c) - want) / unit);
    }
  }
  return worst;
}

Case<SinusoidalCall> sinusoidal_case(const TokenShape& s, bool add, DType dtype) {
  const int64_t t = s.tokens, width = s.heads * s.head_dim;
  const double out_bytes = static_cast<double>(dtype_size(dtype)) * static_cast<double>(t * width);
  const double bytes = add ? 2 * out_bytes + 8.0 * t : out_bytes;  // (x,) out (, positions)
  return {
      .label = "t=" + std::to_string(t) + ",width=" + std::to_string(width) +
               (add ? ",add" : ",table") +
               (dtype == DType::f32 ? std::string() : std::string(",") + dtype_name(dtype)),
      .bytes = bytes,
      .write_only = !add,
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
      .plain =
          [=](const SinusoidalCall& call, Buffers&) {
            return [=](int threads) {
              plain_sinusoidal(call.out.data, call.x ? call.x->data : nullptr, plain_element(dtype),
                               call.positions ? call.positions->as<int64_t>() : nullptr, t, width,
                               call.base, threads);
            };
          },
      .plain_error = sinusoidal_error,
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
