// alibi's C arguments (posenc_alibi_args, posenc/plugin/alibi.h): its views by their view-table
// names (Tensors), its parameters as they are, in the C struct's order.
#include "plugin/marshal.h"
#include "posenc/plugin/alibi.h"

namespace posenc::plugin {

// The C spelling of its variant bits and enums.
static_assert(POSENC_VARIANT_ALIBI_CAUSAL == variant::alibi_causal &&
              POSENC_VARIANT_ALIBI_SLOPES == variant::alibi_slopes);

const void* c_args(AlibiCall& c, Tensors& t) {
  return t.block().put(posenc_alibi_args{.n_heads = c.n_heads,
                                         .max_bias = c.max_bias,
                                         .causal = c.causal,
                                         .q_positions = t(c.q_positions),
                                         .k_positions = t(c.k_positions),
                                         .bias = t(c.bias),
                                         .slopes = t(c.slopes),
                                         .threads = c.threads});
}

}  // namespace posenc::plugin
