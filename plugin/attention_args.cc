// attention's C arguments (posenc_attention_args, posenc/plugin.h): its views by their view-table
// names (Tensors), its parameters as they are, in the C struct's order.
#include "plugin/marshal.h"

namespace posenc::plugin {

posenc_attention_args c_args(AttentionCall& c, Tensors& t) {
  return {.q = t(c.q),
          .k = t(c.k),
          .v = t(c.v),
          .out = t(c.out),
          .mask = static_cast<int32_t>(c.mask),
          .q_positions = t(c.q_positions),
          .k_positions = t(c.k_positions),
          .bias = t(c.bias),
          .scale = c.scale,
          .threads = c.threads};
}

}  // namespace posenc::plugin
