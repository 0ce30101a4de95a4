// Every rope_cache implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<RopeCacheCall>>& implementations<RopeCacheCall>() {
  static const std::vector<Impl<RopeCacheCall>> table =
      reference_then<RopeCacheCall>({.name = "rope_cache/reference",
                                     .variants = kAllVariants,
                                     .bound = 0,
                                     .run = reference::rope_cache},
                                    optimized::rope_cache());
  return table;
}

}  // namespace posenc
