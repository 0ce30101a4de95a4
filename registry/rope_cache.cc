// Every rope_cache implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<RopeCacheCall>>& implementations<RopeCacheCall>() {
  static const std::vector<Impl<RopeCacheCall>> table = [] {
    std::vector<Impl<RopeCacheCall>> impls = {
        {.name = "rope_cache/reference",
         .variants = kAllVariants,
         .bound = 0,
         .run = reference::rope_cache},
    };
    for (auto& impl : optimized::rope_cache()) impls.push_back(std::move(impl));
    return impls;
  }();
  return table;
}

}  // namespace posenc
