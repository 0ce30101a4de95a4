// absolute's fuzz decoder (decode.h): its problem from bytes, and its call on one line.
#include "fuzz/decoder.h"

namespace posenc::harness {

template <>
Decoded<AbsoluteCall> decode<AbsoluteCall>(std::span<const uint8_t> bytes) {
  return decoded<AbsoluteCall>(bytes, [](Decoder& in, Arena& arena) {
    AbsoluteCall c;
    const int64_t tokens = in.size(0, 16), dim = in.size(1, 70);
    const int64_t rows = in.rare() ? 0 : in.size(1, 20);
    // The table in the activations' dtype, or in any of the three (absolute.h).
    constexpr DType kTable[] = {DType::f32, DType::bf16, DType::f16};
    const DType dtype = in.data(), table = in.second() == 0 ? dtype : kTable[in.second() - 1];
    c.x = arena.alloc(dtype, {tokens, dim}, in.layout());
    c.table = arena.alloc(table, {rows, dim}, in.layout());
    c.positions = arena.alloc(in.index_dtype(), {tokens});
    in.fill(c.x);
    in.fill(c.table);
    in.fill_positions(c.positions, 0, rows - 1);
    c.out = in.coin() ? c.x : arena.alloc(dtype, {tokens, dim}, in.layout());
    c.threads = in.threads();
    in.corrupt(named_views(c));
    return c;
  });
}

template <>
std::string describe(const AbsoluteCall& call) {
  AbsoluteCall c = call;
  return describe_views(named_views(c)) +
         fmt::format("in_place={} threads={}", same_view(c.x, c.out), c.threads);
}

}  // namespace posenc::harness
