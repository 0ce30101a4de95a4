// alibi's fuzz decoder (decode.h): its problem from bytes, and its call on one line.
#include "fuzz/decoder.h"

namespace posenc::harness {

template <>
Decoded<AlibiCall> decode<AlibiCall>(std::span<const uint8_t> bytes) {
  return decoded<AlibiCall>(bytes, [](Decoder& in, Arena& arena) {
    AlibiCall c;
    c.n_heads = in.integer(in.size(1, 40), -1, 64);
    const int64_t heads = bounded(c.n_heads, 64), tq = in.size(0, 12), tk = in.size(0, 12);
    c.max_bias = in.real(8, 0.25, 16);
    c.causal = in.coin();
    c.q_positions = arena.alloc(in.index_dtype(), {tq});
    c.k_positions = arena.alloc(in.index_dtype(), {tk});
    in.fill_positions(c.q_positions, 0, kMaxPosition);
    in.fill_positions(c.k_positions, 0, kMaxPosition);
    c.bias = arena.alloc(in.data(), {heads, tq, tk}, in.layout());
    if (in.coin()) c.slopes = arena.alloc(DType::f32, {heads});  // f32 whatever the bias
    c.threads = in.threads();
    in.corrupt(named_views(c));
    return c;
  });
}

template <>
std::string describe(const AlibiCall& call) {
  AlibiCall c = call;
  return describe_views(named_views(c)) + fmt::format("n_heads={} max_bias={} causal={} threads={}",
                                                      c.n_heads, number(c.max_bias), c.causal,
                                                      c.threads);
}

}  // namespace posenc::harness
