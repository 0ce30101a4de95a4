// mrope: q rotated in place, rotary_dim = head_dim, Qwen2-VL's sectioned [16, 24, 24] and
// Qwen3-VL's interleaved [24, 20, 20] at head_dim 128, positions [tokens, 3] (temporal, height,
// width) of an image-like grid; f32, bf16 and f16. Rotation preserves norms, so repeated in-place
// calls stay finite.
#include "bench/bench.h"

namespace posenc::bench {
namespace {

Case<MropeCall> mrope_case(const TokenShape& s, MropeConvention convention, DType dtype) {
  const int64_t t = s.tokens, h = s.heads, d = s.head_dim;
  const auto element = static_cast<double>(dtype_size(dtype));
  const double bytes = 2.0 * element * static_cast<double>(t * h * d) + 3 * 8.0 * t;
  return {.label = "t=" + std::to_string(t) + ",h=" + std::to_string(h) +
                   ",d=" + std::to_string(d) + "," + convention_name(convention) +
                   (dtype == DType::f32 ? std::string() : std::string(",") + dtype_name(dtype)),
          .bytes = bytes,
          .reference = bytes <= kReferenceMaxBytes,
          .build = [=](Buffers& b) {
            MropeCall call;
            call.q = call.q_out = b.values(dtype, {t, h, d});
            call.rotary_dim = d;
            call.base = 1000000;
            call.convention = convention;
            // Sections of Qwen2-VL and Qwen3-VL, scaled to d/2 pairs (d = 128: exactly theirs).
            const int64_t half = d / 2;
            call.mrope_section =
                convention == MropeConvention::sectioned
                    ? std::array<int64_t, 3>{half / 4, half * 3 / 8, half - half / 4 - half * 3 / 8}
                    : std::array<int64_t, 3>{half - 2 * (half * 5 / 16), half * 5 / 16,
                                             half * 5 / 16};
            // One image: temporal 0, a 64-wide grid of (row, column) patches.
            call.positions = b.positions(3 * t);
            call.positions.rank = 2;
            call.positions.shape[0] = t;
            call.positions.shape[1] = 3;
            call.positions.strides[0] = 3;
            call.positions.strides[1] = 1;
            for (int64_t i = 0; b.touching() && i < t; ++i) {
              call.positions.as<int64_t>()[3 * i] = 0;
              call.positions.as<int64_t>()[3 * i + 1] = i / 64;
              call.positions.as<int64_t>()[3 * i + 2] = i % 64;
            }
            return call;
          }};
}

void register_mrope() {
  std::vector<TokenShape> shapes = token_shapes();
  if (!smoke()) shapes.push_back({4096, 16, 128});  // a Qwen2.5-VL-7B-sized prefill (16 heads)
  for (const TokenShape& s : shapes)
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
      for (auto convention : {MropeConvention::sectioned, MropeConvention::interleaved})
        register_case(mrope_case(s, convention, dtype));
}

const bool registered = add_family(Family::mrope, register_mrope);

}  // namespace
}  // namespace posenc::bench
