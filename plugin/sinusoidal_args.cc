// sinusoidal's C arguments (posenc_sinusoidal_args, posenc/plugin.h): its views by their view-table
// names (Tensors), its parameters as they are, in the C struct's order.
#include "plugin/marshal.h"

namespace posenc::plugin {

posenc_sinusoidal_args c_args(SinusoidalCall& c, Tensors& t) {
  return {.out = t(c.out),
          .x = t(c.x),
          .positions = t(c.positions),
          .base = c.base,
          .threads = c.threads};
}

}  // namespace posenc::plugin
