// absolute's C arguments (posenc_absolute_args, posenc/plugin.h): its views by their view-table
// names (Tensors), its parameters as they are, in the C struct's order.
#include "plugin/marshal.h"

namespace posenc::plugin {

posenc_absolute_args c_args(AbsoluteCall& c, Tensors& t) {
  return {.x = t(c.x),
          .table = t(c.table),
          .positions = t(c.positions),
          .out = t(c.out),
          .threads = c.threads};
}

}  // namespace posenc::plugin
