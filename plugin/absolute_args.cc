// absolute's C arguments (posenc_absolute_args, posenc/plugin/absolute.h): its views by their
// view-table names (Tensors), its parameters as they are, in the C struct's order.
#include "plugin/marshal.h"
#include "posenc/plugin/absolute.h"

namespace posenc::plugin {

const void* c_args(AbsoluteCall& c, Tensors& t) {
  return t.block().put(posenc_absolute_args{.x = t(c.x),
                                            .table = t(c.table),
                                            .positions = t(c.positions),
                                            .out = t(c.out),
                                            .threads = c.threads});
}

}  // namespace posenc::plugin
