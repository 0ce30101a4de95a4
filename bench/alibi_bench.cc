// alibi: the bias [heads, tq, tk] for 8 and 64 heads, symmetric and causal (−∞ above the
// diagonal), f32. Only writes (plus the positions): bytes = heads·tq·tk·4 + 8·(tq + tk).
#include "bench/bench.h"

namespace posenc::bench {
namespace {

Case<AlibiCall> alibi_case(const BiasShape& s, bool causal) {
  const double bytes =
      4.0 * static_cast<double>(s.heads * s.tq * s.tk) + 8.0 * static_cast<double>(s.tq + s.tk);
  return {
      .label = s.label() + (causal ? ",causal" : ",symmetric"),
      .bytes = bytes,
      .reference = bytes <= kReferenceMaxBytes,
      .build =
          [=](Buffers& b) {
            AlibiCall call;
            call.n_heads = s.heads;
            call.causal = causal;
            call.q_positions = b.positions(s.tq, s.tk - s.tq);
            call.k_positions = b.positions(s.tk);
            call.bias = b.zeros({s.heads, s.tq, s.tk});
            return call;
          },
  };
}

void register_alibi() {
  for (const BiasShape& s : bias_shapes())
    for (bool causal : {false, true}) register_case(alibi_case(s, causal));
}

const bool registered = add_family(Family::alibi, register_alibi);

}  // namespace
}  // namespace posenc::bench
