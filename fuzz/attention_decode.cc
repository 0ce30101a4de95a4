// attention's fuzz decoder (decode.h): its problem from bytes, and its call on one line.
#include "fuzz/decoder.h"

namespace posenc::harness {

namespace {

// Mostly none (−1, also once the input has run out); else at the inclusive bound's edges for tk
// keys (tk − 1 is the largest implicit q_pos − k_pos), small, past every distance (2^24, and
// int64's largest, where q_pos − window_left overflows), or bad (< −1: rejected).
int64_t window_left(Decoder& in, int64_t tk) {
  const int64_t mode = in.size(0, 255);
  if (mode < 0x80) return -1;
  if (mode < 0xB8) return in.pick<int64_t>({0, 1, tk - 1, tk, tk + 1});
  if (mode < 0xD8) return in.size(0, 16);
  if (mode < 0xE8)
    return in.pick<int64_t>(
        {kMaxPosition, kMaxPosition + 1, decoding::kI64Max - 1, decoding::kI64Max});
  return in.pick<int64_t>({-2, -3, -kMaxPosition, decoding::kI64Min});
}

// Mostly 0 (none); else small (logits squashed hard), moderate (Gemma 2's 30 and 50), extreme
// (subnormal, past f32's range, −0: none) or bad (negative, ±∞, NaN: rejected).
double softcap(Decoder& in) {
  const int64_t mode = in.size(0, 255);
  if (mode < 0x80) return 0;
  if (mode < 0xB0) return in.uniform(0.5, 2);
  if (mode < 0xD0) return in.uniform(30, 50);
  if (mode < 0xE8)
    return in.pick<double>({0x1p-1074, 1e-30, 0x1p30, 0x1.fffffep127, 1e39, 1e300, -0.0});
  return in.pick<double>({-1.0, -0x1p-1074, -decoding::kInf, decoding::kInf, kNaN});
}

}  // namespace

template <>
Decoded<AttentionCall> decode<AttentionCall>(std::span<const uint8_t> bytes) {
  return decoded<AttentionCall>(bytes, [](Decoder& in, Arena& arena) {
    AttentionCall c;
    const int64_t tq = in.size(0, 12), tk = in.size(0, 12), hkv = in.size(1, 3);
    const int64_t hq = hkv * in.size(1, 3), d = in.size(1, 40), dv = in.size(1, 40);
    const DType dtype = in.data();
    c.q = arena.alloc(dtype, {tq, hq, d}, in.layout());
    c.k = arena.alloc(dtype, {tk, hkv, d}, in.layout());
    c.v = arena.alloc(dtype, {tk, hkv, dv}, in.layout());
    c.out = arena.alloc(dtype, {tq, hq, dv}, in.layout());
    in.fill(c.q);
    in.fill(c.k);
    in.fill(c.v);
    c.mask = static_cast<Mask>(in.rare() ? in.size(0, 255) : in.size(0, 1));
    if (in.coin()) {  // explicit positions; sometimes only one of the pair
      c.q_positions = arena.alloc(in.index_dtype(), {tq});
      c.k_positions = arena.alloc(in.index_dtype(), {tk});
      in.fill_positions(*c.q_positions, 0, kMaxPosition);
      in.fill_positions(*c.k_positions, 0, kMaxPosition);
      if (in.rare()) (in.coin() ? c.q_positions : c.k_positions).reset();
    }
    if (in.coin()) {
      // f32 or the activations' dtype (attention.h).
      c.bias = arena.alloc(in.second() % 2 ? DType::f32 : dtype, {hq, tq, tk}, in.layout());
      in.fill(*c.bias);
    }
    c.scale = in.real(kNaN, -2, 2);
    c.threads = in.threads();
    in.corrupt(named_views(c));
    // Chunks, sinks and fused ALiBi (issue 21), read after every older field: an older input the
    // builder exhausted keeps its meaning (one that carried dtype bytes now spends them here).
    c.chunk_size = in.integer(0, 1, 24);
    if (in.coin()) {
      c.sinks = arena.alloc(DType::f32, {hq}, in.layout());
      in.fill(*c.sinks);  // sometimes huge, or NaN and ±∞ (bad input but −∞)
    }
    if (in.coin()) {
      c.alibi_slopes = arena.alloc(DType::f32, {hq}, in.layout());
      in.fill(*c.alibi_slopes);
    }
    in.corrupt(named_views(c));
    // lse from the second dtype choice (the bias reads its parity), reading no byte, so that no
    // input decodes differently for it.
    if (in.second() >= 2) c.lse = arena.alloc(DType::f32, {tq, hq});
    // The window and the softcap, read after every field above (the lse choice reads no byte):
    // older inputs keep their meaning, as chunks, sinks and ALiBi did.
    c.window_left = window_left(in, tk);
    c.softcap = softcap(in);
    return c;
  });
}

template <>
std::string describe(const AttentionCall& call) {
  AttentionCall c = call;
  return describe_views(named_views(c)) +
         fmt::format("mask={} scale={} window_left={} softcap={} threads={} chunk_size={}",
                     static_cast<int>(c.mask), number(c.scale), c.window_left, number(c.softcap),
                     c.threads, c.chunk_size);
}

}  // namespace posenc::harness
