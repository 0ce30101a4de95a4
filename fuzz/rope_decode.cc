// rope's fuzz decoder (decode.h): its problem from bytes, and its call on one line.
#include "fuzz/decoder.h"

namespace posenc::harness {

template <>
Decoded<RopeCall> decode<RopeCall>(std::span<const uint8_t> bytes) {
  return decoded<RopeCall>(bytes, [](Decoder& in, Arena& arena) {
    RopeCall c;
    const int64_t tokens = in.size(0, 12), hq = in.size(1, 4), head_dim = in.size(2, 72);
    const bool key = in.coin();
    const int64_t hk = key ? in.size(1, 4) : 0;
    const DType dtype = in.data();
    if (key && in.coin()) {
      // q and k packed per token in one buffer, as a fused qkv projection writes them.
      const Tensor qk = arena.alloc(dtype, {tokens, hq + hk, head_dim}, in.layout());
      c.q = subview(qk, 0, {tokens, hq, head_dim});
      c.k = subview(qk, hq * qk.strides[1], {tokens, hk, head_dim});
    } else {
      c.q = arena.alloc(dtype, {tokens, hq, head_dim}, in.layout());
      if (key) c.k = arena.alloc(dtype, {tokens, hk, head_dim}, in.layout());
    }
    in.fill(c.q);
    c.q_out = in.coin() ? c.q : arena.alloc(dtype, {tokens, hq, head_dim}, in.layout());
    if (key) {
      in.fill(*c.k);
      c.k_out = in.coin() ? *c.k : arena.alloc(dtype, {tokens, hk, head_dim}, in.layout());
      if (in.rare()) (in.coin() ? c.k : c.k_out).reset();
    }
    c.rotary_dim = in.rare() ? in.integer(head_dim, -2, head_dim + 3)
                             : 2 * in.size(1, std::max<int64_t>(1, head_dim / 2));
    c.layout = static_cast<RopeLayout>(in.rare() ? in.size(0, 255) : in.size(0, 1));
    c.inverse = in.coin();
    c.positions = arena.alloc(in.index_dtype(), {tokens});
    if (in.coin()) {
      // An f32 or a bf16 cache, whatever the activations (rope.h).
      const DType cache = in.second() % 2 ? DType::bf16 : DType::f32;
      const int64_t rows = in.size(1, 40), half = bounded(c.rotary_dim / 2, 40);
      c.cos = arena.alloc(cache, {rows, half}, in.layout());
      c.sin = arena.alloc(cache, {rows, half}, in.layout());
      in.fill(*c.cos);
      in.fill(*c.sin);
      in.fill_positions(c.positions, 0, rows - 1);
      if (in.rare()) (in.coin() ? c.cos : c.sin).reset();
    } else {
      c.base = in.real(10000, 1.0001, 1e7);
      c.scaling = in.scaling(c.rotary_dim);
      in.fill_positions(c.positions, 0, kMaxPosition);
    }
    c.threads = in.threads();
    in.corrupt(named_views(c));
    return c;
  });
}

template <>
std::string describe(const RopeCall& call) {
  RopeCall c = call;
  std::string s = describe_views(named_views(c)) +
                  fmt::format("rotary_dim={} layout={} inverse={} ", c.rotary_dim,
                              static_cast<int>(c.layout), c.inverse);
  if (!c.cached()) s += fmt::format("base={} scaling={} ", number(c.base), c.scaling.describe());
  return s + fmt::format("in_place={} threads={}", same_view(c.q, c.q_out), c.threads);
}

}  // namespace posenc::harness
