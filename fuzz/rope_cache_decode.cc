// rope_cache's fuzz decoder (decode.h): its problem from bytes, and its call on one line.
#include "fuzz/decoder.h"

namespace posenc::harness {

template <>
Decoded<RopeCacheCall> decode<RopeCacheCall>(std::span<const uint8_t> bytes) {
  return decoded<RopeCacheCall>(bytes, [](Decoder& in, Arena& arena) {
    RopeCacheCall c;
    c.rotary_dim = in.rotary_dim(128);
    c.base = in.real(10000, 1.0001, 1e7);
    c.scaling = in.scaling(c.rotary_dim);
    const int64_t rows = in.size(0, 40), half = bounded(c.rotary_dim / 2, 64);
    // f32 or bf16; an f16 table is bad input (rope_cache.h).
    if (in.coin()) {
      std::tie(c.cos, c.sin) = vllm_cache(arena, rows, 2 * half, in.data());
    } else {
      c.cos = arena.alloc(in.data(), {rows, half}, in.layout());
      c.sin = arena.alloc(in.data(), {rows, half}, in.layout());
    }
    c.threads = in.threads();
    in.corrupt(named_views(c));
    if (in.rare()) {
      // More than 2²⁴ + 1 rows: rejected before any access, so it needs no memory.
      c.cos.shape[0] = c.sin.shape[0] = kMaxPosition + 1 + in.size(1, 3);
    }
    return c;
  });
}

template <>
std::string describe(const RopeCacheCall& call) {
  RopeCacheCall c = call;
  return describe_views(named_views(c)) + fmt::format("rotary_dim={} base={} scaling={} threads={}",
                                                      c.rotary_dim, number(c.base),
                                                      c.scaling.describe(), c.threads);
}

}  // namespace posenc::harness
