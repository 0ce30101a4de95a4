// vision_rope: q rotated in place, rotary_dim = head_dim, on the patches of one image in a
// 32-wide grid, positions [patches, 2] (row, column): Qwen2.5-VL's vision tower (axial, head_dim
// 80, 16 heads) and Pixtral's (pixtral, head_dim 64, 16 heads), 1024 and 4096 patches; f32 and
// bf16. Rotation preserves norms, so repeated in-place calls stay finite.
#include "bench/bench.h"

namespace posenc::bench {
namespace {

Case<VisionRopeCall> vision_rope_case(int64_t t, int64_t h, int64_t d,
                                      VisionRopeConvention convention, DType dtype) {
  const auto element = static_cast<double>(dtype_size(dtype));
  const double bytes = 2.0 * element * static_cast<double>(t * h * d) + 2 * 8.0 * t;
  return {.label = "t=" + std::to_string(t) + ",h=" + std::to_string(h) +
                   ",d=" + std::to_string(d) + "," + convention_name(convention) +
                   (dtype == DType::f32 ? std::string() : std::string(",") + dtype_name(dtype)),
          .bytes = bytes,
          .reference = bytes <= kReferenceMaxBytes,
          .build = [=](Buffers& b) {
            VisionRopeCall call;
            call.q = call.q_out = b.values(dtype, {t, h, d});
            call.rotary_dim = d;
            call.convention = convention;
            call.positions = b.positions(2 * t);
            call.positions.rank = 2;
            call.positions.shape[0] = t;
            call.positions.shape[1] = 2;
            call.positions.strides[0] = 2;
            call.positions.strides[1] = 1;
            for (int64_t i = 0; b.touching() && i < t; ++i) {
              call.positions.as<int64_t>()[2 * i] = i / 32;
              call.positions.as<int64_t>()[2 * i + 1] = i % 32;
            }
            return call;
          }};
}

void register_vision_rope() {
  std::vector<int64_t> patches = {1024};
  if (!smoke()) patches.push_back(4096);
  for (int64_t t : patches)
    for (DType dtype : {DType::f32, DType::bf16}) {
      register_case(vision_rope_case(t, 16, 80, VisionRopeConvention::axial, dtype));
      register_case(vision_rope_case(t, 16, 64, VisionRopeConvention::pixtral, dtype));
    }
}

const bool registered = add_family(Family::vision_rope, register_vision_rope);

}  // namespace
}  // namespace posenc::bench
