// alibi: the bias [heads, tq, tk] for 8 and 64 heads, symmetric and causal (−∞ above the
// diagonal), f32, bf16 and f16 ("bf16", "f16": half the bytes). Only writes (plus the positions):
// bytes = heads·tq·tk·element + 8·(tq + tk).
#include <cmath>
#include <vector>

#include "bench/bench.h"

namespace posenc::bench {
namespace {

// alibi.h's slopes for `heads` and max_bias, rounded to f32 (the user's table).
std::vector<float> slopes(int64_t heads, double max_bias) {
  int64_t c = 1;
  while (2 * c <= heads) c *= 2;
  std::vector<float> out;
  for (int64_t h = 0; h < heads; ++h) {
    const double e =
        h < c ? -max_bias * static_cast<double>(h + 1) / static_cast<double>(c)
              : -(max_bias / 2) * static_cast<double>(2 * (h - c) + 1) / static_cast<double>(c);
    out.push_back(static_cast<float>(std::exp2(e)));
  }
  return out;
}

Case<AlibiCall> alibi_case(const BiasShape& s, bool causal, DType dtype) {
  const auto element = static_cast<double>(dtype_size(dtype));
  const double bytes =
      element * static_cast<double>(s.heads * s.tq * s.tk) + 8.0 * static_cast<double>(s.tq + s.tk);
  return {
      .label = s.label() + (causal ? ",causal" : ",symmetric") +
               (dtype == DType::f32 ? std::string() : std::string(",") + dtype_name(dtype)),
      .bytes = bytes,
      .write_only = true,
      .reference = bytes <= kReferenceMaxBytes,
      .build =
          [=](Buffers& b) {
            AlibiCall call;
            call.n_heads = s.heads;
            call.causal = causal;
            call.q_positions = b.positions(s.tq, s.tk - s.tq);
            call.k_positions = b.positions(s.tk);
            call.bias = b.values(dtype, {s.heads, s.tq, s.tk});
            return call;
          },
      .plain =
          [=](const AlibiCall& call, Buffers&) {
            return [=, table = slopes(s.heads, call.max_bias)](int threads) {
              plain_alibi(call.bias.data, plain_element(dtype), table.data(), s.heads,
                          call.q_positions.as<int64_t>(), s.tq, call.k_positions.as<int64_t>(),
                          s.tk, causal, threads);
            };
          },
  };
}

void register_alibi() {
  for (const BiasShape& s : bias_shapes())
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
      for (bool causal : {false, true}) register_case(alibi_case(s, causal, dtype));
}

const bool registered = add_family(Family::alibi, register_alibi);

}  // namespace
}  // namespace posenc::bench
