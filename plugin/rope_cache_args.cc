// rope_cache's C arguments (posenc_rope_cache_args, posenc/plugin/rope_cache.h): its views by their
// view-table names (Tensors), its parameters as they are, in the C struct's order.
#include "plugin/marshal.h"
#include "posenc/plugin/rope_cache.h"

namespace posenc::plugin {

const void* c_args(RopeCacheCall& c, Tensors& t) {
  return t.block().put(posenc_rope_cache_args{.rotary_dim = c.rotary_dim,
                                              .base = c.base,
                                              .scaling = c_scaling(c.scaling, t.block()),
                                              .cos = t(c.cos),
                                              .sin = t(c.sin),
                                              .threads = c.threads});
}

}  // namespace posenc::plugin
