// alibi: the bias [heads, tq, tk] for 8 and 64 heads, symmetric and causal (−∞ above the
// diagonal), f32, bf16 and f16 ("bf16", "f16": half the bytes). Only writes (plus the positions):
// bytes = heads·tq·tk·element + 8·(tq + tk).
#include "bench/bench.h"

namespace posenc::bench {
namespace {

Case<AlibiCall> alibi_case(const BiasShape& s, bool causal, DType dtype) {
  const auto element = static_cast<double>(dtype_size(dtype));
  const double bytes =
      element * static_cast<double>(s.heads * s.tq * s.tk) + 8.0 * static_cast<double>(s.tq + s.tk);
  return {
      .label = s.label() + (causal ? ",causal" : ",symmetric") +
               (dtype == DType::f32 ? std::string() : std::string(",") + dtype_name(dtype)),
      .bytes = bytes,
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
