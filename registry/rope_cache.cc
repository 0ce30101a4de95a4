// Every rope_cache implementation, reference first.
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<RopeCacheCall>>& implementations<RopeCacheCall>() {
  static const std::vector<Impl<RopeCacheCall>> table = {
      {.name = "rope_cache/reference",
       .variants = kAllVariants,
       .bound = 0,
       .run = reference::rope_cache},
  };
  return table;
}

}  // namespace posenc
