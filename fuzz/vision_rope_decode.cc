// vision_rope's fuzz decoder (decode.h): its problem from bytes, and its call on one line.
#include "fuzz/decoder.h"

namespace posenc::harness {

template <>
Decoded<VisionRopeCall> decode<VisionRopeCall>(std::span<const uint8_t> bytes) {
  return decoded<VisionRopeCall>(bytes, [](Decoder& in, Arena& arena) {
    VisionRopeCall c;
    // head_dim from 4: the empty input is a valid call (rotary_dim 4).
    const int64_t tokens = in.size(0, 12), hq = in.size(1, 4), head_dim = in.size(4, 72);
    decode_activations(in, arena, c, tokens, hq, head_dim);
    // Mostly a multiple of 4 (d/4 pairs per axis), rarely anything near head_dim.
    c.rotary_dim = in.rare() ? in.integer(head_dim, -2, head_dim + 3)
                             : 4 * in.size(1, std::max<int64_t>(1, head_dim / 4));
    c.convention = static_cast<VisionRopeConvention>(in.rare() ? in.size(0, 255) : in.size(0, 1));
    c.axis_order = static_cast<VisionAxisOrder>(in.rare() ? in.size(0, 255) : in.size(0, 1));
    // 0 (Qwen2-VL, Pixtral), 1 (Llama 4), or any, past the limits too.
    c.position_offset = in.coin() ? 0 : in.integer(1, -kMaxPosition - 2, kMaxPosition + 2);
    c.layout = static_cast<RopeLayout>(in.rare() ? in.size(0, 255) : in.size(0, 1));
    c.inverse = in.coin();
    c.base = in.real(10000, 1.0001, 1e7);
    c.positions = arena.alloc(in.index_dtype(), {tokens, 2}, in.layout());
    // Positions p with p + offset in [0, kMaxPosition] (and sometimes outside).
    // The offset is clamped first: it may be any int64 (INT64_MIN has no negation).
    const int64_t offset = std::clamp<int64_t>(c.position_offset, -kMaxPosition, kMaxPosition);
    const int64_t lo = std::clamp<int64_t>(-offset, -kMaxPosition, kMaxPosition);
    const int64_t hi = std::clamp<int64_t>(kMaxPosition - offset, lo, kMaxPosition);
    for (int axis = 0; axis < 2; ++axis)
      in.fill_positions(mrope_axis_positions(c.positions, axis), lo, hi);
    c.threads = in.threads();
    in.corrupt(named_views(c));
    return c;
  });
}

template <>
std::string describe(const VisionRopeCall& call) {
  VisionRopeCall c = call;
  return describe_views(named_views(c)) +
         fmt::format(
             "rotary_dim={} convention={} axis_order={} position_offset={} layout={} inverse={} "
             "base={} in_place={} threads={}",
             c.rotary_dim, static_cast<int>(c.convention), static_cast<int>(c.axis_order),
             c.position_offset, static_cast<int>(c.layout), c.inverse, number(c.base),
             same_view(c.q, c.q_out), c.threads);
}

}  // namespace posenc::harness
