// sinusoidal's fuzz decoder (decode.h): its problem from bytes, and its call on one line.
#include "fuzz/decoder.h"

namespace posenc::harness {

template <>
Decoded<SinusoidalCall> decode<SinusoidalCall>(std::span<const uint8_t> bytes) {
  return decoded<SinusoidalCall>(bytes, [](Decoder& in, Arena& arena) {
    SinusoidalCall c;
    const int64_t tokens = in.size(0, 16);
    const int64_t d = in.rare() ? in.size(0, 9) : 2 * in.size(1, 36);
    const bool add = in.coin(), in_place = add && in.coin();
    c.out = arena.alloc(in.data(), {tokens, d}, in.layout());
    if (add) {
      c.x = in_place ? c.out : arena.alloc(in.data(), {tokens, d}, in.layout());
      in.fill(*c.x);
    }
    if (in.coin()) {
      c.positions = arena.alloc(in.index_dtype(), {tokens});
      in.fill_positions(*c.positions, 0, kMaxPosition);
    }
    c.base = in.real(10000, 1.0001, 1e6);
    c.threads = in.threads();
    in.corrupt(named_views(c));
    if (!c.positions && in.rare()) {
      // A table longer than 2²⁴ + 1 rows: rejected before any access, so it needs no memory.
      c.out.shape[0] = kMaxPosition + 1 + in.size(1, 3);
      if (c.x) c.x->shape[0] = c.out.shape[0];
    }
    return c;
  });
}

template <>
std::string describe(const SinusoidalCall& call) {
  SinusoidalCall c = call;
  return describe_views(named_views(c)) + fmt::format("base={} in_place={} threads={}",
                                                      number(c.base), c.x && same_view(*c.x, c.out),
                                                      c.threads);
}

}  // namespace posenc::harness
