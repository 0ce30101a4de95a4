// t5's fuzz decoder (decode.h): its problem from bytes, and its call on one line.
#include "fuzz/decoder.h"

namespace posenc::harness {

template <>
Decoded<T5Call> decode<T5Call>(std::span<const uint8_t> bytes) {
  return decoded<T5Call>(bytes, [](Decoder& in, Arena& arena) {
    T5Call c;
    c.bidirectional = !in.coin();
    c.n_buckets = in.integer(in.size(4, 64), -1, 80);
    c.max_distance = in.integer(in.size(8, 1024), -1, kMaxPosition + 2);
    const int64_t heads = in.size(1, 8), tq = in.size(0, 12), tk = in.size(0, 12);
    c.q_positions = arena.alloc(in.index_dtype(), {tq});
    c.k_positions = arena.alloc(in.index_dtype(), {tk});
    in.fill_positions(c.q_positions, 0, kMaxPosition);
    in.fill_positions(c.k_positions, 0, kMaxPosition);
    c.table = arena.alloc(in.data(), {bounded(c.n_buckets, 80), heads}, in.layout());
    in.fill(c.table);
    c.bias = arena.alloc(in.data(), {heads, tq, tk}, in.layout());
    c.threads = in.threads();
    in.corrupt(named_views(c));
    return c;
  });
}

template <>
std::string describe(const T5Call& call) {
  T5Call c = call;
  return describe_views(named_views(c)) + fmt::format(
                                              "bidirectional={} n_buckets={} max_distance={} "
                                              "threads={}",
                                              c.bidirectional, c.n_buckets, c.max_distance,
                                              c.threads);
}

}  // namespace posenc::harness
