// Every rope implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<RopeCall>>& implementations<RopeCall>() {
  static const std::vector<Impl<RopeCall>> table = reference_then<RopeCall>(
      {.name = "rope/reference", .variants = kAllVariants, .bound = 0, .run = reference::rope},
      optimized::rope());
  return table;
}

}  // namespace posenc
