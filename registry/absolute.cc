// Every absolute implementation, reference first.
#include "optimized/optimized.h"
#include "posenc/registry.h"
#include "reference/reference.h"

namespace posenc {

template <>
const std::vector<Impl<AbsoluteCall>>& implementations<AbsoluteCall>() {
  static const std::vector<Impl<AbsoluteCall>> table =
      reference_then<AbsoluteCall>({.name = "absolute/reference",
                                    .variants = kAllVariants,
                                    .bound = 0,
                                    .run = reference::absolute},
                                   optimized::absolute());
  return table;
}

}  // namespace posenc
