// Every rope_frequencies implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<RopeFrequenciesCall>>& implementations<RopeFrequenciesCall>() {
  static const std::vector<Impl<RopeFrequenciesCall>> table = [] {
    std::vector<Impl<RopeFrequenciesCall>> impls = {
        {.name = "rope_frequencies/reference",
         .variants = kAllVariants,
         .bound = 0,
         .run = reference::rope_frequencies},
    };
    for (auto& impl : optimized::rope_frequencies()) impls.push_back(std::move(impl));
    return impls;
  }();
  return table;
}

}  // namespace posenc
