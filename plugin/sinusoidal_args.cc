// sinusoidal's C arguments (posenc_sinusoidal_args, posenc/plugin/sinusoidal.h): its views by their
// view-table names (Tensors), its parameters as they are, in the C struct's order.
#include "plugin/marshal.h"
#include "posenc/plugin/sinusoidal.h"

namespace posenc::plugin {

// The C spelling of its variant bits and enums.
static_assert(POSENC_VARIANT_SINUSOIDAL_ADD == variant::sinusoidal_add &&
              POSENC_VARIANT_SINUSOIDAL_POSITIONS == variant::sinusoidal_positions);

const void* c_args(SinusoidalCall& c, Tensors& t) {
  return t.block().put(posenc_sinusoidal_args{.out = t(c.out),
                                              .x = t(c.x),
                                              .positions = t(c.positions),
                                              .base = c.base,
                                              .threads = c.threads});
}

}  // namespace posenc::plugin
