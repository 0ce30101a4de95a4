// rope's C arguments (posenc_rope_args, posenc/plugin/rope.h): its views by their view-table names
// (Tensors), its parameters as they are, in the C struct's order.
#include "plugin/marshal.h"
#include "posenc/plugin/rope.h"

namespace posenc::plugin {

// The C spelling of its variant bits and enums.
static_assert(POSENC_VARIANT_ROPE_HALF_SPLIT == variant::rope_half_split &&
              POSENC_VARIANT_ROPE_INTERLEAVED == variant::rope_interleaved &&
              POSENC_VARIANT_ROPE_PARTIAL == variant::rope_partial &&
              POSENC_VARIANT_ROPE_INVERSE == variant::rope_inverse &&
              POSENC_VARIANT_ROPE_CACHED == variant::rope_cached &&
              POSENC_VARIANT_ROPE_KEY == variant::rope_key);
static_assert(POSENC_LAYOUT_HALF_SPLIT == static_cast<int>(RopeLayout::half_split) &&
              POSENC_LAYOUT_INTERLEAVED == static_cast<int>(RopeLayout::interleaved));

const void* c_args(RopeCall& c, Tensors& t) {
  return t.block().put(posenc_rope_args{.q = t(c.q),
                                        .q_out = t(c.q_out),
                                        .k = t(c.k),
                                        .k_out = t(c.k_out),
                                        .positions = t(c.positions),
                                        .rotary_dim = c.rotary_dim,
                                        .layout = static_cast<int32_t>(c.layout),
                                        .inverse = c.inverse,
                                        .base = c.base,
                                        .scaling = c_scaling(c.scaling, t.block()),
                                        .cos = t(c.cos),
                                        .sin = t(c.sin),
                                        .threads = c.threads});
}

}  // namespace posenc::plugin
