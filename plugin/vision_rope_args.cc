// vision_rope's C arguments (posenc_vision_rope_args, posenc/plugin/vision_rope.h): its views by
// their view-table names (Tensors), its parameters as they are, in the C struct's order.
#include "plugin/marshal.h"
#include "posenc/plugin/vision_rope.h"

namespace posenc::plugin {

// The C spelling of its variant bits and enums.
static_assert(POSENC_VARIANT_VISION_ROPE_HALF_SPLIT == variant::vision_rope_half_split &&
              POSENC_VARIANT_VISION_ROPE_INTERLEAVED == variant::vision_rope_interleaved &&
              POSENC_VARIANT_VISION_ROPE_PARTIAL == variant::vision_rope_partial &&
              POSENC_VARIANT_VISION_ROPE_INVERSE == variant::vision_rope_inverse &&
              POSENC_VARIANT_VISION_ROPE_KEY == variant::vision_rope_key &&
              POSENC_VARIANT_VISION_ROPE_AXIAL == variant::vision_rope_axial &&
              POSENC_VARIANT_VISION_ROPE_PIXTRAL == variant::vision_rope_pixtral &&
              POSENC_VARIANT_VISION_ROPE_COLUMN_FIRST == variant::vision_rope_column_first &&
              POSENC_VARIANT_VISION_ROPE_OFFSET == variant::vision_rope_offset);
static_assert(POSENC_VISION_ROPE_AXIAL == static_cast<int>(VisionRopeConvention::axial) &&
              POSENC_VISION_ROPE_PIXTRAL == static_cast<int>(VisionRopeConvention::pixtral) &&
              POSENC_VISION_ROW_FIRST == static_cast<int>(VisionAxisOrder::row_first) &&
              POSENC_VISION_COLUMN_FIRST == static_cast<int>(VisionAxisOrder::column_first));

const void* c_args(VisionRopeCall& c, Tensors& t) {
  return t.block().put(posenc_vision_rope_args{.q = t(c.q),
                                               .q_out = t(c.q_out),
                                               .k = t(c.k),
                                               .k_out = t(c.k_out),
                                               .positions = t(c.positions),
                                               .rotary_dim = c.rotary_dim,
                                               .convention = static_cast<int32_t>(c.convention),
                                               .axis_order = static_cast<int32_t>(c.axis_order),
                                               .position_offset = c.position_offset,
                                               .layout = static_cast<int32_t>(c.layout),
                                               .inverse = c.inverse,
                                               .base = c.base,
                                               .threads = c.threads});
}

}  // namespace posenc::plugin
