// Every rope_frequencies implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<RopeFrequenciesCall>>& implementations<RopeFrequenciesCall>() {
  static const std::vector<Impl<RopeFrequenciesCall>> table =
      reference_then<RopeFrequenciesCall>({.name = "rope_frequencies/reference",
                                           .variants = kAllVariants,
                                           .bound = 0,
                                           .run = reference::rope_frequencies},
                                          optimized::rope_frequencies());
  return table;
}

}  // namespace posenc
