// rope_frequencies's fuzz decoder (decode.h): its problem from bytes, and its call on one line.
#include "fuzz/decoder.h"

namespace posenc::harness {

template <>
Decoded<RopeFrequenciesCall> decode<RopeFrequenciesCall>(std::span<const uint8_t> bytes) {
  return decoded<RopeFrequenciesCall>(bytes, [](Decoder& in, Arena& arena) {
    RopeFrequenciesCall c;
    c.rotary_dim = in.rotary_dim(256);
    c.base = in.real(10000, 1.0001, 1e7);
    c.scaling = in.scaling(c.rotary_dim);
    c.inv_freq = arena.alloc(DType::f64, {bounded(c.rotary_dim / 2, 128)}, in.layout());
    c.attention_factor = arena.alloc(DType::f64, {1});
    c.threads = in.threads();
    in.corrupt(named_views(c));
    return c;
  });
}

template <>
std::string describe(const RopeFrequenciesCall& call) {
  RopeFrequenciesCall c = call;
  return describe_views(named_views(c)) + fmt::format("rotary_dim={} base={} scaling={} threads={}",
                                                      c.rotary_dim, number(c.base),
                                                      c.scaling.describe(), c.threads);
}

}  // namespace posenc::harness
