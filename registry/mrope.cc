// Every mrope implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<MropeCall>>& implementations<MropeCall>() {
  static const std::vector<Impl<MropeCall>> table = reference_then<MropeCall>(
      {.name = "mrope/reference", .variants = kAllVariants, .bound = 0, .run = reference::mrope},
      optimized::mrope());
  return table;
}

}  // namespace posenc
