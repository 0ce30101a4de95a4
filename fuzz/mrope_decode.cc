// mrope's fuzz decoder (decode.h): its problem from bytes, and its call on one line.
#include "fuzz/decoder.h"

namespace posenc::harness {

template <>
Decoded<MropeCall> decode<MropeCall>(std::span<const uint8_t> bytes) {
  return decoded<MropeCall>(bytes, [](Decoder& in, Arena& arena) {
    MropeCall c;
    const int64_t tokens = in.size(0, 12), hq = in.size(1, 4), head_dim = in.size(2, 72);
    decode_activations(in, arena, c, tokens, hq, head_dim);
    c.rotary_dim = in.rotary_dim(head_dim);
    c.convention = static_cast<MropeConvention>(in.rare() ? in.size(0, 255) : in.size(0, 1));
    // Mostly a section the convention accepts; rarely any three counts.
    const int64_t half = std::max<int64_t>(c.rotary_dim / 2, 0);
    if (in.rare()) {
      for (int64_t& n : c.mrope_section) n = in.integer(half / 3, -2, half + 2);
    } else {
      const bool cycled = c.convention == MropeConvention::interleaved;
      c.mrope_section[1] = in.size(0, cycled ? (half + 1) / 3 : half);
      c.mrope_section[2] = in.size(0, cycled ? half / 3 : half - c.mrope_section[1]);
      c.mrope_section[0] = half - c.mrope_section[1] - c.mrope_section[2];
    }
    c.layout = static_cast<RopeLayout>(in.rare() ? in.size(0, 255) : in.size(0, 1));
    c.inverse = in.coin();
    c.base = in.real(10000, 1.0001, 1e7);
    // Half the calls unscaled, as Qwen2-VL's and Qwen3-VL's are: the scaling alone reads 15 bytes
    // or more, which an input must have left over to choose a dtype (decoder.h).
    if (in.coin()) c.scaling = in.scaling(c.rotary_dim);
    c.positions = arena.alloc(in.index_dtype(), {tokens, 3}, in.layout());
    // Height and width often equal the temporal position, as for text tokens (and fewer bytes
    // read leave more inputs long enough to choose a dtype).
    const Tensor temporal = mrope_axis_positions(c.positions, 0);
    in.fill_positions(temporal, 0, kMaxPosition);
    for (int axis = 1; axis < 3; ++axis) {
      const Tensor column = mrope_axis_positions(c.positions, axis);
      if (in.coin()) {
        in.fill_positions(column, 0, kMaxPosition);
      } else {
        for (int64_t t = 0; t < tokens; ++t)
          store_index(column, column.offset(t), load_index(temporal, temporal.offset(t)));
      }
    }
    c.threads = in.threads();
    in.corrupt(named_views(c));
    return c;
  });
}

template <>
std::string describe(const MropeCall& call) {
  MropeCall c = call;
  return describe_views(named_views(c)) +
         fmt::format(
             "rotary_dim={} mrope_section=[{}, {}, {}] convention={} layout={} inverse={} "
             "base={} scaling={} in_place={} threads={}",
             c.rotary_dim, c.mrope_section[0], c.mrope_section[1], c.mrope_section[2],
             static_cast<int>(c.convention), static_cast<int>(c.layout), c.inverse, number(c.base),
             c.scaling.describe(), same_view(c.q, c.q_out), c.threads);
}

}  // namespace posenc::harness
