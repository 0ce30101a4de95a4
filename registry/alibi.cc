// Every alibi implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<AlibiCall>>& implementations<AlibiCall>() {
  static const std::vector<Impl<AlibiCall>> table = reference_then<AlibiCall>(
      {.name = "alibi/reference", .variants = kAllVariants, .bound = 0, .run = reference::alibi},
      optimized::alibi());
  return table;
}

}  // namespace posenc
