// mrope's C arguments (posenc_mrope_args, posenc/plugin/mrope.h): its views by their view-table
// names (Tensors), its parameters as they are, in the C struct's order.
#include "plugin/marshal.h"
#include "posenc/plugin/mrope.h"

namespace posenc::plugin {

// The C spelling of its variant bits and enums.
static_assert(POSENC_VARIANT_MROPE_HALF_SPLIT == variant::mrope_half_split &&
              POSENC_VARIANT_MROPE_INTERLEAVED == variant::mrope_interleaved &&
              POSENC_VARIANT_MROPE_PARTIAL == variant::mrope_partial &&
              POSENC_VARIANT_MROPE_INVERSE == variant::mrope_inverse &&
              POSENC_VARIANT_MROPE_KEY == variant::mrope_key &&
              POSENC_VARIANT_MROPE_SECTIONED == variant::mrope_sectioned &&
              POSENC_VARIANT_MROPE_CYCLED == variant::mrope_cycled);
static_assert(POSENC_MROPE_SECTIONED == static_cast<int>(MropeConvention::sectioned) &&
              POSENC_MROPE_INTERLEAVED == static_cast<int>(MropeConvention::interleaved));

const void* c_args(MropeCall& c, Tensors& t) {
  return t.block().put(posenc_mrope_args{
      .q = t(c.q),
      .q_out = t(c.q_out),
      .k = t(c.k),
      .k_out = t(c.k_out),
      .positions = t(c.positions),
      .rotary_dim = c.rotary_dim,
      .mrope_section = {c.mrope_section[0], c.mrope_section[1], c.mrope_section[2]},
      .convention = static_cast<int32_t>(c.convention),
      .layout = static_cast<int32_t>(c.layout),
      .inverse = c.inverse,
      .base = c.base,
      .scaling = c_scaling(c.scaling, t.block()),
      .threads = c.threads});
}

}  // namespace posenc::plugin
