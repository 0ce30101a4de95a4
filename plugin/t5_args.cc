// t5's C arguments (posenc_t5_args, posenc/plugin/t5.h): its views by their view-table names
// (Tensors), its parameters as they are, in the C struct's order.
#include "plugin/marshal.h"
#include "posenc/plugin/t5.h"

namespace posenc::plugin {

// The C spelling of its variant bits and enums.
static_assert(POSENC_VARIANT_T5_BIDIRECTIONAL == variant::t5_bidirectional &&
              POSENC_VARIANT_T5_CAUSAL == variant::t5_causal);

const void* c_args(T5Call& c, Tensors& t) {
  return t.block().put(posenc_t5_args{.bidirectional = c.bidirectional,
                                      .n_buckets = c.n_buckets,
                                      .max_distance = c.max_distance,
                                      .q_positions = t(c.q_positions),
                                      .k_positions = t(c.k_positions),
                                      .table = t(c.table),
                                      .bias = t(c.bias),
                                      .threads = c.threads});
}

}  // namespace posenc::plugin
