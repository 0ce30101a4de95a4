// rope_frequencies's C arguments (posenc_rope_frequencies_args, posenc/plugin/rope_frequencies.h):
// its views by their view-table names (Tensors), its parameters as they are, in the C struct's
// order.
#include "plugin/marshal.h"
#include "posenc/plugin/rope_frequencies.h"

namespace posenc::plugin {

const void* c_args(RopeFrequenciesCall& c, Tensors& t) {
  return t.block().put(posenc_rope_frequencies_args{.rotary_dim = c.rotary_dim,
                                                    .base = c.base,
                                                    .scaling = c_scaling(c.scaling, t.block()),
                                                    .inv_freq = t(c.inv_freq),
                                                    .attention_factor = t(c.attention_factor),
                                                    .threads = c.threads});
}

}  // namespace posenc::plugin
