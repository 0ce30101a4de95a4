// Every rope implementation, reference first.
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<RopeCall>>& implementations<RopeCall>() {
  static const std::vector<Impl<RopeCall>> table = {
      {.name = "rope/reference", .variants = kAllVariants, .bound = 0, .run = reference::rope},
  };
  return table;
}

}  // namespace posenc
