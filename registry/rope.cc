// Every rope implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<RopeCall>>& implementations<RopeCall>() {
  static const std::vector<Impl<RopeCall>> table = [] {
    std::vector<Impl<RopeCall>> impls = {
        {.name = "rope/reference", .variants = kAllVariants, .bound = 0, .run = reference::rope},
    };
    for (auto& impl : optimized::rope()) impls.push_back(std::move(impl));
    return impls;
  }();
  return table;
}

}  // namespace posenc
